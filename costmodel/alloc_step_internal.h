/*
 * alloc_step_internal.h — what the allocator replay's modules share (alloc_step.h): one layer's
 * dimensions, the replay context, a layer's saved set, and the RMSNorm every layer kind uses.
 * Sizes are bytes; A allocates on the compute stream, F frees, keep saves for the backward (or,
 * under a checkpoint's forward, frees at once).
 */
#ifndef PLAN_ALLOC_STEP_INTERNAL_H
#define PLAN_ALLOC_STEP_INTERNAL_H

#include "alloc_replay.h"
#include "layout.h"
#include "model.h"

#include <stdbool.h>

enum { MAX_SAVED = 48, MAX_LAYER_PARAMS = 24, SIDE_STREAM = 1 };

typedef struct {
    double T, s, h, q, kv, hd, f, V, a; /* tokens, sequence, widths, vocabulary, heads */
    double rf;                          /* rotary fraction (Phi-3's partial_rotary_factor) */
    bool native, ckpt, foreach, qk_norm, qkv_bias, o_bias, tied;
    bool fused;                         /* HF Phi-3's qkv_proj and gate_up_proj (model.h) */
    bool mask;                          /* HF builds an explicit [b, 1, s, s] window mask */
    bool lmask;                         /* this layer's SDPA takes it (its sliding layers) */
    bool gemma;                         /* HF Gemma 2/3 layers (four GemmaRMSNorms, model.h) */
    bool eager;                         /* transformers' eager attention (hf_eager_attn.h) */
    double attn_softcap;                /* Gemma 2's attention soft-cap under eager, 0: none */
    bool eager_window;                  /* eager with sliding layers: their own additive mask */
    bool gptoss;                        /* HF GPT-OSS layers (sinks, alloc_step_gptoss.c) */
    bool compiled;                      /* native blocks under torch.compile (alloc_step_compiled.c) */
    bool hold;                          /* native: the bf16 logits held to the step's end */
    double softcap;                     /* Gemma 2's final-logit soft-capping, 0: none */
    int rotary_tables;                  /* HF's cos/sin pairs a forward (Gemma 3: 2) */
    const model_spec *m;                /* for the per-layer pattern (model_layer_is_sliding) */
    bool moe, norm_topk;                /* HF MoE blocks (alloc_step_moe.c), renormalised top-k */
    bool shared_gate;                   /* Qwen2-MoE's shared expert (width sf) scaled by
                                         * sigmoid(shared_expert_gate(x)) (alloc_step_moe.c) */
    bool glm;                           /* GLM-4.5's block: fp32 sigmoid router with the
                                         * correction bias, an ungated shared expert (width sf)
                                         * added after the experts (alloc_step_moe.c) */
    bool ernie;                         /* ERNIE-4.5's: fp32 softmax router, bf16 routing
                                         * weights, the shared experts first; fp32 RoPE tables
                                         * and interleaved fp32 RoPE (alloc_step_moe.c) */
    bool phimoe;                        /* PhiMoE's: input jitter, the sparsemixer router, bf16
                                         * routing weights (alloc_step_phimoe.c) */
    bool jitter;                        /* PhiMoE's input_jitter_noise > 0 (model.h) */
    double E, topk, ef;                 /* experts, top-k, one expert's FFN width */
    int layers, nlp;                    /* decoder layers, parameters per layer */
    double lp[MAX_LAYER_PARAMS];        /* one layer's parameters, registration order */
    /* DeepSeek-V2/V3 (alloc_step_mla.c): MLA's ranks and widths, the shared experts' total
     * width, the dense first layers and their parameters (lpd: layers below dense_first) */
    bool mla, v3;                       /* MLA; DeepSeek-V3's rope code (else V2's complex) */
    double rq, rkv, rr, vd, sf;         /* q/kv lora ranks (rq 0: q_proj), rope dim, v dim */
    int dense_first, nlpd;
    double lpd[MAX_LAYER_PARAMS];
    /* Layer forms beyond Llama's (alloc_step_forms.c, transformers 5.17.0): the norm's code,
     * the block's shape, q/k norms over the whole projection, biases, a plain MLP, dropout */
    int norm_form;                      /* ALLOC_NORM_* */
    int block;                          /* ALLOC_BLOCK_* */
    bool ln_bias;                       /* nn.LayerNorm's bias (a parameter of h) */
    bool qk_full;                       /* q/k norms over [T, q] and [T, kv] (OLMo 2, OLMoE) */
    bool qk_wfull;                      /* q/k norm weights of q and kv (Cohere's per head) */
    bool plain;                         /* c_fc, GELU, c_proj (StarCoder2) */
    bool mlp_bias, drop, drop_emb;      /* MLP biases; residual and embedding dropout */
    bool rope32, rope_part;             /* Cohere's fp32 interleaved RoPE; StableLM's partial */
    bool logit_scale;                   /* Cohere: logits * logit_scale, a [T, V] bf16 copy */
    int norms;                          /* the layer's norms (1: a parallel block's shared one) */
    bool neox;                          /* GPT-NeoX's fused query_key_value, norms registered first */
    bool falcon;                        /* Falcon-7B's multi_query attention under SDPA's math
                                         * backend (alloc_step_falcon.c) */
    bool falcon_nda;                    /* Falcon-40B's new_decoder_architecture: k, v copied to
                                         * every query head, the masked cuDNN attention, ln_attn
                                         * and ln_mlp (alloc_step_falcon.c) */
    bool nope2, nope_l;                 /* Cohere2: the full-attention layers apply no RoPE;
                                         * this layer is one */
} dims;

