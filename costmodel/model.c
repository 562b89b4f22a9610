/*
 * model.c — reads a Hugging Face config.json into a model_spec (model_params.c counts its
 * parameters; config_json.c does the typed, checked reads of its values).
 *
 * Key names follow the transformers configuration classes (LlamaConfig, MistralConfig,
 * MixtralConfig, Qwen2/Qwen3(Moe)Config, DeepseekV3Config, Glm4MoeConfig, GptOssConfig,
 * Gemma2Config, Gemma3TextConfig, Phi3Config, GPT2Config). Parameter accounting is tensor by
 * tensor, as the checkpoints store them (data/models/PARAMS.md lists the rules), so the totals
 * equal the safetensors totals the model cards publish.
 *
 * Every value is checked on the JSON value itself (type, integer, range) before it is stored,
 * so a 2^32 + 4096 hidden size is an error rather than 4096, a string is reported as a string,
 * and a non-positive size names its key; the file is checked before it is read (directory,
 * FIFO, size).
 */
#include "model.h"
#include "input_file.h"
#include "config_json.h"
#include "model_families.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool dropout_positive(const json_t *o, const char *const *keys)
{
    double v;
    for (; *keys; keys++)
        if (cj_get_num(o, &v, (const char *const[]){*keys, NULL}) && v > 0) return true;
    return false;
}

static bool type_is(const char *model_type, const char *t)
{
    return model_type && strcasecmp(model_type, t) == 0;
}

static bool type_starts(const char *model_type, const char *prefix)
{
    return model_type && strncasecmp(model_type, prefix, strlen(prefix)) == 0;
}

/* Architectures whose MLP is the plain two-matrix one; everything else here is gated (SwiGLU,
 * or GeGLU for Gemma: the same three matrices). */
static bool plain_mlp_type(const char *model_type)
{
    static const char *const plain[] = {"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "opt",
                                        "bloom", "falcon", "phi", "megatron-gpt", NULL};
    for (const char *const *p = plain; *p; p++)
        if (type_is(model_type, *p)) return true;
    return false;
}

static void stem_of(const char *path, char *out, size_t outlen)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    input_text_copy(out, outlen, base);
    char *dot = strrchr(out, '.');
    if (dot && strcmp(dot, ".json") == 0) *dot = '\0';
}

/*
 * Per-model defaults: keys real config.json files leave out because the transformers
 * configuration class defaults them. Gemma-3's multimodal checkpoints (gemma-3-4b/12b/27b-it)
 * write only a few keys in text_config; the rest come from Gemma3TextConfig's __init__
 * (vocab_size 262208, 8 heads, 4 KV heads, head_dim 256, sliding_window 4096 with pattern 6,
 * rope_theta 1e6, local base 1e4, rms_norm_eps 1e-6). Gemma2Config likewise. Applied only where
 * the key is absent (an explicit null stays null); each applied key is listed in spec->assumed.
 */
static const struct {
    const char *model_type;
    const char *key;
    double value;
} type_defaults[] = {
    {"gemma3_text", "vocab_size", 262208},
    {"gemma3_text", "num_attention_heads", 8},
    {"gemma3_text", "num_key_value_heads", 4},
    {"gemma3_text", "head_dim", 256},
    {"gemma3_text", "sliding_window", 4096},
    {"gemma3_text", "sliding_window_pattern", 6},
    {"gemma3_text", "rope_theta", 1000000},
    {"gemma3_text", "rope_local_base_freq", 10000},
    {"gemma3_text", "rms_norm_eps", 1e-6},
    {"gemma3_text", "max_position_embeddings", 131072},
    {"gemma2", "vocab_size", 256000},
    {"gemma2", "num_attention_heads", 8},
    {"gemma2", "num_key_value_heads", 4},
    {"gemma2", "head_dim", 256},
    {"gemma2", "sliding_window", 4096},
    {"gemma2", "final_logit_softcapping", 30},
    {"gemma2", "attn_logit_softcapping", 50},
    {"gemma2", "rope_theta", 10000},
    {"gemma2", "rms_norm_eps", 1e-6},
};

/* A copy of cfg with the model type's defaults filled in (caller releases it). */
static json_t *with_type_defaults(const json_t *cfg, const char *model_type, model_spec *spec)
{
    json_t *copy = json_deep_copy(cfg);
    if (!copy) return NULL;
    size_t used = strlen(spec->assumed);
    for (size_t i = 0; i < sizeof type_defaults / sizeof type_defaults[0]; i++) {
        if (!type_is(model_type, type_defaults[i].model_type) ||
            json_object_get(copy, type_defaults[i].key))
            continue;
        double x = type_defaults[i].value;
        json_t *v = x == floor(x) && fabs(x) < 1e15 ? json_integer((json_int_t)x) : json_real(x);
        json_object_set_new(copy, type_defaults[i].key, v);
        if (used + 1 < sizeof spec->assumed)
            used += (size_t)snprintf(spec->assumed + used, sizeof spec->assumed - used,
                                     "%s%s=%g", used ? ", " : "", type_defaults[i].key, x);
    }
    return copy;
}

