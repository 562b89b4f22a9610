#!/usr/bin/env python3
"""ew_classes.py — eager elementwise rates per kernel class, from the profiled kernel lists.

Why: plan priced every eager PyTorch elementwise / copy / reduction kernel at one rate (the
average of one measured kernel mix: gpu.eager_elementwise_efficiency 0.51 in a 4-GPU FSDP2 step,
_alone 0.59 on one H200). Per PyTorch kernel template the rate runs from 0.7 to 4.5 TB/s, so a
model with another mix (Gemma's fp32 norms) is mispriced. This script groups the profiled
kernels into the classes costmodel/elementwise.c can tell apart from each kernel's ew_access
(elementwise.h: the pattern, and for the offset path the output's element size, which picks
elementwise_kernel<128, 2> or <128, 4>), and gives each class's bytes, time, rate and spread.

Inputs (bench/results): fsdp2_kernels_8b_h200x4.tsv (one real FSDP2 step of Llama-3.1-8B on
4 x H200, rank 0, seq 4096, micro-batch 1: 32 layers, 65 RMSNorms, one loss head),
patterns_fsdp2_kernels_8b_h200x4.tsv (the same step profiled again, a later run),
eager_kernels_2layers_h200.tsv (bench/eager_kernels.py --layers 2: the same eager kernels alone
on one H200, 2 layers, 5 RMSNorms, one head). Bytes are the ones elementwise.c derives for each
kernel (bench/BACKEND.md "Eager elementwise kernels": the profiled kernel <-> elementwise.c
kernel table; formulas in elementwise.c / elementwise_norm.c), computed here from the model's
dimensions. Each profiled row's time includes its few [T,1]-sized launches, as BACKEND.md's
table does; the Fill bf16 row's bytes include the embedding gradient's zeros (2 V h), which that
kernel also writes.

Usage: python3 bench/ew_classes.py [OUTDIR]   (writes OUTDIR/ew_classes.tsv and .txt)
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RES = os.path.join(HERE, "results")

# Llama-3.1-8B (config.json: hidden 4096, 32 heads of 128, 8 KV heads, FFN 14336, vocab 128256)
H, QW, KW, F, V, T = 4096, 4096, 1024, 14336, 128256, 4096
E, EQ, EK, EF, EV = T * H, T * QW, T * KW, T * F, T * V

# Per profiled kernel: a regex on its name, the class, and the elementwise.c kernels it runs as
# (bytes of one launch, launches per unit, unit: norm = one RMSNorm, layer, rope = per layer for
# q and for k (bytes given per element of q or k), head = once per step, emb = the embedding
# gradient's zeros, not in elementwise.c).
ROPE = "rope"
ROWS = [
    ("direct_copy bf16->fp32 (unrolled, LoadWithCast)",
     r"^void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda", "cast_up",
     [("rmsnorm.to_fp32", 6 * E, 1, "norm"), ("rmsnorm.bwd.to_fp32", 6 * E, 1, "norm"),
      ("loss.to_fp32", 6 * EV, 1, "head")]),
    ("bfloat16_copy fp32->bf16 (vectorized)", r"bfloat16_copy_kernel_cuda", "vectorized",
     [("rmsnorm.to_bf16", 6 * E, 1, "norm"), ("rmsnorm.bwd.to_bf16", 6 * E, 1, "norm"),
      ("loss.bwd.to_bf16", 6 * EV, 1, "head")]),
    ("pow fp32 x^2 (vectorized)",
     r"vectorized_elementwise_kernel<4, at::native::\(anonymous namespace\)::pow_tensor_scalar_kernel_impl<float, float>\(at::TensorIteratorBase&, float\)::\{lambda\(float\)#1\}",
     "vectorized", [("rmsnorm.pow", 8 * E, 1, "norm")]),
    ("reduce mean fp32 (row)", r"reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps", "reduce",
     [("rmsnorm.mean", 4 * E, 1, "norm")]),
    ("Mul fp32 broadcast (elementwise_kernel<128,2>)",
     r"^void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor",
     "offsets_fp32", [("rmsnorm.mul_rstd", 8 * E, 1, "norm"), ("rmsnorm.bwd.mul_rstd", 8 * E, 1, "norm")]),
    ("Mul fp32 (vectorized)",
     r"^void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor",
     "vectorized", [("rmsnorm.bwd.mul_x_fp32", 12 * E, 1, "norm"), ("rmsnorm.bwd.mul_grad", 12 * E, 1, "norm")]),
    ("reduce sum fp32 -> [T,1] (row)", r"reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor", "reduce",
     [("rmsnorm.bwd.sum_rstd", 4 * E, 1, "norm")]),
    ("BUnary Mul fp32, expand / h (<128,2>)",
     r"^void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor",
     "offsets_fp32", [("rmsnorm.bwd.mean", 4 * E, 1, "norm")]),
    ("Memcpy DtoD x.pow(1) (vectorized)", r"^Memcpy DtoD", "vectorized",
     [("rmsnorm.bwd.pow1_copy", 8 * E, 1, "norm")]),
    ("AUnary Mul fp32 2x (vectorized)", r"vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor", "vectorized",
     [("rmsnorm.bwd.mul_2", 8 * E, 1, "norm")]),
    ("add fp32 (vectorized)", r"vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>", "vectorized",
     [("rmsnorm.bwd.add_fp32", 12 * E, 1, "norm")]),
    ("Mul bf16 broadcast / strided (elementwise_kernel<128,4>)",
     r"^void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor",
     "offsets_bf16", [("rmsnorm.mul_weight", 4 * E, 1, "norm"), ("rmsnorm.bwd.mul_weight", 4 * E, 1, "norm"),
                      ("rope.mul", 4, 2, ROPE), ("rope.bwd.mul", 4, 2, ROPE)]),
    ("Mul bf16 (vectorized)",
     r"^void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor",
     "vectorized", [("mlp.mul", 6 * EF, 1, "layer"), ("mlp.bwd.mul", 6 * EF, 2, "layer"),
                    ("rmsnorm.bwd.mul_x", 6 * E, 1, "norm")]),
    ("reduce sum bf16 -> [h] (column)", r"reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor", "reduce",
     [("rmsnorm.bwd.sum_weight", 2 * E, 1, "norm")]),
    ("add bf16 (vectorized)", r"vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>", "vectorized",
     [("residual.add", 6 * E, 2, "layer"), ("grad.add", 6 * E, 5, "layer"), ("rope.bwd.add", 6, 1, ROPE)]),
    ("add bf16 mixed layouts (<128,4>)", r"^void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16>", "offsets_bf16",
     [("rope.add", 6, 1, ROPE), ("rope.bwd.add_mixed", 6, 1, ROPE)]),
    ("direct_copy bf16 strided (<128,4>)", r"^void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda", "offsets_bf16",
     [("rope.bwd.slice_copy", 2, 2, ROPE), ("rope.bwd.view_copy", 4, 1, ROPE)]),
    ("neg bf16 strided (<128,4>)", r"^void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::neg_kernel_cuda", "offsets_bf16",
     [("rope.neg", 2, 1, ROPE), ("rope.bwd.neg", 2, 1, ROPE)]),
    ("CatArrayBatchedCopy", r"CatArrayBatchedCopy<at::native::\(anonymous namespace\)::OpaqueType<2u>, unsigned int, 4, 64, 64>", "cat",
     [("rope.cat", 4, 1, ROPE)]),
    ("silu (vectorized)", r"vectorized_elementwise_kernel<8, at::native::\(anonymous namespace\)::silu_kernel", "vectorized",
     [("mlp.act", 4 * EF, 1, "layer")]),
    ("silu_backward (vectorized)", r"vectorized_elementwise_kernel<8, at::native::\(anonymous namespace\)::silu_backward_kernel", "vectorized",
     [("mlp.bwd.act", 6 * EF, 1, "layer")]),
    ("Fill bf16 (vectorized)", r"vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>", "vectorized",
     [("rope.bwd.zeros", 2, 2, ROPE), ("embedding grad zeros (not in elementwise.c)", 2 * V * H, 1, "emb")]),
    ("cunn_SoftMaxForward", r"cunn_SoftMaxForward<4, float, float, float, at::native::\(anonymous namespace\)::LogSoftMaxForwardEpilogue>", "softmax_fwd",
     [("loss.log_softmax", 8 * EV, 1, "head")]),
    ("cunn_SoftMaxBackward", r"cunn_SoftMaxBackward<4, float, float, float, at::native::\(anonymous namespace\)::LogSoftMaxBackwardEpilogue>", "softmax_bwd",
     [("loss.bwd.log_softmax", 12 * EV, 1, "head")]),
    ("Fill fp32 (vectorized)", r"vectorized_elementwise_kernel<4, at::native::FillFunctor<float>", "vectorized",
     [("loss.bwd.zeros", 4 * EV, 1, "head")]),
]

CLASSES = ["vectorized", "cast_up", "offsets_fp32", "offsets_bf16", "cat", "reduce",
           "softmax_fwd", "softmax_bwd"]
CLASS_DOC = {
    "vectorized": "EW_VECTORIZED: contiguous, same dtype or fp32->bf16 cast, fills, copies",
    "cast_up": "EW_UNROLLED: contiguous bf16->fp32 cast (LoadWithCast)",
    "offsets_fp32": "EW_OFFSETS, 4-byte output: elementwise_kernel<128, 2> (broadcast fp32)",
    "offsets_bf16": "EW_OFFSETS, 2-byte output: elementwise_kernel<128, 4> (broadcast/strided bf16)",
    "cat": "EW_CAT: CatArrayBatchedCopy of strided inputs",
    "reduce": "EW_REDUCE_ROW / EW_REDUCE_COL: reduce_kernel (mean, sum over h; sum_to [h])",
    "softmax_fwd": "EW_SOFTMAX_FWD: cunn_SoftMaxForward (log_softmax)",
    "softmax_bwd": "EW_SOFTMAX_BWD: cunn_SoftMaxBackward",
}

RUNS = [
    ("8b_step_h200x4", "fsdp2_kernels_8b_h200x4.tsv", {"layer": 32, "norm": 65, "head": 1, "emb": 1}),
    ("8b_step_h200x4_repeat", "patterns_fsdp2_kernels_8b_h200x4.tsv", {"layer": 32, "norm": 65, "head": 1, "emb": 1}),
    ("2layers_alone_h200", "eager_kernels_2layers_h200.tsv", {"layer": 2, "norm": 5, "head": 1, "emb": 1}),
]


def row_bytes(kernels, units):
    b = 0.0
    for _name, per, count, unit in kernels:
        if unit == ROPE:  # per element of q and of k, every layer
            b += per * (EQ + EK) * count * units["layer"]
        else:
            b += per * count * units[unit]
    return b


def load(path):
    out = []
    with open(path) as fh:
        next(fh)
        for line in fh:
            calls, ms, name = line.rstrip("\n").split("\t", 2)
            out.append((int(calls), float(ms), name))
    return out


def derive(tsv, units):
    kernels = load(os.path.join(RES, tsv))
    rows = []
    for label, rx, cls, ks in ROWS:
        r = re.compile(rx)
        hits = [(c, ms) for c, ms, n in kernels if r.search(n)]
        if len(hits) != 1:
            sys.exit(f"ew_classes: {tsv}: '{label}' matches {len(hits)} kernels (expected 1)")
        calls, ms = hits[0]
        rows.append((label, cls, calls, row_bytes(ks, units), ms * 1e-3))
    return rows


def per_class(rows):
    agg = {c: [0.0, 0.0, 0, []] for c in CLASSES}
    for _label, cls, calls, b, s in rows:
        a = agg[cls]
        a[0] += b
        a[1] += s
        a[2] += calls
        a[3].append(b / s)
    return agg


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(RES, "ew19_2026-11-29")
    lines, tsv = [], ["run\tclass\tcalls\tbytes\ttime_s\trate_bytes_per_s\tmin_kernel_rate\tmax_kernel_rate"]
    res = {}
    for run, f, units in RUNS:
        rows = derive(f, units)
        agg = per_class(rows)
        res[run] = (rows, agg)
        tb = sum(r[3] for r in rows)
        ts = sum(r[4] for r in rows)
        lines.append(f"== {run} ({f}): {tb / 1e9:.1f} GB in {ts * 1e3:.1f} ms = {tb / ts / 1e12:.3f} TB/s"
                     f" = {tb / ts / 4.8e12:.3f} of 4.8 TB/s; {sum(r[2] for r in rows)} launches")
        lines.append(f"  {'profiled kernel':58s} {'class':13s} {'calls':>5s} {'GB':>7s} {'ms':>7s} {'TB/s':>6s}")
        for label, cls, calls, b, s in rows:
            lines.append(f"  {label:58s} {cls:13s} {calls:5d} {b / 1e9:7.2f} {s * 1e3:7.3f} {b / s / 1e12:6.2f}")
        lines.append(f"  {'class':13s} {'calls':>5s} {'GB':>7s} {'ms':>7s} {'TB/s':>6s} {'of peak':>7s}  kernel spread TB/s")
        for c in CLASSES:
            b, s, n, rr = agg[c]
            lines.append(f"  {c:13s} {n:5d} {b / 1e9:7.2f} {s * 1e3:7.3f} {b / s / 1e12:6.3f} {b / s / 4.8e12:7.3f}"
                         f"  {min(rr) / 1e12:.2f}-{max(rr) / 1e12:.2f}")
            tsv.append(f"{run}\t{c}\t{n}\t{b:.6g}\t{s:.6g}\t{b / s:.6g}\t{min(rr):.6g}\t{max(rr):.6g}")
        lines.append("")

    # Alone rates (one H200): the 2-layer run. The contention of a multi-GPU step: the time the
    # 8B step's kernels would take at the alone class rates over the time they took in the step.
    alone = res["2layers_alone_h200"][1]
    rate_alone = {c: alone[c][0] / alone[c][1] for c in CLASSES}
    lines.append("== class rates alone (2-layer run) applied to each mix")
    for run in ("8b_step_h200x4", "8b_step_h200x4_repeat", "2layers_alone_h200"):
        agg = res[run][1]
        tb = sum(agg[c][0] for c in CLASSES)
        meas = sum(agg[c][1] for c in CLASSES)
        pred = sum(agg[c][0] / rate_alone[c] for c in CLASSES)
        one = tb / (4.8e12 * 0.59)
        lines.append(f"  {run:24s} {tb / 1e9:6.1f} GB: measured {meas * 1e3:7.2f} ms; at the alone class rates"
                     f" {pred * 1e3:7.2f} ms (ratio alone/measured {pred / meas:.3f}); at one rate 0.59: {one * 1e3:7.2f} ms")
        lines.append("    per class, measured rate / alone rate: " + ", ".join(
            f"{c} {agg[c][0] / agg[c][1] / rate_alone[c]:.2f}" for c in CLASSES))
        res[run] = res[run] + (pred / meas,)
    c1, c2 = res["8b_step_h200x4"][2], res["8b_step_h200x4_repeat"][2]
    lines.append(f"  contention ratio (multi-GPU step / alone), two profiles of the step: {c1:.3f}, {c2:.3f}")
    lines.append("")
    lines.append("== proposed (h200): rate alone = the 2-layer run's class rate; in a multi-GPU step x the ratio")
    lines.append(f"  {'class':13s} {'alone TB/s':>10s} {'of 4.8':>7s} {'step TB/s (8B)':>14s} {'of 4.8':>7s}  pattern")
    step = res["8b_step_h200x4"][1]
    for c in CLASSES:
        lines.append(f"  {c:13s} {rate_alone[c] / 1e12:10.3f} {rate_alone[c] / 4.8e12:7.3f}"
                     f" {step[c][0] / step[c][1] / 1e12:14.3f} {step[c][0] / step[c][1] / 4.8e12:7.3f}  {CLASS_DOC[c]}")
    os.makedirs(outdir, exist_ok=True)
    for name, body in (("ew_classes.txt", "\n".join(lines) + "\n"), ("ew_classes.tsv", "\n".join(tsv) + "\n")):
        p = os.path.join(outdir, name)
        with open(p + ".tmp", "w") as fh:
            fh.write(body)
        os.replace(p + ".tmp", p)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
