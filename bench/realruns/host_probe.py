#!/usr/bin/env python3
"""Two host costs of a one-GPU FSDP2 step, measured apart (helper smallrows, issue 14/20):

1. chunk_cat: the host time of torch._chunk_cat as FSDP2's reduce-scatter copy-in calls it
   (bf16 gradients of one unit into an fp32 [world, n/world] buffer, world 1), by unit size:
   the unit sizes of SmolLM2-360M, Llama-3.2-1B, Qwen3-30B-A3B and Mixtral-8x7B decoder layers
   (tensor shapes as the models hold them). Host clock around the call, no sync inside,
   median of 9 calls, in two states: the GPU idle (synchronised before each call) and the GPU
   busy (torch.cuda._sleep queued before each call, so the host has a lead, as in a GPU-bound
   backward). Per call: host_s and host_s / (4 n / 2048) = per 2 KiB block of the fp32 output.
2. gc: Python's cyclic garbage collector inside a host-bound step (SmolLM2-360M seq 2048 mbs 8,
   built as realrun.py --impl hf builds it): 16 steps with gc on, time in gc per step from
   gc.callbacks (and collections per generation), then 16 steps with gc.disable().
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/host_probe.py --out DIR
"""
import argparse
import gc
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--skip-gc", action="store_true")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29532"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
os.makedirs(args.out, exist_ok=True)
out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "chunk_cat": [], "gc": []}

# one decoder layer's parameter shapes (h, q heads x d, kv heads x d, ffn / experts)
UNITS = {
    "smollm2-360m": [(960, 960), (320, 960), (320, 960), (960, 960), (960,), (960,),
                     (2560, 960), (2560, 960), (960, 2560)],
    "llama-3.2-1b": [(2048, 2048), (512, 2048), (512, 2048), (2048, 2048), (2048,), (2048,),
                     (8192, 2048), (8192, 2048), (2048, 8192)],
    "qwen3-30b-a3b": [(4096, 2048), (512, 2048), (512, 2048), (2048, 4096), (2048,), (2048,),
                      (128,), (128,), (128, 2048), (128, 1536, 2048), (128, 2048, 768)],
    "mixtral-8x7b": [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (4096,), (4096,),
                     (8, 4096), (8, 28672, 4096), (8, 4096, 14336)],
}
for name, shapes in UNITS.items():
    grads = [torch.randn(s, device=dev, dtype=torch.bfloat16) for s in shapes]
    n = sum(g.numel() for g in grads)
    buf = torch.empty((1, n), device=dev, dtype=torch.float32)
    blocks = 4.0 * n / 2048
    rec = {"unit": name, "numel": n, "tensors": len(shapes), "blocks_2k": blocks}
    for state in ("idle", "busy"):
        ts = []
        for i in range(11):
            torch.cuda.synchronize()
            if state == "busy":
                torch.cuda._sleep(int(60e-3 * 1.7e9))  # ~30-60 ms of GPU time queued first
            t = time.perf_counter()
            torch._chunk_cat(grads, dim=0, num_chunks=1, out=buf)
            dt = time.perf_counter() - t
            if i >= 2:
                ts.append(dt)
        torch.cuda.synchronize()
        rec[state + "_host_s"] = statistics.median(ts)
        rec[state + "_host_s_all"] = [round(x, 6) for x in ts]
        rec[state + "_per_block_s"] = statistics.median(ts) / blocks
    ref = torch.cat([g.reshape(-1).float() for g in grads])
    rec["check_max_abs"] = float((buf.reshape(-1) - ref).abs().max())
    print(json.dumps({k: v for k, v in rec.items() if not k.endswith("_all")}), flush=True)
    out["chunk_cat"].append(rec)
    del grads, buf, ref
    torch.cuda.empty_cache()

if not args.skip_gc:
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import AutoConfig, AutoModelForCausalLM
    dist.init_process_group("nccl", device_id=dev)
    with open(os.path.join(HERE, "configs", "smollm2-360m.json")) as f:
        d = json.load(f)
    d = {k: v for k, v in d.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version")}
    d["use_cache"] = False
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    lay = [m for nm, m in model.named_modules() if nm.endswith("layers")][0]
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in lay:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator(device=dev).manual_seed(1234)
    inp = torch.randint(0, d["vocab_size"], (8, 2048), device=dev, generator=g)
    gcs = {"t": 0.0, "n": [0, 0, 0], "t0": 0.0}

    def cb(phase, info):
        if phase == "start":
            gcs["t0"] = time.perf_counter()
        else:
            gcs["t"] += time.perf_counter() - gcs["t0"]
            gcs["n"][info["generation"]] += 1

    gc.callbacks.append(cb)

    def step():
        loss = model(input_ids=inp, labels=inp).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    for mode in ("gc_on", "gc_off"):
        if mode == "gc_off":
            gc.collect()
            gc.disable()
        rows = []
        for _ in range(16):
            gcs["t"], gcs["n"] = 0.0, [0, 0, 0]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            rows.append({"step_s": round(time.perf_counter() - t0, 5), "host_s": round(t1 - t0, 5),
                         "gc_s": round(gcs["t"], 5), "gc_collections": list(gcs["n"])})
        gc.enable()
        r = {"mode": mode, "steps": rows,
             "step_s_median": statistics.median(x["step_s"] for x in rows),
             "step_s_min": min(x["step_s"] for x in rows),
             "gc_s_median": statistics.median(x["gc_s"] for x in rows),
             "gc_s_max": max(x["gc_s"] for x in rows)}
        print(json.dumps({k: v for k, v in r.items() if k != "steps"}), flush=True)
        out["gc"].append(r)
    dist.destroy_process_group()
with open(os.path.join(args.out, "host_probe.json"), "w") as f:
    json.dump(out, f, indent=1)
