"""Per-shape table of bench/fp8small_run.sh (issue 16's short FP8 shapes): for each timing mode
(--timing loop, --timing host-ahead), the ratio torch time / backend time of every round, its
median over the rounds and its spread (max - min), the shapes below 0.97, the total-time ratio,
and each side's host microseconds issuing one launch (torch: the TSV's host_us; backend: the
"host us" column plan calibrate prints, read from the log).

Usage: python3 bench/fp8small_summary.py RUN_DIR [EARLIER_DIR]
  RUN_DIR: the unpacked results.tgz (cmp_<mode>_p<N>/); EARLIER_DIR: a folder fp8_backend.py
  wrote before (its rounds become the "before" columns)
"""
import csv
import glob
import os
import re
import statistics
import sys

run = sys.argv[1]
earlier = sys.argv[2] if len(sys.argv) > 2 else None
modes = (["before"] if earlier else []) + ["loop", "host-ahead"]
ratio = {m: {} for m in modes}      # mode -> (model, name) -> [ratio per round]
host_t = {m: {} for m in modes}     # torch host us per launch
host_b = {m: {} for m in modes}     # backend host us per launch (by m x n x k)
tb_sum = {m: 0.0 for m in modes}
tt_sum = {m: 0.0 for m in modes}
dims = {}
order = []
for mode in modes:
    dirs = [earlier] if mode == "before" else sorted(glob.glob(os.path.join(run, f"cmp_{mode}_p*")))
    for d in dirs:
        for tsv in sorted(glob.glob(os.path.join(d, "torch_round*.tsv"))):
            rnd = re.search(r"round(\d+)", tsv).group(1)
            back = {}
            for path in glob.glob(os.path.join(d, f"calibrate_*_round{rnd}.csv")):
                model = re.search(r"calibrate_(.+)_round", path).group(1)
                for row in csv.DictReader(open(path)):
                    if row["op"] == "gemm_fp8":
                        back[(model, row["name"])] = float(row["time_s"])
            for row in csv.DictReader(open(tsv), delimiter="\t"):
                key = (row["model"], row["name"])
                if key not in back or row["name"].startswith("blk:"):
                    continue
                if key not in dims:
                    dims[key] = (int(row["m"]), int(row["n"]), int(row["k"]))
                    order.append(key)
                t = float(row["time_s"])
                ratio[mode].setdefault(key, []).append(t / back[key])
                host_t[mode].setdefault(key, []).append(float(row.get("host_us") or "nan"))
                tb_sum[mode] += back[key]
                tt_sum[mode] += t
        log = os.path.join(d, "fp8_backend_log.txt")
        if os.path.exists(log):
            section = False
            for line in open(log):
                if line.startswith("gemm (fp8 e4m3)"):
                    section = True
                    continue
                f = line.split()
                if section and len(f) == 8:
                    try:
                        mnk = (int(f[1]), int(f[2]), int(f[3]))
                        host_b[mode].setdefault(mnk, []).append(float(f[7]))
                    except ValueError:
                        section = False
                elif section:
                    section = False

hdr = ["model", "shape", "m x n x k"]
for mode in modes:
    hdr += [f"{mode}: ratio per round", f"{mode}: median", f"{mode}: spread"]
hdr += ["host us/launch torch (loop)", "host us/launch backend (loop)"]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
summ = {m: [] for m in modes}
for key in order:
    m, n, k = dims[key]
    cells = [key[0], key[1], f"{m}x{n}x{k}"]
    for mode in modes:
        r = ratio[mode].get(key, [])
        if r:
            med = statistics.median(r)
            summ[mode].append(med)
            cells += [" ".join(f"{x:.3f}" for x in r), f"{med:.3f}", f"{max(r) - min(r):.3f}"]
        else:
            cells += ["-", "-", "-"]
    ht = host_t["loop"].get(key, [])
    hb = host_b["loop"].get((m, n, k), [])
    cells += [f"{statistics.median(ht):.1f}" if ht else "-",
              f"{statistics.median(hb):.1f}" if hb else "-"]
    print("| " + " | ".join(cells) + " |")
print()
for mode in modes:
    v = summ[mode]
    if not v:
        continue
    print(f"{mode}: shapes {len(v)}, median of per-shape medians {statistics.median(v):.3f}, "
          f"min {min(v):.3f}, max {max(v):.3f}, below 0.97: {sum(1 for x in v if x < 0.97)}; "
          f"total time torch/backend {tt_sum[mode] / tb_sum[mode]:.3f}")
