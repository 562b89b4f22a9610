#!/usr/bin/env python3
"""ep_overlap_bounds.py — mcmoe27: for every published MoE row priced with Megatron's 1F1B EP A2A
overlap (--moe-ep-overlap; overlap_moe_expert_parallel_comm), the signed tokens/s/GPU error as
priced and with the overlap removed (every EP exchange exposed), the EP time of each, and the share
of the overlap's hidden exchange time that the published step leaves hidden:
  implied = 1 - (published step - predicted step) / (step without overlap - predicted step)
(1: the overlap hides what plan says; 0: it hides nothing; < 0 or > 1: the gap is not the
overlap's). Analysis only. Usage (repository root): python3 .../ep_overlap_bounds.py [plan]"""
import csv, json, shlex, subprocess, sys

PLAN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/plan"


def run(r, drop=()):
    extra = shlex.split(r["unknown_args"].split("|")[0]) if r["unknown_args"] else []
    pa = [a for a in shlex.split(r["plan_args"]) if a not in drop]
    args = [PLAN, "estimate", "--model", r["model"], "--gpus", r["gpus"], "--system", r["system"],
            "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"], "--ep", r["ep"],
            "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]] + pa + extra + ["--format", "json"]
    return json.loads(subprocess.run(args, capture_output=True, text=True).stdout)["time"]


def main():
    print(f"{'run':44s} {'system':11s} {'pub_s':>6s} {'pred_s':>6s} {'err':>7s} {'ep_s':>5s} "
          f"{'noovl_s':>7s} {'err_noovl':>9s} {'ep_noovl':>8s} {'implied':>7s}")
    for f in ("tests/data/published_megatron_bridge_blackwell.csv",
              "tests/data/published_megatron_bridge_h100.csv"):
        for r in csv.DictReader(open(f)):
            if r["kind"] != "moe" or r["expressible"] != "yes" or "--moe-ep-overlap" not in r["plan_args"]:
                continue
            a, b = run(r), run(r, ("--moe-ep-overlap",))
            pub = int(r["gbs"]) * int(r["seq"]) / (int(r["gpus"]) * float(r["tokens_per_s_per_gpu"]))
            e = lambda s: 100 * (pub / s - 1)
            hid = b["step_s"] - a["step_s"]
            implied = 1 - (pub - a["step_s"]) / hid if hid > 0 else float("nan")
            print(f"{r['run_id'][:44]:44s} {r['system']:11s} {pub:6.2f} {a['step_s']:6.2f} "
                  f"{e(a['step_s']):+6.1f}% {a['ep_s']:5.2f} {b['step_s']:7.2f} "
                  f"{e(b['step_s']):+8.1f}% {b['ep_s']:8.2f} {implied:7.2f}")


if __name__ == "__main__":
    main()
