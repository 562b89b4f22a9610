#!/usr/bin/env python3
"""bf16 GEMM rate against the GPU's duty cycle under its power cap.

A pipeline stage computes for part of the step and waits for its neighbours for the rest
(bench/results/pp_timeline_2026-11-27: ranks idle 12-50% of a 1F1B step). A GPU held at its power
cap by back-to-back GEMMs runs them at the sustained rate (the presets' gemm_efficiency_max); the
question is whether idle stretches between bursts give the compute back its burst clock. For
each duty cycle d this runs, for SECONDS, blocks of back-to-back 8192^3 bf16 products lasting
about BLOCK_MS, each followed by a GPU-side idle (torch.cuda._sleep, no work, no host gap) of
BLOCK_MS x (1 - d) / d, and times every product with CUDA events. Prints one JSON line per duty
cycle: median TFLOP/s over the products of the last half of the run, and the SM clock and power
nvidia-smi read meanwhile. Random N(0,1) data; the product is checked once against fp32.

Usage: python3 bench/gemm_duty_cycle.py [--seconds 6] [--block-ms 20] [--out FILE]
"""
import argparse
import json
import statistics
import subprocess
import threading
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=6.0)
ap.add_argument("--block-ms", type=float, default=20.0)
ap.add_argument("--n", type=int, default=8192)
ap.add_argument("--duties", default="1.0,0.85,0.7,0.5,0.3")
ap.add_argument("--out", default="")
a = ap.parse_args()

dev = torch.device("cuda")
n = a.n
g = torch.Generator(device=dev).manual_seed(0)
A = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=g)
B = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=g)
C = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
ref = (A[:256].float() @ B.float())
torch.mm(A, B, out=C)
err = ((C[:256].float() - ref).abs().max() / ref.abs().max()).item()
assert err < 2e-2, "GEMM check failed: %g" % err
flops = 2.0 * n * n * n

# cycles per ms for torch.cuda._sleep
t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0.record(); torch.cuda._sleep(10_000_000); t1.record(); torch.cuda.synchronize()
cycles_per_ms = 10_000_000 / t0.elapsed_time(t1)


def smi(stop, samples):
    while not stop.is_set():
        try:
            out = subprocess.run(["nvidia-smi", "-i", str(torch.cuda.current_device()),
                                  "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5).stdout.strip().split(",")
            samples.append((float(out[0]), float(out[1])))
        except Exception:
            pass
        time.sleep(0.2)


# one product's time at sustained load, to size the blocks
for _ in range(20):
    torch.mm(A, B, out=C)
torch.cuda.synchronize()
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record()
for _ in range(10):
    torch.mm(A, B, out=C)
e1.record(); torch.cuda.synchronize()
per_mm_ms = e0.elapsed_time(e1) / 10
k = max(1, round(a.block_ms / per_mm_ms))

for d in [float(x) for x in a.duties.split(",")]:
    idle_ms = a.block_ms * (1 - d) / d
    # warm to the power cap first: 3 s back-to-back
    end = time.time() + 3
    while time.time() < end:
        for _ in range(20):
            torch.mm(A, B, out=C)
        torch.cuda.synchronize()
    samples, stop = [], threading.Event()
    th = threading.Thread(target=smi, args=(stop, samples)); th.start()
    ev, start = [], time.time()
    while time.time() - start < a.seconds:
        blk = []
        for _ in range(k):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); torch.mm(A, B, out=C); e.record()
            blk.append((s, e))
        if idle_ms > 0:
            torch.cuda._sleep(int(idle_ms * cycles_per_ms))
        ev.append(blk)
        if len(ev) % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    stop.set(); th.join()
    times = [s.elapsed_time(e) for blk in ev[len(ev) // 2:] for s, e in blk]
    half = samples[len(samples) // 2:] or samples
    rec = {"duty": d, "idle_ms": round(idle_ms, 2), "block_products": k, "n": n,
           "tflops_median": round(flops / (statistics.median(times) * 1e-3) / 1e12, 1),
           "tflops_p10": round(flops / (sorted(times)[int(0.9 * len(times))] * 1e-3) / 1e12, 1),
           "products": len(times),
           "sm_clock_mhz_median": statistics.median([x[0] for x in half]) if half else None,
           "power_w_median": statistics.median([x[1] for x in half]) if half else None,
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "check_rel_err": err}
    line = json.dumps(rec)
    print(line, flush=True)
    if a.out:
        with open(a.out, "a") as f:
            f.write(line + "\n")
