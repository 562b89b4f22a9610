#!/usr/bin/env python3
"""Every row whose priced step moved between before/ and after/ (the fidelity tables of
bench/results/session16_2026-11-28/tables.sh run on this branch before and after host18's change),
and each table's all-runs / tp step summary before and after. Standard library only.
Usage (repository root): python3 bench/results/host18_2026-11-28/compare_tables.py
"""
import os
import re

D = os.path.dirname(os.path.abspath(__file__))
ROW = re.compile(r"^(\S+)\s+(h100|h200)\s+(\d+)\s+(\S+)\s+(\S+)\s+([0-9.]+)\s+([0-9.]+)\s+([+-][0-9.]+)%")


def rows(fn):
    out = {}
    for ln in open(fn):
        m = ROW.match(ln)
        if m:
            out.setdefault(m.group(1), []).append((m.group(4), float(m.group(6)), float(m.group(7)), float(m.group(8))))
    return out


def summ(fn):
    res, sec = {}, None
    for ln in open(fn):
        if ln.startswith("-- "):
            sec = ln[3:].strip()
        elif ln.startswith("step: estimate vs real") and sec in ("all runs", "tp"):
            res[sec] = re.sub(r"\s+", " ", ln.split("real", 1)[1].strip())
    return res


total = 0
for f in sorted(os.listdir(os.path.join(D, "before"))):
    a, b = os.path.join(D, "before", f), os.path.join(D, "after", f)
    if not f.startswith(("mgpu", "fidelity")) or not os.path.exists(b):
        continue
    ra, rb = rows(a), rows(b)
    moved = []
    for k in ra:
        for x, y in zip(ra[k], rb.get(k, [])):
            if abs(x[2] - y[2]) > 5e-5:
                moved.append((k, x, y))
    if not moved:
        continue
    print("== %s" % f)
    print("   %-44s %-4s %8s %8s %8s %8s %8s" % ("run", "par", "real_s", "pred", "pred'", "err", "err'"))
    for k, x, y in moved:
        print("   %-44s %-4s %8.4f %8.4f %8.4f %+7.1f%% %+7.1f%%" % (k[:44], x[0], x[1], x[2], y[2], x[3], y[3]))
        total += 1
    sa, sb = summ(a), summ(b)
    for s in ("all runs", "tp"):
        if s in sa:
            print("   %-8s before: %s\n   %-8s after:  %s" % (s, sa[s], "", sb.get(s)))
print("\n%d rows moved" % total)
