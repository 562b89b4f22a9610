#!/usr/bin/env python3
"""sim_rows.py [PLAN] — every published Megatron-Bridge row (tests/data/published_megatron_bridge_
{h100,blackwell}.csv) with an uneven pipeline split (--pp-first-layers/--pp-last-layers) or the EP
A2A overlap (--moe-ep-overlap) and pp > 1, priced by `plan estimate --simulate --format json` as
tests/published_runs.c prices it: the closed form's step, the simulator's, and their difference
(or the simulator's error), and
each one's tokens/s/GPU error against the published figure (+ = plan too fast). Run from the repository root after building build/."""
import csv, json, shlex, subprocess, sys, os
plan = sys.argv[1] if len(sys.argv) > 1 else "build/plan"
root = os.getcwd()
for f in ("tests/data/published_megatron_bridge_h100.csv", "tests/data/published_megatron_bridge_blackwell.csv"):
    for r in csv.DictReader(open(f)):
        if r["expressible"] != "yes": continue
        a = r["plan_args"]
        if int(r["pp"]) < 2 or not ("--pp-first-layers" in a or "--moe-ep-overlap" in a): continue
        model = r["model"]
        if "/" in model: model = os.path.join(root, model)
        args = shlex.split(a)
        args = [os.path.join(root, x) if x.startswith(("data/", "tests/")) else x for x in args]
        cmd = [plan, "estimate", "--model", model, "--gpus", r["gpus"], "--system", r["system"],
               "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"], "--ep", r["ep"],
               "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]] + args + ["--format", "json"]
        est = subprocess.run(cmd, capture_output=True, text=True)
        sim = subprocess.run(cmd + ["--simulate"], capture_output=True, text=True)
        tag = ("uneven " if "--pp-first-layers" in a else "") + ("a2a" if "--moe-ep-overlap" in a else "")
        try:
            e = json.loads(est.stdout)
            step = e["time"]["step_s"] if "time" in e and "step_s" in e["time"] else e.get("step_s")
        except Exception:
            print(f"{r['run_id'][:44]:44s} {tag:11s} estimate failed: {est.stderr.strip()[:100]}"); continue
        try:
            s = json.loads(sim.stdout)
            ts = s.get("time_simulated", {}).get("step_s")
            pub = float(r["tokens_per_s_per_gpu"]); tok = e["tokens_per_s"] / float(r["gpus"])
            print(f"{r['run_id'][:44]:44s} {tag:11s} pp{r['pp']} vp{r['vp']} est {step:8.4f} s  sim {ts:8.4f} s  {100*(ts/step-1):+6.1f}%"
                  f"   vs published: est {100*(tok/pub-1):+6.1f}%  sim {100*(tok*step/ts/pub-1):+6.1f}%")
        except Exception:
            print(f"{r['run_id'][:44]:44s} {tag:11s} pp{r['pp']} vp{r['vp']} est {step:8.4f} s  sim: {(sim.stderr or sim.stdout).strip()[:110]}")
