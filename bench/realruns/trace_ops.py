#!/usr/bin/env python3
"""Host-side and communication summary of one profiled training step (torch.profiler Chrome trace,
gzipped), standard library only, so it runs on the GPU machine beside the run and here.

Why (issues 14 and 19, bench/results/mgpu9_2026-11-28/README.md): trace_summary.py says where the
GPU time goes and how long the compute stream waits for the host; the misses of the multi-GPU
held-out rows need two more things from the same trace:
  host_ops      per CPU op and per record_function name (FSDP::*, aten::*, autograd nodes):
                calls, inclusive and self host time per thread (self = minus nested children on
                the same thread), the top ones by self time; per-thread busy time (union of the
                outermost events), so "is the host the critical path" is a number
  nccl          every NCCL kernel grouped by stream and kernel name: calls, total and median
                duration (TP, FSDP all-gather and reduce-scatter run on different streams, so a
                TP collective slowed beside FSDP traffic shows as a longer median than at dp 1)
  gaps          idle time of the compute stream split into gaps the host caused (the next kernel
                was launched after the stream went idle) and gaps spent waiting for another stream
                (NCCL), with a histogram of the gap lengths
  fused_async_tp  CPU ops and kernels of torch's async TP (symmetric-memory fused all-gather +
                matmul, matmul + reduce-scatter): calls and time, so a run says whether Inductor's
                micro-pipeline pass fused anything
Usage: trace_ops.py TRACE.json.gz [--top N] > summary.json
"""
import gzip
import json
import re
import statistics
import sys

from trace_summary import klass, union

ASYNC_TP = re.compile(r"fused_all_gather|fused_matmul_reduce|symm_mem|symmetric|_pipelined|"
                      r"all_gather_matmul|matmul_reduce_scatter", re.I)
LAUNCH = re.compile(r"^cuda(LaunchKernel|LaunchKernelExC|MemcpyAsync|MemsetAsync|Memcpy$)|^cuLaunch")


def short(name):
    n = name.split("(")[0].split("<")[0]
    return n[:90]


def self_times(events):
    """events on one thread: list of (ts, dur, name). Returns {name: [calls, incl_us, self_us]}
    and the union of the outermost events (busy us)."""
    out = {}
    stack = []  # (end, name, child_us)
    busy = []
    evs = sorted(events, key=lambda e: (e[0], -e[1]))

    def close(upto):
        while stack and stack[-1][0] <= upto:
            end, name, child, dur = stack.pop()
            r = out.setdefault(name, [0, 0.0, 0.0])
            r[0] += 1
            r[1] += dur
            r[2] += max(0.0, dur - child)
            if stack:
                stack[-1][2] += dur

    for ts, dur, name in evs:
        close(ts)
        if not stack:
            busy.append((ts, ts + dur))
        stack.append([ts + dur, name, 0.0, dur])
    close(float("inf"))
    return out, union(busy)


