/*
 * emit_yaml.c — the trainer YAML (SkyRL's schema) of a layout, through libyaml's emitter so
 * quoting and nesting are always valid YAML; the key paths of layout fields come from the
 * layout codec (layout_codec.h), which plan check reads back. Split from emit.c (one format per
 * file); the pieces every format shares are in emit_internal.h.
 */
#include "emit.h"
#include "emit_internal.h"
#include "recompute_modules.h"
#include "offload.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "hf_eager_attn.h"
#include "layout_codec.h"
#include "output.h"
#include "precision.h"
#include "shard_grads.h"
#include "units.h"

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

/* k: [a, b, ...] from words separated by spaces (a flow sequence of plain scalars) */
static void y_word_list(ywriter *w, const char *k, const char *words)
{
    y_key(w, k);
    yaml_event_t ev;
    if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE)) {
        w->failed = 1;
        return;
    }
    y_emit(w, &ev);
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", words);
    for (char *x = strtok_r(buf, " ", &save); x; x = strtok_r(NULL, " ", &save))
        y_scalar_styled(w, x, YAML_PLAIN_SCALAR_STYLE);
    yaml_sequence_end_event_initialize(&ev);
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
    /* Megatron's low-precision knobs the plan was priced with (plan check reads them back):
     * --fp8-param-gather, --first-last-layers-bf16's counts, DeepEP's FP8 dispatch */
    if (l->framework == FRAMEWORK_MEGATRON && l->fp8_param_gather)
        y_bool(w, "fp8_param_gather", true);
    if (l->framework == FRAMEWORK_MEGATRON && l->bf16_layers_start)
        y_int(w, "bf16_layers_start", l->bf16_layers_start);
    if (l->framework == FRAMEWORK_MEGATRON && l->bf16_layers_end)
        y_int(w, "bf16_layers_end", l->bf16_layers_end);
    if (l->moe_fp8_dispatch) y_bool(w, "moe_fp8_dispatch", true);
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

    /* SkyRL's placement keys (PlacementConfig): nodes x GPUs per node = the plan's GPUs */
    int nodes = emit_even_nodes(e->gpus, sys);
    y_map_start(w, "placement");
    y_int(w, "policy_num_nodes", nodes);
    y_int(w, "policy_num_gpus_per_node", e->gpus / nodes);
    y_map_end(w);

    y_map_start(w, "policy");
    y_map_start(w, "model");
    y_quoted(w, "path", emit_model_path(m, ctx));
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
        y_int(w, YKEY(LAYOUT_F_CP), l->cp);
        y_int(w, YKEY(LAYOUT_F_EP), l->ep);
        if (l->etp > 0) y_int(w, YKEY(LAYOUT_F_ETP), l->etp);
        else y_null(w, YKEY(LAYOUT_F_ETP)); /* null: same as TP (Megatron default) */
        /* the MoE dispatcher: SkyRL's megatron_config.moe_token_dispatcher_type (a956457
         * config.py:464, default alltoall, set on the provider by megatron_worker.py:481);
         * DeepEP and HybridEP are the flex dispatcher's backends, below. cfg21: unwritten
         * before, so a DeepEP, HybridEP or allgather plan ran SkyRL's alltoall */
        bool flex = l->moe_dispatcher == MOE_DISPATCH_DEEPEP ||
                    l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP;
        if (model_is_moe(m) || l->moe_dispatcher != MOE_DISPATCH_ALLTOALL) /* read back */
            y_str(w, "moe_token_dispatcher_type",
                  flex ? "flex" : layout_moe_dispatcher_name(l->moe_dispatcher));
        const char *granularity = YKEY(LAYOUT_F_RECOMPUTE);
        const char *num_layers = YKEY(LAYOUT_F_RECOMPUTE_LAYERS);
        /* SkyRL's MegatronConfig (skyrl/train/config/config.py, SkyRL a956457) rejects keys
         * it lacks; TransformerConfig fields (sequence parallel, virtual pipeline, recompute)
         * go through transformer_config_kwargs, OptimizerConfig's through
         * optimizer_config_kwargs */
        y_map_start(w, "transformer_config_kwargs");
        y_bool(w, YKEY(LAYOUT_F_SP), l->sp);
        /* tp_comm_overlap is a ModelParallelConfig (TransformerConfig) field in Megatron-Core */
        y_bool(w, YKEY(LAYOUT_F_TP_COMM_OVERLAP), l->tp_comm_overlap);
        if (l->vpp > 1) y_int(w, YKEY(LAYOUT_F_VPP), l->vpp);
        else y_null(w, YKEY(LAYOUT_F_VPP));
        /* TransformerConfig.moe_flex_dispatcher_backend (Megatron-Core 71e418e, SkyRL's pin:
         * transformer_config.py:806, default deepep), which SkyRL sets from these kwargs
         * (megatron_worker.py:488-490) */
        if (flex)
            y_str(w, "moe_flex_dispatcher_backend", layout_moe_dispatcher_name(l->moe_dispatcher));
        /* the MoE overlaps, ModelParallelConfig fields there (model_parallel_config.py:262,
         * 267): the EP all-to-all overlap with its delayed weight gradients when priced, the
         * shared-expert overlap both ways (a provider may default it on), as --emit bridge
         * states them. cfg21: unwritten before, so the plan's overlap did not run */
        if (t->moe_ep_overlap) {
            y_bool(w, "overlap_moe_expert_parallel_comm", true);
            y_bool(w, "delay_wgrad_compute", true);
        }
        if ((model_is_moe(m) && m->shared_experts > 0) || t->moe_shared_overlap)
            y_bool(w, "moe_shared_expert_overlap", t->moe_shared_overlap);
        /* the uneven split (issue 21), TransformerConfig's own fields; with virtual stages
         * those need every stage's layers divisible by vpp (transformer_config.py), else the
         * split goes as Megatron's layout string, TransformerConfig.pipeline_model_parallel_
         * layout (plan check reads either back) */
        bool as_text = false;
        if (l->vpp > 1 && (l->pp_first_layers > 0 || l->pp_last_layers > 0))
            for (int st = 0; st < l->pp; st++)
                if (layout_stage_layers(m, l, st) % l->vpp) as_text = true;
        char split[FLAG_VALUE_MAX];
        if (as_text && emit_pipeline_layout_text(m, l, split, sizeof split)) {
            y_quoted(w, "pipeline_model_parallel_layout", split);
        } else {
            if (l->pp_first_layers > 0)
                y_int(w, YKEY(LAYOUT_F_PP_FIRST_LAYERS), l->pp_first_layers);
            if (l->pp_last_layers > 0)
                y_int(w, YKEY(LAYOUT_F_PP_LAST_LAYERS), l->pp_last_layers);
        }
        if (l->recompute == RECOMPUTE_NONE) {
            y_null(w, granularity);
            y_null(w, "recompute_method");
            y_null(w, num_layers);
        } else if (l->recompute == RECOMPUTE_SELECTIVE) {
            y_str(w, granularity, "selective");
            y_null(w, "recompute_method");
            y_null(w, num_layers);
            if (l->recompute_modules) { /* TransformerConfig.recompute_modules */
                char mods[160];
                recompute_modules_text(l->recompute_modules, ' ', mods, sizeof mods);
                y_word_list(w, "recompute_modules", mods);
            }
        } else {
            y_str(w, granularity, "full");
            /* uniform with 1: every layer checkpointed; block N: the first N of each stage */
            y_str(w, "recompute_method", l->recompute_layers > 0 ? "block" : "uniform");
            y_int(w, num_layers, l->recompute_layers > 0 ? l->recompute_layers : 1);
        }
        if (l->activation_offload) {
            y_bool(w, "cpu_offloading", true);
            y_int(w, "cpu_offloading_num_layers", offload_activation_layers(m, l));
        }
        y_map_end(w);
        bool fsdp = layout_grads_sharded(l); /* ZeRO-3 or ZeRO-2 (shard_grads.h) */
        y_map_start(w, "optimizer_config_kwargs");
        y_bool(w, YKEY(LAYOUT_F_SHARDING), l->sharding != SHARDING_DDP);
        if (l->optimizer_offload_pct > 0) { /* Megatron CPU offload (costmodel/offload.h) */
            char frac[16];
            snprintf(frac, sizeof frac, "%.2f", l->optimizer_offload_pct / 100.0);
            y_bool(w, "optimizer_cpu_offload", true);
            y_str(w, "optimizer_offload_fraction", frac);
            y_bool(w, "overlap_cpu_optimizer_d2h_h2d", true);
            y_bool(w, "use_precision_aware_optimizer", true);
        }
        y_map_end(w);
        /* not in SkyRL's schema (yaml_skyrl_gaps() names them in the header) */
        if (fsdp) {
            y_bool(w, "use_megatron_fsdp", true);
            y_str(w, "data_parallel_sharding_strategy",
                  layout_zero2(l) ? "optim_grads" : "optim_grads_params");
            y_str(w, "ckpt_format", "fsdp_dtensor");
        }
        if (l->shard_size > 0 && l->sharding != SHARDING_DDP)
            y_int(w, YKEY(LAYOUT_F_SHARD_SIZE), l->dp * l->cp / l->shard_size);
        if (l->rank_order == RANK_ORDER_PP_DP) /* Megatron's --use-tp-pp-dp-mapping */
            y_bool(w, "use_tp_pp_dp_mapping", true);
        y_map_start(w, "ddp_config");
        y_bool(w, YKEY(LAYOUT_F_OVERLAP_GRAD_REDUCE), l->overlap_grad_reduce);
        y_bool(w, YKEY(LAYOUT_F_OVERLAP_PARAM_GATHER), l->overlap_param_gather);
        if (t->grad_reduce_bf16) y_bool(w, "grad_reduce_in_fp32", false); /* fp32: default */
        if (fsdp) y_bool(w, "average_in_collective", false);
        y_map_end(w);
        y_map_end(w);
    }
    y_map_end(w); /* policy */

    y_bool(w, FSDP2_KEY(LAYOUT_F_RECOMPUTE), l->recompute != RECOMPUTE_NONE);
    y_int(w, YKEY(LAYOUT_F_MBS), l->mbs);
    y_int(w, YKEY(LAYOUT_F_GBS), t->global_batch);
    y_map_start(w, "algorithm"); /* SkyRL's trainer.algorithm.max_seq_len */
    y_int(w, YKEY(LAYOUT_F_SEQ), t->seq_len);
    y_map_end(w);
    /* The attention the plan priced (layout_attention_of: a model whose transformers class
     * refuses SDPA, GPT-OSS, is priced with eager attention under --impl hf unless asked
     * otherwise). SkyRL's flash_attn picks flash_attention_2 (true) or sdpa (false)
     * (skyrl/backends/skyrl_train/workers/model_wrapper.py line 87, SkyRL a956457); neither is
     * the eager attention, which plan's own key attn_implementation states (yaml_skyrl_gaps). */
    y_bool(w, "flash_attn", layout_attention_of(m, t, l) == ATTENTION_FLASH);
    if (hf_eager_attn_applies(m, t, l)) y_str(w, "attn_implementation", "eager");
    y_bool(w, "bf16", true);
    if (precision_is_low(l)) low_precision_yaml(w, l);
    y_map_end(w); /* trainer */
    y_map_end(w);
}

