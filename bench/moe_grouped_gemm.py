#!/usr/bin/env python3
"""
moe_grouped_gemm.py — expert GEMM efficiency at the small per-expert token counts that top-k
routing produces (issue 20). For each model's expert shape (hidden h, expert FFN f, SwiGLU so the
up projection is h -> 2f) and each tokens-per-expert count T, with G local experts:

  grouped  torch._grouped_mm over the G experts (what Megatron-Core's --moe-grouped-gemm runs
           through TE/cutlass grouped GEMM; torchtitan uses the same torch op)
  bmm      torch.bmm of G equal batches (balanced routing, the recipe's batched GEMM item)
  loop     G separate torch.matmul calls (the sequential-MLP path / Hugging Face's expert loop)
  dense    one matmul of G*T rows against one expert's weight: the ideal the cost model assumed

for the forward (up, down) and the weight gradient of up (K = T, the worst case). Prints one TSV
row per (model, G, T, gemm, method) with seconds and TFLOP/s; a header with date, GPU, versions.

Run (issue 20, 2026-11-24): python3 bench/moe_grouped_gemm.py > bench/results/moe_grouped_gemm_h100.tsv
"""
import datetime
import sys

import torch

MODELS = [  # name, hidden, expert ffn (moe_intermediate_size), local-expert counts measured
    ("qwen3-30b-a3b", 2048, 768, (8, 32)),
    ("mixtral-8x7b", 4096, 14336, (8,)),
    ("deepseek-v3", 7168, 2048, (8, 32)),
]
TOKENS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def timed(fn, flops):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    one = s.elapsed_time(e) / 1e3
    n = max(3, min(50, int(0.02 / max(one, 1e-6))))
    s.record()
    for _ in range(n):
        fn()
    e.record()
    torch.cuda.synchronize()
    t = s.elapsed_time(e) / 1e3 / n
    return t, flops / t / 1e12


def grouped(a, w, offs):
    return torch._grouped_mm(a, w, offs=offs)


def main():
    dev = torch.device("cuda")
    p = torch.cuda.get_device_properties(dev)
    print(f"# {datetime.datetime.now(datetime.timezone.utc).isoformat()} gpu={p.name} "
          f"sms={p.multi_processor_count} torch={torch.__version__} cuda={torch.version.cuda}")
    print("# grouped=torch._grouped_mm bmm=torch.bmm loop=G x torch.matmul dense=one matmul of "
          "G*T rows; flops=2*G*T*n*k; bf16 random normal; CUDA events, mean of n>=3 after 2 warm")
    print("model\tG\tT\tgemm\tm\tn\tk\tmethod\ttime_s\ttflops")
    torch.manual_seed(0)
    for name, h, f, gs in MODELS:
        for G in gs:
            wu = torch.randn(G, h, 2 * f, device=dev, dtype=torch.bfloat16) * 0.02
            wd = torch.randn(G, f, h, device=dev, dtype=torch.bfloat16) * 0.02
            # grouped_mm wants the 3D operand column-major in its last two dims on sm90
            wu_t = wu.transpose(1, 2).contiguous().transpose(1, 2)
            wd_t = wd.transpose(1, 2).contiguous().transpose(1, 2)
            for T in TOKENS:
                offs = torch.arange(1, G + 1, device=dev, dtype=torch.int32) * T
                cases = (("up", h, 2 * f, wu, wu_t), ("down", f, h, wd, wd_t))
                for gname, k, n, w, wt in cases:
                    x = torch.randn(G * T, k, device=dev, dtype=torch.bfloat16)
                    xb = x.view(G, T, k)
                    fl = 2.0 * G * T * n * k
                    meths = {
                        "dense": lambda: x @ w[0],
                        "bmm": lambda: torch.bmm(xb, w),
                        "loop": lambda: [xb[i] @ w[i] for i in range(G)],
                        "grouped": lambda: grouped(x, wt, offs),
                    }
                    for mn, fn in meths.items():
                        try:
                            t, tf = timed(fn, fl)
                            print(f"{name}\t{G}\t{T}\t{gname}\t{T}\t{n}\t{k}\t{mn}\t{t:.4e}\t{tf:.1f}")
                        except Exception as ex:  # record, keep going
                            print(f"# {name} G={G} T={T} {gname} {mn}: {type(ex).__name__}: "
                                  f"{str(ex)[:120]}")
                    sys.stdout.flush()
                # weight gradient of up: dW_g (h x 2f) = X_g^T dY_g, reduction over T
                x = torch.randn(G * T, h, device=dev, dtype=torch.bfloat16)
                dy = torch.randn(G * T, 2 * f, device=dev, dtype=torch.bfloat16)
                xb, dyb = x.view(G, T, h), dy.view(G, T, 2 * f)
                fl = 2.0 * G * T * h * 2 * f
                meths = {
                    "dense": lambda: x[:T].t() @ dy[:T] if G == 1 else x.t() @ dy,
                    "bmm": lambda: torch.bmm(xb.transpose(1, 2), dyb),
                    "loop": lambda: [xb[i].t() @ dyb[i] for i in range(G)],
                    "grouped": lambda: torch._grouped_mm(x.t(), dy, offs=offs),
                }
                for mn, fn in meths.items():
                    try:
                        t, tf = timed(fn, fl)
                        print(f"{name}\t{G}\t{T}\tup.wgrad\t{h}\t{2 * f}\t{T}\t{mn}\t{t:.4e}\t{tf:.1f}")
                    except Exception as ex:
                        print(f"# {name} G={G} T={T} up.wgrad {mn}: {type(ex).__name__}: "
                              f"{str(ex)[:120]}")
                sys.stdout.flush()
            del wu, wd, wu_t, wd_t
            torch.cuda.empty_cache()
    # router pieces at one step's tokens (8192 tokens): gating GEMM, softmax+top-k, permute
    for name, h, E, k in (("qwen3-30b-a3b", 2048, 128, 8), ("mixtral-8x7b", 4096, 8, 2),
                          ("deepseek-v3", 7168, 256, 8)):
        N = 8192
        x = torch.randn(N, h, device=dev, dtype=torch.bfloat16)
        wr = torch.randn(h, E, device=dev, dtype=torch.bfloat16)
        logits = (x @ wr).float()
        idx = torch.topk(logits, k, dim=-1).indices
        order = torch.argsort(idx.view(-1), stable=True)
        rows = order // k
        ops = {
            "gate_gemm": (lambda: x @ wr, 2.0 * N * h * E),
            "softmax_topk": (lambda: torch.topk(torch.softmax(logits, -1), k, dim=-1), 0),
            "sigmoid_topk": (lambda: torch.topk(torch.sigmoid(logits), k, dim=-1), 0),
            "permute": (lambda: x.index_select(0, rows), 0),
            "sort_indices": (lambda: torch.argsort(idx.view(-1), stable=True), 0),
        }
        for on, (fn, fl) in ops.items():
            t, tf = timed(fn, max(fl, 1.0))
            print(f"{name}\t-\t{N}\t{on}\t{N}\t{E}\t{h}\trouter\t{t:.4e}\t{tf if fl else 0:.1f}")


if __name__ == "__main__":
    main()
