"""plan's prediction beside the measured eager and CUDA-graphed steps of bench/results/cg11_2026-11-28
(bench/realruns/realrun.py --impl native --fsdp-reshard default [--cuda-graph]).

Each record is priced as the torchtitan layout it is (PyTorch-native model, FSDP2 over the ranks,
fused AdamW, 1 micro-batch), once with --no-cuda-graphs and once with --cuda-graphs, on the
preset of the GPU it ran on (H200: h200). Measured memory: peak allocated (and reserved) plus the
bytes outside the allocator at the end (realrun.py measured_peak_bytes / _reserved_bytes); plan's
total (and need) bytes. Errors are (predicted - measured) / measured.
Usage: python3 bench/results/cg11_2026-11-28/compare.py [build/cli/plan [RESULTS.jsonl]]
RESULTS (default: this folder's results.jsonl) may hold other runners' records too: only
realrun.py's (those with fwd_bwd_gpu_s) are priced; bench/results/ho11_2026-11-28 uses that.
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
PLAN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "cli", "plan")


def plan(rec, graphs):
    w = rec["world_size"]
    a = [PLAN, "estimate", "--model", os.path.join(ROOT, "bench", "realruns", "configs", rec["model"] + ".json"), "--system", "h200",
         "--framework", "torchtitan", "--gpus", str(w), "--seq", str(rec["seq"]),
         "--mbs", str(rec["mbs"]), "--gbs", str(rec["mbs"] * w), "--recompute", "none",
         "--impl", "native", "--optimizer-impl", "fused",
         "--cuda-graphs" if graphs else "--no-cuda-graphs", "--format", "json"]
    out = subprocess.run(a, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "results.jsonl")
    rows = [r for r in map(json.loads, open(path)) if "fwd_bwd_gpu_s" in r]
    print("| run | graphs | measured step s | plan eager s | plan graphs s | err (its mode) "
          "| fwd+bwd GPU span s | plan compute s (its mode) | replay call ms "
          "| peak alloc + non-alloc GiB | plan GiB (its mode) | err | peak reserved + non-alloc GiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    G = 2 ** 30
    for r in rows:
        g = bool(r.get("cuda_graph"))
        pe, pg = plan(r, False), plan(r, True)
        mine = pg if g else pe
        step = r["step_s_median"]
        err = (mine["time"]["step_s"] - step) / step
        fb = statistics.median(r["fwd_bwd_gpu_s"])
        call = statistics.median(r["fwd_bwd_host_call_s"]) * 1e3
        ma = (r["peak_allocated_bytes"] + r["nonalloc_end_bytes"]) / G
        mr = (r["peak_reserved_bytes"] + r["nonalloc_end_bytes"]) / G
        pm = mine["memory"]["total_bytes"] / G
        print("| %s | %s | %.4f | %.4f | %.4f | %+.1f%% | %.4f | %.4f | %s | %.2f | %.2f | %+.1f%% | %.2f |"
              % (r["label"], "on" if g else "off", step, pe["time"]["step_s"], pg["time"]["step_s"],
                 100 * err, fb, mine["time"]["compute_s"], "%.2f" % call if g else "-", ma, pm,
                 100 * (pm - ma) / ma, mr))


if __name__ == "__main__":
    main()
