/*
 * emit.c — a layout as the configs users paste into their trainer (see emit.h).
 *
 * Each format is a list of settings built from one layout, then rendered: the Megatron flags
 * are (flag, value) pairs so the text and the JSON array come from the same list; the YAML goes
 * through libyaml's emitter so quoting and nesting are always valid YAML.
 *
 * Flag and key names: Megatron-LM megatron/training/arguments.py; the Megatron-FSDP required and
 * recommended flags are DESIGN.md's "Framework rules"; Megatron Bridge's config tree
 * (cfg.model = the model provider / TransformerConfig, cfg.ddp = DistributedDataParallelConfig,
 * cfg.dist, cfg.optimizer, cfg.train, cfg.checkpoint); the trainer YAML follows the key names
 * SkyRL- and verl-style trainers use (trainer.strategy, trainer.policy.fsdp_config,
 * trainer.policy.megatron_config, micro_train_batch_size_per_gpu, train_batch_size).
 */
#include "emit.h"
#include "units.h"

#include "precision.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "layout_codec.h"
#include "output.h"


int emit_parse_format(const char *s, emit_format *out)
{
    static const struct {
        const char *name;
        emit_format f;
    } names[] = {{"yaml", EMIT_YAML},     {"megatron-args", EMIT_MEGATRON_ARGS},
                 {"megatron", EMIT_MEGATRON_ARGS}, {"bridge", EMIT_BRIDGE},
                 {"json", EMIT_JSON}};
    for (size_t i = 0; s && i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].f;
            return 1;
        }
    return 0;
}

const char *emit_format_name(emit_format f)
{
    switch (f) {
    case EMIT_YAML: return "yaml";
    case EMIT_MEGATRON_ARGS: return "megatron-args";
    case EMIT_BRIDGE: return "bridge";
    case EMIT_JSON: return "json";
    default: return "none";
    }
}

/* ---- shared pieces ---- */

/* The model path a trainer loads: the preset's Hugging Face repository, else what was typed. */
static const char *model_path(const model_spec *m, const emit_context *ctx)
{
    if (m->hf_repo[0]) return m->hf_repo;
    if (ctx && ctx->model_ref && *ctx->model_ref) return ctx->model_ref;
    return m->name;
}

static int nodes_of(int gpus, const system_spec *sys)
{
    int gpn = sys->gpus_per_node > 0 ? sys->gpus_per_node : 1;
    return (gpus + gpn - 1) / gpn;
}

static int gpus_per_node_of(int gpus, const system_spec *sys)
{
    int gpn = sys->gpus_per_node > 0 ? sys->gpus_per_node : 1;
    return gpus < gpn ? gpus : gpn;
}

/* The comment block every text format starts with: what was planned and what it predicts. */
static void header(FILE *f, const char *c, const estimate *e, const model_spec *m,
                   const system_spec *sys)
{
    char line[256];
    output_layout_line(e, line, sizeof line);
    fprintf(f, "%s plan %s: %s on %d x %s (%d per node), seq %d, global batch %d sequences\n", c,
            PLAN_VERSION, m->display, e->gpus, sys->gpu_name, sys->gpus_per_node,
            e->training.seq_len, e->training.global_batch);
    fprintf(f, "%s %s\n", c, line);
    fprintf(f, "%s predicted: %.2f s/step, %.0f tokens/s, MFU %.1f%%, %.1f of %.1f GiB per GPU "
               "(pipeline stage %d)\n",
            c, e->time.step_s, e->tokens_per_s, 100 * e->mfu, e->memory.total_bytes / UNITS_GIB_BYTES,
            e->memory.capacity_bytes / UNITS_GIB_BYTES, e->memory.stage);
    if (!e->feasible) fprintf(f, "%s WARNING: does not fit: %s\n", c, e->infeasible_reason);
}

/* Megatron wants layers divisible by pp; otherwise the first and last stage take the slack
 * (--decoder-first/last-pipeline-num-layers) and the middle stages an equal share, no stage
 * holding more than the cost model's heaviest stage where that is possible. */
static int uneven_split(int layers, int pp, int *first, int *last)
{
    if (pp < 2 || layers % pp == 0) return 0;
    if (pp == 2) {
        *first = layers / 2;
        *last = layers - *first;
        return 1;
    }
    int mid = layers / pp + 1;
    int rest = layers - (pp - 2) * mid;
    if (rest < 2) {
        mid = layers / pp;
        rest = layers - (pp - 2) * mid;
    }
    *first = rest / 2;
    *last = rest - *first;
    return *first >= 1;
}

