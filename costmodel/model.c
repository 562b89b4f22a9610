/*
 * model.c — reads a Hugging Face config.json into a model_spec and counts parameters.
 *
 * Key names follow the transformers configuration classes (LlamaConfig, MistralConfig,
 * MixtralConfig, Qwen2/Qwen3(Moe)Config, DeepseekV3Config, GPT2Config). Parameter accounting is
 * tensor by tensor, as the checkpoints store them (data/models/PARAMS.md lists the rules), so the
 * totals equal the safetensors totals the model cards publish.
 */
#include "model.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- JSON helpers: a key may be absent or null (HF writes null for "not used"). ---- */

static const json_t *get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

/* First present key among a NULL-terminated list, as a number. */
static bool get_num(const json_t *o, double *out, const char *const *keys)
{
    for (; *keys; keys++) {
        const json_t *v = get(o, *keys);
        if (v && json_is_number(v)) {
            *out = json_number_value(v);
            return true;
        }
    }
    return false;
}

static bool get_bool(const json_t *o, const char *key, bool dflt)
{
    const json_t *v = get(o, key);
    if (!v) return dflt;
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_number(v)) return json_number_value(v) != 0;
    return dflt;
}

static const char *get_str(const json_t *o, const char *key)
{
    const json_t *v = get(o, key);
    return (v && json_is_string(v)) ? json_string_value(v) : NULL;
}

static bool is_integer(double x) { return x == floor(x) && fabs(x) < 1e15; }

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Integer field: required ones fail with a message naming the keys tried. */
static cm_status need_int(const json_t *o, const char *const *keys, const char *what, long *out,
                          const char *path, char *err, size_t errlen)
{
    double v;
    if (!get_num(o, &v, keys))
        return cm_fail(err, errlen, CM_EPARSE,
                       "%s: no %s (expected key \"%s\"): add it to the config.json", path, what,
                       keys[0]);
    if (!is_integer(v) || v <= 0)
        return cm_fail(err, errlen, CM_EPARSE,
                       "%s: %s must be a positive integer, got %g: fix \"%s\"", path, what, v,
                       keys[0]);
    *out = (long)v;
    return CM_OK;
}

static long opt_int(const json_t *o, const char *const *keys, long dflt)
{
    double v;
    if (get_num(o, &v, keys) && is_integer(v) && v >= 0) return (long)v;
    return dflt;
}

static bool dropout_positive(const json_t *o, const char *const *keys)
{
    double v;
    for (; *keys; keys++)
        if (get_num(o, &v, (const char *const[]){*keys, NULL}) && v > 0) return true;
    return false;
}

/* Architectures whose MLP is the plain two-matrix one; everything else here is gated (SwiGLU). */
static bool plain_mlp_type(const char *model_type)
{
    static const char *const plain[] = {"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "opt",
                                        "bloom", "falcon", "phi", "megatron-gpt", NULL};
    if (!model_type) return false;
    for (const char *const *p = plain; *p; p++)
        if (strcasecmp(model_type, *p) == 0) return true;
    return false;
}

static void stem_of(const char *path, char *out, size_t outlen)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, outlen, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && strcmp(dot, ".json") == 0) *dot = '\0';
}

/* Fills spec from a parsed config.json; label names the source in messages (path or "<string>"),
 * root is the caller's (not released here). */
static cm_status model_from_json(const json_t *root, const char *path, const char *name,
                                 model_spec *spec, char *err, size_t errlen);

cm_status model_load_json(const char *path, const char *name, model_spec *spec, char *err,
                          size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        FILE *f = fopen(path, "r");
        if (!f)
            return cm_fail(err, errlen, CM_EIO,
                           "cannot read model config '%s': no such file or not readable; give a "
                           "preset name or the path to a config.json",
                           path);
        fclose(f);
        return cm_fail(err, errlen, CM_EPARSE,
                       "model config '%s' is not valid JSON (line %d: %s): fix the file", path,
                       jerr.line, jerr.text);
    }
    cm_status st = model_from_json(root, path, name, spec, err, errlen);
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

