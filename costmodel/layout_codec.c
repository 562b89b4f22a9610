/*
 * layout_codec.c — the field table of a layout and the codecs it drives (see layout_codec.h).
 *
 * Adding a knob to the layout is one row here: JSON, CSV, the short name, equality and the
 * trainer-YAML path follow from it.
 */
#include "layout_codec.h"
#include "recompute_modules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_graphs.h"
#include "precision.h"

#define MCFG "trainer.policy.megatron_config."
#define FSDPCFG "trainer.policy.fsdp_config."
/* SkyRL (skyrl/train/config/config.py, a956457) rejects unknown keys: TransformerConfig fields go
 * under megatron_config.transformer_config_kwargs, OptimizerConfig's under
 * optimizer_config_kwargs, the sequence length is trainer.algorithm.max_seq_len; plan check also
 * reads the old places (megatron_config.X, trainer.max_seq_len) */

#define L(id, key, kind, member, res, tok, always, csv, yaml, yaml_fsdp2)                          \
    {id, key, kind, false, offsetof(layout, member), res, tok, always, csv, yaml, yaml_fsdp2}
#define T(id, key, member, csv, yaml)                                                              \
    {id, key, LAYOUT_KIND_INT, true, offsetof(training_spec, member), NULL, NULL, false, csv,     \
     yaml, NULL}

