#!/usr/bin/env python3
"""Where one real Hugging Face FSDP2 step spends its time, phase by phase (issue 14's outliers:
small models predicted too fast). step_profile.py sums kernel time over a whole step; this splits
the step into its phases (forward with the loss, backward, clip_grad_norm_, optimizer step,
zero_grad) with a CUDA synchronize after each, so each phase's wall time can be set beside the
GPU time its kernels took: wall - GPU busy = time the GPU waited for the host.

Per run spec name:seq:mbs[:layers]:
  step_s        median wall of 3 whole steps (no sync inside), as realrun.py times them
  phase_wall_s  median wall per phase over 3 steps with a sync after each phase (unprofiled)
  phases        one profiled step (CPU + CUDA activities, a record_function range per phase):
                per phase the kernel count, kernel time by class, GPU busy (union of kernel
                intervals) and the 12 kernels with most time (name, s, count)
The model is built as realrun.py --impl hf builds it (transformers from config, fp32 params, SDPA,
fully_shard per decoder layer + root, bf16/fp32 mixed precision, torch's default AdamW, clip 1.0).
  fwd_bwd_gpu_s / fwd_bwd_host_call_s  per timed step, as realrun.py records them: CUDA events
                around forward + backward, and the host's time in that call
Spec name:seq:mbs[:layers[:ckpt]]: layers 0 = the whole model; ckpt = gradient checkpointing of
every layer (realrun.py --ckpt). --trace-dir DIR: the profiled step's Chrome trace, gzipped, as
DIR/trace_<name>[_L<layers>]_s<seq>_b<mbs>.json.gz (bench/realruns/trace_summary.py reads it).
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/phase_profile.py --out out/phases.json
           --runs smollm2-360m:2048:8,llama-3.2-1b:4096:1,phi-3-mini-4k:4096:2:16
"""
import argparse
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", default="")
ap.add_argument("--top", type=int, default=12, help="kernels kept per phase (fwdbwd14 used 80)")
ap.add_argument("--runs", default="smollm2-360m:2048:8,llama-3.2-1b:4096:1")
ap.add_argument("--streams", action="store_true",
                help="also split each phase's kernels by CUDA stream (from the profiler's trace)")
ap.add_argument("--trace-dir", default="", help="write each profiled step's Chrome trace (gzip) here")
ap.add_argument("--power", action="store_true",
                help="NVML SM clock and power over the timed steps and per phase (nvml_sampler.py)")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29530"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.autograd.profiler import record_function  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
PHASES = ("fwd", "bwd", "clip", "opt", "zero")


def build(name, layers=0, ckpt=False):
    """fsdp2_model.build_fsdp2_model on this script's device"""
    return build_fsdp2_model(name, dev, layers, ckpt)[:2]


def cls(name):
    n = name.lower()
    if "nccl" in n:
        return "nccl"
    if "memcpy" in n or "memset" in n:
        return "memcpy"
    if "sdpa" in n or "fmha" in n or "flash" in n or "cudnn" in n:
        return "attention"
    if "nvjet" in n or "gemm" in n or "cublas" in n or "cutlass" in n or "splitk" in n:
        return "gemm"
    if "multi_tensor" in n or "foreach" in n:
        return "optimizer"
    return "elementwise"


def union_s(iv):
    iv.sort()
    busy, cs, ce = 0.0, None, None
    for s, e in iv:
        if ce is None or s > ce:
            if ce is not None:
                busy += ce - cs
            cs, ce = s, e
        else:
            ce = max(ce, e)
    if ce is not None:
        busy += ce - cs
    return busy * 1e-6