/* Closes the memstream (which is when open_memstream publishes its buffer) and hands it out. */
static cm_status finish(FILE *f, char **bufp, char **out, char *err, size_t errlen)
{
    int rc = fclose(f);
    char *buf = *bufp;
    if (rc != 0 || !buf) {
        free(buf);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the config");
    }
    *out = buf;
    return CM_OK;
}

/* ---- trainer YAML ---- */

typedef struct {
    yaml_emitter_t em;
    int failed;
} ywriter;

static int yaml_write(void *data, unsigned char *buffer, size_t size)
{
    return fwrite(buffer, 1, size, (FILE *)data) == size;
}

static void y_emit(ywriter *w, yaml_event_t *ev)
{
    if (w->failed) {
        yaml_event_delete(ev);
        return;
    }
    if (!yaml_emitter_emit(&w->em, ev)) w->failed = 1; /* the emitter frees ev either way */
}

static void y_scalar_styled(ywriter *w, const char *v, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v, (int)strlen(v), 1, 1,
                                      style)) {
        w->failed = 1;
        return;
    }
    y_emit(w, &ev);
}

static void y_key(ywriter *w, const char *k) { y_scalar_styled(w, k, YAML_PLAIN_SCALAR_STYLE); }

static void y_str(ywriter *w, const char *k, const char *v)
{
    y_key(w, k);
    y_scalar_styled(w, v, YAML_PLAIN_SCALAR_STYLE);
}

static void y_quoted(ywriter *w, const char *k, const char *v)
{
    y_key(w, k);
    y_scalar_styled(w, v, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void y_int(ywriter *w, const char *k, long v)
{
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    y_str(w, k, b);
}

static void y_bool(ywriter *w, const char *k, bool v) { y_str(w, k, v ? "true" : "false"); }
static void y_null(ywriter *w, const char *k) { y_str(w, k, "null"); }

static void y_map_start(ywriter *w, const char *k)
{
    if (k) y_key(w, k);
    yaml_event_t ev;
    if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE)) {
        w->failed = 1;
        return;
    }
    y_emit(w, &ev);
}

static void y_map_end(ywriter *w)
{
    yaml_event_t ev;
    yaml_mapping_end_event_initialize(&ev);
    y_emit(w, &ev);
}

/* The key a layout field is written under (layout_codec.h: the paths plan check reads): in the
 * megatron_config / trainer sections, and where strategy fsdp2 keeps it. */
#define YKEY(id) layout_yaml_key(id, FRAMEWORK_MEGATRON)
#define FSDP2_KEY(id) layout_yaml_key(id, FRAMEWORK_FSDP2)

/* The low-precision section (only for a low-precision plan, so bf16 YAML is unchanged): the
 * format and recipe; under fsdp2, torchao's float8 converter settings as torchtitan names them
 * (docs/float8.md: recipe_name, enable_fsdp_float8_all_gather, precompute_float8_dynamic_scale_
 * for_fsdp, filter_fqns with the output layer kept in bf16). */
static void low_precision_yaml(ywriter *w, const layout *l)
{
    y_map_start(w, "low_precision");
    y_str(w, "precision", precision_name(l->precision));
    if (l->precision == PRECISION_FP8)
        y_str(w, "fp8_recipe", precision_fp8_recipe_name(precision_fp8_recipe(l)));
    if (l->framework == FRAMEWORK_FSDP2) {
        bool tensorwise = l->precision == PRECISION_FP8 &&
                          precision_fp8_recipe(l) == FP8_RECIPE_TENSORWISE;
        y_str(w, "converter", l->precision == PRECISION_FP8 ? "torchao.float8" : "torchao.mx");
        y_bool(w, "enable_fsdp_float8_all_gather", tensorwise);
        y_bool(w, "precompute_float8_dynamic_scale_for_fsdp", tensorwise);
        y_str(w, "filter_fqns", "output");
    }
    y_map_end(w);
}

