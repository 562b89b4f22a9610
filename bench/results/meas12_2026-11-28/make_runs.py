#!/usr/bin/env python3
"""The `plan measure` command of every single-GPU H200 real run (issue 14, meas12).

Each command is bench/realruns/fidelity.py's `plan estimate` command for that run (its
layout_args and config_for, imported: the run's config.json cut to its layer count, h200,
--framework fsdp2, --gpus 1, --seq, --mbs, --gbs, --recompute, --impl, --compile
[--compile-components], --no-cuda-graphs, --optimizer-impl), with `measure` for `estimate`,
--steps N and --format json. Runs that went out of memory are kept (label prefixed "oom:" in the
table): plan measure must refuse them. Writes DEST/configs/*.json and DEST/runs.tsv (label, then
the arguments, tab-separated; config paths as the GPU machine sees them, PREFIX/configs/...),
cheapest runs first so that a driver's time limit cuts the long ones. Standard library only.

Usage: python3 make_runs.py DEST [--prefix .carry/meas12] [--plan build-bk/cli/plan] [--steps 3]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
dest = sys.argv[1]


def opt(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


plan = opt("--plan", os.path.join(ROOT, "build-bk", "cli", "plan"))
prefix = opt("--prefix", dest)
steps = opt("--steps", "3")
sys.argv = ["fidelity.py", "--plan", plan]
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
import fidelity  # noqa: E402  (runs `plan estimate --help` once to see its flags)

FILE = os.path.join(ROOT, "bench", "realruns", "results", "h200-2026-11-24.jsonl")


def main():
    recs = [json.loads(ln) for ln in open(FILE) if ln.strip()]
    cfgdir = os.path.join(dest, "configs")
    os.makedirs(cfgdir, exist_ok=True)
    rel = os.path.join(prefix, "configs")
    rows = []
    for r in recs:
        if "error" in r or r.get("world_size", 1) != 1 or "H200" not in r["gpu"]:
            continue
        path = fidelity.config_for(r, cfgdir)
        a = fidelity.layout_args(r, path, "h200")
        assert a[0] == "estimate"
        a = ["measure"] + a[1:] + ["--steps", steps]
        a = [os.path.join(rel, os.path.basename(x)) if x == path else x for x in a]
        # out-of-memory runs cost a CUDA start; the others about 9 steps + the items alone
        cost = 0 if r.get("oom") else r["step_s_median"]
        rows.append((cost, r["label"], " ".join(a)))
    rows.sort()
    with open(os.path.join(dest, "runs.tsv"), "w") as f:
        f.write("".join("%s\t%s\n" % (lab, a) for _, lab, a in rows))
    print("%d runs -> %s" % (len(rows), os.path.join(dest, "runs.tsv")))


main()
