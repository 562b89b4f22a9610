#!/usr/bin/env python3
"""The numbers bench/results/mgpu9_2026-11-28/README.md derives from the profiled steps of that
call (standard library only; the gzipped Chrome traces of parallel_run.py --profile).

Why: the two model terms of that branch rest on them:
  threads   two traces of the same layer code (TP 2 at dp 1 and at dp 2): for each host thread
            (Python's main thread issues the forward, clip and optimizer; the autograd thread
            the backward), the self time of the ops both traces run with the same call count,
            and its ratio (host.eager_fsdp_tp_*_scale's check)
  blocks    the host's interval between consecutive decoder blocks' forward starts ("tp.block"
            regions) and between consecutive block-input gradients ("tp.bwd_mark"), medians
  loss      the kernels of torch's loss_parallel in one step (the eager, non-Triton
            elementwise / reduction / copy kernels launched from step.forward after the blocks
            and from step.backward), their time and rate over the bytes elementwise.c gives
            them (gpu.loss_parallel_efficiency)
Usage: mgpu9_derive.py threads A.trace.json.gz B.trace.json.gz
       mgpu9_derive.py blocks TRACE.json.gz
       mgpu9_derive.py loss TRACE.json.gz --logits N
"""
import gzip
import json
import re
import statistics
import sys

from trace_ops import self_times

# the kernels of loss_parallel's ops (torch 2.11 names): exp, the fp32 row reductions (amax, sum),
# broadcast fp32 elementwise (x - max, x - lse, * grad), the fp32 cast, add, fill, the bf16 cast
LOSS_KERNELS = re.compile(r"exp_kernel|reduce_kernel<512, 1, at::native::ReduceOp<float|"
                          r"elementwise_kernel<128, 2|direct_copy_kernel|CUDAFunctor_add<float>|"
                          r"FillFunctor<float>|bfloat16_copy_kernel|^Memset")
SKIP = re.compile(r"^(step\.|tp\.|FSDP|fsdp|ProfilerStep)|chunk_cat|all_gather|reduce_scatter|nccl|"
                  r"record_param_comms|_local_scalar_dense|wait_tensor|split_with_sizes_copy", re.I)


def events(path):
    with gzip.open(path) if path.endswith(".gz") else open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and "dur" in e]


def per_thread(path):
    by = {}
    for e in events(path):
        if e.get("cat") in ("cpu_op", "user_annotation"):
            name = re.sub(r"\((layers|model\.layers)\.\d+[^)]*\)", "(layers.N)", e["name"])
            by.setdefault(e["tid"], []).append((e["ts"], e["dur"], name))
    # the autograd thread runs the backward's nodes (*Backward*); the other busy one is main
    out = {}
    for tid, evs in by.items():
        st, busy = self_times(evs)
        kind = "autograd" if any("Backward" in n for n in st) and not any(
            n == "step.forward" for n in st) else "main"
        if len(evs) > 100:
            out[kind] = st
    return out


def cmd_threads(a, b):
    ta, tb = per_thread(a), per_thread(b)
    res = {}
    for kind in ("main", "autograd"):
        x, y = ta.get(kind, {}), tb.get(kind, {})
        common = [k for k in x if k in y and not SKIP.search(k) and x[k][0] == y[k][0]]
        sa = sum(x[k][2] for k in common)
        sb = sum(y[k][2] for k in common)
        res[kind] = {"ops": len(common), "calls": sum(x[k][0] for k in common),
                     "self_a_ms": round(sa / 1e3, 2), "self_b_ms": round(sb / 1e3, 2),
                     "ratio": round(sb / sa, 3) if sa else None}
    return res


def cmd_blocks(path):
    ev = [e for e in events(path) if e.get("cat") == "user_annotation"]
    fb = sorted(e["ts"] for e in ev if e["name"] == "tp.block")
    bm = sorted(e["ts"] for e in ev if e["name"] == "tp.bwd_mark")
    f = [(fb[i + 1] - fb[i]) / 1e3 for i in range(len(fb) - 1)]
    b = [(bm[i + 1] - bm[i]) / 1e3 for i in range(len(bm) - 1)]
    return {"fwd_block_ms": [round(x, 2) for x in f], "fwd_median_ms": round(statistics.median(f), 2) if f else None,
            "bwd_block_ms": [round(x, 2) for x in b], "bwd_median_ms": round(statistics.median(b), 2) if b else None}


def cmd_loss(path, logits):
    ev = events(path)
    rt = {(e.get("args") or {}).get("correlation"): e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    regs = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
            if e.get("cat") == "user_annotation" and e["name"].startswith("step.")]

    def region(ts):
        for s, t, n in regs:
            if s <= ts < t:
                return n
        return None
    tot = {"step.forward": 0.0, "step.backward": 0.0}
    big = {}
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memset") or e["name"].startswith("triton"):
            continue
        if not LOSS_KERNELS.search(e["name"]):
            continue
        if e["dur"] < 300:  # whole-shard passes (torch splits them in 32-bit-indexable parts)
            continue
        launch = rt.get((e.get("args") or {}).get("correlation"))
        r = region(launch["ts"]) if launch else None
        if r in tot:
            tot[r] += e["dur"]
            k = "%s | %s" % (r, e["name"][:80])
            big[k] = big.get(k, 0.0) + e["dur"]
    s = (tot["step.forward"] + tot["step.backward"]) * 1e-6
    nbytes = 76.0 * logits
    return {"forward_ms": round(tot["step.forward"] / 1e3, 2), "backward_ms": round(tot["step.backward"] / 1e3, 2),
            "kernels_ms": {k: round(v / 1e3, 2) for k, v in sorted(big.items(), key=lambda x: -x[1])},
            "bytes": nbytes, "rate_bytes_per_s": nbytes / s if s else None}


if __name__ == "__main__":
    av = sys.argv[1:]
    if len(av) == 3 and av[0] == "threads":
        out = cmd_threads(av[1], av[2])
    elif len(av) == 2 and av[0] == "blocks":
        out = cmd_blocks(av[1])
    elif len(av) == 4 and av[0] == "loss" and av[2] == "--logits":
        out = cmd_loss(av[1], float(av[3]))
    else:
        sys.exit(__doc__.split("Usage: ")[1])
    print(json.dumps(out, indent=1))
