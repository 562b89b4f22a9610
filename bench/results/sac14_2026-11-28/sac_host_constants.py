#!/usr/bin/env python3
"""host.sac_fwd_launch_s and host.sac_replay_launch_s from bench/compiled_kernels.py --modes
eager,sac records (this folder's README). Per spec: the host's extra time per layer of a block
under torchtitan's op-level SAC policy (bench/realruns/sac_policy.py) against the same eager block,
forward (host_fwd_sac - host_fwd_eager) and backward (host_bwd_sac - host_bwd_eager: the
recompute's replay of the whole forward through the policy, its re-run kernels included), divided
by the forward kernels plan counts for that block (costmodel/host_dispatch.c run_pass, the kernels
the charge is applied to; the profiler's own count is printed beside it: it adds split-K reduce
kernels and a memset at some shapes, which the policy, called per aten op, does not see). plan's
count is read from plan itself: the same estimate under two copies of the h200 preset whose
host.sac_fwd_launch_s differ by 5 ms (replay 0), at seq 64 (the host paces every forward), gives
layers x count x 5 ms more step time. The constants are the medians over every spec given.
Usage (repository root, after building build/): python3 bench/results/sac14_2026-11-28/
sac_host_constants.py bench/results/sac14_2026-11-28/sac_host_tiny.json ...sac_host_real.json"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

PLAN = os.environ.get("PLAN", "build/cli/plan")


def plan_count(cfg):
    base = json.load(open("data/systems/h200.json"))
    steps = []
    with tempfile.TemporaryDirectory() as d:
        for c in (1e-2, 5e-3):
            s = json.loads(json.dumps(base))
            s["host"]["sac_fwd_launch_s"] = c
            s["host"]["sac_replay_launch_s"] = 0
            p = os.path.join(d, "sys%g.json" % c)
            json.dump(s, open(p, "w"))
            out = subprocess.run([PLAN, "estimate", "--model", cfg, "--system", p, "--framework",
                                  "torchtitan", "--gpus", "1", "--seq", "64", "--mbs", "1",
                                  "--gbs", "1", "--recompute", "selective", "--impl", "native",
                                  "--no-cuda-graphs", "--format", "json"],
                                 check=True, capture_output=True, text=True).stdout
            steps.append(json.loads(out)["time"]["step_s"])
    layers = json.load(open(cfg))["num_hidden_layers"]
    return (steps[0] - steps[1]) / (layers * 5e-3)


fw, bw = [], []
for path in sys.argv[1:]:
    d = json.load(open(path))
    for spec, r in d["specs"].items():
        if "eager" not in r or "sac" not in r:
            continue
        e, s = r["eager"], r["sac"]
        n = plan_count("bench/realruns/configs/%s.json" % spec.split(":")[0])
        df = s["host_fwd_ms_per_layer"] - e["host_fwd_ms_per_layer"]
        db = s["host_bwd_ms_per_layer"] - e["host_bwd_ms_per_layer"]
        fw.append(df / n * 1e3)
        bw.append(db / n * 1e3)
        print("%-22s kernels plan %5.2f profiler %4.0f  host fwd %.3f -> %.3f ms  bwd %.3f -> %.3f ms"
              "  per plan kernel: fwd +%.1f us, bwd +%.1f us" % (
                  spec, n, e["kernels_per_layer"]["fwd"], e["host_fwd_ms_per_layer"],
                  s["host_fwd_ms_per_layer"], e["host_bwd_ms_per_layer"], s["host_bwd_ms_per_layer"],
                  fw[-1], bw[-1]))
print("median over %d specs: host.sac_fwd_launch_s %.3g, host.sac_replay_launch_s %.3g" % (
    len(fw), statistics.median(fw) * 1e-6, statistics.median(bw) * 1e-6))
