#!/usr/bin/env python3
"""Where the time of one real Hugging Face FSDP2 step goes (issue 14: what is still off for the
small models): one step under torch.profiler after warm-up, at a realruns layout; the compute
stream's kernel time by class (GEMM, attention, elementwise/copy, NCCL, memcpy/memset), the
GPU's busy time (union of kernel intervals) and the step's wall time. Built as realrun.py
builds the model (transformers from config, fp32 params, SDPA, FSDP2 per layer + root,
bf16/fp32 mixed precision, torch's default AdamW, clip 1.0).
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/step_profile.py --out out/profile.json
       --runs name:seq:mbs[:layers[:ckpt]],...  (layers: cut the model as realrun.py --layers does,
       e.g. qwen3-30b-a3b:4096:1:4 and mixtral-8x7b:4096:1:2, the MoE runs of the realruns;
       ckpt: gradient checkpointing of every layer as realrun.py --ckpt, or nockpt; layers 0 =
       uncut; a fifth field "eager": transformers' eager attention, realrun.py --attn eager)
"""
import argparse
import json
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", default="")
ap.add_argument("--runs", default="smollm2-360m:2048:8,llama-3.2-1b:4096:1,llama-3.2-1b:4096:4")
ap.add_argument("--top", type=int, default=0, help="also list the N kernels with most time")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29520"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)


def build(name, layers=0, ckpt=False, attn="sdpa"):
    """fsdp2_model.build_fsdp2_model on this script's device"""
    return build_fsdp2_model(name, dev, layers, ckpt, attn)[:2]


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


out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev), "runs": []}
for spec in args.runs.split(","):
    name, seq, mbs, *cut = spec.split(":")
    seq, mbs = int(seq), int(mbs)
    ckpt = len(cut) > 1 and cut[1] == "ckpt"
    attn = "eager" if len(cut) > 2 and cut[2] == "eager" else "sdpa"
    model, V = build(name, int(cut[0]) if cut else 0, ckpt, attn)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, V, (mbs, seq + 1), device=dev)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        loss = model(input_ids=inp, labels=lab).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    ts = []
    for _ in range(3):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        step()
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    by = {}
    iv = []
    for e in ev:
        c = cls(e.name)
        by[c] = by.get(c, 0) + e.device_time * 1e-6
        if c != "nccl":
            iv.append((e.time_range.start, e.time_range.end))
    iv.sort()
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in iv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    span = (iv[-1][1] - iv[0][0]) * 1e-6 if iv else 0
    top = {}
    for e in ev:
        k = e.name[:100]
        t, n = top.get(k, (0.0, 0))
        top[k] = (t + e.device_time * 1e-6, n + 1)
    r = {"model": name, "layers": int(cut[0]) if cut else None, "seq": seq, "mbs": mbs, "ckpt": ckpt, "attn": attn,
         "step_s_median": sorted(ts)[1],
         "top_kernels": [[k, round(t, 6), n] for k, (t, n) in
                         sorted(top.items(), key=lambda kv: -kv[1][0])[:args.top]],
         "kernels": len(ev), "kernel_s_by_class": by, "busy_s_non_nccl": busy * 1e-6,
         "span_s": span}
    print(json.dumps(r), flush=True)
    out["runs"].append(r)
    del model, opt
    torch.cuda.empty_cache()
if args.out:
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
dist.destroy_process_group()