/* The keys of this plan's YAML that SkyRL's config schema lacks (it rejects unknown keys): said
 * in the header, so the user knows the plan needs Megatron-LM directly (--emit megatron-args). */
static void yaml_skyrl_gaps(FILE *f, const estimate *e, const model_spec *m)
{
    const layout *l = &e->layout;
    /* transformers' eager attention (hf_eager_attn.h): SkyRL has no key for it, and for GPT-OSS
     * it patches in its own flex attention whatever flash_attn says (model_wrapper.py lines
     * 166-184 at a956457: set_attn_implementation("custom_flex")), which plan does not price */
    if (hf_eager_attn_applies(m, &e->training, l))
        fprintf(f, "# NOT IN SkyRL's schema (SkyRL rejects it; plan check reads it): "
                   "trainer.attn_implementation: eager, the attention this plan priced "
                   "(transformers' eager_attention_forward%s); SkyRL's flash_attn: false runs "
                   "sdpa%s: remove the key and expect another step time\n",
                m->attention_sinks ? ", its sink column" : "",
                !strcasecmp(m->hf_model_type, "gpt_oss")
                    ? ", and for gpt_oss SkyRL runs its own flex attention patch"
                    : "");
    /* issue 16: the low_precision section is plan's (a low-precision plan only; the search
     * picks FP8 by default on Hopper and Blackwell) */
    if (precision_is_low(l))
        fprintf(f, "# NOT IN SkyRL's schema (SkyRL rejects it; plan check reads it): "
                   "trainer.low_precision, the plan's %s Linears: remove it and set the format in "
                   "the trainer's own precision settings, or use --emit %s\n",
                precision_label(l),
                l->framework == FRAMEWORK_MEGATRON ? "megatron-args / --emit bridge"
                                                   : "torchtitan (--framework torchtitan)");
    if (l->framework != FRAMEWORK_MEGATRON) return;
    char keys[256] = "";
    if (layout_grads_sharded(l))
        strcat(keys, " use_megatron_fsdp, data_parallel_sharding_strategy, ckpt_format,");
    if (l->shard_size > 0 && l->sharding != SHARDING_DDP)
        strcat(keys, " num_distributed_optimizer_instances,");
    if (e->training.grad_reduce_bf16) strcat(keys, " ddp_config.grad_reduce_in_fp32,");
    if (l->rank_order == RANK_ORDER_PP_DP) strcat(keys, " use_tp_pp_dp_mapping,");
    if (!keys[0]) return;
    keys[strlen(keys) - 1] = '\0';
    fprintf(f, "# NOT IN SkyRL's schema (SkyRL rejects them; plan check reads them): "
               "megatron_config.{%s }\n# run such a plan with Megatron-LM: --emit megatron-args\n",
            keys + 1);
}