/* Fills spec from a parsed config.json; label names the source in messages (path or "<string>"),
 * root is the caller's (not released here). */
static cm_status model_from_json(const json_t *root, const char *path, const char *name,
                                 model_spec *spec, char *err, size_t errlen);

/*
 * Reads a whole config.json into memory, refusing what is not one: a directory, a FIFO or
 * device, a file over MODEL_CONFIG_MAX_BYTES (input_file.h); open errors are reported by their
 * cause (no such file, permission denied). *text is malloc'ed.
 */
static cm_status read_config_file(const char *path, char **text, size_t *len, char *err,
                                  size_t errlen)
{
    return input_file_read(path, "model config",
                           "give a preset name or the path to a config.json (not a directory "
                           "or the model's weights)",
                           MODEL_CONFIG_MAX_BYTES, text, len, err, errlen);
}

cm_status model_load_json(const char *path, const char *name, model_spec *spec, char *err,
                          size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    char *text;
    size_t len;
    cm_status st = read_config_file(path, &text, &len, err, errlen);
    if (st != CM_OK) return st;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root)
        return cm_fail(err, errlen, CM_EPARSE,
                       "model config '%s' is not valid JSON (line %d: %s): fix the file", path,
                       jerr.line, jerr.text);
    st = model_from_json(root, path, name, spec, err, errlen);
    json_decref(root);
    return st;
}

cm_status model_load_json_string(const char *text, size_t len, const char *name,
                                 model_spec *spec, char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return cm_fail(err, errlen, CM_EPARSE,
                       "model config is not valid JSON (line %d: %s): fix the text", jerr.line,
                       jerr.text);
    cm_status st = model_from_json(root, "<string>", name ? name : "model", spec, err, errlen);
    json_decref(root);
    return st;
}

/*
 * Which layers attend through a sliding window. In order of authority:
 *  - layer_types (transformers >= 4.53 writes it: gpt-oss, newer Gemma/Qwen/Mistral configs):
 *    "sliding_attention" / "full_attention" per layer; stored as its shortest period (<= 64);
 *  - Gemma 2: every other layer from layer 0 (Gemma2DecoderLayer: is_sliding = not layer % 2);
 *  - Gemma 3: sliding_window_pattern p, layer i global when (i + 1) % p == 0 (5 local : 1 global);
 *    Cohere2 and EXAONE 4 likewise (p 4 by default);
 *  - Qwen2/2.5/3: only with use_sliding_window, from layer max_window_layers on;
 *  - otherwise (Mistral-7B-v0.1, Phi-3) every layer, when sliding_window is set.
 * use_sliding_window false (Qwen) switches it off whatever sliding_window says.
 */
