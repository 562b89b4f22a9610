#!/usr/bin/env python3
"""plan's per-layer activation slope (bytes a token and layer) as sac20 computed it: plan estimate
at 1 and 3 layers (the config cut), memory activations_bytes - logits_bytes, difference / 2 /
tokens. Usage: python3 plan_slopes.py [build/cli/plan]"""
import json, os, subprocess, sys, tempfile
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLAN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "cli", "plan")
SEQ, MBS = 4096, 2

def act(cfg, impl, n):
    d = json.load(open(os.path.join(ROOT, "bench", "realruns", "configs", cfg + ".json")))
    d["num_hidden_layers"] = n
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(d, f)
    r = subprocess.run([PLAN, "estimate", "--model", f.name, "--system", "h200", "--framework", "fsdp2",
                        "--gpus", "1", "--seq", str(SEQ), "--mbs", str(MBS), "--gbs", str(MBS),
                        "--recompute", "none", "--impl", impl, "--no-cuda-graphs", "--format", "json"],
                       capture_output=True, text=True, check=True)
    os.unlink(f.name)
    m = json.loads(r.stdout)["memory"]
    return m["activations_bytes"] - m["logits_bytes"]

for cfg, impl in [("llama-3.1-8b", "hf"), ("qwen3-8b", "hf"), ("phi-3-mini-4k", "hf"),
                  ("llama-3.1-8b", "native"), ("qwen3-8b", "native")]:
    print("%-14s %-6s %10.1f" % (cfg, impl, (act(cfg, impl, 3) - act(cfg, impl, 1)) / 2 / (SEQ * MBS)))
