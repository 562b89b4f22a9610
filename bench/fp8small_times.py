"""Backend FP8 GEMM times of bench/fp8small_run.sh against an earlier fp8_backend.py run (issue
16): per shape, the median over rounds of the backend's per-tensor FP8 time in the earlier run,
in this run's --timing loop and --timing host-ahead, and torch's in both, in microseconds; the
last column is the earlier backend time over this run's loop time (what a refit of the earlier
run's FP8 points would move by, bf16 unchanged).

Usage: python3 bench/fp8small_times.py RUN_DIR EARLIER_DIR
  RUN_DIR: fp8small_run.sh's unpacked results (cmp_<mode>_p<N>/); EARLIER_DIR: a folder
  fp8_backend.py wrote (calibrate_<model>_round<r>.csv, torch_round<r>.tsv)
"""
import csv
import glob
import os
import re
import statistics
import sys


def collect(dirs):
    back, tor, dims, order = {}, {}, {}, []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "calibrate_*_round*.csv"))):
            model = re.search(r"calibrate_(.+)_round", path).group(1)
            for row in csv.DictReader(open(path)):
                if row["op"] == "gemm_fp8":
                    key = (model, row["name"])
                    back.setdefault(key, []).append(float(row["time_s"]))
                    if key not in dims:
                        dims[key] = f'{row["m"]}x{row["n"]}x{row["k"]}'
                        order.append(key)
        for tsv in sorted(glob.glob(os.path.join(d, "torch_round*.tsv"))):
            for row in csv.DictReader(open(tsv), delimiter="\t"):
                if not row["name"].startswith("blk:"):
                    tor.setdefault((row["model"], row["name"]), []).append(float(row["time_s"]))
    return back, tor, dims, order


run, earlier = sys.argv[1], sys.argv[2]
e_back, e_tor, _, _ = collect([earlier])
loop_back, loop_tor, dims, order = collect(glob.glob(os.path.join(run, "cmp_loop_p*")))
ha_back, ha_tor, _, _ = collect(glob.glob(os.path.join(run, "cmp_host-ahead_p*")))
med = lambda v: statistics.median(v) * 1e6 if v else float("nan")  # noqa: E731
print("| model | shape | m x n x k | backend earlier | backend loop | backend host-ahead | "
      "torch earlier | torch loop | torch host-ahead | earlier / loop (backend) |")
print("|" + "---|" * 10)
for key in order:
    eb, lb, hb = med(e_back.get(key)), med(loop_back.get(key)), med(ha_back.get(key))
    print(f"| {key[0]} | {key[1]} | {dims[key]} | {eb:.1f} | {lb:.1f} | {hb:.1f} | "
          f"{med(e_tor.get(key)):.1f} | {med(loop_tor.get(key)):.1f} | {med(ha_tor.get(key)):.1f} | "
          f"{eb / lb:.3f} |")
