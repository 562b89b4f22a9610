#!/usr/bin/env python3
"""bkmeas24's table: `plan measure` before (base) and after (new) FSDP2's one-GPU copies became
work items, against the real step and the estimate. Reads run.sh's printed summary lines
(CALL/stdout.txt: version, label, measured step (paced), unpaced step, the FSDP2 copies'
compute-stream time measured item by item alone x their count, the estimate's step, the copies'
predicted time; call1 kept only these for the new binary: the device returns 8 files) and the real
runs (bench/realruns/results/h200-2026-11-24.jsonl, step_s_median). error = (x - real) / real.
Standard library only.

Usage: python3 table.py call1 [--markdown]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
call = [a for a in sys.argv[1:] if not a.startswith("--")][0]
md = "--markdown" in sys.argv
real = {}
for ln in open(os.path.join(ROOT, "bench", "realruns", "results", "h200-2026-11-24.jsonl")):
    if ln.strip():
        r = json.loads(ln)
        real[r["label"]] = r
got = {}
for ln in open(os.path.join(HERE, call, "stdout.txt")):
    f = ln.split()
    if len(f) == 13 and f[2] == "measured":
        got[(f[0], f[1])] = {"step": float(f[3]), "unpaced": float(f[5]), "copies": float(f[7]),
                             "est": float(f[10]), "copies_pred": float(f[12])}


def pct(x):
    return "%+.1f%%" % (100 * x)


cols = ["run", "real s", "estimate s", "err", "before s", "err", "after s", "err",
        "unpaced before / after s", "copies meas before / after ms",
        "copies pred before / after ms"]
rows = []
for lab in [ln.split("\t")[0] for ln in open(os.path.join(HERE, "runs.tsv")) if ln.strip()]:
    rs = real[lab]["step_s_median"]
    b, a = got[("base", lab)], got[("new", lab)]
    rows.append([lab, "%.4f" % rs, "%.4f" % a["est"], pct((a["est"] - rs) / rs),
                 "%.4f" % b["step"], pct((b["step"] - rs) / rs), "%.4f" % a["step"],
                 pct((a["step"] - rs) / rs), "%.4f / %.4f" % (b["unpaced"], a["unpaced"]),
                 "%.1f / %.1f" % (1e3 * b["copies"], 1e3 * a["copies"]),
                 "%.1f / %.1f" % (1e3 * b["copies_pred"], 1e3 * a["copies_pred"])])
if md:
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(r) + " |")
else:
    w = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w[i]) for i, c in enumerate(cols)))
    for r in rows:
        print("  ".join(x.ljust(w[i]) for i, x in enumerate(r)))