static cm_status model_from_json(const json_t *root, const char *path, const char *name,
                                 model_spec *spec, char *err, size_t errlen)
{
    if (!json_is_object(root))
        return cm_fail(err, errlen, CM_EPARSE,
                       "model config '%s' must be a JSON object like a Hugging Face config.json",
                       path);
    /* Composite configs (e.g. multimodal) keep the language model under text_config. */
    const json_t *cfg = root;
    if (get(root, "text_config") && json_is_object(get(root, "text_config")) &&
        !get(root, "hidden_size"))
        cfg = get(root, "text_config");

    cm_status st;
    long v;
    const char *model_type = get_str(cfg, "model_type");

    if (name)
        snprintf(spec->name, sizeof spec->name, "%s", name);
    else
        stem_of(path, spec->name, sizeof spec->name);
    snprintf(spec->display, sizeof spec->display, "%s", spec->name);

#define NEED(field, keys, what)                                                                 \
    do {                                                                                        \
        if ((st = need_int(cfg, keys, what, &v, path, err, errlen)) != CM_OK) goto fail;        \
        spec->field = v;                                                                        \
    } while (0)

    NEED(layers, KEYS("num_hidden_layers", "n_layer", "num_layers"), "layer count");
    NEED(hidden, KEYS("hidden_size", "n_embd", "d_model"), "hidden size");
    NEED(heads, KEYS("num_attention_heads", "n_head"), "attention head count");
    NEED(vocab, KEYS("vocab_size", "padded_vocab_size"), "vocabulary size");
#undef NEED
    spec->kv_heads = (int)opt_int(cfg, KEYS("num_key_value_heads", "num_query_groups"),
                                  spec->heads);
    spec->head_dim = (int)opt_int(cfg, KEYS("head_dim", "kv_channels"), 0);
    if (spec->head_dim == 0) {
        if (spec->hidden % spec->heads) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "%s: hidden_size %d is not divisible by num_attention_heads %d and no "
                         "head_dim is given: add \"head_dim\"",
                         path, spec->hidden, spec->heads);
            goto fail;
        }
        spec->head_dim = spec->hidden / spec->heads;
    }
    spec->ffn = opt_int(cfg, KEYS("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"),
                        4L * spec->hidden);
    spec->max_positions = (int)opt_int(cfg, KEYS("max_position_embeddings", "n_positions",
                                                 "n_ctx", "seq_length"), 0);
    /* transformers' PretrainedConfig defaults tie_word_embeddings to true. */
    spec->tied_embeddings = get_bool(cfg, "tie_word_embeddings", true);

    const char *act = get_str(cfg, "hidden_act");
    if (!act) act = get_str(cfg, "activation_function");
    if (!act) act = get_str(cfg, "hidden_activation");
    bool plain = plain_mlp_type(model_type);
    spec->activation = plain ? MODEL_ACT_GELU : MODEL_ACT_SWIGLU;
    (void)act;

    bool gpt_style = model_type && (strcasecmp(model_type, "gpt2") == 0 ||
                                    strcasecmp(model_type, "megatron-gpt") == 0);
    spec->norm = (get(cfg, "rms_norm_eps") && !gpt_style) ? MODEL_NORM_RMS : MODEL_NORM_LAYER;
    if (!get(cfg, "rms_norm_eps") && !get(cfg, "layer_norm_epsilon") && !get(cfg, "layer_norm_eps"))
        spec->norm = gpt_style || plain ? MODEL_NORM_LAYER : MODEL_NORM_RMS;
    spec->learned_positions = gpt_style || get_str(cfg, "position_embedding_type") != NULL;
    if (spec->learned_positions && spec->max_positions == 0) {
        st = cm_fail(err, errlen, CM_EPARSE,
                     "%s: learned position embeddings need n_positions: add it", path);
        goto fail;
    }
    bool attn_bias = get_bool(cfg, "attention_bias", false);
    bool qwen2 = model_type && strncasecmp(model_type, "qwen2", 5) == 0;
    spec->qkv_bias = gpt_style || qwen2 || attn_bias || get_bool(cfg, "qkv_bias", false);
    spec->out_bias = gpt_style || attn_bias || get_bool(cfg, "mlp_bias", false);
    spec->qk_norm = model_type && strncasecmp(model_type, "qwen3", 5) == 0;
    spec->dropout = dropout_positive(cfg, KEYS("resid_pdrop", "attn_pdrop", "hidden_dropout",
                                               "attention_dropout", "hidden_dropout_prob"));

    /* MoE */
    spec->experts = (int)opt_int(cfg, KEYS("num_local_experts", "n_routed_experts",
                                           "num_experts", "moe_num_experts"), 0);
    if (spec->experts > 0) {
        spec->top_k = (int)opt_int(cfg, KEYS("num_experts_per_tok", "moe_topk", "moe_router_topk"),
                                   0);
        if (spec->top_k <= 0 || spec->top_k > spec->experts) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "%s: MoE model needs num_experts_per_tok between 1 and %d: fix it", path,
                         spec->experts);
            goto fail;
        }
        /* Mixtral keeps the expert width in intermediate_size. */
        spec->expert_ffn = opt_int(cfg, KEYS("moe_intermediate_size", "moe_ffn_hidden_size"),
                                   spec->ffn);
        spec->shared_experts = (int)opt_int(cfg, KEYS("n_shared_experts", "num_shared_experts"), 0);
        spec->shared_ffn = spec->expert_ffn;
        long shared_width = opt_int(cfg, KEYS("shared_expert_intermediate_size"), 0);
        if (shared_width > 0) { /* Qwen2-MoE: one shared expert of that width */
            spec->shared_experts = 1;
            spec->shared_ffn = shared_width;
        }
        spec->dense_first = (int)opt_int(cfg, KEYS("first_k_dense_replace"), 0);
        if (spec->dense_first > spec->layers) spec->dense_first = spec->layers;
        const char *topk_method = get_str(cfg, "topk_method");
        spec->router_bias = topk_method && strcmp(topk_method, "noaux_tc") == 0;
    }

    /* MLA */
    if (get(cfg, "kv_lora_rank")) {
        spec->mla = true;
        spec->q_lora_rank = (int)opt_int(cfg, KEYS("q_lora_rank"), 0);
        spec->kv_lora_rank = (int)opt_int(cfg, KEYS("kv_lora_rank"), 0);
        spec->qk_rope_dim = (int)opt_int(cfg, KEYS("qk_rope_head_dim"), 0);
        spec->qk_nope_dim = (int)opt_int(cfg, KEYS("qk_nope_head_dim"), 0);
        spec->v_head_dim = (int)opt_int(cfg, KEYS("v_head_dim"), spec->head_dim);
        spec->head_dim = spec->qk_nope_dim + spec->qk_rope_dim;
    }

    /* Our own block: published counts and overrides. */
    const json_t *plan = get(root, "_plan");
    if (plan && json_is_object(plan)) {
        const char *disp = get_str(plan, "display");
        if (disp) snprintf(spec->display, sizeof spec->display, "%s", disp);
        const char *repo = get_str(plan, "hf_repo");
        if (repo) snprintf(spec->hf_repo, sizeof spec->hf_repo, "%s", repo);
        double x;
        if (get_num(plan, &x, KEYS("published_params_total"))) spec->published_params_total = x;
        if (get_num(plan, &x, KEYS("published_params_active"))) spec->published_params_active = x;
        if (get_num(plan, &x, KEYS("published_precision"))) spec->published_precision = x;
        spec->published_active_excludes_embedding =
            !get_bool(plan, "published_active_includes_input_embedding", true);
        const json_t *g = get(plan, "gated_mlp");
        if (g && json_is_boolean(g))
            spec->activation = json_is_true(g) ? MODEL_ACT_SWIGLU : MODEL_ACT_GELU;
    }
    return model_validate(spec, err, errlen);
