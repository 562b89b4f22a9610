"""Is the slowdown of compute beside a waiting NCCL receive the SMs its kernel holds? (issue 19)

Why: bench/p2p_wait_contention.py measured pipeline-chunk compute 1.12-1.33x slower while an
NCCL p2p receive waits for its peer (ncclDevKernel_SendRecv resident, 16 CTAs of 640 threads,
96 registers and 103,808 B of shared memory each, on 2 x H200), with a floor of 1.04-1.18x at
1-2 CTAs that the SM fraction (132 / (132 - CTAs)) does not give. This script holds k SMs with
a kernel of its own that does nothing but spin (the same block size and shared memory as NCCL's,
so a cuBLAS or flash-attention CTA cannot share its SM), with no NCCL at all, and times the same
compute trains (bench/chunk_trains.py) beside it. If the slowdowns match the NCCL ones at the
same CTA count, the cost is the SMs held (and how the compute kernels' waves fit the SMs left);
if not, it is something NCCL does while it waits.

Per k in --ctas (0 = alone) and per train: median of --repeats, CUDA events, the spin kernel
launched first on a side stream and sleeping 2 ms on the host before the train is enqueued (as
p2p_wait_contention's 'wait'), spinning for 2.2 x the train's time + 8 ms (cycles at 1.98 GHz). A torch.profiler pass
of the layer train alone and beside k = 2 and 16 gives every kernel's time and launch shape.

Usage: python3 bench/sm_hold_contention.py -o out.json   (one GPU)
"""
import argparse
import datetime
import json
import os
import statistics
import time

import cupy
import torch

import chunk_trains

p = argparse.ArgumentParser()
p.add_argument("--ctas", default="0,1,2,4,8,16,32,64")
p.add_argument("--workloads", default="layer,fc1,mem")
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--profile-ctas", default="2,16")
p.add_argument("-o", "--output", default="sm_hold.json")
args = p.parse_args()

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
side = torch.cuda.Stream(device=dev)
SMEM = 103808  # ncclDevKernel_SendRecv's shared memory (torch.profiler, p2p_wait_contention)
spin = cupy.RawKernel(r'''
extern "C" __global__ void __launch_bounds__(640, 1) spin(long long cycles, int *out) {
    extern __shared__ int smem[];
    long long t0 = clock64();
    smem[threadIdx.x] = threadIdx.x;
    while (clock64() - t0 < cycles) { }
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = smem[(threadIdx.x + 1) % 640] + 1;
}''', "spin")
spin.max_dynamic_shared_size_bytes = SMEM
flags = cupy.zeros(256, dtype=cupy.int32)
spin((1,), (640,), (cupy.int64(1000), flags), shared_mem=SMEM)  # compile and load it now
cupy.cuda.Device().synchronize()
sms = torch.cuda.get_device_properties(dev).multi_processor_count


def ev():
    return torch.cuda.Event(enable_timing=True)


def rep(train, k, t_c_ms):
    torch.cuda.synchronize()
    s0, s1 = ev(), ev()
    if k > 0:
        with torch.cuda.stream(side):
            s0.record(side)
            with cupy.cuda.ExternalStream(side.cuda_stream):
                spin((k,), (640,), (cupy.int64(int((2.2 * t_c_ms + 8.0) * 1e-3 * 1.98e9)), flags),
                     shared_mem=SMEM)
            s1.record(side)
        time.sleep(0.002)
    s, e = ev(), ev()
    s.record()
    train()
    e.record()
    torch.cuda.synchronize()
    r = {"compute_ms": s.elapsed_time(e)}
    if k > 0:
        r["spin_end_after_compute_ms"] = e.elapsed_time(s1)
    return r


def profile_kernels(fn):
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
    kern = {}
    for e in chunk_trains.kernel_events(prof):
        a = e.get("args", {})
        d = kern.setdefault(e.get("name", "")[:100], {"count": 0, "dur_us": 0.0, "grid": a.get("grid"),
                                                      "block": a.get("block"), "regs": a.get("registers per thread"),
                                                      "smem": a.get("shared memory")})
        d["count"] += 1
        d["dur_us"] += float(e.get("dur", 0))
    return kern


out = {"rows": [], "profiles": {}, "checks": {}}
for wl in args.workloads.split(","):
    train, check = chunk_trains.MAKERS[wl](dev)
    err = check()
    out["checks"][wl] = err
    assert err < 1e-2, f"{wl} check failed: {err}"
    for _ in range(3):
        train()
    torch.cuda.synchronize()
    t_c = statistics.median(rep(train, 0, 0)["compute_ms"] for _ in range(3))
    ks = [int(x) for x in args.ctas.split(",")]
    recs = {k: [] for k in ks}
    for i in range(args.repeats):
        for k in ks[i % len(ks):] + ks[:i % len(ks)]:
            recs[k].append(rep(train, k, t_c))
    base = statistics.median(r["compute_ms"] for r in recs[0])
    for k in ks:
        v = [r["compute_ms"] for r in recs[k]]
        row = {"workload": wl, "ctas": k, "compute_ms": statistics.median(v), "min": min(v), "max": max(v),
               "slowdown": statistics.median(v) / base, "sm_fraction_slowdown": sms / (sms - k)}
        if k > 0:
            row["spin_end_after_compute_ms_min"] = min(r["spin_end_after_compute_ms"] for r in recs[k])
        out["rows"].append(row)
        print(f"{wl:5s} ctas={k:3d} {row['compute_ms']:8.3f} ms [{row['min']:.3f}-{row['max']:.3f}] "
              f"x{row['slowdown']:.3f} (SM fraction x{row['sm_fraction_slowdown']:.3f})"
              + (f" spin ends {row['spin_end_after_compute_ms_min']:.1f} ms after (min)" if k else ""), flush=True)
    if wl == "layer":
        for k in [0] + [int(x) for x in args.profile_ctas.split(",")]:
            out["profiles"][str(k)] = profile_kernels(lambda: rep(train, k, t_c))
        base_k = out["profiles"]["0"]
        for name, d in sorted(base_k.items(), key=lambda x: -x[1]["dur_us"]):
            cols = " ".join(f"k{k}:{out['profiles'][k].get(name, {}).get('dur_us', 0) / max(d['dur_us'], 1e-9):.3f}"
                            for k in out["profiles"] if k != "0")
            print(f"  {d['dur_us'] / d['count']:8.1f} us x{d['count']:3d} grid={d['grid']} block={d['block']} "
                  f"smem={d['smem']} {cols} {name[:60]}", flush=True)

out["meta"] = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
               "gpu": torch.cuda.get_device_name(dev), "sms": sms, "torch": torch.__version__,
               "cuda": torch.version.cuda, "cupy": cupy.__version__, "argv": vars(args),
               "spin_clock_assumed_hz": 1.98e9}
tmp = args.output + ".tmp"
with open(tmp, "w") as f:
    json.dump(out, f, indent=1)
os.replace(tmp, args.output)
