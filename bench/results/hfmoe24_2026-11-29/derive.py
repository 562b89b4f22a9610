#!/usr/bin/env python3
"""Derived summary of hfmoe24's profiled steps (call1, traces from bench/realruns/hfmoe24_probe.py;
the traces are not committed, the command in README.md re-creates them). No GPU.

Per trace: (1) bench/realruns/host23_layers.py's per-layer host / GPU table; (2) every
aten::_chunk_cat (FSDP2's reduce-scatter copy-in, one per unit: layers last to first, then the
root) with its host time, its kernel's GPU time and its host time per 2 KiB tile of the fp32
output (PyTorch builds one int64 of metadata per tile on the host: aten/src/ATen/native/cuda/
TensorShape.cu get_chunk_cat_metadata); (3) the CPU ops with the largest total time in layer 1's
backward. Unit sizes (parameters) from the configs: OLMoE layer = q,k,v,o 4h^2 + q/k norms 2h +
two norms 2h + router E h + experts 3 E h f; Qwen1.5-MoE layer = 4h^2 + qkv bias 3h + norms 2h +
router E h + experts 3 E h f + shared expert 3 h fs + shared gate h; root = embedding + lm_head +
final norm.
Usage: python3 bench/results/hfmoe24_2026-11-29/derive.py TRACE_DIR > summary.txt
"""
import collections
import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def unit_params(model):
    if model.startswith("olmoe"):
        h, E, f, V = 2048, 64, 1024, 50304
        layer = 4 * h * h + 2 * h + 2 * h + E * h + 3 * E * h * f
    else:
        h, E, f, fs, V = 2048, 60, 1408, 5632, 151936
        layer = 4 * h * h + 3 * h + 2 * h + E * h + 3 * E * h * f + 3 * h * fs + h
    return layer, 2 * V * h + h


def main():
    d = sys.argv[1]
    for fn in sorted(os.listdir(d)):
        if not fn.startswith("trace-"):
            continue
        path = os.path.join(d, fn)
        print("=" * 100)
        print(fn)
        print(subprocess.run([sys.executable, os.path.join(ROOT, "bench", "realruns", "host23_layers.py"),
                              path], capture_output=True, text=True).stdout.rstrip())
        ev = [e for e in json.load(gzip.open(path, "rt"))["traceEvents"] if e.get("ph") == "X"]
        cc = sorted((e for e in ev if e["name"] == "aten::_chunk_cat"), key=lambda e: e["ts"])
        kk = sorted((e for e in ev if e.get("cat") == "kernel" and "chunk_cat" in e["name"]),
                    key=lambda e: e["ts"])
        layer, root = unit_params(fn[len("trace-"):])
        print("chunk_cat per unit (backward order: layers last to first, then the root)")
        for i, e in enumerate(cc):
            n = root if i == len(cc) - 1 else layer
            tiles = 4.0 * n / 2048
            kus = kk[i]["dur"] if i < len(kk) else float("nan")
            print("  unit %d  params %11d  tiles %9.0f  host %8.1f us  (%5.2f ns/tile)  kernel %7.1f us"
                  % (i, n, tiles, e["dur"], 1e3 * e["dur"] / tiles, kus))
        ann = sorted((e for e in ev if e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
        a = [e["ts"] for e in ann if e["name"].startswith("FSDP::pre_backward (model.layers.1)")]
        b = [e["ts"] for e in ann if e["name"].startswith("FSDP::pre_backward (model.layers.0)")]
        if a and b:
            t0, t1 = a[0], b[0]
            agg = collections.defaultdict(lambda: [0, 0.0])
            for e in ev:
                if e.get("cat") == "cpu_op" and t0 <= e["ts"] < t1:
                    agg[e["name"]][0] += 1
                    agg[e["name"]][1] += e["dur"]
            print("layer 1 backward, host span %.2f ms; CPU ops by total time (nested ops overlap)"
                  % ((t1 - t0) / 1e3))
            for k, v in sorted(agg.items(), key=lambda kv: -kv[1][1])[:8]:
                print("  %-58s %4d calls %9.1f us" % (k[:58], v[0], v[1]))


main()
