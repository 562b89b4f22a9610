#!/usr/bin/env python3
"""What one decoder layer saves for its backward, tensor by tensor: Hugging Face transformers'
decoder layers (AutoModelForCausalLM.from_config(attn_implementation="sdpa") as realrun.py
--impl hf builds them, cut to a few layers, bf16 parameters = the FSDP2 compute copy) and the
native (torchtitan-style) block of native_llama.py, eager, no checkpointing.

Two measurements a (config, impl), each at two layer counts so the input, the output, the final
norm, the rotary tables and everything per step cancel:
  (a) the slope of torch.cuda.memory_allocated() after the forward, less the output, a layer;
  (b) every tensor the autograd graph saves, through torch.autograd.graph.saved_tensors_hooks,
      deduplicated by storage (untyped_storage().data_ptr(); a view keeps its whole base alive,
      so the storage's bytes are what is held), parameters and the input excluded, each with
      its shape, dtype, storage bytes and the source line (innermost transformers /
      native_llama.py frame) that saved it.
The HF stack is run as model.model(inputs_embeds=x) (the decoder stack with its rotary
embedding and final norm, without the embedding lookup and the head).

Why: plan's Hugging Face memory terms (costmodel/memory_activations.c, the eager PyTorch block)
charge the attention output's contiguous copy, LlamaRMSNorm's fp32 upcasts, Qwen3's q/k norms and
Phi-3's fused qkv by reading the source; issue 14 asks which of them the graph really keeps.

  python3 bench/realruns/hf_saved_probe.py --configs llama-3.1-8b,qwen3-8b,phi-3-mini-4k \
      --impls hf,native --seq 4096 --mbs 2 --out DIR
Writes DIR/slopes.jsonl (one line a config and impl) and DIR/saved_<impl>_<config>_L<n>.json.
"""
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ap = argparse.ArgumentParser()
ap.add_argument("--configs", required=True)
ap.add_argument("--impls", default="hf,native")
ap.add_argument("--seq", type=int, default=4096)
ap.add_argument("--mbs", type=int, default=2)
ap.add_argument("--layers", default="1,3")
ap.add_argument("--out", required=True)
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
dev = torch.device("cuda")


def load_cfg(name):
    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        return json.load(f)


def build_hf(cfg_d, n):
    from transformers import AutoConfig, AutoModelForCausalLM
    d = {k: v for k, v in cfg_d.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version")}
    d["num_hidden_layers"] = n
    if "max_window_layers" in d:
        d["max_window_layers"] = min(d["max_window_layers"], n)
    if isinstance(d.get("layer_types"), list):
        d["layer_types"] = d["layer_types"][:n]
    d["use_cache"] = False
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
    model.train()
    stack = model.model
    del model.lm_head
    stack.embed_tokens = None
    hidden = cfg.hidden_size

    def fwd(x):
        return stack(inputs_embeds=x, use_cache=False).last_hidden_state
    return stack, fwd, hidden


def build_native(cfg_d, n):
    from native_llama import Args, TransformerBlock, precompute_freqs_cis
    A = Args(cfg_d, 1)
    freqs = precompute_freqs_cis(A.head_dim, args.seq, A.theta, A.rope_scaling).to(dev)
    with torch.device(dev):
        blocks = torch.nn.ModuleList([TransformerBlock(A) for _ in range(n)]).to(torch.bfloat16)

    def fwd(x):
        h = x
        for b in blocks:
            h = b(h, freqs)
        return h
    return blocks, fwd, A.dim


def site():
    """the innermost frames of transformers or native_llama.py that led to this save"""
    f = sys._getframe(2)
    out = []
    while f is not None and len(out) < 3:
        fn = f.f_code.co_filename
        if "/transformers/" in fn or "native_llama" in fn:
            short = fn.split("/transformers/")[-1] if "/transformers/" in fn else os.path.basename(fn)
            out.append("%s:%d %s" % (short, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return out


def measure(impl, name, n):
    cfg_d = load_cfg(name)
    torch.manual_seed(0)
    mod, fwd, hidden = (build_hf if impl == "hf" else build_native)(cfg_d, n)
    with torch.no_grad():
        for p in mod.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    pptr = {p.untyped_storage().data_ptr() for p in mod.parameters()}
    x = torch.randn(args.mbs, args.seq, hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
    # warm-up forward and backward (cuDNN plans, workspace) outside the measured one
    fwd(x).float().pow(2).mean().backward()
    x.grad = None
    for p in mod.parameters():
        p.grad = None
    torch.cuda.synchronize()
    saved = {}

    def pack(t):
        if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
            return t
        st = t.untyped_storage()
        key = st.data_ptr()
        kind = "param" if key in pptr else ("input" if key == x.untyped_storage().data_ptr() else "act")
        e = saved.get(key)
        if e is None:
            saved[key] = {"storage_bytes": st.nbytes(), "kind": kind, "saves": []}
            e = saved[key]
        e["saves"].append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                           "stride": list(t.stride()), "site": site()})
        return t

    m0 = torch.cuda.memory_allocated()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fwd(x)
    torch.cuda.synchronize()
    m1 = torch.cuda.memory_allocated()
    held = m1 - m0 - out.numel() * out.element_size()
    out.float().pow(2).mean().backward()
    torch.cuda.synchronize()
    ok = bool(torch.isfinite(x.grad).all())
    act = sum(e["storage_bytes"] for e in saved.values() if e["kind"] == "act")
    with open(os.path.join(args.out, "saved_%s_%s_L%d.json" % (impl, name, n)), "w") as f:
        json.dump({"impl": impl, "config": name, "layers": n, "seq": args.seq, "mbs": args.mbs,
                   "held_bytes": held, "saved_act_storage_bytes": act, "backward_ok": ok,
                   "storages": sorted(saved.values(), key=lambda e: -e["storage_bytes"])}, f, indent=1)
    del mod, fwd, x, out, saved
    torch.cuda.empty_cache()
    return held, act, ok


vers = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name()}
try:
    import transformers
    vers["transformers"] = transformers.__version__
    vers["transformers_file"] = transformers.__file__
except ImportError:
    pass
la, lb = (int(v) for v in args.layers.split(","))
tokens = args.mbs * args.seq
for name in args.configs.split(","):
    for impl in args.impls.split(","):
        t0 = time.time()
        try:
            ha, sa, oka = measure(impl, name, la)
            hb, sb, okb = measure(impl, name, lb)
        except Exception as e:  # one config's failure must not lose the others
            rec = {"config": name, "impl": impl, "error": repr(e)[:500]}
        else:
            rec = {"config": name, "impl": impl, "seq": args.seq, "mbs": args.mbs, "layers": [la, lb],
                   "held_bytes": [ha, hb], "saved_act_bytes": [sa, sb],
                   "held_bytes_per_token_layer": (hb - ha) / (lb - la) / tokens,
                   "saved_bytes_per_token_layer": (sb - sa) / (lb - la) / tokens,
                   "backward_ok": oka and okb, "wall_s": round(time.time() - t0, 2)}
        rec.update(vers)
        rec["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(json.dumps(rec), flush=True)
        with open(os.path.join(args.out, "slopes.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
