#!/usr/bin/env python3
"""Where one profiled ring-attention layer's GPU time goes, from bench/cp_ring_micro.py's Chrome
traces (gzipped, torch.profiler), standard library only.

Per record_function region (ring.fwd, ring.bwd): span of its kernels, the compute stream's busy
time (all but NCCL) and idle time inside the span, and kernel time by class: sdpa (flash, cuDNN),
nccl, cat (CatArrayBatchedCopy), fill (zeros_like), copy/cast (dtype casts, copies), reduce,
elementwise (the merge's arithmetic, += of the accumulators). A kernel belongs to the region its
launch (correlation id) came from.
Usage: python3 bench/cp_ring_breakdown.py TRACE.json.gz [...]
"""
import gzip,json,glob,collections,re,sys
def cls(n):
    if re.search("nccl",n,re.I): return "nccl"
    if re.search("flash|fmha|cudnn|sdpa",n,re.I): return "sdpa"
    if "CatArray" in n: return "cat"
    if "FillFunctor" in n: return "fill"
    if re.search("copy_kernel|Memcpy",n): return "copy/cast"
    if "reduce_kernel" in n: return "reduce"
    return "elementwise"
def union(iv):
    tot=0; s0=e0=None
    for s,e in sorted(iv):
        if e0 is None or s>e0:
            if e0 is not None: tot+=e0-s0
            s0,e0=s,e
        else: e0=max(e0,e)
    return tot+((e0-s0) if e0 is not None else 0)
for p in sys.argv[1:]:
    t=json.load(gzip.open(p))
    ev=[e for e in t["traceEvents"] if e.get("ph")=="X"]
    gpu=[e for e in ev if e.get("cat") in ("kernel","gpu_memcpy","gpu_memset")]
    rt={e["args"]["correlation"]:e for e in ev if e.get("cat") in ("cuda_runtime","cuda_driver") and "correlation" in e.get("args",{})}
    regs=[(e["ts"],e["ts"]+e["dur"],e["name"]) for e in ev if e.get("cat")=="user_annotation" and e["name"].startswith("ring.")]
    def reg(ts):
        for s,e_,n in regs:
            if s<=ts<e_: return n
        return "-"
    out=collections.defaultdict(lambda: collections.defaultdict(float))
    spans={}
    for e in gpu:
        L=rt.get(e.get("args",{}).get("correlation"))
        r=reg(L["ts"]) if L else "-"
        out[r][cls(e["name"])]+=e["dur"]/1e3
        spans.setdefault(r,[]).append((e["ts"],e["ts"]+e["dur"],cls(e["name"])))
    print("==",p)
    for r in sorted(out):
        iv=spans[r]; sp=(max(x[1] for x in iv)-min(x[0] for x in iv))/1e3
        comp=union([(a,b) for a,b,c in iv if c!="nccl"])/1e3
        print("  %-9s span %7.2f ms  compute-busy %7.2f  compute-idle %6.2f | "%(r,sp,comp,sp-comp)+"  ".join("%s %.2f"%(k,v) for k,v in sorted(out[r].items(),key=lambda x:-x[1])))
    for s,e_,n in regs: print("  host %s %.2f ms"%(n,(e_-s)/1e3))
