#!/usr/bin/env python3
"""Host time per DTensor dispatch of a real DTensor TP layer (issues 19, 14), from the
--host-split measurements of bench/realruns/parallel_run.py (bench/results/tphost_2026-11-27).

For each derivation run (Llama-3.1-8B cut to 8 layers, torchtitan's TP plan, dp 1, TP 2 and 4,
host-bound seq 256 and GPU-bound seq 4096, two H100 x4 machines) the steady-state block is the
median over blocks 1 .. L-2 of the host's clock from one block's forward start to the next
(fwd) and from one block input's gradient to the previous one's (bwd). The model prices a layer
pass on the host as P + N x d: P the plain launches at the preset's host.eager_launch_s (and
FSDP2's reduce-scatter copy-in host time), N the DTensor dispatches dtensor_ops.c counts (45
forward, 68 backward for this layer), d the cost per DTensor dispatch. P and N are read off
`plan estimate --ops` at seq 256 (GPU work below the host's, so the printed host floor is the
host's sum) with two values of d, so the script uses the model's own counts, and
d = (median layer time - P) / N. The held-out runs (ho-*) and the Qwen3 runs are not used here.
Standard library only. Usage (repository root, build/cli/plan built):
  python3 bench/tphost_layer_cost.py bench/results/tphost_2026-11-27/call*_h100x4/jobs/results.jsonl
  SYSTEM=h200 python3 bench/tphost_layer_cost.py bench/results/tp11_2026-11-28/call1_h200x4/jobs/results.jsonl
SYSTEM (default h100) names the preset whose host.eager_launch_s prices the plain launches P; the
runs' GPU should be that preset's (tp11 measured the H200 x4 hosts this way).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DERIVE = ("hs-tp2-8bL8-s256", "gp-tp2-8bL8-b4", "hs-tp4-8bL8-s256", "gp-tp4-8bL8-b4",
          "c2-tp2-8bL8", "c2-tp4-8bL8")


def steady(xs):
    mid = [x for x in xs[1:-1] if x is not None]
    return statistics.median(mid)


def model_counts(tp, tmp, system=None):
    """(P_fwd, N_fwd, P_bwd, N_bwd) of one Llama-3.1-8B layer at tp on the system preset (default:
    $SYSTEM, else h100). --no-cuda-graphs: torchtitan layouts at PP 1 default to a CUDA graph,
    which prints no eager host issue floor."""
    cfg = json.load(open(os.path.join(ROOT, "bench", "realruns", "configs", "llama-3.1-8b.json")))
    cfg["num_hidden_layers"] = 8
    mp = os.path.join(tmp, "l8.json")
    json.dump(cfg, open(mp, "w"))
    base = json.load(open(os.path.join(ROOT, "data", "systems", (system or os.environ.get("SYSTEM", "h100")) + ".json")))
    floors = []
    for d in (1e-3, 2e-3):
        s = json.loads(json.dumps(base))
        s["host"]["eager_dtensor_fwd_s"] = s["host"]["eager_dtensor_bwd_s"] = d
        s["host"]["eager_dtensor_fwd_rank_s"] = s["host"]["eager_dtensor_bwd_rank_s"] = 0
        sp = os.path.join(tmp, "sys.json")
        json.dump(s, open(sp, "w"))
        out = subprocess.run([os.path.join(ROOT, "build", "cli", "plan"), "estimate", "--model", mp,
                              "--system", sp, "--framework", "torchtitan", "--gpus", str(tp), "--tp",
                              str(tp), "--seq", "256", "--mbs", "1", "--gbs", "1", "--impl", "native",
                              "--optimizer-impl", "fused", "--no-cuda-graphs", "--ops"], capture_output=True, text=True,
                             env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))).stdout
        line = next(ln for ln in out.splitlines() if "host issue floor" in ln)
        w = line.split()
        floors.append((float(w[4]) * 1e-3, float(w[6]) * 1e-3))
    nf = (floors[1][0] - floors[0][0]) / 1e-3
    nb = (floors[1][1] - floors[0][1]) / 1e-3
    return floors[0][0] - nf * 1e-3, nf, floors[0][1] - nb * 1e-3, nb


def main():
    runs = {}
    for fn in sys.argv[1:]:
        for ln in open(fn):
            r = json.loads(ln)
            if r.get("label") in DERIVE and r.get("host_split"):
                hs = r["host_split"]
                runs[r["label"]] = {"tp": r["tp"], "gpu": r["gpu"], "cpu": r.get("cpu_model"),
                                    "file": os.path.relpath(fn, ROOT),
                                    "fwd_s": steady(hs["fwd_block_s"]), "bwd_s": steady(hs["bwd_block_s"])}
    if not runs:
        sys.exit("tphost_layer_cost: none of the derivation runs found")
    res = {"runs": runs}
    with tempfile.TemporaryDirectory() as tmp:
        cnt = {tp: model_counts(tp, tmp) for tp in sorted({v["tp"] for v in runs.values()})}
    res["model_counts"] = {str(k): dict(zip(("plain_fwd_s", "n_fwd", "plain_bwd_s", "n_bwd"), v))
                           for k, v in cnt.items()}
    df = [(v["fwd_s"] - cnt[v["tp"]][0]) / cnt[v["tp"]][1] for v in runs.values()]
    db = [(v["bwd_s"] - cnt[v["tp"]][2]) / cnt[v["tp"]][3] for v in runs.values()]
    for v, a, b in zip(runs.values(), df, db):
        v["d_fwd_s"], v["d_bwd_s"] = a, b
    res["d_fwd_s_median_all"] = statistics.median(df)
    res["d_bwd_s_median_all"] = statistics.median(db)
    # per TP degree: the median of its runs; the line through TP 2 and TP 4 (dispatch + rank x tp,
    # the backward's cost grows with the TP group: host.eager_dtensor_*_rank_s)
    by = {}
    for v in runs.values():
        by.setdefault(v["tp"], []).append(v)
    med = {tp: (statistics.median(x["d_fwd_s"] for x in vs), statistics.median(x["d_bwd_s"] for x in vs))
           for tp, vs in by.items()}
    res["d_s_by_tp"] = {str(k): {"fwd": v[0], "bwd": v[1]} for k, v in med.items()}
    if 2 in med and 4 in med:
        for i, k in ((0, "fwd"), (1, "bwd")):
            rank = (med[4][i] - med[2][i]) / 2
            res["eager_dtensor_%s_rank_s" % k] = rank
            res["eager_dtensor_%s_s" % k] = med[2][i] - 2 * rank
    res["layer_fwd_s_median"] = statistics.median(v["fwd_s"] for v in runs.values())
    res["layer_bwd_s_median"] = statistics.median(v["bwd_s"] for v in runs.values())
    print("%-20s %3s %9s %9s %9s %9s" % ("run", "tp", "fwd ms", "bwd ms", "d_fwd us", "d_bwd us"))
    for k, v in runs.items():
        print("%-20s %3d %9.2f %9.2f %9.1f %9.1f" % (k, v["tp"], v["fwd_s"] * 1e3, v["bwd_s"] * 1e3,
                                                    v["d_fwd_s"] * 1e6, v["d_bwd_s"] * 1e6))
    for tp, c in cnt.items():
        print("model tp %d: plain fwd %.2f ms + %g DTensor dispatches; plain bwd %.2f ms + %g" % (
            tp, c[0] * 1e3, c[1], c[2] * 1e3, c[3]))
    for tp, v in sorted(med.items()):
        print("tp %d median: d_fwd %.1f us, d_bwd %.1f us" % (tp, v[0] * 1e6, v[1] * 1e6))
    if "eager_dtensor_fwd_s" in res:
        print("host.eager_dtensor_fwd_s %.3g + eager_dtensor_fwd_rank_s %.3g x tp; "
              "host.eager_dtensor_bwd_s %.3g + eager_dtensor_bwd_rank_s %.3g x tp" % (
                  res["eager_dtensor_fwd_s"], res["eager_dtensor_fwd_rank_s"],
                  res["eager_dtensor_bwd_s"], res["eager_dtensor_bwd_rank_s"]))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
