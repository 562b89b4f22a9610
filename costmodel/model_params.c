/*
 * model_params.c — the model's shape questions and its parameter accounting: which layers are
 * MoE or sliding-window, the projection widths, and the parameters of each tensor group, counted
 * tensor by tensor as the checkpoints store them (data/models/PARAMS.md lists the rules), so the
 * totals equal the safetensors totals the model cards publish. model.c reads the config.json
 * into the model_spec these functions read.
 */
#include "model.h"

#include <math.h>
#include <stdbool.h>

/* ---- parameter accounting (data/models/PARAMS.md) ---- */

bool model_is_moe(const model_spec *m) { return m->experts > 0; }

bool model_layer_is_moe(const model_spec *m, int i)
{
    if (!model_is_moe(m) || i < m->dense_first || i >= m->layers) return false;
    int freq = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    return ((long)i + m->moe_layer_phase) % freq == 0;
}

int model_moe_layers(const model_spec *m)
{
    if (!model_is_moe(m)) return 0;
    if (m->moe_layer_freq <= 1) return m->layers - m->dense_first;
    int n = 0;
    for (int i = m->dense_first; i < m->layers; i++) n += model_layer_is_moe(m, i);
    return n;
}

bool model_layer_is_sliding(const model_spec *m, int i)
{
    if (m->sliding_window <= 0 || i < m->sliding_first_layer || i >= m->layers) return false;
    int period = m->sliding_period > 0 ? m->sliding_period : 1;
    return (m->sliding_mask >> (i % period)) & 1;
}

int model_sliding_layers(const model_spec *m)
{
    if (m->sliding_window <= 0) return 0;
    int n = 0;
    for (int i = 0; i < m->layers; i++) n += model_layer_is_sliding(m, i);
    return n;
}

int model_q_dim(const model_spec *m) { return m->heads * m->head_dim; }
int model_kv_dim(const model_spec *m) { return m->kv_heads * m->head_dim; }
int model_attn_out_dim(const model_spec *m)
{
    return m->mla ? m->heads * m->v_head_dim : m->heads * m->head_dim;
}

double model_attention_params(const model_spec *m)
{
    double h = m->hidden, a = m->heads;
    if (m->mla) {
        /* DeepSeek-V3 modeling: q_a_proj, q_a_layernorm, q_b_proj (or q_proj), kv_a_proj_with_mqa,
         * kv_a_layernorm, kv_b_proj, o_proj; no biases. */
        double qk = m->qk_nope_dim + m->qk_rope_dim;
        double q = m->q_lora_rank > 0
                       ? h * m->q_lora_rank + m->q_lora_rank + (double)m->q_lora_rank * a * qk
                       : h * a * qk;
        double kv = h * (m->kv_lora_rank + m->qk_rope_dim) + m->kv_lora_rank +
                    (double)m->kv_lora_rank * a * (m->qk_nope_dim + m->v_head_dim);
        double o = a * m->v_head_dim * h;
        return q + kv + o;
    }
    double qd = model_q_dim(m), kvd = model_kv_dim(m);
    double p = h * qd + 2.0 * h * kvd + qd * h;
    if (m->qkv_bias) p += qd + 2.0 * kvd;
    if (m->out_bias || m->attn_out_bias) p += h;
    if (m->qk_norm && m->qk_norm_full) p += qd + kvd; /* OLMo 2 q_norm(q width), k_norm(kv) */
    else if (m->qk_norm) p += 2.0 * m->head_dim;
    if (m->attention_sinks) p += a; /* gpt-oss self_attn.sinks: one logit per head */
    return p;
}

int model_layer_norms(const model_spec *m)
{
    /* Gemma 2/3 also normalise the outputs of attention and MLP (post_attention_layernorm,
     * pre_feedforward_layernorm, post_feedforward_layernorm besides input_layernorm); Cohere's
     * and Falcon-7B's parallel blocks read one input_layernorm. */
    if (m->sandwich_norm) return 4;
    return m->parallel_block && m->shared_block_norm ? 1 : 2;
}