static cm_status parse_sliding(const json_t *cfg, const char *model_type, model_spec *spec,
                               const cj_src *s)
{
    long w;
    cm_status st;
    const json_t *sw = cj_get(cfg, "sliding_window");
    if (sw && json_is_boolean(sw)) sw = NULL; /* some converters write false for "none" */
    if (!sw) return CM_OK;
    if ((st = cj_read_int(cfg, KEYS("sliding_window"), "sliding window", false, 0, 0, INT_MAX, &w,
                       s)) != CM_OK)
        return st;
    bool use = true;
    if ((st = cj_read_bool(cfg, "use_sliding_window", true, &use, s)) != CM_OK) return st;
    if (!use || w == 0) return CM_OK;
    spec->sliding_window = (int)w;
    spec->sliding_period = 1;
    spec->sliding_mask = 1;
    spec->sliding_first_layer = 0;

    const json_t *types = cj_get(cfg, "layer_types");
    if (types) {
        if (!json_is_array(types) || json_array_size(types) != (size_t)spec->layers)
            return cm_fail(s->err, s->errlen, CM_EPARSE,
                           "%s: layer_types must be an array of %d strings (one per layer)",
                           s->path, spec->layers);
        int n = spec->layers;
        for (int p = 1; p <= 64; p++) {
            bool periodic = true;
            uint64_t mask = 0;
            for (int i = 0; i < n && periodic; i++) {
                const char *t = json_string_value(json_array_get(types, (size_t)i));
                if (!t)
                    return cm_fail(s->err, s->errlen, CM_EPARSE,
                                   "%s: layer_types[%d] is not a string", s->path, i);
                bool sliding;
                if (strcmp(t, "sliding_attention") == 0)
                    sliding = true;
                else if (strcmp(t, "full_attention") == 0)
                    sliding = false;
                else
                    return cm_fail(s->err, s->errlen, CM_EPARSE,
                                   "%s: layer_types[%d] is \"%s\": only sliding_attention and "
                                   "full_attention layers are modelled",
                                   s->path, i, t);
                bool bit = (mask >> (i % p)) & 1;
                if (i < p)
                    mask |= (uint64_t)sliding << i;
                else if (bit != sliding)
                    periodic = false;
            }
            if (periodic) {
                spec->sliding_period = p;
                spec->sliding_mask = mask;
                return CM_OK;
            }
        }
        return cm_fail(s->err, s->errlen, CM_EPARSE,
                       "%s: layer_types does not repeat with a period of at most 64 layers: "
                       "such a layer pattern is not modelled",
                       s->path);
    }
    if (type_is(model_type, "gemma2")) {
        spec->sliding_period = 2;
        spec->sliding_mask = 1;
    } else if (type_starts(model_type, "gemma3") || type_is(model_type, "cohere2") ||
               type_is(model_type, "exaone4")) {
        /* Cohere2Config and Exaone4Config build layer_types by the same rule, period 4 by
         * default (transformers 5.17.0 configuration_cohere2.py 96-100, configuration_exaone4.py
         * 103-108); EXAONE 4 may write the pattern as a string such as "LLLG" */
        long p;
        const char *ps = cj_get_str(cfg, "sliding_window_pattern");
        if (ps && type_is(model_type, "exaone4")) {
            size_t n = strlen(ps);
            if (n < 1 || n > 64 || ps[n - 1] != 'G' || strspn(ps, "L") != n - 1)
                return cm_fail(s->err, s->errlen, CM_EPARSE,
                               "%s: sliding_window_pattern \"%s\" is not modelled (L...LG)",
                               s->path, ps);
            p = (long)n;
        } else if ((st = cj_read_int(cfg, KEYS("sliding_window_pattern"),
                                     "sliding window pattern", false,
                                     type_starts(model_type, "gemma3") ? 6 : 4, 1, 64, &p, s)) !=
                   CM_OK) {
            return st;
        }
        spec->sliding_period = (int)p;
        spec->sliding_mask = ((uint64_t)1 << (p - 1)) - 1; /* all but the period's last */
    } else if (type_starts(model_type, "qwen")) {
        long first;
        if ((st = cj_read_int(cfg, KEYS("max_window_layers"), "max_window_layers", false, 0, 0,
                           INT_MAX, &first, s)) != CM_OK)
            return st;
        spec->sliding_first_layer = (int)(first > spec->layers ? spec->layers : first);
    }
    return CM_OK;
}

