/*
 * titan_form.c — what none of torchtitan's model classes builds of a model (titan_form.h).
 * Source: pytorch/torchtitan b5bcd76 (the commit emit_torchtitan.c cites), torchtitan/models/
 * (registry models/__init__.py: deepseek_v3, gpt_oss, kimi_k2_7, llama3, muse_glimmer, qwen3,
 * qwen3_5; flux is not a language model). Paths below are under torchtitan/models/. The
 * model forms: costmodel/model.h (arch24). bench/results/ttform25_2026-11-29/README.md maps
 * every form plan reads to the class that has it.
 *
 * What some class has, so that it is not listed (a config function builds it):
 *  - biases on any projection or the output layer: Linear.Config bias (common/linear.py:33);
 *  - q/k norms of one head_dim weight: GQAttention qk_norm (common/attention.py:884, 909-914);
 *  - (1 + weight) RMSNorms: qwen3_5 OffsetRMSNorm (qwen3_5/model.py:41), muse_glimmer
 *    RMSGainCenterNorm (muse_glimmer/model.py:47);
 *  - norms before and after attention and MLP (four per layer): muse_glimmer's block
 *    (muse_glimmer/model.py:149-180);
 *  - sliding windows, per layer: VarlenAttention window_size (common/attention.py:112-121),
 *    muse_glimmer window_size (muse_glimmer/model.py:86), gpt_oss (gpt_oss/model.py:59);
 *    each layer's attention carries its own RoPE config, so a second base for some layers
 *    too (common/decoder.py:227-232); NoPE layers: muse_glimmer use_rope (model.py:82, 122);
 *  - RoPE scaling none, llama or yarn (common/rope.py:97);
 *  - final logit soft-capping and a logit multiplier: muse_glimmer SoftCappedLinear
 *    (muse_glimmer/model.py:184-214);
 *  - MoE: softmax or sigmoid routers, top-k renormalised or not, a route scale, node-limited
 *    groups (common/moe.py:193-201), a load-balancing expert bias (moe.py:377-388), shared
 *    experts, sigmoid-gated too (moe.py:363; common/feed_forward.py:57-75), any per-layer
 *    dense/MoE pattern (Decoder.Config layers is one config per layer, decoder.py:79);
 *    gpt-oss's biased, clamped experts and attention sinks (gpt_oss/moe.py:67-71,
 *    gpt_oss/model.py:82); MLA (deepseek_v3/model.py:28-129); multi-token prediction
 *    (deepseek_v3/mtp.py); tied embeddings (decoder.py:83).
 */
#include "titan_form.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* The activations torchtitan's gated MLPs compute: FeedForward is w2(silu(w1 x) * w3 x)
 * (common/feed_forward.py:53-54), the routed experts likewise (common/moe.py:94). */
static bool silu_named(const char *act)
{
    return !act[0] || !strcmp(act, "silu") || !strcmp(act, "swish");
}

int titan_form_missing(const model_spec *m, char items[][FORM_LIST_ITEM_CHARS], int max)
{
    form_list fl = form_list_on(items, max);
    form_list *f = &fl;

    /* the layer's shape: every block adds attention to the residual, then the MLP on the sum
     * (common/decoder.py:48; llama3/model.py:48-49, qwen3/model.py:60-65, gpt_oss/model.py:
     * 181-182, deepseek_v3/model.py:183-187, muse_glimmer/model.py:177-180, qwen3_5/model.py:
     * 212-223) */
    if (m->parallel_block)
        form_list_add(f, "attention and MLP in parallel on the same input (parallel block)");
    /* norms only after attention and MLP: muse_glimmer's post-norms come with pre-norms */
    if (m->post_norm && !m->sandwich_norm)
        form_list_add(f, "norms after attention and MLP instead of before them");
    /* the decoder's norms are RMSNorm configs (decoder.py:58-59, 75); nn.LayerNorm's config
     * (common/nn_modules.py:117-131, no bias switch) serves Flux and the vision encoders only
     * (flux/model/layers.py:230, muse_glimmer/__init__.py:243, kimi_k2_7/__init__.py:120) */
    if (m->norm == MODEL_NORM_LAYER)
        form_list_add(f, "LayerNorm%s in the decoder layers",
                      m->norm_no_bias ? " without a bias" : "");
    /* one RMSNorm of head_dim weights shared by the heads (attention.py:884, 928-931) */
    if (m->qk_norm_full) form_list_add(f, "q/k norm weights over every head");

    /* the MLP: SwiGLU only (feed_forward.py:34-54, moe.py:94; gpt-oss's clamped SwiGLU,
     * gpt_oss/moe.py:67-71) */
    if (m->activation == MODEL_ACT_GELU)
        form_list_add(f, "a plain two-matrix MLP (%s) instead of SwiGLU",
                      m->hidden_act[0] ? m->hidden_act : "gelu");
    else if (!silu_named(m->hidden_act))
        form_list_add(f, "a gated MLP with %s instead of SiLU", m->hidden_act);

    /* positions: token embeddings only (common/embedding.py:24); RoPE rotates the whole head
     * (rope.py:333-335) but for Qwen3.5's gated attention (qwen3_5/model.py:125-143) */
    if (m->learned_positions) {
        form_list_add(f, "learned absolute position embeddings");
    } else {
        if (m->rotary_fraction > 0 && m->rotary_fraction < 1)
            form_list_add(f, "RoPE on part of each head (%g of it) without Qwen3.5's gated "
                             "attention",
                          m->rotary_fraction);
        const char *rs = m->rope_scaling_type;
        if (rs[0] && strcmp(rs, "default") && strcmp(rs, "llama3") && strcmp(rs, "yarn"))
            form_list_add(f, "RoPE scaling \"%s\" (factor %g)", rs, m->rope_scaling_factor);
    }

    /* no score_mod soft-caps the attention logits in any model (attention.py:320 takes one) */
    if (m->attn_logit_softcap > 0)
        form_list_add(f, "attention logit soft-capping (%g)", m->attn_logit_softcap);
    /* Granite's multipliers: the logits' one is SoftCappedLinear output_multiplier */
    if (m->residual_multiplier > 0)
        form_list_add(f, "residual branches scaled by %g", m->residual_multiplier);
    if (m->embedding_multiplier > 0)
        form_list_add(f, "embeddings scaled by %g", m->embedding_multiplier);
    /* Gemma 1/2/3 scale the embeddings by sqrt(hidden) (transformers' Gemma*TextModel:
     * normalizer = hidden_size ** 0.5); no torchtitan model scales them (muse_glimmer's
     * EmbeddingWithNorm normalises instead, muse_glimmer/model.py:217) */
    else if (!strncasecmp(m->hf_model_type, "gemma", 5))
        form_list_add(f, "embeddings scaled by sqrt(hidden) (%.1f)", sqrt((double)m->hidden));
    /* no model applies dropout (no nn.Dropout or dropout_p under models/) */
    if (m->dropout || m->attention_dropout > 0) form_list_add(f, "dropout");
    /* sinks: gpt_oss's attention, whose block is MoE only (gpt_oss/model.py:182) */
    if (m->attention_sinks && !model_is_moe(m))
        form_list_add(f, "attention sinks in a dense layer (gpt_oss's block is MoE only)");
    return fl.n;
}
