"""Does compute run slower while an NCCL receive is posted and waiting for its peer? (issue 19)

Why: ppint16 (bench/results/ppint16_2026-11-28/README.md) found that under torch's interleaved
1F1B the pipeline chunks that run while a receive is posted but not yet matched take 1.12-1.22x
as long as the same chunks without one. torch's runtime schedules post receives early and wait
just before the consuming chunk (torch 2.11 torch/distributed/pipelining/schedules.py 2093-2108,
2148). The proposed mechanism: NCCL's p2p kernel is launched when posted, and its CTAs (one per
channel, 32 p2p channels per NVLink peer on 2 x H200) sit on their SMs, spinning, until the
peer's data comes, so the compute launched after it gets the SMs that are left.

What it does (2 ranks, torchrun). Rank 0 runs one of three compute trains (bench/chunk_trains.py)
on the default stream, timed with CUDA events:
  layer  10 Qwen3-4B forward layers at 4096 tokens (QKV, flash SDPA, O, gate-up, SiLU*mul, down),
  fc1    8 Llama-8B FC1 GEMMs 4096 x 28672 x 4096,
  mem    40 element-wise adds of 128 Mi bf16 elements (memory-bound).
Per repeat, in rotated order, modes:
  alone       no NCCL kernel;
  wait        rank 0 posts irecv(21 MB, one Qwen3-4B activation) on a side stream, sleeps 2 ms
              (the NCCL kernel is resident first, as under torch's runtime), then the train; rank
              1 sends only after 1.6 x the train's time + 8 ms, so the receive waits throughout;
  wait_small  the same with a 256 KB receive (NCCL may use fewer channels);
  moving      rank 0 posts a train of 64 MB receives, rank 1 sends them at once, then the train:
              the transfer is moving beside the compute.
Communicators: one process group per NCCL config (ProcessGroupNCCL.Options().config.max_ctas =
2, 8, 16, 32, or NCCL's default); NCCL's maxCTAs caps nChannels and thus p2pnChannels
(NCCL v2.28.9-1 src/graph/connect.cc 487-490, src/graph/paths.cc 860-886). Environment
variables (NCCL_MAX_NCHANNELS, NCCL_MAX_P2P_NCHANNELS, ...) apply to every group of the process:
the caller sets them per run (--configs default).

Method (METHOD.md): bf16 random data; the GEMM, the SDPA (against the math backend) and every
received buffer (NaN-poisoned before each receive) are checked; warm-up; CUDA events; median of
--repeats. A torch.profiler pass per config on rank 0 records the grid, block, registers and
shared memory of the NCCL kernel and of the compute kernels (the CTA count the waiting kernel
holds). Rank 0's times are reported (rank 1 only sends).

Usage: NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node 2 bench/p2p_wait_contention.py -o out.json
"""
import argparse
import datetime
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

import chunk_trains

p = argparse.ArgumentParser()
p.add_argument("--configs", default="default,32,16,8,2",
               help="max_ctas per process group ('default': NCCL's own)")
p.add_argument("--workloads", default="layer,fc1,mem")
p.add_argument("--modes", default="alone,wait,wait_small,moving")
p.add_argument("--repeats", type=int, default=9)
p.add_argument("--label", default="main")
p.add_argument("--no-profile", action="store_true")
p.add_argument("-o", "--output", default="p2p_wait.json")
args = p.parse_args()

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2, "two ranks"
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
torch.cuda.set_device(dev)
ctl = dist.new_group(backend="gloo")
side = torch.cuda.Stream(device=dev)
BF = torch.bfloat16

BIG = 4096 * 2560          # one Qwen3-4B activation at 4096 tokens: 21 MB bf16
SMALL = 128 * 1024         # 256 KB
XFER = 32 * 1024 * 1024    # 64 MB per moving receive


def log(*a):
    if rank == 0:
        print(*a, flush=True)


def ev():
    return torch.cuda.Event(enable_timing=True)


def seeded(n, seed):
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    return torch.randn(n, device=dev, dtype=BF, generator=g)


MAKERS = {k: (lambda f=f: f(dev)) for k, f in chunk_trains.MAKERS.items()}

# ---- buffers: rank 1 sends seeded data, rank 0 knows what to expect ----
send_big, send_small, send_x = seeded(BIG, 11), seeded(SMALL, 12), seeded(XFER, 13)
recv_big = torch.empty(BIG, device=dev, dtype=BF)
recv_small = torch.empty(SMALL, device=dev, dtype=BF)
recv_x = torch.empty(XFER, device=dev, dtype=BF)
recv_fail = 0


