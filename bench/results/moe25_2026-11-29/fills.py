#!/usr/bin/env python3
"""The fills and adds of one profiled step (a torch.profiler Chrome trace, gzipped), by kernel and
grid (groups of 50 us or more): count, median and range of the GPU time, and, for the bf16 vectorized kernels, the bytes and
the rate. vectorized_elementwise_kernel runs 128 threads a block and 8 bf16 elements a thread
(PyTorch's elems_per_thread for 2-byte operands), so a bf16 fill of grid g writes g x 1024 x 2
bytes and an add of the same grid reads two and writes one such tensor (3 x that). Helper moe25,
bench/results/moe25_2026-11-29 (the EP 2 per-expert-loop step of Qwen3-235B-A22B's layer: the
trace is not committed; run.sh re-creates it). Standard library only.
Usage: python3 fills.py TRACE.json.gz > fills.txt
"""
import collections
import gzip
import json
import re
import statistics
import sys

PEAK = 4.8e12  # H200 HBM3e, bytes/s (data/systems/h200.json)
ev = json.load(gzip.open(sys.argv[1], "rt"))["traceEvents"]
groups = collections.defaultdict(list)
for e in ev:
    if e.get("ph") != "X" or e.get("cat") != "kernel":
        continue
    n = e["name"]
    kind = ("fill" if "FillFunctor" in n else "add" if "CUDAFunctor_add" in n else None)
    if kind is None:
        continue
    dt = re.search(r"(?:FillFunctor|CUDAFunctor_add)<([^>]*)>", n).group(1)
    groups[(kind, dt, e["args"]["grid"][0])].append(e["dur"])
print("%-5s %-14s %8s %6s %10s %10s %10s %12s %9s %6s" % (
    "kind", "dtype", "grid", "count", "median_us", "min_us", "max_us", "bytes", "TB/s", "/peak"))
small = [d for d in groups.values() if sum(d) < 50]
for (kind, dt, g), d in sorted(groups.items(), key=lambda x: -sum(x[1])):
    if sum(d) < 50:  # groups of under 50 us in all: summed on the last line
        continue
    med = statistics.median(d)
    by = ""
    rate = ""
    frac = ""
    if dt == "c10::BFloat16":
        b = g * 1024 * 2 * (3 if kind == "add" else 1)
        by, rate, frac = "%d" % b, "%.2f" % (b / med / 1e6), "%.3f" % (b / med / 1e-6 / PEAK)
    print("%-5s %-14s %8d %6d %10.1f %10.1f %10.1f %12s %9s %6s" % (
        kind, dt, g, len(d), med, min(d), max(d), by, rate, frac))
print("(and %d kernels in groups of under 50 us each, %.1f us in all)" % (
    sum(len(d) for d in small), sum(sum(d) for d in small)))