cm_status emit_yaml(const estimate *e, const model_spec *m, const system_spec *sys,
                    const emit_context *ctx, char **out, char *err, size_t errlen)
{
    if (e->layout.rope_unfused) /* no trainer-YAML key for it (codec) */
        return cm_fail(err, errlen, CM_EINVAL,
                       "the trainer YAML does not state --no-rope-fusion (Megatron's eager "
                       "RoPE): use --emit megatron-args or --emit bridge");
    if (e->layout.te_cross_entropy) /* two TransformerConfig fields: no one YAML key (codec) */
        return cm_fail(err, errlen, CM_EINVAL,
                       "the trainer YAML does not state --te-cross-entropy (Megatron's fused "
                       "cross entropy): use --emit megatron-args or --emit bridge");
    if (e->layout.optimizer_bf16_states) /* torch dtypes in OptimizerConfig: no YAML form here */
        return cm_fail(err, errlen, CM_EINVAL,
                       "the trainer YAML does not state --bf16-optimizer-states (Megatron's "
                       "precision-aware optimizer): use --emit megatron-args or --emit bridge");
    if (e->layout.framework == FRAMEWORK_TORCHTITAN) /* issue 19: no trainer YAML holds it */
        return cm_fail(err, errlen, CM_EINVAL,
                       "this plan runs under torchtitan, which the trainer YAML cannot state: "
                       "use --emit torchtitan");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the YAML");
    emit_header(f, "#", e, m, sys);
    yaml_skyrl_gaps(f, e, m);
    if (e->training.expandable_segments) /* memory.h: the prediction assumed it */
        fputs("# launch with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the environment "
              "(the memory prediction assumes it)\n", f);
    fputs("# check or edit it, then: plan check FILE.yaml --system ", f);
    emit_comment_text(f, sys->name);
    fputs(emit_check_headroom_flag(e, sys), f);
    fputc('\n', f);

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
    return emit_finish(f, &buf, out, err, errlen);
}