def timed_train(train):
    s, e = ev(), ev()
    s.record()
    train()
    e.record()
    return s, e


def rep(mode, train, grp, t_c_ms, kx):
    """one repeat of one mode; returns rank 0's record (rank 1: None)"""
    global recv_fail
    dist.barrier(group=ctl)
    torch.cuda.synchronize()
    if rank == 1:
        if mode in ("wait", "wait_small"):
            time.sleep((1.6 * t_c_ms + 8.0) / 1e3)
            w = dist.isend(send_big if mode == "wait" else send_small, 0, group=grp)
            w.wait()
        elif mode in ("moving", "xfer_alone"):
            ws = [dist.isend(send_x, 0, group=grp) for _ in range(kx)]
            for w in ws:
                w.wait()
        torch.cuda.synchronize()
        return None
    if mode == "alone":
        s, e = timed_train(train)
        torch.cuda.synchronize()
        return {"compute_ms": s.elapsed_time(e)}
    if mode in ("wait", "wait_small"):
        buf, ref = (recv_big, send_big) if mode == "wait" else (recv_small, send_small)
        buf.fill_(float("nan"))
        torch.cuda.synchronize()
        r0, r1 = ev(), ev()
        with torch.cuda.stream(side):
            r0.record(side)
            w = dist.irecv(buf, 1, group=grp)
        time.sleep(0.002)
        s, e = timed_train(train)
        with torch.cuda.stream(side):
            w.wait()
            r1.record(side)
        torch.cuda.synchronize()
        if not torch.equal(buf, ref):
            recv_fail += 1
        return {"compute_ms": s.elapsed_time(e), "recv_end_after_compute_ms": e.elapsed_time(r1),
                "recv_posted_before_compute_ms": r0.elapsed_time(s)}
    # moving / xfer_alone: a train of kx receives on the side stream
    recv_x.fill_(float("nan"))
    torch.cuda.synchronize()
    r0, r1 = ev(), ev()
    with torch.cuda.stream(side):
        r0.record(side)
        ws = [dist.irecv(recv_x, 1, group=grp) for _ in range(kx)]
    rec = {}
    if mode == "moving":
        s, e = timed_train(train)
    with torch.cuda.stream(side):
        for w in ws:
            w.wait()
        r1.record(side)
    torch.cuda.synchronize()
    if not torch.equal(recv_x, send_x):
        recv_fail += 1
    rec["xfer_ms"] = r0.elapsed_time(r1)
    if mode == "moving":
        rec["compute_ms"] = s.elapsed_time(e)
        rec["xfer_end_after_compute_ms"] = e.elapsed_time(r1)
    return rec


def bcast(x):
    o = [x]
    dist.broadcast_object_list(o, src=0, group=ctl)
    return o[0]


