/*
 * recompute_modules.h — Megatron-Core's selective recompute by module (--recompute-granularity
 * selective --recompute-modules ...): which parts of a layer drop their saved activations and
 * re-run their forward in the backward. NVIDIA's published recipes set it per model (DeepSeek-V3:
 * mla_up_proj and mlp; GPT-OSS: layernorm and moe_act), and the memory it frees decides whether
 * those layouts fit.
 *
 * Source: Megatron-LM d98e8a6, megatron/core/transformer/transformer_config.py
 * (recompute_modules: choices, default ["core_attn"], the rules in __post_init__), and where each
 * module checkpoints: transformer_layer.py (core_attn, layernorm, mlp, moe), experts.py (moe_act),
 * multi_latent_attention.py (mla_up_proj), moe/shared_experts.py (shared_experts). "moe_act",
 * "layernorm" and "mla_up_proj" use output-discarding checkpointing (the module's output is freed
 * and re-made before the backward that needs it), the others normal checkpointing (only the
 * module's input is kept).
 *
 * A layout holds a bit set (layout.recompute_modules); 0 with selective recompute is Megatron's
 * default, core attention alone, which is what "selective" meant before the field existed.
 */
#ifndef PLAN_RECOMPUTE_MODULES_H
#define PLAN_RECOMPUTE_MODULES_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "model.h"

enum { /* in the order Megatron's docstring lists them */
    RECOMPUTE_MOD_CORE_ATTN = 1u << 0,
    RECOMPUTE_MOD_MOE_ACT = 1u << 1,
    RECOMPUTE_MOD_LAYERNORM = 1u << 2,
    RECOMPUTE_MOD_MLA_UP_PROJ = 1u << 3,
    RECOMPUTE_MOD_MLP = 1u << 4,
    RECOMPUTE_MOD_MOE = 1u << 5,
    RECOMPUTE_MOD_SHARED_EXPERTS = 1u << 6,
    RECOMPUTE_MOD_ALL = (1u << 7) - 1
};

/* The modules the layout recomputes: none unless Megatron's selective recompute; its default
 * (core attention) when the set is empty. */
unsigned recompute_modules_of(const layout *l);

/* "mla_up_proj,mlp" (Megatron's names, in its documented order, joined by sep). */
void recompute_modules_text(unsigned mods, char sep, char *buf, size_t len);
/* Parses Megatron's names separated by commas or spaces; false (and *bad set to the offending
 * name, up to badlen) on an unknown one or an empty list. */
bool recompute_modules_parse(const char *s, unsigned *out, char *bad, size_t badlen);

/* Per token of one layer, the activation bytes each module's recompute frees, given what the
 * layer would otherwise save (memory.c passes its own terms, so the two cannot drift). */
typedef struct {
    double norm_outputs;     /* the two norms' outputs as the next Linear saves them */
    double qkv_up;           /* MLA: the up-projected q, k, v the attention core keeps */
    double dense_mlp;        /* a dense layer's MLP intermediates */
    double expert_act;       /* the routed experts' activation outputs (FC2 inputs) */
    double moe_all;          /* everything a MoE block keeps beyond its input */
    double shared;           /* the shared experts' intermediates */
} recompute_saved_terms;
double recompute_modules_freed_bytes(unsigned mods, const recompute_saved_terms *s);

/* Does the selective recompute re-run this recipe op (by its name and kind in
 * layer_recipe.c)? Elementwise re-runs (layernorm, moe_act) are folded into Transformer Engine's
 * one fused elementwise lump per pass and are not separated: at most 2 x 4h (norms) and
 * top_k x 6 x expert_ffn bytes (SwiGLU) per token of memory traffic, under 2% of a layer's
 * step at the published recipes' shapes (bench/README.md). */
bool recompute_modules_reruns(unsigned mods, bool moe_layer, const char *op_name, int op_kind);

#endif
