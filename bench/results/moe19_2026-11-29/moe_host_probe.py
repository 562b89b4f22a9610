#!/usr/bin/env python3
"""moe_host_probe.py — helper moe19 (issue 20): what sets the step of a one-GPU Hugging Face MoE
FSDP2 run (realrun.py --impl hf at world 1), measured inside real steps, unprofiled.

Per run spec name:seq:mbs:layers[:ckpt] (the model built by bench/realruns/fsdp2_model.py as
realrun.py builds it; realrun.py's step: zero_grad(set_to_none), model(input_ids=x, labels=x).loss,
backward, clip_grad_norm_ 1.0, default (foreach) AdamW; the batch drawn once with seed 1234 as
realrun.py does, so every step sees the same tokens):
  steps          N timed steps: wall between syncs, CUDA events around forward + backward
                 (fwd_bwd_gpu_s), the host's time in that call (fwd_bwd_host_call_s), and the
                 step's torch._chunk_cat calls (FSDP2's reduce-scatter copy-in, one per unit):
                 host seconds, 2 KiB blocks of the output, minor page faults of the calling thread
                 (getrusage RUSAGE_THREAD around the call)
  routing        one extra no-grad forward with a pre-hook on each experts module: tokens per
                 expert (the top-k indices it is called with) per layer: max / mean, min, cv
  grouped_mm     torch._grouped_mm at the spec's expert shapes (x [S, h] bf16 against the
                 transposed [E, out, in] weights, as transformers' grouped_mm path calls it), with
                 the measured per-expert rows of layer 0 and with equal rows: CUDA events, median of
                 20 after 5 warm-ups
  mallopt        (last spec, --mallopt) the same steps again after mallopt fixes glibc's mmap and
                 trim thresholds (no fresh pages for chunk_cat's metadata vectors afterwards)
facts: versions, CPU, transparent huge pages, glibc; the experts implementation transformers picked
and the path and sha256 of transformers/integrations/moe.py as installed (read it there; not copied); the cost of a
first-touch page fault on this host (an anonymous mapping touched page by page).
Usage: NCCL_NVLS_ENABLE=0 python3 moe_host_probe.py --out DIR --runs SPEC,... [--trace N] [--mallopt]
"""
import argparse
import ctypes
import gzip
import hashlib
import json
import mmap
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

T_START = time.perf_counter()
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", required=True)
ap.add_argument("--steps", type=int, default=8)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--trace", type=int, default=-1, help="index of the spec whose one profiled step is kept")
ap.add_argument("--mallopt", action="store_true")
ap.add_argument("--budget-s", type=float, default=110.0, help="skip specs once this much wall has gone")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29541"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:  # a fact we could not read stays a note
        return "unavailable: %s" % e


def read(p):
    try:
        with open(p) as f:
            return f.read().strip()
    except OSError as e:
        return "unavailable: %s" % e


facts = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
         "glibc": os.confstr("CS_GNU_LIBC_VERSION"), "cpu": sh("lscpu | grep -E 'Model name|^CPU\\(s\\)'"),
         "thp_enabled": read("/sys/kernel/mm/transparent_hugepage/enabled"),
         "thp_defrag": read("/sys/kernel/mm/transparent_hugepage/defrag"),
         "gpu": sh("nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader")}


def fault_cost(nbytes=64 << 20, advice=None):
    """First touch of an anonymous mapping page by page: (s per fault, faults, pages)."""
    m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if advice is not None:
        m.madvise(advice)
    f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    t0 = time.perf_counter()
    for off in range(0, nbytes, 4096):
        m[off] = 1
    t1 = time.perf_counter()
    f1 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    # the same loop over pages already touched: the loop's own cost
    t2 = time.perf_counter()
    for off in range(0, nbytes, 4096):
        m[off] = 2
    t3 = time.perf_counter()
    m.close()
    pages = nbytes // 4096
    faults = f1 - f0
    return {"bytes": nbytes, "pages": pages, "faults": faults, "touch_s": t1 - t0, "retouch_s": t3 - t2,
            "s_per_fault": ((t1 - t0) - (t3 - t2)) / faults if faults else None}


