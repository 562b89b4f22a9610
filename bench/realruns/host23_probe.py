#!/usr/bin/env python3
"""Host versus GPU, pass by pass, in real Hugging Face FSDP2 steps on one GPU (issue 14; helper
host23, bench/results/host23_2026-11-29). One process, writes host23_probe.json and traces.

For each spec NAME:SEQ:MBS[:LAYERS[:ATTN]] (configs/NAME.json, built by fsdp2_model.py as
realrun.py --impl hf builds it: transformers from config, fp32 params, bf16 compute / fp32
reduce, fully_shard per decoder layer + root, torch's default AdamW, clip 1.0, labels = input ids):
  real        the step as realrun.py times it (warm-up 2, `--steps` timed), with CUDA events at
              the forward's start, after the forward call returned, after the backward call
              returned: per pass the GPU's span (fwd_gpu_s, bwd_gpu_s: event to event) and the
              host's call time (fwd_host_s, bwd_host_s), and the step's wall time
  floor       the same model at seq 64, mbs 1, where the GPU work is negligible: the host's time
              of the forward call and of the backward call, each between synchronizes (medians
              of 7): what the host spends issuing one pass when it never waits
  traces      one profiled step (CPU + CUDA activities) at the real shape and one at seq 64,
              Chrome traces gzipped; host23_layers.py counts the launches per layer and pass
              in them, and the GPU's idle gaps
Also the lease's host speed: `tiny_fwd_op_s` / `tiny_bwd_op_s`, launch_overhead.py's 2000-op
chain (the figures host.eager_op_fwd_s / bwd_s come from).
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/host23_probe.py --out DIR \
           --runs deepseek-v2-lite:2048:4:8,qwen3-1.7b:2048:2:0:eager [--steps 6]
"""
import argparse
import datetime
import gzip
import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", required=True)
ap.add_argument("--steps", type=int, default=6)
ap.add_argument("--deadline", type=float, default=0, help="skip runs after this many seconds")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29533"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
T0 = time.time()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
os.makedirs(args.out, exist_ok=True)
out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
       "command": "python3 " + " ".join(sys.argv), "cpu_count": os.cpu_count(), "runs": []}
try:
    import transformers
    out["transformers"] = transformers.__version__
except Exception:
    pass
try:
    with open("/proc/cpuinfo") as f:
        out["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
except Exception:
    pass


def sync_timed(fn):
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t


# the lease's host speed: launch_overhead.py's chain of 2000 tiny autograd ops
N = 2000
x = torch.ones(1, device=dev, dtype=torch.bfloat16, requires_grad=True)


def chain():
    y = x
    for _ in range(N):
        y = y * 1.0001
    return y.sum()


chain().backward()
out["tiny_fwd_op_s"] = statistics.median(sync_timed(chain) for _ in range(5)) / N
bt = []
for _ in range(5):
    hold = chain()
    bt.append(sync_timed(hold.backward))
out["tiny_bwd_op_s"] = statistics.median(bt) / N
print(json.dumps(out), flush=True)
dist.init_process_group("nccl", device_id=dev)


def save_trace(prof, name):
    tp = os.path.join(args.out, name + ".json")
    prof.export_chrome_trace(tp)
    with open(tp, "rb") as fi, gzip.open(tp + ".gz", "wb", compresslevel=6) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(tp)
    return name + ".json.gz"


for spec in args.runs.split(","):
    if args.deadline and time.time() - T0 > args.deadline:
        out["runs"].append({"spec": spec, "skipped": "deadline"})
        continue
    name, seq, mbs, *rest = spec.split(":")
    seq, mbs = int(seq), int(mbs)
    layers = int(rest[0]) if rest and rest[0] else 0
    attn = rest[1] if len(rest) > 1 else "sdpa"
    r = {"spec": spec, "model": name, "seq": seq, "mbs": mbs, "layers": layers or None, "attn": attn}
    tag = "%s-s%d-b%d%s-%s" % (name, seq, mbs, ("-L%d" % layers) if layers else "", attn)
    try:
        model, V, ei = build_fsdp2_model(name, dev, layers, attn=attn)
        r["experts_implementation"] = ei
        r["params"] = sum(p.numel() for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        g = torch.Generator(device=dev).manual_seed(1234)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]

        def step(inp, rec=None):
            opt.zero_grad(set_to_none=True)
            ev[0].record()
            h0 = time.perf_counter()
            loss = model(input_ids=inp, labels=inp).loss
            h1 = time.perf_counter()
            ev[1].record()
            loss.backward()
            h2 = time.perf_counter()
            ev[2].record()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if rec is not None:
                rec.append((h1 - h0, h2 - h1))

        inp = torch.randint(0, V, (mbs, seq), device=dev, generator=g)
        for _ in range(2):
            step(inp)
        hs, ws, gf, gb = [], [], [], []
        for _ in range(args.steps):
            ws.append(sync_timed(lambda: step(inp, hs)))
            gf.append(ev[0].elapsed_time(ev[1]) / 1e3)
            gb.append(ev[1].elapsed_time(ev[2]) / 1e3)
        r["real"] = {"step_s": [round(v, 5) for v in ws], "step_s_median": statistics.median(ws),
                     "fwd_host_s": statistics.median(h[0] for h in hs),
                     "bwd_host_s": statistics.median(h[1] for h in hs),
                     "fwd_gpu_s": statistics.median(gf), "bwd_gpu_s": statistics.median(gb)}
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(inp)
            torch.cuda.synchronize()
        r["real"]["trace"] = save_trace(prof, "trace-" + tag)
        # the floor: seq 64, mbs 1
        small = torch.randint(0, V, (1, 64), device=dev, generator=g)
        for _ in range(2):
            step(small)
        fl, bl = [], []
        for _ in range(7):
            opt.zero_grad(set_to_none=True)
            box = {}
            fl.append(sync_timed(lambda: box.__setitem__("l", model(input_ids=small, labels=small).loss)))
            bl.append(sync_timed(lambda: box["l"].backward()))
        r["floor"] = {"fwd_host_s": statistics.median(fl), "bwd_host_s": statistics.median(bl)}
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(small)
            torch.cuda.synchronize()
        r["floor"]["trace"] = save_trace(prof, "trace64-" + tag)
        del model, opt
    except Exception as e:  # noqa: BLE001
        r["error"] = repr(e)[:300]
    torch.cuda.empty_cache()
    print(json.dumps(r), flush=True)
    out["runs"].append(r)
    with open(os.path.join(args.out, "host23_probe.json"), "w") as f:
        json.dump(out, f, indent=1)
dist.destroy_process_group()
