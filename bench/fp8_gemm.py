"""FP8 GEMM efficiency by shape and the FP8 cast/amax/transpose kernels' bandwidth, on one GPU.

Why: costmodel/precision.c prices a low-precision step as (a) the linear layers' GEMMs at the
FP8 rate achieved at the plan's shapes, and (b) the quantize kernels each recipe adds (amax
reduction, scale+cast, transpose for the wgrad/dgrad operand). Both numbers come from here.

What it times (CUDA events around back-to-back launches, median of repeats; random never-zero
data, as bench/torch_gemm.py and backend/bk_gemm.c do):
  * bf16 torch.matmul  y = x W^T                       (the reference rate)
  * fp8 e4m3 torch._scaled_mm, bf16 output:
      tensorwise  one fp32 scale per operand           (torchao/torchtitan float8 "tensorwise",
                                                        Transformer Engine delayed scaling)
      rowwise     one fp32 scale per row of A / column of B  (torchao "rowwise")
      blockwise   1x128 activations x 128x128 weights  (DeepSeek-V3 recipe), where the build
                                                        supports it; the error is recorded if not
  * elementwise: amax |x| (tensor), amax per row, scale+cast bf16->e4m3, transpose of an e4m3
    tensor (.t().contiguous()), 1x128 block quantize (amax per block, scale, cast), all in eager
    PyTorch (what torchao runs uncompiled; compiled/fused kernels are at most this much work).
Each FP8 product is checked against the bf16 product of the dequantized inputs (relative
Frobenius error; e4m3 has a 3-bit mantissa, so ~2-3% is expected, we flag > 8%).

Shapes: the per-GPU GEMMs of Llama-3 8B (h 4096, ffn 14336, 32 heads, 8 KV groups) and 70B
(h 8192, ffn 28672, 64 heads, 8 KV) at TP 1/2/4/8, tokens per micro-batch 4096 and 8192,
fprop form (m=tokens, n=out/tp, k=in) and wgrad form (m=out/tp, n=in, k=tokens).

Usage (on the GPU): python3 bench/fp8_gemm.py [--quick] [--graph] [--gemms-only] > out.tsv
Output: TSV with a header line per table, comment lines (#) with device, torch, CUDA versions.
"""
import argparse
import datetime
import statistics
import sys

import torch

p = argparse.ArgumentParser()
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--min-repeat-s", type=float, default=2e-3)
p.add_argument("--quick", action="store_true", help="fewer shapes")
p.add_argument("--graph", action="store_true",
               help="time GEMMs as CUDA-graph replays of 20 back-to-back calls: no CPU launch cost "
                    "(eager timing of a short GEMM can be the Python call's, not the GPU's)")
p.add_argument("--gemms-only", action="store_true", help="skip the quantize-kernel table")
args = p.parse_args()

dev = torch.device("cuda", 0)
E4M3 = torch.float8_e4m3fn
E4M3_MAX = torch.finfo(E4M3).max
print(f"# date {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
print(f"# device {torch.cuda.get_device_name(0)} sm {torch.cuda.get_device_capability(0)}")
print(f"# torch {torch.__version__} cuda {torch.version.cuda} cublas-lt via _scaled_mm")
print(f"# command python3 bench/fp8_gemm.py {' '.join(sys.argv[1:])}")
sys.stdout.flush()


def timed(fn):
    """Median seconds per call of fn over args.repeats repeats of back-to-back launches."""
    for _ in range(3):
        fn()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(3):
        fn()
    e1.record()
    torch.cuda.synchronize()
    one = max(e0.elapsed_time(e1) / 3e3, 1e-7)
    iters = max(1, min(200, int(args.min_repeat_s / one + 0.999)))
    times = []
    for _ in range(args.repeats):
        e0.record()
        for _ in range(iters):
            fn()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / iters)
    return statistics.median(times)


