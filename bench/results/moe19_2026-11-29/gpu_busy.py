#!/usr/bin/env python3
"""gpu_busy.py TRACE — GPU time of one profiled step (moe_host_probe.py --trace) by class, before the
optimizer (the kernels that start before the first multi_tensor_apply kernel: forward + backward),
per stream, with the union of kernel intervals (busy). Standard library only (helper moe19)."""
import collections, gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
k = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
k.sort(key=lambda e: e["ts"])
t_opt = min((e["ts"] for e in k if "multi_tensor" in e["name"]), default=1e30)
def cls(n):
    l = n.lower()
    if "memcpy" in l or "memset" in l: return "memcpy/memset"
    if "grouped" in l or "prepare_grouped" in l: return "grouped_gemm"
    if "nvjet" in l or "gemm" in l or "cutlass" in l: return "gemm"
    if "fmha" in l or "cudnn" in l or "flash" in l or "sdpa" in l: return "attention"
    if "chunk_cat" in l: return "chunk_cat"
    if "multi_tensor" in l: return "multi_tensor"
    if "nccl" in l: return "nccl"
    if "sort" in l or "radix" in l or "scan" in l or "histogram" in l: return "sort/scan/hist"
    if "index" in l or "gather" in l or "scatter" in l: return "index/gather"
    return "other elementwise"
def union(iv):
    iv.sort(); b = 0; cs = ce = None
    for s, e in iv:
        if ce is None or s > ce:
            if ce is not None: b += ce - cs
            cs, ce = s, e
        else: ce = max(ce, e)
    return b + (ce - cs if ce is not None else 0)
for part, sel in (("fwd+bwd", lambda e: e["ts"] < t_opt), ("clip+opt", lambda e: e["ts"] >= t_opt)):
    ks = [e for e in k if sel(e)]
    if not ks: continue
    by = collections.Counter(); n = collections.Counter(); st = collections.defaultdict(list)
    for e in ks:
        by[cls(e["name"])] += e["dur"]; n[cls(e["name"])] += 1
        st[e.get("args", {}).get("stream")].append((e["ts"], e["ts"] + e["dur"]))
    span = max(e["ts"] + e["dur"] for e in ks) - min(e["ts"] for e in ks)
    print("%s: span %.2f ms, kernels %d, busy (all streams) %.2f ms" % (part, span / 1e3, len(ks), union([(e["ts"], e["ts"] + e["dur"]) for e in ks]) / 1e3))
    for s, iv in sorted(st.items(), key=lambda x: str(x[0])):
        print("  stream %s: %d kernels, busy %.2f ms" % (s, len(iv), union(iv) / 1e3))
    for c, t in by.most_common():
        print("  %-18s %8.2f ms  %5d" % (c, t / 1e3, n[c]))
