"""What plan said of these runs before hfeager21: a planner binary (default: the base commit's,
built at BUILD) prices each run of results.jsonl as bench/realruns/fidelity.py does, without
--attention (the only attention plan knew under --impl hf was SDPA's flash kernel).

Usage: python3 bench/results/hfeager21_2026-11-29/before.py PLAN_BINARY [results.jsonl]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
plan = sys.argv[1]
res = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "results.jsonl")
GIB = float(1 << 30)
with tempfile.TemporaryDirectory() as tmp:
    for ln in open(res):
        r = json.loads(ln)
        cfg = json.load(open(os.path.join(ROOT, r["config"])))
        if r["layers"] != cfg["num_hidden_layers"]:
            cfg["num_hidden_layers"] = r["layers"]
            if isinstance(cfg.get("layer_types"), list):
                cfg["layer_types"] = cfg["layer_types"][:r["layers"]]
        path = os.path.join(tmp, r["label"] + ".json")
        json.dump(cfg, open(path, "w"))
        a = [plan, "estimate", "--model", path, "--system", "h200", "--framework", "fsdp2",
             "--gpus", "1", "--seq", str(r["seq"]), "--mbs", str(r["mbs"]), "--gbs", str(r["mbs"]),
             "--recompute", "full" if r["grad_ckpt"] else "none", "--format", "json",
             "--impl", "hf", "--no-cuda-graphs", "--optimizer-impl", "foreach"]
        p = subprocess.run(a, capture_output=True, text=True)
        if not p.stdout.startswith("{"):
            print("%-36s plan refused: %s" % (r["label"], p.stderr.strip()[:100]))
            continue
        j = json.loads(p.stdout)
        meas = r.get("step_s_median")
        mem = r.get("measured_peak_bytes")
        print("%-36s %-6s pred %.4f s %6.1f GiB feasible %-5s | measured %s %s" % (
            r["label"], r.get("attention"), j["time"]["step_s"], j["memory"]["total_bytes"] / GIB,
            j["feasible"], "OOM" if r.get("oom") else "%.4f s" % meas,
            "" if not mem else "%.1f GiB" % (mem / GIB)))