double model_rope_layer_share(const model_spec *m)
{
    if (m->nope_layers <= 0 || m->layers <= 0) return 1.0;
    return m->nope_layers >= m->layers ? 0.0 : 1.0 - (double)m->nope_layers / m->layers;
}

/* Parameters of one hidden-width norm: RMSNorm a weight, LayerNorm weight and bias (Cohere's
 * LayerNorm has no bias). */
static double norm_width_params(const model_spec *m)
{
    return (m->norm == MODEL_NORM_LAYER && !m->norm_no_bias ? 2.0 : 1.0) * m->hidden;
}

double model_norm_params(const model_spec *m)
{
    return model_layer_norms(m) * norm_width_params(m);
}

static double mlp_params(const model_spec *m, double width, bool bias)
{
    double h = m->hidden;
    if (m->activation == MODEL_ACT_SWIGLU) return 3.0 * h * width + (bias ? 2.0 * width + h : 0);
    return 2.0 * h * width + (bias ? width + h : 0);
}

double model_dense_mlp_params(const model_spec *m)
{
    return mlp_params(m, m->ffn, m->out_bias || m->mlp_bias) + m->act_params;
}
/* gpt-oss experts: gate_up_proj_bias (2f) and down_proj_bias (h) per expert. */
double model_expert_params(const model_spec *m)
{
    return mlp_params(m, m->expert_ffn, m->expert_bias);
}

double model_shared_expert_params(const model_spec *m)
{
    if (m->shared_experts == 0) return 0;
    double p = m->shared_experts * mlp_params(m, m->shared_ffn, false);
    if (m->shared_expert_gate) p += m->hidden; /* Qwen2-MoE shared_expert_gate (h x 1) */
    return p;
}

double model_router_params(const model_spec *m)
{
    if (!model_is_moe(m)) return 0;
    return (double)m->hidden * m->experts + (m->router_bias ? m->experts : 0) +
           (m->router_linear_bias ? m->experts : 0);
}

double model_embedding_params(const model_spec *m)
{
    double p = (double)m->vocab * m->hidden;
    if (m->learned_positions) p += (double)m->max_positions * m->hidden;
    return p;
}

double model_output_params(const model_spec *m)
{
    double final_norm = norm_width_params(m);
    return final_norm + (m->tied_embeddings ? 0 : (double)m->vocab * m->hidden) +
           (m->lm_head_bias ? (double)m->vocab : 0);
}

static double moe_block_params(const model_spec *m, int experts_counted)
{
    return experts_counted * model_expert_params(m) + model_shared_expert_params(m) +
           model_router_params(m);
}

static double count(const model_spec *m, int experts_counted)
{
    int moe = model_moe_layers(m), dense = m->layers - moe;
    double per_layer = model_attention_params(m) + model_norm_params(m);
    double p = model_embedding_params(m) + model_output_params(m) + m->layers * per_layer;
    p += dense * model_dense_mlp_params(m);
    p += moe * moe_block_params(m, experts_counted);
    return p;
}

double model_params_total(const model_spec *m) { return count(m, m->experts); }
double model_params_active(const model_spec *m)
{
    return model_is_moe(m) ? count(m, m->top_k) : count(m, 0);
}

double model_params_active_published(const model_spec *m)
{
    double active = model_params_active(m);
    if (m->published_active_excludes_embedding) active -= (double)m->vocab * m->hidden;
    return active;
}

double model_mtp_params(const model_spec *m)
{
    if (m->mtp_layers <= 0) return 0;
    double h = m->hidden;
    double layer = model_attention_params(m) + model_norm_params(m) +
                   (model_layer_is_moe(m, m->layers - 1) ? moe_block_params(m, m->experts)
                                                         : model_dense_mlp_params(m));
    return m->mtp_layers * (layer + 2.0 * h * h + 3.0 * h);
}
