"""The FP8 GEMM shapes of the guide's recommended H200 plans (issue 16; fp8h18), for
bench/fp8_backend.py --shapes.

The guide (plan report's default models 8b, 70b, mixtral-8x7b, deepseek-v3 at 8, 64, 256 GPUs)
on --system h200 recommends the layouts in bench/results/fp8h18_2026-11-28/guide_plans_h200.txt
(plan --model M --gpus N --system h200 --precision auto --no-simulate --top 1, 2026-11-28).
Their FP8 GEMMs depend only on the model, TP, EP, CP and the micro-batch's tokens, so each
distinct (model, tp, ep, mbs) below is expanded by `plan measure --dry-run` (no GPU) into its
work items; every fp8 item (forward, dgrad, wgrad) is kept once per m x n x k, with (m, n) taken
in either order (fp8_shape.h looks points up that way). Shapes are ordered by the step time the
estimate gives them summed over the plans (pred ms x count), largest first; then plan
calibrate's own 8b and 70b shapes (4096 tokens, TP 1/2/4/8, 8192^3: the points of the earlier
H200 profile) follow, those already listed skipped.

Usage: python3 bench/fp8h18_shapes.py --plan build/cli/plan --top 48 > shapes.txt
Output lines: model name m n k
"""
import argparse
import collections
import re
import subprocess

p = argparse.ArgumentParser()
p.add_argument("--plan", default="build/cli/plan")
p.add_argument("--top", type=int, default=48, help="guide shapes kept, by summed step time")
args = p.parse_args()

# the recommended layouts (guide_plans_h200.txt); deepseek-v3 on 8 GPUs has none
PLANS = [
    ("8b", "--gpus 8 --precision fp8 --tp 1 --pp 1 --mbs 4"),  # 8, 64, 256 GPUs alike
    ("70b", "--gpus 64 --precision fp8 --tp 4 --pp 2 --vpp 5 --mbs 4 --sp"),  # 8 and 64
    ("70b", "--gpus 256 --precision fp8 --tp 1 --pp 1 --mbs 2 --sharding fsdp"),
    ("mixtral-8x7b", "--gpus 64 --precision fp8 --tp 1 --pp 1 --ep 8 --mbs 2"),  # 8 and 64
    ("mixtral-8x7b", "--gpus 256 --precision fp8 --tp 1 --pp 1 --ep 8 --mbs 4"),
    ("deepseek-v3", "--gpus 256 --precision fp8 --tp 1 --pp 1 --ep 8 --mbs 4 --sharding fsdp "
                    "--recompute full"),
    ("deepseek-v3", "--gpus 64 --framework torchtitan --precision fp8 --fp8-recipe rowwise "
                    "--tp 1 --pp 1 --ep 8 --mbs 8 --recompute full --compile"),
]
ITEM = re.compile(r"^\s+(fwd|bwd)\s+(\S+)\s+fp8\s+m=(\d+)\s+n=(\d+)\s+k=(\d+)\s+batch=1\s+"
                  r"pred\s+([\d.]+) ms\s+x(\d+)")

first, weight = {}, collections.Counter()
for model, flags in PLANS:
    cmd = [args.plan, "measure", "--dry-run", "--system", "h200", "--gbs", "1024", "--model",
           model] + flags.split()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    tag = re.search(r"--mbs (\d+)", flags).group(1)
    tp = re.search(r"--tp (\d+)", flags).group(1)
    for line in out.splitlines():
        mt = ITEM.match(line)
        if not mt:
            continue
        _, name, m, n, k, ms, count = mt.groups()
        m, n, k = int(m), int(n), int(k)
        key = (min(m, n), max(m, n), k)
        first.setdefault(key, (model, f"{name}.tp{tp}mb{tag}", m, n, k))
        weight[key] += float(ms) * int(count)

ranked = sorted(weight, key=lambda key: -weight[key])[: args.top]
for key in ranked:
    model, name, m, n, k = first[key]
    print(f"{model} {name} {m} {n} {k}")
seen = set(ranked)
for model in ("8b", "70b"):
    out = subprocess.run([args.plan, "calibrate", "--ops", "gemm_fp8", "--model", model, "--list"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.split("\n"):
        f = line.split()
        if len(f) != 5 or f[0] != "gemm_fp8":
            continue
        d = dict(x.split("=") for x in f[2:])
        m, n, k = int(d["m"]), int(d["n"]), int(d["k"])
        key = (min(m, n), max(m, n), k)
        if key in seen:
            continue
        seen.add(key)
        print(f"cal{model} {f[1]} {m} {n} {k}")
