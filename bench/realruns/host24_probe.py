#!/usr/bin/env python3
"""What the host spends per launch in a Hugging Face FSDP2 step on one GPU, at the real shape and
at seq 64, in one fresh process (issue 14; helper host24, bench/results/host24_2026-11-29).

plan's host.eager_launch_s (h200: 49.6 us a kernel) is a seq-64 step's host time over its kernels
(launch_overhead.py); real-shape records spend less per launch. This probe times, for one model in a
fresh process (realrun.py's build: fsdp2_model.py, fp32 params, bf16 compute, fully_shard per layer
and root, AdamW, clip 1.0, labels = inputs), three modes of the same step:

  real        the run's shape (SEQ, MBS): warm-up 2, --steps timed
  floor       seq 64, mbs 1 (GPU work negligible; the GPU idles between launches)
  floor_busy  seq 64, mbs 1, with a torch.cuda._sleep kernel queued first, long enough that the
              GPU is still busy when the host ends the backward: the host never finds the GPU idle
  real2       the real shape again, 3 steps (drift within the process)

Per step and pass (forward call, backward call): the host's wall time of the call; the process's
CPU time over it (user, system: getrusage), its minor page faults and voluntary / involuntary
context switches; Python's garbage collector's time inside it (gc.callbacks); and per decoder layer
the host clock at the layer's forward pre-hook (before FSDP2's) and when its input's gradient is
computed (the backward), with a CUDA event recorded at the forward mark (when the GPU reached the
layer, aligned on an event recorded right after a synchronize at the step's start): whether the
host was ahead of the GPU there. Launch counts per pass: one forward and one backward profiled on
their own (torch.profiler, CUDA activity only: kernels, copies and fills on the device).
The lease's host speed: launch_overhead.py's chain of 2000 tiny autograd ops, at start and end.
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/host24_probe.py --out FILE.json \
           --model llama-3.2-1b --seq 2048 --mbs 2 [--attn eager] [--steps 6]
"""
import argparse
import datetime
import gc
import json
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--seq", type=int, required=True)
ap.add_argument("--mbs", type=int, required=True)
ap.add_argument("--attn", default="sdpa")
ap.add_argument("--steps", type=int, default=6)
ap.add_argument("--port", default="29541")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", args.port), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
T0 = time.time()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
       "command": "python3 " + " ".join(sys.argv), "cpu_count": os.cpu_count(),
       "python": sys.version.split()[0], "model": args.model, "seq": args.seq, "mbs": args.mbs,
       "attn": args.attn}
try:
    import transformers
    out["transformers"] = transformers.__version__
except Exception:
    pass
try:
    with open("/proc/cpuinfo") as f:
        lines = f.read().splitlines()
    out["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name"))
    mhz = [float(ln.split(":", 1)[1]) for ln in lines if ln.startswith("cpu MHz")]
    out["cpu_mhz"] = [min(mhz), statistics.median(mhz), max(mhz)] if mhz else None
    out["loadavg"] = open("/proc/loadavg").read().split()[:3]
except Exception:
    pass


def save():
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


# the lease's host speed (launch_overhead.py's chain)
N = 2000
x1 = torch.ones(1, device=dev, dtype=torch.bfloat16, requires_grad=True)


def tiny_speed():
    def chain():
        y = x1
        for _ in range(N):
            y = y * 1.0001
        return y.sum()
    chain().backward()
    f, b = [], []
    for _ in range(5):
        torch.cuda.synchronize()
        t = time.perf_counter()
        hold = chain()
        torch.cuda.synchronize()
        f.append(time.perf_counter() - t)
        t = time.perf_counter()
        hold.backward()
        torch.cuda.synchronize()
        b.append(time.perf_counter() - t)
    return {"tiny_fwd_op_us": statistics.median(f) / N * 1e6, "tiny_bwd_op_us": statistics.median(b) / N * 1e6}


out["speed_start"] = tiny_speed()
dist.init_process_group("nccl", device_id=dev)

# Python's collector: time spent in collections, by generation
GC = {"on": False, "t": 0.0, "n": [0, 0, 0], "t0": 0.0}


def gc_cb(phase, info):
    if not GC["on"]:
        return
    if phase == "start":
        GC["t0"] = time.perf_counter()
    else:
        GC["t"] += time.perf_counter() - GC["t0"]
        GC["n"][info.get("generation", 0)] += 1


gc.callbacks.append(gc_cb)

