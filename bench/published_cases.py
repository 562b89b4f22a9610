#!/usr/bin/env python3
"""Megatron-LM validation cases from the published-run rows (tests/data/published_megatron_
bridge_h100.csv): each expressible row's `plan estimate ... --emit json` as bench/megatron_
validate.py reads cases ({"name", "args", "environment", "world_size", "stages", "mtp_layers"}),
so Megatron-LM's own parser checks the flags plan writes for NVIDIA's recipes (uneven pipelines
over virtual stages, recompute modules, FP8, MoE dispatchers).

Usage: python3 bench/published_cases.py [--plan build/cli/plan] > cases.json
"""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", default=os.path.join(ROOT, "build", "cli", "plan"))
    ap.add_argument("--rows", default=os.path.join(ROOT, "tests", "data",
                                                   "published_megatron_bridge_h100.csv"))
    a = ap.parse_args()
    cases = []
    for r in csv.DictReader(open(a.rows)):
        if r["expressible"] != "yes":
            continue
        model = r["model"]
        if "/" in model:
            model = os.path.join(ROOT, model)
        alts = r["unknown_args"].split("|") if r["unknown_args"] else [""]
        for k, extra in enumerate(alts):
            argv = [a.plan, "estimate", "--model", model, "--gpus", r["gpus"], "--system", "h100",
                    "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"],
                    "--ep", r["ep"], "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]]
            argv += shlex.split(r["plan_args"]) + shlex.split(extra) + ["--emit", "json"]
            p = subprocess.run(argv, capture_output=True, text=True)
            if p.returncode == 2:
                sys.exit(f"{r['run_id']}: {p.stderr.strip()}")
            d = json.loads(p.stdout)
            lay = d["layout"]
            # the costed decoder layers per pipeline stage, as plan splits them
            pp = int(lay["pp"])
            first, last = lay.get("pp_first_layers", 0), lay.get("pp_last_layers", 0)
            e = d["emit"]
            args = e["megatron_args"]
            layers = int(args[args.index("--num-layers") + 1])
            cases.append({
                "name": r["run_id"] + (f"/alt{k}" if extra else ""),
                "args": e["megatron_args"],
                "environment": e["environment"],
                "world_size": int(r["gpus"]),
                "stages": stages_of(layers, pp, first, last),
                "mtp_layers": 1 if "deepseek" in r["model"] else 0,
                "fits": d["fits"],
            })
    json.dump(cases, sys.stdout, indent=1)


def stages_of(layers, pp, first, last):
    if not layers:
        return None
    if not first and not last:
        base, rem = divmod(layers, pp)
        return [base + (1 if 1 <= s <= rem else 0) for s in range(pp)]
    fixed = (1 if first else 0) + (1 if last else 0)
    mid = (layers - first - last) // (pp - fixed)
    return [first if (s == 0 and first) else last if (s == pp - 1 and last) else mid
            for s in range(pp)]


if __name__ == "__main__":
    main()
