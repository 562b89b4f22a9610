#!/usr/bin/env python3
"""Issue 14/20 (hfmoe14): where a cut Hugging Face MoE step spends its time on one GPU under FSDP2
(as realrun.py --impl hf builds it: fp32 params, bf16 compute, SDPA, default experts implementation,
optional non-reentrant full checkpointing), phase by phase, and how its routing evolves.
Per spec name:seq:mbs:layers:ckpt(0/1): per-step wall (synced, 12 steps), per-phase wall with a
sync after each phase (3 steps), one profiled step (kernel time by class per phase, GPU busy,
host sync API time, top kernels), and the per-layer per-expert token counts of each step (a
forward hook on each mlp.gate: bincount of the top-k indices, kept on the GPU until the end)."""
import argparse, json, os, statistics, time
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", required=True)
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29531"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
import torch
import torch.distributed as dist
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerActivity, profile
from fsdp2_model import build_fsdp2_model
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
PHASES = ("fwd", "bwd", "clip", "opt", "zero")
import transformers

def cls(name):
    n = name.lower()
    if "nccl" in n: return "nccl"
    if "memcpy" in n or "memset" in n: return "memcpy"
    if "group" in n: return "grouped_gemm"
    if "sdpa" in n or "fmha" in n or "flash" in n or "cudnn" in n: return "attention"
    if "nvjet" in n or "gemm" in n or "cublas" in n or "cutlass" in n or "splitk" in n: return "gemm"
    if "multi_tensor" in n or "foreach" in n: return "optimizer"
    if "sort" in n or "scan" in n or "radix" in n: return "sort"
    if "index" in n or "scatter" in n or "gather" in n: return "index"
    return "elementwise"

def union_s(iv):
    iv.sort(); busy, cs, ce = 0.0, None, None
    for s, e in iv:
        if ce is None or s > ce:
            if ce is not None: busy += ce - cs
            cs, ce = s, e
        else: ce = max(ce, e)
    if ce is not None: busy += ce - cs
    return busy * 1e-6

out = {"torch": torch.__version__, "transformers": transformers.__version__,
       "gpu": torch.cuda.get_device_name(dev), "runs": []}
def save():
    with open(args.out + ".tmp", "w") as f: json.dump(out, f, indent=1)
    os.replace(args.out + ".tmp", args.out)

