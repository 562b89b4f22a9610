#!/usr/bin/env python3
"""meas26: plan measure against the real 4 x H200 steps, before / after (issues 14 and 19).

Prices the real multi-GPU runs with bench/realruns/mgpu_fidelity.py --format json twice: with the pm
files the session's tables read (BEFORE: meas10's and meas13's folders) and with those plus this
helper's H200 files (AFTER, later folders win), then prints one markdown table of every row that has
an after file, and summaries (median |err|, max, within 5%) per parallelism, before and after, over
the same rows. error = (plan measure - real) / real. Standard library only.

Usage: python3 bench/meas26_table.py --plan build/cli/plan --after DIR [DIR...] [--fix DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
R = "bench/results/"
REAL = [R + "heldout_2026-11-27/h200x4", R + "heldout_2026-11-27/h200x4_cp_prof",
        R + "mgpu_2026-11-27/full_h200x4/jobs", R + "mgpu_2026-11-27/extra_h100x4/jobs",
        R + "mgpu_2026-11-27/smoke2_h200x4/jobs", R + "heldout2_2026-11-27/h200x4",
        R + "cp_ring_host_2026-11-27/heldout", R + "ho15_2026-11-28/x4/jobs",
        R + "ho17_2026-11-28/x4/jobs", R + "prof26_2026-11-29"]
BEFORE = [R + "meas10_2026-11-28/before_h100x4", R + "meas10_2026-11-28/after_h100x4",
          R + "meas10_2026-11-28/next_h200x4", R + "meas13_2026-11-28/pm_h200x2",
          R + "meas13_2026-11-28/pm_h200x2_acc"]

ap = argparse.ArgumentParser()
ap.add_argument("--plan", default=os.path.join(ROOT, "build", "cli", "plan"))
ap.add_argument("--after", nargs="+", required=True)
ap.add_argument("--fix", nargs="*", default=[])
a = ap.parse_args()


def price(pm):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench/realruns/mgpu_fidelity.py"),
                          "--format", "json", "--plan", a.plan] + REAL + ["--pm"] + pm,
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return {(r["run"], r["dir"]): r for r in json.loads(out) if r.get("status") == "ok"}


def has(dirs, run):
    return any(os.path.exists(os.path.join(ROOT, d, "pm-%s.json" % run)) for d in dirs)


b, f = price(BEFORE), price(BEFORE + a.after)
x = price(BEFORE + a.after + a.fix) if a.fix else None
keys = [k for k in f if has(a.after, k[0])]
pct = lambda v: "" if v is None else "%+.1f%%" % (100 * v)  # noqa: E731
print("| run | par | real GPU | real s | estimate | pm before | pm after (H200) |%s pm mem before | pm mem after |"
      % (" after + clip sync |" if x else ""))
print("| --- | --- | --- | --- | --- | --- | --- |%s --- | --- |" % (" --- |" if x else ""))
for k in keys:
    r0, r1 = b[k], f[k]
    fx = ""
    if x:
        fx = " %s |" % (pct(x[k].get("measure_err")) if has(a.fix, k[0]) else "")
    print("| %s | %s | %s | %.4f | %s | %s | %s |%s %s | %s |" % (
        k[0], r1["par"], r1["gpu"], r1["real_step_s"], pct(r1["step_err"]), pct(r0.get("measure_err")),
        pct(r1.get("measure_err")), fx, pct(r0.get("measure_mem_err")), pct(r1.get("measure_mem_err"))))


def summ(rows, key):
    v = [abs(r[key]) for r in rows if r.get(key) is not None]
    s = [r[key] for r in rows if r.get(key) is not None]
    if not v:
        return "n=0"
    return "n=%2d median |err| %5.1f%% max %5.1f%% median signed %+5.1f%% within 5%%: %d" % (
        len(v), 100 * statistics.median(v), 100 * max(v), 100 * statistics.median(s),
        sum(1 for e in v if e <= 0.05))


print()
for par in [None] + sorted({f[k]["par"] for k in keys}):
    ks = [k for k in keys if par is None or f[k]["par"] == par]
    print("-- %s" % (par or "all rows with an after file"))
    print("  step   before: %s" % summ([b[k] for k in ks], "measure_err"))
    print("  step   after : %s" % summ([f[k] for k in ks], "measure_err"))
    print("  memory before: %s" % summ([b[k] for k in ks], "measure_mem_err"))
    print("  memory after : %s" % summ([f[k] for k in ks], "measure_mem_err"))
    print("  estimate     : %s" % summ([f[k] for k in ks], "step_err"))
