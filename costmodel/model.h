/*
 * model.h — the model spec: the architecture of a transformer, read from a Hugging Face
 * config.json (Llama, Qwen, Mistral, Mixtral, DeepSeek-V3 keys, and GPT-2-style n_layer/n_embd/
 * n_head), and the parameter counts derived from it.
 *
 * Everything downstream (FLOPs, memory, communication) is expressed through the per-layer
 * matrix shapes this module exposes, so a user's own config.json works the same as a preset.
 */
#ifndef PLAN_MODEL_H
#define PLAN_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef enum { MODEL_ACT_SWIGLU = 0, MODEL_ACT_GELU = 1 } model_activation;
typedef enum { MODEL_NORM_RMS = 0, MODEL_NORM_LAYER = 1 } model_norm;

typedef struct {
    char name[64];        /* preset name or file stem: "8b" */
    char display[128];    /* human name: "Llama-3.1-8B" */
    char hf_repo[128];    /* Hugging Face repository of a preset ("meta-llama/Llama-3.1-8B"), or "" */

    int layers;
    int hidden;
    int heads;
    int kv_heads;         /* KV groups (GQA); == heads for MHA */
    int head_dim;         /* per-head q/k/v width (non-MLA) */
    long ffn;             /* dense MLP intermediate size */
    long vocab;
    int max_positions;
    bool tied_embeddings;
    bool learned_positions; /* GPT-2/3 style absolute position table */
    model_activation activation;
    model_norm norm;
    bool qkv_bias;        /* biases on q,k,v (GPT, Qwen2) */
    bool out_bias;        /* biases on the attention output and MLP matrices (GPT) */
    bool qk_norm;         /* per-head RMSNorm on q and k (Qwen3) */
    bool dropout;         /* dropout active in training (GPT-style configs); stores masks */

    /* MoE (experts == 0: dense) */
    int experts;
    int top_k;
    long expert_ffn;      /* intermediate size of one routed expert */
    int shared_experts;
    long shared_ffn;      /* intermediate size of one shared expert */
    int dense_first;      /* first k layers are dense MLP (DeepSeek first_k_dense_replace) */
    bool router_bias;     /* DeepSeek-V3 e_score_correction_bias */

    /* MLA (DeepSeek-V2/V3); mla == false: ordinary (G)QA */
    bool mla;
    int q_lora_rank;      /* 0: q projected directly */
    int kv_lora_rank;
    int qk_rope_dim;
    int qk_nope_dim;
    int v_head_dim;

    /* Published counts, from the preset's "_plan" block (0 when unknown). */
    double published_params_total;
    double published_params_active;
    double published_precision;
    bool published_active_excludes_embedding; /* DeepSeek counts active without the input table */
} model_spec;

/* Read a config.json (path) into spec. name is the preset name or NULL (file stem used). */
cm_status model_load_json(const char *path, const char *name, model_spec *spec, char *err,
                          size_t errlen);

/* The same from the text of a config.json in memory (len bytes, need not end in NUL); name is
 * the spec's name (NULL: "model"). */
cm_status model_load_json_string(const char *text, size_t len, const char *name,
                                 model_spec *spec, char *err, size_t errlen);

/*
 * Resolve what the user typed: a preset name ("30b") under data_dir/models/, or a path to a
 * config.json. On failure err lists the presets.
 */
cm_status model_load(const char *name_or_path, const char *data_dir, model_spec *spec, char *err,
                     size_t errlen);

/* Check the spec's numbers are sane (positive, heads divisible by kv groups, ...). */
cm_status model_validate(const model_spec *spec, char *err, size_t errlen);

bool model_is_moe(const model_spec *m);
/* Number of layers whose MLP is an MoE block. */
int model_moe_layers(const model_spec *m);

/* Per-layer parameter counts (whole layer, unsharded). */
double model_attention_params(const model_spec *m);   /* projections + biases + qk/mla norms */
double model_norm_params(const model_spec *m);        /* the layer's two pre-norms */
double model_dense_mlp_params(const model_spec *m);   /* dense MLP of ffn width */
double model_expert_params(const model_spec *m);      /* one routed expert */
double model_shared_expert_params(const model_spec *m); /* all shared experts of a layer */
double model_router_params(const model_spec *m);
double model_embedding_params(const model_spec *m);   /* token (+ position) table */
double model_output_params(const model_spec *m);      /* final norm + untied lm_head */

double model_params_total(const model_spec *m);
/* Parameters touched per token: routed experts counted top_k times, not `experts` times. */
double model_params_active(const model_spec *m);

/* Width of the attention output (heads * v_head_dim) and of q (heads * qk dim). */
int model_q_dim(const model_spec *m);
int model_kv_dim(const model_spec *m);     /* width of each of K and V for GQA (kv_heads*head_dim) */
int model_attn_out_dim(const model_spec *m);

/* Names of the presets found under data_dir/models, comma-separated, into buf. */
void model_list_presets(const char *data_dir, char *buf, size_t buflen);

#endif
