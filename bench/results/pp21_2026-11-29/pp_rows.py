#!/usr/bin/env python3
"""pp_rows.py DIR [DIR...] — the multi-GPU rows of tables.sh output folders (mgpu_fidelity_*.txt),
pooled: pipeline-parallel rows (par 'pp') by GPU, the other rows, all; median |err|, mean |err|,
signed median of the step error; then every PP row side by side (one column a folder).
A row is keyed by (file, run); the step error is the first signed percentage on its line."""
import glob
import os
import re
import statistics as st
import sys

PCT = re.compile(r"\s([+-]\d+\.\d)%")


def load(d):
    rows = {}
    for f in sorted(glob.glob(os.path.join(d, "mgpu_fidelity_*.txt"))):
        for line in open(f, errors="replace"):
            w = line.split()
            if len(w) < 8 or w[1] not in ("h100", "h200", "b200") or not w[2].isdigit():
                continue
            m = PCT.search(line)
            if m:
                rows[(os.path.basename(f), w[0])] = (w[1], w[3], float(m.group(1)))
    return rows


R = [load(d) for d in sys.argv[1:]]
keys = list(R[0])


def summ(sel, name):
    for d, r in zip(sys.argv[1:], R):
        e = [r[k][2] for k in sel if k in r]
        if e:
            print("%-9s %-55s n=%3d  median |err| %5.2f  mean |err| %5.2f  signed median %+5.2f"
                  % (name, d[-55:], len(e), st.median(map(abs, e)), st.mean(map(abs, e)), st.median(e)))


pp = [k for k in keys if R[0][k][1] == "pp"]
summ(pp, "PP all")
for g in ("h200", "h100"):
    summ([k for k in pp if R[0][k][0] == g], "PP " + g)
summ([k for k in keys if R[0][k][1] != "pp"], "non-PP")
summ(keys, "all")
print()
for k in sorted(pp, key=lambda k: (R[0][k][0], k)):
    print("%-5s %-34s %s" % (R[0][k][0], k[1][:34], " ".join("%+6.1f" % r[k][2] if k in r else "    - " for r in R)))
