#!/usr/bin/env python3
"""`plan check` reads back the trainer YAML `plan --emit yaml` writes (cfg21, 2026-11-29).

For each layout: `plan estimate ... --emit yaml` (what a user pastes into SkyRL), then
`plan check - --system S --emit json` on that text; the exit status, layout, placement, memory
and times must equal the estimate's (`--format json`). Prints SAME / DIFF per case and the
count that differ; exit 0 when none does. Layouts: Megatron (TP/PP/VPP, uneven split,
Megatron-FSDP ZeRO-2 and -3, activation offload, FP8 delayed/tensorwise, MXFP8/NVFP4 on B200,
CP, full/selective recompute with modules, MoE with each dispatcher, DeepSeek-V3 uneven, the
tp-pp-dp rank order) and the FSDP2 path (full recompute, offload, Ulysses, HSDP).
Usage: python3 bench/yaml_readback.py [PLAN]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchtitan_cases import _flat  # noqa: E402

plan = sys.argv[1] if len(sys.argv) > 1 else "build/cli/plan"
M = [
 ("8b", 8, "h100", []), ("8b", 16, "h100", ["--framework","megatron","--tp","2","--pp","2"]),
 ("8b", 16, "h100", ["--framework","megatron","--tp","2","--pp","2","--vpp","2"]),
 ("8b", 16, "h100", ["--framework","megatron","--pp","4","--pp-first-layers","7","--pp-last-layers","7"]),
 ("70b", 64, "h100", ["--framework","megatron","--tp","8","--pp","2","--gbs","256","--overlap-grad-reduce","--overlap-param-gather","--shard-grads"]),
 ("8b", 16, "h100", ["--framework","megatron","--tp","2","--activation-offload-layers","8"]),
 ("8b", 16, "h100", ["--framework","megatron","--tp","2","--precision","fp8","--fp8-recipe","tensorwise"]),
 ("8b", 16, "h100", ["--framework","megatron","--tp","2","--precision","fp8","--fp8-recipe","delayed"]),
 ("8b", 16, "b200", ["--framework","megatron","--tp","2","--precision","mxfp8"]),
 ("8b", 16, "b200", ["--framework","megatron","--tp","2","--precision","nvfp4"]),
 ("8b", 16, "h100", ["--framework","megatron","--tp","4","--cp","2"]),
 ("8b", 16, "h100", ["--framework","megatron","--sharding","fsdp"]),
 ("8b", 16, "h100", ["--framework","megatron","--recompute","full","--recompute-layers","4","--pp","2"]),
 ("8b", 16, "h100", ["--framework","megatron","--recompute","selective","--recompute-modules","core_attn,mlp","--tp","2"]),
 ("qwen3-30b-a3b", 16, "h100", ["--framework","megatron","--ep","8"]),
 ("qwen3-30b-a3b", 16, "h100", ["--framework","megatron","--ep","8","--moe-dispatcher","deepep"]),
 ("qwen3-30b-a3b", 16, "h100", ["--framework","megatron","--ep","8","--moe-dispatcher","hybridep"]),
 ("qwen3-30b-a3b", 16, "h100", ["--framework","megatron","--ep","8","--moe-dispatcher","allgather"]),
 ("deepseek-v3", 1024, "h100", ["--framework","megatron","--pp","16","--ep","64","--moe-dispatcher","deepep"]),
 ("qwen3-30b-a3b", 16, "h100", ["--framework","megatron","--ep","8","--moe-ep-overlap"]),
 ("deepseek-v2-lite", 16, "h100", ["--framework","megatron","--ep","8","--moe-shared-expert-overlap"]),
 ("deepseek-v2-lite", 16, "h100", ["--framework","megatron","--ep","8"]),
 ("deepseek-v3", 1024, "h100", ["--framework","megatron","--pp","16","--ep","64","--pp-first-layers","3","--pp-last-layers","2"]),
 ("30b", 64, "h100", ["--framework","megatron","--tp","4","--pp","2","--rank-order","tp-cp-ep-pp-dp"]),
 ("8b", 8, "h100", ["--framework","fsdp2","--recompute","full"]),
 ("8b", 8, "h100", ["--framework","fsdp2","--offload"]),
 ("8b", 16, "h100", ["--framework","fsdp2","--cp","2","--seq","16384","--gbs","64"]),
 ("8b", 32, "h100", ["--framework","fsdp2","--shard-size","8"]),
]
bad = 0
for model, g, sysn, fl in M:
    argv = [plan, "estimate", "--model", model, "--gpus", str(g), "--system", sysn] + fl
    r = subprocess.run(argv + ["--emit", "yaml"], capture_output=True, text=True)
    if r.returncode == 2 or not r.stdout.strip():
        print("REFUSED", " ".join(argv[1:]), r.stderr.strip()[:150]); continue
    est = json.loads(subprocess.run(argv + ["--format", "json"], capture_output=True, text=True).stdout)
    c = subprocess.run([plan, "check", "-", "--system", sysn, "--emit", "json"], input=r.stdout, capture_output=True, text=True)
    if c.returncode == 2 or not c.stdout.strip():
        print("CHECK-FAIL", " ".join(argv[1:]), c.stderr.strip()[:300]); bad += 1; continue
    got = json.loads(c.stdout); got.pop("emit", None)
    fa, fb = _flat(got), _flat(est)
    d = [f"{k}: {fa.get(k)!r} vs {fb.get(k)!r}" for k in sorted(set(fa)|set(fb)) if fa.get(k) != fb.get(k)]
    rcd = "" if c.returncode == r.returncode else f" exit {c.returncode} vs {r.returncode}"
    warn = [ln for ln in c.stderr.splitlines() if ln.strip()]
    print("SAME" if not d and not rcd else "DIFF", " ".join(argv[3:]), rcd, d[:4], ("stderr: " + " | ".join(warn)[:200]) if warn else "")
    bad += bool(d or rcd)
print("differ:", bad)
sys.exit(1 if bad else 0)
