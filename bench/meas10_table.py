#!/usr/bin/env python3
"""Before/after table of meas10 (issues 14 and 19): `plan measure` of the real multi-GPU runs'
layouts against the real steps and the estimate. Standard library only.

Columns, per real run (label):
  real      the real step's median (slowest rank) and memory (peak allocated + non-allocator
            bytes, max over ranks), from the run's results.jsonl, and its GPU
  est       plan estimate of the row (bench/realruns/mgpu_fidelity.py's flags and system)
  old       the pm-LABEL.json beside the real run (2026-11-27, plan 8c970a1, H200 when the row
            is, priced as --framework megatron --impl native: the table's pm-err before this)
  before    bench/results/meas10_2026-11-28/before_h100x4 (branch point 4e32b89, the row's
            torchtitan flags, 4 x H100, one process per GPU)
  after     bench/results/meas10_2026-11-28/after_h100x4 (this branch)
error = (x - real) / real.

Usage: python3 bench/meas10_table.py [--plan build/cli/plan]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
R = os.path.join(ROOT, "bench", "results")
DIRS = [os.path.join(R, "mgpu_2026-11-27", d, "jobs") for d in ("full_h200x4", "extra_h100x4", "host_h100x4")] + \
       [os.path.join(ROOT, "bench", "realruns", "results", "mgpu8_h100x4_2026-11-28")]
BEFORE = os.path.join(R, "meas10_2026-11-28", "before_h100x4")
AFTER = os.path.join(R, "meas10_2026-11-28", "after_h100x4")
GIB = float(1 << 30)

ap = argparse.ArgumentParser()
ap.add_argument("--plan", default=os.path.join(ROOT, "build", "cli", "plan"))
a = ap.parse_args()

fid = json.loads(subprocess.run([sys.executable, os.path.join(ROOT, "bench", "realruns", "mgpu_fidelity.py"),
                                 "--format", "json", "--plan", a.plan] + DIRS,
                                capture_output=True, text=True, check=True).stdout)
est = {r["run"]: r for r in fid}
real = {}
for d in DIRS:
    for ln in open(os.path.join(d, "results.jsonl")):
        if ln.strip():
            r = json.loads(ln)
            real[r["label"]] = (r, d)


def pm(path):
    try:
        m = json.load(open(path))
        return m["measured"]["step_s"], m["measured"]["peak_memory_bytes"], m["measured"].get("step_unpaced_s")
    except (OSError, ValueError, KeyError):
        return None


def e(x, ref):
    return "%+6.1f%%" % (100 * (x - ref) / ref) if x is not None and ref else "%7s" % "-"


labels = sorted({f[3:-5] for f in os.listdir(BEFORE) + os.listdir(AFTER) if f.startswith("pm-") and f.endswith(".json")},
                key=lambda s: (s.split("-")[0].lstrip("h").lstrip("o8"), s))
print("step s (error vs real)")
print("%-24s %-4s %7s | %7s %7s | %7s %7s | %7s %7s | %7s %7s | %7s" % (
    "run", "gpu", "real", "est", "err", "old", "err", "before", "err", "after", "err", "unpaced"))
rows = []
for lb in labels:
    if lb not in real:
        continue
    r, d = real[lb]
    rs = r["step_s_median"]
    es = est.get(lb, {}).get("pred_step_s")
    old, b, af = pm(os.path.join(d, "pm-%s.json" % lb)), pm(os.path.join(BEFORE, "pm-%s.json" % lb)), \
        pm(os.path.join(AFTER, "pm-%s.json" % lb))
    gpu = "h200" if "H200" in r.get("gpu", "") else "h100"
    rows.append((lb, gpu, r, es, old, b, af))
    f = lambda t: "%7.4f" % t[0] if t else "%7s" % "-"  # noqa: E731
    print("%-24s %-4s %7.4f | %7s %s | %s %s | %s %s | %s %s | %7s" % (
        lb, gpu, rs, "%7.4f" % es if es else "-", e(es, rs), f(old), e(old and old[0], rs),
        f(b), e(b and b[0], rs), f(af), e(af and af[0], rs),
        "%7.4f" % (af or b)[2] if (af or b) and (af or b)[2] else "-"))
print()
print("memory GiB (error vs real)")
print("%-24s %-4s %6s | %6s %7s | %6s %7s | %6s %7s | %6s %7s" % (
    "run", "gpu", "real", "est", "err", "old", "err", "before", "err", "after", "err"))
for lb, gpu, r, es, old, b, af in rows:
    rm = r["measured_peak_bytes"]
    em = est.get(lb, {}).get("pred_mem_bytes")
    g = lambda t: "%6.2f" % (t[1] / GIB) if t else "%6s" % "-"  # noqa: E731
    print("%-24s %-4s %6.2f | %6s %s | %s %s | %s %s | %s %s" % (
        lb, gpu, rm / GIB, "%6.2f" % (em / GIB) if em else "-", e(em, rm), g(old), e(old and old[1], rm),
        g(b), e(b and b[1], rm), g(af), e(af and af[1], rm)))