static cm_status model_from_json(const json_t *root, const char *path, const char *name,
                                 model_spec *spec, char *err, size_t errlen)
{
    if (!json_is_object(root))
        return cm_fail(err, errlen, CM_EPARSE,
                       "model config '%s' must be a JSON object like a Hugging Face config.json",
                       path);
    cj_src s = {path, err, errlen};
    cm_status st = CM_OK;
    /* Composite configs (multimodal: Gemma 3, Llama 4, Qwen2.5-VL, ...) keep the language model
     * under text_config; the vision (and audio) towers are not planned, and the spec says so. */
    const json_t *cfg = root;
    const json_t *text_cfg = cj_get(root, "text_config");
    if (text_cfg && json_is_object(text_cfg) && !cj_get(root, "hidden_size")) {
        cfg = text_cfg;
        static const char *const towers[] = {"vision_config", "audio_config", "speech_config",
                                             NULL};
        size_t used = 0;
        for (const char *const *t = towers; *t; t++)
            if (cj_get(root, *t) && used + 1 < sizeof spec->ignored_parts)
                used += (size_t)snprintf(spec->ignored_parts + used,
                                         sizeof spec->ignored_parts - used, "%s%s",
                                         used ? ", " : "", *t);
        spec->vision_tower_ignored = cj_get(root, "vision_config") != NULL;
    }
    const char *model_type = cj_get_str(cfg, "model_type");
    /* A text_config without its own model_type inherits the outer one's text variant. */
    /* Types plan cannot represent (linear attention, state-space layers, ...): one line */
    cm_status refused = model_family_check(cfg, model_type, path, err, errlen);
    if (refused != CM_OK) return refused;
    json_t *owned = with_type_defaults(cfg, model_type, spec);
    if (!owned) return cm_fail(err, errlen, CM_ENOMEM, "out of memory reading '%s'", path);
    cfg = owned;

    long v;
    if (name)
        input_text_copy(spec->name, sizeof spec->name, name);
    else
        stem_of(path, spec->name, sizeof spec->name);
    snprintf(spec->display, sizeof spec->display, "%s", spec->name);

#define INT_FIELD(field, keys, what, required, dflt, min, max)                                  \
    do {                                                                                        \
        if ((st = cj_read_int(cfg, keys, what, required, dflt, min, max, &v, &s)) != CM_OK)        \
            goto done;                                                                          \
        spec->field = v;                                                                        \
    } while (0)
#define REAL_FIELD(field, keys, what, dflt, min, max)                                           \
    do {                                                                                        \
        if ((st = cj_read_real(cfg, keys, what, dflt, min, max, &spec->field, &s)) != CM_OK)       \
            goto done;                                                                          \
    } while (0)
#define BOOL_FIELD(field, key, dflt)                                                            \
    do {                                                                                        \
        if ((st = cj_read_bool(cfg, key, dflt, &spec->field, &s)) != CM_OK) goto done;             \
    } while (0)

    INT_FIELD(layers, KEYS("num_hidden_layers", "n_layer", "num_layers"), "layer count", true, 0,
              1, INT_MAX);
    INT_FIELD(hidden, KEYS("hidden_size", "n_embd", "d_model"), "hidden size", true, 0, 1,
              INT_MAX);
    INT_FIELD(heads, KEYS("num_attention_heads", "n_head"), "attention head count", true, 0, 1,
              INT_MAX);
    INT_FIELD(vocab, KEYS("vocab_size", "padded_vocab_size"), "vocabulary size", true, 0, 1,
              INT_MAX);
    INT_FIELD(kv_heads, KEYS("num_key_value_heads", "num_query_groups"), "KV head count", false,
              spec->heads, 1, INT_MAX);
    INT_FIELD(head_dim, KEYS("head_dim", "kv_channels"), "head dimension", false, 0, 1, INT_MAX);
    if (spec->head_dim == 0) {
        if (spec->hidden % spec->heads) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "%s: hidden_size %d is not divisible by num_attention_heads %d and no "
                         "head_dim is given: add \"head_dim\"",
                         path, spec->hidden, spec->heads);
            goto done;
        }
        spec->head_dim = spec->hidden / spec->heads;
    }
    INT_FIELD(ffn, KEYS("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"),
              "MLP intermediate size", false, 4L * spec->hidden, 1, INT_MAX);
    INT_FIELD(max_positions,
              KEYS("max_position_embeddings", "n_positions", "n_ctx", "seq_length"),
              "maximum sequence length", false, 0, 1, INT_MAX);
    /* transformers' PretrainedConfig defaults tie_word_embeddings to true. */
    BOOL_FIELD(tied_embeddings, "tie_word_embeddings", true);

    const char *act;
    if ((st = cj_read_str(cfg, KEYS("hidden_act", "activation_function", "hidden_activation"),
                       &act, &s)) != CM_OK)
        goto done;
    snprintf(spec->hidden_act, sizeof spec->hidden_act, "%s", act ? act : "");
    bool plain = plain_mlp_type(model_type);
    spec->activation = plain ? MODEL_ACT_GELU : MODEL_ACT_SWIGLU;

    bool gpt_style = type_is(model_type, "gpt2") || type_is(model_type, "megatron-gpt");
    spec->norm = (cj_get(cfg, "rms_norm_eps") && !gpt_style) ? MODEL_NORM_RMS : MODEL_NORM_LAYER;
    if (!cj_get(cfg, "rms_norm_eps") && !cj_get(cfg, "layer_norm_epsilon") && !cj_get(cfg, "layer_norm_eps"))
        spec->norm = gpt_style || plain ? MODEL_NORM_LAYER : MODEL_NORM_RMS;
    REAL_FIELD(norm_eps, KEYS("rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps"),
               "norm epsilon", 0, 0, 1);
    spec->sandwich_norm = type_is(model_type, "gemma2") || type_starts(model_type, "gemma3");
    /* GemmaRMSNorm (transformers models/gemma/, gemma2/, gemma3/ modeling files): output =
     * _norm(x.float()) * (1.0 + weight.float()), then type_as(x); costmodel/elementwise_norm.c */
    spec->norm_fp32_scale = type_is(model_type, "gemma") || type_is(model_type, "gemma2") ||
                            type_starts(model_type, "gemma3");
    spec->learned_positions = gpt_style || cj_get_str(cfg, "position_embedding_type") != NULL;
    if (spec->learned_positions && spec->max_positions == 0) {
        st = cm_fail(err, errlen, CM_EPARSE,
                     "%s: learned position embeddings need n_positions: add it", path);
        goto done;
    }

    /* Biases. attention_bias means q, k, v and o biases in Llama/gpt-oss, q, k, v only in
     * GLM-4.5 (Glm4MoeAttention: o_proj has no bias); Qwen2 always has q, k, v biases. */
    bool attn_bias, qkv_bias_key, glm = type_starts(model_type, "glm4");
    if ((st = cj_read_bool(cfg, "attention_bias", false, &attn_bias, &s)) != CM_OK ||
        (st = cj_read_bool(cfg, "qkv_bias", false, &qkv_bias_key, &s)) != CM_OK)
        goto done;
    BOOL_FIELD(mlp_bias, "mlp_bias", false);
    spec->qkv_bias = gpt_style || type_starts(model_type, "qwen2") || attn_bias || qkv_bias_key;
    spec->out_bias = gpt_style;
    spec->attn_out_bias = attn_bias && !glm;
    bool use_qk_norm;
    if ((st = cj_read_bool(cfg, "use_qk_norm", false, &use_qk_norm, &s)) != CM_OK) goto done;
    /* transformers models/phi3/modeling_phi3.py Phi3Attention: qkv = self.qkv_proj(x), then
     * query/key/value_states are slices of qkv */
    spec->hf_fused_qkv = type_is(model_type, "phi3");
    spec->qk_norm = type_starts(model_type, "qwen3") || type_starts(model_type, "gemma3") ||
                    use_qk_norm;
    spec->dropout = dropout_positive(cfg, KEYS("resid_pdrop", "attn_pdrop", "hidden_dropout",
                                               "attention_dropout", "hidden_dropout_prob"));
    double attn_p;
    spec->attention_dropout =
        cj_get_num(cfg, &attn_p, KEYS("attention_dropout", "attn_pdrop")) && attn_p > 0 ? attn_p
                                                                                        : 0;

    /* Positions: RoPE base and scaling, partial rotary. */
    REAL_FIELD(rope_theta, KEYS("rope_theta", "rotary_emb_base"), "RoPE base", 0, 1e-9, 1e300);
    REAL_FIELD(rope_local_theta, KEYS("rope_local_base_freq"), "local RoPE base", 0, 1e-9, 1e300);
    REAL_FIELD(rotary_fraction, KEYS("partial_rotary_factor", "rotary_pct"), "rotary fraction",
               1, 1e-9, 1);
    const json_t *scaling = cj_get(cfg, "rope_scaling");
    if (scaling) {
        if (!json_is_object(scaling)) {
            st = cm_fail(err, errlen, CM_EPARSE, "%s: rope_scaling is %s, expected an object",
                         path, cj_json_kind(scaling));
            goto done;
        }
        const char *type;
        if ((st = cj_read_str(scaling, KEYS("rope_type", "type"), &type, &s)) != CM_OK) goto done;
        snprintf(spec->rope_scaling_type, sizeof spec->rope_scaling_type, "%s", type ? type : "");
        if ((st = cj_read_real(scaling, KEYS("factor"), "rope_scaling factor", 0, 1e-9, 1e9,
                            &spec->rope_scaling_factor, &s)) != CM_OK ||
            (st = cj_read_int(scaling, KEYS("original_max_position_embeddings"),
                           "rope_scaling original length", false, 0, 1, INT_MAX, &v, &s)) !=
                CM_OK)
            goto done;
        spec->rope_original_max_positions = (int)v;
    }
    REAL_FIELD(final_logit_softcap, KEYS("final_logit_softcapping"), "final logit soft-cap", 0,
               0, 1e9);
    REAL_FIELD(attn_logit_softcap, KEYS("attn_logit_softcapping"), "attention logit soft-cap", 0,
               0, 1e9);
    /* Granite's multipliers (transformers models/granite, granitemoe, granitemoeshared,
     * granitemoehybrid): a kernel each wherever the key is present, whatever its value */
    REAL_FIELD(residual_multiplier, KEYS("residual_multiplier"), "residual multiplier", 0, 0, 1e9);
    REAL_FIELD(embedding_multiplier, KEYS("embedding_multiplier"), "embedding multiplier", 0, 0,
               1e9);
    REAL_FIELD(logits_scaling, KEYS("logits_scaling"), "logits scaling", 0, 0, 1e9);
    if ((st = parse_sliding(cfg, model_type, spec, &s)) != CM_OK) goto done;
    spec->attention_sinks = type_is(model_type, "gpt_oss");

    /* MoE */
    INT_FIELD(experts, KEYS("num_local_experts", "n_routed_experts", "num_experts",
                            "moe_num_experts"),
              "expert count", false, 0, 0, INT_MAX);
    spec->moe_layer_freq = 1;
    spec->routed_scaling_factor = 1;
    if (spec->experts > 0) {
        INT_FIELD(top_k, KEYS("num_experts_per_tok", "experts_per_token", "moe_topk",
                              "moe_router_topk", "moe_k"),
                  "experts per token", false, 0, 0, INT_MAX);
        if (spec->top_k <= 0 || spec->top_k > spec->experts) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "%s: MoE model needs num_experts_per_tok between 1 and %d: fix it", path,
                         spec->experts);
            goto done;
        }
        /* Mixtral and gpt-oss keep the expert width in intermediate_size. */
        INT_FIELD(expert_ffn, KEYS("moe_intermediate_size", "moe_ffn_hidden_size"),
                  "expert intermediate size", false, spec->ffn, 1, INT_MAX);
        INT_FIELD(shared_experts,
                  KEYS("n_shared_experts", "num_shared_experts", "moe_num_shared_experts"),
                  "shared expert count", false, 0, 0, INT_MAX);
        spec->shared_ffn = spec->expert_ffn;
        long shared_width;
        if ((st = cj_read_int(cfg, KEYS("shared_expert_intermediate_size"),
                           "shared expert intermediate size", false, 0, 0, INT_MAX,
                           &shared_width, &s)) != CM_OK)
            goto done;
        if (shared_width > 0) { /* Qwen2-MoE: one shared expert of that width */
            spec->shared_experts = 1;
            spec->shared_ffn = shared_width;
            spec->shared_expert_gate = true; /* its sigmoid shared_expert_gate */
        }
        INT_FIELD(dense_first, KEYS("first_k_dense_replace"), "first_k_dense_replace", false, 0,
                  0, INT_MAX);
        /* Qwen-MoE mlp_only_layers: a leading run [0..k-1] is the same as k dense-first
         * layers; any other set is not modelled. */
        const json_t *only = cj_get(cfg, "mlp_only_layers");
        if (only) {
            size_t n = json_is_array(only) ? json_array_size(only) : 0;
            bool prefix = json_is_array(only);
            for (size_t i = 0; prefix && i < n; i++) {
                const json_t *x = json_array_get(only, i);
                prefix = json_is_integer(x) && json_integer_value(x) == (json_int_t)i;
            }
            if (!prefix) {
                st = cm_fail(err, errlen, CM_EPARSE,
                             "%s: mlp_only_layers must be empty or the first layers "
                             "[0, 1, ..., k-1]: other dense-layer sets are not modelled",
                             path);
                goto done;
            }
            if ((long)n > spec->dense_first) spec->dense_first = (int)n;
        }
        if (spec->dense_first > spec->layers) spec->dense_first = spec->layers;
        /* DeepSeek moe_layer_freq: layer i is MoE iff i >= k and i % freq == 0; Qwen
         * decoder_sparse_step: iff (i + 1) % step == 0. */
        long freq = 1;
        const char *freq_key = NULL;
        if (cj_first_of(cfg, KEYS("moe_layer_freq"), NULL) &&
            !json_is_array(cj_get(cfg, "moe_layer_freq")))
            freq_key = "moe_layer_freq";
        else if (cj_first_of(cfg, KEYS("decoder_sparse_step"), NULL))
            freq_key = "decoder_sparse_step";
        if (freq_key &&
            (st = cj_read_int(cfg, (const char *const[]){freq_key, NULL}, freq_key, false, 1, 1,
                           INT_MAX, &freq, &s)) != CM_OK)
            goto done;
        spec->moe_layer_freq = (int)freq;
        spec->moe_layer_phase = freq_key && strcmp(freq_key, "decoder_sparse_step") == 0 ? 1 : 0;

        const char *topk_method, *scoring;
        if ((st = cj_read_str(cfg, KEYS("topk_method"), &topk_method, &s)) != CM_OK ||
            (st = cj_read_str(cfg, KEYS("scoring_func"), &scoring, &s)) != CM_OK)
            goto done;
        /* GLM-4.5 (Glm4MoeTopkRouter) always has the correction bias and sigmoid scores. */
        spec->router_bias = (topk_method && strcmp(topk_method, "noaux_tc") == 0) || glm;
        spec->router_linear_bias = type_is(model_type, "gpt_oss");
        spec->expert_bias = type_is(model_type, "gpt_oss");
        REAL_FIELD(glu_limit, KEYS("swiglu_limit"), "SwiGLU limit", 0, 0, 1e6);
        if (scoring && strcmp(scoring, "sigmoid") == 0)
            spec->router_scoring = MODEL_ROUTER_SIGMOID;
        else if (scoring && strcmp(scoring, "softmax") != 0) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "%s: scoring_func \"%s\" is not modelled (softmax or sigmoid)", path,
                         scoring);
            goto done;
        } else if (!scoring && glm)
            spec->router_scoring = MODEL_ROUTER_SIGMOID;
        INT_FIELD(router_groups, KEYS("n_group"), "n_group", false, 0, 0, INT_MAX);
        INT_FIELD(router_topk_groups, KEYS("topk_group"), "topk_group", false, 0, 0, INT_MAX);
        REAL_FIELD(routed_scaling_factor, KEYS("routed_scaling_factor"), "routed scaling factor",
                   1, 0, 1e6);
        REAL_FIELD(router_aux_loss_coef, KEYS("router_aux_loss_coef", "aux_loss_alpha"),
                   "router auxiliary loss coefficient", 0, 0, 1e6);
        /* Mixtral and gpt-oss renormalise the top-k weights by construction (softmax over the
         * selected logits); transformers' Qwen/DeepSeek classes default the key to false. */
        BOOL_FIELD(norm_topk_prob, "norm_topk_prob",
                   type_is(model_type, "mixtral") || type_is(model_type, "gpt_oss"));
    }
    INT_FIELD(mtp_layers, KEYS("num_nextn_predict_layers"), "MTP layer count", false, 0, 0,
              INT_MAX);

    /* MLA */
    if (cj_get(cfg, "kv_lora_rank")) {
        spec->mla = true;
        INT_FIELD(q_lora_rank, KEYS("q_lora_rank"), "q_lora_rank", false, 0, 0, INT_MAX);
        INT_FIELD(kv_lora_rank, KEYS("kv_lora_rank"), "kv_lora_rank", false, 0, 0, INT_MAX);
        INT_FIELD(qk_rope_dim, KEYS("qk_rope_head_dim"), "qk_rope_head_dim", false, 0, 0,
                  INT_MAX);
        INT_FIELD(qk_nope_dim, KEYS("qk_nope_head_dim"), "qk_nope_head_dim", false, 0, 0,
                  INT_MAX);
        INT_FIELD(v_head_dim, KEYS("v_head_dim"), "v_head_dim", false, spec->head_dim, 0,
                  INT_MAX);
        if ((long)spec->qk_nope_dim + spec->qk_rope_dim > INT_MAX) {
            st = cm_fail(err, errlen, CM_EPARSE, "%s: qk head dims are too large", path);
            goto done;
        }
        spec->head_dim = spec->qk_nope_dim + spec->qk_rope_dim;
    }
