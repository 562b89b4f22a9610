"""Micro-measurements behind the expert-parallel step-time gap (one GPU, no torch.distributed).

Why: bench/realruns/parallel_run.py --layout ep --experts grouped (Qwen3-30B-A3B cut to 4 layers)
ran 37% (ep 2) / 25% (ep 4) slower than plan estimate prices it. Candidates measured here, each
alone, with CUDA events, after warm-up, median of --reps:
  grouped   torch._grouped_mm at the run's per-expert shapes (E_local experts, rows per expert,
            hidden 2048, expert FFN 768): the three GEMMs of the SwiGLU experts forward
            (x w1, x w3, h w2) and forward + backward through autograd, against one dense mm of
            the same FLOPs; balanced rows and multinomial (top-k of a random router) rows.
  sync      the device-to-host copy of a few integers (.tolist()) with an empty queue.
  h2d       a pageable host tensor .to(cuda, non_blocking=True) issued while the GPU is busy:
            does the host wait for the queue (the CUDA runtime may stage pageable memory
            synchronously)? host time of the copy vs the GPU work queued ahead of it.
Writes one JSON object (--out).

Usage: python3 bench/realruns/ep_micro.py --out ep_micro.json
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--out", default="")
p.add_argument("--reps", type=int, default=20)
p.add_argument("--hidden", type=int, default=2048)
p.add_argument("--ffn", type=int, default=768)
p.add_argument("--tokens", type=int, default=4096)
p.add_argument("--topk", type=int, default=8)
p.add_argument("--experts", type=int, default=128)
args = p.parse_args()
dev = torch.device("cuda", 0)
torch.manual_seed(0)


def timed(fn, reps=None):
    reps = reps or args.reps
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


def pad16(c):
    return (c + 15) // 16 * 16


def grouped_case(El, counts, name):
    h, f = args.hidden, args.ffn
    padded = [pad16(c) for c in counts]
    M = sum(padded)
    offs = torch.tensor(list(torch.tensor(padded).cumsum(0)), dtype=torch.int32, device=dev)
    x = torch.randn(M, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w1 = (torch.randn(El, h, f, device=dev) * 0.02).bfloat16().requires_grad_()
    w3 = (torch.randn(El, h, f, device=dev) * 0.02).bfloat16().requires_grad_()
    w2 = (torch.randn(El, f, h, device=dev) * 0.02).bfloat16().requires_grad_()
    hh = torch.randn(M, f, device=dev, dtype=torch.bfloat16)
    flops_fwd = 3 * 2.0 * M * h * f

    def up():
        with torch.no_grad():
            torch._grouped_mm(x, w1, offs=offs)

    def down():
        with torch.no_grad():
            torch._grouped_mm(hh, w2, offs=offs)

    def fwd():
        with torch.no_grad():
            a = F.silu(torch._grouped_mm(x, w1, offs=offs)) * torch._grouped_mm(x, w3, offs=offs)
            torch._grouped_mm(a, w2, offs=offs)

    g = torch.randn(M, h, device=dev, dtype=torch.bfloat16)

    def fwdbwd():
        a = F.silu(torch._grouped_mm(x, w1, offs=offs)) * torch._grouped_mm(x, w3, offs=offs)
        y = torch._grouped_mm(a, w2, offs=offs)
        y.backward(g)
        x.grad = w1.grad = w2.grad = w3.grad = None

    xd = torch.randn(M, h, device=dev, dtype=torch.bfloat16)
    wd = torch.randn(h, f, device=dev, dtype=torch.bfloat16)

    def dense_up():
        xd @ wd

    r = {"name": name, "local_experts": El, "rows_total_padded": M, "rows_min": min(counts),
         "rows_max": max(counts), "rows_mean": sum(counts) / El,
         "up_one_s": timed(up), "down_one_s": timed(down), "fwd3_plus_act_s": timed(fwd),
         "fwd_bwd_s": timed(fwdbwd), "dense_same_flops_up_s": timed(dense_up),
         "flops_fwd": flops_fwd}
    r["fwd_tflops"] = flops_fwd / r["fwd3_plus_act_s"] / 1e12
    r["fwd_bwd_tflops"] = 3 * flops_fwd / r["fwd_bwd_s"] / 1e12
    r["up_tflops"] = 2.0 * M * h * f / r["up_one_s"] / 1e12
    r["dense_up_tflops"] = 2.0 * M * h * f / r["dense_same_flops_up_s"] / 1e12
    return r


out = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "cuda": torch.version.cuda,
       "args": vars(args), "grouped": []}
S = args.tokens * args.topk
for ep in (2, 4):
    El = args.experts // ep
    # every rank sends its S copies; this rank receives S copies over its El experts (balanced)
    bal = [S // El] * El
    out["grouped"].append(grouped_case(El, bal, "ep%d balanced" % ep))
    # top-k of a random router on ep ranks' tokens: multinomial-like counts
    logits = torch.randn(args.tokens * ep, args.experts, device=dev) * 0.02 * args.hidden ** 0.5 * 0.02
    topi = logits.softmax(-1).topk(args.topk, -1).indices.reshape(-1)
    cnt = torch.bincount(topi, minlength=args.experts)[:El].tolist()
    out["grouped"].append(grouped_case(El, cnt, "ep%d router-like" % ep))

# device-to-host sync with an empty queue
small = torch.arange(8, device=dev)
torch.cuda.synchronize()
ts = []
for _ in range(50):
    t0 = time.perf_counter()
    small.tolist()
    ts.append(time.perf_counter() - t0)
out["d2h_tolist_idle_s"] = statistics.median(ts)
ts = []
for _ in range(50):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    (small + 1).tolist()
    ts.append(time.perf_counter() - t0)
out["launch_plus_d2h_tolist_s"] = statistics.median(ts)

# pageable H2D with a busy GPU: does the host wait?
big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
res = []
for mode in ("pageable", "pinned"):
    hs, gs = [], []
    for _ in range(5):
        cpu = torch.arange(100000)
        if mode == "pinned":
            cpu = cpu.pin_memory()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            big @ big  # ~ 20 x 1.4 ms queued
        t0 = time.perf_counter()
        cpu.to(dev, non_blocking=True)
        hs.append(time.perf_counter() - t0)
        b.record()
        b.synchronize()
        gs.append(a.elapsed_time(b) * 1e-3)
    res.append({"mode": mode, "host_copy_call_s": statistics.median(hs), "gpu_queue_s": statistics.median(gs)})
out["h2d_nonblocking_busy_gpu"] = res
js = json.dumps(out, indent=1)
print(js)
if args.out:
    with open(args.out, "w") as f:
        f.write(js)
