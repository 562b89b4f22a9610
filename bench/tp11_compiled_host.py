#!/usr/bin/env python3
"""Host time per decoder block of a torch.compile'd torchtitan-style TP step (issues 14, 19; helper
tp11, bench/results/tp11_2026-11-28/README.md), from --host-split records of
bench/realruns/parallel_run.py --layout tp --compile at a GPU-free shape.

Why: a compiled TP step keeps the host busy per block (FSDP2's pre-forward / pre-backward /
post-backward hooks over DTensor parameters, the compiled graph's call through AOTAutograd's
subclass wrappers, its generated launches and functional collectives) and at the shapes of the
real runs that host time, not the GPU, sets the step: the same command at seq 256 (GPU work
negligible) ran 0.1164 / 0.1120 s on two H200 x4 hosts, at seq 4096 mbs 2 0.1159 s.
For each run (labels hs-tp*-*-s256-cmp) the steady-state block is the median over blocks
1 .. L-2 of the host clock from one block's forward start to the next (fwd) and from one block
input's gradient to the previous one's (bwd), as bench/tphost_layer_cost.py does for eager
layers. Per pass the median over runs of one TP degree, and the line through TP 2 and TP 4
(layer_s + layer_rank_s x tp): host.compiled_dtensor_{fwd,bwd}_layer{,_rank}_s. A pass whose
host time does not grow from TP 2 to TP 4 gets no rank term (a negative one has no mechanism): its
layer_s is the median over all runs (the eager H200 forward's rule, bench/tphost_layer_cost.py).
Standard library only. Usage (repository root):
  python3 bench/tp11_compiled_host.py bench/results/tp11_2026-11-28/call*_h200x4/jobs/results.jsonl
"""
import json
import statistics
import sys


def steady(xs):
    return statistics.median([x for x in xs[1:-1] if x is not None])


def main():
    runs = []
    for fn in sys.argv[1:]:
        for ln in open(fn):
            r = json.loads(ln)
            if r.get("compile") and r.get("host_split") and r["label"].endswith("-s256-cmp"):
                hs = r["host_split"]
                runs.append({"label": r["label"], "file": fn, "gpu": r["gpu"], "tp": r["tp"],
                             "layers": r["layers"], "step_s": r["step_s_median"],
                             "fwd_s": steady(hs["fwd_block_s"]), "bwd_s": steady(hs["bwd_block_s"])})
    if not runs:
        sys.exit("tp11_compiled_host: no compiled --host-split run at seq 256 in the files given")
    print("%-28s %-12s %3s %9s %9s %9s" % ("run", "gpu", "tp", "step ms", "fwd ms", "bwd ms"))
    for v in runs:
        print("%-28s %-12s %3d %9.2f %9.3f %9.3f" % (v["label"], v["gpu"][-4:], v["tp"], v["step_s"] * 1e3,
                                                   v["fwd_s"] * 1e3, v["bwd_s"] * 1e3))
    by = {}
    for v in runs:
        by.setdefault(v["tp"], []).append(v)
    med = {tp: (statistics.median(x["fwd_s"] for x in vs), statistics.median(x["bwd_s"] for x in vs))
           for tp, vs in by.items()}
    res = {"runs": runs, "by_tp": {str(k): {"fwd_s": a, "bwd_s": b} for k, (a, b) in med.items()}}
    for tp, (a, b) in sorted(med.items()):
        print("tp %d median: fwd %.3f ms, bwd %.3f ms" % (tp, a * 1e3, b * 1e3))
    if 2 in med and 4 in med:
        for i, k in ((0, "fwd"), (1, "bwd")):
            rank = (med[4][i] - med[2][i]) / 2
            base = med[2][i] - 2 * rank
            if rank < 0:
                rank, base = 0.0, statistics.median(v[k + "_s"] for v in runs)
            res["compiled_dtensor_%s_layer_rank_s" % k] = rank
            res["compiled_dtensor_%s_layer_s" % k] = base
        print("host.compiled_dtensor_fwd_layer_s %.4g + _rank_s %.4g x tp; bwd %.4g + %.4g x tp" % (
            res["compiled_dtensor_fwd_layer_s"], res["compiled_dtensor_fwd_layer_rank_s"],
            res["compiled_dtensor_bwd_layer_s"], res["compiled_dtensor_bwd_layer_rank_s"]))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
