#!/usr/bin/env python3
"""The backward of GPT-OSS's per-expert bias gathers (issue 14, branch refit23).

transformers 5.x runs GptOssExperts through the grouped_mm experts path with biases: it gathers
gate_up_proj_bias[expert_ids] ([E, 2f] -> [S, 2f]) and down_proj_bias[expert_ids] ([E, h] ->
[S, h]) for the S = T x top_k routed rows, sorted by expert. Autograd's backward of each gather is
index_put_ with accumulate into an [E, w] zero tensor (aten/src/ATen/native/cuda/Indexing.cu,
index_put_with_sort_kernel -> indexing_backward_kernel): the S indices hold only E distinct values,
and the kernel gives each distinct value's run of duplicates to one warp per 32 x 4 feature slice,
which walks the run serially (a read-modify-write of the same gradient row per duplicate). This
probe measures that on random data (one H200; CUDA events, 3 warm-ups, median of 15; the kernel's
own time from torch.profiler, median over 6 calls):

  sweep   x[ids] backward for x [E, w] bf16 and ids = the sorted expert ids of T tokens routed to
          top_k = 4 distinct experts uniformly at random (as a fresh router routes), at GPT-OSS-20B
          (E 32) and 120B (E 128) widths (2f = 5760, h = 2880) and T 2048-16384; then E and w
          varied at T 8192 to separate the run length (S / E duplicates) from the warps in flight
          (E x ceil(w / 128)); and the hidden-state gather's backward (T rows of h, k duplicates)
          for comparison. Records the longest run (max duplicates of one expert).
  module  transformers' own GptOssMLP (router + experts, one layer built from configs/gpt-oss-20b.json
          values, bf16) forward + backward at b 2 s 4096: every kernel with its count and time
          (torch.profiler), to see which launches are the bias gathers' backward.
  src     where the installed transformers gathers the biases (file and line numbers only).

Usage: python3 bench/realruns/bias_gather_probe.py --out DIR [--quick]
"""
import argparse
import inspect
import json
import os
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--quick", action="store_true")
ap.add_argument("--skip", default="")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
DEV = "cuda"
BF = torch.bfloat16
T0 = time.time()
K = 4


def emit(name, rec):
    rec["t_s"] = round(time.time() - T0, 1)
    line = json.dumps(rec, sort_keys=True)
    print(line, flush=True)
    with open(os.path.join(args.out, name), "a") as f:
        f.write(line + "\n")


def timed(fn, reps=15, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev) / 1e3


