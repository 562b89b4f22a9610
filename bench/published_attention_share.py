#!/usr/bin/env python3
"""published_attention_share.py — how much of each published Blackwell row's error the
attention core could carry (bench/README.md "Published Megatron-Bridge runs on Blackwell").

For every priced row of tests/data/published_megatron_bridge_blackwell.csv it runs the row
through `plan estimate --ops` (the same command the test runs), reads the first transformer
layer's table (attn.core fwd+bwd+recompute against the layer's compute sum), and prints:
  share   attention's fraction of a layer's compute time in plan's prediction
  err     predicted / published - 1 (tokens/s/GPU)
  e_att   the attention efficiency (fraction of the bf16 peak) that would make the row exact if
          attention were the only thing mispriced and sat on the critical path in proportion
          to its layer share: e_now / (1 + err / share)
  mem     the memory-bound kernels' share (elementwise and low-precision quantize), and
  x_mem   the factor by which they would have to be slower to carry the error alone
A mechanism carried by attention alone gives one e_att per GPU across models whose shares
differ; a uniform error (a GEMM or power effect) gives e_att that grows with share. Both
attention's and the memory-bound kernels' shares fall as the hidden size grows (per token
they scale with seq and h, the GEMMs with h^2), so the same check is printed for the latter.
Analysis only: nothing here feeds a preset. Usage: bench/published_attention_share.py [build/cli/plan]
"""
import csv
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "cli", "plan")
CSV = os.path.join(ROOT, "tests", "data", "published_megatron_bridge_blackwell.csv")


def run(row, extra):
    args = [PLAN, "estimate", "--model", row["model"], "--gpus", row["gpus"], "--system",
            row["system"], "--tp", row["tp"], "--pp", row["pp"], "--cp", row["cp"], "--vpp",
            row["vp"], "--ep", row["ep"], "--mbs", row["mbs"], "--gbs", row["gbs"], "--seq",
            row["seq"]] + shlex.split(row["plan_args"]) + extra
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT).stdout


def main():
    print(f"{'run':40s} {'system':12s} {'prec':7s} {'share':>6s} {'err':>7s} {'e_att':>6s} {'mem':>6s} {'x_mem':>6s}")
    for row in csv.DictReader(open(CSV)):
        if row["expressible"] != "yes" or row["unknown_args"]:
            continue
        pred = json.loads(run(row, ["--format", "json"]))["tokens_per_s"] / float(row["gpus"])
        err = pred / float(row["tokens_per_s_per_gpu"]) - 1
        attn = total = None
        mem = 0.0
        for line in run(row, ["--ops"]).splitlines():
            f = line.split()
            if total is None and len(f) >= 6 and f[1] == "elementwise":
                mem += float(f[3]) + float(f[4]) + float(f[5])
            if attn is None and f and f[0] == "attn.core":
                attn = float(f[3]) + float(f[4]) + float(f[5])
            if attn is not None and total is None and f and f[0] == "sum:":
                total = float(f[3]) + float(f[5]) + float(f[7])
        sysfile = os.path.join(ROOT, "data", "systems", row["system"] + ".json")
        e_now = json.load(open(sysfile))["gpu"]["attention_efficiency"]
        share = attn / total
        e_att = e_now / (1 + err / share) if 1 + err / share > 0 else float("nan")
        x_mem = 1 + err / (mem / total)
        print(f"{row['run_id']:40s} {row['system']:12s} {row['precision']:7s} {share:6.3f} "
              f"{100 * err:+6.1f}% {e_att:6.2f} {mem / total:6.3f} {x_mem:6.2f}")


if __name__ == "__main__":
    main()