enum { ALLOC_NORM_LLAMA = 0, ALLOC_NORM_FP32W, ALLOC_NORM_LN, ALLOC_NORM_COHERE };
enum { ALLOC_BLOCK_LLAMA = 0, ALLOC_BLOCK_SEQ, ALLOC_BLOCK_PARALLEL, ALLOC_BLOCK_POST };

typedef struct {
    int h[MAX_SAVED];
    int n;
    int eager_at; /* where eager attention's six saved tensors start (alloc_step_eager.c; a
                   * seventh, tanh's output, under Gemma 2's soft-cap) */
    int moe_at;   /* 1 + where the grouped_mm experts' eleven start (alloc_step_moe.c), 0: none */
} saved;

typedef struct {
    alloc_replay *a;
    bool fail;
    saved *layer_saved; /* the saved set of the layer in its backward (eager attention frees
                         * its parts as autograd's nodes run: alloc_step_eager.c) */
} ctx;

static inline int A(ctx *c, double bytes)
{
    int h = alloc_replay_malloc(c->a, (uint64_t)(bytes + 0.5), 0);
    if (h < 0) c->fail = true;
    return h;
}

static inline void F(ctx *c, int h)
{
    alloc_replay_free(c->a, h);
}

/* saved for the backward, or (sv NULL: under a checkpoint's forward) freed now */
static inline void keep(ctx *c, saved *sv, int h)
{
    if (!sv) {
        F(c, h);
        return;
    }
    if (sv->n < MAX_SAVED) sv->h[sv->n++] = h;
    else c->fail = true;
}

static inline void release(ctx *c, saved *sv)
{
    for (int i = 0; i < sv->n; i++) F(c, sv->h[i]);
    sv->n = 0;
}

/* transformers' LlamaRMSNorm (or F.rms_norm natively) over rows x width: forward returns the
 * output, saving into sv; backward consumes the output's gradient g, returns the input's */
int alloc_step_norm_fwd(ctx *c, const dims *d, double rows, double width, saved *sv);
int alloc_step_norm_bwd(ctx *c, const dims *d, double rows, double width, int g);

/* SDPA's additive bf16 copy of HF's boolean window mask, made in every masked attention call
 * (alloc_step.c); the caller saves it (keep) */
int alloc_step_mask_sdpa(ctx *c, const dims *d);

/* The attention from the input norm's output to o_proj's output, and its backward down to the
 * q, k, v projections' input (alloc_step.c) */
int alloc_step_attn_fwd(ctx *c, const dims *d, int n1, saved *sv);
int alloc_step_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg);

/* The dense gated MLP and its backward (alloc_step.c); the backward frees g when consume */
int alloc_step_mlp_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_mlp_bwd(ctx *c, const dims *d, int g, bool consume, int *wg, int *nwg);

/* transformers' rotate_half RoPE of a [T, w] projection (alloc_step.c) */
int alloc_step_rope_fwd(ctx *c, const dims *d, double w);

/* Hugging Face Gemma 2/3's decoder layer and its GemmaRMSNorm (alloc_step_gemma.c); the norm's
 * backward frees g only when consume (a residual's gradient flows on) */
int alloc_step_gemma_norm_fwd(ctx *c, double rows, double width, saved *sv);
int alloc_step_gemma_norm_bwd(ctx *c, double rows, double width, int g, bool consume);
int alloc_step_gemma_layer_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_gemma_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg);

/* A Hugging Face MoE block (router and grouped_mm experts, alloc_step_moe.c): the forward
 * returns the block's output, the backward the input's gradient (dy not consumed) */
int alloc_step_moe_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_moe_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg);

/* PhiMoE's block (alloc_step_phimoe.c): the forward from the norm's output (the caller keeps
 * it), the backward to its gradient (dy not consumed) */
int alloc_step_phimoe_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_phimoe_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg);

/* Falcon-7B's attention (alloc_step_falcon.c): from the norm's output n1 (kept) to dense's
 * output; the backward from dense's input gradient (consumed) to n1's */
int alloc_step_falcon_attn_fwd(ctx *c, const dims *d, int n1, saved *sv);
int alloc_step_falcon_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg);
int alloc_step_falcon_nda_attn_fwd(ctx *c, const dims *d, int n1, saved *sv);
int alloc_step_falcon_nda_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg);

/* frees what a node saved, taking it off the layer's saved set (alloc_step_eager.c) */
void alloc_step_drop_saved(ctx *c, saved *sv, int h);

