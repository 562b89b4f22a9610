#!/usr/bin/env python3
"""Measured host issue time per decoder block (parallel_run.py --host-split, rank 0) against the
host issue floor plan prices for the same block (`plan estimate --ops`, "host issue floor" of the
dense layer), for the TP-2 runs of this folder. Why: the ho13 TP-2 checkpointed row is host-paced;
this says whether the model's host time or the machine's host speed is off. Standard library only.
Usage (repository root, after building build/): python3 bench/results/tpck14_2026-11-28/host_vs_model.py
"""
import json
import os
import re
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def floor_ms(rec, tmp):
    cfg = json.load(open(os.path.join(ROOT, rec["config"])))
    cfg["num_hidden_layers"] = rec["layers"]
    fn = os.path.join(tmp, "m.json")
    json.dump(cfg, open(fn, "w"))
    a = [os.path.join(ROOT, "build/cli/plan"), "estimate", "--model", fn, "--system", "h200",
         "--framework", "torchtitan", "--gpus", "2", "--tp", "2", "--seq", str(rec["seq"]),
         "--mbs", str(rec["mbs"]), "--gbs", str(rec["mbs"]), "--impl", "native",
         "--optimizer-impl", "fused", "--no-cuda-graphs", "--ops"]
    if rec.get("grad_ckpt"):
        a += ["--recompute", "full"]
    out = subprocess.run(a, capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))).stdout
    m = re.search(r"host issue floor: fwd ([0-9.]+) bwd ([0-9.]+)", out)
    return float(m.group(1)), float(m.group(2))


with tempfile.TemporaryDirectory() as tmp:
    print("%-18s %7s | %9s %9s %6s | %9s %9s %6s" % ("run", "step_s", "fwd_ms", "model", "ratio",
                                                     "bwd_ms", "model", "ratio"))
    for ln in open(os.path.join(HERE, "call1_h200x2", "results.jsonl")):
        r = json.loads(ln)
        hs = r.get("host_split")
        if not hs:
            continue
        f = statistics.median(x for x in hs["fwd_block_s"] if x) * 1e3
        b = statistics.median(x for x in hs["bwd_block_s"] if x) * 1e3
        mf, mb = floor_ms(r, tmp)
        print("%-18s %7.4f | %9.2f %9.2f %6.2f | %9.2f %9.2f %6.2f" % (
            r["label"], r["step_s_median"], f, mf, f / mf, b, mb, b / mb))
