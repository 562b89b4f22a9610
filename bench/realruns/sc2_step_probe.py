#!/usr/bin/env python3
"""Where StarCoder2's Hugging Face FSDP2 step spends the time plan does not price (issue 14;
bench/results/sc2step25_2026-11-29): one profiled step per variant, built as realrun.py builds it
(fsdp2_model.build_fsdp2_model: transformers from config, fp32 params, SDPA, FSDP2 per layer and
root, bf16 params / fp32 reduce, torch's AdamW, clip 1.0, Hugging Face's loss), cut to a few
layers. Per variant: the median wall time of timed steps (CUDA-synchronized), and from one
torch.profiler step the GPU time per aten op (key_averages, self device time: the kernels each
op launched itself) and per kernel name. A variant is name:seq:mbs:layers[:key=value;...]: the
config overrides (e.g. residual_dropout=0), so two variants that differ in one key measure that
key's cost in the whole step. Per-layer costs come from differencing two layer counts
(derive in the results folder); the rest of the step (embedding, loss head, optimizer) cancels.
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/sc2_step_probe.py --out OUT.json
       [--runs starcoder2-7b:4096:2:2,starcoder2-7b:4096:2:4,...] [--steps 5]
"""
import argparse
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", default="starcoder2-7b:4096:2:2,starcoder2-7b:4096:2:4,"
                "starcoder2-7b:4096:2:4:residual_dropout=0;embedding_dropout=0,"
                "starcoder2-7b:4096:2:4:use_bias=false")
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--min-us", type=float, default=5.0, help="leave out ops/kernels below this total")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29531"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)


def parse_overrides(text):
    out = {}
    for kv in filter(None, text.split(";")):
        k, v = kv.split("=")
        out[k] = {"true": True, "false": False}.get(v, float(v) if "." in v or v.isdigit() else v)
    return out


out = {"torch": torch.__version__, "transformers": transformers.__version__,
       "gpu": torch.cuda.get_device_name(dev), "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
       "runs": []}
for spec in args.runs.split(","):
    name, seq, mbs, layers, *rest = spec.split(":")
    seq, mbs, layers = int(seq), int(mbs), int(layers)
    ov = parse_overrides(rest[0]) if rest else {}
    model, V, _ = build_fsdp2_model(name, dev, layers, overrides=ov)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, V, (mbs, seq), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    ts = []
    for _ in range(args.steps):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        step()
        torch.cuda.synchronize()
    ops = []
    for e in prof.key_averages():
        us = e.self_device_time_total
        if us >= args.min_us:
            ops.append([e.key[:60], e.count, round(us, 1)])
    ops.sort(key=lambda r: -r[2])
    kern = {}
    iv = []
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        k = e.name.split("(")[0][:110]
        t, n = kern.get(k, (0.0, 0))
        kern[k] = (t + e.device_time, n + 1)
        if "nccl" not in e.name.lower():
            iv.append((e.time_range.start, e.time_range.end))
    iv.sort()
    busy, s0, e0 = 0.0, None, None
    for s, e in iv:
        if e0 is None or s > e0:
            busy += (e0 - s0) if e0 is not None else 0.0
            s0, e0 = s, e
        else:
            e0 = max(e0, e)
    busy += (e0 - s0) if e0 is not None else 0.0
    r = {"spec": spec, "model": name, "seq": seq, "mbs": mbs, "layers": layers, "overrides": ov,
         "step_s": [round(t, 5) for t in ts], "step_s_median": round(statistics.median(ts), 5),
         "busy_s_non_nccl": round(busy * 1e-6, 5), "kernel_s": round(sum(t for t, _ in kern.values()) * 1e-6, 5),
         "ops_self_device_us": ops,
         "kernels_us": sorted([[k, n, round(t, 1)] for k, (t, n) in kern.items() if t >= args.min_us],
                              key=lambda r: -r[2])}
    print(json.dumps({k: r[k] for k in ("spec", "step_s_median", "busy_s_non_nccl", "kernel_s")}), flush=True)
    out["runs"].append(r)
    del model, opt, prof
    torch.cuda.empty_cache()
with open(args.out, "w") as f:
    json.dump(out, f, indent=0)
dist.destroy_process_group()