#undef INT_FIELD
#undef REAL_FIELD
#undef BOOL_FIELD

    /* the layer structure of the types whose layer is not Llama's (model_families.c) */
    if ((st = model_family_apply(cfg, model_type, spec, &s)) != CM_OK) goto done;

    /* Model cards of DeepSeek-V2/V3, Kimi-K2 (DeepSeek-V3 architecture) and gpt-oss count the
     * active parameters without the input embedding (a table lookup, not compute). */
    spec->published_active_excludes_embedding =
        type_starts(model_type, "deepseek_v") || type_is(model_type, "kimi_k2") ||
        type_is(model_type, "gpt_oss");

    /* The outer config's class (a multimodal checkpoint's, not its text_config's): converters
     * such as Megatron-Bridge's AutoBridge choose by it. */
    const json_t *archs = cj_get(root, "architectures");
    if (archs && json_is_array(archs) && json_array_size(archs) > 0 &&
        json_is_string(json_array_get(archs, 0)))
        snprintf(spec->hf_architecture, sizeof spec->hf_architecture, "%s",
                 json_string_value(json_array_get(archs, 0)));

    const char *outer_type = cj_get_str(root, "model_type");
    if (outer_type) snprintf(spec->hf_model_type, sizeof spec->hf_model_type, "%s", outer_type);

    /* Our own block: published counts and overrides. */
    const json_t *plan = cj_get(root, "_plan");
    if (plan && json_is_object(plan)) {
        const char *disp = cj_get_str(plan, "display");
        if (disp) input_text_copy(spec->display, sizeof spec->display, disp);
        const char *repo = cj_get_str(plan, "hf_repo");
        if (repo) input_text_copy(spec->hf_repo, sizeof spec->hf_repo, repo);
        double x;
        if (cj_get_num(plan, &x, KEYS("published_params_total"))) spec->published_params_total = x;
        if (cj_get_num(plan, &x, KEYS("published_params_active"))) spec->published_params_active = x;
        if (cj_get_num(plan, &x, KEYS("published_precision"))) spec->published_precision = x;
        const json_t *inc = cj_get(plan, "published_active_includes_input_embedding");
        if (inc && json_is_boolean(inc))
            spec->published_active_excludes_embedding = !json_is_true(inc);
        const json_t *g = cj_get(plan, "gated_mlp");
        if (g && json_is_boolean(g))
            spec->activation = json_is_true(g) ? MODEL_ACT_SWIGLU : MODEL_ACT_GELU;
    }
    st = model_validate(spec, err, errlen);
