"""Does compute slow down while an NCCL receive is posted and waiting for its peer (issue 19)?

Why: torch 2.11's runtime pipeline schedules (ScheduleInterleaved1F1B, ZBV) post a receive as
soon as the lowered action list reaches it and wait on it only before the consuming chunk, so
the receive's NCCL kernel sits on the GPU, spinning, while the next chunks compute.
ppint16 (bench/results/ppint16_2026-11-28/README.md section 2) found those chunks 1.12-1.22x
slower and proposed that the waiting kernel holds SMs (one CTA per channel). This script is
the controlled test of that proposal.

What it does (2 ranks, torchrun; rank 0 is timed, rank 1 is the peer):
  per window, rank 0 runs a short pre-burst of GEMMs, then (condition b and c) posts an irecv
  from rank 1 the way torch's _batch_p2p does (dist.batch_isend_irecv of one P2POp), whose
  NCCL kernel starts once the pre-burst is done; then a fixed sequence of timed ops on the
  compute stream, each timed with its own CUDA events:
    a  alone: no receive posted;
    b  waiting: rank 1 sends only after a host delay longer than the whole window, so the
       receive kernel is resident and waiting during all timed ops (checked per window);
    c  moving: rank 1 sends a large message at once, so data moves during the timed ops
       (the share of the window it covers is recorded).
  Conditions are interleaved a, b, c per repeat; medians over repeats. One extra window of b
  and of c is profiled with torch.profiler to record the NCCL kernel's grid, block, registers
  and shared memory, and the compute kernels' grids.

Method (/work/.library/device/METHOD.md): bf16 random data; each GEMM checked once against a
float32 product; the received data checked against the sender's (seeded) tensor; warm-up first;
CUDA events; medians. NCCL channel settings come from the environment (set per process by
bench/ncclwait_contention.sh).

Usage: NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node 2 bench/ncclwait_contention.py \
         --label default -o out.jsonl
"""
import argparse
import datetime
import json
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--label", default="default")
p.add_argument("--repeats", type=int, default=15)
p.add_argument("--op-ms", type=float, default=2.0, help="target time of each op's timed train")
p.add_argument("--wait-bytes", type=int, default=4096 * 2560 * 2,
               help="message of condition b: Qwen3-4B activation, 4096 tokens x 2560 x bf16")
p.add_argument("--move-bytes", type=int, default=4 << 30, help="message of condition c")
p.add_argument("-o", "--output", default="ncclwait.jsonl")
args = p.parse_args()

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2, "two ranks"
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
torch.cuda.set_device(dev)
peer = 1 - rank

# Qwen3-4B (hidden 2560, FFN 9728) at 4096 tokens: the chunk shapes of ppint16's rows
GEMMS = {"gemm4096^3": (4096, 4096, 4096), "mlp_up 4096x9728x2560": (4096, 9728, 2560),
         "mlp_down 4096x2560x9728": (4096, 2560, 9728)}
ADD_ELEMS = 64 << 20  # memory-bound: c = a + b on 128 MiB bf16 tensors (384 MiB moved)


def seeded(nbytes, seed):
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    return torch.randn(nbytes // 2, device=dev, dtype=torch.bfloat16, generator=g)


def recv_op(buf):
    return dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, peer)])


def send_op(buf):
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, buf, peer)])


