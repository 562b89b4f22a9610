#!/usr/bin/env python3
"""Compare the TP rows (step error) of two folders written by
bench/results/session24_2026-11-29/tables.sh: per GPU kind, median and mean |error|, signed mean,
rows within 5%, and every row that moved. Usage: tp_rows_cmp.py BEFORE_DIR AFTER_DIR [tp|all]"""
import glob
import os
import re
import statistics
import sys

ROW = re.compile(r"^(\S+)\s+(h100|h200)\s+(\d+)\s+(\w+)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%")


def rows(d):
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "mgpu*.txt"))):
        for ln in open(f):
            m = ROW.match(ln)
            if m:
                out[(os.path.basename(f), m.group(1))] = (m.group(2), float(m.group(7)), m.group(4))
    return out


a, b = rows(sys.argv[1]), rows(sys.argv[2])
par = sys.argv[3] if len(sys.argv) > 3 else "tp"
for gpu in ("h100", "h200"):
    ks = [k for k in a if k in b and a[k][0] == gpu and (par == "all" or a[k][2] == par)]
    if not ks:
        continue
    ea, eb = [abs(a[k][1]) for k in ks], [abs(b[k][1]) for k in ks]
    print("%s %s rows %d: median |err| %.1f -> %.1f%%, mean |err| %.2f -> %.2f%%, signed mean %+.1f -> %+.1f%%, "
          "within 5%%: %d -> %d" % (gpu, par, len(ks), statistics.median(ea), statistics.median(eb),
                                     statistics.mean(ea), statistics.mean(eb),
                                     statistics.mean(a[k][1] for k in ks), statistics.mean(b[k][1] for k in ks),
                                     sum(e <= 5 for e in ea), sum(e <= 5 for e in eb)))
for k in sorted(a):
    if k in b and a[k][1] != b[k][1] and (par == "all" or a[k][2] == par):
        print("  %-30s %-40s %s %+6.1f -> %+6.1f" % (k[0], k[1], a[k][0], a[k][1], b[k][1]))
