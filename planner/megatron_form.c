/*
 * megatron_form.c — what Megatron-LM's GPT layer cannot build of a model (megatron_form.h).
 * Flag names and the forms behind them: Megatron-LM commit d98e8a6, megatron/training/
 * arguments.py and megatron/core/transformer/transformer_config.py; the model forms:
 * costmodel/model.h (arch24).
 */
#include "megatron_form.h"

#include <string.h>

bool megatron_layer_pattern(const model_spec *m, bool (*on)(const model_spec *, int), char *buf,
                            size_t len)
{
    size_t used = 0;
    for (int i = 0; i < m->layers; i++) {
        if (used + 3 >= len) return false;
        buf[used++] = i ? ',' : '[';
        buf[used++] = on(m, i) ? '1' : '0';
    }
    if (used + 2 > len) return false;
    buf[used++] = ']';
    buf[used] = '\0';
    return true;
}

int megatron_form_missing(const model_spec *m, char items[][MEGATRON_FORM_ITEM_CHARS], int max)
{
    form_list fl = form_list_on(items, max);
    form_list *f = &fl;
    char pat[MEGATRON_FORM_PATTERN_CHARS];

    /* norms and the layer's shape */
    if (m->sandwich_norm)
        form_list_add(f, "the post-attention and post-MLP norms (Gemma's four norms per layer)");
    if (m->parallel_block)
        form_list_add(f, "attention and MLP in parallel on the same input (parallel block)");
    if (m->post_norm) form_list_add(f, "norms after attention and MLP instead of before them");
    if (m->qk_norm_full)
        form_list_add(f, "q/k norm weights over every head (--qk-layernorm shares one per head)");
    if (m->norm == MODEL_NORM_LAYER && m->norm_no_bias) form_list_add(f, "LayerNorm without a bias");
    if (m->lm_head_bias) form_list_add(f, "a bias on the output layer");
    /* plain MLPs: Megatron's default activation is GeLU; ReLU^2 is --squared-relu */
    if (m->activation == MODEL_ACT_GELU && m->hidden_act[0] && strcmp(m->hidden_act, "relu2") &&
        strncmp(m->hidden_act, "gelu", 4))
        form_list_add(f, "the MLP activation \"%s\"", m->hidden_act);

    /* positions: llama3, yarn and integer linear scaling have flags */
    if (!m->learned_positions) {
        if (m->rope_local_theta > 0 && m->rope_local_theta != m->rope_theta)
            form_list_add(f, "a second RoPE base (%.0f) for the sliding-window layers",
                    m->rope_local_theta);
        const char *rs = m->rope_scaling_type;
        bool stated = !strcmp(rs, "llama3") || !strcmp(rs, "yarn") ||
                      (!strcmp(rs, "linear") && m->rope_scaling_factor >= 1 &&
                       m->rope_scaling_factor == (int)m->rope_scaling_factor);
        if (!stated && rs[0] && strcmp(rs, "default"))
            form_list_add(f, "RoPE scaling \"%s\" (factor %g)", rs, m->rope_scaling_factor);
    }

    /* sliding window and soft-capping */
    int sliding = model_sliding_layers(m);
    if (m->sliding_window > 0 && sliding > 0 && sliding < m->layers &&
        !megatron_layer_pattern(m, model_layer_is_sliding, pat, sizeof pat))
        form_list_add(f, "the sliding-window layer pattern (too long to state)");
    if (m->attn_logit_softcap > 0)
        form_list_add(f, "attention logit soft-capping (%g)", m->attn_logit_softcap);
    if (m->final_logit_softcap > 0)
        form_list_add(f, "final logit soft-capping (%g)", m->final_logit_softcap);

    /* biases: add_bias_linear puts a bias on every linear (qkv, attention output, both MLP
     * matrices, experts); add_qkv_bias on qkv alone */
    bool mlp_biased = m->mlp_bias || m->expert_bias;
    if (m->out_bias || (m->attn_out_bias && mlp_biased)) {
        if (!m->qkv_bias) form_list_add(f, "biases on the output and MLP matrices without a qkv bias");
    } else {
        if (m->attn_out_bias) form_list_add(f, "a bias on the attention output alone");
        if (mlp_biased) form_list_add(f, "biases on the MLP matrices alone");
    }

    /* routers */
    if (model_is_moe(m)) {
        if (model_moe_layers(m) < m->layers &&
            !megatron_layer_pattern(m, model_layer_is_moe, pat, sizeof pat))
            form_list_add(f, "the MoE layer pattern (too long to state)");
        if (m->router_scoring == MODEL_ROUTER_SIGMOID && !m->norm_topk_prob && m->top_k > 1)
            form_list_add(f, "sigmoid router weights that are not renormalised over the top-k");
        if (m->router_linear_bias || m->expert_bias)
            form_list_add(f, "biases on the router and on every expert (gpt-oss) beyond Megatron's "
                       "add_bias_linear");
    }
    return fl.n;
}