static void yaml_body(ywriter *w, const estimate *e, const model_spec *m, const system_spec *sys,
                      const emit_context *ctx)
{
    const layout *l = &e->layout;
    const training_spec *t = &e->training;
    bool megatron = l->framework == FRAMEWORK_MEGATRON;

    y_map_start(w, NULL);
    y_map_start(w, "trainer");
    y_str(w, YKEY(LAYOUT_F_FRAMEWORK), megatron ? "megatron" : "fsdp2");

    y_map_start(w, "placement");
    y_int(w, "num_nodes", nodes_of(e->gpus, sys));
    y_int(w, "gpus_per_node", gpus_per_node_of(e->gpus, sys));
    y_int(w, "num_gpus", e->gpus);
    y_map_end(w);

    y_map_start(w, "policy");
    y_map_start(w, "model");
    y_quoted(w, "path", model_path(m, ctx));
    y_map_end(w);
    y_map_start(w, "optimizer_config");
    y_str(w, "max_grad_norm", "1.0");
    y_map_end(w);
    /* FSDP2 settings; under megatron they stay at their defaults (cpu_offload is honoured by
     * plan check either way, and is a rule violation there). */
    y_map_start(w, "fsdp_config");
    y_bool(w, YKEY(LAYOUT_F_OFFLOAD), l->offload);
    y_bool(w, YKEY(LAYOUT_F_RESHARD_AFTER_FORWARD), l->reshard_after_forward);
    y_int(w, FSDP2_KEY(LAYOUT_F_SHARD_SIZE), !megatron && l->shard_size > 0 ? l->shard_size : -1);
    y_map_end(w);
    /* Ulysses degree of the FSDP2 path; Megatron splits the sequence with context parallel. */
    y_int(w, FSDP2_KEY(LAYOUT_F_CP), megatron ? 1 : l->cp);
    if (megatron) {
        y_map_start(w, "megatron_config");
        y_int(w, YKEY(LAYOUT_F_TP), l->tp);
        y_int(w, YKEY(LAYOUT_F_PP), l->pp);
        if (l->vpp > 1) y_int(w, YKEY(LAYOUT_F_VPP), l->vpp);
        else y_null(w, YKEY(LAYOUT_F_VPP));
        y_int(w, YKEY(LAYOUT_F_CP), l->cp);
        y_int(w, YKEY(LAYOUT_F_EP), l->ep);
        if (l->etp > 0) y_int(w, YKEY(LAYOUT_F_ETP), l->etp);
        else y_null(w, YKEY(LAYOUT_F_ETP)); /* null: same as TP (Megatron default) */
        y_bool(w, YKEY(LAYOUT_F_SP), l->sp);
        y_bool(w, YKEY(LAYOUT_F_TP_COMM_OVERLAP), l->tp_comm_overlap);
        const char *granularity = YKEY(LAYOUT_F_RECOMPUTE);
        const char *num_layers = YKEY(LAYOUT_F_RECOMPUTE_LAYERS);
        if (l->recompute == RECOMPUTE_NONE) {
            y_null(w, granularity);
            y_null(w, "recompute_method");
            y_null(w, num_layers);
        } else if (l->recompute == RECOMPUTE_SELECTIVE) {
            y_str(w, granularity, "selective");
            y_null(w, "recompute_method");
            y_null(w, num_layers);
        } else {
            y_str(w, granularity, "full");
            /* uniform with 1: every layer checkpointed; block N: the first N of each stage */
            y_str(w, "recompute_method", l->recompute_layers > 0 ? "block" : "uniform");
            y_int(w, num_layers, l->recompute_layers > 0 ? l->recompute_layers : 1);
        }
        bool fsdp = l->sharding == SHARDING_FSDP;
        y_bool(w, YKEY(LAYOUT_F_SHARDING), l->sharding != SHARDING_DDP);
        y_bool(w, "use_megatron_fsdp", fsdp);
        if (fsdp) {
            y_str(w, "data_parallel_sharding_strategy", "optim_grads_params");
            y_str(w, "ckpt_format", "fsdp_dtensor");
        }
        if (l->shard_size > 0 && l->sharding != SHARDING_DDP)
            y_int(w, YKEY(LAYOUT_F_SHARD_SIZE), l->dp * l->cp / l->shard_size);
        y_map_start(w, "ddp_config");
        y_bool(w, YKEY(LAYOUT_F_OVERLAP_GRAD_REDUCE), l->overlap_grad_reduce);
        y_bool(w, YKEY(LAYOUT_F_OVERLAP_PARAM_GATHER), l->overlap_param_gather);
        y_bool(w, "grad_reduce_in_fp32", !t->grad_reduce_bf16);
        if (fsdp) y_bool(w, "average_in_collective", false);
        y_map_end(w);
        y_map_end(w);
    }
    y_map_end(w); /* policy */

    y_bool(w, FSDP2_KEY(LAYOUT_F_RECOMPUTE), l->recompute != RECOMPUTE_NONE);
    y_int(w, YKEY(LAYOUT_F_MBS), l->mbs);
    y_int(w, YKEY(LAYOUT_F_GBS), t->global_batch);
    y_int(w, YKEY(LAYOUT_F_SEQ), t->seq_len);
    y_bool(w, "flash_attn", t->attention == ATTENTION_FLASH);
    y_bool(w, "bf16", true);
    if (precision_is_low(l)) low_precision_yaml(w, l);
    y_map_end(w); /* trainer */
    y_map_end(w);
}

