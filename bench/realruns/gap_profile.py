#!/usr/bin/env python3
"""Where the host and the GPU part in one real Hugging Face FSDP2 step (issue 14/20's worst
one-GPU rows: SmolLM2-360M seq 2048 mbs 8, Mixtral-8x7B cut to 2 layers seq 4096 mbs 1).

Unlike phase_profile.py nothing is synchronised inside the step (the step runs exactly as
realrun.py's does), so the host may run ahead of the GPU and what is measured is how far:
  step_times_s        wall of each timed step, between torch.cuda.synchronize() calls
  host_issue_s        per step, the host's time from the step's start until zero_grad returned
                      (before the closing synchronize): when it is close to the step's wall
                      the host sets the pace
  host_phase_s        per step, the host's time per phase (forward with loss, backward, clip,
                      optimizer step, zero_grad), no sync between them
  trace               one profiled step (CPU + CUDA), Chrome trace, gzipped, with a
                      record_function range per phase (step.fwd, step.bwd, step.clip, step.opt,
                      step.zero) so bench/realruns/trace_summary.py splits host waits per phase
  top_cpu / top_cuda  torch.profiler key_averages of that step: ops by self CPU time, by
                      device time
The model is built as realrun.py --impl hf builds it (transformers from config, fp32 params,
SDPA, fully_shard per decoder layer + root, bf16/fp32 mixed precision, torch's default AdamW,
clip 1.0, labels = input ids, experts_implementation as transformers picks).
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/gap_profile.py --out DIR
           --runs smollm2-360m:2048:8,mixtral-8x7b:4096:1:2 [--steps 12]
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", default="smollm2-360m:2048:8,mixtral-8x7b:4096:1:2")
ap.add_argument("--steps", type=int, default=12)
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29531"), ("RANK", "0"),
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
os.makedirs(args.out, exist_ok=True)
PHASES = ("fwd", "bwd", "clip", "opt", "zero")


def build(name, layers=0):
    """fsdp2_model.build_fsdp2_model on this script's device"""
    return build_fsdp2_model(name, dev, layers)


def top_table(prof, key):
    rows = []
    for e in prof.key_averages():
        rows.append({"name": e.key[:120], "calls": e.count,
                     "self_cpu_s": round(e.self_cpu_time_total * 1e-6, 6),
                     "cpu_total_s": round(e.cpu_time_total * 1e-6, 6),
                     "self_device_s": round(getattr(e, "self_device_time_total",
                                                    getattr(e, "self_cuda_time_total", 0)) * 1e-6, 6)})
    rows.sort(key=lambda r: -r[key])
    return rows[:60]


out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": []}
try:
    import transformers
    out["transformers"] = transformers.__version__
except Exception:
    pass
for spec in args.runs.split(","):
    name, seq, mbs, *cut = spec.split(":")
    seq, mbs, layers = int(seq), int(mbs), (int(cut[0]) if cut else 0)
    model, V, ei = build(name, layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator(device=dev).manual_seed(1234)
    inp = torch.randint(0, V, (mbs, seq), device=dev, generator=g)

    def step(ranges=False):
        hp = {}
        box = {}

        def ph(p, fn):
            t = time.perf_counter()
            if ranges:
                with record_function("step." + p):
                    fn()
            else:
                fn()
            hp[p] = time.perf_counter() - t

        ph("fwd", lambda: box.__setitem__("loss", model(input_ids=inp, labels=inp).loss))
        ph("bwd", lambda: box["loss"].backward())
        ph("clip", lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        ph("opt", opt.step)
        ph("zero", lambda: opt.zero_grad(set_to_none=True))
        return hp

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    ts, hi, hps = [], [], []
    for _ in range(args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        hp = step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
        hi.append(t1 - t0)
        hps.append(hp)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        step(ranges=True)
        torch.cuda.synchronize()
        prof_wall = time.perf_counter() - t0
    tag = "%s-s%d-b%d%s" % (name, seq, mbs, ("-L%d" % layers) if layers else "")
    tp = os.path.join(args.out, "trace-%s.json" % tag)
    prof.export_chrome_trace(tp)
    with open(tp, "rb") as fi, gzip.open(tp + ".gz", "wb", compresslevel=6) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(tp)
    r = {"model": name, "layers": layers or None, "seq": seq, "mbs": mbs,
         "experts_implementation": ei, "params": sum(p.numel() for p in model.parameters()),
         "step_times_s": [round(x, 5) for x in ts], "step_s_median": statistics.median(ts),
         "step_s_min": min(ts), "host_issue_s": [round(x, 5) for x in hi],
         "host_issue_s_median": statistics.median(hi),
         "host_phase_s_median": {p: statistics.median(h[p] for h in hps) for p in PHASES},
         "profiled_step_wall_s": prof_wall, "trace": os.path.basename(tp) + ".gz",
         "top_cpu": top_table(prof, "self_cpu_s"), "top_cuda": top_table(prof, "self_device_s")}
    print(json.dumps({k: v for k, v in r.items() if not k.startswith("top_")}), flush=True)
    out["runs"].append(r)
    del model, opt
    torch.cuda.empty_cache()
with open(os.path.join(args.out, "gap_profile.json"), "w") as f:
    json.dump(out, f, indent=1)
dist.destroy_process_group()
