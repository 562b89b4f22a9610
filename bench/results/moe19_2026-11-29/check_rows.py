#!/usr/bin/env python3
"""check_rows.py — plan against every one-GPU H200 Hugging Face MoE step this repository holds
(helper moe19, issue 20): the runs of this folder's calls (moe_host_probe.py, default process
state; 8 timed steps each) and the one-H200 MoE runs of bench/results/ho12..ho18 (ordinary data
now). Per row: measured step (median [min-max]) and realrun.py's fwd+bwd GPU span and host call,
plan's step, its fwd+bwd (compute + exposed FSDP) and the host-paced part, the errors.
Standard library only. Usage: check_rows.py [--plan build/cli/plan] [--system h200]"""
import glob, json, os, statistics, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PLAN = sys.argv[sys.argv.index("--plan") + 1] if "--plan" in sys.argv else os.path.join(ROOT, "build", "cli", "plan")
SYSTEM = sys.argv[sys.argv.index("--system") + 1] if "--system" in sys.argv else "h200"
rows = []
for f in sorted(glob.glob(os.path.join(HERE, "call*", "probe.json"))):
    for r in json.load(open(f))["runs"]:
        d = r["default"]
        rows.append(dict(label="%s %s" % (os.path.basename(os.path.dirname(f)), r["spec"]), model=r["model"],
                         layers=r["layers"], seq=r["seq"], mbs=r["mbs"], ckpt=r["ckpt"], steps=d["step_s"],
                         fb=statistics.median(d["fwd_bwd_gpu_s"]), host=statistics.median(d["fwd_bwd_host_call_s"])))
for f in sorted(glob.glob(os.path.join(ROOT, "bench/results/ho1[2-8]_2026-11-28/*/results.jsonl"))):
    for ln in open(f):
        r = json.loads(ln)
        if r.get("world_size", 1) != 1 or r.get("oom") or r.get("model") not in ("mixtral-8x7b", "qwen3-30b-a3b"):
            continue
        rows.append(dict(label=r["label"], model=r["model"], layers=r["layers"], seq=r["seq"], mbs=r["mbs"],
                         ckpt=r["grad_ckpt"], steps=r["step_times_s"], fb=statistics.median(r["fwd_bwd_gpu_s"]),
                         host=statistics.median(r["fwd_bwd_host_call_s"])))
tmp = tempfile.mkdtemp()
errs = []
print("%-38s %-24s %7s %7s | %7s %7s %7s %7s %7s" % ("row", "step med [min-max]", "plan", "err", "fb", "host", "plan fb", "host-pc", "err fb"))
for r in rows:
    cfg = json.load(open(os.path.join(ROOT, "bench/realruns/configs/%s.json" % r["model"])))
    cfg["num_hidden_layers"] = r["layers"]
    p = os.path.join(tmp, "%s-L%d.json" % (r["model"], r["layers"]))
    json.dump(cfg, open(p, "w"))
    a = [PLAN, "estimate", "--model", p, "--system", SYSTEM, "--framework", "fsdp2", "--gpus", "1", "--impl", "hf",
         "--no-cuda-graphs", "--optimizer-impl", "foreach", "--seq", str(r["seq"]), "--mbs", str(r["mbs"]),
         "--gbs", str(r["mbs"]), "--recompute", "full" if r["ckpt"] else "none", "--format", "json"]
    t = json.loads(subprocess.run(a, capture_output=True, text=True, env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))).stdout)["time"]
    m = statistics.median(r["steps"])
    fb = t["compute_s"] + t["dp_s"]
    e = (t["step_s"] - m) / m
    errs.append(e)
    print("%-38s %.4f [%.4f-%.4f] %.4f %+6.1f%% | %.4f %.4f %.4f %.4f %+6.1f%%" % (
        r["label"][:38], m, min(r["steps"]), max(r["steps"]), t["step_s"], 100 * e, r["fb"], r["host"], fb,
        t["host_paced_s"], 100 * (fb - r["fb"]) / r["fb"]))
a = sorted(abs(x) for x in errs)
print("rows %d: median |err| %.1f%%, max %.1f%%, signed median %+.1f%%, within 5%%: %d" % (
    len(errs), 100 * statistics.median(a), 100 * a[-1], 100 * statistics.median(errs), sum(x <= 0.05 for x in a)))
