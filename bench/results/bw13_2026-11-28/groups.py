#!/usr/bin/env python3
"""bw13: per-group medians (by system, by precision, all) of breakdown.py tables, band rows
(a non-empty unknown_args in the CSV) left out as test_published_blackwell leaves them.
Usage: groups.py CSV TABLE [TABLE ...] (each TABLE one column of the output)."""
import csv, statistics, sys

csv_path, tables = sys.argv[1], sys.argv[2:]
rows = list(csv.DictReader(open(csv_path)))
band = {(r["run_id"], r["release"]) for r in rows if r["unknown_args"]}
meta = {(r["run_id"], r["release"]): r for r in rows}

def read(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) < 6 or f[0] == "run" or not f[5].endswith("%"):
            continue
        out[(f[0], f[1])] = float(f[5].rstrip("%"))
    return out

cols = [read(t) for t in tables]
keys = [k for k in cols[0] if k not in band]
def groups():
    for field in ("system", "precision"):
        for v in sorted({meta[k][field] for k in keys}):
            yield f"{field} {v}", [k for k in keys if meta[k][field] == v]
    yield "all", keys
print("| group | rows | " + " | ".join(f"median (range) {i+1}" for i in range(len(cols))) + " |")
print("| --- | ---: |" + " ---: |" * len(cols))
for name, ks in groups():
    cells = []
    for c in cols:
        v = [c[k] for k in ks if k in c]
        cells.append(f"{statistics.median(v):+.1f}% ({min(v):+.1f}..{max(v):+.1f})")
    print(f"| {name} | {len(ks)} | " + " | ".join(cells) + " |")
