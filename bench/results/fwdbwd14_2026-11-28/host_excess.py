#!/usr/bin/env python3
"""fwdbwd14: how much of plan's forward+backward price on each single-GPU Hugging Face run is
the host issue floor (costmodel/host_dispatch.c: a layer's pass priced above the sum of its ops'
GPU prices because the host's queue, at host.eager_launch_s per launch, is behind), set beside
the run's measured forward+backward span (realrun.py fwd_bwd_gpu_s; ho12 onwards).
host = sum over the layers and the head of (priced pass - its ops on the compute stream), per
micro-batch. Standard library.
Usage: python3 host_excess.py RESULTS.jsonl ... [--plan build/cli/plan]
"""
import json, os, re, statistics, subprocess, sys, tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
argv = sys.argv[1:]
plan = os.path.join(ROOT, "build", "cli", "plan")
if "--plan" in argv:
    i = argv.index("--plan"); plan = argv[i + 1]; del argv[i:i + 2]
print("%-28s %4s | %-26s | %9s %9s | %s" % ("run", "gpu", "fwd+bwd pred/meas err", "host ms", "gpu-only",
                                            "fwd+bwd err without the host excess"))
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
                 "--no-cuda-graphs", "--optimizer-impl", oi]
            js = json.loads(subprocess.run(a + ["--format", "json"], capture_output=True, text=True, check=True).stdout)
            txt = subprocess.run(a + ["--ops"], capture_output=True, text=True, check=True).stdout
            mult, ops, host = 0, 0.0, 0.0
            for ln in txt.splitlines():
                if ln.startswith("dense layer") or ln.startswith("moe layer") or re.match(r"^\S.*layer \(per", ln):
                    mult, ops = cfg["num_hidden_layers"], 0.0
                elif ln.startswith("loss head"):
                    mult, ops = 1, 0.0
                m = re.match(r"\s+(\S+)\s+(\S+)\s+compute\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", ln)
                if m and mult:
                    ops += float(m.group(3)) + float(m.group(4)) + float(m.group(5))
                m = re.search(r"sum: compute fwd ([\d.]+) bwd ([\d.]+) recompute ([\d.]+)", ln)
                if m and mult:
                    host += mult * max(0.0, sum(float(x) for x in m.groups()) - ops)
            fb = statistics.median(d["fwd_bwd_gpu_s"])
            mb = js["time"]["microbatch_s"]
            print("%-28s %4s | %.4f/%.4f %+6.1f%% | %9.1f %9.4f | %+6.1f%%"
                  % (d["label"][:28], system, mb, fb, 100 * (mb / fb - 1), host, mb - host / 1e3,
                     100 * ((mb - host / 1e3) / fb - 1)))
