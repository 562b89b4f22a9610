/*
 * model_families.c — the model types whose decoder layer is not Llama's, for model.c: which
 * types plan cannot represent (refused with one line naming what is missing), and, after the
 * generic reading of a config.json, the layer structure each other type has in transformers'
 * modeling code (norm kind and count, parallel blocks, post-norms, q/k norm widths, biases,
 * plain or gated MLP, routers). bench/results/arch24_2026-11-29/README.md cites the modeling
 * file and line of transformers 5.x for every rule here and lists the parameter counts that
 * transformers builds for each type's fixture (tests/data/hf/types/).
 */
#include "model_families.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

static bool is(const char *model_type, const char *t)
{
    return model_type && strcasecmp(model_type, t) == 0;
}

/* Types whose layers are not attention + MLP blocks plan can price. */
static const struct {
    const char *model_type;
    const char *missing;
} refused[] = {
    {"qwen3_next", "its Gated DeltaNet linear-attention layers (3 of every 4) and gated attention"},
    {"mamba", "its Mamba state-space layers"},
    {"mamba2", "its Mamba-2 state-space layers"},
    {"falcon_mamba", "its Mamba state-space layers"},
    {"falcon_h1", "its hybrid Mamba-2 + attention layers"},
    {"jamba", "its hybrid Mamba + attention layers"},
    {"bamba", "its hybrid Mamba-2 + attention layers"},
    {"zamba", "its hybrid Mamba + shared attention layers"},
    {"zamba2", "its hybrid Mamba-2 + shared attention layers"},
    {"granitemoehybrid", "its hybrid Mamba-2 + attention layers"},
    {"nemotron_h", "its hybrid Mamba-2 + attention layers"},
    {"lfm2", "its short-convolution layers"},
    {"lfm2_moe", "its short-convolution layers"},
    {"recurrent_gemma", "its RG-LRU recurrent layers"},
    {"rwkv", "its RWKV recurrent layers"},
    {"minimax", "its lightning (linear) attention layers"},
    {"kimi_linear", "its Kimi Delta Attention linear-attention layers"},
    {"llama4", "Llama 4's chunked local attention (attention_chunk_size), L2 q/k norms and "
               "NoPE layers"},
    {"llama4_text", "Llama 4's chunked local attention (attention_chunk_size), L2 q/k norms and "
                    "NoPE layers"},
};

cm_status model_family_check(const json_t *cfg, const char *model_type, const char *path,
                             char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (is(model_type, refused[i].model_type))
            return cm_fail(err, errlen, CM_EPARSE,
                           "%s: model_type \"%s\" is not supported: plan does not model %s",
                           path, model_type, refused[i].missing);
    /* Whatever the type: per-layer kinds other than full or sliding attention */
    const json_t *types = cj_get(cfg, "layer_types");
    if (types && json_is_array(types))
        for (size_t i = 0; i < json_array_size(types); i++) {
            const char *t = json_string_value(json_array_get(types, i));
            if (t && strcmp(t, "full_attention") && strcmp(t, "sliding_attention"))
                return cm_fail(err, errlen, CM_EPARSE,
                               "%s: layer_types[%zu] is \"%s\": plan models only full and "
                               "sliding-window attention layers",
                               path, i, t);
        }
    /* Falcon's ALiBi (FalconAttention: alibi added to the scores instead of RoPE) */
    const json_t *alibi = cj_get(cfg, "alibi");
    if (is(model_type, "falcon") && alibi && json_is_true(alibi))
        return cm_fail(err, errlen, CM_EPARSE,
                       "%s: Falcon with alibi true is not supported: plan does not model ALiBi "
                       "position biases",
                       path);
    return CM_OK;
}

/* Reads a boolean key with the type's default (error: st set, false returned). */
#define BOOL_KEY(key, dflt, out)                                                                \
    do {                                                                                        \
        if ((st = cj_read_bool(cfg, key, dflt, out, s)) != CM_OK) return st;                    \
    } while (0)

