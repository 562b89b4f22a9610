/*
 * flops.c — FLOP counts (see flops.h for the sources).
 *
 * The generic count takes every weight matrix a token multiplies by (2 FLOPs per parameter
 * per token) plus the attention core. For a GPT layer with h = a*d and f = 4h this gives
 * 24 b s h^2 + 4 b s^2 h forward, i.e. Narayanan's 72 B s h^2 (1 + s/6h) for fwd+bwd; the
 * tests check that identity. Sliding-window layers (Mistral-7B-v0.1, Gemma 2/3, gpt-oss, Phi-3)
 * attend to at most `sliding_window` keys per query: their attention core is counted over the
 * window (flops_attention_core_forward_layer).
 */
#include "flops.h"
#include "hf_eager_attn.h"
#include "hf_sdpa_math.h"
#include "recompute_modules.h"

double flops_attention_matrix_params(const model_spec *m)
{
    double h = m->hidden, a = m->heads;
    if (m->mla) {
        double qk = m->qk_nope_dim + m->qk_rope_dim;
        double q = m->q_lora_rank > 0 ? h * m->q_lora_rank + (double)m->q_lora_rank * a * qk
                                      : h * a * qk;
        double kv = h * (m->kv_lora_rank + m->qk_rope_dim) +
                    (double)m->kv_lora_rank * a * (m->qk_nope_dim + m->v_head_dim);
        return q + kv + a * m->v_head_dim * h;
    }
    double qd = model_q_dim(m), kvd = model_kv_dim(m);
    return h * qd + 2.0 * h * kvd + qd * h;
}

static double mlp_matrix(const model_spec *m, double width)
{
    return (m->activation == MODEL_ACT_SWIGLU ? 3.0 : 2.0) * m->hidden * width;
}

double flops_mlp_matrix_params(const model_spec *m, int moe_layer)
{
    if (!moe_layer) return mlp_matrix(m, m->ffn);
    return m->top_k * mlp_matrix(m, m->expert_ffn) +
           m->shared_experts * mlp_matrix(m, m->shared_ffn) + (double)m->hidden * m->experts;
}

double flops_attention_core_forward_layer(const model_spec *m, int layer, double tokens,
                                          double seq, bool causal)
{
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
    double v = m->mla ? m->v_head_dim : m->head_dim;
    double f = 2.0 * tokens * seq * m->heads * (qk + v);
    if (!causal) return f;
    if (model_layer_is_sliding(m, layer) && m->sliding_window < seq) {
        /* Sliding-window attention (Beltagy et al. 2020, "Longformer"; Mistral-7B, Jiang et al.
         * 2023, Sec. 2): query i sees keys max(0, i-w+1)..i, so over a sequence of s the
         * scores number w*s - w^2/2 instead of s^2/2 (the same continuous count as the causal
         * halving), i.e. each query attends to w - w^2/(2s) keys on average. Flash attention
         * (window_size) skips the blocks outside the window. */
        double w = m->sliding_window;
        return f * (w - w * w / (2.0 * seq)) / seq;
    }
    return 0.5 * f;
}

double flops_attention_core_forward(const model_spec *m, double tokens, double seq, bool causal)
{
    /* Without sliding-window layers every layer costs the same (the presets: results unchanged
     * to the last bit). */
    if (!causal || model_sliding_layers(m) == 0)
        return flops_attention_core_forward_layer(m, 0, tokens, seq, causal);
    double sum = 0;
    for (int i = 0; i < m->layers; i++)
        sum += flops_attention_core_forward_layer(m, i, tokens, seq, causal);
    return sum / m->layers;
}

double flops_layer_forward(const model_spec *m, int moe_layer, double tokens, double seq,
                           bool causal)
{
    return 2.0 * tokens * (flops_attention_matrix_params(m) + flops_mlp_matrix_params(m, moe_layer)) +
           flops_attention_core_forward(m, tokens, seq, causal);
}

double flops_logits_forward(const model_spec *m, double tokens)
{
    return 2.0 * tokens * m->hidden * (double)m->vocab;
}

static double forward_all_layers(const model_spec *m, double tokens, double seq, bool causal)
{
    int moe = model_moe_layers(m), dense = m->layers - moe;
    /* flops_layer_forward's attention core is the mean over the layers (sliding windows), so
     * layers x it is the model's sum. */
    return dense * flops_layer_forward(m, 0, tokens, seq, causal) +
           moe * flops_layer_forward(m, 1, tokens, seq, causal);
}