wait_send = seeded(args.wait_bytes, 1) if rank == 1 else None
move_send = seeded(args.move_bytes, 2) if rank == 1 else None
wait_recv = torch.full((args.wait_bytes // 2,), float("nan"), device=dev, dtype=torch.bfloat16)
move_recv = torch.full((args.move_bytes // 2,), float("nan"), device=dev, dtype=torch.bfloat16)

ops = {}
if rank == 0:
    for name, (m, n, k) in GEMMS.items():
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        torch.matmul(a, b, out=c)
        ref = a.float() @ b.float()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, f"GEMM check failed {name}: {err}"
        del ref
        ops[name] = ((lambda a=a, b=b, c=c: torch.matmul(a, b, out=c)), 2.0 * m * n * k, 0)
    x = torch.randn(ADD_ELEMS, device=dev, dtype=torch.bfloat16)
    y = torch.randn(ADD_ELEMS, device=dev, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    torch.add(x, y, out=z)
    assert torch.equal(z[:1024], (x[:1024].float() + y[:1024].float()).to(torch.bfloat16))
    ops["add 64Mi bf16"] = ((lambda: torch.add(x, y, out=z)), 0, 3 * ADD_ELEMS * 2)
    pre_a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    pre_c = torch.empty_like(pre_a)


def pre_burst():
    for _ in range(6):
        torch.matmul(pre_a, pre_a, out=pre_c)


# warm-up and per-op counts (rank 0); one exchange of each message, checked
dist.barrier()  # a collective of all ranks before the first batch_isend_irecv
counts = {}
if rank == 0:
    for name, (fn, _, _) in ops.items():
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            fn()
        e.record()
        torch.cuda.synchronize()
        counts[name] = max(2, round(args.op_ms / (s.elapsed_time(e) / 10)))
for rb, sb in ((wait_recv, wait_send), (move_recv, move_send)):
    for w in (recv_op(rb) if rank == 0 else send_op(sb)):
        w.wait()
    torch.cuda.synchronize()
if rank == 0:
    ok = True
    for rb, seed in ((wait_recv, 1), (move_recv, 2)):
        ok = ok and torch.equal(rb, seeded(rb.numel() * 2, seed))
    assert ok, "received data differ from the sender's"
dist.barrier()

window_ms = len(ops) * args.op_ms + 2.0  # the timed window's planned length; measured below
wt = torch.tensor([window_ms], device=dev)
dist.broadcast(wt, 0)
delay_s = (3.0 * wt.item() + 30.0) / 1000.0  # rank 1's hold-back in b: well past the window


def window(cond):
    """one window; rank 0 returns per-op ms and checks, rank 1 only sends"""
    dist.barrier()
    torch.cuda.synchronize()
    if rank == 1:
        if cond == "b":
            time.sleep(delay_s)
            for w in send_op(wait_send):
                w.wait()
        elif cond == "c":
            for w in send_op(move_send):
                w.wait()
        torch.cuda.synchronize()
        return None
    pre_burst()
    works = recv_op(wait_recv) if cond == "b" else recv_op(move_recv) if cond == "c" else []
    torch.cuda._sleep(200_000)  # ~0.1 ms on the compute stream: lets the receive kernel start first
    t0 = torch.cuda.Event(enable_timing=True)
    t0.record()
    evs = []
    for name, (fn, _, _) in ops.items():
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(counts[name]):
            fn()
        e.record()
        evs.append((name, s, e))
    t1 = torch.cuda.Event(enable_timing=True)
    t1.record()
    for w in works:
        w.wait()
    done = torch.cuda.Event(enable_timing=True)
    done.record()
    torch.cuda.synchronize()
    per = {name: s.elapsed_time(e) / counts[name] for name, s, e in evs}
    return per, t0.elapsed_time(t1), t0.elapsed_time(done)


for cond in "abc":  # warm-up windows
    window(cond)
res = {c: [] for c in "abc"}
for _ in range(args.repeats):
    for cond in "abc":
        r = window(cond)
        if rank == 0:
            res[cond].append(r)

# profiled windows: kernel launch configurations
prof_rows = []
if rank == 0:
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        window("b")
        window("c")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    kern = [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"]
    kern.sort(key=lambda e: e["ts"])
    seen = set()
    for e in kern:
        a = e.get("args", {})
        key = (e["name"][:60], str(a.get("grid")), a.get("stream"))
        if key in seen:
            continue
        seen.add(key)
        prof_rows.append({"name": e["name"][:160], "ts_us": e["ts"], "dur_us": e.get("dur"),
                          "stream": a.get("stream"), "grid": a.get("grid"), "block": a.get("block"),
                          "registers_per_thread": a.get("registers per thread"),
                          "shared_memory": a.get("shared memory"),
                          "blocks_per_sm": a.get("blocks per SM"),
                          "occupancy_pct": a.get("est. achieved occupancy %")})
        if len(prof_rows) > 40:
            break
else:
    window("b")
    window("c")

if rank == 0:
    props = torch.cuda.get_device_properties(dev)
    rows = []
    base = {}
    for cond in "abc":
        for name, (_, flops, nbytes) in ops.items():
            ts = [r[0][name] for r in res[cond]]
            med = statistics.median(ts)
            if cond == "a":
                base[name] = med
            rows.append({"label": args.label, "cond": cond, "op": name, "ms": med,
                         "min_ms": min(ts), "max_ms": max(ts), "vs_alone": med / base[name],
                         "tflops": flops / med / 1e9 if flops else None,
                         "gb_per_s": nbytes / med / 1e6 if nbytes else None, "count": counts[name]})
    win = {c: statistics.median(r[1] for r in res[c]) for c in "abc"}
    recv_end = {c: [r[2] - r[1] for r in res[c]] for c in "bc"}
    meta = {"label": args.label, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "gpu": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda, "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
            "env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
            "args": vars(args), "delay_s": delay_s, "window_ms_median": win,
            # b must have its receive outstanding past the timed window (positive in every repeat)
            "b_recv_done_after_window_ms_min": min(recv_end["b"]),
            # c: how long the transfer went on after the window (positive: it covered the window)
            "c_recv_done_after_window_ms": [min(recv_end["c"]), statistics.median(recv_end["c"])],
            "kernels": prof_rows}
    with open(args.output, "a") as f:
        f.write(json.dumps({"meta": meta, "rows": rows}) + "\n")
    print(f"== {args.label}: windows a/b/c {win['a']:.2f}/{win['b']:.2f}/{win['c']:.2f} ms; "
          f"b recv done >= {meta['b_recv_done_after_window_ms_min']:.1f} ms after window; "
          f"c transfer after window min/med {meta['c_recv_done_after_window_ms'][0]:.1f}/"
          f"{meta['c_recv_done_after_window_ms'][1]:.1f} ms", flush=True)
    for r in rows:
        print(f"{r['label']:8s} {r['cond']} {r['op']:26s} {r['ms']:8.4f} ms  x{r['vs_alone']:.3f}  "
              f"[{r['min_ms']:.4f}, {r['max_ms']:.4f}]", flush=True)
    for k in prof_rows:
        print(f"kernel {k['name'][:70]} grid {k['grid']} block {k['block']} regs "
              f"{k['registers_per_thread']} smem {k['shared_memory']} stream {k['stream']} "
              f"dur {k['dur_us']} us", flush=True)
dist.barrier()
dist.destroy_process_group()