cm_status model_family_apply(const json_t *cfg, const char *model_type, model_spec *spec,
                             const cj_src *s)
{
    cm_status st = CM_OK;
    bool b;
    /* transformers' nn.LayerNorm types (whatever their epsilon key is called) */
    if (is(model_type, "starcoder2") || is(model_type, "phimoe") || is(model_type, "cohere") ||
        is(model_type, "cohere2") || is(model_type, "stablelm") || is(model_type, "gpt_neox") ||
        is(model_type, "falcon"))
        spec->norm = MODEL_NORM_LAYER;
    /* CohereLayerNorm: weight only */
    spec->norm_no_bias = is(model_type, "cohere") || is(model_type, "cohere2");
    if (spec->norm_eps == 0 &&
        (st = cj_read_real(cfg, KEYS("norm_epsilon"), "norm epsilon", 0, 0, 1, &spec->norm_eps,
                           s)) != CM_OK)
        return st;

    if (is(model_type, "starcoder2")) { /* use_bias: q, k, v, o and c_fc, c_proj */
        BOOL_KEY("use_bias", true, &b);
        spec->qkv_bias = spec->attn_out_bias = spec->mlp_bias = b;
        spec->activation = MODEL_ACT_GELU; /* Starcoder2MLP: c_fc, act, c_proj */
    } else if (is(model_type, "ernie4_5") || is(model_type, "ernie4_5_moe")) {
        BOOL_KEY("use_bias", false, &b); /* q, k, v, o and the dense MLP's three */
        spec->qkv_bias = spec->attn_out_bias = spec->mlp_bias = b;
    } else if (is(model_type, "gpt_neox")) {
        BOOL_KEY("attention_bias", true, &b); /* query_key_value and dense */
        spec->qkv_bias = spec->attn_out_bias = b;
        spec->mlp_bias = true; /* dense_h_to_4h, dense_4h_to_h always biased */
        BOOL_KEY("use_parallel_residual", true, &spec->parallel_block);
    } else if (is(model_type, "falcon")) {
        BOOL_KEY("bias", false, &b); /* query_key_value, dense, both MLP matrices */
        spec->qkv_bias = spec->attn_out_bias = spec->mlp_bias = b;
        bool new_arch, multi_query;
        BOOL_KEY("new_decoder_architecture", false, &new_arch);
        BOOL_KEY("multi_query", true, &multi_query);
        BOOL_KEY("parallel_attn", true, &spec->parallel_block);
        long kv, ln;
        if ((st = cj_read_int(cfg, KEYS("num_kv_heads"), "KV head count", false, spec->heads, 1,
                              INT_MAX, &kv, s)) != CM_OK ||
            (st = cj_read_int(cfg, KEYS("num_ln_in_parallel_attn"), "num_ln_in_parallel_attn",
                              false, new_arch ? 2 : 1, 1, 2, &ln, s)) != CM_OK)
            return st;
        spec->kv_heads = new_arch || !multi_query ? (int)kv : 1;
        /* multi_query without the new architecture: _split_heads gives k, v one head and
         * FalconAttention.forward passes them to SDPA beside q's heads, without enable_gqa
         * (transformers 5.17.0 modeling_falcon.py lines 280-283, 344-357; hf_sdpa_math.h) */
        spec->sdpa_kv_broadcast = !new_arch && multi_query && spec->heads > 1;
        /* FalconModel.forward: create_causal_mask(..., allow_is_causal_skip=False) (lines
         * 763-769, "Always materialize the mask so alibi can be added"); the new architecture's
         * _split_heads broadcasts each group's k and v to its query heads and flattens (copies)
         * them before RoPE (lines 265-275, 330-336; hf_split_heads.h) */
        spec->hf_mask_always = true;
        spec->hf_split_broadcast = new_arch && spec->kv_heads < spec->heads;
        /* FalconDecoderLayer: a parallel block has ln_attn and ln_mlp when
         * num_ln_in_parallel_attn is 2 (the new architecture's default), else input_layernorm
         * alone */
        spec->shared_block_norm = spec->parallel_block && ln == 1;
        /* FalconMLP's get_activation(config.activation), FalconConfig's default "gelu" */
        const char *act = cj_get_str(cfg, "activation");
        if (!spec->hidden_act[0])
            snprintf(spec->hidden_act, sizeof spec->hidden_act, "%s", act ? act : "gelu");
    } else if (is(model_type, "stablelm")) {
        BOOL_KEY("use_qkv_bias", false, &spec->qkv_bias);
        BOOL_KEY("use_parallel_residual", false, &spec->parallel_block);
        spec->shared_block_norm = spec->parallel_block; /* post_attention_layernorm is None */
        BOOL_KEY("qk_layernorm", false, &spec->qk_norm); /* a LayerNorm per head */
        spec->qk_norm_full = spec->qk_norm;
    } else if (is(model_type, "seed_oss")) { /* o_proj's bias is its own key */
        BOOL_KEY("attention_out_bias", false, &spec->attn_out_bias);
    } else if (is(model_type, "phimoe")) {
        BOOL_KEY("lm_head_bias", false, &spec->lm_head_bias);
        double jitter; /* PhimoeConfig's default input_jitter_noise is 0.0 */
        if ((st = cj_read_real(cfg, KEYS("input_jitter_noise"), "input_jitter_noise", 0, 0, 1,
                               &jitter, s)) != CM_OK)
            return st;
        spec->input_jitter = jitter > 0;
    } else if (is(model_type, "cohere") || is(model_type, "cohere2")) {
        spec->parallel_block = spec->shared_block_norm = true;
        if (is(model_type, "cohere")) spec->qk_norm_full = spec->qk_norm; /* per-head weights */
    } else if (is(model_type, "olmo2") || is(model_type, "olmoe")) {
        spec->qk_norm = spec->qk_norm_full = true; /* q_norm, k_norm over the whole projection */
        spec->post_norm = is(model_type, "olmo2");
    } else if (is(model_type, "exaone4")) {
        spec->qk_norm = true; /* per head */
        spec->post_norm = true;
    } else if (is(model_type, "dots1")) {
        spec->qk_norm = true; /* per head, as Qwen3 */
    } else if (is(model_type, "apertus")) {
        spec->qk_norm = true; /* per head */
        spec->activation = MODEL_ACT_GELU; /* up_proj, xIELU, down_proj: two matrices */
        const char *act = cj_get_str(cfg, "hidden_act");
        spec->act_params = act && !strcmp(act, "xielu") ? 2 : 0; /* alpha_p, alpha_n */
    } else if (is(model_type, "arcee")) {
        spec->activation = MODEL_ACT_GELU; /* up_proj, ReLU^2, down_proj: two matrices */
    } else if (is(model_type, "glm4")) {
        spec->sandwich_norm = true; /* post_self_attn_layernorm, post_mlp_layernorm too */
    }

    if (spec->experts > 0 && (is(model_type, "dots1") || is(model_type, "ernie4_5_moe")))
        spec->router_bias = true; /* e_score_correction_bias of E per MoE layer */
    if (spec->experts > 0 && is(model_type, "dots1")) spec->router_scoring = MODEL_ROUTER_SIGMOID;
    if (spec->experts > 0 && is(model_type, "ernie4_5_moe")) {
        /* layer i routes iff (i + 1) % interval == 0 and start <= i <= end */
        long start, end, interval;
        if ((st = cj_read_int(cfg, KEYS("moe_layer_start_index"), "moe_layer_start_index", false,
                              0, 0, INT_MAX, &start, s)) != CM_OK ||
            (st = cj_read_int(cfg, KEYS("moe_layer_end_index"), "moe_layer_end_index", false,
                              spec->layers - 1, -1, INT_MAX, &end, s)) != CM_OK ||
            (st = cj_read_int(cfg, KEYS("moe_layer_interval"), "moe_layer_interval", false, 1, 1,
                              INT_MAX, &interval, s)) != CM_OK)
            return st;
        if (end == -1) end = spec->layers - 1;
        if (end < spec->layers - 1)
            return cm_fail(s->err, s->errlen, CM_EPARSE,
                           "%s: moe_layer_end_index %ld ends the MoE layers before the last "
                           "layer: trailing dense layers are not modelled",
                           s->path, end);
        spec->dense_first = start > spec->layers ? spec->layers : (int)start;
        spec->moe_layer_freq = (int)interval;
        spec->moe_layer_phase = 1;
        /* the shared experts: one MLP of moe_intermediate_size x moe_num_shared_experts */
        spec->shared_ffn = spec->expert_ffn;
    }
    /* NoPE layers. SmolLM3: no_rope_layers[i] == 0 (default: every no_rope_layer_interval-th,
     * modeling_smollm3.py 200, 222); Cohere2 and EXAONE 4 rotate only their sliding layers once
     * a window is set (modeling_cohere2.py 229-230, modeling_exaone4.py 241-242). */
    if (is(model_type, "smollm3")) {
        const json_t *nope = cj_get(cfg, "no_rope_layers");
        spec->nope_layers = 0;
        if (nope && json_is_array(nope)) {
            for (size_t i = 0; i < json_array_size(nope); i++)
                spec->nope_layers += json_is_integer(json_array_get(nope, i)) &&
                                     json_integer_value(json_array_get(nope, i)) == 0;
        } else {
            long every;
            if ((st = cj_read_int(cfg, KEYS("no_rope_layer_interval"), "no_rope_layer_interval",
                                  false, 4, 1, INT_MAX, &every, s)) != CM_OK)
                return st;
            spec->nope_layers = (int)(spec->layers / every);
        }
    } else if ((is(model_type, "cohere2") || is(model_type, "exaone4")) &&
               spec->sliding_window > 0) {
        spec->nope_layers = spec->layers - model_sliding_layers(spec);
    }
    return CM_OK;
}
