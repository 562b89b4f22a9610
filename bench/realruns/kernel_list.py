#!/usr/bin/env python3
"""The CUDA kernels one forward + backward of a Hugging Face FSDP2 model launches, by name, at a
tiny shape (mbs 1, seq 64), for a model at two depths: the difference per added decoder layer is
the per-layer kernel list (issue 14: the launch count host_dispatch.c prices). Built as
launch_overhead.py / realrun.py build it. Writes JSON (--out).
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/kernel_list.py --out out/kernels.json
"""
import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", default="")
ap.add_argument("--models", default="llama-3.2-1b:1:3,qwen3-30b-a3b:1:2")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29519"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)


def build(name, layers):
    from transformers import AutoConfig, AutoModelForCausalLM
    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        d = json.load(f)
    d = {k: v for k, v in d.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version")}
    d["num_hidden_layers"] = layers
    if "max_window_layers" in d:
        d["max_window_layers"] = min(d["max_window_layers"], layers)
    d["use_cache"] = False
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    lay = [m for n, m in model.named_modules() if n.endswith("layers")][0]
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in lay:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    return model, d["vocab_size"]


def kernels(name, layers):
    model, V = build(name, layers)
    ids = torch.randint(0, V, (1, 65), device=dev)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    for _ in range(2):
        model(input_ids=inp, labels=lab).loss.backward()
        model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        model(input_ids=inp, labels=lab).loss.backward()
        torch.cuda.synchronize()
    c = collections.Counter(e.name[:90] for e in prof.events()
                            if e.device_type == torch.autograd.DeviceType.CUDA)
    del model
    torch.cuda.empty_cache()
    return c


res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev), "models": {}}
for spec in args.models.split(","):
    name, a, b = spec.split(":")
    a, b = int(a), int(b)
    ca, cb = kernels(name, a), kernels(name, b)
    per = {k: (cb[k] - ca[k]) / (b - a) for k in set(ca) | set(cb) if cb[k] != ca[k]}
    res["models"][name] = {"layers": [a, b], "total": [sum(ca.values()), sum(cb.values())],
                           "per_layer_total": (sum(cb.values()) - sum(ca.values())) / (b - a),
                           "per_layer": dict(sorted(per.items(), key=lambda kv: -kv[1]))}
    print(name, res["models"][name]["per_layer_total"], flush=True)
    for k, v in list(res["models"][name]["per_layer"].items())[:45]:
        print("  %6.1f  %s" % (v, k))
if args.out:
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
dist.destroy_process_group()
