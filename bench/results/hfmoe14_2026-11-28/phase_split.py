#!/usr/bin/env python3
"""hfmoe14: split each single-GPU Hugging Face run's measured step into forward+backward (the
run's CUDA-event span, realrun.py fwd_bwd_gpu_s) and the rest (clip_grad_norm_ + AdamW + the
host between them: step median - fwd+bwd median), and set each beside plan's microbatch_s and
optimizer_s for the same layout (the flags bench/realruns/fidelity.py passes). Standard library.
Only runs that recorded fwd_bwd_gpu_s (ho12 onwards) can be split.
Usage: python3 bench/results/hfmoe14_2026-11-28/phase_split.py RESULTS.jsonl ... [--plan build/cli/plan]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
argv = sys.argv[1:]
plan = os.path.join(ROOT, "build", "cli", "plan")
if "--plan" in argv:
    i = argv.index("--plan")
    plan = argv[i + 1]
    del argv[i:i + 2]
if not argv:
    sys.exit("phase_split: give one or more results.jsonl files")
print("%-28s %5s %6s | %-24s | %-24s | %s" % ("run", "gpu", "params", "step pred/meas err",
                                               "fwd+bwd pred/meas err", "rest meas / optimizer pred err, ps per param"))
with tempfile.TemporaryDirectory() as tmp:
    for fn in argv:
        for line in open(fn):
            d = json.loads(line)
            if (d.get("world_size", 1) != 1 or d.get("oom") or not d.get("fwd_bwd_gpu_s")
                    or d.get("impl", "hf") != "hf" or d.get("cuda_graph") or d.get("compile")):
                continue
            cfg = json.load(open(os.path.join(ROOT, d["config"])))
            if d.get("layers") and d["layers"] != cfg["num_hidden_layers"]:
                cfg["num_hidden_layers"] = d["layers"]
                if "max_window_layers" in cfg:
                    cfg["max_window_layers"] = min(cfg["max_window_layers"], d["layers"])
            p = os.path.join(tmp, "cfg.json")
            json.dump(cfg, open(p, "w"))
            system = "h200" if "H200" in d["gpu"] else "h100"
            oi = {"default": "foreach", "forloop": "for-loop"}.get(d.get("optimizer_impl", "default"),
                                                                   d.get("optimizer_impl"))
            a = [plan, "estimate", "--model", p, "--system", system, "--framework", "fsdp2",
                 "--gpus", "1", "--seq", str(d["seq"]), "--mbs", str(d["mbs"]), "--gbs", str(d["mbs"]),
                 "--recompute", "full" if d.get("grad_ckpt") else "none", "--impl", "hf",
                 "--no-cuda-graphs", "--optimizer-impl", oi, "--format", "json"]
            r = subprocess.run(a, capture_output=True, text=True,
                               env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
            if r.returncode:
                print("%-28s plan failed: %s" % (d["label"], r.stderr.strip()[:100]))
                continue
            t = json.loads(r.stdout)["time"]
            st, fb = d["step_s_median"], statistics.median(d["fwd_bwd_gpu_s"])
            rest, n = st - fb, d["params"]
            print("%-28s %5s %5.2fB | %.4f/%.4f %+6.1f%% | %.4f/%.4f %+6.1f%% | %.4f / %.4f %+6.1f%%, %.1f / %.1f"
                  % (d["label"][:28], system, n / 1e9, t["step_s"], st, 100 * (t["step_s"] / st - 1),
                     t["microbatch_s"], fb, 100 * (t["microbatch_s"] / fb - 1), rest, t["optimizer_s"],
                     100 * (t["optimizer_s"] / rest - 1), 1e12 * rest / n, 1e12 * t["optimizer_s"] / n))
