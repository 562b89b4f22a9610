"""Compute trains of pipeline-chunk shapes, for timing compute beside something else on the GPU.

Why: bench/p2p_wait_contention.py (a waiting NCCL receive beside the compute) and
bench/sm_hold_contention.py (a kernel that only holds SMs beside the compute) must time the same
kernels. Each maker returns (train, check): train() enqueues the kernels on the current stream;
check() returns the relative error of one GEMM (and, for the layer, the flash SDPA against another
backend in float32) against a float32 reference, or 1.0 when an output was left unwritten.
  layer  10 Qwen3-4B forward layers at 4096 tokens (QKV, flash SDPA, O, gate-up, SiLU*mul, down)
  fc1    8 Llama-8B FC1 GEMMs 4096 x 28672 x 4096
  mem    40 element-wise adds of 128 Mi bf16 elements (memory-bound)
kernel_events(prof) gives the kernels of a finished torch.profiler run (chrome-trace events with
their grid, block, registers and shared memory), for both scripts' per-kernel tables.
"""
import json
import math
import os
import tempfile

import torch
import torch.nn.functional as F

BF = torch.bfloat16


def make_layer(dev):
    T, H, Q, KV, I = 4096, 2560, 4096, 1024, 9728
    sets = []
    for _ in range(4):
        sets.append(dict(
            wqkv=torch.randn(H, Q + 2 * KV, device=dev, dtype=BF) / math.sqrt(H),
            wo=torch.randn(Q, H, device=dev, dtype=BF) / math.sqrt(Q),
            wgu=torch.randn(H, 2 * I, device=dev, dtype=BF) / math.sqrt(H),
            wd=torch.randn(I, H, device=dev, dtype=BF) / math.sqrt(I)))
    x = torch.randn(T, H, device=dev, dtype=BF)
    q = torch.randn(1, 32, T, 128, device=dev, dtype=BF)
    k = torch.randn(1, 32, T, 128, device=dev, dtype=BF)
    v = torch.randn(1, 32, T, 128, device=dev, dtype=BF)
    a2 = torch.randn(T, Q, device=dev, dtype=BF)
    h = torch.randn(T, I, device=dev, dtype=BF)
    qkv = torch.empty(T, Q + 2 * KV, device=dev, dtype=BF)
    y = torch.empty(T, H, device=dev, dtype=BF)
    gu = torch.empty(T, 2 * I, device=dev, dtype=BF)
    hm = torch.empty(T, I, device=dev, dtype=BF)

    def train():
        for i in range(10):
            w = sets[i % 4]
            torch.matmul(x, w["wqkv"], out=qkv)
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.matmul(a2, w["wo"], out=y)
            torch.matmul(x, w["wgu"], out=gu)
            torch.mul(F.silu(gu[:, :I]), gu[:, I:], out=hm)
            torch.matmul(h, w["wd"], out=y)

    def check():
        torch.matmul(x, sets[0]["wgu"], out=gu)
        ref = x.float() @ sets[0]["wgu"].float()
        e1 = ((gu.float() - ref).norm() / ref.norm()).item()
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        qs, ks, vs = (t[:, :4].float() for t in (q, k, v))
        r = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
        e2 = ((o[:, :4].float() - r).norm() / r.norm()).item()
        return max(e1, e2)
    return train, check


def make_fc1(dev):
    T, H, I2 = 4096, 4096, 28672
    x = torch.randn(T, H, device=dev, dtype=BF)
    ws = [torch.randn(H, I2, device=dev, dtype=BF) / math.sqrt(H) for _ in range(2)]
    out = torch.empty(T, I2, device=dev, dtype=BF)

    def train():
        for i in range(8):
            torch.matmul(x, ws[i % 2], out=out)

    def check():
        torch.matmul(x, ws[0], out=out)
        ref = x.float() @ ws[0].float()
        return ((out.float() - ref).norm() / ref.norm()).item()
    return train, check


def make_mem(dev):
    n = 128 * 1024 * 1024
    a, b = torch.randn(n, device=dev, dtype=BF), torch.randn(n, device=dev, dtype=BF)
    c = torch.empty(n, device=dev, dtype=BF)

    def train():
        for _ in range(40):
            torch.add(a, b, out=c)

    def check():
        c.fill_(float("nan"))
        torch.add(a, b, out=c)
        ref = a[:1 << 20].float() + b[:1 << 20].float()
        bad = torch.isnan(c).any().item()
        return 1.0 if bad else ((c[:1 << 20].float() - ref).norm() / ref.norm()).item()
    return train, check


MAKERS = {"layer": make_layer, "fc1": make_fc1, "mem": make_mem}


def kernel_events(prof):
    """the kernel events of a finished torch.profiler.profile, as its chrome trace holds them"""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            tr = json.load(f)
    finally:
        os.unlink(path)
    return [e for e in tr.get("traceEvents", []) if e.get("cat") == "kernel"]
