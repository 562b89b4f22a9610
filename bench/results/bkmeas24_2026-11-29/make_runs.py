#!/usr/bin/env python3
"""The `plan measure` command of each chosen one-GPU H200 real run (issue 14, bkmeas24).

As bench/results/hostpace_2026-11-28/make_runs.py, for the H200 runs of
bench/realruns/results/h200-2026-11-24.jsonl: each command is bench/realruns/fidelity.py's
`plan estimate` command for that run (its config_for and layout_args: the run's config.json,
--system h200 --framework fsdp2 --gpus 1 --seq --mbs --gbs --recompute --impl --optimizer-impl),
with `measure` for `estimate` and --steps 5. Writes DEST/configs/*.json and DEST/runs.tsv
(label TAB arguments; config paths as the GPU machine's command sees them, --prefix).
Standard library only.

Usage: python3 make_runs.py DEST [--prefix .carry/bkmeas24] [--plan build/cli/plan]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
dest = sys.argv[1]
plan = sys.argv[sys.argv.index("--plan") + 1] if "--plan" in sys.argv else os.path.join(
    ROOT, "build", "cli", "plan")
prefix = sys.argv[sys.argv.index("--prefix") + 1] if "--prefix" in sys.argv else dest
sys.argv = ["fidelity.py", "--plan", plan]
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
import fidelity  # noqa: E402

# Hugging Face FSDP2 runs on one H200 whose unit copies are a visible part of the step
# (billions of parameters, one micro-batch of 4k tokens), and whose backend pools fit.
LABELS = "l3b-s4k-b1 q3-4b-s4k-b1 phi3-s4k-b2".split()
FILE = "h200-2026-11-24.jsonl"


def main():
    recs = {}
    with open(os.path.join(ROOT, "bench", "realruns", "results", FILE)) as f:
        for ln in f:
            if ln.strip():
                r = json.loads(ln)
                recs[r["label"]] = r
    cfgdir = os.path.join(dest, "configs")
    os.makedirs(cfgdir, exist_ok=True)
    rel = os.path.join(prefix, "configs")
    lines = []
    for lab in LABELS:
        r = recs[lab]
        assert not r.get("oom") and r.get("world_size", 1) == 1 and "H200" in r["gpu"], lab
        path = fidelity.config_for(r, cfgdir)
        a = fidelity.layout_args(r, path, "h200")
        assert a[0] == "estimate"
        a = ["measure"] + a[1:] + ["--steps", "5"]
        a = [os.path.join(rel, os.path.basename(x)) if x == path else x for x in a]
        lines.append(lab + "\t" + " ".join(a))
    with open(os.path.join(dest, "runs.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d runs -> %s" % (len(lines), os.path.join(dest, "runs.tsv")))


main()