const layout_field layout_fields[LAYOUT_NFIELDS] = {
    L(LAYOUT_F_FRAMEWORK, "framework", LAYOUT_KIND_FRAMEWORK, framework, NULL, NULL, false, 1,
      "trainer.strategy", NULL),
    L(LAYOUT_F_TP, "tp", LAYOUT_KIND_INT, tp, NULL, "tp", true, 3,
      MCFG "tensor_model_parallel_size", NULL),
    L(LAYOUT_F_PP, "pp", LAYOUT_KIND_INT, pp, NULL, "pp", true, 4,
      MCFG "pipeline_model_parallel_size", NULL),
    /* dp follows from the GPU count (trainer.placement) and the other sizes */
    L(LAYOUT_F_DP, "dp", LAYOUT_KIND_INT, dp, NULL, "dp", true, 5, NULL, NULL),
    L(LAYOUT_F_CP, "cp", LAYOUT_KIND_INT, cp, NULL, "cp", true, 6,
      MCFG "context_parallel_size", "trainer.policy.sequence_parallel_size"),
    L(LAYOUT_F_EP, "ep", LAYOUT_KIND_INT, ep, NULL, "ep", false, 7,
      MCFG "expert_model_parallel_size", NULL),
    L(LAYOUT_F_ETP, "etp", LAYOUT_KIND_INT, etp, layout_etp, "etp", false, 0,
      MCFG "expert_tensor_parallel_size", NULL),
    L(LAYOUT_F_VPP, "vpp", LAYOUT_KIND_INT, vpp, NULL, "vpp", false, 8,
      MCFG "transformer_config_kwargs.virtual_pipeline_model_parallel_size", NULL),
    L(LAYOUT_F_MBS, "mbs", LAYOUT_KIND_INT, mbs, NULL, "mbs", true, 9,
      "trainer.micro_train_batch_size_per_gpu", NULL),
    T(LAYOUT_F_GBS, "gbs", global_batch, 10, "trainer.train_batch_size"),
    T(LAYOUT_F_SEQ, "seq", seq_len, 11, "trainer.algorithm.max_seq_len"),
    L(LAYOUT_F_SP, "sp", LAYOUT_KIND_BOOL, sp, NULL, NULL, false, 0,
      MCFG "transformer_config_kwargs.sequence_parallel", NULL),
    /* Megatron: use_distributed_optimizer (ZeRO-1) and use_megatron_fsdp (ZeRO-3) together */
    L(LAYOUT_F_SHARDING, "sharding", LAYOUT_KIND_SHARDING, sharding, NULL, NULL, false, 2,
      MCFG "optimizer_config_kwargs.use_distributed_optimizer", NULL),
    L(LAYOUT_F_RECOMPUTE, "recompute", LAYOUT_KIND_RECOMPUTE, recompute, NULL, NULL, false, 12,
      MCFG "transformer_config_kwargs.recompute_granularity", "trainer.gradient_checkpointing"),
    L(LAYOUT_F_RECOMPUTE_LAYERS, "recompute_layers", LAYOUT_KIND_INT, recompute_layers, NULL,
      NULL, false, 0, MCFG "transformer_config_kwargs.recompute_num_layers", NULL),
    L(LAYOUT_F_RESHARD_AFTER_FORWARD, "reshard_after_forward", LAYOUT_KIND_BOOL,
      reshard_after_forward, NULL, NULL, false, 0, FSDPCFG "reshard_after_forward", NULL),
    /* Megatron names the number of shard groups, FSDP2 the size of one */
    L(LAYOUT_F_SHARD_SIZE, "shard_size", LAYOUT_KIND_INT, shard_size, layout_shard_group, NULL,
      false, 0, MCFG "num_distributed_optimizer_instances", FSDPCFG "fsdp_size"),
    L(LAYOUT_F_OFFLOAD, "offload", LAYOUT_KIND_BOOL, offload, NULL, NULL, false, 0,
      FSDPCFG "cpu_offload", NULL),
    /* emit.c writes the frameworks' FP8 settings (--fp8-format/--fp8-recipe, torchtitan's
     * float8 section): no single trainer-YAML key holds them */
    L(LAYOUT_F_PRECISION, "precision", LAYOUT_KIND_PRECISION, precision, NULL, NULL, false, 0,
      NULL, NULL),
    L(LAYOUT_F_FP8_RECIPE, "fp8_recipe", LAYOUT_KIND_FP8_RECIPE, fp8_recipe,
      precision_fp8_recipe_resolved, NULL, false, 0, NULL, NULL),
    /* issue 14: the implementation (impl.h); written resolved, no trainer-YAML key */
    L(LAYOUT_F_IMPL, "impl", LAYOUT_KIND_IMPL, impl, layout_impl_of, NULL, false, 0, NULL, NULL),
    L(LAYOUT_F_COMPILE, "compile", LAYOUT_KIND_BOOL, compile, NULL, NULL, false, 0, NULL, NULL),
    L(LAYOUT_F_OPTIMIZER_IMPL, "optimizer_impl", LAYOUT_KIND_OPTIMIZER_IMPL, optimizer_impl,
      layout_optimizer_impl_of, NULL, false, 0, NULL, NULL),
    /* Megatron overlap knobs (issue 15): trainer YAML holds them under ddp_config (emit.c) */
    L(LAYOUT_F_TP_COMM_OVERLAP, "tp_comm_overlap", LAYOUT_KIND_BOOL, tp_comm_overlap, NULL,
      NULL, false, 0, MCFG "transformer_config_kwargs.tp_comm_overlap", NULL),
    L(LAYOUT_F_OVERLAP_GRAD_REDUCE, "overlap_grad_reduce", LAYOUT_KIND_BOOL,
      overlap_grad_reduce, NULL, NULL, false, 0, MCFG "ddp_config.overlap_grad_reduce", NULL),
    L(LAYOUT_F_OVERLAP_PARAM_GATHER, "overlap_param_gather", LAYOUT_KIND_BOOL,
      overlap_param_gather, NULL, NULL, false, 0, MCFG "ddp_config.overlap_param_gather",
      NULL),
    /* no one trainer-YAML key: Megatron splits it into --moe-token-dispatcher-type and
     * --moe-flex-dispatcher-backend (emit.c); the trainer YAML into SkyRL's
     * moe_token_dispatcher_type and the flex backend (emit_yaml.c, check_yaml.c) */
    L(LAYOUT_F_MOE_DISPATCHER, "moe_dispatcher", LAYOUT_KIND_MOE_DISPATCHER, moe_dispatcher,
      NULL, NULL, false, 0, NULL, NULL),
    /* issue 19: torch.distributed.pipelining's schedule and torchtitan's async TP; no trainer-
     * YAML key (emit_torchtitan.c writes --parallelism.pipeline_parallel_schedule and
     * --compile.enable_async_tensor_parallel) */
    L(LAYOUT_F_PP_SCHEDULE, "pp_schedule", LAYOUT_KIND_PP_SCHEDULE, pp_schedule, NULL, NULL,
      false, 0, NULL, NULL),
    L(LAYOUT_F_ASYNC_TP, "async_tp", LAYOUT_KIND_BOOL, async_tp, NULL, NULL, false, 0, NULL,
      NULL),
    /* issue 16: Megatron flags (emit.c writes them; no trainer-YAML key) */
    L(LAYOUT_F_FP8_PARAM_GATHER, "fp8_param_gather", LAYOUT_KIND_BOOL, fp8_param_gather, NULL,
      NULL, false, 0, NULL, NULL),
    L(LAYOUT_F_BF16_LAYERS_START, "bf16_layers_start", LAYOUT_KIND_INT, bf16_layers_start, NULL,
      NULL, false, 0, NULL, NULL),
    L(LAYOUT_F_BF16_LAYERS_END, "bf16_layers_end", LAYOUT_KIND_INT, bf16_layers_end, NULL, NULL,
      false, 0, NULL, NULL),
    L(LAYOUT_F_MOE_FP8_DISPATCH, "moe_fp8_dispatch", LAYOUT_KIND_BOOL, moe_fp8_dispatch, NULL,
      NULL, false, 0, NULL, NULL),
    /* Megatron CPU offload (issue 21): emit.c writes --optimizer-cpu-offload with
     * --optimizer-offload-fraction, and --cpu-offloading for the activations */
    L(LAYOUT_F_OPTIMIZER_OFFLOAD_PCT, "optimizer_offload_pct", LAYOUT_KIND_INT,
      optimizer_offload_pct, NULL, NULL, false, 0, NULL, NULL),
    L(LAYOUT_F_ACTIVATION_OFFLOAD, "activation_offload", LAYOUT_KIND_BOOL, activation_offload,
      NULL, NULL, false, 0, NULL, NULL),
    /* Megatron --cpu-offloading-num-layers (TransformerConfig cpu_offloading_num_layers; the
     * trainer YAML's key is written by emit_yaml.c beside cpu_offloading) */
    L(LAYOUT_F_ACTIVATION_OFFLOAD_LAYERS, "activation_offload_layers", LAYOUT_KIND_INT,
      activation_offload_layers, NULL, NULL, false, 0,
      MCFG "transformer_config_kwargs.cpu_offloading_num_layers", NULL),
    /* issue 21: the uneven pipeline split; emit.c states it as --pipeline-model-parallel-layout,
     * emit_torchtitan.c as first/last_stage_less_layers, the trainer YAML as Megatron-Core's
     * TransformerConfig fields (written only when set) */
    L(LAYOUT_F_PP_FIRST_LAYERS, "pp_first_layers", LAYOUT_KIND_INT, pp_first_layers, NULL, NULL,
      false, 0, MCFG "transformer_config_kwargs.num_layers_in_first_pipeline_stage", NULL),
    L(LAYOUT_F_PP_LAST_LAYERS, "pp_last_layers", LAYOUT_KIND_INT, pp_last_layers, NULL, NULL,
      false, 0, MCFG "transformer_config_kwargs.num_layers_in_last_pipeline_stage", NULL),
    /* Megatron's --recompute-modules (recompute_modules.h); emit_yaml.c writes the list as
     * TransformerConfig's recompute_modules beside recompute_granularity */
    L(LAYOUT_F_RECOMPUTE_MODULES, "recompute_modules", LAYOUT_KIND_RECOMPUTE_MODULES,
      recompute_modules, NULL, NULL, false, 0, NULL, NULL),
    /* emit_megatron.c / emit_bridge.c write the precision-aware optimizer's flags */
    L(LAYOUT_F_OPTIMIZER_BF16_STATES, "optimizer_bf16_states", LAYOUT_KIND_BOOL,
      optimizer_bf16_states, NULL, NULL, false, 0, NULL, NULL),
    /* emit_megatron.c / emit_bridge.c write --cross-entropy-loss-fusion with its TE
     * implementation (two TransformerConfig fields: no single trainer-YAML key) */
    L(LAYOUT_F_TE_CROSS_ENTROPY, "te_cross_entropy", LAYOUT_KIND_BOOL, te_cross_entropy, NULL,
      NULL, false, 0, NULL, NULL),
    /* a pricing knob (layout.h): no emitter writes it */
    L(LAYOUT_F_CUDA_GRAPH_FULL_ITERATION, "cuda_graph_full_iteration", LAYOUT_KIND_BOOL,
      cuda_graph_full_iteration, NULL, NULL, false, 0, NULL, NULL),
    /* issue 21: Megatron's rank order; emit_megatron.c writes --use-tp-pp-dp-mapping,
     * emit_bridge.c cfg.dist.use_tp_pp_dp_mapping, emit_yaml.c megatron_config's bool of that
     * name only when set (SkyRL's schema lacks it: no key written for the default) */
    L(LAYOUT_F_RANK_ORDER, "rank_order", LAYOUT_KIND_RANK_ORDER, rank_order, NULL, NULL, false,
      0, NULL, NULL),
    /* torchtitan's CP rotate method (layout.h); emit_torchtitan.c says how to set it */
    L(LAYOUT_F_CP_ROTATE_ALLTOALL, "cp_rotate_alltoall", LAYOUT_KIND_BOOL, cp_rotate_alltoall,
      NULL, NULL, false, 0, NULL, NULL),
    /* compile.components without "loss" (layout.h); emit_torchtitan.c writes it */
    L(LAYOUT_F_LOSS_EAGER, "loss_eager", LAYOUT_KIND_BOOL, loss_eager, NULL, NULL, false, 0, NULL,
      NULL),
    /* a pricing knob (layout.h): no emitter writes it */
    L(LAYOUT_F_CUDA_GRAPH_ATTN, "cuda_graph_attn", LAYOUT_KIND_BOOL, cuda_graph_attn, NULL, NULL,
      false, 0, NULL, NULL),
    /* a pricing knob (layout.h): no emitter writes it */
    L(LAYOUT_F_MOE_DISPATCHER_SMS, "moe_dispatcher_sms", LAYOUT_KIND_INT, moe_dispatcher_sms, NULL,
      NULL, false, 0, NULL, NULL),
    /* emit_megatron.c / emit_bridge.c write it (--no-rope-fusion, apply_rope_fusion False) */
    L(LAYOUT_F_ROPE_UNFUSED, "rope_unfused", LAYOUT_KIND_BOOL, rope_unfused, NULL, NULL, false, 0,
      NULL, NULL),
    /* a pricing knob (layout.h): no emitter writes it */
    L(LAYOUT_F_RMS_NORM_UNFUSED, "rms_norm_unfused", LAYOUT_KIND_BOOL, rms_norm_unfused, NULL,
      NULL, false, 0, NULL, NULL),
    /* a pricing knob (layout.h): no emitter writes it */
    L(LAYOUT_F_MOE_EXPERT_PADDING, "moe_expert_padding", LAYOUT_KIND_BOOL, moe_expert_padding,
      NULL, NULL, false, 0, NULL, NULL),
    /* torchtitan's CUDA graphs (cuda_graphs.h): emit_torchtitan.c writes
     * --training.disable_cuda_graphs when off */
    L(LAYOUT_F_CUDA_GRAPHS, "cuda_graphs", LAYOUT_KIND_CUDA_GRAPHS, cuda_graphs,
      cuda_graphs_resolved, NULL, false, 0, NULL, NULL),
    /* emit_megatron.c writes it (--use-megatron-fsdp --data-parallel-sharding-strategy
     * optim_grads); no trainer-YAML key */
    L(LAYOUT_F_SHARD_GRADS, "shard_grads", LAYOUT_KIND_BOOL, shard_grads, NULL, NULL, false, 0,
      NULL, NULL),
};

