#!/usr/bin/env python3
"""bf16 GEMM rate, SM clock and board power when GEMM blocks alternate with other work.

Why: a GPU at its power cap runs back-to-back GEMMs at the sustained clock (the presets'
gemm_efficiency_max). In a training step the GEMMs alternate with memory-bound kernels (norms,
activations, optimizer) and with idle (pipeline bubbles, waits on collectives), which draw less
power, so the power controller can give the GEMMs a higher clock. This measures, on one GPU:

  * the power of idle (nothing queued; and a GPU-side spin kernel), of memory-bound kernels alone
    (bf16 add, fp32 copy, bf16->fp32 cast, the elementwise of a training step) and of GEMMs alone
    for several shapes (8192^3 and Llama-3.1-8B's 4096-token shapes);
  * GEMM blocks of about BLOCK ms (1, 5, 20) alternating with a filler of (a) GPU-side idle,
    (b) memory-bound kernels, (c) half of each, at several GEMM duty fractions;
  * a Llama-3.1-8B decoder layer's forward (RMSNorm, QKV, SDPA, O, add, RMSNorm, gate/up, SiLU*mul,
    down, add) with its GEMMs timed one by one, against the same GEMMs back to back.

Every GEMM and every filler stretch is timed with CUDA events; the GEMM rate is the median over
the products of the measured window (after a settle time at the same pattern), the duty is the
measured GEMM time over the window's GPU time. Power: board energy counter (NVML
nvmlDeviceGetTotalEnergyConsumption) over the window, plus instant power, SM clock, temperature
and clock-event reasons sampled every ~4 ms by a thread (NVML through ctypes). Random N(0,1)
data; each GEMM shape is checked once against fp32; memory-bound kernel bandwidth is reported.

Usage: python3 bench/gemm_power_mix.py --out DIR [--measure-s 1.5] [--settle-s 0.8] [--quick] [--kinds]
--kinds: instead, fp8 e4m3 8192^3 (torch._scaled_mm) and the SDPA forward at Llama-3.1-8B's
shape, alone and in 5 ms blocks with idle (GEMM fraction 0.75, 0.5) or memory-bound kernels (0.6),
beside the same for the bf16 4096x14336x4096 GEMM.
Writes DIR/points.jsonl (one JSON line per point) and DIR/env.json.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--measure-s", type=float, default=1.5)
ap.add_argument("--settle-s", type=float, default=0.8)
ap.add_argument("--quick", action="store_true", help="a few points only (smoke test)")
ap.add_argument("--kinds", action="store_true",
                help="only the other compute-bound kinds (fp8 GEMM, SDPA forward) and a bf16 baseline")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
OUTF = os.path.join(a.out, "points.jsonl")
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False


# ---------------------------------------------------------------- NVML through ctypes
# bench/realruns/nvml_sampler.py holds the calls (one copy); imported here, where this script
# made its NVML handle before, so NVML starts after the arguments and torch as it did.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "realruns"))
from nvml_sampler import NV, InstantSampler as Sampler  # noqa: E402


def emit(rec):
    rec["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = json.dumps(rec)
    print(line, flush=True)
    with open(OUTF, "a") as f:
        f.write(line + "\n")


# ---------------------------------------------------------------- operands
g = torch.Generator(device=dev).manual_seed(0)


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device=dev, dtype=dtype, generator=g)


SHAPES = {  # name: (M, N, K) -> C[M,N] = A[M,K] @ B[K,N]
    "8192^3": (8192, 8192, 8192),
    "mlp_up_4096x14336x4096": (4096, 14336, 4096),
    "mlp_down_4096x4096x14336": (4096, 4096, 14336),
    "attn_o_4096x4096x4096": (4096, 4096, 4096),
    "lm_head_4096x128256x4096": (4096, 128256, 4096),
}
if a.kinds:
    SHAPES = {k: v for k, v in SHAPES.items() if k == "mlp_up_4096x14336x4096"}
OPS = {}
for name, (m, n, k) in SHAPES.items():
    A, B = randn(m, k), randn(k, n)
    C = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    torch.mm(A, B, out=C)
    ref = A[:128].float() @ B.float()
    err = ((C[:128].float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2 and err == err, (name, err)
    OPS[name] = (A, B, C, 2.0 * m * n * k, err, None)
    del ref
if a.kinds:
    try:
        # fp8 e4m3 8192^3 through torch._scaled_mm (tensorwise scales, bf16 out), as Transformer
        # Engine's and torchao's tensorwise recipes call cuBLASLt
        n8 = 8192
        A32, B32 = randn(n8, n8, dtype=torch.float32), randn(n8, n8, dtype=torch.float32)
        A8 = A32.to(torch.float8_e4m3fn)
        B8 = B32.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device=dev, dtype=torch.float32)
        C8 = torch._scaled_mm(A8, B8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        ref = A8[:128].float() @ B8.float()
        err8 = ((C8[:128].float() - ref).norm() / ref.norm()).item()
        assert err8 < 1e-2 and err8 == err8, err8
        OPS["fp8_e4m3_8192^3"] = (None, None, None, 2.0 * n8 ** 3, err8,
                                  lambda: torch._scaled_mm(A8, B8, scale_a=one, scale_b=one,
                                                           out_dtype=torch.bfloat16))
        del A32, B32, ref
    except Exception as e:  # noqa: BLE001
        print("fp8 unavailable:", repr(e), flush=True)
    try:
        # SDPA forward at Llama-3.1-8B's shape (4096 tokens, 32 query / 8 kv heads, d 128, causal)
        qa = randn(1, 32, 4096, 128)
        ka, va = randn(1, 8, 4096, 128), randn(1, 8, 4096, 128)
        oa = F.scaled_dot_product_attention(qa, ka, va, is_causal=True, enable_gqa=True)
        q0, k0, v0 = qa[:, :4].double(), ka[:, :1].double(), va[:, :1].double()
        sc = (q0 @ k0.transpose(-1, -2)) / 128 ** 0.5
        sc = sc.masked_fill(torch.ones(4096, 4096, device=dev, dtype=torch.bool).triu(1), float("-inf"))
        ref = torch.softmax(sc, -1) @ v0
        erra = ((oa[:, :4].double() - ref).norm() / ref.norm()).item()
        assert erra < 1e-2 and erra == erra, erra
        OPS["sdpa_fwd_l8b_t4096"] = (None, None, None, 4.0 * 4096 * 4096 * 32 * 128 / 2, erra,
                                     lambda: F.scaled_dot_product_attention(qa, ka, va, is_causal=True,
                                                                            enable_gqa=True))
        del q0, k0, v0, sc, ref
    except Exception as e:  # noqa: BLE001
        print("sdpa unavailable:", repr(e), flush=True)

def op_fn(shape):
    A, B, C, _, _, fn = OPS[shape]
    return fn if fn is not None else (lambda: torch.mm(A, B, out=C))


# memory-bound kernels: 64M elements (bf16 128 MB, fp32 256 MB per tensor, above the 50 MB L2)
NE = 64 * 1024 * 1024
xb, yb, zb = randn(NE), randn(NE), torch.empty(NE, device=dev, dtype=torch.bfloat16)
xf, zf = randn(NE, dtype=torch.float32), torch.empty(NE, device=dev, dtype=torch.float32)
MEMK = [  # (name, fn, bytes moved)
    ("bf16_add", lambda: torch.add(xb, yb, out=zb), 3 * 2 * NE),
    ("fp32_copy", lambda: zf.copy_(xf), 2 * 4 * NE),
    ("bf16_to_fp32", lambda: zf.copy_(xb), (2 + 4) * NE),
]


def mem_kernel(i):
    MEMK[i % len(MEMK)][1]()


def ev():
    return torch.cuda.Event(enable_timing=True)


def time_one(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = ev(), ev()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


# cycles per ms of torch.cuda._sleep (clock dependent: the filler's real length is measured)
s_, e_ = ev(), ev()
s_.record(); torch.cuda._sleep(20_000_000); e_.record(); torch.cuda.synchronize()
CYC_PER_MS = 20_000_000 / s_.elapsed_time(e_)

ENV = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
       "cuda": torch.version.cuda, "nvml": NV.ok,
       "power_limit_w": NV.limit_w() if NV.ok else None,
       "max_sm_clock_mhz": NV.max_sm_clock() if NV.ok else None,
       "mem_clock_mhz": NV.mem_clock() if NV.ok else None,
       "sleep_cycles_per_ms": CYC_PER_MS,
       "gemm_check_rel_err": {k: v[4] for k, v in OPS.items()},
       "mem_kernels_ms": {n: time_one(f) for n, f, _ in MEMK},
       "gemm_ms_cold": {k: time_one(op_fn(k), 5) for k in OPS},
       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
ENV["mem_kernels_gbps"] = {n: round(b / (ENV["mem_kernels_ms"][n] * 1e-3) / 1e9, 1)
                           for n, _, b in MEMK}
with open(os.path.join(a.out, "env.json"), "w") as f:
    json.dump(ENV, f, indent=1)
print(json.dumps(ENV), flush=True)
MEM_MS = statistics.fmean(ENV["mem_kernels_ms"].values())


def run_pattern(label, shape, k, filler_ms, filler, extra=None):
    """k products of `shape` then a filler of about filler_ms, repeated: settle, then measure."""
    flops = OPS[shape][3]
    op = op_fn(shape)
    nmem = max(1, round(filler_ms / MEM_MS)) if filler_ms > 0 else 0

    def fill(rec):
        if filler_ms <= 0:
            return
        if filler == "idle":
            torch.cuda._sleep(int(filler_ms * CYC_PER_MS))
        elif filler == "mem":
            for i in range(nmem):
                mem_kernel(i)
        elif filler == "mix":  # half memory-bound kernels, half idle
            for i in range(max(1, nmem // 2)):
                mem_kernel(i)
            torch.cuda._sleep(int(0.5 * filler_ms * CYC_PER_MS))

    def block(record):
        if record:
            b0 = ev(); b0.record()
            gs = []
            for _ in range(k):
                s, e = ev(), ev()
                s.record(); op(); e.record()
                gs.append((s, e))
            fill(True)
            return b0, gs
        for _ in range(k):
            op()
        fill(False)
        return None

    t_end = time.time() + a.settle_s
    n = 0
    while time.time() < t_end:
        block(False)
        n += 1
        if n % 64 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    blocks = []
    with Sampler() as smp:
        w0 = ev(); w0.record()
        t_end = time.time() + a.measure_s
        while time.time() < t_end:
            blocks.append(block(True))
        w1 = ev(); w1.record()
        torch.cuda.synchronize()
    times = [s.elapsed_time(e) for _, gs in blocks for s, e in gs]
    window_ms = w0.elapsed_time(w1)
    gemm_ms = sum(times)
    med = statistics.median(times)
    rec = {"kind": "pattern", "label": label, "shape": shape, "products_per_block": k,
           "filler": filler, "filler_ms_asked": round(filler_ms, 3), "mem_kernels": nmem,
           "block_gemm_ms": round(k * med, 3),
           "duty_measured": round(gemm_ms / window_ms, 4), "window_ms": round(window_ms, 1),
           "products": len(times), "gemm_ms_median": round(med, 4),
           "tflops_median": round(flops / (med * 1e-3) / 1e12, 1),
           "tflops_p10": round(flops / (sorted(times)[int(0.9 * (len(times) - 1))] * 1e-3) / 1e12, 1),
           "tflops_p90": round(flops / (sorted(times)[int(0.1 * (len(times) - 1))] * 1e-3) / 1e12, 1)}
    # rate of the first vs last product of a block (the controller reacting inside a block)
    if k >= 4:
        first = statistics.median([gs[0][0].elapsed_time(gs[0][1]) for _, gs in blocks])
        last = statistics.median([gs[-1][0].elapsed_time(gs[-1][1]) for _, gs in blocks])
        rec["tflops_first_in_block"] = round(flops / (first * 1e-3) / 1e12, 1)
        rec["tflops_last_in_block"] = round(flops / (last * 1e-3) / 1e12, 1)
    rec.update(smp.summary())
    if extra:
        rec.update(extra)
    emit(rec)


def run_alone(label, fn, bytes_per_call=0, flops_per_call=0):
    """fn back to back (or nothing when fn is None): power, clock, rate."""
    t_end = time.time() + a.settle_s
    while fn is not None and time.time() < t_end:
        for _ in range(8):
            fn()
        torch.cuda.synchronize()
    if fn is None:
        time.sleep(a.settle_s)
    calls = 0
    with Sampler() as smp:
        w0 = ev(); w0.record()
        t_end = time.time() + a.measure_s
        while time.time() < t_end:
            if fn is None:
                time.sleep(0.01)
                continue
            for _ in range(8):
                fn()
            calls += 8
            if calls % 256 == 0:
                torch.cuda.synchronize()
        w1 = ev(); w1.record()
        torch.cuda.synchronize()
    ms = w0.elapsed_time(w1)
    rec = {"kind": "alone", "label": label, "calls": calls, "window_ms": round(ms, 1)}
    if calls and bytes_per_call:
        rec["gbps"] = round(calls * bytes_per_call / (ms * 1e-3) / 1e9, 1)
    if calls and flops_per_call:
        rec["tflops_mean"] = round(calls * flops_per_call / (ms * 1e-3) / 1e12, 1)
    rec.update(smp.summary())
    emit(rec)


def gemm_fn(shape):
    return op_fn(shape)


def k_for(shape, block_ms):
    ms = ENV["gemm_ms_cold"][shape]
    return max(1, round(block_ms / ms))


# ---------------------------------------------------------------- Llama-3.1-8B layer forward
H, HID, NH, NKV, HD, T = 4096, 14336, 32, 8, 128, 4096
Wq, Wkv, Wo = randn(H, H) * 0.02, randn(H, 2 * NKV * HD) * 0.02, randn(H, H) * 0.02
Wgu, Wd = randn(H, 2 * HID) * 0.02, randn(HID, H) * 0.02
xl = randn(T, H)
nw = torch.ones(H, device=dev, dtype=torch.bfloat16)


def layer_forward(gemm_events=None):
    def mm(x, w):
        if gemm_events is None:
            return x @ w
        s, e = ev(), ev()
        s.record(); y = x @ w; e.record()
        gemm_events.append((s, e, 2.0 * x.shape[0] * x.shape[1] * w.shape[1]))
        return y
    h = F.rms_norm(xl, (H,), nw)
    q = mm(h, Wq).view(1, T, NH, HD).transpose(1, 2)
    kv = mm(h, Wkv).view(1, T, 2, NKV, HD)
    k_, v_ = kv[:, :, 0].transpose(1, 2), kv[:, :, 1].transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k_, v_, is_causal=True, enable_gqa=True)
    o = o.transpose(1, 2).reshape(T, H)
    x2 = xl + mm(o, Wo)
    h2 = F.rms_norm(x2, (H,), nw)
    gu = mm(h2, Wgu)
    act = F.silu(gu[:, :HID]) * gu[:, HID:]
    return x2 + mm(act, Wd)


def run_layer(label, idle_frac=0.0):
    """Layer forwards back to back (optionally with GPU idle of idle_frac of the time between)."""
    lay_ms = time_one(layer_forward, 5)
    idle_ms = lay_ms * idle_frac / max(1e-9, 1 - idle_frac)
    t_end = time.time() + a.settle_s
    while time.time() < t_end:
        layer_forward()
        if idle_ms > 0:
            torch.cuda._sleep(int(idle_ms * CYC_PER_MS))
        torch.cuda.synchronize()
    evs = []
    with Sampler() as smp:
        w0 = ev(); w0.record()
        t_end = time.time() + a.measure_s
        n = 0
        while time.time() < t_end:
            layer_forward(evs)
            if idle_ms > 0:
                torch.cuda._sleep(int(idle_ms * CYC_PER_MS))
            n += 1
            if n % 16 == 0:
                torch.cuda.synchronize()
        w1 = ev(); w1.record()
        torch.cuda.synchronize()
    win = w0.elapsed_time(w1)
    gemm_ms = sum(s.elapsed_time(e) for s, e, _ in evs)
    gemm_fl = sum(f for _, _, f in evs)
    rec = {"kind": "layer", "label": label, "layers": n, "idle_frac_asked": idle_frac,
           "layer_ms": round(win / n, 3), "duty_measured": round(gemm_ms / win, 4),
           "gemm_tflops": round(gemm_fl / (gemm_ms * 1e-3) / 1e12, 1)}
    rec.update(smp.summary())
    emit(rec)
    # the same GEMMs back to back, in the layer's order (the isolated rate)
    ws = [(Wq,), (Wkv,), (Wo,), (Wgu,), (Wd,)]
    hs = [xl, xl, xl, xl, randn(T, HID)]

    def gemms():
        for (w,), x in zip(ws, hs):
            x @ w
    fl = sum(2.0 * x.shape[0] * x.shape[1] * w.shape[1] for (w,), x in zip(ws, hs))
    run_alone(label + "_gemms_back_to_back", gemms, flops_per_call=fl)


# ---------------------------------------------------------------- the plan of points
t_start = time.time()
if a.kinds:
    for shape in OPS:
        run_alone("gemm_" + shape, gemm_fn(shape), flops_per_call=OPS[shape][3])
        for f, d in (("idle", 0.75), ("idle", 0.5), ("mem", 0.6)):
            k = k_for(shape, 5)
            filler = k * ENV["gemm_ms_cold"][shape] * (1 - d) / d
            try:
                run_pattern("%s_5ms_%s_d%.2f" % (shape, f, d), shape, k, filler, f,
                            {"block_ms_asked": 5, "duty_asked": d})
            except Exception as e:  # noqa: BLE001
                emit({"kind": "error", "label": "%s_%s" % (shape, f), "error": repr(e)})
    emit({"kind": "done", "seconds": round(time.time() - t_start, 1)})
    raise SystemExit(0)
run_alone("nothing_queued", None)
run_alone("idle_spin_kernel", lambda: torch.cuda._sleep(int(2.0 * CYC_PER_MS)))
for i, (n_, f_, b_) in enumerate(MEMK):
    run_alone("mem_" + n_, f_, bytes_per_call=b_)
run_alone("mem_mixed3", lambda: [mem_kernel(j) for j in range(3)],
          bytes_per_call=sum(b for _, _, b in MEMK))
for shape in (["mlp_up_4096x14336x4096"] if a.quick else SHAPES):
    run_alone("gemm_" + shape, gemm_fn(shape), flops_per_call=OPS[shape][3])

SWEEP = []
if a.quick:
    SWEEP = [("mlp_up_4096x14336x4096", 5, f, d) for f in ("idle", "mem") for d in (0.6,)]
else:
    for blk in (1, 5, 20):
        for f in ("idle", "mem"):
            for d in (0.8, 0.6, 0.4):
                SWEEP.append(("mlp_up_4096x14336x4096", blk, f, d))
    for d in (0.8, 0.6, 0.4):
        SWEEP.append(("mlp_up_4096x14336x4096", 5, "mix", d))
    for blk in (5, 20):
        for f in ("idle", "mem"):
            for d in (0.85, 0.7, 0.5, 0.3):
                SWEEP.append(("8192^3", blk, f, d))
    for blk in (1,):
        for f in ("idle", "mem"):
            for d in (0.8, 0.5):
                SWEEP.append(("attn_o_4096x4096x4096", blk, f, d))
for shape, blk, f, d in SWEEP:
    k = k_for(shape, blk)
    gms = k * ENV["gemm_ms_cold"][shape]
    filler = gms * (1 - d) / d
    try:
        run_pattern("%s_%gms_%s_d%.2f" % (shape, blk, f, d), shape, k, filler, f,
                    {"block_ms_asked": blk, "duty_asked": d})
    except Exception as e:  # noqa: BLE001
        emit({"kind": "error", "label": "%s_%s_%s" % (shape, blk, f), "error": repr(e)})

try:
    run_layer("llama8b_layer_fwd_t4096")
    if not a.quick:
        run_layer("llama8b_layer_fwd_t4096_idle30", idle_frac=0.3)
except Exception as e:  # noqa: BLE001
    emit({"kind": "error", "label": "layer", "error": repr(e)})
# drift check: the first GEMM point again
run_alone("gemm_mlp_up_4096x14336x4096_again", gemm_fn("mlp_up_4096x14336x4096"),
          flops_per_call=OPS["mlp_up_4096x14336x4096"][3])
emit({"kind": "done", "seconds": round(time.time() - t_start, 1)})
