#!/usr/bin/env python3
"""Summary of one profiled training step from its Chrome trace (torch.profiler export_chrome_trace,
gzipped), standard library only, so it runs where torch is not installed.

Why: bench/realruns/parallel_run.py --profile writes the trace of one expert-parallel step; the
questions it answers (bench/results/ep_2026-11-27/README.md) are where the step's time goes on
the GPU and how much of it the GPU waits for the host:
  span      first to last GPU activity (kernels, memcpy, memset) of the step
  busy      union of all GPU activity; idle = span - busy
  streams   busy time per CUDA stream (NCCL runs on its own streams)
  classes   kernel time by class (GEMM, grouped GEMM, NCCL, attention, optimizer, index/sort/
            scatter, reduction, elementwise/copy, memcpy/memset)
  regions   per record_function region (step.forward, moe.router, ...): host time inside it, the
            launches issued from it and the GPU time of those launches' kernels
  host_wait idle time of the compute stream (the stream with most kernel time) whose next
            kernel was launched after the stream went idle: the GPU waited for the host; split by
            the region the late launch came from, and the host's blocking calls
            (cudaStreamSynchronize, cudaDeviceSynchronize, cudaMemcpy*) by region
Usage: trace_summary.py TRACE.json.gz [...] [--json]
"""
import gzip
import json
import re
import sys