def profile_kernels(fn):
    """run fn under torch.profiler on rank 0; kernels aggregated by name with their launch shape"""
    from torch.profiler import profile, ProfilerActivity
    if rank != 0:
        fn()
        return None
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
    kern = {}
    spans = {"nccl": [], "compute": []}
    for e in chunk_trains.kernel_events(prof):
        a = e.get("args", {})
        name = e.get("name", "")
        key = name[:90]
        d = kern.setdefault(key, {"count": 0, "dur_us": 0.0, "grid": a.get("grid"), "block": a.get("block"),
                                  "regs": a.get("registers per thread"), "smem": a.get("shared memory"),
                                  "blocks_per_sm": a.get("blocks per SM"), "warps_per_sm": a.get("warps per SM"),
                                  "occupancy": a.get("est. achieved occupancy %")})
        d["count"] += 1
        d["dur_us"] += float(e.get("dur", 0))
        span = (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
        spans["nccl" if "nccl" in name.lower() else "compute"].append(span)
    info = {"kernels": kern}
    if spans["nccl"] and spans["compute"]:
        c0 = min(s[0] for s in spans["compute"])
        c1 = max(s[1] for s in spans["compute"])
        info["compute_span_us"] = c1 - c0
        info["nccl_spans_rel_us"] = [(round(a - c0, 1), round(b - c0, 1)) for a, b in spans["nccl"]][:8]
    return info


results = {"rows": [], "profiles": {}, "checks": {}}
sms = torch.cuda.get_device_properties(dev).multi_processor_count
trains = {}
for wl in args.workloads.split(","):
    train, check = MAKERS[wl]()
    err = check()
    results["checks"][wl] = err
    log(f"check {wl}: rel err {err:.2e}")
    assert err < 1e-2, f"{wl} check failed: {err}"
    for _ in range(3):
        train()
    torch.cuda.synchronize()
    trains[wl] = train

modes = args.modes.split(",")
for cfg in args.configs.split(","):
    t_cfg = time.time()
    try:
        opts = dist.ProcessGroupNCCL.Options()
        if cfg != "default":
            opts.config.max_ctas = int(cfg)
        grp = dist.new_group([0, 1], backend="nccl", pg_options=opts)
        # warm-up: create the p2p communicator, check every buffer once
        for mode, kx in (("wait_small", 1), ("wait", 1), ("xfer_alone", 2)):
            rep(mode, lambda: None, grp, 1.0, kx)
        xs = [rep("xfer_alone", None, grp, 0, 4) for _ in range(3)]  # every rank calls rep
        t_x = bcast(statistics.median(r["xfer_ms"] for r in xs) / 4 if rank == 0 else 0)
        prof_done = False
        for wl, train in trains.items():
            ws_alone = [rep("alone", train, grp, 0, 0) for _ in range(3)]  # every rank calls rep
            t_c = bcast(statistics.median(r["compute_ms"] for r in ws_alone) if rank == 0 else 0)
            kx = max(2, int(round(1.2 * t_c / t_x)))
            recs = {m: [] for m in modes}
            for i in range(args.repeats):
                order = modes[i % len(modes):] + modes[:i % len(modes)]
                for m in order:
                    r = rep(m, train, grp, t_c, kx)
                    if rank == 0:
                        recs[m].append(r)
            if rank == 0:
                base = statistics.median(r["compute_ms"] for r in recs["alone"]) if "alone" in recs else float("nan")
                for m, rs in recs.items():
                    row = {"label": args.label, "config": cfg, "workload": wl, "mode": m, "n": len(rs),
                           "xfer_alone_ms_per_64MB": t_x, "moving_receives": kx if m == "moving" else 0}
                    for key in rs[0]:
                        vals = [r[key] for r in rs]
                        row[key] = statistics.median(vals)
                        row[key + "_min"], row[key + "_max"] = min(vals), max(vals)
                    row["slowdown"] = row["compute_ms"] / base if "compute_ms" in row else None
                    results["rows"].append(row)
                    extra = ""
                    if "recv_end_after_compute_ms" in row:
                        extra = f" recv ends {row['recv_end_after_compute_ms_min']:.1f} ms after (min)"
                    if "xfer_ms" in row:
                        extra = f" xfer {row['xfer_ms']:.2f} ms ({kx} x 64MB; alone {t_x * kx:.2f}),"\
                                f" ends {row['xfer_end_after_compute_ms']:+.2f} ms after compute"
                    log(f"{args.label:8s} cfg={cfg:7s} {wl:5s} {m:10s} {row['compute_ms']:8.3f} ms "
                        f"[{row['compute_ms_min']:.3f}-{row['compute_ms_max']:.3f}] x{row['slowdown']:.3f}{extra}")
            if not args.no_profile and not prof_done and wl == "fc1":
                prof = {}
                for m in ("wait", "wait_small", "moving"):
                    if m in modes:
                        prof[m] = profile_kernels(lambda: rep(m, train, grp, t_c, kx))
                if rank == 0:
                    results["profiles"][cfg] = prof
                    for m, info in prof.items():
                        for name, d in info["kernels"].items():
                            if "nccl" in name.lower() or d["dur_us"] == max(
                                    x["dur_us"] for x in info["kernels"].values()):
                                log(f"  profile cfg={cfg} {m}: {name[:60]} grid={d['grid']} block={d['block']} "
                                    f"regs={d['regs']} smem={d['smem']} count={d['count']}")
                prof_done = True
    except Exception as exc:  # keep the other configs' numbers
        log(f"config {cfg} failed: {exc!r}")
        results.setdefault("errors", []).append(f"{cfg}: {exc!r}")
    log(f"config {cfg}: {time.time() - t_cfg:.1f} s")

if rank == 0:
    results["meta"] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "gpu": torch.cuda.get_device_name(dev), "sms": sms,
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
        "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_") or k.startswith("TORCH_NCCL")},
        "argv": vars(args), "recv_check_failures": recv_fail}
    log(f"receive check failures: {recv_fail}")
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, args.output)
dist.destroy_process_group()