double flops_model_per_step(const model_spec *m, const training_spec *t)
{
    double tokens = (double)t->global_batch * t->seq_len;
    return 3.0 * (forward_all_layers(m, tokens, t->seq_len, t->causal) +
                  flops_logits_forward(m, tokens));
}

double flops_hardware_per_step(const model_spec *m, const training_spec *t, const layout *l)
{
    double tokens = (double)t->global_batch * t->seq_len;
    double hw = flops_model_per_step(m, t);
    /* Unfused attention computes the masked half too. */
    bool core_causal = t->causal && layout_attention_of(m, t, l) == ATTENTION_FLASH &&
                       !hf_sdpa_math_applies(m, t, l); /* the math backend: all of s x s */
    if (!core_causal && t->causal)
        hw += 3.0 * m->layers * (flops_attention_core_forward(m, tokens, t->seq_len, false) -
                                 flops_attention_core_forward(m, tokens, t->seq_len, true));
    if (l->recompute == RECOMPUTE_FULL) {
        double frac = 1.0;
        if (l->recompute_layers > 0) {
            int per_stage = layout_max_stage_layers(m, l);
            frac = l->recompute_layers >= per_stage ? 1.0 : (double)l->recompute_layers / per_stage;
        }
        hw += frac * forward_all_layers(m, tokens, t->seq_len, core_causal);
    } else if (l->recompute == RECOMPUTE_SELECTIVE && l->framework == FRAMEWORK_TORCHTITAN) {
        /* torchtitan's SAC recomputes the output projection and the MLP's down projection
         * (priced for wk, wo and w3, layer_recipe.c titan_sac_recomputes), not attention */
        double ffn_down = (double)m->hidden * m->ffn;
        double wo = (double)m->hidden * (m->mla ? (double)m->heads * m->v_head_dim : model_q_dim(m));
        int moe = model_moe_layers(m), dense = m->layers - moe;
        double shared = (double)m->shared_experts * m->hidden * m->shared_ffn;
        hw += 2.0 * tokens * (m->layers * wo + dense * ffn_down + moe * shared);
    } else if (l->recompute == RECOMPUTE_SELECTIVE) {
        /* Megatron's modules (recompute_modules.h): the GEMMs each re-runs; layernorm and
         * moe_act re-run no matrix multiply */
        unsigned mods = recompute_modules_of(l);
        if (!mods) mods = RECOMPUTE_MOD_CORE_ATTN;
        int moe = model_moe_layers(m), dense = m->layers - moe;
        if (mods & RECOMPUTE_MOD_CORE_ATTN)
            hw += m->layers * flops_attention_core_forward(m, tokens, t->seq_len, core_causal);
        if (mods & RECOMPUTE_MOD_MLP) hw += 2.0 * tokens * dense * flops_mlp_matrix_params(m, 0);
        if (mods & RECOMPUTE_MOD_MLA_UP_PROJ && m->mla) {
            double q_in = m->q_lora_rank > 0 ? (double)m->q_lora_rank : 0;
            double up = q_in * m->heads * (m->qk_nope_dim + m->qk_rope_dim) +
                        (double)m->kv_lora_rank * m->heads * (m->qk_nope_dim + m->v_head_dim);
            hw += 2.0 * tokens * m->layers * up;
        }
        if (mods & RECOMPUTE_MOD_MOE)
            hw += 2.0 * tokens * moe * flops_mlp_matrix_params(m, 1);
        else if (mods & RECOMPUTE_MOD_SHARED_EXPERTS)
            hw += 2.0 * tokens * moe * m->shared_experts * mlp_matrix(m, m->shared_ffn);
    }
    return hw;
}

double flops_narayanan_eq3(double batch, double seq, double layers, double hidden, double vocab)
{
    return 96.0 * batch * seq * layers * hidden * hidden *
           (1.0 + seq / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

double flops_korthikanti_model(double batch, double seq, double layers, double hidden,
                               double vocab)
{
    return 72.0 * batch * layers * seq * hidden * hidden *
           (1.0 + seq / (6.0 * hidden) + vocab / (12.0 * hidden * layers));
}