def timed_graph(fn, per_graph=20):
    """Median seconds per call of fn, from replays of a CUDA graph of per_graph calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per_graph):
            fn()
    return timed(g.replay) / per_graph


def timed_gemm(fn):
    return timed_graph(fn) if args.graph else timed(fn)


def rnd(*s):
    t = torch.empty(*s, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    return torch.where(t.abs() < 1 / 32, torch.full_like(t, 1 / 32), t)


def quant_tensor(x):
    amax = x.abs().amax().float()
    scale = E4M3_MAX / amax
    return (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3), (1.0 / scale).reshape(())


def quant_rows(x):
    """one scale per row of x (m, k)"""
    amax = x.abs().amax(dim=1, keepdim=True).float()
    scale = E4M3_MAX / amax
    return (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3), (1.0 / scale)


def quant_blocks(x, br, bc):
    """one scale per br x bc block of x (m, k); returns e4m3 data and (m/br, k/bc) inverse scales"""
    m, k = x.shape
    xb = x.float().reshape(m // br, br, k // bc, bc)
    amax = xb.abs().amax(dim=(1, 3), keepdim=True)
    scale = E4M3_MAX / amax
    q = (xb * scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3).reshape(m, k)
    return q, (1.0 / scale).reshape(m // br, k // bc)


def model_shapes(quick):
    out = []
    models = [("8b", 4096, 14336, 32, 8, 128), ("70b", 8192, 28672, 64, 8, 128)]
    for mname, h, ffn, heads, kv, hd in models:
        for tp in ((1, 8) if quick else (1, 2, 4, 8)):
            qkv = (heads + 2 * kv) * hd // tp
            for tokens in ((8192,) if quick else (4096, 8192)):
                for name, n, k in (("qkv", qkv, h), ("proj", h, h // tp),
                                   ("mlp_up", 2 * ffn // tp, h), ("mlp_down", h, ffn // tp)):
                    out.append((f"{mname}.tp{tp}.{name}.fprop", tokens, n, k))
                    if tokens == 8192:
                        out.append((f"{mname}.tp{tp}.{name}.wgrad", n, k, tokens))
    return out


shapes = [("square8192", 8192, 8192, 8192), ("square4096", 4096, 4096, 4096)] + \
    model_shapes(args.quick)

# -- quantize kernels --------------------------------------------------------------------------
print("table\tkernel\tshape\trows\tcols\ttime_s\tbytes_moved\tgb_per_s")
kernel_shapes = () if args.gemms_only else ((8192, 4096), (8192, 8192), (8192, 28672), (28672, 8192))
for rows, cols in kernel_shapes:
    x = rnd(rows, cols)
    xq, xs = quant_tensor(x)
    sc = torch.tensor(E4M3_MAX / 1.0, device=dev)
    nel = rows * cols
    kernels = [
        ("amax_tensor", lambda: x.abs().amax(), 2 * nel),
        ("amax_rows", lambda: x.abs().amax(dim=1), 2 * nel),
        ("cast_scaled_e4m3", lambda: (x * sc).to(E4M3), 3 * nel),
        ("quant_tensor_full", lambda: quant_tensor(x), 3 * nel),
        ("transpose_e4m3", lambda: xq.t().contiguous(), 2 * nel),
        ("transpose_bf16", lambda: x.t().contiguous(), 4 * nel),
        ("quant_block_1x128", lambda: quant_blocks(x, 1, 128), 3 * nel),
        ("copy_bf16", lambda: x.clone(), 4 * nel),
    ]
    for kname, fn, nbytes in kernels:
        t = timed(fn)
        print(f"kernel\t{kname}\t{rows}x{cols}\t{rows}\t{cols}\t{t:.6e}\t{nbytes}\t{nbytes / t / 1e9:.0f}")
    sys.stdout.flush()
    del x, xq
    torch.cuda.empty_cache()
# -- GEMMs -----------------------------------------------------------------------------------
print("table\tgemm\tshape\tm\tn\tk\tbf16_s\tbf16_tflops\tfp8_tensorwise_s\tfp8_tensorwise_tflops"
      "\tfp8_rowwise_s\tfp8_rowwise_tflops\tfp8_blockwise_s\tfp8_blockwise_tflops"
      "\ttensorwise_over_bf16\trowwise_over_bf16\tblockwise_over_bf16\trel_err_tensorwise"
      "\trel_err_rowwise\trel_err_blockwise")
block_error = None
for name, m, n, k in shapes:
    flops = 2.0 * m * n * k
    x, w = rnd(m, k), rnd(n, k)
    out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    t_bf16 = timed_gemm(lambda: torch.matmul(x, w.t(), out=out))
    ref = (x.float() @ w.float().t())
    refn = ref.norm()
    res = {}
    # tensorwise
    xq, xs = quant_tensor(x)
    wq, ws = quant_tensor(w)
    bq = wq.t()  # column-major (k, n) view as cuBLASLt's TN FP8 layout wants
    try:
        f = lambda: torch._scaled_mm(xq, bq, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
        y = f()
        res["tensorwise"] = (timed_gemm(f), ((y.float() - ref).norm() / refn).item())
    except Exception as e:  # noqa: BLE001
        res["tensorwise"] = (float("nan"), float("nan"))
        print(f"# tensorwise {name}: {type(e).__name__}: {str(e)[:200]}")
    # rowwise
    try:
        xq, xs = quant_rows(x)
        wq, ws = quant_rows(w)
        f = lambda: torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws.t(),
                                     out_dtype=torch.bfloat16)
        y = f()
        res["rowwise"] = (timed_gemm(f), ((y.float() - ref).norm() / refn).item())
    except Exception as e:  # noqa: BLE001
        res["rowwise"] = (float("nan"), float("nan"))
        print(f"# rowwise {name}: {type(e).__name__}: {str(e)[:200]}")
    # blockwise 1x128 (activations) x 128x128 (weights), DeepSeek-V3
    res["blockwise"] = (float("nan"), float("nan"))
    if block_error is None and k % 128 == 0 and n % 128 == 0:
        try:
            xq, xs = quant_blocks(x, 1, 128)          # (m, k/128)
            wq, ws = quant_blocks(w, 128, 128)        # (n/128, k/128)
            # cuBLASLt wants the 1x128 scales outer-dim-major: (m, k/128) with stride (1, m)
            xs_t = xs.t().contiguous().t()
            last = None
            for sb in (ws.t(), ws.t().contiguous(), ws.contiguous().t().contiguous().t()):
                try:
                    f = lambda: torch._scaled_mm(xq, wq.t(), scale_a=xs_t, scale_b=sb,
                                                 out_dtype=torch.bfloat16)
                    y = f()
                    break
                except Exception as e:  # noqa: BLE001
                    last, f = e, None
            if f is None:
                raise last
            res["blockwise"] = (timed_gemm(f), ((y.float() - ref).norm() / refn).item())
        except Exception as e:  # noqa: BLE001
            block_error = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"# blockwise not available in this build: {block_error}")
    row = [name, m, n, k, f"{t_bf16:.6e}", f"{flops / t_bf16 / 1e12:.1f}"]
    for r in ("tensorwise", "rowwise", "blockwise"):
        t = res[r][0]
        row += [f"{t:.6e}", f"{flops / t / 1e12:.1f}"]
    for r in ("tensorwise", "rowwise", "blockwise"):
        row.append(f"{t_bf16 / res[r][0]:.3f}")
    for r in ("tensorwise", "rowwise", "blockwise"):
        row.append(f"{res[r][1]:.4f}")
    print("gemm\t" + "\t".join(str(v) for v in row))
    sys.stdout.flush()
    del x, w, out, ref
    torch.cuda.empty_cache()

print("# done")
