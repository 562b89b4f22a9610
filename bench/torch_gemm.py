"""bf16 GEMM 8192^3 through torch.matmul, timed the way `plan calibrate` times cuBLAS
(backend/bk_gemm.c): random never-zero data, warm-up, CUDA events around back-to-back launches,
median of repeats. Prints one line per shape: name m n k time_ms TFLOP/s.

Usage (on a GPU machine): python3 bench/torch_gemm.py [--repeats 7]
"""
import argparse
import statistics

import torch

p = argparse.ArgumentParser()
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--min-repeat-s", type=float, default=2e-3)
p.add_argument("--only", default=None, help="run only this shape name (e.g. square8192)")
p.add_argument("--warmup-s", type=float, default=0.0,
               help="run the GEMM back to back this long before timing (plan calibrate --warmup-ms)")
args = p.parse_args()

shapes = [("square8192", 8192, 8192, 8192), ("mlp_up.tp1", 4096, 28672, 4096),
          ("qkv.tp1", 4096, 6144, 4096)]
dev = torch.device("cuda", 0)
print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
for name, m, n, k in shapes:
    if args.only and name != args.only:
        continue
    # y = x W^T as a Linear runs it (the forward form of backend/work.h)
    def rnd(*s):
        t = torch.empty(*s, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
        return torch.where(t.abs() < 1 / 32, torch.full_like(t, 1 / 32), t)
    x, w = rnd(m, k), rnd(n, k)
    out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(x, w.t(), out=out)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(3):
        torch.matmul(x, w.t(), out=out)
    e1.record()
    torch.cuda.synchronize()
    one = e0.elapsed_time(e1) / 3e3
    iters = max(1, min(200, int(args.min_repeat_s / one + 0.999)))
    for _ in range(int(args.warmup_s / one)):
        torch.matmul(x, w.t(), out=out)
    times = []
    for _ in range(args.repeats):
        e0.record()
        for _ in range(iters):
            torch.matmul(x, w.t(), out=out)
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / iters)
    t = statistics.median(times)
    print(f"torch.matmul {name:12s} m={m} n={n} k={k} time {t*1e3:.4f} ms "
          f"{2*m*n*k/t/1e12:.1f} TFLOP/s (spread {(max(times)-min(times))/t*100:.1f}%)")
