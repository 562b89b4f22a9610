"""fsdp2_model.py — the profiling scripts' one way to build a Hugging Face model from a config in
configs/ (no weights) and wrap it as the guide's FSDP2 trainer does: fp32 parameters, bf16
compute, fp32 reduce, fully_shard per decoder layer and on the root, reshard after forward.
Used by phase_profile.py, step_profile.py and gap_profile.py (realrun.py keeps its own, with
the options it records)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def build_fsdp2_model(name, dev, layers=0, ckpt=False, attn="sdpa", overrides=None):
    """(model, vocab size, transformers' experts implementation or None) for configs/NAME.json
    on device dev, cut to `layers` decoder layers when layers > 0; ckpt: gradient checkpointing
    of every layer as realrun.py --ckpt sets it (before fully_shard, use_reentrant=False); attn:
    transformers' attn_implementation (realrun.py --attn: sdpa, or eager); overrides: config keys
    to set after loading (a probe's controlled variant, e.g. {"residual_dropout": 0.0})."""
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import AutoConfig, AutoModelForCausalLM
    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        d = json.load(f)
    d = {k: v for k, v in d.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version")}
    if layers:
        d["num_hidden_layers"] = layers
        if "max_window_layers" in d:
            d["max_window_layers"] = min(d["max_window_layers"], layers)
        if isinstance(d.get("layer_types"), list):  # per-layer kinds (gpt-oss): the first N
            d["layer_types"] = d["layer_types"][:layers]
    d["use_cache"] = False
    d.update(overrides or {})
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=torch.float32)
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    lay = [m for n, m in model.named_modules() if n.endswith("layers")][0]
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in lay:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    ei = getattr(model.config, "_experts_implementation", None)
    return model, d["vocab_size"], (str(ei) if ei is not None else None)


def marked_step(model, x, opt, mark):
    """(step, hooks): one training step as realrun.py --impl hf runs it (zero_grad(set_to_none),
    Hugging Face's own loss, backward, clip_grad_norm_ 1.0, the optimizer's step), calling
    mark(label) at each boundary the memory scripts split a step at: "zero_grad", "forward + loss"
    (when the loss's backward starts), "block I bwd" (each decoder block's full backward hook: its
    input gradient exists), "root tail of backward", "clip", "optimizer step". Remove the hooks
    when done. Used by memory_phase_peaks.py and memory_peak_owners.py."""
    import torch
    blocks = [m for n, m in model.named_modules() if n.endswith("layers")][0]
    hooks = [b.register_full_backward_hook(lambda mod, gi, go, i=i: mark("block %d bwd" % i))
             for i, b in enumerate(blocks)]

    class LossMark(torch.autograd.Function):  # marks the moment the loss's backward starts
        @staticmethod
        def forward(ctx, t):
            return t.view_as(t)

        @staticmethod
        def backward(ctx, gt):
            mark("forward + loss")
            return gt

    def step():
        opt.zero_grad(set_to_none=True)
        mark("zero_grad")
        loss = LossMark.apply(model(input_ids=x, labels=x).loss)
        loss.backward()
        mark("root tail of backward")
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        mark("clip")
        opt.step()
        mark("optimizer step")

    return step, hooks
