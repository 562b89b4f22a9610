#!/usr/bin/env python3
"""hfmoe14: kernel time by class in meas13's profiled H200 step of Mixtral-8x7B cut to 2 layers,
seq 4096, mbs 1, experts_implementation grouped_mm (bench/results/meas13_2026-11-28/gap/prof/,
gap_profile.py, torch 2.11.0+cu130, transformers 5.x): forward = the GPU range "step.fwd",
backward = from its end to the start of "step.clip"; busy = union of kernel intervals. For
setting the CUTLASS grouped GEMMs (GroupProblemShape kernels) beside plan's "experts" op.
Usage: python3 bench/results/hfmoe14_2026-11-28/mixtral_trace_classes.py
"""
import gzip
import json
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
FN = os.path.join(ROOT, "bench", "results", "meas13_2026-11-28", "gap", "prof",
                  "trace-mixtral-8x7b-s4096-b1-L2.json.gz")


def cls(n):
    n = n.lower()
    for key, names in (("nccl", ("nccl",)), ("memcpy", ("memcpy", "memset")),
                       ("grouped_gemm", ("groupproblem", "grouped")),
                       ("attention", ("fmha", "flash", "cudnn", "sdpa")),
                       ("gemm", ("nvjet", "gemm", "cutlass", "cublas")), ("chunk_cat", ("chunk_cat",)),
                       ("sort", ("sort", "scan", "radix")), ("index", ("index", "scatter", "gather"))):
        if any(x in n for x in names):
            return key
    return "elementwise"


ev = json.load(gzip.open(FN))["traceEvents"]
g = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "gpu_user_annotation"}
ks = sorted([e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")], key=lambda e: e["ts"])
f0, f1 = g["step.fwd"]
c0 = g["step.clip"][0]
for name, (a, b) in (("forward", (f0, f1)), ("backward", (f1, c0))):
    kk = [e for e in ks if a <= e["ts"] < b]
    by = {}
    for e in kk:
        by[cls(e["name"])] = by.get(cls(e["name"]), 0.0) + e["dur"] / 1e3
    busy, cs, ce = 0.0, None, None
    for e in kk:
        s, en = e["ts"], e["ts"] + e["dur"]
        if ce is None or s > ce:
            if ce is not None:
                busy += ce - cs
            cs, ce = s, en
        else:
            ce = max(ce, en)
    busy += ce - cs
    print("%-8s span %.2f ms, GPU busy %.2f ms, %d kernels; ms by class: %s" % (
        name, (b - a) / 1e3, busy / 1e3, len(kk),
        ", ".join("%s %.2f" % (k, v) for k, v in sorted(by.items(), key=lambda x: -x[1]))))