for spec in args.runs.split(","):
    t0 = time.perf_counter()
    name, seq, mbs, layers, ckpt = spec.split(":")
    seq, mbs, layers, ckpt = int(seq), int(mbs), int(layers), int(ckpt)
    model, V, ei = build_fsdp2_model(name, dev, layers)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    E = getattr(model.config, "num_experts", None) or getattr(model.config, "num_local_experts")
    K = model.config.num_experts_per_tok
    counts, rec_on = [], [False]
    def hook(mod, inp, outp):
        if not rec_on[0]: return
        idx = None
        if isinstance(outp, (tuple, list)):
            for o in outp:
                if torch.is_tensor(o) and not o.is_floating_point(): idx = o
            if idx is None: outp = outp[0]
        if idx is None:
            idx = torch.topk(outp.detach().float().reshape(-1, outp.shape[-1]), K, dim=-1).indices
        counts.append(torch.bincount(idx.reshape(-1), minlength=E).detach())
    gates = [m for n, m in model.named_modules() if n.endswith("mlp.gate") or n.endswith("block_sparse_moe.gate")]
    for g in gates: g.register_forward_hook(hook)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    gen = torch.Generator(device=dev).manual_seed(0)
    ids = torch.randint(0, V, (mbs, seq + 1), device=dev, generator=gen)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    box = {}
    def ph_fwd(): box["loss"] = model(input_ids=inp, labels=lab).loss
    def ph_bwd(): box.pop("loss").backward()
    fns = {"fwd": ph_fwd, "bwd": ph_bwd,
           "clip": lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0),
           "opt": opt.step, "zero": lambda: opt.zero_grad(set_to_none=True)}
    def step(sync_phases=False, ranges=False):
        w = {}
        for p in PHASES:
            t = time.perf_counter()
            if ranges:
                with record_function("phase_" + p):
                    fns[p](); torch.cuda.synchronize()
            else:
                fns[p]()
                if sync_phases: torch.cuda.synchronize()
            w[p] = time.perf_counter() - t
        return w
    for _ in range(3): step()
    torch.cuda.synchronize()
    ts, ncount = [], []
    rec_on[0] = True
    for _ in range(12):
        t = time.perf_counter(); step(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
        ncount.append(len(counts))
    rec_on[0] = False
    pw = {p: [] for p in PHASES}
    for _ in range(3):
        for p, v in step(sync_phases=True).items(): pw[p].append(v)
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        step(ranges=True)
    evs = prof.events()
    rng = {}
    for e in evs:
        if e.name.startswith("phase_") and e.device_type == torch.autograd.DeviceType.CPU:
            rng[e.name[6:]] = (e.time_range.start, e.time_range.end)
    kern = [e for e in evs if e.device_type == torch.autograd.DeviceType.CUDA]
    cpu = [e for e in evs if e.device_type == torch.autograd.DeviceType.CPU]
    phases = {}
    for p in PHASES:
        s0, e0 = rng.get(p, (0, 0))
        ks = [e for e in kern if s0 <= e.time_range.start < e0]
        by, top = {}, {}
        for e in ks:
            c = cls(e.name); by[c] = by.get(c, 0.0) + e.device_time * 1e-6
            k = e.name[:140]; t_, n_ = top.get(k, (0.0, 0)); top[k] = (t_ + e.device_time * 1e-6, n_ + 1)
        syn = {}
        for e in cpu:
            if s0 <= e.time_range.start < e0 and ("Synchronize" in e.name or e.name in (
                    "aten::item", "aten::_local_scalar_dense", "aten::nonzero", "cudaMemcpyAsync",
                    "aten::histc", "aten::bincount", "aten::_grouped_mm", "aten::sort", "aten::argsort")):
                a, b = syn.get(e.name, (0.0, 0)); syn[e.name] = (a + (e.time_range.end - e.time_range.start) * 1e-6, b + 1)
        phases[p] = {"wall_profiled_s": (e0 - s0) * 1e-6, "kernels": len(ks), "kernel_s_by_class": by,
                     "busy_s": union_s([(e.time_range.start, e.time_range.end) for e in ks if cls(e.name) != "nccl"]),
                     "host_calls": {k: [round(a, 6), b] for k, (a, b) in syn.items()},
                     "top": [[k, round(t_, 6), n_] for k, (t_, n_) in sorted(top.items(), key=lambda kv: -kv[1][0])[:25]]}
    C = torch.stack(counts).cpu() if counts else None
    cstats = None
    if C is not None:
        Cf = C.float()
        cstats = {"records": int(C.shape[0]), "records_per_step": ncount[0] if ncount else 0,
                  "gates": len(gates), "tokens_per_record": int(C[0].sum()),
                  "max_over_mean": [round(float(x), 3) for x in (Cf.max(1).values / Cf.mean(1))],
                  "zero_experts": [int(x) for x in (C == 0).sum(1)],
                  "cv": [round(float(x), 3) for x in (Cf.std(1) / Cf.mean(1))],
                  "first_record": [int(x) for x in C[0]], "last_record": [int(x) for x in C[-1]]}
    r = {"spec": spec, "model": name, "layers": layers, "seq": seq, "mbs": mbs, "ckpt": ckpt,
         "experts_implementation": ei, "step_s": statistics.median(ts), "step_times_s": [round(x, 5) for x in ts],
         "phase_wall_s": {p: statistics.median(v) for p, v in pw.items()}, "phases": phases,
         "routing": cstats, "peak_allocated_bytes": torch.cuda.max_memory_allocated(dev),
         "spec_wall_s": time.perf_counter() - t0}
    print(json.dumps({k: v for k, v in r.items() if k not in ("phases", "routing")}), flush=True)
    for p in PHASES:
        q = phases[p]
        print("  %-5s wall %.4f busy %.4f kernels %d %s %s" % (p, r["phase_wall_s"][p], q["busy_s"], q["kernels"],
              {k: round(v, 4) for k, v in q["kernel_s_by_class"].items()}, q["host_calls"]), flush=True)
    if cstats: print("  routing max/mean", cstats["max_over_mean"][:8], "...", cstats["max_over_mean"][-8:], "zero", cstats["zero_experts"][:4], flush=True)
    out["runs"].append(r); save()
    del model, opt, box, counts
    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats(dev)
dist.destroy_process_group()
