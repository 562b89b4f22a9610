#!/usr/bin/env python3
"""sweeps.py — bwmoe16's what-if runs over the Blackwell MoE rows (analysis only; no preset or
row changes). For every expressible MoE row of tests/data/published_megatron_bridge_blackwell.csv
on the systems named (a band row at its first alternative) it prices the row as the test does and:
  dp_exposed  with --overlap-grad-reduce / --overlap-param-gather removed: every DP and
              expert-DP collective exposed (the most the DP sync over InfiniBand can add)
  nic400      on a copy of the system preset whose network is B200's (50e9 B/s per NIC at
              busbw 0.96): what the rows would give if the scale-out ran at 400 Gb/s per GPU
Prints the signed tokens/s/GPU error of each. Usage: sweeps.py [build/cli/plan] (from the
repository root)."""
import csv, json, os, shlex, subprocess, sys, tempfile

ROOT = os.getcwd()
PLAN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/plan"
SYSTEMS = ("b200", "b300", "gb200-nvl72", "gb300-nvl72")


def price(r, system, drop=()):
    extra = shlex.split(r["unknown_args"].split("|")[0]) if r["unknown_args"] else []
    pa = [a for a in shlex.split(r["plan_args"]) if a not in drop]
    args = [PLAN, "estimate", "--model", r["model"], "--gpus", r["gpus"], "--system", system,
            "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"], "--ep", r["ep"],
            "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]] + pa + extra + ["--format", "json"]
    j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
    return j["tokens_per_s"] / int(r["gpus"]) / float(r["tokens_per_s_per_gpu"]) - 1


def main():
    tmp = tempfile.mkdtemp()
    nic = {}
    for s in SYSTEMS:
        j = json.load(open(os.path.join(ROOT, "data", "systems", s + ".json")))
        j["network"]["nic_bandwidth_bytes_per_s"] = 50e9
        j["network"]["busbw_efficiency"] = 0.96
        nic[s] = os.path.join(tmp, s + ".json")
        json.dump(j, open(nic[s], "w"))
    print(f"{'run':44s} {'system':11s} {'ep':>3s} {'Eloc':>4s} {'error':>7s} {'dp_exposed':>10s} {'nic400':>7s}")
    E = {"deepseek-v3": 256, "gpt-oss-120b": 128, "qwen3-30b-a3b": 128, "qwen3-235b-a22b": 128}
    for r in csv.DictReader(open("tests/data/published_megatron_bridge_blackwell.csv")):
        if r["kind"] != "moe" or r["expressible"] != "yes" or r["system"] not in SYSTEMS:
            continue
        ne = [v for k, v in E.items() if r["run_id"].startswith(k)][0]
        e0 = price(r, r["system"])
        e1 = price(r, r["system"], ("--overlap-grad-reduce", "--overlap-param-gather"))
        e2 = price(r, nic[r["system"]])
        band = "  (band: first alternative)" if r["unknown_args"] else ""
        print(f"{r['run_id'][:44]:44s} {r['system']:11s} {r['ep']:>3s} {ne // int(r['ep']):4d} "
              f"{100 * e0:+6.1f}% {100 * e1:+9.1f}% {100 * e2:+6.1f}%{band}")


main()
