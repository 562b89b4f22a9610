"""fsdp2_model.py — the profiling scripts' one way to build a Hugging Face model from a config in
configs/ (no weights) and wrap it as the guide's FSDP2 trainer does: fp32 parameters, bf16
compute, fp32 reduce, fully_shard per decoder layer and on the root, reshard after forward.
Used by phase_profile.py, step_profile.py and gap_profile.py (realrun.py keeps its own, with
the options it records)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def build_fsdp2_model(name, dev, layers=0):
    """(model, vocab size, transformers' experts implementation or None) for configs/NAME.json
    on device dev, cut to `layers` decoder layers when layers > 0."""
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
    ei = getattr(model.config, "_experts_implementation", None)
    return model, d["vocab_size"], (str(ei) if ei is not None else None)