/* transformers' eager attention (alloc_step_eager.c): the additive mask built once per
 * forward; the scores from the rotated q, the keys and values after repeat_kv to o_proj's
 * output; the backward from the context's gradient (consumed) to the gradients of q and
 * of k and v before repeat_kv, freeing the saved parts as autograd does (c->layer_saved) */
int alloc_step_eager_mask(ctx *c, const dims *d);
int alloc_step_eager_attn_fwd(ctx *c, const dims *d, int qe, int keys, int values, saved *sv);
void alloc_step_eager_attn_bwd(ctx *c, const dims *d, int go, int *gq, int *gk, int *gv);

/* The experts of a Hugging Face MoE block (alloc_step_moe.c) after its router: the router's
 * saved tensors pre[] are kept first; the backward returns the input's gradient and, in *gws,
 * the gradient of the routing weights [T, k] fp32 */
int alloc_step_moe_experts_fwd(ctx *c, const dims *d, saved *sv, const int *pre, int npre);
int alloc_step_moe_experts_bwd(ctx *c, const dims *d, int *wgr, int *nwg, int *gws);

/* DeepSeek-V2/V3 (alloc_step_mla.c): MLA from the input norm's output n1 (kept here) to
 * o_proj's output, and its backward to n1's gradient; DeepseekV2Moe (router, routed and shared
 * experts) from the norm's output (the caller keeps it) and its backward (dy not consumed);
 * the layers' parameters (lp: an MoE layer's, lpd: a dense one's) */
int alloc_step_mla_attn_fwd(ctx *c, const dims *d, int n1, saved *sv);
int alloc_step_mla_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg);
int alloc_step_ds_moe_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_ds_moe_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg);
void alloc_step_mla_params(dims *d);

/* native_llama.py's block under torch.compile (alloc_step_compiled.c): Inductor's buffers; the
 * forward keeps its saved set in sv (the caller then keeps the input), the backward frees them
 * from c->layer_saved where the graph drops them */
int alloc_step_compiled_layer_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_compiled_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg);

/* An index's backward (index_put_ with accumulate into zeros of `bytes`, sorting `updates`
 * indices: alloc_step_moe.c); returns the gradient */
int alloc_step_index_bwd(ctx *c, double bytes, double updates);

/* HF's boolean window mask [b, 1, s, s], once per forward (alloc_step.c) */
int alloc_step_mask_build(ctx *c, const dims *d);

/* Hugging Face GPT-OSS (alloc_step_gptoss.c): the layer's parameters, its RMSNorm (fp32
 * weight product; the final norm too), its decoder layer under eager attention with sinks */
void alloc_step_gptoss_params(dims *d);
int alloc_step_gptoss_norm_fwd(ctx *c, double rows, double width, saved *sv);
int alloc_step_gptoss_norm_bwd(ctx *c, double rows, double width, int g);
int alloc_step_gptoss_layer_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_gptoss_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg);

/* The replay's dimensions of m's layers under t and l (alloc_step.c; 0, or -1 where the layer
 * form is not listed), and layer l's forward on input x by its layer code (sv NULL: under a
 * checkpoint's forward) */
int alloc_step_dims_of(const model_spec *m, const training_spec *t, const layout *l, dims *out);
/* Whether m's MoE layers are GLM-4.5's block (alloc_step_moe.c glm_fwd): glm4_moe's, and
 * dots1's, whose Dots1MoE and Dots1TopkRouter are the same code (alloc_step_cover.c) */
bool alloc_step_glm_block(const model_spec *m);
int alloc_step_any_layer_fwd(ctx *c, const dims *d, int l, int x, saved *sv);

/* Layer forms (alloc_step_forms.c): the form of m's layers (0 on success, -1 where
 * transformers' op list for it is not listed), one layer's parameters in registration order,
 * the norms of another code than Llama's (called by alloc_step_norm_fwd/bwd; g -1: the
 * gradient is not consumed), RoPE other than Llama's, and a decoder layer of a form's block */
int alloc_step_form_of(const model_spec *m, dims *d);
void alloc_step_layer_params(dims *d);
int alloc_step_form_norm_fwd(ctx *c, const dims *d, double rows, double width, saved *sv);
int alloc_step_form_norm_bwd(ctx *c, const dims *d, double rows, double width, int g);
int alloc_step_form_rope_fwd(ctx *c, const dims *d, double w);
int alloc_step_form_layer_fwd(ctx *c, const dims *d, int x, saved *sv);
int alloc_step_form_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg);

/* Hugging Face Phi-3's decoder layer (alloc_step_phi3.c); its RoPE of the first rf of each head
 * of a [T, width] projection, then the cat with the rest (StableLM's and GPT-NeoX's too) */
int alloc_step_partial_rope_fwd(ctx *c, const dims *d, double width);
int alloc_step_phi3_layer_fwd(ctx *c, const dims *d, saved *sv);
int alloc_step_phi3_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg);

#endif
