#!/usr/bin/env python3
"""What Falcon-40B's attention (model_type falcon, new_decoder_architecture: 128 query heads, 8 KV
groups, head dim 64) costs under transformers' attn_implementation="sdpa" (issue 14, falcon27:
plan priced ho27's Falcon-40B steps 5-11% fast, more at 4k and with checkpointing).

FalconAttention._split_heads (new architecture) views the fused QKV output as
[b, s, 8, 16 + 2, 64], broadcasts each group's one k and v to its 16 query heads and flattens
(a copy of a broadcast view); forward then applies RoPE to q and to the 128-head k and calls
F.scaled_dot_product_attention with FalconModel's mask. This script, on one GPU:
  0. records the installed transformers' source of FalconAttention._split_heads and .forward and
     the mask lines of FalconModel.forward (line numbers of the installed file);
  1. records what a real one-layer FalconForCausalLM passes to SDPA at each probed (b, s):
     shapes, strides, dtypes, mask, is_causal, keyword arguments;
  2. tries each SDPA backend alone on those arguments at (b 2, s 2048): which accept them;
  3. times, with tensors of the same shapes and strides (random bf16, the captured mask), the
     default dispatch forward and forward + backward, and the same q, k, v with is_causal and no
     mask (what plan priced), and each backend forced (CUDA events, 3 warm-ups, median of 10);
     the kernels the profiler sees for the default call;
  4. one FalconAttention block (module of the one-layer model, bf16 weights) and one whole
     FalconDecoderLayer at (2, 2048) and (1, 4096): forward and forward + backward times, saved
     bytes (saved_tensors_hooks, each storage once), peaks, and the profiler's kernels and aten
     ops (self device time) of one forward + backward.
Usage: CUDA_VISIBLE_DEVICES=0 python3 bench/realruns/falcon40b_attn_probe.py \
         --config bench/realruns/configs/falcon-40b.json --out $OUT/falcon40b_attn_probe.jsonl \
         --source-out $OUT/falcon40b_source.txt
"""
import argparse
import inspect
import json
import statistics

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--config", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--source-out", required=True)
args = ap.parse_args()
dev = "cuda"
torch.manual_seed(0)
out = open(args.out, "w")


def emit(rec):
    out.write(json.dumps(rec) + "\n")
    out.flush()
    print(json.dumps(rec)[:400], flush=True)


def timed(fn, reps=10, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return statistics.median(ts)


def saved_bytes(fn):
    seen = {}

    def pack(t):
        try:
            st = t.untyped_storage()
            seen[st.data_ptr()] = (st.nbytes(), str(t.dtype), list(t.shape))
        except Exception:
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        r = fn()
    return r, sum(v[0] for v in seen.values()), sorted(seen.values(), reverse=True)[:16]


def profiled(fn, top=45):
    """Kernels (name, count, device s) and aten ops with their input shapes (self device s)."""
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        fn()
        torch.cuda.synchronize()
    agg = {}
    for e in p.events():
        if e.device_type.name == "CUDA":
            k = e.name[:120]
            n, t = agg.get(k, (0, 0.0))
            dt = getattr(e, "device_time_total", None)
            if dt is None:
                dt = e.cuda_time_total
            agg[k] = (n + 1, t + dt / 1e6)
    ks = sorted(([k, n, round(t, 7)] for k, (n, t) in agg.items()), key=lambda x: -x[2])[:top]
    ops = []
    for e in p.key_averages(group_by_input_shape=True):
        st = getattr(e, "self_device_time_total", None)
        if st is None:
            st = getattr(e, "self_cuda_time_total", 0)
        if st > 0:
            ops.append([e.key, str(e.input_shapes)[:120], e.count, round(st / 1e6, 7)])
    ops.sort(key=lambda x: -x[3])
    return ks, ops[:top], round(sum(t for _, _, t in ks), 7)


import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.models.falcon import modeling_falcon as mf

emit({"what": "versions", "torch": torch.__version__, "transformers": transformers.__version__,
      "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
      "gpu": torch.cuda.get_device_name(0),
      "math_sdp_fp16_bf16_reduction": (torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()
                                        if hasattr(torch.backends.cuda,
                                                   "fp16_bf16_reduction_math_sdp_allowed")
                                        else None),
      "sdp_enabled": {"flash": torch.backends.cuda.flash_sdp_enabled(),
                      "mem_efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                      "cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
                      "math": torch.backends.cuda.math_sdp_enabled()}})

# 0. the installed source
with open(args.source_out, "w") as src:
    src.write("# %s (transformers %s)\n" % (inspect.getsourcefile(mf), transformers.__version__))
    for name in ("FalconAttention._split_heads", "FalconAttention.forward",
                 "apply_rotary_pos_emb", "rotate_half"):
        try:
            obj = mf
            for part in name.split("."):
                obj = getattr(obj, part)
            lines, start = inspect.getsourcelines(obj)
        except Exception as e:
            src.write("\n## %s: %r\n" % (name, e))
            continue
        src.write("\n## %s, lines %d-%d\n" % (name, start, start + len(lines) - 1))
        for i, ln in enumerate(lines):
            src.write("%5d %s" % (start + i, ln))
    lines, start = inspect.getsourcelines(mf.FalconModel.forward)
    src.write("\n## FalconModel.forward, the mask lines (of %d-%d)\n" % (start, start + len(lines) - 1))
    for i, ln in enumerate(lines):
        if "mask" in ln or "is_causal" in ln:
            src.write("%5d %s" % (start + i, ln))

d = json.load(open(args.config))
d.pop("_plan", None)
d.pop("architectures", None)
mt = d.pop("model_type")
# one layer, a small vocabulary (the attention does not see it)
cfg = AutoConfig.for_model(mt, **dict(d, num_hidden_layers=1, vocab_size=1024))
with torch.device(dev):
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
model.train()
layer = model.transformer.h[0]
attn = layer.self_attention
rotary = model.transformer.rotary_emb
H, HD = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads

# 1. what a real forward passes to SDPA, per shape (the tensors themselves kept for 3.)
orig = F.scaled_dot_product_attention
calls = []


def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
    calls.append((q, k, v, attn_mask, dropout_p, is_causal, kw))
    return orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)


