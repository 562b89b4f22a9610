#!/usr/bin/env python3
"""torchao's float8 casts under torch.compile, timed on one GPU (issue 16 / 19).

torchtitan (b5bcd76) trains float8 only with torchao's rowwise recipes (components/quantization/
float8.py: recipe_name "rowwise" (default) or "rowwise_with_gw_hp"); torchao's ROWWISE
(torchao/float8/config.py from_recipe_name at 36027d8) scales input, weight and output gradient
axiswise for all three GEMMs, with power-of-2 scales. Each GEMM needs its operands K-major and
scaled along K, so a tensor is quantized once per GEMM that reads it, along that GEMM's K:
  fprop  X (M x K) along K, W (N x K) along K               -> rows of the stored tensor
  dgrad  dY (M x N) along N; W^T (K x N) along N            -> rows of dY; columns of W
  wgrad  dY^T (N x M) along M; X^T (K x M) along M          -> columns of dY and X
A scaling along the stored rows reads the bf16 tensor and writes e4m3 (+ one fp32 scale a row):
2 + 1 bytes an element if the amax and the cast fuse into one pass. Along the columns the output
is the transposed tensor. Tensorwise (one amax over the whole tensor, then the cast) is timed too.

This times those casts as torch.compile'd functions written as torchao's hp_tensor_to_float8_
dynamic computes them (amax, 448/amax, floor to a power of 2, scale, clamp, cast), on random
bf16 tensors at Llama-3 8B / 70B per-GPU shapes, CUDA events, 5 warm-ups, median of --reps, and
reports the achieved bytes/s against the bytes the cost model counts. Checks: each cast against
an eager float64 reference (dequantized error within e4m3's 2^-4 relative step).

Usage: python3 bench/fp8_rowwise_quant.py [--reps 20] --out quant.json
"""
import argparse
import json
import statistics

import torch

p = argparse.ArgumentParser()
p.add_argument("--reps", type=int, default=20)
p.add_argument("--out", default="")
args = p.parse_args()
E4M3 = torch.float8_e4m3fn
MAX = torch.finfo(E4M3).max


def scale_of(amax):
    s = MAX / amax.float().clamp(min=1e-12)
    return torch.exp2(torch.floor(torch.log2(s)))  # round_scales_to_power_of_2


def rows(x):  # along the last (contiguous) dim: [R, C] -> fp8 [R, C], scale [R, 1]
    s = scale_of(x.abs().amax(dim=-1, keepdim=True))
    return (x.float() * s).clamp(-MAX, MAX).to(E4M3), s


def cols_t(x):  # along dim 0, written transposed and contiguous: [R, C] -> fp8 [C, R], scale [C, 1]
    s = scale_of(x.abs().amax(dim=0, keepdim=True))
    return (x.float() * s).clamp(-MAX, MAX).to(E4M3).t().contiguous(), s.t()


def tensorwise(x):  # one amax over the tensor: [R, C] -> fp8 [R, C], scalar scale
    s = scale_of(x.abs().amax())
    return (x.float() * s).clamp(-MAX, MAX).to(E4M3), s


FNS = {"rows": torch.compile(rows), "cols_t": torch.compile(cols_t),
       "tensorwise": torch.compile(tensorwise)}
REF = {"rows": rows, "cols_t": cols_t, "tensorwise": tensorwise}
# (name, R, C): activations M x K (M = mbs x seq tokens), weights N x K, gradients M x N
SHAPES = [("8b.x", 16384, 4096), ("8b.w_up", 14336, 4096), ("8b.dy_up", 16384, 14336),
          ("70b.x_tp8", 16384, 8192), ("70b.w_up_tp8", 3584, 8192), ("8b.w_qkv", 6144, 4096)]
dev = torch.device("cuda")
res = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "cuda": torch.version.cuda,
       "reps": args.reps, "rows": []}
