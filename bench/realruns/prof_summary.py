"""Small JSON summary of one torch.profiler step (rank 0), for bench/realruns/parallel_run.py --profile.

Why: the expert-parallel rows were predicted 25-37% fast and nobody knew where the time went; a
whole Chrome trace is too large to keep in the repo, so this keeps the numbers that decide it:
  - step span (first to last GPU event), GPU busy time (union of kernel + memcpy/memset intervals
    on any stream) and idle = span - busy;
  - kernel time by class (GEMM, grouped GEMM, NCCL, attention, optimizer, elementwise/copy,
    index/sort/scatter, reduction, other) and the top kernels by total time;
  - host: time in cudaStreamSynchronize / cudaDeviceSynchronize / cudaMemcpy* / cudaEventSynchronize
    (the host blocked), the number of launches and the median host gap between consecutive
    launches;
  - GPU idle gaps >= 20 us: their count and total, grouped by the first kernel after the gap
    (what the GPU was waiting to receive), and by the user region (record_function) the host was in.
Standard library + torch.profiler only.
"""
import json
import re
import statistics

CLASSES = [  # first match wins; kernel names of torch 2.11 / CUDA 13 / NCCL 2.28
    ("nccl", re.compile(r"nccl", re.I)),
    ("grouped_gemm", re.compile(r"grouped|_grouped_mm|GroupedGemm|group_gemm|cutlass.*Grouped", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa", re.I)),
    ("gemm", re.compile(r"gemm|cutlass|sm90_xmma|nvjet|cublas|matmul|sgemm|hgemm", re.I)),
    ("optimizer", re.compile(r"adam|multi_tensor_apply|fused_optim", re.I)),
    ("sort_index_scatter", re.compile(r"sort|radix|index|scatter|gather|histogram|bincount|cub::|"
                                      r"unique|nonzero|cumsum|scan", re.I)),
    ("reduction", re.compile(r"reduce|norm|softmax|topk|sum|max", re.I)),
    ("elementwise_copy", re.compile(r"elementwise|vectorized|copy|fill|cat|unrolled|Memcpy|Memset|"
                                    r"silu|mul|add|cast", re.I)),
]
BLOCKING = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
            "cudaMemcpy", "cudaMemcpyAsync", "cudaStreamWaitEvent")


def klass(name):
    for c, rx in CLASSES:
        if rx.search(name):
            return c
    return "other"


def union_len(iv):
    tot, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(iv):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                tot += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        tot += cur_e - cur_s
    return tot


def summarize(prof, regions=()):
    """prof: a finished torch.profiler.profile; regions: record_function names to attribute gaps.
    Times in seconds."""
    evs = prof.events()
    gpu, host_rt, user = [], [], []
    for e in evs:
        dt = getattr(e, "device_type", None)
        name = e.name
        t0, t1 = e.time_range.start * 1e-6, e.time_range.end * 1e-6
        if str(dt).endswith("CUDA"):
            gpu.append((t0, t1, name))
        elif name.startswith("cuda") or name.startswith("cu"):
            host_rt.append((t0, t1, name))
        elif name in regions:
            user.append((t0, t1, name))
    gpu.sort()
    out = {}
    if not gpu:
        return {"error": "no GPU events"}
    span0, span1 = gpu[0][0], max(g[1] for g in gpu)
    busy = union_len([(a, b) for a, b, _ in gpu])
    out["gpu_span_s"] = span1 - span0
    out["gpu_busy_s"] = busy
    out["gpu_idle_s"] = (span1 - span0) - busy
    by = {}
    per = {}
    for a, b, n in gpu:
        c = klass(n)
        by[c] = by.get(c, 0.0) + (b - a)
        k = per.setdefault(n[:120], [0.0, 0, c])
        k[0] += b - a
        k[1] += 1
    out["kernel_s_by_class"] = {k: round(v, 6) for k, v in sorted(by.items(), key=lambda x: -x[1])}
    nccl_iv = [(a, b) for a, b, n in gpu if klass(n) == "nccl"]
    out["nccl_union_s"] = union_len(nccl_iv)
    out["compute_union_s"] = union_len([(a, b) for a, b, n in gpu if klass(n) != "nccl"])
    out["top_kernels"] = [{"name": n, "total_s": round(v[0], 6), "calls": v[1], "class": v[2]}
                          for n, v in sorted(per.items(), key=lambda x: -x[1][0])[:25]]
    blk = {}
    for a, b, n in host_rt:
        if n.startswith(BLOCKING):
            e = blk.setdefault(n, [0.0, 0])
            e[0] += b - a
            e[1] += 1
    out["host_blocking_s"] = {k: {"total_s": round(v[0], 6), "calls": v[1]} for k, v in blk.items()}
    launches = sorted(a for a, b, n in host_rt if "Launch" in n or n.startswith("cudaMemcpyAsync")
                      or n.startswith("cudaMemsetAsync"))
    out["launches"] = len(launches)
    if len(launches) > 1:
        gaps = [b - a for a, b in zip(launches, launches[1:])]
        out["host_launch_gap_median_s"] = statistics.median(gaps)
        out["host_launch_span_s"] = launches[-1] - launches[0]
    # GPU idle gaps (on the union timeline), attributed to the next kernel and the host region
    merged = []
    for a, b, n in gpu:
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1][1] = b
        else:
            merged.append([a, b, n])
    gaps = [(merged[i][1], merged[i + 1][0], merged[i + 1][2]) for i in range(len(merged) - 1)
            if merged[i + 1][0] - merged[i][1] >= 20e-6]
    out["idle_gaps_ge20us"] = {"count": len(gaps), "total_s": round(sum(b - a for a, b, _ in gaps), 6)}
    nxt = {}
    for a, b, n in gaps:
        e = nxt.setdefault(klass(n) + " | " + n[:80], [0.0, 0])
        e[0] += b - a
        e[1] += 1
    out["idle_gaps_by_next_kernel"] = [{"next": k, "total_s": round(v[0], 6), "count": v[1]}
                                       for k, v in sorted(nxt.items(), key=lambda x: -x[1][0])[:15]]
    # each user region: host time inside it, GPU kernels launched from inside it (by correlation is
    # not exposed uniformly; use the host interval of the region and the GPU time of the kernels
    # whose launch call lies in it)
    if user:
        launch_iv = [(a, b, n) for a, b, n in host_rt if "Launch" in n]
        reg = {}
        for a, b, n in user:
            e = reg.setdefault(n, {"host_s": 0.0, "calls": 0, "launches": 0})
            e["host_s"] += b - a
            e["calls"] += 1
            e["launches"] += sum(1 for la, lb, _ in launch_iv if a <= la < b)
        out["regions"] = {k: {"host_s": round(v["host_s"], 6), "calls": v["calls"], "launches": v["launches"]}
                          for k, v in reg.items()}
    for k in ("gpu_span_s", "gpu_busy_s", "gpu_idle_s", "nccl_union_s", "compute_union_s",
              "host_launch_gap_median_s", "host_launch_span_s"):
        if k in out:
            out[k] = round(out[k], 6)
    return out
