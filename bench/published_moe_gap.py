#!/usr/bin/env python3
"""published_moe_gap.py — where the time that plan misses on the published MoE runs goes
(bench/README.md "Published Megatron-Bridge MoE runs on Blackwell").

For every priced (or banded: its first alternative) MoE row of
tests/data/published_megatron_bridge_blackwell.csv and tests/data/published_megatron_bridge_h100.csv
it runs the row through `plan estimate --format json` (the command the tests run) and prints:
  tok/mb   tokens per micro-batch (MBS x seq)
  m        micro-batches per pipeline per step (GBS / (MBS x DP))
  pub, pred  the published step (GBS x seq / (GPUs x tokens/s/GPU)) and plan's
  per layer-mb  plan's step and the gap (published - predicted) per layer and micro-batch, in
           ms: (step) / (m x layers / PP); the pipeline's bubble is left in both
  gap/ktok the gap per 1000 tokens of a micro-batch
A cost fixed per layer and micro-batch (host work, a synchronisation) gives the same gap per
layer-mb whatever the micro-batch holds; GPU work that plan misses gives the same gap/ktok.
Analysis only: nothing here feeds a preset. Usage: bench/published_moe_gap.py [build/cli/plan]
"""
import csv
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "cli", "plan")
CSVS = [os.path.join(ROOT, "tests", "data", f"published_megatron_bridge_{s}.csv")
        for s in ("blackwell", "h100")]
# decoder layers (data/models, tests/data/hf: num_hidden_layers)
LAYERS = {"deepseek-v3": 61, "gpt-oss-120b": 36, "qwen3-30b-a3b": 48, "qwen3-235b-a22b": 94}


def model_of(run_id):
    for k in LAYERS:
        if run_id.startswith(k):
            return k
    return None


def main():
    print(f"{'run':40s} {'release':8s} {'system':11s} {'prec':6s} {'mbs':>3s} {'tok/mb':>6s} "
          f"{'m':>4s} {'ep':>3s} {'pub_s':>7s} {'pred_s':>7s} {'err':>7s} {'pred/lmb':>8s} "
          f"{'gap/lmb':>8s} {'gap/ktok':>8s}")
    for path in CSVS:
        for r in csv.DictReader(open(path)):
            name = model_of(r["run_id"])
            if r["kind"] != "moe" or r["expressible"] != "yes" or not name:
                continue
            extra = shlex.split(r["unknown_args"].split("|")[0]) if r["unknown_args"] else []
            args = [PLAN, "estimate", "--model", r["model"], "--gpus", r["gpus"], "--system",
                    r["system"], "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp",
                    r["vp"], "--ep", r["ep"], "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq",
                    r["seq"]] + shlex.split(r["plan_args"]) + extra + ["--format", "json"]
            j = json.loads(subprocess.run(args, capture_output=True, text=True, cwd=ROOT).stdout)
            mbs = int(r["mbs"])
            for i, a in enumerate(extra):  # a band's first alternative may set the micro-batch
                if a == "--mbs":
                    mbs = int(extra[i + 1])
            gpus, seq, gbs = int(r["gpus"]), int(r["seq"]), int(r["gbs"])
            pp = int(r["pp"])
            dp = gpus // (int(r["tp"]) * pp * int(r["cp"]))
            m = gbs // (mbs * dp)
            pub = gbs * seq / (gpus * float(r["tokens_per_s_per_gpu"]))
            pred = j["time"]["step_s"]
            lmb = m * LAYERS[name] / pp
            gap = (pub - pred) / lmb * 1e3
            print(f"{r['run_id'][:40]:40s} {r['release']:8s} {r['system']:11s} "
                  f"{r['precision']:6s} {mbs:3d} {mbs * seq:6d} {m:4d} {r['ep']:>3s} {pub:7.2f} "
                  f"{pred:7.2f} {100 * (pub / pred - 1):+6.1f}% "
                  f"{pred / lmb * 1e3:8.2f} {gap:8.2f} {gap / (mbs * seq / 1000):8.3f}"
                  f"{'  (band: first alternative)' if extra else ''}")


if __name__ == "__main__":
    main()