def desc(t):
    return None if t is None else {"shape": list(t.shape), "stride": list(t.stride()),
                                   "dtype": str(t.dtype), "contig": t.is_contiguous()}


captured = {}
shapes = ((2, 2048), (1, 4096), (4, 2048), (2, 4096), (1, 2048))
for b, s in shapes:
    calls.clear()
    F.scaled_dot_product_attention = spy
    torch.nn.functional.scaled_dot_product_attention = spy
    ids = torch.randint(0, cfg.vocab_size, (b, s), device=dev)
    with torch.no_grad():
        model(input_ids=ids)
    F.scaled_dot_product_attention = orig
    torch.nn.functional.scaled_dot_product_attention = orig
    q, k, v, m, dp, ic, kw = calls[0]
    captured[(b, s)] = ([desc(q), desc(k), desc(v)], m, ic, kw)
    mask_info = desc(m)
    if m is not None:
        mask_info["causal_pattern"] = bool(torch.equal(
            m[0, 0], torch.ones(s, s, device=dev, dtype=torch.bool).tril()))
    emit({"what": "sdpa_call_in_falcon", "b": b, "s": s, "q": desc(q), "k": desc(k),
          "v": desc(v), "mask": mask_info, "dropout_p": dp, "is_causal": ic, "kw": sorted(kw),
          "k_heads_equal": bool(k.shape[1] == q.shape[1])})
    del q, k, v, calls[:]

from torch.nn.attention import SDPBackend, sdpa_kernel


def make(b, s):
    """Random bf16 q, k, v with the strides the real call had; its mask."""
    dq, m, ic, kw = captured[(b, s)]
    ts, leaves = [], []
    for dsc in dq:
        if 0 in dsc["stride"]:  # a broadcast view: random data under it, expanded
            base = torch.randn([1 if st == 0 else n for n, st in zip(dsc["shape"], dsc["stride"])],
                               device=dev, dtype=torch.bfloat16, requires_grad=True)
            ts.append(base.expand(dsc["shape"]))
            leaves.append(base)
            continue
        t = torch.empty_strided(dsc["shape"], dsc["stride"], device=dev, dtype=torch.bfloat16)
        t.normal_()
        ts.append(t.requires_grad_())
        leaves.append(t)
    return ts[0], ts[1], ts[2], m, ic, kw, leaves


# 2. which backends accept the arguments
q, k, v, m, ic, kw, leaves = make(2, 2048)
acc = {}
for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
           SDPBackend.MATH):
    try:
        with sdpa_kernel([be]):
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=ic, **kw)
            torch.autograd.grad(o.sum(), leaves)
        torch.cuda.synchronize()
        acc[be.name] = "ok"
    except Exception as e:
        acc[be.name] = str(e).replace("\n", " ")[:300]
emit({"what": "backends_accepting", "b": 2, "s": 2048, "mask": m is not None, "result": acc})
del q, k, v, m