fail:
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

/* ---- parameter accounting (data/models/PARAMS.md) ---- */

bool model_is_moe(const model_spec *m) { return m->experts > 0; }

int model_moe_layers(const model_spec *m)
{
    return model_is_moe(m) ? m->layers - m->dense_first : 0;
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
    if (m->out_bias) p += h;
    if (m->qk_norm) p += 2.0 * m->head_dim;
    return p;
}

double model_norm_params(const model_spec *m)
{
    return (m->norm == MODEL_NORM_LAYER ? 4.0 : 2.0) * m->hidden;
}

static double mlp_params(const model_spec *m, double width, bool bias)
{
    double h = m->hidden;
    if (m->activation == MODEL_ACT_SWIGLU) return 3.0 * h * width + (bias ? 2.0 * width + h : 0);
    return 2.0 * h * width + (bias ? width + h : 0);
}

double model_dense_mlp_params(const model_spec *m) { return mlp_params(m, m->ffn, m->out_bias); }
double model_expert_params(const model_spec *m) { return mlp_params(m, m->expert_ffn, false); }

double model_shared_expert_params(const model_spec *m)
{
    if (m->shared_experts == 0) return 0;
    double p = m->shared_experts * mlp_params(m, m->shared_ffn, false);
    if (m->shared_ffn != m->expert_ffn) p += m->hidden; /* Qwen2-MoE shared_expert_gate (h x 1) */
    return p;
}

double model_router_params(const model_spec *m)
{
    return model_is_moe(m) ? (double)m->hidden * m->experts + (m->router_bias ? m->experts : 0)
                           : 0;
}

double model_embedding_params(const model_spec *m)
{
    double p = (double)m->vocab * m->hidden;
    if (m->learned_positions) p += (double)m->max_positions * m->hidden;
    return p;
}

double model_output_params(const model_spec *m)
{
    double final_norm = (m->norm == MODEL_NORM_LAYER ? 2.0 : 1.0) * m->hidden;
    return final_norm + (m->tied_embeddings ? 0 : (double)m->vocab * m->hidden);
}

static double count(const model_spec *m, int experts_counted)
{
    int moe = model_moe_layers(m), dense = m->layers - moe;
    double per_layer = model_attention_params(m) + model_norm_params(m);
    double p = model_embedding_params(m) + model_output_params(m) + m->layers * per_layer;
    p += dense * model_dense_mlp_params(m);
    p += moe * (experts_counted * model_expert_params(m) + model_shared_expert_params(m) +
                model_router_params(m));
    return p;
}

double model_params_total(const model_spec *m) { return count(m, m->experts); }
double model_params_active(const model_spec *m)
{
    return model_is_moe(m) ? count(m, m->top_k) : count(m, 0);
}
