#!/usr/bin/env python3
"""meas27's device call as a table: every pm-LABEL.json of CALL/base and CALL/fix (bench/meas27_call.sh)
beside the real step of its row where one exists (results.jsonl step_s_median of the folders below),
the estimate plan measure prints with it, the unpaced (GPU alone) step and the expert loop's cuBLAS
call host times (plan measure's JSON `pipeline.expert_loop`). error = (measured - real) / real.
Standard library only.  Usage: python3 bench/meas27_table.py CALLDIR"""
import glob
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
REAL_DIRS = ["bench/results/mgpu_2026-11-27/full_h200x4/jobs", "bench/results/ho13_2026-11-28/two_h200/jobs",
             "bench/results/ho18_2026-11-28/x2/jobs", "bench/results/ho25_2026-11-29/x2all"]
real = {}
for d in REAL_DIRS:
    for ln in open(os.path.join(ROOT, d, "results.jsonl")):
        if ln.strip():
            r = json.loads(ln)
            if r.get("step_s_median"):
                real[r["label"]] = r["step_s_median"]


def pct(a, b):
    return "%+.1f%%" % (100 * (a - b) / b) if a and b else ""


call = sys.argv[1]
print("| binary | run | real s | plan measure s (paced) | error | GPU alone s | estimate s | estimate error "
      "| loop: new-shape calls, median host us | seen-shape calls, median us | model's price us |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for b in ("base", "fix"):
    for f in sorted(glob.glob(os.path.join(call, b, "pm-*.json"))):
        label = os.path.basename(f)[3:-5]
        try:
            j = json.load(open(f))
        except ValueError:
            print("| %s | %s | | failed (see %s.err) | | | | | | | |" % (b, label, label))
            continue
        m, p = j["measured"], j["predicted"]
        el = (j.get("pipeline") or {}).get("expert_loop") or {}
        r = real.get(label)
        loop_new = ("%d, %.1f" % (el["new_shape_calls"], el["new_shape_call_host_s"] * 1e6)) if el else ""
        loop_seen = ("%d, %.1f" % (el["seen_shape_calls"], el["seen_shape_call_host_s"] * 1e6)) if el else ""
        price = "%.1f" % (el["model_new_shape_s"] * 1e6) if el else ""
        print("| %s | %s | %s | %.4f | %s | %.4f | %.4f | %s | %s | %s | %s |" % (
            b, label, "%.4f" % r if r else "-", m["step_s"], pct(m["step_s"], r), m.get("step_unpaced_s", 0),
            p["step_s"], pct(p["step_s"], r), loop_new, loop_seen, price))
