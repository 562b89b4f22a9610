"""The config.json of the model bench/realruns/native_llama.py builds, for pricing its runs.

Why a module of its own: realrun.py --impl native and parallel_run.py train native_llama.py's model
(torchtitan's Llama) built from a Hugging Face config.json, and that model reads only some of the
config: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
intermediate_size, vocab_size, rms_norm_eps, rope_theta, rope_scaling, tie_word_embeddings, and
model_type only to add Qwen3's per-head q/k RMSNorm (native_llama.py Args). Every block is
RMSNorm -> attention (bias-free wq/wk/wv/wo, RoPE over the whole head, SDPA causal) -> residual
-> RMSNorm -> SwiGLU (bias-free w1/w2/w3) -> residual, whatever else the config says. plan reads
the rest too (its model_type's forms: GLM-4's attention bias, partial rotary and post-norms,
Qwen2's q/k/v biases, Phi-3's fused qkv_proj, a sliding window), so fidelity.py and
mgpu_fidelity.py hand plan this config instead: the model the run trained (issue 19, helper
tpglm25: the GLM-4-9B TP 2 row priced GLM-4's forms the native run did not have, 102,400
parameters more than the run's record counted). The MoE layer of parallel_run.py --layout ep
(prun_moe.py) reads the config's expert keys; such configs keep their model_type and expert keys
and lose what the attention and norms do not build, and what prun_moe.py's MoEBlock does not build
either: it makes every decoder layer an MoE layer of routed experts only (prun_build.py replaces
each block by an MoEBlock), so shared experts and dense layers are dropped (ho27's Qwen1.5-MoE EP
row was priced with the 5632-wide shared expert and q/k/v biases the run never had;
moe_native_config). Standard library only.
"""

# what native_llama.py Args reads (and plan needs beside it to parse a config)
DENSE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
              "intermediate_size", "vocab_size", "rms_norm_eps", "rope_theta", "rope_scaling",
              "tie_word_embeddings", "max_position_embeddings")
# model types whose native model adds a form: Qwen3's q/k norm (native_llama.py Args.qk_norm)
QK_NORM_TYPES = ("qwen3", "qwen3_moe")
# forms plan reads from generic keys that native_llama.py never builds
DROPPED_KEYS = ("attention_bias", "mlp_bias", "qkv_bias", "use_bias", "bias", "use_qk_norm",
                "partial_rotary_factor", "rotary_pct", "sliding_window", "max_window_layers",
                "use_sliding_window", "layer_types")


def is_moe(cfg):
    return bool(cfg.get("num_experts") or cfg.get("num_local_experts"))


def native_config(cfg):
    """A new config.json (dict) of the model native_llama.py builds from cfg."""
    mt = cfg.get("model_type")
    qk = mt in QK_NORM_TYPES
    if is_moe(cfg):
        return moe_native_config(cfg, qk)
    out = {"architectures": ["Qwen3ForCausalLM" if qk else "LlamaForCausalLM"],
           "model_type": "qwen3" if qk else "llama", "hidden_act": "silu",
           "head_dim": cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"],
           "attention_bias": False, "mlp_bias": False}
    for k in DENSE_KEYS:
        if k in cfg:
            out[k] = cfg[k]
    out.setdefault("num_key_value_heads", cfg["num_attention_heads"])
    if "_plan" in cfg:
        out["_plan"] = cfg["_plan"]
    return out


def moe_native_config(cfg, qk):
    """The config of parallel_run.py --layout ep's model: native_llama.py's attention and RMSNorms
    (q/k norms only for Qwen3's types), and in every layer prun_moe.py's MoE of routed SwiGLU
    experts only (num_experts or num_local_experts, moe_intermediate_size or intermediate_size,
    num_experts_per_tok, norm_topk_prob, a softmax router): written as Qwen3-MoE's config where
    the run has q/k norms, else as Mixtral's (plan reads either as exactly that), so the family's
    own forms (Qwen2-MoE's q/k/v biases and shared expert, OLMoE's q/k norms, PhiMoE's biases and
    LayerNorms) are not priced for a run that did not build them."""
    experts = cfg.get("num_experts") or cfg["num_local_experts"]
    ffn = cfg.get("moe_intermediate_size") or cfg["intermediate_size"]
    out = {"architectures": ["Qwen3MoeForCausalLM" if qk else "MixtralForCausalLM"],
           "model_type": "qwen3_moe" if qk else "mixtral", "hidden_act": "silu",
           "head_dim": cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"],
           "attention_bias": False, "num_experts_per_tok": cfg["num_experts_per_tok"],
           "norm_topk_prob": bool(cfg.get("norm_topk_prob", True))}
    for k in DENSE_KEYS:
        if k in cfg:
            out[k] = cfg[k]
    out.setdefault("num_key_value_heads", cfg["num_attention_heads"])
    if qk:
        out.update(num_experts=experts, moe_intermediate_size=ffn, decoder_sparse_step=1,
                   mlp_only_layers=[])
    else:
        out.update(num_local_experts=experts, intermediate_size=ffn)
    if "_plan" in cfg:
        out["_plan"] = cfg["_plan"]
    return out
