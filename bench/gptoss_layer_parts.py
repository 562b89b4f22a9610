#!/usr/bin/env python3
"""gptoss_layer_parts.py — the pieces of one GPT-OSS 120B layer at the published DGX-H100 row's
shapes (issues 15 and 20: plan predicts GPT-OSS ~2x the published throughput on every system),
timed on one GPU with torch, to compare piece by piece with `plan estimate --ops`.

Row: tests/data/published_megatron_bridge_h100.csv gpt-oss-120b-bf16-64gpu-gbs1280 (TP 1, PP 4,
EP 8, MBS 1, seq 4096): per micro-batch and layer 4096 tokens, hidden 2880, 64 query heads and 8
KV heads of 64, 128 experts top-4 at EP 8 = 16 local experts x 1024 rows (balanced: the perf
scripts force load balancing), expert FFN 2880 (fc1 2880 -> 5760 gated).

Measured (bf16, random normal data, CUDA events, median of 20 after 3 warm-ups):
  experts.*   the six expert GEMMs (fc1/fc2 forward, dgrad, wgrad) of 16 experts x 1024 rows,
              as TE's GroupedLinear issues them on Hopper (one cuBLAS GEMM per expert over 4
              streams, multi_stream_cublas_gemm) and as one torch._grouped_mm; at h = f = 2880
              and, for the tile-quantization question, at 3072
  dense.*     qkv (2880 -> 5120) and proj (4096 -> 2880) forward, dgrad, wgrad
  attn.*      SDPA cuDNN and flash backends, causal, b 1, 64 heads of 64 (K/V expanded to 64),
              s 4096, forward and forward+backward; and Hugging Face's eager attention with
              sinks (transformers' gpt_oss eager_attention_forward: scores, mask, sink column,
              fp32 softmax, drop the sink, PV), the unfused path
  rope.unfused  Megatron-Core's unfused rotary embedding on q and k (yarn disables the fused
              kernel: Megatron-Bridge v0.4.2 utils/fusions.py validate_rope_fusion_compatibility),
              forward and forward+backward
  bias.loop   Megatron-Core TEGroupedMLP._apply_bias (experts.py at 2edffadb): fc2's bias added
              per expert as t + b * p over a split of the rows, then cat and cast, fwd and fwd+bwd
  ref.gemm    8192^3 bf16 matmul (the card's sustained rate at this moment)
Writes $OUT/gptoss_layer_parts.json (or stdout) with the GPU, versions and date.
Usage: python3 bench/gptoss_layer_parts.py [out.json]
"""
import datetime
import json
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

dev = "cuda"
torch.manual_seed(0)
RES = {}


