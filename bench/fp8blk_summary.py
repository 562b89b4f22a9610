"""Per-shape summary of bench/fp8_backend.py tables (issue 16): for each configuration folder,
the mean ratio (torch time / backend time) per shape from fp8_backend_table.md (per-tensor) or
fp8_blockwise_table.md (blockwise, --blockwise), and the median, minimum and count below 0.97.
Several folders of one configuration (e.g. 8b in one call, 70b in another) are joined.

Usage: python3 bench/fp8blk_summary.py "NAME::DIR[+DIR...][:blockwise]" ...
Prints a markdown table (one column per configuration) and the summary rows.
"""
import statistics
import sys


def ratios(folder, table):
    out = {}
    for line in open(f"{folder}/{table}"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or cells[0] in ("model", "") or cells[0].startswith("---"):
            continue
        out[(cells[0], cells[1])] = cells
    return out


def column(folder, table, name):
    hdr = [c.strip() for c in open(f"{folder}/{table}").readline().strip().strip("|").split("|")]
    i = hdr.index(name)
    return {k: float(v[i]) for k, v in ratios(folder, table).items()}


configs = []
for arg in sys.argv[1:]:
    name, spec = arg.split("::", 1)
    blk = spec.endswith(":blockwise")
    dirs = spec[: -len(":blockwise")] if blk else spec
    table = "fp8_blockwise_table.md" if blk else "fp8_backend_table.md"
    col = {}
    for d in dirs.split("+"):
        col.update(column(d, table, "mean ratio"))
    configs.append((name, col))
keys = []
for _, col in configs:
    for k in col:
        if k not in keys:
            keys.append(k)
print("| model | shape | " + " | ".join(n for n, _ in configs) + " |")
print("|---|---|" + "---|" * len(configs))
for k in keys:
    print(f"| {k[0]} | {k[1]} | " + " | ".join(
        f"{c[k]:.3f}" if k in c else "-" for _, c in configs) + " |")
for label, fn in [("median", lambda v: f"{statistics.median(v):.3f}"),
                  ("min", lambda v: f"{min(v):.3f}"),
                  ("shapes < 0.97", lambda v: f"{sum(1 for x in v if x < 0.97)} of {len(v)}")]:
    print(f"| **{label}** | | " + " | ".join(fn(list(c.values())) for _, c in configs) + " |")
