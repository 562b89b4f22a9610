#!/usr/bin/env python3
"""Megatron-LM validation cases for the rank order (issue 21): plans whose flags carry
--use-tp-pp-dp-mapping, as bench/megatron_validate.py reads cases ({"name", "args",
"environment", "world_size", "stages", "mtp_layers"}): the searches whose recommendation takes
the tp-cp-ep-pp-dp order, and layouts given with --rank-order pp-dp (dense, interleaved, MoE
with ep*etp = tp*cp, CP with MoE), beside the same layouts in the default order.

Usage: python3 bench/megatron_validate/rank_order_cases.py [--plan build/cli/plan] > cases.json
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from published_cases import stages_of  # noqa: E402  (the costed split per stage)

# (name, plan arguments): a search ("plan --model M --gpus N") or an estimate
RUNS = [
    ("30b/64/recommended", ["--model", "30b", "--gpus", "64"]),
    ("8b/32/tp4pp2dp4/pp-dp", ["estimate", "--model", "8b", "--gpus", "32", "--tp", "4",
                               "--pp", "2", "--rank-order", "pp-dp"]),
    ("8b/32/tp4pp2dp4/default", ["estimate", "--model", "8b", "--gpus", "32", "--tp", "4",
                                 "--pp", "2"]),
    ("70b/64/tp4pp2vpp5/pp-dp", ["estimate", "--model", "70b", "--gpus", "64", "--tp", "4",
                                 "--pp", "2", "--vpp", "5", "--rank-order", "pp-dp",
                                 "--overlap-grad-reduce", "--overlap-param-gather"]),
    ("mixtral-8x7b/64/tp2pp2ep2etp1/pp-dp", ["estimate", "--model", "mixtral-8x7b", "--gpus",
                                             "64", "--tp", "2", "--pp", "2", "--ep", "2",
                                             "--etp", "1", "--rank-order", "pp-dp"]),
    ("qwen3-30b-a3b/64/tp2cp2pp2ep4etp1/pp-dp", ["estimate", "--model", "qwen3-30b-a3b",
                                                 "--gpus", "64", "--tp", "2", "--cp", "2",
                                                 "--pp", "2", "--ep", "4", "--etp", "1",
                                                 "--rank-order", "pp-dp"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", default=os.path.join(ROOT, "build", "cli", "plan"))
    a = ap.parse_args()
    cases = []
    for name, argv in RUNS:
        cmd = [a.plan] + argv + ["--system", "h100", "--emit", "json"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode == 2:
            sys.exit(f"{name}: {p.stderr.strip()}")
        d = json.loads(p.stdout)
        lay, e = d["layout"], d["emit"]
        args = e["megatron_args"]
        want = lay.get("rank_order", "tp-cp-ep-dp-pp") == "tp-cp-ep-pp-dp"
        if want != ("--use-tp-pp-dp-mapping" in args):
            sys.exit(f"{name}: rank order {lay.get('rank_order')} but flags {args}")
        layers = int(args[args.index("--num-layers") + 1])
        cases.append({
            "name": name,
            "args": args,
            "environment": e["environment"],
            "world_size": int(d["gpus"]),
            "stages": stages_of(layers, int(lay["pp"]), lay.get("pp_first_layers", 0),
                                lay.get("pp_last_layers", 0)),
            "mtp_layers": 0,
            "fits": d["fits"],
        })
    json.dump(cases, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