def stream_split(prof, rng):
    """Per phase and CUDA stream: kernel time by class, busy time and the top kernels, from the
    profiler's Chrome trace (its kernel events carry args.stream; the FunctionEvents do not
    reliably). Kernels are put in the phase whose host range holds their start, as above."""
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        tr = json.load(f)
    os.unlink(path)
    evs = tr["traceEvents"] if isinstance(tr, dict) else tr
    # the trace's timestamps are in us on the same base as the FunctionEvents' time ranges
    ph = {}
    for e in evs:
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("phase_") \
                and e.get("cat") in ("user_annotation", "cpu_op"):
            ph.setdefault(e["name"][6:], (e["ts"], e["ts"] + e["dur"]))
    out = {}
    for p in PHASES:
        s0, e0 = ph.get(p, (0, 0))
        by = {}
        for e in evs:
            if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
                continue
            if not s0 <= e["ts"] < e0:
                continue
            st = str(e.get("args", {}).get("stream", "?"))
            d = by.setdefault(st, {"kernels": 0, "kernel_s_by_class": {}, "iv": [], "top": {}})
            c = cls(e["name"])
            d["kernels"] += 1
            d["kernel_s_by_class"][c] = d["kernel_s_by_class"].get(c, 0.0) + e["dur"] * 1e-6
            d["iv"].append((e["ts"], e["ts"] + e["dur"]))
            k = e["name"][:110]
            t, n = d["top"].get(k, (0.0, 0))
            d["top"][k] = (t + e["dur"] * 1e-6, n + 1)
        for st, d in by.items():
            d["busy_s"] = union_s(d.pop("iv"))
            d["top"] = [[k, round(t, 6), n] for k, (t, n) in
                        sorted(d["top"].items(), key=lambda kv: -kv[1][0])[:args.top]]
        out[p] = by
    return out


