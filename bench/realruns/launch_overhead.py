#!/usr/bin/env python3
"""Per-kernel launch / CPU dispatch cost of eager PyTorch, and the pieces of a Hugging Face FSDP2
step that it sets (issue 14). One process, one GPU, writes one JSON object (stdout and --out).

What it measures (torch.cuda.synchronize() around every timed region, medians of repeats):
 1. `tiny_fwd_op_s`: the host time of one eager op with autograd recording (y = y * 1.0001 on a
    1-element bf16 tensor that requires grad), 2000 ops in a row: the GPU runs each ~2 us kernel
    faster than the CPU issues it, so the wall time per op is the CPU dispatch cost.
 2. `tiny_bwd_op_s`: the backward of that chain (2000 autograd nodes, one kernel each).
 3. For each model (configs/*.json, built as realrun.py builds it: transformers from config,
    fp32 params, SDPA, FSDP2 per decoder layer + root, bf16 params / fp32 reduce): forward +
    backward (no optimizer) at a tiny shape (mbs 1, seq 64) where the GPU work is negligible,
    so the time is the host's: `fwd_bwd_floor_s`, and the CUDA kernels it launches
    (`fwd_bwd_kernels`, torch.profiler, one step) and the quotient `per_kernel_s`.
 4. The optimizer step alone (AdamW foreach vs fused) on the same model: `opt_foreach_s`,
    `opt_fused_s` and the peak allocated during each step above the state before it
    (`opt_*_temp_bytes`).
 5. SDPA with an explicit boolean sliding-window mask (what transformers builds for Phi-3's
    sliding_window) vs is_causal=True at Phi-3-mini's shape, forward + backward.
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/launch_overhead.py --out out/launch.json
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", default="")
ap.add_argument("--models", default="smollm2-360m,llama-3.2-1b,qwen3-30b-a3b:4,mixtral-8x7b:2,phi-3-mini-4k")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29518"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
       "command": "python3 " + " ".join(sys.argv), "cpu_count": os.cpu_count()}
try:
    import transformers
    out["transformers"] = transformers.__version__
except Exception:
    pass


def timed(fn, reps=5):
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


# 1-2: tiny ops
N = 2000
x = torch.ones(1, device=dev, dtype=torch.bfloat16, requires_grad=True)


def chain():
    y = x
    for _ in range(N):
        y = y * 1.0001
    return y


chain().sum().backward()
out["tiny_fwd_op_s"] = timed(chain) / N
holder = {}


def fwd_only():
    holder["y"] = chain().sum()


def bwd_only():
    holder["y"].backward()


ts = []
for _ in range(5):
    fwd_only()
    ts.append(timed(bwd_only, reps=1))
out["tiny_bwd_op_s"] = statistics.median(ts) / N
with torch.no_grad():
    out["tiny_fwd_op_nograd_s"] = timed(chain) / N
print(json.dumps(out), flush=True)

dist.init_process_group("nccl", device_id=dev)


def build(name, layers):
    from transformers import AutoConfig, AutoModelForCausalLM
    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        d = json.load(f)
    d = {k: v for k, v in d.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version")}
    if layers:
        d["num_hidden_layers"] = layers
        if "max_window_layers" in d:
            d["max_window_layers"] = min(d["max_window_layers"], layers)
    d["use_cache"] = False
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    model.train()
    lay = None
    for n, mod in model.named_modules():
        if n.endswith("layers") and isinstance(mod, torch.nn.ModuleList):
            lay = list(mod)
            break
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in lay:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    return model, d["vocab_size"], len(lay)


models = []
for spec in args.models.split(","):
    name, _, nl = spec.partition(":")
    r = {"model": name, "layers": int(nl) if nl else None, "seq": 64, "mbs": 1}
    try:
        model, V, L = build(name, r["layers"])
        r["layers"] = L
        r["params"] = sum(p.numel() for p in model.parameters())
        ids = torch.randint(0, V, (1, 65), device=dev)
        inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

        def fb():
            loss = model(input_ids=inp, labels=lab).loss
            loss.backward()

        for _ in range(3):
            fb()
        r["fwd_bwd_floor_s"] = timed(fb, reps=7)
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            fb()
            torch.cuda.synchronize()
        kern = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        r["fwd_bwd_kernels"] = len(kern)
        r["fwd_bwd_kernel_time_s"] = sum(e.device_time for e in kern) * 1e-6
        r["per_kernel_s"] = r["fwd_bwd_floor_s"] / max(1, len(kern))
        for impl in ("foreach", "fused"):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **{impl: True})
            fb()
            opt.step()  # states exist
            fb()
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated(dev)
            torch.cuda.reset_peak_memory_stats(dev)
            ts = []
            for _ in range(3):
                ts.append(timed(opt.step, reps=1))
            r["opt_%s_s" % impl] = statistics.median(ts)
            r["opt_%s_temp_bytes" % impl] = torch.cuda.max_memory_allocated(dev) - base
            model.zero_grad(set_to_none=True)
            del opt
            torch.cuda.empty_cache()
        del model
    except Exception as e:  # noqa: BLE001
        r["error"] = repr(e)[:300]
    torch.cuda.empty_cache()
    models.append(r)
    print(json.dumps(r), flush=True)
out["models"] = models

# 5: Phi-3-mini attention, seq 2048 and 4096: causal flag vs explicit sliding-window bool mask
att = []
for s, b in ((2048, 1), (4096, 2)):
    q, k, v = (torch.randn(b, 32, s, 96, device=dev, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    i = torch.arange(s, device=dev)
    mask = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < 2047)
    row = {"b": b, "heads": 32, "s": s, "d": 96}
    for nm, kw in (("causal", {"is_causal": True}), ("mask", {"attn_mask": mask[None, None]})):
        def fbk():
            o = F.scaled_dot_product_attention(q, k, v, **kw)
            o.sum().backward()
        fbk()
        row[nm + "_fwd_bwd_s"] = timed(fbk, reps=5)
        with torch.no_grad():
            row[nm + "_fwd_s"] = timed(lambda: F.scaled_dot_product_attention(q, k, v, **kw), reps=5)
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fbk()
                torch.cuda.synchronize()
            row[nm + "_kernels"] = sorted(set(e.name[:60] for e in prof.events()
                                              if e.device_type == torch.autograd.DeviceType.CUDA))[:8]
        except Exception as e:  # noqa: BLE001
            row[nm + "_kernels"] = repr(e)[:100]
    att.append(row)
    print(json.dumps(row), flush=True)
out["phi3_attention"] = att
txt = json.dumps(out, indent=1)
if args.out:
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(txt + "\n")
print("LAUNCH_OVERHEAD_DONE")
dist.destroy_process_group()
