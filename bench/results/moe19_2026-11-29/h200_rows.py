#!/usr/bin/env python3
"""h200_rows.py DIR — every H200 row's step error in a tables.sh output folder (fidelity.py and
mgpu_fidelity.py tables), deduplicated by label: count, median |err|, mean |err|, within 5%.
Standard library only (helper moe19)."""
import glob, os, re, statistics, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.txt"))):
    for ln in open(f):
        p = ln.split()
        if len(p) > 6 and p[1] == "h200":
            m = [x for x in p if re.fullmatch(r"[+-]\d+\.\d%", x)]
            if m: rows.setdefault(p[0], float(m[0][:-1]))
a = sorted(abs(v) for v in rows.values())
print("%s: H200 rows %d, median |err| %.2f%%, mean |err| %.2f%%, within 5%%: %d, over 10%%: %d" % (
    sys.argv[1], len(a), statistics.median(a), sum(a) / len(a), sum(x <= 5 for x in a), sum(x > 10 for x in a)))
if len(sys.argv) > 2:
    for k in sorted(rows): print("%-40s %+6.1f" % (k, rows[k]))
