#!/usr/bin/env python3
"""rep23: plan's caching-allocator replay (costmodel/alloc_step.h, printed by
build/bench/reserved_replay) against rep23's allocator traces (traces/reserved.jsonl: Gemma-2-9B L6
s4k b2 checkpointed, Mistral-7B-v0.1 L2 s8k b1, Phi-3-mini L2 s4k b2; one H200, torch 2.11.0,
transformers 5.17.0), column by column as res22's validate.py: the trace's columns from resv20's
decompose.py (its vocabulary table extended with these models'), GiB, default stream unless
"side".

Usage (repository root, after building build/):
    python3 bench/results/rep23_2026-11-29/validate.py
"""
import os
import runpy
import subprocess
import sys

ROOT = os.getcwd()
HERE = os.path.join(ROOT, "bench/results/rep23_2026-11-29")
REPLAY = os.path.join(ROOT, "build/bench/reserved_replay")
VOCAB = {"gemma-2-9b": 256000, "mistral-7b-v0.1": 32000, "phi-3-mini-4k": 32064}
COLS = ("W", "fwd0", "bwd0", "opt0", "step1", "main", "side", "alloc1", "res")


def traced():
    """decompose.py's rows for traces/reserved.jsonl, as dicts keyed by its header"""
    import contextlib
    import io
    g = runpy.run_path(os.path.join(ROOT, "bench/results/resv20_2026-11-29/decompose.py"),
                       run_name="decompose")
    g["main"].__globals__["VOCAB"].update(VOCAB)
    sys.argv = ["decompose.py", os.path.join(HERE, "traces/reserved.jsonl")]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g["main"]()
    lines = buf.getvalue().splitlines()
    head = lines[0].split()
    return [dict(zip(head, ln.split())) for ln in lines[1:] if ln.strip()]


def main():
    if not os.path.exists(REPLAY):
        sys.exit("validate.py: build/bench/reserved_replay not found; build first")
    print("| spec | " + " | ".join("%s trace / replay" % c for c in COLS) + " |")
    print("| --- |" + " --- |" * len(COLS))
    for tr in traced():
        p = tr["spec"].split(":")
        mode = "ckpt" if len(p) > 4 and p[4] == "ckpt" else "hf"
        out = subprocess.run([REPLAY, os.path.join(ROOT, "bench/realruns/configs", p[0] + ".json"),
                              p[1], p[2], p[3], mode], capture_output=True, text=True)
        q = out.stdout.split()
        rp = dict(zip(q[0::2], q[1::2]))
        rp["res"], rp["alloc1"] = rp.get("peak"), rp.get("alloc")
        print("| %s | " % tr["spec"] + " | ".join("%s / %s" % (tr.get(c, "-"), rp.get(c, "-"))
                                                  for c in COLS) + " |")


if __name__ == "__main__":
    main()
