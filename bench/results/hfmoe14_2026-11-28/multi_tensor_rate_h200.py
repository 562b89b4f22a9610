#!/usr/bin/env python3
"""hfmoe14: the streaming rate of torch's multi_tensor_apply kernels (clip_grad_norm_'s
_foreach_norm / _foreach_mul_, foreach AdamW) on one H200, from the profiled FSDP2 steps that
meas13 recorded (bench/results/meas13_2026-11-28/gap/prof/, gap_profile.py, torch 2.11.0+cu130):
kernels inside the GPU-side ranges "step.clip" and "Optimizer.step#AdamW.step", bytes as
costmodel/impl.h counts them (clip 12, foreach AdamW 80 per parameter). The H100 counterpart is
bench/realruns/optimizer_rate.py (0.802-0.816 of peak). Standard library.
Usage: python3 bench/results/hfmoe14_2026-11-28/multi_tensor_rate_h200.py [--peak 4.8e12]
"""
import gzip
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
PROF = os.path.join(ROOT, "bench", "results", "meas13_2026-11-28", "gap", "prof")
peak = float(sys.argv[sys.argv.index("--peak") + 1]) if "--peak" in sys.argv else 4.8e12
# parameter counts: the runs' "params" in gap_profile.json
RUNS = (("trace-mixtral-8x7b-s4096-b1-L2.json.gz", 3164688384),
        ("trace-smollm2-360m-s2048-b8.json.gz", 361821120))
BYTES = {"step.clip": 12.0, "Optimizer.step#AdamW.step": 80.0}
for fn, params in RUNS:
    t = json.load(gzip.open(os.path.join(PROF, fn)))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    ks = [e for e in ev if e.get("cat") == "kernel"]
    for name, per_param in BYTES.items():
        r = [(e["ts"], e["ts"] + e["dur"]) for e in ev
             if e.get("name") == name and e.get("cat") == "gpu_user_annotation"]
        if not r:
            print("%s: no GPU range %s" % (fn, name))
            continue
        s0, e0 = r[0]
        mt = [e for e in ks if "multi_tensor_apply" in e["name"] and s0 <= e["ts"] < e0]
        sec = sum(e["dur"] for e in mt) * 1e-6
        b = per_param * params
        print("%-40s %-26s %4d kernels %8.3f ms  %7.2f GB  %.3f TB/s = %.3f of %.2f TB/s"
              % (fn, name, len(mt), sec * 1e3, b / 1e9, b / sec / 1e12, b / sec / peak, peak / 1e12))