def timed(name, fn, flops=0.0, nbytes=0.0, n=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    t = statistics.median(ts)
    RES[name] = {"median_s": t, "min_s": min(ts), "max_s": max(ts),
                 "tflops": flops / t / 1e12 if flops else None,
                 "gbps": nbytes / t / 1e9 if nbytes else None}
    print(f"{name:40s} {t * 1e3:9.4f} ms" + (f" {flops / t / 1e12:7.1f} TFLOP/s" if flops else "")
          + (f" {nbytes / t / 1e9:7.1f} GB/s" if nbytes else ""), flush=True)
    return t


def rnd(*shape, dtype=torch.bfloat16, grad=False):
    return torch.randn(*shape, device=dev, dtype=dtype).requires_grad_(grad)


STREAMS = [torch.cuda.Stream() for _ in range(4)]


def multi_stream(jobs):
    """jobs: callables, one GEMM each, spread round-robin over 4 streams (TE's
    multi_stream_cublas_gemm), joined back to the current stream."""
    cur = torch.cuda.current_stream()
    for s in STREAMS:
        s.wait_stream(cur)
    for i, j in enumerate(jobs):
        with torch.cuda.stream(STREAMS[i % 4]):
            j()
    for s in STREAMS:
        cur.wait_stream(s)


def experts(h, f, G=16, T=1024):
    x = rnd(G * T, h)
    w1 = rnd(G, h, 2 * f) * 0.02
    b1 = rnd(G, 2 * f)
    w2 = rnd(G, f, h) * 0.02
    a = rnd(G * T, f)
    dy = rnd(G * T, h)
    dz = rnd(G * T, 2 * f)
    xs, as_, dys, dzs = x.view(G, T, h), a.view(G, T, f), dy.view(G, T, h), dz.view(G, T, 2 * f)
    fl1, fl2 = 2.0 * G * T * h * 2 * f, 2.0 * G * T * f * h
    tag = f"h{h}"
    loops = {
        "fc1.fwd": (fl1, [lambda i=i: torch.addmm(b1[i], xs[i], w1[i]) for i in range(G)]),
        "fc2.fwd": (fl2, [lambda i=i: as_[i] @ w2[i] for i in range(G)]),
        "fc2.dgrad": (fl2, [lambda i=i: dys[i] @ w2[i].t() for i in range(G)]),
        "fc2.wgrad": (fl2, [lambda i=i: as_[i].t() @ dys[i] for i in range(G)]),
        "fc1.dgrad": (fl1, [lambda i=i: dzs[i] @ w1[i].t() for i in range(G)]),
        "fc1.wgrad": (fl1, [lambda i=i: xs[i].t() @ dzs[i] for i in range(G)]),
    }
    tot = 0.0
    for k, (fl, jobs) in loops.items():
        tot += timed(f"experts.{tag}.loop4.{k}", lambda jobs=jobs: multi_stream(jobs), fl)
    RES[f"experts.{tag}.loop4.total_s"] = tot
    offs = torch.arange(1, G + 1, device=dev, dtype=torch.int32) * T
    w1t = w1.transpose(1, 2).contiguous().transpose(1, 2)
    w2t = w2.transpose(1, 2).contiguous().transpose(1, 2)
    grouped = {  # the 3D operand column-major in its last two dims (sm90 grouped_mm)
        "fc1.fwd": (fl1, lambda: torch._grouped_mm(x, w1t, offs=offs)),
        "fc2.fwd": (fl2, lambda: torch._grouped_mm(a, w2t, offs=offs)),
        "fc2.dgrad": (fl2, lambda: torch._grouped_mm(dy, w2.transpose(1, 2), offs=offs)),
        "fc2.wgrad": (fl2, lambda: torch._grouped_mm(a.t(), dy, offs=offs)),
        "fc1.dgrad": (fl1, lambda: torch._grouped_mm(dz, w1.transpose(1, 2), offs=offs)),
        "fc1.wgrad": (fl1, lambda: torch._grouped_mm(x.t(), dz, offs=offs)),
    }
    for k, (fl, fn) in grouped.items():
        try:
            timed(f"experts.{tag}.grouped.{k}", fn, fl)
        except Exception as ex:  # record and go on
            RES[f"experts.{tag}.grouped.{k}"] = {"error": f"{type(ex).__name__}: {str(ex)[:160]}"}
            print(f"experts.{tag}.grouped.{k}: {type(ex).__name__}: {str(ex)[:160]}")


def dense():
    tok, h = 4096, 2880
    for name, k, n in (("qkv", h, 5120), ("proj", 4096, h)):
        x, w, dy = rnd(tok, k), rnd(k, n) * 0.02, rnd(tok, n)
        fl = 2.0 * tok * k * n
        timed(f"dense.{name}.fwd", lambda: x @ w, fl)
        timed(f"dense.{name}.dgrad", lambda: dy @ w.t(), fl)
        timed(f"dense.{name}.wgrad", lambda: x.t() @ dy, fl)


def attention(s=4096, b=1, hq=64, hkv=8, d=64):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = rnd(b, hq, s, d, grad=True)
    k = rnd(b, hq, s, d, grad=True)
    v = rnd(b, hq, s, d, grad=True)
    fl = 4.0 * b * hq * s * s * d * 0.5  # causal forward
    for be_name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(be):
                timed(f"attn.sdpa_{be_name}.s{s}.fwd", lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True), fl)
                go = rnd(b, hq, s, d)

                def fb():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    o.backward(go)
                timed(f"attn.sdpa_{be_name}.s{s}.fwd_bwd", fb, 3.5 * fl)
        except Exception as ex:
            RES[f"attn.sdpa_{be_name}"] = {"error": f"{type(ex).__name__}: {str(ex)[:160]}"}
            print(f"attn.sdpa_{be_name}: {type(ex).__name__}: {str(ex)[:160]}")
    # Hugging Face transformers gpt_oss eager_attention_forward, with its sink column
    kk = rnd(b, hkv, s, d, grad=True)
    vv = rnd(b, hkv, s, d, grad=True)
    sinks = rnd(hq, dtype=torch.float32, grad=True)
    mask = torch.full((s, s), float("-inf"), device=dev, dtype=torch.bfloat16).triu(1)
    scale = d ** -0.5

    def eager():
        ke = kk.repeat_interleave(hq // hkv, dim=1)
        ve = vv.repeat_interleave(hq // hkv, dim=1)
        w = torch.matmul(q, ke.transpose(2, 3)) * scale + mask
        sk = sinks.to(w.dtype).reshape(1, -1, 1, 1).expand(b, -1, s, -1)
        c = torch.cat([w, sk], dim=-1)
        c = c - c.max(dim=-1, keepdim=True).values
        p = F.softmax(c, dim=-1, dtype=torch.float32).to(c.dtype)[..., :-1]
        return torch.matmul(p, ve)
    try:
        timed(f"attn.hf_eager_sinks.s{s}.fwd", eager, 2 * fl, n=10)
        go = rnd(b, hq, s, d)
        timed(f"attn.hf_eager_sinks.s{s}.fwd_bwd", lambda: eager().backward(go), 7 * fl, n=10)
    except Exception as ex:
        RES["attn.hf_eager_sinks"] = {"error": f"{type(ex).__name__}: {str(ex)[:160]}"}
        print(f"attn.hf_eager_sinks: {type(ex).__name__}: {str(ex)[:160]}")


def rope_unfused(s=4096, b=1, hq=64, hkv=8, d=64):
    """Megatron-Core rope_utils._apply_rotary_pos_emb_bshd (unfused): cos/sin of the [s,1,1,d]
    freqs times mscale cast to t's dtype, t * cos + rotate_half(t) * sin (rotate_half: chunk,
    cat(-x2, x1)), then cat with the (empty) pass-through part; q and k in sbhd."""
    q = rnd(s, b, hq, d, grad=True)
    k = rnd(s, b, hkv, d, grad=True)
    freqs = torch.randn(s, 1, 1, d, device=dev, dtype=torch.float32)

    def rot(t):
        cos_ = (torch.cos(freqs) * 1.0).to(t.dtype)
        sin_ = (torch.sin(freqs) * 1.0).to(t.dtype)
        t_, t_pass = t[..., :d], t[..., d:]
        x1, x2 = torch.chunk(t_, 2, dim=-1)
        r = torch.cat((-x2, x1), dim=-1)
        return torch.cat(((t_ * cos_) + (r * sin_), t_pass), dim=-1)
    elems = (hq + hkv) * s * b * d
    timed("rope.unfused.fwd", lambda: (rot(q), rot(k)), 0, 2.0 * 2 * elems)
    gq, gk = rnd(s, b, hq, d), rnd(s, b, hkv, d)

    def fb():
        torch.autograd.backward([rot(q), rot(k)], [gq, gk])
    timed("rope.unfused.fwd_bwd", fb, 0, 2.0 * 2 * elems)


def bias_loop(G=16, T=1024, h=2880):
    """Megatron-Core TEGroupedMLP._apply_bias after fc2 (skip_bias_add): per local expert
    t + b * p on its rows (probs fp32), torch.cat, cast to bf16."""
    t = rnd(G * T, h, grad=True)
    bs = [rnd(h, grad=True) for _ in range(G)]
    p = torch.rand(G * T, 1, device=dev, dtype=torch.float32).requires_grad_(True)
    split = [T] * G

    def fwd():
        return torch.cat([tt + bb * pp for tt, bb, pp in
                          zip(torch.split(t, split), bs, torch.split(p, split))]).to(torch.bfloat16)
    timed("bias.loop.fwd", fwd, 0, 2.0 * 2 * G * T * h)
    go = rnd(G * T, h)
    timed("bias.loop.fwd_bwd", lambda: fwd().backward(go), 0, 2.0 * 2 * G * T * h)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,power.limit,clocks.max.sm,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "gpu": torch.cuda.get_device_name(), "nvidia_smi": smi, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "command": "python3 bench/gptoss_layer_parts.py " + (out or "")}
    print(json.dumps(meta), flush=True)
    a, bm = rnd(8192, 8192), rnd(8192, 8192)
    timed("ref.gemm.8192", lambda: a @ bm, 2.0 * 8192 ** 3)
    del a, bm
    experts(2880, 2880)
    experts(3072, 3072)
    dense()
    rope_unfused()
    bias_loop()
    attention()
    if out:
        with open(out, "w") as fh:
            json.dump({"meta": meta, "results": RES}, fh, indent=1)


if __name__ == "__main__":
    main()
