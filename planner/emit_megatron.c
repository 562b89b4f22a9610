/*
 * emit_megatron.c — a layout as Megatron-LM's pretrain_gpt.py flags (see emit.h): the shell
 * text (--emit megatron-args) and the same flags as an argv for the JSON. It exists apart from
 * emit.c so that Megatron-LM's flag list, the largest emitter, is one module; the shared pieces
 * (header, quoting, the memstream) stay in emit.c (emit_internal.h).
 *
 * The flags are (flag, value) pairs so the text and the JSON array come from the same list.
 */
#include "emit.h"
#include "offload.h"
#include "emit_internal.h"
#include "megatron_form.h"
#include "recompute_modules.h"

#include "precision.h"
#include "shard_grads.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Megatron-LM flags ----
 *
 * Flag names and value formats: Megatron-LM commit d98e8a6, megatron/training/arguments.py
 * (hand-written flags) and megatron/core/transformer/transformer_config.py (flags generated from
 * TransformerConfig fields by megatron/training/argument_utils.py: field foo_bar -> --foo-bar,
 * a True-default bool -> --no-foo-bar / --disable-foo-bar, or the field's argparse_meta name). */

#define MAX_FLAGS 128
_Static_assert(FLAG_VALUE_MAX == MEGATRON_FORM_PATTERN_CHARS,
               "the emitter states the per-layer patterns megatron_form.c checks");

typedef struct {
    const char *flag;
    char value[FLAG_VALUE_MAX]; /* "" for a switch; raw text, quoted when rendered */
    bool placeholder;           /* not from the plan: the user's training length, schedule, data */
    bool words;                 /* value is several argv words split at spaces (an argparse
                                   nargs="+" list, e.g. --recompute-modules) */
} flag_t;

typedef struct {
    flag_t f[MAX_FLAGS];
    int n;
    bool overflow;
    /* architecture the flags cannot state, one sentence each */
    char unsupported[MEGATRON_FORM_MAX][MEGATRON_FORM_ITEM_CHARS];
    int nunsupported;
} flag_list;

static void fl_add(flag_list *fl, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fl_add(flag_list *fl, const char *flag, const char *fmt, ...)
{
    if (fl->n >= MAX_FLAGS) {
        fl->overflow = true;
        return;
    }
    flag_t *x = &fl->f[fl->n++];
    x->flag = flag;
    x->value[0] = '\0';
    x->placeholder = false;
    x->words = false;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(x->value, sizeof x->value, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= sizeof x->value) fl->overflow = true;
    }
}

static void fl_unsupported(flag_list *fl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fl_unsupported(flag_list *fl, const char *fmt, ...)
{
    if (fl->nunsupported >= (int)(sizeof fl->unsupported / sizeof *fl->unsupported)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fl->unsupported[fl->nunsupported++], sizeof fl->unsupported[0], fmt, ap);
    va_end(ap);
}

bool emit_megatron_fsdp(const layout *l)
{
    /* optim_grads_params (ZeRO-3), or optim_grads with --shard-grads (costmodel/shard_grads.h) */
    return l->framework == FRAMEWORK_MEGATRON && layout_grads_sharded(l);
}

/* Megatron-LM's low-precision flags for l's precision (precision.h): FP8 "hybrid" (e4m3
 * forward, e5m2 gradients) with the recipe; MXFP8 in e4m3; NVFP4 through --fp4-format;
 * --fp8-param-gather (--fp4-param-gather for NVFP4; argument_utils.py passes it on as
 * TransformerConfig.fp8_param) and --first-last-layers-bf16 with its two counts where the
 * plan has them (Megatron-LM d98e8a6 arguments.py, transformer_config.py). */
static void precision_flags(flag_list *fl, const layout *l)
{
    switch (l->precision) {
    case PRECISION_FP8: {
        layout_fp8_recipe r = precision_fp8_recipe(l);
        fl_add(fl, "--fp8-format", "hybrid");
        fl_add(fl, "--fp8-recipe", "%s", precision_fp8_recipe_name(r));
        if (r == FP8_RECIPE_DELAYED) {
            fl_add(fl, "--fp8-amax-history-len", "1024");
            fl_add(fl, "--fp8-amax-compute-algo", "max");
        }
        break;
    }
    case PRECISION_MXFP8:
        fl_add(fl, "--fp8-format", "e4m3");
        fl_add(fl, "--fp8-recipe", "mxfp8");
        break;
    case PRECISION_NVFP4:
        fl_add(fl, "--fp4-format", "e2m1");
        fl_add(fl, "--fp4-recipe", "nvfp4");
        break;
    default: return;
    }
    if (precision_param_gather(l))
        fl_add(fl, l->precision == PRECISION_NVFP4 ? "--fp4-param-gather" : "--fp8-param-gather",
               NULL);
    if (l->bf16_layers_start > 0 || l->bf16_layers_end > 0) {
        fl_add(fl, "--first-last-layers-bf16", NULL);
        fl_add(fl, "--num-layers-at-start-in-bf16", "%d", l->bf16_layers_start);
        fl_add(fl, "--num-layers-at-end-in-bf16", "%d", l->bf16_layers_end);
    }
}

/* Megatron-LM asserts CUDA_DEVICE_MAX_CONNECTIONS=1 when TP > 1 or CP > 1 on GPUs of compute
 * capability below 10 (Ampere, Hopper; AMD Instinct reports 9), unless an FSDP is used, which
 * in turn asserts it is not 1 (arguments.py:1451-1479 and 1166). Blackwell (B200, B300, GB200,
 * GB300) has no such requirement. */
static bool pre_blackwell(const system_spec *sys)
{
    const char *g = sys->gpu_name;
    return !(g[0] == 'B' || (g[0] == 'G' && g[1] == 'B'));
}

int emit_megatron_max_connections(const layout *l, const system_spec *sys)
{
    if (l->framework != FRAMEWORK_MEGATRON) return 0;
    if (emit_megatron_fsdp(l)) return -1;
    if ((l->tp > 1 || l->cp > 1) && pre_blackwell(sys)) return 1;
    return 0;
}

/* The costed pipeline split (layout_stage_layers) as Megatron's --pipeline-model-parallel-
 * layout: "E" (embedding) on the first stage, "t" per decoder layer, "m" per MTP layer and "L"
 * (loss) on the last, stages separated by "|" (megatron/core/transformer/
 * pipeline_parallel_layer_layout.py, parse_str_to_list). With virtual stages the string lists
 * pp x vpp stages in schedule order (virtual stage c*pp + r is chunk c of rank r), each rank's
 * layers spread over its chunks as evenly as they go; a rank with fewer than vpp per chunk
 * leaves the gap in the chunk that holds the embedding (first rank: its first chunk) or the
 * loss (last rank: its last chunk), as Megatron-Bridge's DeepSeek-V3 H100 recipe does
 * ("Et|(tt|)*30mL"). Returns false when the text does not fit buf. */
bool emit_pipeline_layout_text(const model_spec *m, const layout *l, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    int stages = l->pp * (l->vpp > 1 ? l->vpp : 1);
    for (int vs = 0; vs < stages; vs++) {
        int rank = vs % l->pp, chunk = vs / l->pp;
        int n = layout_chunk_layers(m, l, rank, chunk); /* the stage's layers at vpp 1 */
        bool first = vs == 0, last = vs == stages - 1;
        char stage[64];
        int k = snprintf(stage, sizeof stage, "%s%s", vs ? "|" : "", first ? "E" : "");
        if (n == 1) k += snprintf(stage + k, sizeof stage - k, "t");
        else if (n > 1) k += snprintf(stage + k, sizeof stage - k, "t*%d", n);
        if (last) {
            if (m->mtp_layers == 1) k += snprintf(stage + k, sizeof stage - k, ",m");
            else if (m->mtp_layers > 1)
                k += snprintf(stage + k, sizeof stage - k, ",m*%d", m->mtp_layers);
            k += snprintf(stage + k, sizeof stage - k, ",L");
        }
        if (used + (size_t)k + 1 > len) return false;
        memcpy(buf + used, stage, (size_t)k + 1);
        used += (size_t)k;
    }
    return true;
}

static void architecture_flags(flag_list *fl, const model_spec *m, const training_spec *t,
                               const layout *l)
{
    /* what the flags below cannot state of the model, in the order they would state it (one
     * list with the search's output: megatron_form.c); the layout's own items follow */
    fl->nunsupported = megatron_form_missing(m, fl->unsupported,
                                             (int)(sizeof fl->unsupported / sizeof *fl->unsupported));
    fl_add(fl, "--num-layers", "%d", m->layers);
    fl_add(fl, "--hidden-size", "%d", m->hidden);
    fl_add(fl, "--ffn-hidden-size", "%ld", m->ffn);
    fl_add(fl, "--num-attention-heads", "%d", m->heads);
    if (m->mla) {
        fl_add(fl, "--multi-latent-attention", NULL);
        if (m->q_lora_rank > 0) fl_add(fl, "--q-lora-rank", "%d", m->q_lora_rank);
        fl_add(fl, "--kv-lora-rank", "%d", m->kv_lora_rank);
        fl_add(fl, "--qk-head-dim", "%d", m->qk_nope_dim);
        fl_add(fl, "--qk-pos-emb-head-dim", "%d", m->qk_rope_dim);
        fl_add(fl, "--v-head-dim", "%d", m->v_head_dim);
    } else {
        if (m->head_dim * m->heads != m->hidden) fl_add(fl, "--kv-channels", "%d", m->head_dim);
        if (m->kv_heads < m->heads) {
            fl_add(fl, "--group-query-attention", NULL);
            fl_add(fl, "--num-query-groups", "%d", m->kv_heads);
        }
    }
    if (m->activation == MODEL_ACT_SWIGLU) fl_add(fl, "--swiglu", NULL);
    fl_add(fl, "--normalization", m->norm == MODEL_NORM_RMS ? "RMSNorm" : "LayerNorm");
    if (m->norm_eps > 0) fl_add(fl, "--norm-epsilon", "%g", m->norm_eps);
    if (m->qk_norm) fl_add(fl, "--qk-layernorm", NULL);
    /* sandwich and post norms, parallel blocks, full-width q/k norms, bias-free LayerNorm, an
     * output-layer bias: not built (megatron_form.c) */
    /* plain MLPs: Megatron's default activation is GeLU; ReLU^2 is --squared-relu */
    if (m->activation == MODEL_ACT_GELU && !strcmp(m->hidden_act, "relu2"))
        fl_add(fl, "--squared-relu", NULL);

    /* positions */
    bool yarn = !strcmp(m->rope_scaling_type, "yarn");
    if (m->learned_positions) fl_add(fl, "--position-embedding-type", "learned_absolute");
    else if (yarn && !m->mla) fl_add(fl, "--position-embedding-type", "yarn");
    else fl_add(fl, "--position-embedding-type", "rope");
    int maxpos = m->max_positions > t->seq_len ? m->max_positions : t->seq_len;
    fl_add(fl, "--max-position-embeddings", "%d", maxpos);
    if (!m->learned_positions) {
        if (m->rope_theta > 0) fl_add(fl, "--rotary-base", "%.0f", m->rope_theta);
        if (m->rotary_fraction > 0 && m->rotary_fraction < 1)
            fl_add(fl, "--rotary-percent", "%g", m->rotary_fraction);
        /* a second RoPE base for the sliding-window layers: not built (megatron_form.c) */
        const char *rs = m->rope_scaling_type;
        bool unfused = false; /* --no-rope-fusion written */
        if (!strcmp(rs, "llama3")) {
            /* Megatron's llama3 scaling fixes low/high frequency factors 1 and 4 and the
             * original context 8192 (megatron/core/models/common/embeddings/rotary_pos_
             * embedding.py), the values of every Llama 3.x config */
            fl_add(fl, "--use-rope-scaling", NULL);
            fl_add(fl, "--rope-scaling-factor", "%g", m->rope_scaling_factor);
        } else if (yarn) {
            if (m->mla) fl_add(fl, "--rope-type", "yarn");
            fl_add(fl, "--rotary-scaling-factor", "%g", m->rope_scaling_factor);
            if (m->rope_original_max_positions > 0)
                fl_add(fl, "--yarn-original-max-position-embeddings", "%d",
                       m->rope_original_max_positions);
        } else if (!strcmp(rs, "linear") && m->rope_scaling_factor >= 1 &&
                   m->rope_scaling_factor == (int)m->rope_scaling_factor) {
            fl_add(fl, "--rotary-seq-len-interpolation-factor", "%d", (int)m->rope_scaling_factor);
        } else if (rs[0] && strcmp(rs, "default")) {
            /* other scaling kinds: not built (megatron_form.c) */
        } else if (m->mla) {
            /* MLA defaults to yarn; its fused RoPE works with yarn only (TransformerConfig
             * raises otherwise: transformer_config.py:3345, Megatron-LM d98e8a6) */
            fl_add(fl, "--rope-type", "rope");
            fl_add(fl, "--no-rope-fusion", NULL);
            unfused = true;
        }
        /* the layout's eager RoPE (layout.h rope_unfused), unless written just above */
        if (l->rope_unfused && !unfused) fl_add(fl, "--no-rope-fusion", NULL);
    }

    /* sliding window and sinks */
    int sliding = model_sliding_layers(m);
    if (m->sliding_window > 0 && sliding > 0) {
        fl_add(fl, "--window-size", "%d,0", m->sliding_window);
        if (sliding < m->layers) {
            char pat[FLAG_VALUE_MAX];
            if (megatron_layer_pattern(m, model_layer_is_sliding, pat, sizeof pat))
                fl_add(fl, "--window-attn-skip-freq", "%s", pat);
        }
    }
    if (m->attention_sinks) fl_add(fl, "--softmax-type", "learnable");
    /* logit soft-capping: not built (megatron_form.c) */

    if (!m->tied_embeddings) fl_add(fl, "--untie-embeddings-and-output-weights", NULL);

    /* biases: Megatron's add_bias_linear puts a bias on every linear (qkv, attention output,
     * both MLP matrices, experts); add_qkv_bias on qkv alone */
    bool mlp_biased = m->mlp_bias || m->expert_bias;
    /* the bias sets neither flag states: megatron_form.c */
    if (!(m->out_bias || (m->attn_out_bias && mlp_biased))) {
        fl_add(fl, "--disable-bias-linear", NULL);
        if (m->qkv_bias) fl_add(fl, "--add-qkv-bias", NULL);
    }
    if (!m->dropout) {
        fl_add(fl, "--attention-dropout", "0.0");
        fl_add(fl, "--hidden-dropout", "0.0");
    }
    if (m->hf_repo[0]) {
        fl_add(fl, "--tokenizer-type", "HuggingFaceTokenizer");
        fl_add(fl, "--tokenizer-model", "%s", m->hf_repo);
    } else {
        fl_add(fl, "--tokenizer-type", "NullTokenizer");
        fl_add(fl, "--vocab-size", "%ld", m->vocab);
    }

    if (model_is_moe(m)) {
        fl_add(fl, "--num-experts", "%d", m->experts);
        fl_add(fl, "--moe-router-topk", "%d", m->top_k);
        fl_add(fl, "--moe-ffn-hidden-size", "%ld", m->expert_ffn);
        if (m->shared_experts > 0)
            fl_add(fl, "--moe-shared-expert-intermediate-size", "%ld",
                   m->shared_experts * m->shared_ffn);
        if (model_moe_layers(m) < m->layers) {
            char pat[FLAG_VALUE_MAX];
            if (megatron_layer_pattern(m, model_layer_is_moe, pat, sizeof pat))
                fl_add(fl, "--moe-layer-freq", "%s", pat);
        }
        if (m->router_scoring == MODEL_ROUTER_SIGMOID) {
            /* without renormalised top-k weights: not built (megatron_form.c) */
            fl_add(fl, "--moe-router-score-function", "sigmoid");
        } else {
            fl_add(fl, "--moe-router-score-function", "softmax");
            /* Megatron's default softmaxes the top-k logits (renormalised weights); pre-softmax
             * takes the top-k of the softmax over all experts (norm_topk_prob false) */
            if (!m->norm_topk_prob && m->top_k > 1) fl_add(fl, "--moe-router-pre-softmax", NULL);
        }
        if (m->router_bias) fl_add(fl, "--moe-router-enable-expert-bias", NULL);
        if (m->router_groups > 1) {
            fl_add(fl, "--moe-router-num-groups", "%d", m->router_groups);
            if (m->router_topk_groups > 0)
                fl_add(fl, "--moe-router-group-topk", "%d", m->router_topk_groups);
        }
        if (m->routed_scaling_factor > 0 && m->routed_scaling_factor != 1)
            fl_add(fl, "--moe-router-topk-scaling-factor", "%g", m->routed_scaling_factor);
        if (m->router_aux_loss_coef > 0) {
            fl_add(fl, "--moe-router-load-balancing-type", m->router_bias ? "seq_aux_loss"
                                                                          : "aux_loss");
            fl_add(fl, "--moe-aux-loss-coeff", "%g", m->router_aux_loss_coef);
        } else {
            fl_add(fl, "--moe-router-load-balancing-type", "none");
        }
        /* biases on the router and every expert: not built (megatron_form.c) */
        /* no --moe-expert-capacity-factor: dropless, every token reaches its experts, as
         * costed */
        fl_add(fl, "--moe-grouped-gemm", NULL);
        /* Megatron-Core: alltoall and allgather dispatchers by name; DeepEP and HybridEP are
         * the backends of the flex dispatcher */
        if (l->moe_dispatcher == MOE_DISPATCH_DEEPEP ||
            l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP) {
            fl_add(fl, "--moe-token-dispatcher-type", "flex");
            fl_add(fl, "--moe-flex-dispatcher-backend", "%s",
                   layout_moe_dispatcher_name(l->moe_dispatcher));
            if (l->moe_fp8_dispatch)
                fl_unsupported(fl, "DeepEP's FP8 dispatch (DeepSeek-V3 Sec. 3.3.3): Megatron-LM "
                                   "sends bf16 to DeepEP (fused_a2a.py); its FP8 wire format is "
                                   "the ncclep backend's --moe-dispatch-fwd-dtype mxfp8");
        } else {
            fl_add(fl, "--moe-token-dispatcher-type", "%s",
                   layout_moe_dispatcher_name(l->moe_dispatcher));
        }
        if (t->moe_capacity_factor > 0)
            fl_add(fl, "--moe-expert-capacity-factor", "%g", t->moe_capacity_factor);
        if (t->moe_ep_overlap) {
            fl_add(fl, "--overlap-moe-expert-parallel-comm", NULL);
            fl_add(fl, "--delay-wgrad-compute", NULL);
        }
        if (t->moe_shared_overlap && m->shared_experts > 0)
            fl_add(fl, "--moe-shared-expert-overlap", NULL);
    }
    if (m->mtp_layers > 0) fl_add(fl, "--mtp-num-layers", "%d", m->mtp_layers);
}

static void megatron_flags(flag_list *fl, const estimate *e, const model_spec *m)
{
    const layout *l = &e->layout;
    const training_spec *t = &e->training;

    architecture_flags(fl, m, t, l);

    /* parallelism */
    fl_add(fl, "--tensor-model-parallel-size", "%d", l->tp);
    fl_add(fl, "--pipeline-model-parallel-size", "%d", l->pp);
    bool layout_text = layout_split_uneven(m, l);
    if (layout_text) {
        /* the costed split, stage by stage (Megatron's default needs layers % pp == 0; the
         * layout also sets the virtual stages, and excludes the per-stage layer flags) */
        char text[FLAG_VALUE_MAX];
        if (emit_pipeline_layout_text(m, l, text, sizeof text))
            fl_add(fl, "--pipeline-model-parallel-layout", "%s", text);
        else
            fl->overflow = true;
    }
    if (l->vpp > 1 && !layout_text)
        fl_add(fl, "--num-layers-per-virtual-pipeline-stage", "%d", m->layers / (l->pp * l->vpp));
    fl_add(fl, "--context-parallel-size", "%d", l->cp);
    /* the rank order tp-cp-ep-pp-dp (megatron/training/initialize.py:395 at d98e8a6) */
    if (l->rank_order == RANK_ORDER_PP_DP) fl_add(fl, "--use-tp-pp-dp-mapping", NULL);
    if (model_is_moe(m)) {
        fl_add(fl, "--expert-model-parallel-size", "%d", l->ep);
        fl_add(fl, "--expert-tensor-parallel-size", "%d", layout_etp(l));
    }
    if (l->sp) fl_add(fl, "--sequence-parallel", NULL);
    /* TE userbuffers with TE's default per-GEMM methods (no --tp-comm-overlap-cfg) */
    if (l->tp_comm_overlap) fl_add(fl, "--tp-comm-overlap", NULL);

    /* data-parallel sharding */
    if (emit_megatron_fsdp(l)) {
        /* required (DESIGN.md, Framework rules) */
        fl_add(fl, "--use-megatron-fsdp", NULL);
        fl_add(fl, "--data-parallel-sharding-strategy",
               layout_zero2(l) ? "optim_grads" : "optim_grads_params");
        fl_add(fl, "--no-gradient-accumulation-fusion", NULL);
        fl_add(fl, "--use-distributed-optimizer", NULL);
        fl_add(fl, "--ckpt-format", "fsdp_dtensor");
        /* recommended */
        fl_add(fl, "--calculate-per-token-loss", NULL);
        fl_add(fl, "--init-model-with-meta-device", NULL);
        /* recommended (DESIGN.md), but emitted only when the plan priced it: the script runs
         * what the prediction describes (ZeRO-2 and ZeRO-3 alike; the header says how to
         * price it) */
        if (t->grad_reduce_bf16) fl_add(fl, "--grad-reduce-in-bf16", NULL);
        fl_add(fl, "--fsdp-double-buffer", NULL);
        fl_add(fl, "--use-nccl-ub", NULL);
    } else {
        if (l->sharding == SHARDING_DISTOPT) fl_add(fl, "--use-distributed-optimizer", NULL);
        if (t->grad_reduce_bf16) fl_add(fl, "--grad-reduce-in-bf16", NULL);
    }
    if (l->shard_size > 0 && l->sharding != SHARDING_DDP)
        fl_add(fl, "--num-distributed-optimizer-instances", "%d", l->dp * l->cp / l->shard_size);
    bool overlap_grad = l->overlap_grad_reduce && l->dp * l->cp > 1;
    if (overlap_grad) fl_add(fl, "--overlap-grad-reduce", NULL);
    /* validate_args: --overlap-param-gather needs --overlap-grad-reduce (arguments.py:1024) */
    if (overlap_grad && l->overlap_param_gather && l->sharding != SHARDING_DDP)
        fl_add(fl, "--overlap-param-gather", NULL);

    /* recompute */
    if (l->recompute == RECOMPUTE_SELECTIVE) {
        fl_add(fl, "--recompute-granularity", "selective");
        if (l->recompute_modules) { /* TransformerConfig.recompute_modules: nargs "+" */
            char mods[160];
            recompute_modules_text(l->recompute_modules, ' ', mods, sizeof mods);
            fl_add(fl, "--recompute-modules", "%s", mods);
            if (fl->n > 0 && !strcmp(fl->f[fl->n - 1].flag, "--recompute-modules"))
                fl->f[fl->n - 1].words = true;
        }
    } else if (l->recompute == RECOMPUTE_FULL) {
        fl_add(fl, "--recompute-granularity", "full");
        if (l->recompute_layers > 0) {
            fl_add(fl, "--recompute-method", "block");
            fl_add(fl, "--recompute-num-layers", "%d", l->recompute_layers);
        } else {
            fl_add(fl, "--recompute-method", "uniform");
            fl_add(fl, "--recompute-num-layers", "1");
        }
    }

    /* CPU offload (issue 21; costmodel/offload.h): Megatron-LM arguments.py's flags; the
     * hybrid optimizer runs on the precision-aware optimizer path, its copies overlapped */
    if (l->optimizer_offload_pct > 0) {
        fl_add(fl, "--optimizer-cpu-offload", NULL);
        fl_add(fl, "--optimizer-offload-fraction", "%.2f", l->optimizer_offload_pct / 100.0);
        fl_add(fl, "--overlap-cpu-optimizer-d2h-h2d", NULL);
        fl_add(fl, "--use-precision-aware-optimizer", NULL);
    }
    if (l->optimizer_bf16_states) { /* arguments.py: the precision-aware optimizer's dtypes */
        if (l->optimizer_offload_pct <= 0) fl_add(fl, "--use-precision-aware-optimizer", NULL);
        fl_add(fl, "--main-grads-dtype", "bf16");
        fl_add(fl, "--exp-avg-dtype", "bf16");
        fl_add(fl, "--exp-avg-sq-dtype", "bf16");
    }
    /* activation offload: --cpu-offloading itself is not a command-line flag (arguments.py
     * excludes TransformerConfig's cpu_offloading); --cpu-offloading-num-layers N > 0 turns it
     * on (arguments.py at d98e8a6, validate_args) */
    if (l->activation_offload)
        fl_add(fl, "--cpu-offloading-num-layers", "%d", offload_activation_layers(m, l));

    /* training shape and precision */
    fl_add(fl, "--micro-batch-size", "%d", l->mbs);
    fl_add(fl, "--global-batch-size", "%d", t->global_batch);
    fl_add(fl, "--seq-length", "%d", t->seq_len);
    fl_add(fl, "--attention-backend", t->attention == ATTENTION_FLASH ? "flash" : "unfused");
    fl_add(fl, "--bf16", NULL);
    precision_flags(fl, l);
    fl_add(fl, "--clip-grad", "1.0");

    /* placeholders: what a run needs that the plan does not decide */
    int first_placeholder = fl->n;
    fl_add(fl, "--train-iters", "100");
    fl_add(fl, "--lr", "3.0e-4");
    fl_add(fl, "--min-lr", "3.0e-5");
    fl_add(fl, "--lr-decay-style", "cosine");
    fl_add(fl, "--lr-warmup-iters", "10");
    fl_add(fl, "--weight-decay", "0.1");
    fl_add(fl, "--mock-data", NULL);
    fl_add(fl, "--log-interval", "1");
    fl_add(fl, "--eval-iters", "0");
    for (int i = first_placeholder; i < fl->n; i++) fl->f[i].placeholder = true;
}

cm_status emit_need_megatron(const estimate *e, const char *what, char *err, size_t errlen)
{
    if (e->layout.framework == FRAMEWORK_MEGATRON) return CM_OK;
    if (e->layout.framework == FRAMEWORK_TORCHTITAN)
        return cm_fail(err, errlen, CM_EINVAL,
                       "this plan runs under torchtitan; %s are for Megatron plans: use --emit "
                       "torchtitan, or --framework megatron for a Megatron plan",
                       what);
    return cm_fail(err, errlen, CM_EINVAL,
                   "this plan uses the fsdp2 trainer path; %s are for Megatron plans: use "
                   "--emit yaml, or --framework megatron for a Megatron plan",
                   what);
}

/* The flags of e, or an error when one did not fit its buffer (a config too large to state). */
static cm_status build_flags(const estimate *e, const model_spec *m, flag_list **out, char *err,
                             size_t errlen)
{
    /* Megatron-LM's validate_args (d98e8a6, arguments.py; since 168cb15d7 "Disable TE cross
     * entropy loss fusion") refuses the TE loss fusion "due to stability issues"; Megatron-Core
     * (what Megatron-Bridge builds) only warns */
    if (e->layout.te_cross_entropy)
        return cm_fail(err, errlen, CM_EINVAL,
                       "Megatron-LM refuses --cross-entropy-fusion-impl te (validate_args: "
                       "\"disabled due to stability issues\"): use --emit bridge, whose "
                       "Megatron-Core only warns, or plan without --te-cross-entropy");
    flag_list *fl = calloc(1, sizeof *fl);
    if (!fl) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while building the flags");
    megatron_flags(fl, e, m);
    if (fl->overflow) {
        free(fl);
        return cm_fail(err, errlen, CM_EINVAL,
                       "the Megatron flags of this plan are too long to write (more than %d "
                       "flags or a value over %d characters): report this model",
                       MAX_FLAGS, FLAG_VALUE_MAX);
    }
    *out = fl;
    return CM_OK;
}

cm_status emit_megatron_args(const estimate *e, const model_spec *m, const system_spec *sys,
                             const emit_context *ctx, char **out, char *err, size_t errlen)
{
    (void)ctx;
    cm_status st = emit_need_megatron(e, "Megatron-LM flags", err, errlen);
    if (st != CM_OK) return st;
    flag_list *fl = NULL;
    if ((st = build_flags(e, m, &fl, err, errlen)) != CM_OK) return st;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        free(fl);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the flags");
    }
    emit_header(f, "#", e, m, sys);
    for (int i = 0; i < fl->nunsupported; i++) {
        fputs("# NOT EXPRESSIBLE in Megatron-LM, trained without it: ", f);
        emit_comment_text(f, fl->unsupported[i]);
        fputc('\n', f);
    }
    if (emit_megatron_fsdp(&e->layout)) {
        bool bf16_rec = e->training.grad_reduce_bf16;
        fprintf(f, "# Megatron-FSDP: the first five FSDP flags are required, the next %s "
                   "recommended (--fsdp-double-buffer\n"
                   "# and --use-nccl-ub trade peak memory for speed).\n",
                bf16_rec ? "five" : "four");
        fprintf(f, "# Leave CUDA_DEVICE_MAX_CONNECTIONS unset (unset CUDA_DEVICE_MAX_CONNECTIONS): "
                   "setting it can slow TP/CP.\n");
        if (!e->training.grad_reduce_bf16)
            fprintf(f, "# The prediction assumed fp32 gradient reduction; --grad-reduce-in-bf16 "
                       "halves that traffic (plan --grad-reduce-bf16 predicts with it).\n");
    }
    if (m->mtp_layers > 0)
        fprintf(f, "# --mtp-num-layers %d: the model's multi-token-prediction modules run on the "
                   "last stage and are in the prediction (time and memory).\n",
                m->mtp_layers);
    fprintf(f, "# PLACEHOLDERS, not from the plan: the flags from --train-iters on (training "
               "length, learning-rate\n# schedule, --mock-data: replace with --data-path PREFIX "
               "--split 99,1,0 for real data).\n");
    int mc = emit_megatron_max_connections(&e->layout, sys);
    if (mc > 0) fprintf(f, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    else if (mc < 0) fprintf(f, "unset CUDA_DEVICE_MAX_CONNECTIONS\n");
    if (e->training.expandable_segments) /* the prediction assumed it (memory.h) */
        fprintf(f, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n");
    /* from a Megatron-LM checkout, on every node: torchrun reads the rendezvous from the
     * environment the launcher sets (NNODES, NODE_RANK, MASTER_ADDR) */
    fprintf(f, "torchrun --nproc-per-node %d --nnodes \"${NNODES:-%d}\" --node-rank "
               "\"${NODE_RANK:-0}\" \\\n  --master-addr \"${MASTER_ADDR:-localhost}\" "
               "--master-port \"${MASTER_PORT:-6000}\" pretrain_gpt.py \\\n",
            e->gpus / emit_even_nodes(e->gpus, sys), emit_even_nodes(e->gpus, sys));
    for (int i = 0; i < fl->n; i++) {
        fputs(fl->f[i].flag, f);
        if (fl->f[i].value[0] && fl->f[i].words) {
            char word[FLAG_VALUE_MAX], *save = NULL;
            snprintf(word, sizeof word, "%s", fl->f[i].value);
            for (char *w = strtok_r(word, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                fputc(' ', f);
                emit_shell_quote(f, w);
            }
        } else if (fl->f[i].value[0]) {
            fputc(' ', f);
            emit_shell_quote(f, fl->f[i].value);
        }
        fputs(i + 1 < fl->n ? " \\\n" : "\n", f);
    }
    free(fl);
    return emit_finish(f, &buf, out, err, errlen);
}

cm_status emit_megatron_argv(const estimate *e, const model_spec *m, json_t **args,
                             json_t **placeholders, json_t **unsupported, char *err,
                             size_t errlen)
{
    cm_status st = emit_need_megatron(e, "Megatron-LM flags", err, errlen);
    if (st != CM_OK) return st;
    flag_list *fl = NULL;
    if ((st = build_flags(e, m, &fl, err, errlen)) != CM_OK) return st;
    /* argv tokens, no shell quoting; the placeholders are listed apart as well */
    *args = json_array();
    if (placeholders) *placeholders = json_array();
    if (unsupported) *unsupported = json_array();
    for (int i = 0; i < fl->n; i++) {
        json_array_append_new(*args, emit_json_string_lossy(fl->f[i].flag));
        if (fl->f[i].value[0] && fl->f[i].words) {
            char word[FLAG_VALUE_MAX], *save = NULL;
            snprintf(word, sizeof word, "%s", fl->f[i].value);
            for (char *w = strtok_r(word, " ", &save); w; w = strtok_r(NULL, " ", &save))
                json_array_append_new(*args, emit_json_string_lossy(w));
        } else if (fl->f[i].value[0]) {
            json_array_append_new(*args, emit_json_string_lossy(fl->f[i].value));
        }
        if (fl->f[i].placeholder && placeholders)
            json_array_append_new(*placeholders, emit_json_string_lossy(fl->f[i].flag));
    }
    for (int i = 0; unsupported && i < fl->nunsupported; i++)
        json_array_append_new(*unsupported, emit_json_string_lossy(fl->unsupported[i]));
    free(fl);
    return CM_OK;
}