#undef L
#undef T

const layout_field *layout_field_get(layout_field_id id)
{
    return id >= 0 && id < LAYOUT_NFIELDS ? &layout_fields[id] : NULL;
}

int layout_csv_fields(const layout_field *out[LAYOUT_CSV_MAX])
{
    int n = 0;
    for (int order = 1; order <= LAYOUT_NFIELDS; order++)
        for (int i = 0; i < LAYOUT_NFIELDS; i++)
            if (layout_fields[i].csv_order == order) out[n++] = &layout_fields[i];
    return n;
}

/* Where the field lives: in l, or in t for the training rows (NULL when t is NULL). */
static const void *field_ptr(const layout_field *f, const layout *l, const training_spec *t)
{
    if (f->training) return t ? (const char *)t + f->offset : NULL;
    return (const char *)l + f->offset;
}

static int stored_value(const layout_field *f, const void *p)
{
    if (!p) return 0;
    if (f->kind == LAYOUT_KIND_BOOL) return *(const bool *)p;
    switch (f->kind) {
    case LAYOUT_KIND_FRAMEWORK: return (int)*(const layout_framework *)p;
    case LAYOUT_KIND_SHARDING: return (int)*(const layout_sharding *)p;
    case LAYOUT_KIND_RECOMPUTE: return (int)*(const layout_recompute *)p;
    case LAYOUT_KIND_PRECISION: return (int)*(const layout_precision *)p;
    case LAYOUT_KIND_FP8_RECIPE: return (int)*(const layout_fp8_recipe *)p;
    case LAYOUT_KIND_IMPL: return (int)*(const layout_impl *)p;
    case LAYOUT_KIND_OPTIMIZER_IMPL: return (int)*(const layout_optimizer_impl *)p;
    case LAYOUT_KIND_MOE_DISPATCHER: return (int)*(const layout_moe_dispatcher *)p;
    case LAYOUT_KIND_PP_SCHEDULE: return (int)*(const layout_pp_schedule *)p;
    case LAYOUT_KIND_RANK_ORDER: return (int)*(const layout_rank_order *)p;
    case LAYOUT_KIND_CUDA_GRAPHS: return (int)*(const layout_cuda_graphs *)p;
    default: return *(const int *)p;
    }
}