def summarize(path, top=40):
    with gzip.open(path) if path.endswith(".gz") else open(path) as f:
        t = json.load(f)
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    us = 1e-6
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    host = [e for e in ev if e.get("cat") in ("cpu_op", "user_annotation", "python_function")]
    rt = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    out = {"trace": path.split("/")[-1]}
    g0 = min(e["ts"] for e in gpu)
    g1 = max(e["ts"] + e["dur"] for e in gpu)
    out["gpu_span_s"] = round((g1 - g0) * us, 6)
    # ---- host ops per thread
    by_tid = {}
    for e in host:
        if e.get("cat") == "python_function":
            continue
        name = re.sub(r"\((layers|model\.layers)\.\d+[^)]*\)", "(layers.N)", e["name"])
        by_tid.setdefault(e.get("tid"), []).append((e["ts"], e["dur"], name))
    threads, agg = {}, {}
    for tid, evs in by_tid.items():
        st, busy = self_times(evs)
        h0 = min(x[0] for x in evs)
        h1 = max(x[0] + x[1] for x in evs)
        threads[str(tid)] = {"events": len(evs), "busy_s": round(busy * us, 6),
                             "span_s": round((h1 - h0) * us, 6)}
        for n, (c, inc, sf) in st.items():
            a = agg.setdefault(n, [0, 0.0, 0.0])
            a[0] += c
            a[1] += inc
            a[2] += sf
    out["host_threads"] = threads
    rows = sorted(agg.items(), key=lambda x: -x[1][2])
    out["host_ops_top_self"] = [{"name": n[:120], "calls": c, "incl_s": round(i * us, 6),
                                 "self_s": round(s * us, 6)} for n, (c, i, s) in rows[:top]]
    fsdp = {n: v for n, v in agg.items() if n.startswith("FSDP") or "fsdp" in n.lower()}
    out["fsdp_annotations"] = [{"name": n[:120], "calls": c, "incl_s": round(i * us, 6),
                                "self_s": round(s * us, 6)}
                               for n, (c, i, s) in sorted(fsdp.items(), key=lambda x: -x[1][1])[:top]]
    dt = {n: v for n, v in agg.items() if "dtensor" in n.lower() or "redistribute" in n.lower()
          or "sharding_prop" in n.lower() or "funcol" in n.lower() or "c10d" in n.lower()}
    out["dtensor_c10d_ops"] = [{"name": n[:120], "calls": c, "incl_s": round(i * us, 6),
                                "self_s": round(s * us, 6)}
                               for n, (c, i, s) in sorted(dt.items(), key=lambda x: -x[1][1])[:top]]
    out["host_cpu_ops_calls"] = sum(v[0] for n, v in agg.items())
    # ---- NCCL kernels by stream and name
    nccl = {}
    for e in gpu:
        if klass(e["name"]) != "nccl":
            continue
        k = "%s | %s" % (e.get("tid"), short(e["name"]))
        nccl.setdefault(k, []).append(e["dur"])
    out["nccl"] = {k: {"calls": len(v), "total_s": round(sum(v) * us, 6),
                       "median_us": round(statistics.median(v), 1), "max_us": round(max(v), 1)}
                   for k, v in sorted(nccl.items(), key=lambda x: -sum(x[1]))}
    # ---- kernels by class and stream
    streams = {}
    for e in gpu:
        streams.setdefault(e.get("tid"), []).append(e)
    out["streams"] = {}
    for k, v in streams.items():
        cl = {}
        for e in v:
            c = klass(e["name"])
            cl[c] = cl.get(c, 0.0) + e["dur"] * us
        out["streams"][str(k)] = {"events": len(v),
                                  "busy_s": round(union([(e["ts"], e["ts"] + e["dur"]) for e in v]) * us, 6),
                                  "class_s": {c: round(x, 6) for c, x in sorted(cl.items(), key=lambda y: -y[1])}}
    # ---- compute-stream gaps
    comp = max(streams, key=lambda k: sum(e["dur"] for e in streams[k] if klass(e["name"]) != "nccl"))
    cs = sorted(streams[comp], key=lambda e: e["ts"])
    launch = {}
    for e in rt:
        c = (e.get("args") or {}).get("correlation")
        if c is not None:
            launch[c] = e
    hist_edges = [5, 20, 100, 500, 2000, 10000, float("inf")]
    hist = {"host": [0] * len(hist_edges), "other": [0] * len(hist_edges)}
    tot = {"host": 0.0, "other": 0.0}
    end = cs[0]["ts"] + cs[0]["dur"]
    for e in cs[1:]:
        gap = e["ts"] - end
        if gap > 0:
            L = launch.get((e.get("args") or {}).get("correlation"))
            kind = "host" if (L is not None and L["ts"] > end) else "other"
            tot[kind] += gap
            for i, edge in enumerate(hist_edges):
                if gap < edge:
                    hist[kind][i] += 1
                    break
        end = max(end, e["ts"] + e["dur"])
    out["compute_stream"] = str(comp)
    out["compute_gaps_s"] = {k: round(v * us, 6) for k, v in tot.items()}
    out["compute_gap_hist_us_upper"] = [str(x) for x in hist_edges]
    out["compute_gap_hist"] = hist
    # ---- async TP's fused ops
    fz = {}
    for e in host + gpu:
        if ASYNC_TP.search(e["name"]):
            k = "%s | %s" % (e.get("cat"), short(e["name"]))
            a = fz.setdefault(k, [0, 0.0])
            a[0] += 1
            a[1] += e["dur"]
    out["fused_async_tp"] = {k: {"calls": c, "total_s": round(d * us, 6)} for k, (c, d) in
                             sorted(fz.items(), key=lambda x: -x[1][1])[:top]}
    out["launches"] = sum(1 for e in rt if LAUNCH.search(e["name"]))
    return out


if __name__ == "__main__":
    top = 40
    argv = sys.argv[1:]
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        del argv[i:i + 2]
    if not argv:
        sys.exit("usage: trace_ops.py TRACE.json.gz [--top N]")
    res = [summarize(p, top) for p in argv]
    print(json.dumps(res if len(res) > 1 else res[0], indent=1))
