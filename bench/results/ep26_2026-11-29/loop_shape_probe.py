"""ep26: the host cost of torchtitan's per-expert loop (prun_moe.py --experts loop) by GEMM shape.

Why: the looped EP rows (prof26-ep4-loop-q3moeL4-s4k-b2) are host-bound and priced 27-33% fast;
their profile shows aten::mm on the host bimodal, ~40 us or ~240 us, the slow ones the first use
of a row count (a new GEMM shape: cuBLAS(Lt)'s algorithm heuristic, cached per shape). This
probe measures, unprofiled, on one GPU (the GPU kept busy by torch.cuda._sleep so that the host
never waits for it), for Qwen3-30B-A3B's expert (hidden 2048, expert ffn 768):
  gemm:  host time of one torch.mm per GEMM family of the loop (forward x@w1 and h@w2; backward
         dgrad and wgrad of each), at a row count never used before in the process and again at
         the same count (the cached shape);
  loop:  one layer of the loop (32 local experts, rows per expert around 2048), forward and
         backward host time, with every row count new, and again with the same counts;
  cublasLt's heuristics cache capacity (cublasLtHeuristicsCacheGetCapacity) and torch's
  preferred BLAS backend.
Writes one JSON to argv[1]. Median of rounds; random bf16 data.
"""
import ctypes
import glob
import json
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

H, FF, E = 2048, 768, 32
dev = torch.device("cuda", 0)
torch.manual_seed(0)
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hidden": H, "expert_ffn": FF,
       "local_experts": E}
try:
    out["preferred_blas"] = str(torch.backends.cuda.preferred_blas_library())
except Exception as e:  # noqa: BLE001
    out["preferred_blas"] = "error: %s" % e
cap = None
for p in glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "**",
                                "libcublasLt.so*"), recursive=True) + ["libcublasLt.so"]:
    try:
        lib = ctypes.CDLL(p)
        c = ctypes.c_size_t(0)
        if lib.cublasLtHeuristicsCacheGetCapacity(ctypes.byref(c)) == 0:
            cap = {"lib": os.path.basename(p), "capacity": c.value}
            break
    except OSError:
        continue
out["heuristics_cache"] = cap
out["env_capacity"] = os.environ.get("CUBLASLT_HEURISTICS_CACHE_CAPACITY")

w1 = torch.randn(E, H, FF, device=dev, dtype=torch.bfloat16, requires_grad=True)
w3 = torch.randn(E, H, FF, device=dev, dtype=torch.bfloat16, requires_grad=True)
w2 = torch.randn(E, FF, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
big = torch.randn(66000, H, device=dev, dtype=torch.bfloat16)
gbig = torch.randn(66000, H, device=dev, dtype=torch.bfloat16)
hbig = torch.randn(40000, FF, device=dev, dtype=torch.bfloat16)
ghbig = torch.randn(40000, FF, device=dev, dtype=torch.bfloat16)
W1, W2 = w1.detach()[0], w2.detach()[0]
FAM = {  # the loop's GEMM families, as autograd's MmBackward0 calls them
    "fwd_x_w1": lambda m: torch.mm(big[:m], W1),            # (m,2048)@(2048,768)
    "fwd_h_w2": lambda m: torch.mm(hbig[:m], W2),           # (m,768)@(768,2048)
    "bwd_dh": lambda m: torch.mm(gbig[:m], W2.t()),         # grad of h: (m,2048)@(2048,768)^T view
    "bwd_dw2": lambda m: torch.mm(hbig[:m].t(), gbig[:m]),  # (768,m)@(m,2048)
    "bwd_dx": lambda m: torch.mm(ghbig[:m], W1.t()),        # (m,768)@(768,2048) view
    "bwd_dw1": lambda m: torch.mm(big[:m].t(), ghbig[:m]),  # (2048,m)@(m,768)
}
used = set()
nxt = [1001]


def new_m():
    while nxt[0] in used:
        nxt[0] += 1
    used.add(nxt[0])
    return nxt[0]


def busy(s=0.5):
    torch.cuda._sleep(int(s * 2.0e9))


# warm everything once (library load, allocator)
for f in FAM.values():
    f(2048)
torch.cuda.synchronize()
gem = {}
for name, f in FAM.items():
    new_t, seen_t = [], []
    for r in range(40):
        busy(0.02)
        m = new_m()
        t0 = time.perf_counter(); f(m); t1 = time.perf_counter(); f(m); t2 = time.perf_counter()
        new_t.append((t1 - t0) * 1e6)
        seen_t.append((t2 - t1) * 1e6)
        torch.cuda.synchronize()
    gem[name] = {"new_us": statistics.median(new_t), "seen_us": statistics.median(seen_t),
                 "new_us_q1_q3": [statistics.quantiles(new_t)[0], statistics.quantiles(new_t)[2]]}
out["gemm"] = gem


def layer(counts):
    """prun_moe.py's loop (Experts._forward_device, mode loop): host time forward, backward."""
    N = sum(counts)
    x = big[:N].detach().requires_grad_(True)
    busy(0.4)
    t0 = time.perf_counter()
    outs = []
    for e, xe in enumerate(torch.split(x, counts, dim=0)):
        outs.append((F.silu(xe @ w1[e]) * (xe @ w3[e])) @ w2[e])
    y = torch.cat(outs, 0)
    t1 = time.perf_counter()
    g = gbig[:N]
    t2 = time.perf_counter()
    y.backward(g)
    t3 = time.perf_counter()
    torch.cuda.synchronize()
    w1.grad = w3.grad = w2.grad = None
    return (t1 - t0) * 1e6, (t3 - t2) * 1e6


rows = []
for r in range(6):
    cn = [1700 + 32 * r + e for e in range(E)]  # never used above (1001-1240): all new shapes
    random.Random(r).shuffle(cn)
    cold = layer(cn)
    warm = layer(cn)
    rows.append({"counts": cn, "cold_fwd_us": cold[0], "cold_bwd_us": cold[1],
                 "warm_fwd_us": warm[0], "warm_bwd_us": warm[1]})
out["loop_layer"] = rows
for k in ("cold_fwd_us", "cold_bwd_us", "warm_fwd_us", "warm_bwd_us"):
    out["loop_" + k + "_median"] = statistics.median(r[k] for r in rows)
# does a shape stay cached after n other new shapes? (the heuristics cache's capacity in use)
f = FAM["fwd_x_w1"]
base = 20000
evict = []
for n in (100, 1000, 4000, 9000):
    m0 = base
    torch.cuda.synchronize()
    f(m0)  # first use: new
    for i in range(1, n + 1):
        f(base + i)
        if i % 500 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    busy(0.05)
    t0 = time.perf_counter(); f(m0); t1 = time.perf_counter()
    torch.cuda.synchronize()
    evict.append({"others_between": n, "again_us": (t1 - t0) * 1e6})
    base += n + 1
out["recache"] = evict
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps({k: v for k, v in out.items() if k != "loop_layer"}, indent=1))