static void store_value(const layout_field *f, void *p, int v)
{
    switch (f->kind) {
    case LAYOUT_KIND_BOOL: *(bool *)p = v != 0; break;
    case LAYOUT_KIND_FRAMEWORK: *(layout_framework *)p = (layout_framework)v; break;
    case LAYOUT_KIND_SHARDING: *(layout_sharding *)p = (layout_sharding)v; break;
    case LAYOUT_KIND_RECOMPUTE: *(layout_recompute *)p = (layout_recompute)v; break;
    case LAYOUT_KIND_PRECISION: *(layout_precision *)p = (layout_precision)v; break;
    case LAYOUT_KIND_FP8_RECIPE: *(layout_fp8_recipe *)p = (layout_fp8_recipe)v; break;
    case LAYOUT_KIND_IMPL: *(layout_impl *)p = (layout_impl)v; break;
    case LAYOUT_KIND_OPTIMIZER_IMPL: *(layout_optimizer_impl *)p = (layout_optimizer_impl)v; break;
    case LAYOUT_KIND_MOE_DISPATCHER:
        *(layout_moe_dispatcher *)p = (layout_moe_dispatcher)v;
        break;
    case LAYOUT_KIND_PP_SCHEDULE: *(layout_pp_schedule *)p = (layout_pp_schedule)v; break;
    case LAYOUT_KIND_RANK_ORDER: *(layout_rank_order *)p = (layout_rank_order)v; break;
    case LAYOUT_KIND_CUDA_GRAPHS: *(layout_cuda_graphs *)p = (layout_cuda_graphs)v; break;
    default: *(int *)p = v;
    }
}

