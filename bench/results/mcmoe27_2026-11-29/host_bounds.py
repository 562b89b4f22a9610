#!/usr/bin/env python3
"""host_bounds.py — mcmoe27: how much of each published Megatron MoE row's prediction is host time
(analysis only; nothing here feeds a preset or a row). For every priced MoE row of
tests/data/published_megatron_bridge_{blackwell,h100}.csv (a band at its first alternative) it runs
`plan estimate --format json` as the tests do and prints the signed tokens/s/GPU error
  err        as priced (the tests' figure)
  gpu_only   with no host floor at all (time.gpu_only_step_s): the most any CUDA-graph scope
             (moe_router, moe_preprocess, attn, full_iteration) could remove
  host_x1.5  with the host 1.5x slower (time.slow_host_step_s): a slower x86/Grace host
and host_paced_fraction. Error = (predicted - published) / published on tokens/s/GPU: positive =
plan predicts the step faster than it ran. Usage (repository root, after building):
  python3 bench/results/mcmoe27_2026-11-29/host_bounds.py [build/cli/plan]"""
import csv, json, shlex, subprocess, sys

PLAN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/plan"
CSVS = ["tests/data/published_megatron_bridge_blackwell.csv",
        "tests/data/published_megatron_bridge_h100.csv"]


def main():
    print(f"{'run':44s} {'release':8s} {'system':11s} {'err':>7s} {'gpu_only':>8s} "
          f"{'host_x1.5':>9s} {'paced':>6s}")
    for path in CSVS:
        for r in csv.DictReader(open(path)):
            if r["kind"] != "moe" or r["expressible"] != "yes":
                continue
            extra = shlex.split(r["unknown_args"].split("|")[0]) if r["unknown_args"] else []
            args = [PLAN, "estimate", "--model", r["model"], "--gpus", r["gpus"], "--system",
                    r["system"], "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp",
                    r["vp"], "--ep", r["ep"], "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq",
                    r["seq"]] + shlex.split(r["plan_args"]) + extra + ["--format", "json"]
            j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
            t = j["time"]
            gpus, seq, gbs = int(r["gpus"]), int(r["seq"]), int(r["gbs"])
            pub_s = gbs * seq / (gpus * float(r["tokens_per_s_per_gpu"]))
            e = lambda s: 100 * (pub_s / s - 1)
            print(f"{r['run_id'][:44]:44s} {r['release']:8s} {r['system']:11s} "
                  f"{e(t['step_s']):+6.1f}% {e(t['gpu_only_step_s']):+7.1f}% "
                  f"{e(t['slow_host_step_s']):+8.1f}% {100 * t['host_paced_fraction']:5.1f}%"
                  f"{'  (band: first alternative)' if extra else ''}")


if __name__ == "__main__":
    main()