def kernels_of(fn, reps):
    """[(name, duration_us)] of every kernel fn launches, reps calls, via a chrome trace."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    path = os.path.join(args.out, "_trace.json")
    prof.export_chrome_trace(path)
    ev = json.load(open(path))["traceEvents"]
    os.remove(path)
    return [(e["name"], float(e["dur"])) for e in ev
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def routed_ids(T, E, k=K):
    """sorted expert ids of T tokens each routed to k distinct experts uniformly at random"""
    ids = torch.rand(T, E, device=DEV).topk(k, dim=-1).indices.reshape(-1)
    return ids.sort().values


def sweep():
    Ts = [2048, 8192] if args.quick else [2048, 4096, 8192, 16384]
    cases = []
    for E in (32, 128):
        for w in (5760, 2880):
            for T in Ts:
                cases.append(("bias", E, w, T))
    for E in (8, 16, 64, 256):
        cases.append(("bias_E", E, 2880, 8192))
    for w in (128, 512, 1024, 11520):
        cases.append(("bias_w", 32, w, 8192))
    for T in (4096, 8192):
        cases.append(("hidden", T, 2880, T))  # x [T, h], ids = sorted token of each routed copy
    torch.manual_seed(0)
    first = True
    for kind, E, w, T in cases:
        if kind == "hidden":
            # transformers: hidden_states[perm // top_k], perm = the expert ids' sort order
            ex = torch.rand(T, 32, device=DEV).topk(K, dim=-1).indices.reshape(-1)
            ids = torch.sort(ex, stable=True).indices // K
            rows = T
        else:
            ids = routed_ids(T, E)
            rows = E
        x = torch.randn(rows, w, device=DEV, dtype=BF, requires_grad=True)
        y = x[ids]
        g = torch.randn_like(y)
        counts = torch.bincount(ids, minlength=rows)

        def bwd():
            torch.autograd.grad(y, x, g, retain_graph=True)

        op_s = timed(bwd)
        ks = kernels_of(bwd, 6)
        ib = [d for n, d in ks if "indexing_backward_kernel" in n]
        names = sorted({n.split("(")[0][:90] for n, _ in ks})
        rec = {"section": "sweep", "kind": kind, "rows": rows, "w": w, "T": T, "S": int(ids.numel()),
               "dup_mean": ids.numel() / rows, "dup_max": int(counts.max()),
               "warps": rows * -(-w // 128), "op_s": op_s,
               "kernel_us_median": statistics.median(ib) if ib else None,
               "kernel_launches_per_call": len(ib) / 6, "launches_per_call": len(ks) / 6,
               "kernel_name": next((n.split("(")[0] for n, _ in ks if "indexing_backward" in n), None)}
        if first:
            rec["kernels_one_call"] = [(n[:100], round(d, 2)) for n, d in ks[:len(ks) // 6]]
            first = False
        else:
            rec["kernel_names"] = names
        emit("sweep.jsonl", rec)
        del x, y, g


def module():
    from transformers import AutoConfig, AutoModelForCausalLM
    here = os.path.dirname(os.path.abspath(__file__))
    d = json.load(open(os.path.join(here, "configs", "gpt-oss-20b.json")))
    d = {k: v for k, v in d.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version", "architectures")}
    d["num_hidden_layers"] = 1
    d["layer_types"] = d["layer_types"][:1]
    d["use_cache"] = False
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    torch.manual_seed(0)
    with torch.device(DEV):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=BF)
    model.train()
    mlp = model.model.layers[0].mlp
    rec = {"section": "module", "experts_implementation":
           str(getattr(model.config, "_experts_implementation", None)),
           "mlp_class": type(mlp).__name__, "experts_class": type(mlp.experts).__name__}
    for n, p in mlp.named_parameters():
        rec.setdefault("params", {})[n] = list(p.shape)
    b, s = 2, 4096
    x = torch.randn(b, s, cfg.hidden_size, device=DEV, dtype=BF, requires_grad=True)

    def fb():
        out = mlp(x)
        o = out[0] if isinstance(out, tuple) else out
        o.backward(torch.ones_like(o) * 1e-3)
        mlp.zero_grad(set_to_none=True)
        x.grad = None

    rec["fwd_bwd_s"] = timed(fb, reps=8, warm=3)
    ks = kernels_of(fb, 3)
    agg = {}
    for n, dd in ks:
        a = agg.setdefault(n, [0, 0.0, []])
        a[0] += 1
        a[1] += dd
        a[2].append(dd)
    rows = sorted(agg.items(), key=lambda kv: -kv[1][1])
    with open(os.path.join(args.out, "module_kernels.tsv"), "w") as f:
        f.write("calls_per_step\ttotal_us_per_step\tdurations_us_first_step\tname\n")
        for n, (c, tot, ds) in rows:
            f.write(f"{c / 3:g}\t{tot / 3:.1f}\t{','.join('%.1f' % v for v in ds[:c // 3])}\t{n[:300]}\n")
    rec["kernels_per_step"] = len(ks) / 3
    rec["busy_s_per_step"] = sum(dd for _, dd in ks) / 3e6
    emit("module.jsonl", rec)


def src():
    out = {"section": "src"}
    try:
        import transformers
        out["transformers"] = transformers.__version__
        from transformers.integrations import moe
        f = inspect.getsourcefile(moe)
        lines = open(f).read().splitlines()
        out["moe_py"] = f
        out["moe_lines_bias"] = [(i + 1, ln.strip()[:120]) for i, ln in enumerate(lines)
                                 if "bias" in ln and ("[" in ln or "add" in ln or "+" in ln)][:40]
        from transformers.models.gpt_oss import modeling_gpt_oss as mg
        f2 = inspect.getsourcefile(mg)
        l2 = open(f2).read().splitlines()
        out["gpt_oss_lines"] = [(i + 1, ln.strip()[:120]) for i, ln in enumerate(l2)
                                if "use_experts_implementation" in ln or "_bias" in ln][:40]
    except Exception as e:  # noqa: BLE001
        out["error"] = repr(e)
    emit("src.jsonl", out)


emit("env.jsonl", {"section": "env", "torch": torch.__version__, "cuda": torch.version.cuda,
                   "gpu": torch.cuda.get_device_name(0),
                   "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())})
for name, fn in (("src", src), ("sweep", sweep), ("module", module)):
    if name in args.skip.split(","):
        continue
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        emit("errors.jsonl", {"section": name, "error": repr(e)})
print("done in %.1f s" % (time.time() - T0))