CLASSES = [  # first match wins
    ("nccl", re.compile(r"nccl", re.I)),
    ("grouped_gemm", re.compile(r"GroupProblem|grouped", re.I)),
    ("attention", re.compile(r"flash|fmha|sdpa|attention", re.I)),
    ("gemm", re.compile(r"nvjet|gemm|cutlass|xmma|cublas", re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply|adam", re.I)),
    ("index_sort_scatter", re.compile(r"sort|radix|index|scatter|gather|histogram|bincount|cub::|"
                                      r"arange|cumsum|scan", re.I)),
    ("reduction", re.compile(r"reduce|norm|softmax|topk|sum_|max_", re.I)),
    ("memcpy_memset", re.compile(r"^Memcpy|^Memset")),
    ("elementwise_copy", re.compile(r".")),
]
BLOCKING = re.compile(r"^cuda(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy$|"
                      r"MemcpyAsync)")
LAUNCH = re.compile(r"^cuda(LaunchKernel|LaunchKernelExC|MemcpyAsync|MemsetAsync|Memcpy$)|^cuLaunch")


def klass(name):
    for c, rx in CLASSES:
        if rx.search(name):
            return c
    return "other"


def union(iv):
    tot, s0, e0 = 0.0, None, None
    for s, e in sorted(iv):
        if e0 is None or s > e0:
            if e0 is not None:
                tot += e0 - s0
            s0, e0 = s, e
        else:
            e0 = max(e0, e)
    return tot + ((e0 - s0) if e0 is not None else 0.0)


def region_of(ts, regions):
    """innermost record_function region (host) containing ts."""
    best = None
    for s, e, n in regions:
        if s <= ts < e and (best is None or e - s < best[1] - best[0]):
            best = (s, e, n)
    return best[2] if best else "(none)"


def summarize(path):
    with gzip.open(path) if path.endswith(".gz") else open(path) as f:
        t = json.load(f)
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    rt = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    regions = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev if e.get("cat") == "user_annotation"
               and (e["name"].startswith("step.") or e["name"].startswith("moe."))]
    us = 1e-6
    t0 = min(e["ts"] for e in gpu)
    t1 = max(e["ts"] + e["dur"] for e in gpu)
    out = {"trace": path.split("/")[-1], "gpu_events": len(gpu), "span_s": (t1 - t0) * us,
           "busy_s": union([(e["ts"], e["ts"] + e["dur"]) for e in gpu]) * us}
    out["idle_s"] = out["span_s"] - out["busy_s"]
    streams = {}
    for e in gpu:
        streams.setdefault(e.get("tid"), []).append(e)
    out["streams"] = {str(k): {"events": len(v), "busy_s": round(union([(e["ts"], e["ts"] + e["dur"]) for e in v]) * us, 6),
                               "nccl_s": round(sum(e["dur"] for e in v if klass(e["name"]) == "nccl") * us, 6)}
                      for k, v in streams.items()}
    cls = {}
    for e in gpu:
        c = klass(e["name"])
        cls[c] = cls.get(c, 0.0) + e["dur"] * us
    out["class_s"] = {k: round(v, 6) for k, v in sorted(cls.items(), key=lambda x: -x[1])}
    # launch of each GPU event (correlation id)
    launch = {}
    for e in rt:
        c = (e.get("args") or {}).get("correlation")
        if c is not None:
            launch[c] = e
    reg = {}
    for s, e_, n in regions:
        r = reg.setdefault(n, {"calls": 0, "host_s": 0.0, "launches": 0, "gpu_s": 0.0})
        r["calls"] += 1
        r["host_s"] += (e_ - s) * us
    for e in rt:
        if LAUNCH.search(e["name"]):
            n = region_of(e["ts"], regions)
            if n in reg:
                reg[n]["launches"] += 1
    gclass_by_region = {}
    for e in gpu:
        L = launch.get((e.get("args") or {}).get("correlation"))
        if L is None:
            continue
        n = region_of(L["ts"], regions)
        if n in reg:
            reg[n]["gpu_s"] += e["dur"] * us
        k = gclass_by_region.setdefault(n, {})
        c = klass(e["name"])
        k[c] = k.get(c, 0.0) + e["dur"] * us
    out["regions"] = {k: {kk: round(vv, 6) if isinstance(vv, float) else vv for kk, vv in v.items()}
                      for k, v in reg.items()}
    out["class_s_by_region"] = {k: {c: round(x, 6) for c, x in sorted(v.items(), key=lambda y: -y[1])}
                                for k, v in gclass_by_region.items()}
    # the compute stream: most kernel time outside NCCL
    comp = max(streams, key=lambda k: sum(e["dur"] for e in streams[k] if klass(e["name"]) != "nccl"))
    cs = sorted(streams[comp], key=lambda e: e["ts"])
    out["compute_stream"] = str(comp)
    waits, other_gaps = {}, 0.0
    n_wait = 0
    end = cs[0]["ts"] + cs[0]["dur"]
    for e in cs[1:]:
        gap = e["ts"] - end
        if gap > 0:
            L = launch.get((e.get("args") or {}).get("correlation"))
            if L is not None and L["ts"] > end:  # launched after the stream went idle
                late = min(gap, e["ts"] - end)
                n = region_of(L["ts"], regions)
                waits[n] = waits.get(n, 0.0) + late * us
                n_wait += 1
            else:
                other_gaps += gap * us  # waiting on another stream (NCCL, copies) or an event
        end = max(end, e["ts"] + e["dur"])
    out["compute_stream_idle_s"] = round(((cs[-1]["ts"] + cs[-1]["dur"]) - cs[0]["ts"]) * us -
                                         union([(e["ts"], e["ts"] + e["dur"]) for e in cs]) * us, 6)
    out["compute_idle_waiting_for_host_s"] = round(sum(waits.values()), 6)
    out["compute_idle_waiting_for_host_by_region_s"] = {k: round(v, 6) for k, v in
                                                        sorted(waits.items(), key=lambda x: -x[1])}
    out["compute_idle_other_s"] = round(other_gaps, 6)
    blk = {}
    for e in rt:
        if BLOCKING.search(e["name"]) and e["dur"] > 20:
            k = "%s @ %s" % (e["name"], region_of(e["ts"], regions))
            b = blk.setdefault(k, [0.0, 0])
            b[0] += e["dur"] * us
            b[1] += 1
    out["host_blocking_over_20us"] = {k: {"total_s": round(v[0], 6), "calls": v[1]}
                                      for k, v in sorted(blk.items(), key=lambda x: -x[1][0])}
    nl = sorted(e["ts"] for e in rt if LAUNCH.search(e["name"]))
    out["launches"] = len(nl)
    for k in ("span_s", "busy_s", "idle_s"):
        out[k] = round(out[k], 6)
    return out


if __name__ == "__main__":
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    res = [summarize(p) for p in paths]
    print(json.dumps(res if len(res) > 1 else res[0], indent=1))
