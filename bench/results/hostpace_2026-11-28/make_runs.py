#!/usr/bin/env python3
"""The `plan measure` command of each chosen single-GPU real run (issue 14, hostpace).

Each command is bench/realruns/fidelity.py's `plan estimate` command for that run (its
layout_args and config_for: the run's config.json, cut to its layer count; h100; --framework
fsdp2; --gpus = world size; --seq; --mbs; --gbs = mbs x world size; --recompute full when the
run checkpointed; --impl, --compile, --optimizer-impl as the run had them), with `measure` for
`estimate` and --steps 5. Writes DEST/configs/*.json and DEST/runs.tsv (label, then the
arguments, tab-separated; config paths relative to the repository root where DEST is
.carry/hostpace). Standard library only.

Usage: python3 make_runs.py DEST [--prefix .carry/hostpace] [--plan build-bk/cli/plan]
  --prefix: DEST as the GPU machine's command sees it, relative to the repository root
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
dest = sys.argv[1]
plan = sys.argv[sys.argv.index("--plan") + 1] if "--plan" in sys.argv else os.path.join(
    ROOT, "build-bk", "cli", "plan")
prefix = sys.argv[sys.argv.index("--prefix") + 1] if "--prefix" in sys.argv else dest
sys.argv = ["fidelity.py", "--plan", plan]
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
import fidelity  # noqa: E402  (runs `plan estimate --help` once to see its flags)

# In the order they run (the driver stops starting new ones past its time limit): host-bound
# small models first, then MoE, GPU-bound, checkpointing, native, the rest. Left out:
# q3moe-L4-s8k-b1-ckpt (plan measure refuses it: "internal: too many work items per layer",
# the recipe's item list of Qwen3-30B-A3B's MoE layer with full recompute overflows).
LABELS = """smol360m-s2k-b8 l1b-s4k-b1 ho2-smol360m-s4k-b2 ho2-l1b-s2k-b2 smol360m-s4k-b4-ckpt
mixtral-L2-s4k-b1 q3moe-L4-s4k-b1 l8b-L8-s4k-b2 q3-4b-s4k-b1-ckpt nat-l1b-s4k-b4
nat-l8b-L8-s4k-b2 l1b-s4k-b4 l1b-s4k-b4-ckpt smol17-s2k-b2 phi3-s2k-b1 q3-8b-L8-s4k-b1
mis7b-L8-s4k-b1-ckpt ho2-q3moe-L2-s2k-b2 ho2-mixtral-L2-s2k-b2 nat-l3b-s4k-b1 q25-15b-s4k-b2
nat-l1b-s4k-b4-cmp l3b-s4k-b1 l1b-s4k-b4-fusedadam l3b-s16k-b1-ckpt
ho-smol360m-s4k-b4 smol17-s4k-b4-ckpt q3-17b-s4k-b2""".split()

FILES = ["h100-2026-11-24.jsonl", "h100-2026-11-27-heldout.jsonl",
         "h100-2026-11-27-smallrows-heldout.jsonl"]


def main():
    recs = {}
    for fn in FILES:
        with open(os.path.join(ROOT, "bench", "realruns", "results", fn)) as f:
            for ln in f:
                if ln.strip():
                    r = json.loads(ln)
                    r["_file"] = fn
                    recs[r["label"]] = r
    cfgdir = os.path.join(dest, "configs")
    os.makedirs(cfgdir, exist_ok=True)
    rel = os.path.join(prefix, "configs")
    lines = []
    for lab in LABELS:
        r = recs[lab]
        assert not r.get("oom") and r.get("world_size", 1) == 1 and "H100" in r["gpu"], lab
        path = fidelity.config_for(r, cfgdir)
        a = fidelity.layout_args(r, path, "h100")
        assert a[0] == "estimate"
        a = ["measure"] + a[1:] + ["--steps", "5"]
        a = [os.path.join(rel, os.path.basename(x)) if x == path else x for x in a]
        lines.append(lab + "\t" + " ".join(a))
    with open(os.path.join(dest, "runs.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d runs -> %s" % (len(lines), os.path.join(dest, "runs.tsv")))


main()