cm_status emit_yaml(const estimate *e, const model_spec *m, const system_spec *sys,
                    const emit_context *ctx, char **out, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the YAML");
    header(f, "#", e, m, sys);
    fprintf(f, "# check or edit it, then: plan check FILE.yaml --system %s\n", sys->name);

    ywriter w = {.failed = 0};
    if (!yaml_emitter_initialize(&w.em)) {
        fclose(f);
        free(buf);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory in the YAML emitter");
    }
    yaml_emitter_set_output(&w.em, yaml_write, f);
    yaml_emitter_set_indent(&w.em, 2);
    yaml_emitter_set_width(&w.em, 100);
    yaml_emitter_set_unicode(&w.em, 1);
    yaml_event_t ev;
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    y_emit(&w, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    y_emit(&w, &ev);
    yaml_body(&w, e, m, sys, ctx);
    yaml_document_end_event_initialize(&ev, 1);
    y_emit(&w, &ev);
    yaml_stream_end_event_initialize(&ev);
    y_emit(&w, &ev);
    if (!w.failed && !yaml_emitter_flush(&w.em)) w.failed = 1;
    char problem[160];
    snprintf(problem, sizeof problem, "%s", w.em.problem ? w.em.problem : "unknown error");
    yaml_emitter_delete(&w.em);
    if (w.failed) {
        fclose(f);
        free(buf);
        return cm_fail(err, errlen, CM_EINVAL, "the YAML emitter failed (%s): report this bug",
                       problem);
    }
    return finish(f, &buf, out, err, errlen);
}

/* ---- Megatron-LM flags ---- */

#define MAX_FLAGS 96

typedef struct {
    const char *flag;
    char value[96]; /* "" for a switch */
} flag_t;

typedef struct {
    flag_t f[MAX_FLAGS];
    int n;
} flag_list;

static void fl_add(flag_list *fl, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fl_add(flag_list *fl, const char *flag, const char *fmt, ...)
{
    if (fl->n >= MAX_FLAGS) return;
    flag_t *x = &fl->f[fl->n++];
    x->flag = flag;
    x->value[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->value, sizeof x->value, fmt, ap);
        va_end(ap);
    }
}

static bool megatron_fsdp(const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_FSDP;
}

/* Megatron-LM's low-precision flags for l's precision (precision.h): FP8 "hybrid" (e4m3
 * forward, e5m2 gradients) with the recipe; MXFP8 in e4m3; NVFP4 through --fp4-format. No
 * --fp8-param-gather and no --first-last-layers-bf16: the prediction keeps bf16 parameters
 * beside TE's FP8 weight copies and runs every decoder layer in low precision. */
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
    default: break;
    }
}

/* Megatron Bridge's mixed-precision recipe for l (megatron/bridge/training/mixed_precision.py),
 * NULL for bf16 (the recipe configs default to bf16_mixed). */
static const char *bridge_precision_recipe(const layout *l)
{
    switch (l->precision) {
    case PRECISION_FP8:
        switch (precision_fp8_recipe(l)) {
        case FP8_RECIPE_TENSORWISE: return "bf16_with_fp8_current_scaling_mixed";
        case FP8_RECIPE_BLOCKWISE: return "bf16_with_fp8_subchannel_scaling_mixed";
        default: return "bf16_with_fp8_delayed_scaling_mixed";
        }
    case PRECISION_MXFP8: return "bf16_with_mxfp8_mixed";
    case PRECISION_NVFP4: return "bf16_with_nvfp4_mixed";
    default: return NULL;
    }
}

