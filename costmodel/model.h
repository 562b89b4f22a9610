/*
 * model.h — the model spec: the architecture of a transformer, read from a Hugging Face
 * config.json (Llama, Qwen2/2.5/3 dense and MoE, Mistral, Mixtral, DeepSeek-V2/V3, Kimi-K2,
 * GLM-4.5, gpt-oss, Gemma 2/3, Phi-3/4 keys, and GPT-2-style n_layer/n_embd/n_head; multimodal
 * checkpoints through their nested text_config), and the parameter counts derived from it.
 *
 * Everything downstream (FLOPs, memory, communication) is expressed through the per-layer
 * matrix shapes this module exposes, so a user's own config.json works the same as a preset.
 */
#ifndef PLAN_MODEL_H
#define PLAN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef enum { MODEL_ACT_SWIGLU = 0, MODEL_ACT_GELU = 1 } model_activation;
typedef enum { MODEL_NORM_RMS = 0, MODEL_NORM_LAYER = 1 } model_norm;
/* How the MoE router turns logits into expert weights (DeepSeek-V3 / GLM-4.5: sigmoid). */
typedef enum { MODEL_ROUTER_SOFTMAX = 0, MODEL_ROUTER_SIGMOID = 1 } model_router_scoring;

/* Largest config.json the reader accepts (real ones are a few KiB). */
#define MODEL_CONFIG_MAX_BYTES (4L << 20)