int layout_field_value(const layout_field *f, const layout *l, const training_spec *t)
{
    if (f->resolved) return f->resolved(l);
    return stored_value(f, field_ptr(f, l, t));
}

static const char *enum_name(const layout_field *f, int v)
{
    switch (f->kind) {
    case LAYOUT_KIND_FRAMEWORK: return layout_framework_name((layout_framework)v);
    case LAYOUT_KIND_SHARDING: return layout_sharding_name((layout_sharding)v);
    case LAYOUT_KIND_RECOMPUTE: return layout_recompute_name((layout_recompute)v);
    case LAYOUT_KIND_PRECISION: return precision_name((layout_precision)v);
    case LAYOUT_KIND_FP8_RECIPE: return precision_fp8_recipe_name((layout_fp8_recipe)v);
    case LAYOUT_KIND_IMPL: return impl_name((layout_impl)v);
    case LAYOUT_KIND_OPTIMIZER_IMPL: return optimizer_impl_name((layout_optimizer_impl)v);
    case LAYOUT_KIND_MOE_DISPATCHER:
        return layout_moe_dispatcher_name((layout_moe_dispatcher)v);
    case LAYOUT_KIND_PP_SCHEDULE: return layout_pp_schedule_name((layout_pp_schedule)v);
    case LAYOUT_KIND_RANK_ORDER: return layout_rank_order_name((layout_rank_order)v);
    default: return NULL;
    }
}

void layout_field_text(const layout_field *f, const layout *l, const training_spec *t,
                       layout_text_style style, char *buf, size_t len)
{
    int v = layout_field_value(f, l, t);
    if (style == LAYOUT_TEXT_CSV && f->id == LAYOUT_F_SHARDING && l->sharding == SHARDING_FSDP &&
        l->shard_size > 0) {
        snprintf(buf, len, "hsdp");
        return;
    }
    if (f->kind == LAYOUT_KIND_BOOL || f->kind == LAYOUT_KIND_CUDA_GRAPHS)
        snprintf(buf, len, "%s", v ? "true" : "false");
    else if (f->kind == LAYOUT_KIND_RECOMPUTE_MODULES)
        recompute_modules_text((unsigned)v, ',', buf, len);
    else if (f->kind == LAYOUT_KIND_INT)
        snprintf(buf, len, "%d", v);
    else
        snprintf(buf, len, "%s", enum_name(f, v));
}

/* ---- JSON ---- */

/* The precision keys are left out for bf16 (and the recipe for all but fp8), so the JSON of a
 * bf16 plan is what it was before precision became a dimension; absent reads as bf16. */
