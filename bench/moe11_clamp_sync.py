#!/usr/bin/env python3
"""
moe11_clamp_sync.py - what Megatron-Core runs around GPT-OSS's clamped GLU experts activation
(issue 20), measured with plain torch on one GPU (no Transformer Engine needed):

  A. whether torch.tensor(python_scalar, device="cuda") waits for the GPU. Megatron-LM d98e8a6
     megatron/core/fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl builds
     `linear_offset = torch.tensor(linear_offset, dtype=input.dtype, device=input.device)` on
     every call (GPT-OSS: glu_linear_offset 1.0). The host is timed around that call with
     ~50 ms of GPU work queued before it (torch.cuda._sleep); a call that returns after ~0.05 ms
     does not wait, one that returns after ~50 ms does. Reference points: a fill_ (no wait) and
     .tolist() of a device tensor (a device-to-host copy: waits).
  B. the clamp path's kernels at the published H100 row's shape (16 local experts x 1024 rows
     = 16384 routed rows per GPU, expert FFN 2880: fc1's output [16384, 5760] bf16): the same
     function, clamp(max=7) of the gate half, clamp(-7, 7) of the linear half, torch.cat
     (fused_bias_geglu.py 424-431), forward and its autograd backward (clamp_backward's where
     kernels, the chunk's backward cat), CUDA events, median of 20 after 5 warm-ups, on
     random data; the whole forward + backward checked against a float64 reference.
     Also the activation the project already prices as Transformer Engine's fused lump: a
     torch.compile'd weighted quick-GEGLU (Megatron's jit_fuser is torch.compile, jit.py) and
     its backward, to compare per byte.
  C. a device copy (the streaming ceiling) and one eager elementwise op at the same size.

Writes $OUT/moe11_clamp_sync.json (or ./moe11_clamp_sync.json) and prints a table.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

OUT = os.environ.get("OUT", ".")
dev = torch.device("cuda")
res = {"argv": sys.argv, "torch": torch.__version__, "cuda": torch.version.cuda,
       "gpu": torch.cuda.get_device_name(0), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                         time.gmtime())}
try:
    res["nvidia_smi"] = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version,power.limit,clocks.max.sm",
         "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
except Exception as e:  # noqa: BLE001
    res["nvidia_smi"] = "failed: %s" % e


def cycles_for_ms(ms):
    """torch.cuda._sleep cycles for about ms milliseconds (calibrated once)."""
    n = 10_000_000
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(n)  # warm
    torch.cuda.synchronize()
    s.record()
    torch.cuda._sleep(n)
    e.record()
    torch.cuda.synchronize()
    return int(n * ms / s.elapsed_time(e))


# ---------------- A: which calls wait for the GPU ----------------
SLEEP_MS = 50.0
cyc = cycles_for_ms(SLEEP_MS)
dtensor = torch.arange(16, device=dev)
scratch = torch.empty((), dtype=torch.bfloat16, device=dev)


def host_ms(fn, reps=7):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        torch.cuda._sleep(cyc)
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        out.append((t1 - t0) * 1e3)
    return statistics.median(out)


calls = {
    "torch.tensor(1.0, bf16, device=cuda)":
        lambda: torch.tensor(1.0, dtype=torch.bfloat16, device=dev),
    "torch.tensor(1.0, fp32, device=cuda)": lambda: torch.tensor(1.0, device=dev),
    "scratch.fill_(1.0) (no copy)": lambda: scratch.fill_(1.0),
    "device_tensor.tolist() (D2H)": lambda: dtensor.tolist(),
}
res["sync"] = {"gpu_work_queued_ms": SLEEP_MS,
               "host_ms": {k: host_ms(f) for k, f in calls.items()}}
# the host time of the call itself with nothing queued
res["sync"]["host_ms_idle_gpu"] = {}
for k, f in calls.items():
    out = []
    for _ in range(50):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        out.append((time.perf_counter() - t0) * 1e3)
    res["sync"]["host_ms_idle_gpu"][k] = statistics.median(out)


# ---------------- B: the clamp path ----------------
def time_ms(fn, warm=5, reps=20):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


LIMIT = 7.0


def clamp_cat(y):
    g, lin = y.chunk(2, -1)
    return torch.cat((g.clamp(min=None, max=LIMIT), lin.clamp(min=-LIMIT, max=LIMIT)), -1)


def act_fwd_eager(y, w, off: float):
    a, b = torch.chunk(y, 2, -1)
    return ((a * torch.sigmoid(1.702 * a)) * (b + off) * w).to(y.dtype)


act_fwd = torch.compile(act_fwd_eager)


@torch.compile
def act_bwd(g, y, w, off: float):
    a, b = torch.chunk(y, 2, -1)
    s = torch.sigmoid(1.702 * a)
    gw = g * w
    da = gw * s * (1 + 1.702 * a * (1 - s)) * (b + off)
    db = gw * a * s
    wg = ((a * s) * (b + off) * g.to(w.dtype)).sum(-1, keepdim=True)
    return torch.cat((da, db), -1).to(y.dtype), wg


shapes = [(16384, 2880), (4096, 2880), (65536, 2880)]
res["clamp_path"] = []
for n, f in shapes:
    row = {"rows": n, "ffn": f, "elements_half": n * f}
    y = (torch.randn(n, 2 * f, device=dev) * 4).to(torch.bfloat16)
    w = torch.rand(n, 1, device=dev)
    # correctness of clamp_cat + act against float64
    yr = y.detach().double()
    ref = clamp_cat(yr)
    got = clamp_cat(y).double()
    row["clamp_cat_rel_err"] = ((got - ref).norm() / ref.norm()).item()
    a_ref = act_fwd_eager(ref, w.double(), 1.0)
    a_got = act_fwd(clamp_cat(y), w, 1.0).double()
    row["act_rel_err"] = ((a_got - a_ref).norm() / a_ref.norm()).item()
    # forward of the clamp path alone
    row["clamp_fwd_ms"] = time_ms(lambda: clamp_cat(y))
    # its backward alone (autograd: clamp_backward's where kernels, the chunk's cat)
    yg = y.clone().requires_grad_(True)
    gout = torch.randn(n, 2 * f, device=dev, dtype=torch.bfloat16)

    def bwd_once():
        o = clamp_cat(yg)
        torch.autograd.grad(o, yg, gout)

    t_both = time_ms(bwd_once)
    row["clamp_bwd_ms"] = t_both - row["clamp_fwd_ms"]
    # check the gradient against float64
    ydd = yr.clone().requires_grad_(True)
    o64 = clamp_cat(ydd)
    (gref,) = torch.autograd.grad(o64, ydd, gout.double())
    (ggot,) = torch.autograd.grad(clamp_cat(yg), yg, gout)
    row["clamp_grad_rel_err"] = ((ggot.double() - gref).norm() / gref.norm()).item()
    # the compiled activation (already priced as the fused lump) for comparison
    c = clamp_cat(y)
    g1 = torch.randn(n, f, device=dev, dtype=torch.bfloat16)
    row["act_fwd_ms"] = time_ms(lambda: act_fwd(c, w, 1.0))
    row["act_bwd_ms"] = time_ms(lambda: act_bwd(g1, c, w, 1.0))
    # streaming ceiling: a copy of the [n, 2f] tensor; one eager elementwise op
    dst = torch.empty_like(y)
    row["copy_ms"] = time_ms(lambda: dst.copy_(y))
    row["copy_bytes"] = 2 * y.numel() * 2
    row["eager_add_ms"] = time_ms(lambda: torch.add(y, y, out=dst))
    row["eager_add_bytes"] = 3 * y.numel() * 2
    res["clamp_path"].append(row)
    del y, w, yg, gout, c, g1, dst
    torch.cuda.empty_cache()

# ---------------- D: cuDNN attention at GPT-OSS's head dim (full causal layers) ----------------
res["attention"] = []
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        for seq in (4096, 8192):
            q = torch.randn(1, 64, seq, 64, device=dev, dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(1, 64, seq, 64, device=dev, dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(1, 64, seq, 64, device=dev, dtype=torch.bfloat16, requires_grad=True)
            go = torch.randn(1, 64, seq, 64, device=dev, dtype=torch.bfloat16)
            with sdpa_kernel([backend]):
                fwd = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))

                def fb():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    torch.autograd.grad(o, (q, k, v), go)
                both = time_ms(fb)
            flops = 4.0 * seq * (seq + 1) / 2 * 64 * 64  # causal forward
            res["attention"].append({"backend": str(backend), "seq": seq, "heads": 64,
                                     "head_dim": 64, "fwd_ms": fwd, "bwd_ms": both - fwd,
                                     "fwd_tflops": flops / fwd / 1e9,
                                     "bwd_tflops": 2.5 * flops / (both - fwd) / 1e9})
            del q, k, v, go
except Exception as e:  # noqa: BLE001
    res["attention_error"] = repr(e)

path = os.path.join(OUT, "moe11_clamp_sync.json")
with open(path + ".tmp", "w") as fh:
    json.dump(res, fh, indent=1)
os.replace(path + ".tmp", path)

print(res["gpu"], res["nvidia_smi"], "torch", res["torch"])
print("A. host ms with %.0f ms of GPU work queued (idle GPU):" % SLEEP_MS)
for k, v in res["sync"]["host_ms"].items():
    print("  %-40s %8.3f  (%.3f)" % (k, v, res["sync"]["host_ms_idle_gpu"][k]))
print("B. clamp path (ms): rows ffn | clamp fwd | clamp bwd | act fwd | act bwd | copy GB/s | add GB/s"
      " | errs")
for r in res["clamp_path"]:
    print("  %6d %5d | %7.3f | %7.3f | %7.3f | %7.3f | %7.0f | %7.0f | %.1e %.1e" % (
        r["rows"], r["ffn"], r["clamp_fwd_ms"], r["clamp_bwd_ms"], r["act_fwd_ms"],
        r["act_bwd_ms"], r["copy_bytes"] / r["copy_ms"] / 1e6,
        r["eager_add_bytes"] / r["eager_add_ms"] / 1e6, r["clamp_cat_rel_err"],
        r["clamp_grad_rel_err"]))
for a in res["attention"]:
    print("D. %s seq %d: fwd %.3f ms (%.0f TF/s) bwd %.3f ms (%.0f TF/s)" % (
        a["backend"], a["seq"], a["fwd_ms"], a["fwd_tflops"], a["bwd_ms"], a["bwd_tflops"]))
if "attention_error" in res:
    print("D. failed:", res["attention_error"])