facts["fault_cost_default"] = fault_cost()
if hasattr(mmap, "MADV_NOHUGEPAGE"):
    facts["fault_cost_nohugepage"] = fault_cost(advice=mmap.MADV_NOHUGEPAGE)
if hasattr(mmap, "MADV_HUGEPAGE"):
    facts["fault_cost_hugepage"] = fault_cost(advice=mmap.MADV_HUGEPAGE)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402

facts.update(torch=torch.__version__, cuda=torch.version.cuda, transformers=transformers.__version__)
try:
    import transformers.integrations.moe as hf_moe
    with open(hf_moe.__file__, "rb") as src:
        facts["experts_src_sha256"] = hashlib.sha256(src.read()).hexdigest()
    facts["experts_src_file"] = hf_moe.__file__
except Exception as e:
    facts["experts_src_file"] = "unavailable: %s" % e

dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)

# ---- torch._chunk_cat, timed where FSDP2 calls it (its module looks the name up at call time)
ORIG_CC = torch._chunk_cat
CC = {"rec": None, "calls": 0}


def blocks_of(tensors, dim, num_chunks, dst_elem):
    """2 KiB blocks of the kernel grid (TensorShape.cu get_chunk_cat_metadata: per tensor
    ceil(pad_chunk_bytes / (16 B x 128 threads)), pad_chunk_bytes = ceil(size/n)*n*trailing*dst/n)"""
    b = 0
    for t in tensors:
        size = t.shape[dim]
        trailing = t.numel() // size if size else 0
        pad = -(-size // num_chunks) * num_chunks
        chunk = pad * trailing * dst_elem // num_chunks
        b += -(-chunk // 2048)
    return b


def chunk_cat_timed(tensors, *a, **k):
    dim = k.get("dim", a[0] if len(a) > 0 else 0)
    num_chunks = k.get("num_chunks", a[1] if len(a) > 1 else 1)
    out = k.get("out")
    f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    t0 = time.perf_counter()
    r = ORIG_CC(tensors, *a, **k)
    t1 = time.perf_counter()
    f1 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    CC["calls"] += 1
    if CC["rec"] is not None:
        dst = out.element_size() if out is not None else tensors[0].element_size()
        CC["rec"].append((t1 - t0, blocks_of(tensors, dim, num_chunks, dst), f1 - f0, len(tensors)))
    return r


torch._chunk_cat = chunk_cat_timed


def experts_modules(model):
    return [(n, m) for n, m in model.named_modules() if type(m).__name__.endswith("Experts")]


def routing(model, x, E):
    """tokens per expert per layer, from the top-k indices each experts module is called with"""
    got = []

    def pre(mod, a, k):
        cands = [t for t in list(a) + list(k.values()) if torch.is_tensor(t) and not t.is_floating_point()]
        if cands:
            got.append(torch.bincount(cands[0].flatten().long(), minlength=E).cpu())
    hs = [m.register_forward_pre_hook(pre, with_kwargs=True) for _, m in experts_modules(model)]
    with torch.no_grad():
        model(input_ids=x, labels=x)
    for h in hs:
        h.remove()
    res = []
    for c in got:
        c = c.double()
        mean = c.mean().item()
        res.append({"max_over_mean": c.max().item() / mean, "min_over_mean": c.min().item() / mean,
                    "cv": (c.std().item() / mean), "rows": [int(v) for v in c.tolist()]})
    return res


def time_ms(fn, reps=20, warm=5):
    for _ in range(warm):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def grouped_mm_bench(rows, h, f):
    """the two grouped GEMMs of transformers' grouped_mm path at these per-expert rows (x [S, h]
    @ gate_up [E, 2f, h]^T, then [S, f] @ down [E, h, f]^T), forward only: ms each"""
    E, S = len(rows), sum(rows)
    x = torch.randn(S, h, device=dev, dtype=torch.bfloat16)
    wgu = torch.randn(E, 2 * f, h, device=dev, dtype=torch.bfloat16)
    wd = torch.randn(E, h, f, device=dev, dtype=torch.bfloat16)
    y = torch.randn(S, f, device=dev, dtype=torch.bfloat16)
    offs = torch.tensor(rows, device=dev, dtype=torch.int32).cumsum(0).to(torch.int32)
    a = time_ms(lambda: torch._grouped_mm(x, wgu.transpose(-2, -1), offs=offs))
    b = time_ms(lambda: torch._grouped_mm(y, wd.transpose(-2, -1), offs=offs))
    flops = 2.0 * S * h * 2 * f + 2.0 * S * f * h
    return {"S": S, "E": E, "max_rows": max(rows), "gate_up_ms": a, "down_ms": b,
            "tflops": flops / ((a + b) * 1e-3) / 1e12}


def one_step(model, opt, x, ev, rec):
    torch.cuda.synchronize()
    CC["rec"] = []
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    ev[0].record()
    h0 = time.perf_counter()
    model(input_ids=x, labels=x).loss.backward()
    hcall = time.perf_counter() - h0
    ev[1].record()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    cc = CC["rec"]
    CC["rec"] = None
    if rec is not None:
        rec["step_s"].append(round(dt, 6))
        rec["fwd_bwd_gpu_s"].append(round(ev[0].elapsed_time(ev[1]) * 1e-3, 6))
        rec["fwd_bwd_host_call_s"].append(round(hcall, 6))
        rec["chunk_cat"].append([[round(t, 7), b, f, n] for t, b, f, n in cc])


def timed(model, opt, x, n):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    rec = {"step_s": [], "fwd_bwd_gpu_s": [], "fwd_bwd_host_call_s": [], "chunk_cat": []}
    for _ in range(n):
        one_step(model, opt, x, ev, rec)
    return rec


def summary(rec):
    cc_s = [sum(c[0] for c in s) for s in rec["chunk_cat"]]
    layer = [c for s in rec["chunk_cat"] for c in s if c[3] > 6]
    return {"step_med": statistics.median(rec["step_s"]), "step_min": min(rec["step_s"]),
            "step_max": max(rec["step_s"]), "fb_gpu_med": statistics.median(rec["fwd_bwd_gpu_s"]),
            "fb_host_med": statistics.median(rec["fwd_bwd_host_call_s"]),
            "chunk_cat_s_med": statistics.median(cc_s),
            "layer_ns_per_block_med": statistics.median(c[0] / c[1] * 1e9 for c in layer) if layer else None,
            "layer_faults_per_512_blocks_med": statistics.median(c[2] / c[1] * 512 for c in layer) if layer else None}


out = {"facts": facts, "runs": []}


def host_ops(S=16384, h=2048, E=128, calls=16):
    """host time per call of ops that launch several kernels from C++ inside one dispatch (the
    routing path's torch.sort of S expert ids, index_put_ with accumulate=True into [S, h] bf16:
    the index backward), beside a one-kernel op (mul) on the same data, with the GPU kept busy
    (torch.cuda._sleep queued first) so no call waits for the device: median of 5 rounds of
    `calls` calls, host clock only."""
    ids = torch.randint(0, E, (S,), device=dev)
    x = torch.randn(S, h, device=dev, dtype=torch.bfloat16)
    dst = torch.zeros(S, h, device=dev, dtype=torch.bfloat16)
    perm = torch.randperm(S, device=dev)
    fns = {"mul": lambda: x.mul(2.0), "sort": lambda: torch.sort(ids),
           "index_put_accumulate": lambda: dst.index_put_((perm,), x, accumulate=True),
           "histc": lambda: torch.histc(ids.int(), bins=E, min=0, max=E - 1),
           "cumsum": lambda: torch.cumsum(ids, 0)}
    res = {}
    for name, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        per = []
        for _ in range(5):
            torch.cuda._sleep(int(2e8))
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            per.append((time.perf_counter() - t0) / calls)
            torch.cuda.synchronize()
        res[name] = statistics.median(per)
    return res


out["host_ops_s"] = host_ops()
print("host_ops", json.dumps(out["host_ops_s"]), flush=True)


def save():
    with open(os.path.join(args.out, "probe.json.tmp"), "w") as f:
        json.dump(out, f)
    os.replace(os.path.join(args.out, "probe.json.tmp"), os.path.join(args.out, "probe.json"))


save()
specs = args.runs.split(",")
for i, spec in enumerate(specs):
    if time.perf_counter() - T_START > args.budget_s:
        print("skipped (time budget): %s" % spec, flush=True)
        continue
    name, seq, mbs, layers, *rest = spec.split(":")
    seq, mbs, layers = int(seq), int(mbs), int(layers)
    ckpt = bool(rest and rest[0] == "ckpt")
    tb = time.perf_counter()
    model, V, ei = build_fsdp2_model(name, dev, layers, ckpt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator(device=dev).manual_seed(1234)
    ids = torch.randint(0, V, (mbs, seq + 1), device=dev, generator=g)
    x = ids[:, :-1].contiguous()
    cfg = model.config
    r = {"spec": spec, "model": name, "seq": seq, "mbs": mbs, "layers": layers, "ckpt": ckpt,
         "experts_implementation": ei, "experts_class": [type(m).__name__ for _, m in experts_modules(model)][:1],
         "build_s": round(time.perf_counter() - tb, 2)}
    for _ in range(args.warmup):
        one_step(model, opt, x, [torch.cuda.Event(enable_timing=True) for _ in range(2)], None)
    r["default"] = timed(model, opt, x, args.steps)
    r["default_summary"] = summary(r["default"])
    print(spec, json.dumps(r["default_summary"]), flush=True)
    E = getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
    r["routing"] = routing(model, x, E)
    if r["routing"]:
        rows = r["routing"][0]["rows"]
        fdim = getattr(cfg, "moe_intermediate_size", None) or cfg.intermediate_size
        S = sum(rows)
        eq = [S // E + (1 if j < S % E else 0) for j in range(E)]
        r["grouped_mm"] = {"measured_rows": grouped_mm_bench(rows, cfg.hidden_size, fdim),
                           "equal_rows": grouped_mm_bench(eq, cfg.hidden_size, fdim)}
        print(spec, "routing max/mean", [round(q["max_over_mean"], 2) for q in r["routing"]],
              "grouped_mm", json.dumps(r["grouped_mm"]), flush=True)
    if i == args.trace:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            one_step(model, opt, x, [torch.cuda.Event(enable_timing=True) for _ in range(2)], None)
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        prof.export_chrome_trace(tmp)
        with open(tmp, "rb") as fi, gzip.open(os.path.join(args.out, "trace_%s.json.gz" % spec.replace(":", "_")),
                                             "wb", compresslevel=6) as fo:
            shutil.copyfileobj(fi, fo)
        os.unlink(tmp)
    if args.mallopt and i == len(specs) - 1:
        libc = ctypes.CDLL("libc.so.6")
        # M_TRIM_THRESHOLD -1, M_TOP_PAD -2, M_MMAP_THRESHOLD -3 (malloc.h); 32 MiB is the largest
        # mmap threshold glibc takes on 64-bit
        r["mallopt_ok"] = [libc.mallopt(-3, 32 << 20), libc.mallopt(-1, 1 << 30), libc.mallopt(-2, 64 << 20)]
        for _ in range(2):
            one_step(model, opt, x, [torch.cuda.Event(enable_timing=True) for _ in range(2)], None)
        r["mallopt"] = timed(model, opt, x, args.steps)
        r["mallopt_summary"] = summary(r["mallopt"])
        print(spec, "mallopt", json.dumps(r["mallopt_summary"]), flush=True)
    r["chunk_cat_calls_seen"] = CC["calls"]
    r["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(dev)
    out["runs"].append(r)
    save()
    del model, opt
    import gc
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
out["wall_s"] = round(time.perf_counter() - T_START, 1)
save()
print("facts", json.dumps({k: v for k, v in facts.items()}), flush=True)
print("wall_s", out["wall_s"], flush=True)
dist.destroy_process_group()
