#!/usr/bin/env python3
"""host_scale.py — mcmoe27: how much slower than measured (on an H100 host) the Megatron-Core MoE
host constants would have to be for host time to close a published MoE row (analysis only).
For the rows named below it prices the row as the tests do on a copy of the row's system preset
whose host.mcore_* (MoE layer and attention block), host.te_gemm_s (TE's per-expert cuBLASLt
launch) and host.eager_op_* constants are multiplied by k, for k = 1, 1.5, 2, 3, 4, and prints the
signed tokens/s/GPU error ((predicted - published) / published; positive = plan too fast).
Usage (repository root, after building):
  python3 bench/results/mcmoe27_2026-11-29/host_scale.py [build/cli/plan]"""
import csv, json, os, shlex, subprocess, sys, tempfile

PLAN = sys.argv[1] if len(sys.argv) > 1 else "build/cli/plan"
ROWS = ["deepseek-v3-mxfp8-b300-256gpu", "deepseek-v3-mxfp8-b200-256gpu",
        "deepseek-v3-mxfp8-gb300-256gpu", "deepseek-v3-mxfp8-b300-256gpu-2606",
        "gpt-oss-120b-bf16-b300-64gpu", "gpt-oss-120b-bf16-b200-64gpu",
        "gpt-oss-120b-bf16-gb300-64gpu", "qwen3-235b-a22b-mxfp8-b200-256gpu",
        "qwen3-30b-a3b-mxfp8-b300-8gpu", "qwen3-30b-a3b-mxfp8-gb300-8gpu",
        "qwen3-30b-a3b-mxfp8-b200-8gpu", "qwen3-30b-a3b-mxfp8-gb200-8gpu",
        "qwen3-30b-a3b-fp8-16gpu-ep16", "gpt-oss-120b-bf16-64gpu-gbs1280",
        "deepseek-v3-fp8-1024gpu"]
KS = (1.0, 1.5, 2.0, 3.0, 4.0)
SCALED = ("mcore_", "te_gemm_s", "eager_op_")


def scaled_system(name, k, tmp):
    j = json.load(open(os.path.join("data", "systems", name + ".json")))
    for key, v in j["host"].items():
        if key.startswith(SCALED) and isinstance(v, (int, float)):
            j["host"][key] = v * k
    path = os.path.join(tmp, f"{name}-{k}.json")
    json.dump(j, open(path, "w"))
    return path


def main():
    tmp = tempfile.mkdtemp()
    rows = {}
    for f in ("tests/data/published_megatron_bridge_blackwell.csv",
              "tests/data/published_megatron_bridge_h100.csv"):
        for r in csv.DictReader(open(f)):
            rows[r["run_id"]] = r
    print(f"{'run':40s} {'system':11s} " + " ".join(f"{'k=' + str(k):>7s}" for k in KS))
    for rid in ROWS:
        r = rows[rid]
        extra = shlex.split(r["unknown_args"].split("|")[0]) if r["unknown_args"] else []
        errs = []
        for k in KS:
            sysarg = r["system"] if k == 1.0 else scaled_system(r["system"], k, tmp)
            args = [PLAN, "estimate", "--model", r["model"], "--gpus", r["gpus"], "--system",
                    sysarg, "--tp", r["tp"], "--pp", r["pp"], "--cp", r["cp"], "--vpp", r["vp"],
                    "--ep", r["ep"], "--mbs", r["mbs"], "--gbs", r["gbs"], "--seq", r["seq"]] + \
                shlex.split(r["plan_args"]) + extra + ["--format", "json"]
            j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
            errs.append(100 * (j["tokens_per_s"] / int(r["gpus"]) /
                               float(r["tokens_per_s_per_gpu"]) - 1))
        print(f"{rid[:40]:40s} {r['system']:11s} " + " ".join(f"{e:+6.1f}%" for e in errs))


if __name__ == "__main__":
    main()
