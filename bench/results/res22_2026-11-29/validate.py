#!/usr/bin/env python3
"""res22: plan's caching-allocator replay (costmodel/alloc_step.h, printed by
build/bench/reserved_replay) against every allocator trace taken so far, column by column (GiB,
default stream unless "side"): resv20's five specs and reserved19's Llama-3.2-3B ckpt
(bench/results/resv20_2026-11-29/decompose.txt) and ho21's two Llama-3.1-70B specs
(bench/results/ho21_2026-11-29/reserved70b/decompose.txt) and res22's Llama-3.2-1B s16k b2 ckpt and
Llama-3.1-8B L12 s8k b2 native (bench/results/res22_2026-11-29/traces/decompose.txt). alloc21's
validate.py with those traces added.

Usage (repository root, after building build/):
    python3 bench/results/res22_2026-11-29/validate.py
"""
import os
import subprocess
import sys

ROOT = os.getcwd()
TRACES = [os.path.join(ROOT, "bench/results/resv20_2026-11-29/decompose.txt"),
          os.path.join(ROOT, "bench/results/ho21_2026-11-29/reserved70b/decompose.txt"),
          os.path.join(ROOT, "bench/results/res22_2026-11-29/traces/decompose.txt")]
CONFIGS = os.path.join(ROOT, "bench/realruns/configs")
REPLAY = os.path.join(ROOT, "build/bench/reserved_replay")
MODES = {"": "hf", "ckpt": "ckpt", "native": "native", "native-compile": None}


def traced():
    rows = {}
    for path in TRACES:
        with open(path) as f:
            head = f.readline().split()
            for line in f:
                p = line.split()
                if p:
                    rows[p[0]] = dict(zip(head[1:], p[1:]))
    return rows


def main():
    if not os.path.exists(REPLAY):
        sys.exit("validate.py: build/bench/reserved_replay not found; build first")
    cols = [("W", "W"), ("fwd0", "fwd0"), ("bwd0", "bwd0"), ("opt0", "opt0"), ("step1", "step1"),
            ("main", "main"), ("side", "side"), ("res", "peak")]
    print("| spec | " + " | ".join("%s trace / replay" % c for c, _ in cols) + " | step 2 (replay) |")
    print("| --- |" + " --- |" * (len(cols) + 1))
    for spec, tr in traced().items():
        parts = spec.split(":")
        name, seq, mbs = parts[0], parts[1], parts[2]
        layers = parts[3] if len(parts) > 3 and parts[3] else "0"
        mode = MODES.get(parts[4] if len(parts) > 4 else "", None)
        if mode is None or name.startswith("qwen3-30b"):
            print("| %s | %s | not covered |" % (spec, " | ".join(
                "%s / -" % tr.get(c, "-") for c, _ in cols)))
            continue
        out = subprocess.run([REPLAY, os.path.join(CONFIGS, name + ".json"), seq, mbs, layers, mode],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print("| %s | replay failed: %s |" % (spec, out.stderr.strip()))
            continue
        p = out.stdout.split()
        rp = dict(zip(p[0::2], p[1::2]))
        cells = ["%s / %s" % (tr.get(c, "-"), rp.get(r, "-")) for c, r in cols]
        print("| %s | %s | %s |" % (spec, " | ".join(cells), rp.get("step2")))


if __name__ == "__main__":
    main()