done:
    json_decref(owned);
    return st;
}

cm_status model_validate(const model_spec *m, char *err, size_t errlen)
{
    if (m->layers <= 0 || m->hidden <= 0 || m->heads <= 0 || m->vocab <= 0 || m->ffn <= 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "model '%s': layers, hidden size, heads, FFN and vocabulary must be "
                       "positive",
                       m->name);
    if (m->layers > 100000 || m->hidden > 1000000 || m->vocab > 100000000)
        return cm_fail(err, errlen, CM_EINVAL,
                       "model '%s': sizes are absurd (layers %d, hidden %d, vocab %ld): check "
                       "the config",
                       m->name, m->layers, m->hidden, m->vocab);
    if (m->kv_heads <= 0 || m->heads % m->kv_heads)
        return cm_fail(err, errlen, CM_EINVAL,
                       "model '%s': num_attention_heads %d must be a multiple of "
                       "num_key_value_heads %d: fix the config",
                       m->name, m->heads, m->kv_heads);
    if (m->experts > 0 && (m->expert_ffn <= 0 || m->top_k <= 0))
        return cm_fail(err, errlen, CM_EINVAL,
                       "model '%s': MoE needs moe_intermediate_size and num_experts_per_tok",
                       m->name);
    if (m->mla && (m->kv_lora_rank <= 0 || m->v_head_dim <= 0 || m->head_dim <= 0))
        return cm_fail(err, errlen, CM_EINVAL,
                       "model '%s': MLA needs kv_lora_rank, qk_nope/rope_head_dim and v_head_dim",
                       m->name);
    /* Widths are multiplied together in int (heads * head_dim, ...): keep every one far below
     * where a product could overflow, and far above any real model (tests/fuzz/ found the
     * overflow with 100000 heads of width 100000). */
    const long wide = 1L << 16;
    if (m->heads > wide || m->head_dim <= 0 || m->head_dim > wide || m->v_head_dim > wide ||
        m->qk_rope_dim > wide || m->qk_nope_dim > wide || m->q_lora_rank > (1 << 20) ||
        m->kv_lora_rank > (1 << 20) || m->ffn > (1L << 30) || m->expert_ffn > (1L << 30) ||
        m->shared_ffn > (1L << 30) || m->experts > wide || m->shared_experts > wide ||
        m->max_positions > (1 << 28) || m->qk_rope_dim < 0 || m->qk_nope_dim < 0 ||
        m->q_lora_rank < 0 || m->kv_lora_rank < 0 || m->v_head_dim < 0 || m->experts < 0 ||
        m->shared_experts < 0 || m->max_positions < 0 || m->dense_first < 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "model '%s': sizes are absurd (heads %d, head_dim %d, ffn %ld, experts "
                       "%d, max positions %d): check the config",
                       m->name, m->heads, m->head_dim, m->ffn, m->experts, m->max_positions);
    return CM_OK;
}

