"""The eager PyTorch kernels of Llama decoder layers on one GPU: which op launches which kernel,
with the shapes, and the launch gap between back-to-back kernels (bench/BACKEND.md, "Eager
elementwise kernels"). The model code is bench/fsdp2_step.py's (Hugging Face modeling_llama.py in
eager PyTorch), bf16 parameters as FSDP2's MixedPrecisionPolicy unshards them, no FSDP: one
forward, F.cross_entropy(logits.float()) and backward of --layers layers + final norm + lm_head.

Usage: python3 bench/eager_kernels.py [--seq 4096] [--layers 2] [--out DIR]
Writes DIR/eager_kernels.tsv (calls, total ms, kernel), DIR/eager_ops.tsv (op, input shapes,
kernel, us, in order) and prints the gap statistics.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--seq", type=int, default=4096)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--out", default=".")
args = p.parse_args()

H, FFN, HEADS, KV, HD, V = 4096, 14336, 32, 8, 128, 128256


class RMSNorm(nn.Module):  # bench/fsdp2_step.py
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):  # bench/fsdp2_step.py
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(H)
        self.q_proj = nn.Linear(H, HEADS * HD, bias=False)
        self.k_proj = nn.Linear(H, KV * HD, bias=False)
        self.v_proj = nn.Linear(H, KV * HD, bias=False)
        self.o_proj = nn.Linear(HEADS * HD, H, bias=False)
        self.post_attention_layernorm = RMSNorm(H)
        self.gate_proj = nn.Linear(H, FFN, bias=False)
        self.up_proj = nn.Linear(H, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, H, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, HEADS, HD).transpose(1, 2)
        k = self.k_proj(h).view(b, s, KV, HD).transpose(1, 2)
        v = self.v_proj(h).view(b, s, KV, HD).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, HEADS * HD))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H)
        self.layers = nn.ModuleList(Block() for _ in range(layers))
        self.norm = RMSNorm(H)
        self.lm_head = nn.Linear(H, V, bias=False)

    def forward(self, ids, cos, sin):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def main():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = Model(args.layers).to(dev, torch.bfloat16)
    for prm in model.parameters():
        prm.data.normal_(0.0, 0.02)
    inv = 1.0 / (500000.0 ** (torch.arange(0, HD, 2, device=dev, dtype=torch.float32) / HD))
    f = torch.outer(torch.arange(args.seq, device=dev, dtype=torch.float32), inv)
    emb = torch.cat((f, f), dim=-1)
    cos, sin = emb.cos().to(torch.bfloat16)[None, None], emb.sin().to(torch.bfloat16)[None, None]
    ids = torch.randint(0, V, (1, args.seq + 1), device=dev)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        logits = model(inp, cos, sin)
        loss = F.cross_entropy(logits.float().view(-1, V), lab.view(-1))
        loss.backward()
        for prm in model.parameters():
            prm.grad = None

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    wall = statistics.median(times)

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "eager_trace.json")
    prof.export_chrome_trace(trace)
    ev = json.load(open(trace))["traceEvents"]
    os.remove(trace)
    kern = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                  key=lambda e: e["ts"])
    ops = {}
    for e in ev:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            ops.setdefault(e["args"]["External id"], e)
    tot = {}
    with open(os.path.join(args.out, "eager_ops.tsv"), "w") as fo:
        fo.write("op\tinput_dims\tkernel\tus\n")
        for k in kern:
            o = ops.get(k.get("args", {}).get("External id"))
            nm = k["name"]
            c = tot.setdefault(nm, [0, 0.0])
            c[0] += 1
            c[1] += k["dur"]
            fo.write(f"{o['name'] if o else '?'}\t{o['args'].get('Input Dims') if o else ''}\t"
                     f"{nm[:140]}\t{k['dur']:.1f}\n")
    with open(os.path.join(args.out, "eager_kernels.tsv"), "w") as fk:
        fk.write("calls\ttotal_ms\tname\n")
        for nm, (n, us) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
            fk.write(f"{n}\t{us/1e3:.3f}\t{nm}\n")
    # Gaps between back-to-back kernels of the compute stream: the idle time from one kernel's
    # end to the next one's start, over the whole step (the GPU runs ahead of the host here).
    stream = statistics.mode(k["args"].get("stream", 0) for k in kern)
    ks = [k for k in kern if k["args"].get("stream", 0) == stream]
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(ks, ks[1:])]
    busy = sum(k["dur"] for k in ks) / 1e6
    print(f"eager_kernels: torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, "
          f"seq {args.seq}, layers {args.layers}")
    print(f"eager_kernels: step wall (median of {args.steps}, no profiler) {wall*1e3:.3f} ms; "
          f"kernels on the compute stream {len(ks)}, busy {busy*1e3:.3f} ms; "
          f"(wall - busy) / kernels = {(wall-busy)/len(ks)*1e6:.2f} us")
    gs = sorted(gaps)
    q = lambda f: gs[min(len(gs) - 1, int(f * len(gs)))]
    print(f"eager_kernels: profiled gaps between back-to-back kernels: median {q(0.5):.2f} us, "
          f"p10 {q(0.1):.2f}, p90 {q(0.9):.2f}, mean {statistics.mean(gs):.2f} us")


if __name__ == "__main__":
    main()