static bool omitted_in_json(const layout_field *f, const layout *l)
{
    if (f->id == LAYOUT_F_PRECISION) return l->precision == PRECISION_BF16;
    if (f->id == LAYOUT_F_FP8_RECIPE) return l->precision != PRECISION_FP8;
    if (f->id == LAYOUT_F_PP_SCHEDULE) return l->pp_schedule == PP_SCHEDULE_DEFAULT;
    if (f->id == LAYOUT_F_ASYNC_TP) return !l->async_tp;
    if (f->id == LAYOUT_F_RANK_ORDER) return l->rank_order == RANK_ORDER_DP_PP;
    if (f->id == LAYOUT_F_CUDA_GRAPHS) return l->framework != FRAMEWORK_TORCHTITAN && !cuda_graphs_on(l);
    if ((f->id >= LAYOUT_F_FP8_PARAM_GATHER && f->id <= LAYOUT_F_MOE_FP8_DISPATCH) ||
        f->id == LAYOUT_F_PP_FIRST_LAYERS || f->id == LAYOUT_F_PP_LAST_LAYERS ||
        f->id == LAYOUT_F_RECOMPUTE_MODULES || f->id == LAYOUT_F_OPTIMIZER_BF16_STATES ||
        f->id == LAYOUT_F_TE_CROSS_ENTROPY || f->id == LAYOUT_F_CUDA_GRAPH_FULL_ITERATION ||
        f->id == LAYOUT_F_CP_ROTATE_ALLTOALL || f->id == LAYOUT_F_LOSS_EAGER ||
        f->id == LAYOUT_F_CUDA_GRAPH_ATTN || f->id == LAYOUT_F_MOE_DISPATCHER_SMS ||
        f->id == LAYOUT_F_ROPE_UNFUSED || f->id == LAYOUT_F_RMS_NORM_UNFUSED ||
        f->id == LAYOUT_F_MOE_EXPERT_PADDING || f->id == LAYOUT_F_SHARD_GRADS ||
        f->id == LAYOUT_F_ACTIVATION_OFFLOAD_LAYERS)
        return layout_field_value(f, l, NULL) == 0;
    return false;
}

json_t *layout_json_set(json_t *obj, const layout *l, const training_spec *t)
{
    if (!obj) return NULL;
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const layout_field *f = &layout_fields[i];
        if (f->training && !t) continue;
        if (omitted_in_json(f, l)) continue;
        int v = layout_field_value(f, l, t);
        char mods[160];
        if (f->kind == LAYOUT_KIND_RECOMPUTE_MODULES)
            recompute_modules_text((unsigned)v, ',', mods, sizeof mods);
        json_t *j = f->kind == LAYOUT_KIND_INT    ? json_integer(v)
                    : f->kind == LAYOUT_KIND_BOOL || f->kind == LAYOUT_KIND_CUDA_GRAPHS
                        ? json_boolean(v)
                    : f->kind == LAYOUT_KIND_RECOMPUTE_MODULES ? json_string(mods)
                                                  : json_string(enum_name(f, v));
        if (json_object_set_new(obj, f->key, j)) return NULL;
    }
    return obj;
}

