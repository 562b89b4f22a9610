#!/usr/bin/env python3
"""atp22_gemm_shapes.py — GEMM rates at torchtitan's TP 8 shard shapes (Llama-3.1-8B local batch
12, Llama-3.1-70B local batch 16, seq 8192: the async-TP benchmark's rows), bf16 vs float8
tensorwise vs float8 rowwise (torch._scaled_mm), whole and as the tp = 8 row chunks async TP's
fused ops run (tokens / 8 rows each). One GPU; ratios are what carry to the H100 rows.

Per Linear: fprop (M x N x K), dgrad (M x K x N), wgrad (N x K x M), M = tokens. FP8 operands
are e4m3 (A row-major, B column-major, as _scaled_mm takes them); tensorwise scales are 0-d
fp32, rowwise scales M x 1 and 1 x N fp32. Inputs random normal (never zeros), results checked
against the bf16 product (relative Frobenius error). Timing: CUDA events, 2 warm-up calls, then
the median of 7; the chunked figure is 8 chunk calls timed together. Output: JSON lines to
$OUT/gemm_shapes.jsonl and a table on stdout.

Usage: python3 atp22_gemm_shapes.py [OUT_DIR]
"""
import json
import os
import sys

import torch

E4M3 = torch.float8_e4m3fn
TP = 8

# name, tokens, hidden, q width, kv width, ffn (Llama-3.1 8B / 70B)
MODELS = [("8b", 12 * 8192, 4096, 4096, 1024, 14336),
          ("70b", 16 * 8192, 8192, 8192, 1024, 28672)]


def linears(tokens, h, q, kv, ffn):
    """(name, M, N, K) of the forward GEMM of each TP 8 shard Linear."""
    return [("qkv", tokens, (q + 2 * kv) // TP, h),
            ("wo", tokens, h, q // TP),
            ("w13", tokens, 2 * ffn // TP, h),
            ("w2", tokens, h, ffn // TP)]


def timed(fn, reps=7, warm=2):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    ts.sort()
    return ts[len(ts) // 2]


def operands(m, n, k, kind):
    """A (m x k) and B (k x n) for kind bf16 / tw / rw, and a call computing A @ B."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    bt = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)  # B column-major = B^T row-major
    if kind == "bf16":
        b = bt.t()
        return a, b, (lambda a_=a: torch.mm(a_, b))
    if kind == "tw":
        sa = (a.abs().amax().float() / 448.0).clamp(min=1e-12)
        sb = (bt.abs().amax().float() / 448.0).clamp(min=1e-12)
    else:
        sa = (a.abs().amax(dim=1, keepdim=True).float() / 448.0).clamp(min=1e-12)
        sb = (bt.abs().amax(dim=1, keepdim=True).float() / 448.0).clamp(min=1e-12).t().contiguous()
    a8 = (a.float() / sa).to(E4M3)
    b8 = (bt.float() / (sb.t() if kind == "rw" else sb)).to(E4M3).t()

    def call(a_=a8, sa_=sa):
        return torch._scaled_mm(a_, b8, scale_a=sa_, scale_b=sb, out_dtype=torch.bfloat16)
    return (a8, sa), b8, call


def check(m, n, k, kind):
    """Relative error of the kind's product against bf16 at a small M (same N, K)."""
    mm = min(m, 2048)
    a = torch.randn(mm, k, device="cuda", dtype=torch.bfloat16)
    bt = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    ref = (a.double() @ bt.double().t())
    if kind == "bf16":
        out = torch.mm(a, bt.t()).double()
    else:
        if kind == "tw":
            sa = (a.abs().amax().float() / 448.0)
            sb = (bt.abs().amax().float() / 448.0)
            a8 = (a.float() / sa).to(E4M3)
            b8 = (bt.float() / sb).to(E4M3).t()
        else:
            sa = a.abs().amax(dim=1, keepdim=True).float() / 448.0
            sbr = bt.abs().amax(dim=1, keepdim=True).float() / 448.0
            a8 = (a.float() / sa).to(E4M3)
            b8 = (bt.float() / sbr).to(E4M3).t()
            sb = sbr.t().contiguous()
        out = torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16).double()
    return float((out - ref).norm() / ref.norm())


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
    torch.manual_seed(0)
    rows = []
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    print(f"{'model':4} {'linear':5} {'pass':5} {'M':>6} {'N':>6} {'K':>6} | "
          f"{'bf16':>6} {'tw':>6} {'rw':>6} TFLOP/s | rw/tw | chunk/whole bf16 tw rw")
    for mname, tokens, h, q, kv, ffn in MODELS:
        for lname, m, n, k in linears(tokens, h, q, kv, ffn):
            for pname, (pm, pn, pk) in (("fprop", (m, n, k)), ("dgrad", (m, k, n)),
                                        ("wgrad", (n, k, m))):
                rec = {"model": mname, "linear": lname, "pass": pname, "m": pm, "n": pn, "k": pk}
                flops = 2.0 * pm * pn * pk
                for kind in ("bf16", "tw", "rw"):
                    rec[f"err_{kind}"] = check(pm, pn, pk, kind)
                    a, b, call = operands(pm, pn, pk, kind)
                    rec[f"s_{kind}"] = timed(call)
                    if pname != "wgrad":  # async TP's chunks: tokens / 8 rows, 8 calls
                        cm = pm // TP
                        if kind == "bf16":
                            chunks = [a[i * cm:(i + 1) * cm] for i in range(TP)]
                            rec[f"chunk_s_{kind}"] = timed(
                                lambda: [torch.mm(c, b) for c in chunks])
                        else:
                            a8, sa = a
                            ch = [(a8[i * cm:(i + 1) * cm],
                                   sa if sa.dim() == 0 else sa[i * cm:(i + 1) * cm])
                                  for i in range(TP)]
                            rec[f"chunk_s_{kind}"] = timed(
                                lambda: [call(x, s) for x, s in ch])
                    del a, b, call
                rows.append(rec)
                tf = {kd: flops / rec[f"s_{kd}"] / 1e12 for kd in ("bf16", "tw", "rw")}
                cw = " ".join(f"{rec[f's_{kd}'] / rec[f'chunk_s_{kd}']:.3f}"
                              if f"chunk_s_{kd}" in rec else "  -  " for kd in ("bf16", "tw", "rw"))
                print(f"{mname:4} {lname:5} {pname:5} {pm:6d} {pn:6d} {pk:6d} | "
                      f"{tf['bf16']:6.0f} {tf['tw']:6.0f} {tf['rw']:6.0f}         | "
                      f"{rec['s_tw'] / rec['s_rw']:.3f} | {cw}", flush=True)
                torch.cuda.empty_cache()
    with open(os.path.join(out_dir, "gemm_shapes.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    errs = max(max(r["err_tw"], r["err_rw"]) for r in rows)
    print(f"max fp8 relative error vs float64 {errs:.4f}; bf16 "
          f"{max(r['err_bf16'] for r in rows):.5f}")


if __name__ == "__main__":
    main()