model, V, ei = build_fsdp2_model(args.model, dev, 0, attn=args.attn)
out["params"] = sum(p.numel() for p in model.parameters())
opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
layers = [m for n, m in model.named_modules() if n.endswith("layers")][0]
L = len(layers)
out["layers"] = L

# layer marks: host clock at each layer's forward pre-hook (before FSDP2's), a CUDA event there,
# and the host clock when the layer input's gradient is computed (end of that layer's backward)
MK = {"on": False, "fwd": [None] * L, "bwd": [None] * L, "ev": [None] * L}
EVP = [torch.cuda.Event(enable_timing=True) for _ in range(L)]


def make_pre(i):
    def pre(mod, a, kw):
        if not MK["on"]:
            return None
        MK["fwd"][i] = time.perf_counter()
        EVP[i].record()
        MK["ev"][i] = True
        h = a[0] if a else kw.get("hidden_states")
        if isinstance(h, torch.Tensor) and h.requires_grad:
            def gh(g, i=i):
                MK["bwd"][i] = time.perf_counter()
            h.register_hook(gh)
        return None
    return pre


for i, lay in enumerate(layers):
    lay.register_forward_pre_hook(make_pre(i), with_kwargs=True, prepend=True)

g = torch.Generator(device=dev).manual_seed(1234)
real_inp = torch.randint(0, V, (args.mbs, args.seq), device=dev, generator=g)
small_inp = torch.randint(0, V, (1, 64), device=dev, generator=g)
ev0 = [torch.cuda.Event(enable_timing=True) for _ in range(3)]


def ru():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (time.perf_counter(), r.ru_utime, r.ru_stime, r.ru_minflt, r.ru_nvcsw, r.ru_nivcsw,
            GC["t"], sum(GC["n"]), time.thread_time())


def diff(a, b):
    return {"wall_ms": (b[0] - a[0]) * 1e3, "user_ms": (b[1] - a[1]) * 1e3, "sys_ms": (b[2] - a[2]) * 1e3,
            "minflt": b[3] - a[3], "vcsw": b[4] - a[4], "ivcsw": b[5] - a[5],
            "gc_ms": (b[6] - a[6]) * 1e3, "gc_n": b[7] - a[7], "main_thread_cpu_ms": (b[8] - a[8]) * 1e3}


def step(inp, sleep_cycles=0, rec=False):
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    MK["on"] = rec
    MK["fwd"], MK["bwd"], MK["ev"] = [None] * L, [None] * L, [None] * L
    t_sync = time.perf_counter()
    ev0[0].record()  # the GPU reaches it at ~t_sync (idle GPU)
    if sleep_cycles:
        torch.cuda._sleep(sleep_cycles)
    GC["on"] = True
    a = ru()
    loss = model(input_ids=inp, labels=inp).loss
    b = ru()
    ev0[1].record()
    loss.backward()
    c = ru()
    ev0[2].record()
    GC["on"] = False
    MK["on"] = False
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    torch.cuda.synchronize()
    t_end = time.perf_counter()
    if not rec:
        return None
    r = {"fwd": diff(a, b), "bwd": diff(b, c), "step_ms": (t_end - t_sync) * 1e3,
         "fwd_gpu_ms": ev0[0].elapsed_time(ev0[1]), "bwd_gpu_ms": ev0[1].elapsed_time(ev0[2])}
    f, bw = MK["fwd"], MK["bwd"]
    if all(v is not None for v in f):
        r["layer_fwd_host_ms"] = [(f[i + 1] - f[i]) * 1e3 for i in range(L - 1)]
        # host lead at each layer's forward mark: GPU reaching the event minus the host's mark
        r["layer_fwd_lead_ms"] = [(t_sync + ev0[0].elapsed_time(EVP[i]) / 1e3 - f[i]) * 1e3
                                  for i in range(L)]
        r["pre_layers_fwd_ms"] = (f[0] - a[0]) * 1e3
        r["post_layers_fwd_ms"] = (b[0] - f[L - 1]) * 1e3  # last layer + norm + head + loss
    if all(v is not None for v in bw):
        # bwd[i] = when layer i's input gradient exists; layer i's backward ~ bwd[i+1] -> bwd[i]
        r["layer_bwd_host_ms"] = [(bw[i] - bw[i + 1]) * 1e3 for i in range(L - 1)]
        r["head_bwd_ms"] = (bw[L - 1] - b[0]) * 1e3  # loss, head, norm and the last layer
        r["post_layers_bwd_ms"] = (c[0] - bw[0]) * 1e3  # embedding, root post-backward
    return r