typedef struct {
    char name[64];        /* preset name or file stem: "8b" */
    char display[128];    /* human name: "Llama-3.1-8B" */
    char hf_repo[128];    /* Hugging Face repository of a preset ("meta-llama/Llama-3.1-8B"), or "" */
    char hf_architecture[64]; /* the config's architectures[0] ("LlamaForCausalLM"), or "": which
                               * Hugging Face class, and so which Megatron-Bridge bridge, reads it */
    char hf_model_type[32];   /* the config's model_type ("kimi_k2"), or "" */

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
    bool qkv_bias;        /* biases on q,k,v (GPT, Qwen2, attention_bias) */
    bool out_bias;        /* biases on the attention output and MLP matrices (GPT; Megatron's
                           * add_bias_linear) */
    bool attn_out_bias;   /* bias on the attention output only (attention_bias: Llama, gpt-oss) */
    bool mlp_bias;        /* biases on the dense MLP matrices only (Llama's mlp_bias) */
    bool qk_norm;         /* norms on q and k (Qwen3, Gemma 3, GLM-4.5 use_qk_norm: per head,
                           * one head_dim weight; qk_norm_full: weights over all heads) */
    bool hf_fused_qkv;    /* Hugging Face code projects q, k, v with one Linear (Phi-3 qkv_proj)
                           * and slices the views q, k, v from its output */
    bool sandwich_norm;   /* four norms per layer: pre and post attention and MLP (Gemma 2/3,
                           * GLM-4's Glm4DecoderLayer) */
    bool post_norm;       /* the layer's two norms act on the attention and MLP outputs before
                           * the residual add, not on their inputs (OLMo 2, EXAONE 4.0): the
                           * same norms and kernels in another place */
    bool parallel_block;  /* attention and MLP both read the layer's input and their outputs
                           * join one residual (GPT-NeoX use_parallel_residual, Falcon
                           * parallel_attn, Cohere) */
    bool shared_block_norm; /* with parallel_block: one input norm feeds both (Cohere, Falcon-7B,
                             * StableLM's parallel form): one norm per layer, not two */
    bool norm_no_bias;    /* LayerNorm without its bias (CohereLayerNorm): h weights per norm */
    bool qk_norm_full;    /* the q/k norms' weights span every head: heads x head_dim and
                           * kv_heads x head_dim (OLMo 2 / OLMoE norm the whole projection;
                           * Cohere's and StableLM's per-head norms keep weights per head), not
                           * one head_dim vector shared by the heads (Qwen3) */
    bool lm_head_bias;    /* the output layer has a bias of vocab entries (PhiMoE lm_head_bias) */
    bool input_jitter;    /* PhiMoE's input_jitter_noise > 0: in training the MoE block and its
                           * router each multiply their input in place by uniform noise, which
                           * mul_ saves (modeling_phimoe.py 481-484, 516-519) */
    int nope_layers;      /* layers that apply no RoPE (SmolLM3 no_rope_layers; Cohere2's and
                           * EXAONE 4's full-attention layers beside sliding ones), 0 usually */
    int act_params;       /* learned parameters of the MLP activation per layer (Apertus's
                           * xIELU: alpha_p and alpha_n), 0 for the usual ones */
    bool norm_fp32_scale; /* the RMSNorm scales by (1 + weight) in fp32 and casts after
                           * (GemmaRMSNorm: Gemma 1/2/3), not weight x the bf16 cast (Llama) */
    bool dropout;         /* dropout active in training (GPT-style configs); stores masks */

    /* Positions and norms (0 where the config does not say). */
    double rope_theta;           /* RoPE base */
    double rope_local_theta;     /* RoPE base of sliding-window layers (Gemma 3), else 0 */
    char rope_scaling_type[16];  /* "llama3", "yarn", "linear", "dynamic", ... or "" */
    double rope_scaling_factor;  /* 0 without scaling */
    int rope_original_max_positions; /* rope_scaling.original_max_position_embeddings or 0 */
    double rotary_fraction;      /* fraction of the head dim rotated (partial_rotary_factor), 1 */
    double norm_eps;             /* rms_norm_eps / layer_norm_eps */

    /* Sliding-window attention: layer i attends to the last sliding_window tokens when
     * model_layer_is_sliding(m, i) (the pattern repeats every sliding_period layers from
     * sliding_first_layer; bit j of sliding_mask marks position j of the period). */
    int sliding_window;          /* 0: every layer attends to the whole causal prefix */
    int sliding_period;
    uint64_t sliding_mask;
    int sliding_first_layer;     /* Qwen2 max_window_layers */
    bool attention_sinks;        /* learned per-head sink logits (gpt-oss): heads params/layer */
    bool sdpa_kv_broadcast;      /* transformers hands SDPA k and v with fewer heads than q and
                                  * no enable_gqa (Falcon's multi_query: one K/V head), which no
                                  * fused backend takes: SDPA's math path (hf_sdpa_math.h) */
    bool hf_mask_always;         /* transformers' model class materializes the causal mask for
                                  * every call (Falcon: create_causal_mask with
                                  * allow_is_causal_skip=False): SDPA's masked path on every
                                  * layer (hf_split_heads.h) */
    bool hf_split_broadcast;     /* Falcon's new_decoder_architecture: _split_heads copies k and
                                  * v to every query head before RoPE (hf_split_heads.h) */
    double final_logit_softcap;  /* Gemma 2 final_logit_softcapping, 0 = none */
    double attn_logit_softcap;   /* Gemma 2 attn_logit_softcapping, 0 = none */
    double residual_multiplier;  /* Granite: each residual branch scaled before its add, 0 = none */
    double embedding_multiplier; /* Granite: the embeddings scaled, 0 = none */
    double logits_scaling;       /* Granite: the logits divided by it, 0 = none */

    /* MoE (experts == 0: dense) */
    int experts;
    int top_k;
    long expert_ffn;      /* intermediate size of one routed expert */
    int shared_experts;
    long shared_ffn;      /* intermediate size of one shared expert */
    bool shared_expert_gate; /* a sigmoid gate (h x 1 Linear) scales the shared expert's output
                              * (Qwen2MoeSparseMoeBlock shared_expert_gate) */
    int dense_first;      /* first k layers are dense MLP (DeepSeek first_k_dense_replace) */
    int moe_layer_freq;   /* layer i >= dense_first is MoE when (i + moe_layer_phase) % freq == 0 */
    int moe_layer_phase;  /* 0: DeepSeek moe_layer_freq; 1: Qwen decoder_sparse_step */
    bool router_bias;     /* DeepSeek-V3 / GLM-4.5 e_score_correction_bias (E per MoE layer) */
    bool router_linear_bias; /* bias of the router linear (gpt-oss; E per MoE layer) */
    bool expert_bias;     /* biases on every expert's matrices (gpt-oss) */
    double glu_limit;     /* swiglu_limit: the experts' GLU inputs clamped to it (gpt-oss 7.0),
                             0 when absent (mcore_unfused.h prices Megatron's clamp kernels) */
    model_router_scoring router_scoring;
    int router_groups;    /* n_group (DeepSeek-V3 node-limited routing), 0 = none */
    int router_topk_groups; /* topk_group */
    double routed_scaling_factor; /* 1 when absent */
    bool norm_topk_prob;  /* top-k weights renormalised to sum 1 */
    double router_aux_loss_coef; /* load-balancing loss coefficient, 0 when absent */
    int mtp_layers;       /* num_nextn_predict_layers (DeepSeek-V3, GLM-4.5): not in the counts */

    /* Multimodal checkpoints: the language model of text_config is planned. */
    bool vision_tower_ignored; /* a vision_config was present and is not planned */
    char ignored_parts[64];    /* the ignored sub-configs, e.g. "vision_config" */
    char assumed[192];         /* keys absent from the file and set to the model type's default */

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
    bool published_active_excludes_embedding; /* DeepSeek, Kimi-K2, gpt-oss count active without
                                                * the input table (also the model type's default) */
    char hidden_act[24];  /* the config's hidden_act ("silu", "gelu_pytorch_tanh", "relu2",
                           * "xielu"), or "" */
    double attention_dropout; /* attention_dropout (attn_pdrop): the dropout_p transformers
                               * passes to SDPA while training; 0 when absent */
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
/* Whether layer i (0-based) has an MoE block. */
bool model_layer_is_moe(const model_spec *m, int i);
/* Number of layers whose MLP is an MoE block. */
int model_moe_layers(const model_spec *m);
/* Whether layer i attends through a sliding window, and how many layers do. */
bool model_layer_is_sliding(const model_spec *m, int i);
int model_sliding_layers(const model_spec *m);

/* Per-layer parameter counts (whole layer, unsharded). */
double model_attention_params(const model_spec *m);   /* projections + biases + qk/mla norms */
double model_norm_params(const model_spec *m);        /* the layer's hidden-width norms */
/* Hidden-width norms per decoder layer: 2 (pre-attention, pre-MLP), 4 with sandwich norms, 1
 * where a parallel block's attention and MLP share one (model.h shared_block_norm). */
int model_layer_norms(const model_spec *m);
/* Share of the layers that rotate q and k (1 but for model.h nope_layers): the per-layer RoPE
 * kernels' bytes are this share of a rotating layer's, on average over the layers. */
double model_rope_layer_share(const model_spec *m);
double model_dense_mlp_params(const model_spec *m);   /* dense MLP of ffn width */
double model_expert_params(const model_spec *m);      /* one routed expert */
double model_shared_expert_params(const model_spec *m); /* all shared experts of a layer */
double model_router_params(const model_spec *m);
double model_embedding_params(const model_spec *m);   /* token (+ position) table */
double model_output_params(const model_spec *m);      /* final norm + untied lm_head */

double model_params_total(const model_spec *m);
/* Parameters touched per token: routed experts counted top_k times, not `experts` times. */
double model_params_active(const model_spec *m);
/* Active parameters as the model card counts them: without the input embedding for the models
 * whose publishers count so (published_active_excludes_embedding). */
double model_params_active_published(const model_spec *m);
/* Unique parameters of the multi-token-prediction modules (excluded from the totals above, as
 * the model cards exclude them): per module one decoder layer of the last layer's kind, the
 * projection eh_proj (2h x h) and three RMSNorms (enorm, hnorm, shared_head.norm); the copies
 * of embedding and output head a checkpoint may store for them are not counted. */
double model_mtp_params(const model_spec *m);

/* Width of the attention output (heads * v_head_dim) and of q (heads * qk dim). */
int model_q_dim(const model_spec *m);
int model_kv_dim(const model_spec *m);     /* width of each of K and V for GQA (kv_heads*head_dim) */
int model_attn_out_dim(const model_spec *m);

/* Names of the presets found under data_dir/models, comma-separated, into buf. */
void model_list_presets(const char *data_dir, char *buf, size_t buflen);

#endif
