"""The H200 FP8 estimates issue 16's H200 profile moves (fp8h18): the task's `plan estimate
--model 8b --gpus 8 --system h200 --precision fp8`, and the guide's recommended H200 plans
(bench/results/fp8h18_2026-11-28/guide_plans_h200.txt), each with no calibration (the preset:
precision.c's H100-measured ratio 0.9135) and with each profile given.

Usage: python3 bench/fp8h18_estimates.py [--plan build/cli/plan] PROFILE... > out.txt
"""
import argparse
import json
import os
import subprocess

p = argparse.ArgumentParser()
p.add_argument("--plan", default="build/cli/plan")
p.add_argument("profiles", nargs="*")
args = p.parse_args()

OV = " --fp8-param-gather --overlap-grad-reduce --overlap-param-gather"
CASES = [
    "--model 8b --gpus 8 --precision fp8",
    "--model 8b --gpus 8 --precision fp8 --tp 2 --pp 1 --mbs 1",
    "--model 8b --gpus 8 --precision fp8 --tp 1 --pp 1 --mbs 4" + OV,
    "--model 70b --gpus 8 --precision fp8 --tp 4 --pp 2 --vpp 4 --mbs 4 --sp --tp-comm-overlap "
    "--fp8-param-gather --optimizer-cpu-offload --optimizer-offload-fraction 1",
    "--model 70b --gpus 64 --precision fp8 --tp 4 --pp 2 --vpp 5 --mbs 4 --sp --tp-comm-overlap "
    "--rank-order tp-cp-ep-pp-dp --optimizer-cpu-offload --optimizer-offload-fraction 0.5" + OV,
    "--model 70b --gpus 256 --precision fp8 --tp 1 --pp 1 --mbs 2 --sharding fsdp "
    "--activation-offload --activation-offload-layers 16" + OV,
    "--model mixtral-8x7b --gpus 64 --precision fp8 --tp 1 --pp 1 --ep 8 --mbs 2" + OV,
    "--model mixtral-8x7b --gpus 256 --precision fp8 --tp 1 --pp 1 --ep 8 --mbs 4 "
    "--activation-offload --activation-offload-layers 5" + OV,
    "--model deepseek-v3 --gpus 256 --precision fp8 --tp 1 --pp 1 --ep 8 --mbs 4 --sharding fsdp "
    "--recompute full --recompute-layers 57" + OV,
]
print("| plan estimate --system h200 ... | " + " | ".join(
    ["none"] + [os.path.basename(x) for x in args.profiles]) + " |")
print("|---|" + "---|" * (1 + len(args.profiles)))
for c in CASES:
    cells = []
    for prof in [None] + args.profiles:
        cmd = [args.plan, "estimate", "--system", "h200", "--format", "json"] + c.split()
        if prof:
            cmd += ["--calibration", prof]
        r = subprocess.run(cmd, capture_output=True, text=True)
        try:
            d = json.loads(r.stdout)
        except ValueError:
            cells.append("error: " + (r.stderr.strip().splitlines() or ["?"])[-1])
            continue
        t = d["time"]
        cells.append(f"{t['step_s']:.3f} s (compute {t['compute_s']:.3f})"
                     + ("" if d["fits"] else " does not fit"))
    print(f"| {c} | " + " | ".join(cells) + " |")
