#!/usr/bin/env python3
"""The one-GPU Hugging Face MoE rows split in two, measured against plan (moe18, issue 20):
  fwd+bwd  measured: realrun.py's fwd_bwd_gpu_s (CUDA events around forward + backward, median)
           plan: time.compute_s + time.dp_s (the one-GPU FSDP copies plan prices as exposed),
           with its GPU-only and host-paced parts
  rest     measured: step_s_median - fwd_bwd_gpu_s (clip_grad_norm_, foreach AdamW, zero_grad)
           plan: time.optimizer_s
Rows: every one-GPU H200 MoE run of bench/results/ho12..ho17 (ordinary data now), the two rows
the lead handed over (numbers from the brief, two_rows.jsonl), and this folder's call1 profile
runs (phase_profile.py: fwd+bwd events and unsynced whole steps, median of 3).
Usage: split_rows.py [--plan build/cli/plan]"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PLAN = sys.argv[sys.argv.index("--plan") + 1] if "--plan" in sys.argv else os.path.join(ROOT, "build", "cli", "plan")

rows = []
for f in sorted(glob.glob(os.path.join(ROOT, "bench/results/ho1[2-7]_2026-11-28/*/results.jsonl"))):
    for ln in open(f):
        r = json.loads(ln)
        if ("q3moe" in r.get("label", "") or "mixtral" in r.get("label", "")) and \
                r.get("world_size", 1) == 1 and not r.get("oom") and r.get("fwd_bwd_gpu_s"):
            rows.append(dict(label=r["label"], model=r["model"], layers=r["layers"], seq=r["seq"],
                             mbs=r["mbs"], ckpt=r["grad_ckpt"], step=r["step_s_median"],
                             fb=statistics.median(r["fwd_bwd_gpu_s"]),
                             host=statistics.median(r["fwd_bwd_host_call_s"])))
rows.append(dict(label="ho18-q3moe-L6 (lead)", model="qwen3-30b-a3b", layers=6, seq=4096, mbs=1,
                 ckpt=False, step=0.2360, fb=0.1225, host=0.1075))
rows.append(dict(label="ho18-mixtral-L3 (lead)", model="mixtral-8x7b", layers=3, seq=2048, mbs=2,
                 ckpt=True, step=0.3249, fb=0.205, host=None))
ph = json.load(open(os.path.join(HERE, "call1", "ph_moe.json")))
for r in ph["runs"]:
    rows.append(dict(label="moe18 %s-L%d (call1)" % ("q3moe" if "qwen" in r["model"] else "mixtral",
                                                     r["layers"]),
                     model=r["model"], layers=r["layers"], seq=r["seq"], mbs=r["mbs"], ckpt=r["ckpt"],
                     step=r["step_s"], fb=statistics.median(r["fwd_bwd_gpu_s"]),
                     host=statistics.median(r["fwd_bwd_host_call_s"])))


def plan(r, tmp):
    c = json.load(open(os.path.join(ROOT, "bench/realruns/configs", r["model"] + ".json")))
    c["num_hidden_layers"] = r["layers"]
    p = os.path.join(tmp, "%s-L%d.json" % (r["model"], r["layers"]))
    json.dump(c, open(p, "w"))
    a = [PLAN, "estimate", "--model", p, "--system", "h200", "--framework", "fsdp2", "--gpus", "1",
         "--seq", str(r["seq"]), "--mbs", str(r["mbs"]), "--gbs", str(r["mbs"]),
         "--recompute", "full" if r["ckpt"] else "none", "--impl", "hf", "--no-cuda-graphs",
         "--optimizer-impl", "foreach", "--format", "json"]
    out = subprocess.run(a, capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
    return json.loads(out.stdout)["time"]


def pct(p, m):
    return "%+6.1f%%" % (100 * (p - m) / m)


print("%-30s %7s %7s %8s | %7s %7s %7s %7s %8s | %7s %7s %8s" % (
    "row", "step", "plan", "err", "fb", "host", "plan", "(host)", "err", "rest", "plan", "err"))
with tempfile.TemporaryDirectory() as tmp:
    for r in rows:
        t = plan(r, tmp)
        fbp = t["compute_s"] + t["dp_s"]
        rest = r["step"] - r["fb"]
        print("%-30s %7.4f %7.4f %8s | %7.4f %7s %7.4f %7.4f %8s | %7.4f %7.4f %8s" % (
            r["label"][:30], r["step"], t["step_s"], pct(t["step_s"], r["step"]), r["fb"],
            "%.4f" % r["host"] if r["host"] else "-", fbp, t["host_paced_s"], pct(fbp, r["fb"]),
            rest, t["optimizer_s"], pct(t["optimizer_s"], rest)))