static void megatron_flags(flag_list *fl, const estimate *e, const model_spec *m)
{
    const layout *l = &e->layout;
    const training_spec *t = &e->training;

    /* model shape */
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
    fl_add(fl, "--position-embedding-type", m->learned_positions ? "learned_absolute" : "rope");
    int maxpos = m->max_positions > t->seq_len ? m->max_positions : t->seq_len;
    fl_add(fl, "--max-position-embeddings", "%d", maxpos);
    if (!m->tied_embeddings) fl_add(fl, "--untie-embeddings-and-output-weights", NULL);
    if (!m->out_bias) {
        fl_add(fl, "--disable-bias-linear", NULL);
        if (m->qkv_bias) fl_add(fl, "--add-qkv-bias", NULL);
    }
    if (m->qk_norm) fl_add(fl, "--qk-layernorm", NULL);
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
        if (m->dense_first > 0)
            fl_add(fl, "--moe-layer-freq", "'([0]*%d+[1]*%d)'", m->dense_first,
                   m->layers - m->dense_first);
        if (m->router_bias) {
            fl_add(fl, "--moe-router-score-function", "sigmoid");
            fl_add(fl, "--moe-router-enable-expert-bias", NULL);
        }
        fl_add(fl, "--moe-grouped-gemm", NULL);
        /* Megatron-Core: alltoall and allgather dispatchers by name; DeepEP and HybridEP are
         * the backends of the flex dispatcher */
        if (l->moe_dispatcher == MOE_DISPATCH_DEEPEP ||
            l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP) {
            fl_add(fl, "--moe-token-dispatcher-type", "flex");
            fl_add(fl, "--moe-flex-dispatcher-backend", "%s",
                   layout_moe_dispatcher_name(l->moe_dispatcher));
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

    /* parallelism */
    fl_add(fl, "--tensor-model-parallel-size", "%d", l->tp);
    fl_add(fl, "--pipeline-model-parallel-size", "%d", l->pp);
    int first, last;
    if (uneven_split(m->layers, l->pp, &first, &last)) {
        fl_add(fl, "--decoder-first-pipeline-num-layers", "%d", first);
        fl_add(fl, "--decoder-last-pipeline-num-layers", "%d", last);
    }
    if (l->vpp > 1)
        fl_add(fl, "--num-layers-per-virtual-pipeline-stage", "%d", m->layers / (l->pp * l->vpp));
    fl_add(fl, "--context-parallel-size", "%d", l->cp);
    if (model_is_moe(m)) {
        fl_add(fl, "--expert-model-parallel-size", "%d", l->ep);
        fl_add(fl, "--expert-tensor-parallel-size", "%d", layout_etp(l));
    }
    if (l->sp) fl_add(fl, "--sequence-parallel", NULL);
    /* TE userbuffers with TE's default per-GEMM methods (no --tp-comm-overlap-cfg) */
    if (l->tp_comm_overlap) fl_add(fl, "--tp-comm-overlap", NULL);

    /* data-parallel sharding */
    if (megatron_fsdp(l)) {
        /* required (DESIGN.md, Framework rules) */
        fl_add(fl, "--use-megatron-fsdp", NULL);
        fl_add(fl, "--data-parallel-sharding-strategy", "optim_grads_params");
        fl_add(fl, "--no-gradient-accumulation-fusion", NULL);
        fl_add(fl, "--use-distributed-optimizer", NULL);
        fl_add(fl, "--ckpt-format", "fsdp_dtensor");
        /* recommended */
        fl_add(fl, "--calculate-per-token-loss", NULL);
        fl_add(fl, "--init-model-with-meta-device", NULL);
        fl_add(fl, "--grad-reduce-in-bf16", NULL);
        fl_add(fl, "--fsdp-double-buffer", NULL);
        fl_add(fl, "--use-nccl-ub", NULL);
    } else {
        if (l->sharding == SHARDING_DISTOPT) fl_add(fl, "--use-distributed-optimizer", NULL);
        if (t->grad_reduce_bf16) fl_add(fl, "--grad-reduce-in-bf16", NULL);
    }
    if (l->shard_size > 0 && l->sharding != SHARDING_DDP)
        fl_add(fl, "--num-distributed-optimizer-instances", "%d", l->dp * l->cp / l->shard_size);
    if (l->overlap_grad_reduce && l->dp * l->cp > 1) fl_add(fl, "--overlap-grad-reduce", NULL);
    if (l->overlap_param_gather && l->sharding != SHARDING_DDP && l->dp * l->cp > 1)
        fl_add(fl, "--overlap-param-gather", NULL);

    /* recompute */
    if (l->recompute == RECOMPUTE_SELECTIVE) {
        fl_add(fl, "--recompute-granularity", "selective");
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

    /* training shape and precision */
    fl_add(fl, "--micro-batch-size", "%d", l->mbs);
    fl_add(fl, "--global-batch-size", "%d", t->global_batch);
    fl_add(fl, "--seq-length", "%d", t->seq_len);
    fl_add(fl, "--attention-backend", t->attention == ATTENTION_FLASH ? "flash" : "unfused");
    fl_add(fl, "--bf16", NULL);
    precision_flags(fl, l);
    fl_add(fl, "--clip-grad", "1.0");
}

static cm_status need_megatron(const estimate *e, const char *what, char *err, size_t errlen)
{
    if (e->layout.framework == FRAMEWORK_MEGATRON) return CM_OK;
    return cm_fail(err, errlen, CM_EINVAL,
                   "this plan uses the fsdp2 trainer path; %s are for Megatron plans: use "
                   "--emit yaml, or --framework megatron for a Megatron plan",
                   what);
}

cm_status emit_megatron_args(const estimate *e, const model_spec *m, const system_spec *sys,
                             const emit_context *ctx, char **out, char *err, size_t errlen)
{
    (void)ctx;
    cm_status st = need_megatron(e, "Megatron-LM flags", err, errlen);
    if (st != CM_OK) return st;
    flag_list fl = {.n = 0};
    megatron_flags(&fl, e, m);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the flags");
    header(f, "#", e, m, sys);
    if (megatron_fsdp(&e->layout)) {
        fprintf(f, "# Megatron-FSDP: the first five FSDP flags are required, the next five "
                   "recommended (--fsdp-double-buffer\n"
                   "# and --use-nccl-ub trade peak memory for speed).\n");
        fprintf(f, "# Leave CUDA_DEVICE_MAX_CONNECTIONS unset (unset CUDA_DEVICE_MAX_CONNECTIONS): "
                   "setting it can slow TP/CP.\n");
        if (!e->training.grad_reduce_bf16)
            fprintf(f, "# The prediction assumed fp32 gradient reduction; --grad-reduce-in-bf16 "
                       "halves that traffic (plan --grad-reduce-bf16 predicts with it).\n");
    }
    for (int i = 0; i < fl.n; i++)
        fprintf(f, "%s%s%s%s\n", fl.f[i].flag, fl.f[i].value[0] ? " " : "", fl.f[i].value,
                i + 1 < fl.n ? " \\" : "");
    return finish(f, &buf, out, err, errlen);
}

/* ---- Megatron Bridge ---- */

cm_status emit_bridge(const estimate *e, const model_spec *m, const system_spec *sys,
                      const emit_context *ctx, char **out, char *err, size_t errlen)
{
    (void)ctx;
    cm_status st = need_megatron(e, "Megatron Bridge overrides", err, errlen);
    if (st != CM_OK) return st;
    const layout *l = &e->layout;
    const training_spec *t = &e->training;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the overrides");
    header(f, "#", e, m, sys);
    fprintf(f, "# Megatron Bridge overrides for the %s recipe config `cfg`%s\n",
            m->hf_repo[0] ? m->hf_repo : m->display,
            l->pp > 1 ? " (pipeline_dtype needs `import torch`)" : "");
    fprintf(f, "cfg.model.tensor_model_parallel_size = %d\n", l->tp);
    fprintf(f, "cfg.model.pipeline_model_parallel_size = %d\n", l->pp);
    if (l->pp > 1) fprintf(f, "cfg.model.pipeline_dtype = torch.bfloat16\n");
    if (l->vpp > 1) fprintf(f, "cfg.model.virtual_pipeline_model_parallel_size = %d\n", l->vpp);
    else fprintf(f, "cfg.model.virtual_pipeline_model_parallel_size = None\n");
    fprintf(f, "cfg.model.context_parallel_size = %d\n", l->cp);
    if (model_is_moe(m)) {
        fprintf(f, "cfg.model.expert_model_parallel_size = %d\n", l->ep);
        fprintf(f, "cfg.model.expert_tensor_parallel_size = %d\n", layout_etp(l));
        bool flex = l->moe_dispatcher == MOE_DISPATCH_DEEPEP ||
                    l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP;
        if (l->moe_dispatcher != MOE_DISPATCH_ALLTOALL)
            fprintf(f, "cfg.model.moe_token_dispatcher_type = \"%s\"\n",
                    flex ? "flex" : layout_moe_dispatcher_name(l->moe_dispatcher));
        if (flex)
            fprintf(f, "cfg.model.moe_flex_dispatcher_backend = \"%s\"\n",
                    layout_moe_dispatcher_name(l->moe_dispatcher));
        if (t->moe_capacity_factor > 0)
            fprintf(f, "cfg.model.moe_expert_capacity_factor = %g\n", t->moe_capacity_factor);
        if (t->moe_ep_overlap) {
            fprintf(f, "cfg.model.overlap_moe_expert_parallel_comm = True\n");
            fprintf(f, "cfg.model.delay_wgrad_compute = True\n");
        }
        if (t->moe_shared_overlap && m->shared_experts > 0)
            fprintf(f, "cfg.model.moe_shared_expert_overlap = True\n");
    }
    fprintf(f, "cfg.model.sequence_parallel = %s\n", l->sp ? "True" : "False");
    /* Megatron Bridge's CommOverlapConfig.setup() (training/comm_overlap.py) rewrites these from
     * cfg.comm_overlap where a recipe sets one (and turns the DP overlaps on with the
     * distributed optimizer at dp > 1): say so, so the overrides below are carried there */
    fprintf(f, "# where the recipe sets cfg.comm_overlap (CommOverlapConfig), its setup() overrides "
               "tp_comm_overlap, overlap_grad_reduce and overlap_param_gather: give it the values "
               "below\n");
    if (l->tp_comm_overlap) fprintf(f, "cfg.model.tp_comm_overlap = True\n");
    if (l->recompute == RECOMPUTE_NONE) {
        fprintf(f, "cfg.model.recompute_granularity = None\n");
    } else if (l->recompute == RECOMPUTE_SELECTIVE) {
        fprintf(f, "cfg.model.recompute_granularity = \"selective\"\n");
    } else {
        fprintf(f, "cfg.model.recompute_granularity = \"full\"\n");
        fprintf(f, "cfg.model.recompute_method = \"%s\"\n",
                l->recompute_layers > 0 ? "block" : "uniform");
        fprintf(f, "cfg.model.recompute_num_layers = %d\n",
                l->recompute_layers > 0 ? l->recompute_layers : 1);
    }
    fprintf(f, "cfg.model.seq_length = %d\n", t->seq_len);
    fprintf(f, "cfg.train.micro_batch_size = %d\n", l->mbs);
    fprintf(f, "cfg.train.global_batch_size = %d\n", t->global_batch);
    fprintf(f, "cfg.optimizer.bf16 = True\n");
    fprintf(f, "cfg.optimizer.clip_grad = 1.0\n");
    const char *mp = bridge_precision_recipe(l);
    if (mp) {
        /* The recipe, then what the prediction assumed where the recipe differs: bf16
         * parameters beside TE's low-precision copies, every decoder layer low precision. */
        fprintf(f, "from megatron.bridge.training.mixed_precision import "
                   "get_mixed_precision_config\n");
        fprintf(f, "cfg.mixed_precision = get_mixed_precision_config(\"%s\")\n", mp);
        fprintf(f, "cfg.mixed_precision.fp8_param_gather = False\n");
        fprintf(f, "cfg.mixed_precision.first_last_layers_bf16 = False\n");
    }
    bool distopt = l->sharding != SHARDING_DDP;
    fprintf(f, "cfg.optimizer.use_distributed_optimizer = %s\n", distopt ? "True" : "False");
    fprintf(f, "cfg.ddp.use_distributed_optimizer = %s\n", distopt ? "True" : "False");
    if (l->shard_size > 0 && distopt)
        fprintf(f, "cfg.ddp.num_distributed_optimizer_instances = %d\n",
                l->dp * l->cp / l->shard_size);
    fprintf(f, "cfg.ddp.overlap_grad_reduce = %s\n", l->overlap_grad_reduce ? "True" : "False");
    fprintf(f, "cfg.ddp.overlap_param_gather = %s\n",
            l->overlap_param_gather && distopt ? "True" : "False");
    if (megatron_fsdp(l)) {
        fprintf(f, "# Megatron-FSDP, required:\n");
        fprintf(f, "cfg.dist.use_megatron_fsdp = True\n");
        fprintf(f, "cfg.ddp.use_megatron_fsdp = True\n");
        fprintf(f, "cfg.ddp.data_parallel_sharding_strategy = \"optim_grads_params\"\n");
        fprintf(f, "cfg.ddp.average_in_collective = False\n");
        fprintf(f, "cfg.model.gradient_accumulation_fusion = False\n");
        fprintf(f, "cfg.checkpoint.ckpt_format = \"fsdp_dtensor\"\n");
        fprintf(f, "# Megatron-FSDP, recommended (double buffer and NCCL user buffers cost peak "
                   "memory); leave CUDA_DEVICE_MAX_CONNECTIONS unset:\n");
        fprintf(f, "cfg.model.calculate_per_token_loss = True\n");
        fprintf(f, "cfg.model.init_model_with_meta_device = True\n");
        fprintf(f, "cfg.ddp.grad_reduce_in_fp32 = False\n");
        fprintf(f, "cfg.ddp.fsdp_double_buffer = True\n");
        fprintf(f, "cfg.ddp.nccl_ub = True\n");
    } else {
        fprintf(f, "cfg.ddp.grad_reduce_in_fp32 = %s\n", t->grad_reduce_bf16 ? "False" : "True");
    }
    return finish(f, &buf, out, err, errlen);
}

/* ---- JSON ---- */

json_t *emit_json(const estimate *e, const model_spec *m, const system_spec *sys,
                  const emit_context *ctx)
{
    json_t *o = output_estimate_json(e, m, sys);
    json_t *em = json_object();
    json_object_set_new(em, "format_version", json_integer(1));
    json_object_set_new(em, "model_path", json_string(model_path(m, ctx)));
    char *text = NULL;
    char err[CM_ERRLEN];
    json_object_set_new(em, "trainer_yaml",
                        emit_yaml(e, m, sys, ctx, &text, err, sizeof err) == CM_OK
                            ? json_string(text)
                            : json_null());
    free(text);
    text = NULL;
    if (e->layout.framework == FRAMEWORK_MEGATRON) {
        flag_list fl = {.n = 0};
        megatron_flags(&fl, e, m);
        json_t *args = json_array();
        for (int i = 0; i < fl.n; i++) {
            json_array_append_new(args, json_string(fl.f[i].flag));
            if (fl.f[i].value[0]) {
                /* argv tokens carry no shell quoting */
                const char *v = fl.f[i].value;
                size_t n = strlen(v);
                if (n >= 2 && v[0] == '\'' && v[n - 1] == '\'')
                    json_array_append_new(args, json_stringn(v + 1, n - 2));
                else
                    json_array_append_new(args, json_string(v));
            }
        }
        json_object_set_new(em, "megatron_args", args);
        json_t *env = json_object();
        json_object_set_new(env, "unset", megatron_fsdp(&e->layout)
                                              ? json_pack("[s]", "CUDA_DEVICE_MAX_CONNECTIONS")
                                              : json_array());
        json_object_set_new(em, "environment", env);
        json_object_set_new(em, "bridge",
                            emit_bridge(e, m, sys, ctx, &text, err, sizeof err) == CM_OK
                                ? json_string(text)
                                : json_null());
        free(text);
    } else {
        json_object_set_new(em, "megatron_args", json_null());
        json_object_set_new(em, "environment", json_null());
        json_object_set_new(em, "bridge", json_null());
    }
    json_object_set_new(o, "emit", em);
    return o;
}

cm_status emit_render(emit_format f, const estimate *e, const model_spec *m,
                      const system_spec *sys, const emit_context *ctx, char **out, char *err,
                      size_t errlen)
{
    switch (f) {
    case EMIT_YAML: return emit_yaml(e, m, sys, ctx, out, err, errlen);
    case EMIT_MEGATRON_ARGS: return emit_megatron_args(e, m, sys, ctx, out, err, errlen);
    case EMIT_BRIDGE: return emit_bridge(e, m, sys, ctx, out, err, errlen);
    case EMIT_JSON: {
        json_t *j = emit_json(e, m, sys, ctx);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        json_decref(j);
        if (!s) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the JSON");
        size_t n = strlen(s);
        char *r = malloc(n + 2);
        if (!r) {
            free(s);
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the JSON");
        }
        memcpy(r, s, n);
        r[n] = '\n';
        r[n + 1] = '\0';
        free(s);
        *out = r;
        return CM_OK;
    }
    default:
        return cm_fail(err, errlen, CM_EINVAL,
                       "--emit must be yaml, megatron-args, bridge or json");
    }
}
