#!/usr/bin/env python3
"""Where the host time of one profiled compiled TP step goes, per decoder block (helper tp11,
bench/results/tp11_2026-11-28/README.md). Reads a torch.profiler Chrome trace (gzipped) of
bench/realruns/parallel_run.py --layout tp --compile --profile and prints, from the host thread's
annotated ranges: each FSDP2 hook range (FSDP::pre_forward / pre_backward / post_backward_* per
block), each compiled region ("Torch-Compiled Region: F/C", "CompiledFunction",
"CompiledFunctionBackward", "## Call CompiledFxGraph"), their total and median per block, the
distinct compiled-region ids (a recompile shows as a new id), and the GPU kernels whose names
say Inductor fused the SP rearranging copy into a triton kernel (triton_*cat*) against eager
CatArrayBatchedCopy ones, with the NCCL kernels' total. Standard library only.
Usage: python3 bench/tp11_trace_blocks.py TRACE.json.gz
"""
import collections
import gzip
import json
import re
import statistics
import sys


def main():
    t = json.load(gzip.open(sys.argv[1]))
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    host = [e for e in ev if e.get("cat") in ("cpu_op", "user_annotation")]
    kern = [e for e in ev if e.get("cat") == "kernel"]
    groups = collections.OrderedDict()
    pats = [("FSDP::pre_forward (block)", r"^FSDP::pre_forward \(layers\.\d+\)$"),
            ("FSDP::pre_backward (block)", r"^FSDP::pre_backward \(layers\.\d+\)$"),
            ("FSDP::post_backward_reshard (block)", r"^FSDP::post_backward_reshard \(layers\.\d+\)$"),
            ("FSDP::post_backward_reduce (block)", r"^FSDP::post_backward_reduce \(layers\.\d+\)$"),
            ("Torch-Compiled Region (fwd call)", r"^Torch-Compiled Region"),
            ("CompiledFunctionBackward", r"^CompiledFunctionBackward$"),
            ("## Call CompiledFxGraph", r"^## Call CompiledFxGraph"),
            ("FSDP::root_pre_forward", r"^FSDP::root_pre_forward$"),
            ("FSDP::root_post_backward_callback", r"^FSDP::root_post_backward_callback$")]
    for name, rx in pats:
        xs = [e["dur"] for e in host if re.search(rx, e["name"])]
        groups[name] = xs
    print("%-40s %5s %10s %10s" % ("host range", "n", "total ms", "median ms"))
    for name, xs in groups.items():
        if xs:
            print("%-40s %5d %10.2f %10.3f" % (name, len(xs), sum(xs) / 1e3, statistics.median(xs) / 1e3))
    ids = sorted({e["name"] for e in host if e["name"].startswith("Torch-Compiled Region")})
    print("compiled region ids:", ", ".join(ids))
    cat = collections.Counter()
    cat_us = collections.Counter()
    for e in kern:
        n = e["name"]
        k = ("triton fused cat" if n.startswith("triton") and "cat" in n else
             "eager CatArrayBatchedCopy" if "CatArrayBatchedCopy" in n else
             "nccl" if "nccl" in n.lower() else None)
        if k:
            cat[k] += 1
            cat_us[k] += e["dur"]
    for k in cat:
        print("kernels %-28s %4d  %8.2f ms" % (k, cat[k], cat_us[k] / 1e3))
    regions = {e["name"]: e["dur"] for e in host if e["name"].startswith("step.")}
    print("step regions (host ms):", {k: round(v / 1e3, 2) for k, v in regions.items()})


if __name__ == "__main__":
    main()