# 3. the call at each shape
for b, s in shapes:
    q, k, v, m, ic, kw, leaves = make(b, s)
    go = torch.randn(b, H, s, HD, device=dev, dtype=torch.bfloat16)
    scores = b * H * s * s
    rec = {"what": "sdpa_at_shape", "b": b, "s": s, "heads": H, "head_dim": HD,
           "scores_full": scores}

    def variant(mask, causal, backend=None):
        def fwd():
            if backend is None:
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, **kw)
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, **kw)

        def fb():  # gradients returned, not accumulated into .grad
            o = fwd()
            if backend is None:
                torch.autograd.grad(o, leaves, go)
            else:
                with sdpa_kernel([backend]):
                    torch.autograd.grad(o, leaves, go)
        return fwd, fb

    fwd, fb = variant(m, ic)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    o, sv, top = saved_bytes(fwd)
    torch.cuda.synchronize()
    rec["fwd_peak_above_start_bytes"] = torch.cuda.max_memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    st = torch.cuda.memory_allocated()
    torch.autograd.grad(o, leaves, go)
    torch.cuda.synchronize()
    rec["bwd_peak_above_start_bytes"] = torch.cuda.max_memory_allocated() - st
    rec["saved_bytes"], rec["saved_top"] = sv, top
    del o
    tf, tfb = timed(fwd), timed(fb)
    rec.update(default_fwd_s=tf, default_bwd_s=tfb - tf,
               default_fwd_ps_per_score=tf / scores * 1e12,
               default_bwd_ps_per_score=(tfb - tf) / scores * 1e12)
    fwd_c, fb_c = variant(None, True)
    tcf, tcfb = timed(fwd_c), timed(fb_c)
    rec.update(is_causal_fwd_s=tcf, is_causal_bwd_s=tcfb - tcf)
    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        try:
            f1, fb1 = variant(m, ic, be)
            t1, t2 = timed(f1, reps=5, warm=2), timed(fb1, reps=5, warm=2)
            rec[be.name + "_fwd_s"], rec[be.name + "_bwd_s"] = t1, t2 - t1
        except Exception as e:
            rec[be.name + "_error"] = str(e)[:200]
    if (b, s) in ((2, 2048), (1, 4096)):
        rec["kernels_default_fwd_bwd"], _, rec["kernels_total_s"] = profiled(fb, top=12)
    emit(rec)
    del q, k, v, m, go
    torch.cuda.empty_cache()

# 4. one attention block and one decoder layer
for b, s in ((2, 2048), (1, 4096)):
    _, m, _, _ = captured[(b, s)]
    x = torch.randn(b, s, cfg.hidden_size, device=dev, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(s, device=dev)[None].expand(b, s)
    pe = rotary(x, pos)
    g = torch.randn(b, s, cfg.hidden_size, device=dev, dtype=torch.bfloat16)
    for name, mod, kwargs in (("attention_block", attn, {}), ("decoder_layer", layer, {})):
        def lf():
            r = mod(x, alibi=None, attention_mask=m, position_embeddings=pe, **kwargs)
            return r[0] if isinstance(r, tuple) else r

        wrt = [x] + list(mod.parameters())

        def fb():  # gradients returned, not accumulated into .grad
            torch.autograd.grad(lf(), wrt, g)

        rec = {"what": name, "b": b, "s": s,
               "param_bytes": sum(p.numel() * p.element_size() for p in mod.parameters())}
        try:
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            y, sv, top = saved_bytes(lf)
            torch.cuda.synchronize()
            rec["fwd_peak_above_start_bytes"] = torch.cuda.max_memory_allocated() - base
            rec["held_after_fwd_bytes"] = torch.cuda.memory_allocated() - base
            torch.cuda.reset_peak_memory_stats()
            st = torch.cuda.memory_allocated()
            torch.autograd.grad(y, wrt, g)
            torch.cuda.synchronize()
            rec["bwd_peak_above_start_bytes"] = torch.cuda.max_memory_allocated() - st
            del y
            rec["saved_bytes"], rec["saved_top"] = sv, top
            rec["fwd_s"] = timed(lf)
            rec["fwd_bwd_s"] = timed(fb)
            rec["bwd_s"] = rec["fwd_bwd_s"] - rec["fwd_s"]
            mod.zero_grad(set_to_none=True)
            x.grad = None
            rec["kernels_fwd"], rec["ops_fwd"], rec["kernel_sum_fwd_s"] = profiled(lf)
            rec["kernels_fwd_bwd"], rec["ops_fwd_bwd"], rec["kernel_sum_fwd_bwd_s"] = profiled(fb)
        except Exception as e:
            rec["error"] = repr(e)[:400]
        emit(rec)
    del x, g, pe
    torch.cuda.empty_cache()
out.close()
print("done", flush=True)
