#!/usr/bin/env python3
"""breakdown.py — for each priced row of NVIDIA's published Megatron-Bridge tables (tests/data/
published_megatron_bridge_{h100,blackwell}.csv), the published step time against plan's closed-form
breakdown (`plan estimate --format json`, the row's layout and knobs as tests/published_runs.c
builds them) and the step simulator's figure, and the seconds the prediction misses. Then the
GB300 / GB200 pairs of one release and model: the published speed ratio against plan's.
Run from the repository root after building build/: python3 bench/results/pub18_2026-11-28/breakdown.py
"""
import csv, json, subprocess, sys, shlex

PLAN = "build/cli/plan"
TABLES = ["tests/data/published_megatron_bridge_h100.csv",
          "tests/data/published_megatron_bridge_blackwell.csv"]


def price(r):
    args = [PLAN, "simulate", "--model", r["model"], "--gpus", r["gpus"], "--system", r["system"],
            "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"], "--ep", r["ep"],
            "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]] + shlex.split(r["plan_args"]) + \
           ["--format", "json"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


def main():
    rows = []
    for t in TABLES:
        with open(t, newline="") as f:
            for r in csv.DictReader(f):
                if r["expressible"] != "yes" or r["unknown_args"]:
                    continue  # not expressible, or banded over an unstated knob
                j = price(r)
                if j is None:
                    continue
                tok = float(r["tokens_per_s_per_gpu"])
                pub_step = float(r["gbs"]) * float(r["seq"]) / (tok * float(r["gpus"]))
                t = j["time"]
                sim = (j.get("time_simulated") or {}).get("step_s")
                pred_tok = j["tokens_per_s"] / float(r["gpus"])
                rows.append(dict(r=r, pub=pub_step, t=t, sim=sim, err=(pred_tok - tok) / tok))
    print("%-44s %-5s %-11s %5s %7s %7s %7s | %6s %6s %6s %6s %6s %6s | %6s" % (
        "run", "kind", "system", "err%", "pub_s", "pred_s", "sim_s", "comp", "TP", "EP", "PP+DP",
        "bubble", "host", "miss_s"))
    for x in sorted(rows, key=lambda x: -abs(x["err"])):
        r, t = x["r"], x["t"]
        print("%-44s %-5s %-11s %+5.1f %7.3f %7.3f %7s | %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f | %+6.3f" % (
            r["run_id"][:44], r["kind"], r["system"], 100 * x["err"], x["pub"], t["step_s"],
            "%.3f" % x["sim"] if x["sim"] else "-", t["compute_s"], t["tp_s"], t["ep_s"],
            t["pp_s"] + t["dp_s"], t["bubble_s"], t["host_paced_s"], x["pub"] - t["step_s"]))
    # GB300 / GB200 pairs: same release, model, precision (layouts may differ; printed)
    print("\nGB300 / GB200 pairs (same release, model, precision): published vs predicted speed ratio")
    by = {}
    for x in rows:
        r = x["r"]
        by.setdefault((r["release"], r["model"], r["precision"], r["kind"]), {})[r["system"]] = x
    for k, d in sorted(by.items()):
        if "gb300-nvl72" in d and "gb200-nvl72" in d:
            a, b = d["gb300-nvl72"], d["gb200-nvl72"]
            ra, rb = a["r"], b["r"]
            pub = float(ra["tokens_per_s_per_gpu"]) / float(rb["tokens_per_s_per_gpu"])
            pred = (1 + a["err"]) * float(ra["tokens_per_s_per_gpu"]) / (
                (1 + b["err"]) * float(rb["tokens_per_s_per_gpu"]))
            lay = lambda r: "tp%s pp%s cp%s vp%s ep%s mbs%s" % (r["tp"], r["pp"], r["cp"], r["vp"], r["ep"], r["mbs"])
            print("  %-9s %-28s %-6s %-5s pub %.3f pred %.3f   gb300 %s | gb200 %s" % (
                k[0], k[1][-28:], k[2], k[3], pub, pred, lay(ra), lay(rb)))


if __name__ == "__main__":
    sys.exit(main())