void model_list_presets(const char *data_dir, char *buf, size_t buflen)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/models", data_dir);
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    /* Collect and sort so the list reads the same everywhere. */
    char names[128][64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 128) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && len - 5 < 64) {
            memcpy(names[n], e->d_name, len - 5);
            names[n][len - 5] = '\0';
            n++;
        }
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[64];
            memcpy(t, names[j], 64);
            memcpy(names[j], names[j - 1], 64);
            memcpy(names[j - 1], t, 64);
        }
    size_t used = 0;
    for (int i = 0; i < n && used + 1 < buflen; i++)
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s", i ? ", " : "", names[i]);
}

cm_status model_load(const char *name_or_path, const char *data_dir, model_spec *spec, char *err,
                     size_t errlen)
{
    if (!name_or_path || !*name_or_path)
        return cm_fail(err, errlen, CM_EINVAL, "no model given: use --model with a preset name "
                                               "(e.g. 30b) or a path to a config.json");
    if (strchr(name_or_path, '/') || strstr(name_or_path, ".json"))
        return model_load_json(name_or_path, NULL, spec, err, errlen);
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s.json", data_dir, name_or_path);
    FILE *f = fopen(path, "r");
    if (!f) {
        char list[2048];
        model_list_presets(data_dir, list, sizeof list);
        return cm_fail(err, errlen, CM_EINVAL,
                       "unknown model '%s': use one of the presets (%s) or a path to a "
                       "config.json",
                       name_or_path, list[0] ? list : "none found: set PLAN_DATA_DIR");
    }
    fclose(f);
    return model_load_json(path, name_or_path, spec, err, errlen);
}
