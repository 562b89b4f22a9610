#!/usr/bin/env python3
"""gemm16: the one-GPU tables of tables_before/ and tables_after/ pooled (71-run, ho12/13/14
one H200, compiled13, sac14: 109 rows that ran), by GPU, and the rows that moved most.
Usage: python3 pooled.py > pooled_1gpu.txt"""
import os
import re
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
FS = ["fidelity_1gpu", "fidelity_ho12_1gpu", "fidelity_ho13_1gpu", "fidelity_ho14_1gpu",
      "fidelity_compiled13", "fidelity_sac14"]


def rows(path):
    out = {}
    for line in open(path):
        m = re.match(r"(\S+)\s+(h100|h200)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%", line)
        if m:
            out[m.group(1)] = (m.group(2), float(m.group(5)))
    return out


B, A = {}, {}
for f in FS:
    B.update(rows(os.path.join(HERE, "tables_before", f + ".txt")))
    A.update(rows(os.path.join(HERE, "tables_after", f + ".txt")))
for g in ("h100", "h200", "all"):
    ks = [k for k in B if g == "all" or B[k][0] == g]
    for n, D in (("before", B), ("after", A)):
        e = [abs(D[k][1]) for k in ks]
        print("%-5s %-6s n %3d  median |err| %.1f%%  max %.1f%%  median signed %+.1f%%  within 5%%: %d" % (
            g, n, len(ks), statistics.median(e), max(e), statistics.median([D[k][1] for k in ks]),
            sum(x <= 5 for x in e)))
print("\nrows that moved most (|after| - |before|):")
ch = sorted(B, key=lambda k: abs(A[k][1]) - abs(B[k][1]))
for k in ch[:10] + ch[-14:]:
    print("%-36s %s %+6.1f -> %+6.1f" % (k, B[k][0], B[k][1], A[k][1]))