def summarize(recs):
    s = {"steps": len(recs), "step_ms": [round(r["step_ms"], 3) for r in recs],
         "step_ms_median": med(r["step_ms"] for r in recs),
         "fwd_gpu_ms": med(r["fwd_gpu_ms"] for r in recs), "bwd_gpu_ms": med(r["bwd_gpu_ms"] for r in recs)}
    for p in ("fwd", "bwd"):
        s[p] = {k: med(r[p][k] for r in recs) for k in recs[0][p]}
    for k in ("layer_fwd_host_ms", "layer_bwd_host_ms", "layer_fwd_lead_ms"):
        if all(k in r for r in recs):
            per_layer = [med(r[k][i] for r in recs) for i in range(len(recs[0][k]))]
            s[k + "_median"] = med(per_layer)
            s[k] = [round(v, 4) for v in per_layer]
    for k in ("pre_layers_fwd_ms", "post_layers_fwd_ms", "head_bwd_ms", "post_layers_bwd_ms"):
        if all(k in r for r in recs):
            s[k] = med(r[k] for r in recs)
    return s


LAUNCH = ("cudaLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernel",
          "cudaMemcpyAsync", "cudaMemsetAsync")


def count_launches(inp):
    """device activities (kernels, memcpy, memset) of one forward and of one backward"""
    res = {}
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p1:
        loss = model(input_ids=inp, labels=inp).loss
        torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p2:
        loss.backward()
        torch.cuda.synchronize()
    for name, p in (("fwd", p1), ("bwd", p2)):
        tp = args.out + ".trace.json"
        p.export_chrome_trace(tp)
        with open(tp) as f:
            evs = json.load(f)["traceEvents"]
        os.remove(tp)
        kinds = {}
        for e in evs:
            c = e.get("cat", "")
            if c in ("kernel", "gpu_memcpy", "gpu_memset"):
                kinds[c] = kinds.get(c, 0) + 1
            elif c == "cuda_runtime" and e.get("name", "") in LAUNCH:
                kinds["rt:" + e["name"]] = kinds.get("rt:" + e["name"], 0) + 1
        res[name] = sum(v for k, v in kinds.items() if not k.startswith("rt:"))
        res[name + "_kinds"] = kinds
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return res


def run_mode(name, inp, n, sleep_cycles=0):
    try:
        for _ in range(2):
            step(inp, sleep_cycles)
        recs = [step(inp, sleep_cycles, rec=True) for _ in range(n)]
        out[name] = summarize(recs)
        if sleep_cycles:
            out[name]["sleep_cycles"] = sleep_cycles
    except Exception as e:  # noqa: BLE001
        out[name] = {"error": repr(e)[:300]}
    out[name]["t_s"] = round(time.time() - T0, 1)
    save()
    print(name, json.dumps({k: v for k, v in out[name].items() if not k.startswith("layer_")}), flush=True)


run_mode("real", real_inp, args.steps)
run_mode("floor", small_inp, 7)
# the sleep: 1.5 x the floor's host call, in cycles at the clock torch.cuda._sleep spins on
# (calibrated here: one 1e8-cycle sleep timed with events)
try:
    e1, e2 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e1.record()
    torch.cuda._sleep(100_000_000)
    e2.record()
    torch.cuda.synchronize()
    cyc_per_ms = 1e8 / e1.elapsed_time(e2)
    host_ms = out["floor"]["fwd"]["wall_ms"] + out["floor"]["bwd"]["wall_ms"]
    out["sleep_cycles_per_ms"] = cyc_per_ms
    run_mode("floor_busy", small_inp, 7, int(1.5 * host_ms * cyc_per_ms))
except Exception as e:  # noqa: BLE001
    out["floor_busy"] = {"error": repr(e)[:300]}
run_mode("real2", real_inp, 3)
try:
    out["launches_real"] = count_launches(real_inp)
    out["launches_floor"] = count_launches(small_inp)
except Exception as e:  # noqa: BLE001
    out["launches_error"] = repr(e)[:300]
out["speed_end"] = tiny_speed()
out["wall_s"] = round(time.time() - T0, 1)
save()
print("done", args.model, out["wall_s"], flush=True)
dist.destroy_process_group()
