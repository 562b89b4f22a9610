#!/usr/bin/env python3
"""GPU time of the MoE routing kernels of one layer in a profiled parallel_run.py EP step (what
gather_moe.c prices), standard library only. Forward: every kernel launched between the layer's
moe.router and the end of its moe.unpermute except the grouped GEMMs (and their
prepare_grouped_gemm_data), NCCL, FSDP2's pre-forward copies, the SwiGLU's silu and product, the
router GEMM and host<->device copies. Backward: the kernels of the layer's IndexBackward0,
IndexCopyBackward0, the combine's MulBackward0 / SumBackward / ToCopyBackward nodes (the [T, k, h]
ones: elementwise_kernel<128, 2>, the reduction, the casts) and the router's softmax/topk nodes.
Usage: routing_time.py TRACE.json.gz LAYER"""
import collections
import gzip
import json
import re
import sys

tr, layer = sys.argv[1], int(sys.argv[2])
ev = [e for e in json.load(gzip.open(tr))["traceEvents"] if e.get("ph") == "X"]
gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
rt = {e["args"].get("correlation"): e for e in ev
      if e.get("cat") in ("cuda_runtime", "cuda_driver") and "args" in e}
ops = sorted([e for e in ev if e.get("cat") in ("cpu_op", "user_annotation")], key=lambda e: e["ts"])
ann = [e for e in ops if e.get("cat") == "user_annotation"]
by_tid = collections.defaultdict(list)
for o in ops:
    by_tid[o["tid"]].append(o)
R = [e for e in ann if e["name"] == "moe.router"]
U = [e for e in ann if e["name"] == "moe.unpermute"]
f0, f1 = R[layer]["ts"], U[layer]["ts"] + U[layer]["dur"]
pre = {int(re.search(r"layers\.(\d+)", e["name"]).group(1)): e["ts"] for e in ann
       if re.match(r"FSDP::pre_backward \(layers\.\d+\)$", e["name"])}
b0 = pre[layer]
b1 = pre.get(layer - 1, max(e["ts"] + e["dur"] for e in ann if e["name"] == "step.backward"))


def chain(c):
    return [o["name"] for o in by_tid[c["tid"]] if o["ts"] <= c["ts"] <= o["ts"] + o["dur"]]


fwd = bwd = 0.0
fk, bk = collections.Counter(), collections.Counter()
for g in gpu:
    c = rt.get(g["args"].get("correlation"))
    if not c:
        continue
    ch = " > ".join(chain(c))
    n = g["name"]
    if f0 <= c["ts"] <= f1:
        if ("cutlass" in n or "nccl" in n or "FSDP::" in ch or "aten::silu" in ch or "Memcpy HtoD" in n
                or "Memcpy DtoH" in n or "aten::mm" in ch or ("moe.experts" in ch and "aten::mul" in ch)):
            continue
        fwd += g["dur"]
        fk[n[:60]] += g["dur"]
    elif b0 <= c["ts"] < b1:
        keep = ("IndexBackward0" in ch or "IndexCopyBackward0" in ch or "SoftmaxBackward" in ch
                or "TopkBackward" in ch or "SumBackward" in ch or "ToCopyBackward0" in ch
                or ("MulBackward0" in ch and ("elementwise_kernel<128, 2" in n or "reduce_kernel" in n)))
        if keep and "nccl" not in n and "FSDP::" not in ch and "fsdp::" not in ch:
            bwd += g["dur"]
            bk[n[:60]] += g["dur"]
print("%s layer %d: routing forward %.3f ms, backward %.3f ms" % (tr.split("/")[-1], layer, fwd / 1e3, bwd / 1e3))
