#!/usr/bin/env python3
"""Which scaled_dot_product_attention backend transformers' Falcon-7B (model_type falcon,
multi_query: 71 query heads, one K/V head) runs under attn_implementation="sdpa", and what that
call costs in time and memory at Falcon's shapes (issue 14: ho25's Falcon rows ran 63% slower
and out of memory where plan priced a flash kernel).

transformers 5.17.0 models/falcon/modeling_falcon.py calls F.scaled_dot_product_attention with
q [b, 71, s, 64], k and v [b, 1, s, 64] (no enable_gqa) and the mask create_causal_mask built
with allow_is_causal_skip=False. This script:
  1. records what a real FalconModel layer passes to SDPA (shapes, strides, dtypes, is_causal);
  2. tries each backend alone on those arguments (sdpa_kernel([backend])): which accept them;
  3. times the default dispatch forward and backward (CUDA events, 3 warm-ups, median of 7,
     random bf16 data) and measures its memory: bytes autograd saves (saved_tensors_hooks,
     each storage once), the forward's and the backward's peak above their start, and the
     kernels the profiler sees (name, count, total CUDA time);
  4. times one whole FalconDecoderLayer forward + backward and its saved bytes.
Usage: python3 bench/realruns/falcon_sdpa_probe.py --config falcon-7b.json --out $OUT/x.jsonl
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--config", required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()
dev = "cuda"
torch.manual_seed(0)
out = open(args.out, "w")


def emit(rec):
    out.write(json.dumps(rec) + "\n")
    out.flush()
    print(json.dumps(rec)[:600], flush=True)


def timed(fn, reps=7, warm=3):
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
    """Runs fn() (a forward) recording what autograd saves; each storage counted once."""
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
    return r, sum(v[0] for v in seen.values()), sorted(seen.values(), reverse=True)[:12]


def kernels(fn):
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    agg = {}
    for e in p.events():
        if e.device_type.name == "CUDA":
            k = e.name[:110]
            n, t = agg.get(k, (0, 0.0))
            agg[k] = (n + 1, t + e.device_time_total / 1e6 if hasattr(e, "device_time_total")
                      else t + e.cuda_time_total / 1e6)
    return sorted(([k, n, round(t, 6)] for k, (n, t) in agg.items()), key=lambda x: -x[2])[:25]


import transformers
from transformers import AutoConfig, AutoModelForCausalLM

emit({"what": "versions", "torch": torch.__version__, "transformers": transformers.__version__,
      "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
      "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
      "allow_bf16_reduced_precision": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
      "math_sdp_fp16_bf16_reduction": (torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()
                                        if hasattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed")
                                        else None)})

d = json.load(open(args.config))
d.pop("_plan", None)
d.pop("architectures", None)
mt = d.pop("model_type")

# 1. What a real Falcon forward passes to SDPA
calls = []
orig = F.scaled_dot_product_attention


def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
    def desc(t):
        return None if t is None else {"shape": list(t.shape), "stride": list(t.stride()),
                                       "dtype": str(t.dtype), "contig": t.is_contiguous()}
    calls.append({"q": desc(q), "k": desc(k), "v": desc(v), "mask": desc(attn_mask),
                  "dropout_p": dropout_p, "is_causal": is_causal, "kw": sorted(kw)})
    return orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)


cfg = AutoConfig.for_model(mt, **dict(d, num_hidden_layers=1))
model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16).to(dev)
model.train()
F.scaled_dot_product_attention = spy
torch.nn.functional.scaled_dot_product_attention = spy
ids = torch.randint(0, cfg.vocab_size, (2, 512), device=dev)
model(input_ids=ids).logits.float().sum().backward()
F.scaled_dot_product_attention = orig
torch.nn.functional.scaled_dot_product_attention = orig
emit({"what": "sdpa_call_in_falcon", "b": 2, "s": 512, "calls": calls[:1]})
layer = model.transformer.h[0]
rotary = model.transformer.rotary_emb
del model

# 2. Which backends accept Falcon's arguments
from torch.nn.attention import SDPBackend, sdpa_kernel

H, KV, HD = cfg.num_attention_heads, 1, cfg.hidden_size // cfg.num_attention_heads


def make(b, s):
    q = torch.randn(b, H, s, HD, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, KV, s, HD, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, KV, s, HD, device=dev, dtype=torch.bfloat16, requires_grad=True)
    m = torch.ones(s, s, device=dev, dtype=torch.bool).tril()[None, None].expand(b, 1, s, s)
    c = calls[0]["mask"]
    if c is not None and c["stride"][0] != 0:
        m = m.contiguous()
    return q, k, v, (m if c is not None else None)


q, k, v, m = make(2, 2048)
acc = {}
for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
           SDPBackend.MATH):
    try:
        with sdpa_kernel([be]):
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=m is None)
            o.sum().backward()
        torch.cuda.synchronize()
        acc[be.name] = "ok"
    except Exception as e:
        acc[be.name] = str(e).replace("\n", " ")[:300]
emit({"what": "backends_accepting", "b": 2, "s": 2048, "mask": m is not None, "result": acc})
del q, k, v, m

# 3. The default dispatch at Falcon's shapes
for b, s in ((2, 2048), (4, 2048), (1, 4096)):
    q, k, v, m = make(b, s)
    go = torch.randn(b, H, s, HD, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    o, sv, top = saved_bytes(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                       is_causal=m is None))
    torch.cuda.synchronize()
    fwd_peak = torch.cuda.max_memory_allocated() - base
    after = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    start_b = torch.cuda.memory_allocated()
    o.backward(go)
    torch.cuda.synchronize()
    bwd_peak = torch.cuda.max_memory_allocated() - start_b
    del o
    q.grad = k.grad = v.grad = None

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=m is None)

    def fb():
        fwd().backward(go)

    tf = timed(fwd)
    tfb = timed(fb)
    ks = kernels(fb)
    scores = b * H * s * s
    emit({"what": "sdpa_default", "b": b, "s": s, "heads": H, "kv_heads": KV, "head_dim": HD,
          "scores": scores, "fwd_s": tf, "fwd_bwd_s": tfb, "bwd_s": tfb - tf,
          "saved_bytes": sv, "saved_per_score": sv / scores, "held_after_fwd_bytes": after,
          "fwd_peak_above_start_bytes": fwd_peak, "bwd_peak_above_start_bytes": bwd_peak,
          "saved_top": top, "kernels_fwd_bwd": ks})
    del q, k, v, m, go
    q = k = v = m = go = None
    torch.cuda.empty_cache()

# 4. One whole FalconDecoderLayer (bf16 weights), forward + backward
for b, s in ((2, 2048), (4, 2048)):
    x = torch.randn(b, s, cfg.hidden_size, device=dev, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(s, device=dev)[None].expand(b, s)
    pe = rotary(x, pos)
    mask = torch.ones(s, s, device=dev, dtype=torch.bool).tril()[None, None].expand(b, 1, s, s)
    if calls[0]["mask"] is None:
        mask = None
    elif calls[0]["mask"]["stride"][0] != 0:
        mask = mask.contiguous()
    g = torch.randn(b, s, cfg.hidden_size, device=dev, dtype=torch.bfloat16)

    def lf():
        r = layer(x, alibi=None, attention_mask=mask, position_embeddings=pe)
        return r[0] if isinstance(r, tuple) else r

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y, sv, top = saved_bytes(lf)
    torch.cuda.synchronize()
    fpk = torch.cuda.max_memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    st = torch.cuda.memory_allocated()
    y.backward(g)
    torch.cuda.synchronize()
    bpk = torch.cuda.max_memory_allocated() - st
    del y
    layer.zero_grad(set_to_none=True)
    x.grad = None
    tf = timed(lf)
    tfb = timed(lambda: lf().backward(g))
    emit({"what": "falcon_decoder_layer", "b": b, "s": s, "fwd_s": tf, "fwd_bwd_s": tfb,
          "saved_bytes": sv, "layer_param_bytes": sum(p.numel() * p.element_size()
                                                      for p in layer.parameters()), "fwd_peak_above_start_bytes": fpk,
          "bwd_peak_above_start_bytes": bpk, "saved_top": top})
    layer.zero_grad(set_to_none=True)
    del x, g, mask
    torch.cuda.empty_cache()
out.close()
