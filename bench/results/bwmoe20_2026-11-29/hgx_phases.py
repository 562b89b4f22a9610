#!/usr/bin/env python3
"""hgx_phases.py — bwmoe20's analysis of the DGX-B200 / DGX-B300 MoE rows (no model change): per
row, which EP exchange leaves the 8-GPU node, the expert-parallel and data-parallel time plan
prices (exposed, and every DP collective exposed: the overlap flags dropped), and the published
step. Usage (repository root, after building): python3 bench/results/bwmoe20_2026-11-29/hgx_phases.py"""
import csv, json, shlex, subprocess

PLAN = "build/cli/plan"


def price(r, drop=()):
    ua = shlex.split(r["unknown_args"].split("|")[0]) if r["unknown_args"] else []
    pa = [a for a in shlex.split(r["plan_args"]) if a not in drop]
    args = [PLAN, "estimate", "--model", r["model"], "--gpus", r["gpus"], "--system", r["system"],
            "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"], "--ep", r["ep"],
            "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]] + pa + ua + ["--format", "json"]
    j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
    return j["plans"][0] if "plans" in j else j


def main():
    print(f"{'run':44s} {'sys':5s} {'ep':>3s} {'disp':8s} {'EP a2a':9s} {'step':>6s} {'pub':>6s} "
          f"{'err':>7s} {'ep_s':>5s} {'dp_s':>5s} {'dp_all':>6s}")
    for r in csv.DictReader(open("tests/data/published_megatron_bridge_blackwell.csv")):
        if r["kind"] != "moe" or r["expressible"] != "yes" or r["system"] not in ("b200", "b300"):
            continue
        p = price(r)
        q = price(r, ("--overlap-grad-reduce", "--overlap-param-gather"))
        t = p["time"]
        pub_tps = float(r["tokens_per_s_per_gpu"]) * int(r["gpus"])
        pub_step = t["step_s"] * p["tokens_per_s"] / pub_tps
        a = r["plan_args"]
        disp = a.split("--moe-dispatcher ")[1].split()[0] if "--moe-dispatcher " in a else "-"
        crosses = "IB" if int(r["ep"]) > 8 else "NVLink"
        band = " (band: 1st)" if r["unknown_args"] else ""
        print(f"{r['run_id'][:44]:44s} {r['system']:5s} {r['ep']:>3s} {disp:8s} {crosses:9s} "
              f"{t['step_s']:6.2f} {pub_step:6.2f} {100 * (p['tokens_per_s'] / pub_tps - 1):+6.1f}% "
              f"{t['ep_s']:5.2f} {t['dp_s']:5.2f} {q['time']['dp_s']:6.2f}{band}")


main()