for name, R, C in SHAPES:
    g = torch.Generator(device=dev).manual_seed(R * 7 + C)
    x = torch.randn(R, C, device=dev, generator=g, dtype=torch.float32).mul_(3).to(torch.bfloat16)
    for kind, fn in FNS.items():
        for _ in range(5):
            fn(x)
        torch.cuda.synchronize()
        ts = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(x)
            b.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(b) / 1e3)
        q, s = fn(x)
        rq, rs = REF[kind](x)
        deq = q.float() / s if kind != "cols_t" else (q.float() / s)
        ref = x.float() if kind != "cols_t" else x.float().t()
        rel = ((deq - ref).abs() / ref.abs().clamp(min=1e-3)).median().item()
        same = bool(torch.equal(q.view(torch.uint8), rq.view(torch.uint8)))
        t = statistics.median(ts)
        row = {"shape": name, "rows": R, "cols": C, "kind": kind, "s_median": t, "s_min": min(ts),
               "bytes_3_per_elem_rate": 3.0 * R * C / t, "median_rel_err": rel,
               "equal_to_eager": same, "ok": rel < 2 ** -4}
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
if args.out:
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)


# ---- one Linear, forward + backward: bf16 against torchao's rowwise recipe as written above ----
class RowwiseLinear(torch.autograd.Function):
    """y = x W^T with every GEMM in e4m3, operands scaled along that GEMM's K (torchao ROWWISE);
    the bf16 x and W saved for the backward (torchao's Float8Linear saves high precision)."""

    @staticmethod
    def forward(ctx, x, w):
        xq, xs = FNS["rows"](x)
        wq, ws = FNS["rows"](w)
        ctx.save_for_backward(x, w)
        return torch._scaled_mm(xq, wq.t(), scale_a=1 / xs, scale_b=(1 / ws).t(),
                                out_dtype=torch.bfloat16)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        dyq, dys = FNS["rows"](dy)            # dgrad: dY along N
        wtq, wts = FNS["cols_t"](w)           # W^T [K, N] along N
        dx = torch._scaled_mm(dyq, wtq.t(), scale_a=1 / dys, scale_b=(1 / wts).t(),
                              out_dtype=torch.bfloat16)
        dytq, dyts = FNS["cols_t"](dy)        # wgrad: dY^T [N, M] along M
        xtq, xts = FNS["cols_t"](x)           # X^T [K, M] along M
        dw = torch._scaled_mm(dytq, xtq.t(), scale_a=1 / dyts, scale_b=(1 / xts).t(),
                              out_dtype=torch.bfloat16)
        return dx, dw


def time_fb(f, x, w, dy):
    for _ in range(5):
        x.grad = w.grad = None
        f(x, w).backward(dy)
    torch.cuda.synchronize()
    ts = []
    for _ in range(args.reps):
        x.grad = w.grad = None
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f(x, w).backward(dy)
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return statistics.median(ts)


res["linear"] = []
for name, M, K, N in (("8b.mlp_up", 16384, 4096, 14336), ("8b.attn_o", 16384, 4096, 4096),
                      ("70b.mlp_up_tp8", 16384, 8192, 3584)):
    g = torch.Generator(device=dev).manual_seed(M + K + N)
    x = torch.randn(M, K, device=dev, generator=g).to(torch.bfloat16).requires_grad_(True)
    w = (torch.randn(N, K, device=dev, generator=g) * K ** -0.5).to(torch.bfloat16).requires_grad_(True)
    dy = torch.randn(M, N, device=dev, generator=g).to(torch.bfloat16)
    t_bf16 = time_fb(lambda a, b: torch.nn.functional.linear(a, b), x, w, dy)
    x.grad = w.grad = None
    torch.nn.functional.linear(x, w).backward(dy)
    ref_dx, ref_dw = x.grad.float(), w.grad.float()
    t_row = time_fb(RowwiseLinear.apply, x, w, dy)
    x.grad = w.grad = None
    RowwiseLinear.apply(x, w).backward(dy)
    err_dx = ((x.grad.float() - ref_dx).norm() / ref_dx.norm()).item()
    err_dw = ((w.grad.float() - ref_dw).norm() / ref_dw.norm()).item()
    row = {"linear": name, "M": M, "K": K, "N": N, "bf16_fwd_bwd_s": t_bf16,
           "rowwise_fwd_bwd_s": t_row, "speedup": t_bf16 / t_row,
           "rel_err_dx": err_dx, "rel_err_dw": err_dw, "ok": err_dx < 0.1 and err_dw < 0.1}
    res["linear"].append(row)
    print(json.dumps(row), flush=True)
if args.out:
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
