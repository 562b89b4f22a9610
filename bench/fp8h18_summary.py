"""Per shape: the fitted FP8 ratios of the H200 profile, the FP8 efficiency measured, and the
backend against torch._scaled_mm (issue 16; fp8h18). Reads one fp8_backend.py run's log (its
table: backend and torch TFLOP/s and both checks per shape; the torch TSV itself did not come
back from the device) and calibrate CSVs, and the profile plan fit wrote.

Usage: python3 bench/fp8h18_summary.py RUN_DIR PROFILE [OLD_PROFILE] > summary.md
"""
import csv
import glob
import json
import os
import statistics
import sys

run, prof = sys.argv[1], sys.argv[2]
old = sys.argv[3] if len(sys.argv) > 3 else None
PEAK_BF16, PEAK_FP8 = 989.4e12, 1978.9e12  # data/systems/h200.json
CHECK_MAX = 1e-2  # cli/cmd_calibrate.c FP8_CHECK_MAX

rows = {}
for f in sorted(glob.glob(os.path.join(run, "cmp", "calibrate_*_round1.csv"))):
    for r in csv.DictReader(open(f)):
        rows.setdefault((int(r["m"]), int(r["n"]), int(r["k"])), {})[r["op"]] = r
table = {}
for line in open(os.path.join(run, "fp8_backend_log.txt")):
    f = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(f) == 11 and f[2].isdigit():
        ck_b, ck_t = (float(x) for x in f[10].split("/"))
        table[(int(f[2]), int(f[3]), int(f[4]))] = (f[0], f[1], float(f[5]), float(f[6]),
                                                    float(f[7]), ck_b, ck_t)


def points(path):
    d = json.load(open(path))
    return {tuple(p[:3]): p[3:] for p in d["calibration"]["fp8_gemm_shapes"]["points"]}


new = points(prof)
oldp = points(old) if old else {}
print("| model | GEMM | m x n x k | bf16 TFLOP/s | FP8 TFLOP/s (of FP8 peak) | blockwise TFLOP/s | "
      "this run's ratio / blockwise | profile ratio / blockwise | earlier profile ratio | "
      "backend / torch TFLOP/s | torch time / backend time | check backend / torch |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
ratios, worst_b, worst_t, below = [], 0.0, 0.0, 0
for key, ops in rows.items():
    if key not in table:
        continue
    model, name, tb, tt, r, cb, ct = table[key]
    bf, f8, bk = (float(ops[o]["time_s"]) for o in ("gemm", "gemm_fp8", "gemm_fp8_blockwise"))
    fl = 2.0 * key[0] * key[1] * key[2]
    run_r = bf / f8 * PEAK_BF16 / PEAK_FP8
    run_k = bf / bk * PEAK_BF16 / PEAK_FP8
    pr = new.get(key, [None, None])
    o = oldp.get(key)
    ratios.append(r)
    below += r < 0.97
    worst_b, worst_t = max(worst_b, cb), max(worst_t, ct)
    print(f"| {model} | {name} | {key[0]}x{key[1]}x{key[2]} | {fl / bf / 1e12:.0f} | "
          f"{fl / f8 / 1e12:.0f} ({fl / f8 / PEAK_FP8:.3f}) | {fl / bk / 1e12:.0f} | "
          f"{run_r:.3f} / {run_k:.3f} | {pr[0]:.3f} / {pr[1]:.3f} | "
          f"{'%.3f' % o[0] if o else '-'} | {tb:.0f} / {tt:.0f} | {r:.3f} | "
          f"{cb:.1e} / {ct:.1e} |")
print()
print(f"- shapes {len(ratios)}; torch time / backend time: median {statistics.median(ratios):.3f}, "
      f"min {min(ratios):.3f}, max {max(ratios):.3f}, below 0.97: {below} (one round)")
print(f"- FP8 checks against the fp32 product of the dequantized operands: worst backend "
      f"{worst_b:.1e} (sampled rows), worst torch {worst_t:.1e} (whole product); bound "
      f"{CHECK_MAX:g} (plan calibrate's FP8_CHECK_MAX): "
      f"{'all pass' if max(worst_b, worst_t) < CHECK_MAX else 'FAILED'}")
both = [k for k in rows if k in oldp and k in table]
if both:
    q = [(bf := float(rows[k]["gemm"]["time_s"])) / float(rows[k]["gemm_fp8"]["time_s"]) *
         PEAK_BF16 / PEAK_FP8 / oldp[k][0] for k in both]
    print(f"- this run's per-tensor ratio over the earlier profile's at the {len(both)} shapes "
          f"both measured: median {statistics.median(q):.3f}, min {min(q):.3f}, "
          f"max {max(q):.3f}, sd {statistics.stdev(q):.3f}")
