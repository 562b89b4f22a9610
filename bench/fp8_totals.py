"""Total-time ratio of a bench/fp8_backend.py run (issue 16): over every shape and round, the sum
of torch's times over the sum of the backend's (per-tensor: gemm_fp8 rows against torch's rows;
blockwise: gemm_fp8_blockwise rows against torch's blk: rows), i.e. how much longer torch takes
for the whole set of GEMMs; the per-shape ratios' median weighs a 25 us GEMM like a 5 ms one,
this weighs each by its time.

Usage: python3 bench/fp8_totals.py DIR [DIR ...]   (folders fp8_backend.py wrote)
"""
import csv
import glob
import os
import re
import sys

for d in sys.argv[1:]:
    out = []
    for kind, op, prefix in (("per-tensor", "gemm_fp8", ""), ("blockwise", "gemm_fp8_blockwise", "blk:")):
        tb = tt = 0.0
        n = 0
        for tsv in sorted(glob.glob(os.path.join(d, "torch_round*.tsv"))):
            rnd = re.search(r"round(\d+)", tsv).group(1)
            back = {}
            for path in glob.glob(os.path.join(d, f"calibrate_*_round{rnd}.csv")):
                model = re.search(r"calibrate_(.+)_round", path).group(1)
                for row in csv.DictReader(open(path)):
                    if row["op"] == op:
                        back[(model, row["name"])] = float(row["time_s"])
            for row in csv.DictReader(open(tsv), delimiter="\t"):
                name = row["name"]
                if prefix and not name.startswith(prefix) or not prefix and name.startswith("blk:"):
                    continue
                key = (row["model"], name[len(prefix):])
                if key in back:
                    tb += back[key]
                    tt += float(row["time_s"])
                    n += 1
        if n:
            out.append(f"{kind}: {n} GEMMs, torch {tt * 1e3:.2f} ms / backend {tb * 1e3:.2f} ms "
                       f"= {tt / tb:.3f}")
    print(f"{d}: " + "; ".join(out))