json_t *layout_to_json(const layout *l)
{
    json_t *o = json_object();
    if (!layout_json_set(o, l, NULL)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int parse_enum(const layout_field *f, const char *s, int *out)
{
    int ok = 0;
    switch (f->kind) {
    case LAYOUT_KIND_FRAMEWORK: {
        layout_framework v;
        if ((ok = layout_parse_framework(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_SHARDING: {
        layout_sharding v;
        if ((ok = layout_parse_sharding(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_RECOMPUTE: {
        layout_recompute v;
        if ((ok = layout_parse_recompute(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_PRECISION: {
        layout_precision v;
        if ((ok = precision_parse(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_FP8_RECIPE: {
        layout_fp8_recipe v;
        if ((ok = precision_parse_fp8_recipe(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_IMPL: {
        layout_impl v;
        if ((ok = impl_parse(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_OPTIMIZER_IMPL: {
        layout_optimizer_impl v;
        if ((ok = optimizer_impl_parse(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_MOE_DISPATCHER: {
        layout_moe_dispatcher v;
        if ((ok = layout_parse_moe_dispatcher(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_PP_SCHEDULE: {
        layout_pp_schedule v;
        if ((ok = layout_parse_pp_schedule(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_RANK_ORDER: {
        layout_rank_order v;
        if ((ok = layout_parse_rank_order(s, &v))) *out = (int)v;
        break;
    }
    case LAYOUT_KIND_RECOMPUTE_MODULES: {
        unsigned v;
        if ((ok = recompute_modules_parse(s, &v, NULL, 0))) *out = (int)v;
        break;
    }
    default: break;
    }
    return ok;
}

cm_status layout_from_json(const json_t *j, const char *where, layout *l, training_spec *t,
                           char *err, size_t errlen)
{
    const layout_field *ff = &layout_fields[LAYOUT_F_FRAMEWORK];
    const char *fw = json_string_value(json_object_get(j, ff->key));
    int fv;
    if (!json_is_object(j) || !fw || !parse_enum(ff, fw, &fv))
        return cm_fail(err, errlen, CM_EPARSE, "%s needs \"framework\": fsdp2 or megatron or torchtitan",
                       where);
    layout out = layout_default((layout_framework)fv);
    training_spec tout;
    if (t) tout = *t;
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const layout_field *f = &layout_fields[i];
        if (f->id == LAYOUT_F_FRAMEWORK || (f->training && !t)) continue;
        const json_t *v = json_object_get(j, f->key);
        if (!v) continue;
        void *p = f->training ? (void *)((char *)&tout + f->offset)
                              : (void *)((char *)&out + f->offset);
        int x = 0;
        switch (f->kind) {
        case LAYOUT_KIND_INT:
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) > 1 << 24)
                return cm_fail(err, errlen, CM_EPARSE, "%s.%s must be a non-negative integer",
                               where, f->key);
            x = (int)json_integer_value(v);
            break;
        case LAYOUT_KIND_BOOL:
        case LAYOUT_KIND_CUDA_GRAPHS:
            if (!json_is_boolean(v))
                return cm_fail(err, errlen, CM_EPARSE, "%s.%s must be true or false", where,
                               f->key);
            x = json_is_true(v);
            if (f->kind == LAYOUT_KIND_CUDA_GRAPHS) x = x ? CUDA_GRAPHS_ON : CUDA_GRAPHS_OFF;
            break;
        default:
            if (!json_is_string(v) || !parse_enum(f, json_string_value(v), &x))
                /* the field and its value first: the list alone did not say which was wrong */
                return cm_fail(err, errlen, CM_EPARSE,
                               "%s.%s is %s%.60s%s, which plan does not know: sharding must be "
                               "ddp, distopt or fsdp, recompute none, "
                               "selective or full, precision bf16, fp8, mxfp8 or nvfp4, "
                               "fp8_recipe delayed, tensorwise, blockwise or rowwise, impl hf, native or "
                               "te, optimizer_impl fused, foreach or for-loop, moe_dispatcher "
                               "alltoall, allgather, deepep or hybridep and pp_schedule 1F1B, "
                               "Interleaved1F1B, GPipe, ZBVZeroBubble or DualPipeV, "
                               "recompute_modules Megatron's module names joined by commas, "
                               "rank_order tp-cp-ep-dp-pp or tp-cp-ep-pp-dp",
                               where, f->key, json_is_string(v) ? "'" : "not a string",
                               json_is_string(v) ? json_string_value(v) : "",
                               json_is_string(v) ? "'" : "");
        }
        store_value(f, p, x);
    }
    /* Canonical form: a resolved value equal to the default is stored as the default (0). */
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const layout_field *f = &layout_fields[i];
        if (!f->resolved) continue;
        void *p = (char *)&out + f->offset;
        int given = stored_value(f, p);
        /* a tri-state's given value stands for its resolved bool (AUTO is the default 0) */
        int want = f->kind == LAYOUT_KIND_CUDA_GRAPHS ? given == CUDA_GRAPHS_ON : given;
        if (f->kind == LAYOUT_KIND_CUDA_GRAPHS && given == CUDA_GRAPHS_AUTO) continue;
        store_value(f, p, 0);
        if (f->resolved(&out) != want) store_value(f, p, given);
    }
    *l = out;
    if (t) *t = tout;
    return CM_OK;
}

/* ---- names and equality ---- */

/* printf at buf + used, clipped to len; returns the new length used. */
static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...)
{
    if (used >= len) return used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    return n < 0 ? used : used + (size_t)n;
}

/* Is the field shown in the short name at this value? */
static bool shown_in_name(const layout_field *f, const layout *l, bool all)
{
    if (!f->name_token) return false;
    if (f->id == LAYOUT_F_ETP) return !all && l->ep > 1 && layout_etp(l) != l->tp;
    return all || f->name_always || layout_field_value(f, l, NULL) > 1;
}

void layout_short_sizes(const layout *l, bool all, char *buf, size_t len)
{
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const layout_field *f = &layout_fields[i];
        if (!shown_in_name(f, l, all)) continue;
        used = append(buf, len, used, "%s%s%d", used ? " " : "", f->name_token,
                      layout_field_value(f, l, NULL));
    }
}

void layout_short_name(const layout *l, char *buf, size_t len)
{
    char sizes[160];
    layout_short_sizes(l, false, sizes, sizeof sizes);
    if (len) buf[0] = '\0';
    size_t used = append(buf, len, 0, "%s %s %s", layout_framework_name(l->framework), sizes,
                         layout_sharding_name(l->sharding));
    if (l->sharding == SHARDING_FSDP && !l->reshard_after_forward)
        used = append(buf, len, used, "-nr");
    if (l->shard_size > 0) used = append(buf, len, used, " hsdp%d", l->shard_size);
    if (l->offload) used = append(buf, len, used, "+off");
    if (l->optimizer_offload_pct > 0)
        used = append(buf, len, used, " optoff%d", l->optimizer_offload_pct);
    if (l->activation_offload) used = append(buf, len, used, " actoff");
    if (l->activation_offload_layers > 0)
        used = append(buf, len, used, "%d", l->activation_offload_layers);
    if (l->recompute != RECOMPUTE_NONE)
        used = append(buf, len, used, " rc-%s", layout_recompute_name(l->recompute));
    if (l->recompute_layers > 0) used = append(buf, len, used, "%d", l->recompute_layers);
    if (l->recompute_modules) {
        char mods[160];
        recompute_modules_text(l->recompute_modules, '+', mods, sizeof mods);
        used = append(buf, len, used, "(%s)", mods);
    }
    if (l->pp_first_layers > 0 || l->pp_last_layers > 0)
        used = append(buf, len, used, " split-%d/%d", l->pp_first_layers, l->pp_last_layers);
    if (l->precision != PRECISION_BF16) used = append(buf, len, used, " %s", precision_label(l));
    if (l->fp8_param_gather) used = append(buf, len, used, "+pg");
    if (l->bf16_layers_start || l->bf16_layers_end)
        used = append(buf, len, used, " bf16-%d/%d", l->bf16_layers_start, l->bf16_layers_end);
    if (l->moe_fp8_dispatch) used = append(buf, len, used, " fp8-dispatch");
    /* Megatron's overlap knobs (issue 15): tp-comm, grad-reduce, param-gather */
    if (l->tp_comm_overlap || l->overlap_grad_reduce || l->overlap_param_gather)
        used = append(buf, len, used, " ov-%s%s%s", l->tp_comm_overlap ? "t" : "",
                      l->overlap_grad_reduce ? "g" : "", l->overlap_param_gather ? "p" : "");
    /* issue 19: a schedule other than the 1F1B/interleaved default, async TP, compile */
    if (l->pp_schedule != PP_SCHEDULE_DEFAULT)
        used = append(buf, len, used, " %s", layout_pp_schedule_name(l->pp_schedule));
    if (l->async_tp) used = append(buf, len, used, " async-tp");
    if (l->rank_order == RANK_ORDER_PP_DP) used = append(buf, len, used, " pp-dp");
    if (l->framework == FRAMEWORK_TORCHTITAN && l->compile) used = append(buf, len, used, " compile");
    /* torchtitan's CUDA graphs turned off where torchtitan would run them (cuda_graphs.h) */
    if (cuda_graphs_allowed(l) && !cuda_graphs_on(l)) append(buf, len, used, " no-graphs");
}

bool layout_equal(const layout *a, const layout *b)
{
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const layout_field *f = &layout_fields[i];
        if (f->training) continue;
        if (layout_field_value(f, a, NULL) != layout_field_value(f, b, NULL)) return false;
    }
    return true;
}

/* ---- trainer YAML ---- */

const char *layout_yaml_path(layout_field_id id, layout_framework strategy)
{
    const layout_field *f = layout_field_get(id);
    if (!f) return NULL;
    if (strategy == FRAMEWORK_FSDP2 && f->yaml_fsdp2) return f->yaml_fsdp2;
    return f->yaml;
}

const char *layout_yaml_key(layout_field_id id, layout_framework strategy)
{
    const char *p = layout_yaml_path(id, strategy);
    if (!p) return NULL;
    const char *dot = strrchr(p, '.');
    return dot ? dot + 1 : p;
}