out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev), "runs": []}
for spec in args.runs.split(","):
    name, seq, mbs, *cut = spec.split(":")
    seq, mbs = int(seq), int(mbs)
    ckpt = len(cut) > 1 and cut[1] == "ckpt"
    model, V = build(name, int(cut[0]) if cut else 0, ckpt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator(device=dev).manual_seed(0)
    ids = torch.randint(0, V, (mbs, seq + 1), device=dev, generator=g)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    box = {}

    def ph_fwd():
        box["loss"] = model(input_ids=inp, labels=lab).loss

    def ph_bwd():
        box.pop("loss").backward()

    fns = {"fwd": ph_fwd, "bwd": ph_bwd,
           "clip": lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0),
           "opt": opt.step, "zero": lambda: opt.zero_grad(set_to_none=True)}

    def step(sync_phases=False, ranges=False):
        w = {}
        for p in PHASES:
            t = time.perf_counter()
            if ranges:
                with record_function("phase_" + p):
                    fns[p]()
                    torch.cuda.synchronize()
            else:
                fns[p]()
                if sync_phases:
                    torch.cuda.synchronize()
            w[p] = time.perf_counter() - t
        return w

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    ts, fb_gpu, fb_host = [], [], []
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for _ in range(3):  # realrun.py's step: events around forward + backward
        torch.cuda.synchronize()
        opt.zero_grad(set_to_none=True)
        ev[0].record()
        h = time.perf_counter()
        model(input_ids=inp, labels=lab).loss.backward()
        fb_host.append(time.perf_counter() - h)
        ev[1].record()
        fns["clip"]()
        opt.step()
        torch.cuda.synchronize()
        fb_gpu.append(ev[0].elapsed_time(ev[1]) * 1e-3)
    samp = None
    if args.power:
        from nvml_sampler import Sampler
        samp = Sampler().__enter__()
    for _ in range(3):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    t_steps_end = time.time()
    pw = {p: [] for p in PHASES}
    pwin = {p: [] for p in PHASES}
    for _ in range(3):
        t = time.time()
        for p, v in step(sync_phases=True).items():
            pw[p].append(v)
            pwin[p].append((t, t + v))
            t += v
    power = None
    if samp is not None:
        samp.__exit__()
        power = {"steps": samp.window(samp.t0, t_steps_end)}
        for p in PHASES:
            ss = [x for a, b in pwin[p] for x in samp.samples if a <= x[0] <= b]
            ck = [x[2] for x in ss if x[2] is not None]
            pws = [x[1] for x in ss if x[1] is not None]
            power[p] = {"samples": len(ss),
                        "sm_clock_mhz_median": statistics.median(ck) if ck else None,
                        "power_w_median": statistics.median(pws) if pws else None}
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        step(ranges=True)
    if args.trace_dir:
        import gzip
        import shutil
        import tempfile
        os.makedirs(args.trace_dir, exist_ok=True)
        tag = "%s%s_s%d_b%d" % (name, "_L%s" % cut[0] if cut else "", seq, mbs)
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        prof.export_chrome_trace(tmp)
        with open(tmp, "rb") as fi, gzip.open(os.path.join(args.trace_dir, "trace_%s.json.gz" % tag),
                                             "wb", compresslevel=6) as fo:
            shutil.copyfileobj(fi, fo)
        os.unlink(tmp)
    evs = prof.events()
    rng = {}
    for e in evs:
        if e.name.startswith("phase_") and e.device_type == torch.autograd.DeviceType.CPU:
            rng[e.name[6:]] = (e.time_range.start, e.time_range.end)
    # GPU-side user annotations (the phase ranges, FSDP2's and the optimizer's record_function
    # ranges) are CUDA events too: left out, or their spans would count as elementwise kernels
    # and a phase's class sums could exceed its wall (fwdbwd14, 2026-11-28)
    kern = [e for e in evs if e.device_type == torch.autograd.DeviceType.CUDA
            and not getattr(e, "is_user_annotation", False)
            and not e.name.startswith(("phase_", "FSDP::", "## ", "Optimizer.", "ProfilerStep"))]
    phases = {}
    for p in PHASES:
        s0, e0 = rng.get(p, (0, 0))
        ks = [e for e in kern if s0 <= e.time_range.start < e0]
        by, top = {}, {}
        for e in ks:
            c = cls(e.name)
            by[c] = by.get(c, 0.0) + e.device_time * 1e-6
            k = e.name[:110]
            t, n = top.get(k, (0.0, 0))
            top[k] = (t + e.device_time * 1e-6, n + 1)
        phases[p] = {"wall_profiled_s": (e0 - s0) * 1e-6, "kernels": len(ks),
                     "kernel_s_by_class": by,
                     "busy_s": union_s([(e.time_range.start, e.time_range.end) for e in ks
                                        if cls(e.name) != "nccl"]),
                     "top": [[k, round(t, 6), n] for k, (t, n) in
                             sorted(top.items(), key=lambda kv: -kv[1][0])[:args.top]]}
    if args.streams:
        by_stream = stream_split(prof, rng)
    r = {"model": name, "layers": int(cut[0]) if cut else None, "seq": seq, "mbs": mbs,
         "ckpt": ckpt, "fwd_bwd_gpu_s": [round(x, 6) for x in fb_gpu],
         "fwd_bwd_host_call_s": [round(x, 6) for x in fb_host],
         "step_s": statistics.median(ts), "step_times_s": [round(x, 5) for x in ts],
         "phase_wall_s": {p: statistics.median(v) for p, v in pw.items()},
         "phases": phases, "params": len(list(model.parameters())),
         "peak_allocated_bytes": torch.cuda.max_memory_allocated(dev)}
    if args.streams:
        r["by_stream"] = by_stream
    if power is not None:
        r["power"] = power
    print(json.dumps({k: v for k, v in r.items() if k not in ("phases", "by_stream")}), flush=True)
    for p in PHASES if args.streams else ():
        for st, q in by_stream[p].items():
            print("  %-5s stream %-3s busy %.4f kernels %d %s" % (
                p, st, q["busy_s"], q["kernels"],
                {k: round(v, 4) for k, v in q["kernel_s_by_class"].items()}), flush=True)
    for p in PHASES:
        q = phases[p]
        print("  %-5s wall %.4f busy %.4f kernels %d %s" % (
            p, r["phase_wall_s"][p], q["busy_s"], q["kernels"],
            {k: round(v, 4) for k, v in q["kernel_s_by_class"].items()}), flush=True)
    out["runs"].append(r)
    if args.out:  # after each run, so a run cut short by a time limit keeps the ones before it
        with open(args.out + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(args.out + ".tmp", args.out)
    del model, opt, box
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
dist.destroy_process_group()
