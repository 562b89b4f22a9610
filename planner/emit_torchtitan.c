/*
 * emit_torchtitan.c — a torchtitan plan as the command that runs it (issue 19): torchrun on
 * `-m torchtitan.train`, a --module/--config pair naming a Trainer.Config function, and the
 * --section.option overrides that set the plan's layout on top of it.
 *
 * The form is torchtitan's current one (pytorch/torchtitan b5bcd76): torchtitan/config/README.md
 * ("Select one with --module ... and --config"; the --section.option flags "still work and still
 * take precedence over the configuration"; tests/unit_tests/test_no_new_cli_options.py lists
 * them, frozen). The names and meanings used here, from torchtitan/config/configs.py:
 *   parallelism.data_parallel_replicate_degree / data_parallel_shard_degree (HSDP when both
 *     > 1; the FSDP mesh is dp_shard x cp, distributed/parallel_dims.py), fsdp_reshard_after_
 *     forward always|never, tensor_parallel_degree, enable_sequence_parallel (a tyro bool:
 *     --parallelism.no-enable_sequence_parallel turns it off), pipeline_parallel_degree,
 *     pipeline_parallel_schedule (torch's get_schedule_class names), pipeline_parallel_layers_
 *     per_stage with first/last_stage_less_layers 0 (so ceil(L / layers_per_stage) is exactly
 *     pp x stages per rank, distributed/pipeline_parallel.py _get_pipeline_metadata),
 *     num_pp_microbatches, context_parallel_degree, expert_parallel_degree;
 *   training.disable_cuda_graphs (a tyro bool, False by default since f84224af0: the forward +
 *     loss + backward replayed from a CUDA graph; written when the plan runs without them),
 *   training.num_tokens_per_microbatch_per_dp_rank ("input-token slots processed per
 *     data-parallel rank in one model forward, before context or tensor parallel sharding":
 *     micro-batch x sequence), num_tokens_per_train_step (the global batch in tokens; gradient
 *     accumulation follows from it, trainer.py), max_context_length, enable_cpu_offload;
 *   compile.enable, compile.enable_async_tensor_parallel, compile.components (a list; "model"
 *     alone when the loss stays eager); optimizer.implementation;
 *   activation checkpointing as a tyro subcommand, activation-checkpoint:none|selective|full
 *     (trainer.py ActivationCheckpointingConfig; the spelling of experiments/transformers_
 *     modeling_backend/tests/run_moe_tests.sh), written last.
 * Float8 and MXFP8 are model converters chosen in the config function, not flags: they are a
 * comment to act on. plan check reads this text back (check_torchtitan.c).
 */
#include "emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_graphs.h"
#include "emit_internal.h"
#include "precision.h"
#include "titan_form.h"

/* torchtitan's config functions for the presets it ships (torchtitan/models/<module>/
 * config_registry.py at b5bcd76). */
static const struct {
    const char *preset, *module, *config;
} recipes[] = {
    {"8b", "llama3", "llama3_8b"},
    {"70b", "llama3", "llama3_70b"},
    {"405b", "llama3", "llama3_405b"},
    {"deepseek-v3", "deepseek_v3", "deepseek_v3_671b"},
    {"deepseek-v2-lite", "deepseek_v3", "deepseek_v3_16b"},
    {"qwen3-30b-a3b", "qwen3", "qwen3_30b_a3b"},
};

/* The RoPE context the shipped config functions build (b5bcd76 models/llama3, qwen3,
 * deepseek_v3 __init__.py: each flavour's RoPE max_context_length); models/common/decoder.py
 * update_from_config refuses a longer training sequence ("exceeds attention RoPE maximum
 * supported sequence length"), and model_spec is not a command-line option. */
static long rope_context(const char *config)
{
    if (!strncmp(config, "llama3_", 7)) return 131072;
    if (!strcmp(config, "qwen3_30b_a3b")) return 40960;
    if (!strncmp(config, "deepseek_v3_", 12)) return 4096 * 4;
    return 0;
}

bool emit_serves(emit_format f, layout_framework fw)
{
    switch (f) {
    case EMIT_TORCHTITAN: return fw == FRAMEWORK_TORCHTITAN;
    /* the guide's formats take the guide's two frameworks (megatron-args and bridge of an
     * fsdp2 plan stay the error that says to use yaml) */
    case EMIT_YAML:
    case EMIT_MEGATRON_ARGS:
    case EMIT_BRIDGE: return fw != FRAMEWORK_TORCHTITAN;
    default: return true;
    }
}

/* HSDP: replicas x shard degree (the shard group is dp_shard x cp ranks). */
static void dp_degrees(const layout *l, int *replicate, int *shard)
{
    int group = layout_shard_group(l); /* ranks of one FSDP group, over dp x cp */
    *replicate = (l->dp * l->cp) / group;
    *shard = group / l->cp;
}

static void flag(FILE *f, const char *name, const char *value)
{
    fprintf(f, " \\\n  %s", name);
    if (value) {
        fputc(' ', f);
        emit_shell_quote(f, value);
    }
}

static void flag_int(FILE *f, const char *name, long v)
{
    char s[32];
    snprintf(s, sizeof s, "%ld", v);
    flag(f, name, s);
}

cm_status emit_torchtitan(const estimate *e, const model_spec *m, const system_spec *sys,
                          const emit_context *ctx, char **out, char *err, size_t errlen)
{
    const layout *l = &e->layout;
    const training_spec *t = &e->training;
    if (l->framework != FRAMEWORK_TORCHTITAN)
        return cm_fail(err, errlen, CM_EINVAL,
                       "this plan runs under %s; --emit torchtitan writes torchtitan plans: use "
                       "--framework torchtitan, or --emit %s",
                       layout_framework_name(l->framework),
                       l->framework == FRAMEWORK_MEGATRON ? "megatron-args" : "yaml");
    /* torchtitan's device mesh has one order, pp outermost (torchtitan b5bcd76
     * torchtitan/distributed/parallel_dims.py, unflatten_mesh at lines 307-330): no flag moves
     * the pipeline inside the node */
    if (l->rank_order != RANK_ORDER_DP_PP)
        return cm_fail(err, errlen, CM_EINVAL,
                       "torchtitan places ranks in one order (pp, dp_replicate, dp_shard, cp, tp, "
                       "outermost first); rank order %s has no torchtitan setting: plan with "
                       "--rank-order tp-cp-ep-dp-pp",
                       layout_rank_order_name(l->rank_order));
    const char *module = "llama3", *config = "llama3_8b";
    bool known = false;
    for (size_t i = 0; i < sizeof recipes / sizeof *recipes; i++)
        if (!strcmp(m->name, recipes[i].preset)) {
            module = recipes[i].module;
            config = recipes[i].config;
            known = true;
        }
    /* the config functions that already convert to the plan's format (config_registry.py at
     * b5bcd76): llama3_8b_mxfp8 (MXFP8LinearConverter), deepseek_v3_671b_float8 (rowwise
     * Float8Linear + Float8GroupedExperts); llama3_405b itself converts every Linear but
     * lm_head to float8 rowwise, so a 405B plan in another format has no shipped config */
    bool rowwise = l->precision == PRECISION_FP8 && precision_fp8_recipe(l) == FP8_RECIPE_ROWWISE;
    bool converted = false; /* the config function sets the plan's converter itself */
    if (!strcmp(config, "llama3_8b") && known && l->precision == PRECISION_MXFP8) {
        config = "llama3_8b_mxfp8";
        converted = true;
    } else if (!strcmp(config, "deepseek_v3_671b") && rowwise) {
        config = "deepseek_v3_671b_float8";
        converted = true;
    } else if (!strcmp(config, "llama3_405b")) {
        converted = rowwise;
    }
    bool f8_405b_mismatch = !strcmp(config, "llama3_405b") && !rowwise;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the command");
    emit_header(f, "#", e, m, sys);
    fprintf(f, "# torchtitan (pytorch/torchtitan b5bcd76): --module/--config pick a Trainer.Config "
               "function; the\n# --section.option overrides after them set this plan's layout "
               "(torchtitan/config/README.md).\n");
    if (!known) {
        fprintf(f, "# NO torchtitan config ships for this model: %s/%s stands in; write a config "
                   "function that\n# builds this model (README \"Writing your own\") and keep the "
                   "overrides.\n",
                module, config);
        /* the forms no torchtitan model class has: the same list as the search's output */
        char items[FORM_LIST_MAX][FORM_LIST_ITEM_CHARS];
        int n = titan_form_missing(m, items, FORM_LIST_MAX);
        if (n > 0) {
            fprintf(f, "# NO torchtitan %s model class has these forms of this model: write its "
                       "model code first\n# (torchtitan/models/README.md \"Adding the model\"); "
                       "the plan was priced for it:\n",
                    TITAN_FORM_COMMIT);
            for (int i = 0; i < n; i++) {
                fprintf(f, "#   - ");
                emit_comment_text(f, items[i]);
                fputc('\n', f);
            }
            fprintf(f, "# (torchtitan's experimental transformers_modeling_backend runs the "
                       "Hugging Face code instead;\n# plan does not price it)\n");
        }
    }
    long rope = known ? rope_context(config) : 0;
    if (rope > 0 && t->seq_len > rope)
        fprintf(f, "# NO torchtitan config ships for sequence %d: %s builds RoPE for %ld "
                   "positions and torchtitan\n# refuses a longer sequence "
                   "(models/common/decoder.py update_from_config); copy it with a larger RoPE\n"
                   "# max_context_length (README \"Writing your own\") and keep the "
                   "overrides.\n",
                t->seq_len, config, rope);
    /* the model plan check reads back (a preset, its Hugging Face repository or a path) */
    fprintf(f, "# model: ");
    emit_comment_text(f, emit_model_path(m, ctx));
    fputc('\n', f);
    long tokens_mb = (long)l->mbs * t->seq_len, tokens_step = (long)t->global_batch * t->seq_len;
    fprintf(f, "# batch in tokens: micro-batch %d x sequence %d = %ld per data-parallel rank per "
               "forward; %d sequences = %ld per step\n",
            l->mbs, t->seq_len, tokens_mb, t->global_batch, tokens_step);
    if (f8_405b_mismatch)
        fprintf(f, "# NO torchtitan config ships for %s Llama 3.1 405B: llama3_405b converts every "
                   "Linear but lm_head\n# to float8 rowwise (models/llama3/config_registry.py); "
                   "copy it without that converter\n# (README \"Writing your own\") and keep "
                   "the overrides.\n",
                precision_label(l));
    if (rowwise && converted)
        fprintf(f, "# float8 (%s): in the config function %s (its Float8LinearConverter, "
                   "recipe rowwise)\n",
                precision_label(l), config);
    else if (rowwise)
        /* model_registry(flavor, ..., converters=[...]) at b5bcd76; the output projection is
         * lm_head (llama3_405b filters it the same way) */
        fprintf(f, "# float8 (%s): in the config function, model_registry(..., converters="
                   "[Float8LinearConverter.Config(\n#   recipe_name=\"rowwise\", "
                   "filter_fqns=[\"lm_head\"], model_compile_enabled=%s)]) "
                   "(components/quantization/float8.md)\n",
                precision_label(l), l->compile ? "True" : "False");
    else if (l->precision == PRECISION_FP8)
        /* b5bcd76's converter takes recipe_name "rowwise" or "rowwise_with_gw_hp" only */
        fprintf(f, "# float8 (%s): NOT in this torchtitan: its Float8LinearConverter offers "
                   "rowwise scaling only\n# (components/quantization/float8.py); %s needs "
                   "torchao's Float8LinearConfig in your own converter,\n# or plan this layout "
                   "with --fp8-recipe rowwise\n",
                precision_label(l), precision_label(l));
    else if (l->precision == PRECISION_MXFP8 && converted)
        fprintf(f, "# mxfp8: in the config function %s (its MXFP8LinearConverter)\n", config);
    else if (l->precision == PRECISION_MXFP8 || l->precision == PRECISION_NVFP4)
        fprintf(f, "# %s: in the config function, the %s converter "
                   "(torchtitan/components/quantization/%s.md)\n",
                precision_label(l), l->precision == PRECISION_MXFP8 ? "MXFP8Linear" : "NVFP4",
                l->precision == PRECISION_MXFP8 ? "mxfp8" : "nvfp4");
    /* the MoE dispatcher is the model config's, not a flag: model_registry(...,
     * moe_comm_backend=...) picks standard (all-to-all), deepep or hybridep
     * (models/common/config_utils.py build_token_dispatcher_config); cfg21: unsaid before, so a
     * DeepEP/HybridEP plan's command ran all-to-all. plan check reads the line back, so it is
     * written whenever the layout names one (fuzz_trainer_yaml: a dense or EP-1 command with
     * the line read back DeepEP and was re-emitted without it) */
    if (l->moe_dispatcher == MOE_DISPATCH_DEEPEP || l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP)
        fprintf(f, "# MoE dispatcher (%s): in the config function, model_registry(..., "
                   "moe_comm_backend=\"%s\")\n# (models/common/config_utils.py; DeepEP "
                   "installed)\n",
                layout_moe_dispatcher_name(l->moe_dispatcher),
                layout_moe_dispatcher_name(l->moe_dispatcher));
    /* the rotate method (costmodel/cp_allgather.h): torchtitan b5bcd76 has no option for it
     * (context_parallel_rotate_method was dropped by #2555) and runs torch's default,
     * allgather; the 2024-25 releases took --experimental.context_parallel_rotate_method */
    if (l->cp > 1 && l->cp_rotate_alltoall)
        fprintf(f, "# CP rotate method alltoall: call torch.distributed.tensor.experimental."
                   "_attention.set_rotate_method(\"alltoall\")\n# before training (torchtitan "
                   "releases before #2555: --experimental.context_parallel_rotate_method "
                   "alltoall)\n");
    if (l->pp > 1 && layout_split_uneven(m, l)) {
        /* the split torchtitan makes from the keys below, as plan costed it */
        fprintf(f, "# decoder layers per pipeline stage (torchtitan's split of %d layers over %d "
                   "stages):",
                m->layers, l->pp * l->vpp);
        for (int k = 0; k < l->pp * l->vpp; k++)
            fprintf(f, "%s%d", k ? "/" : " ", layout_vstage_layers(m, l, k));
        fprintf(f, "\n");
    }
    fprintf(f, "# PLACEHOLDER, not from the plan: --training.steps. Check or edit it, then: "
               "plan check FILE --system %s%s\n",
            sys->name, emit_check_headroom_flag(e, sys));
    int gpn = sys->gpus_per_node > 0 ? sys->gpus_per_node : 1;
    /* torchrun starts the same number of processes on every node (emit_even_nodes), so that
     * nproc x nnodes is the plan's GPU count, which plan check reads back */
    int nproc = e->gpus / emit_even_nodes(e->gpus, sys);
    if (nproc != (e->gpus < gpn ? e->gpus : gpn))
        fprintf(f, "# %d GPUs do not fill %d-GPU nodes: %d processes on each of %d nodes\n",
                e->gpus, gpn, nproc, e->gpus / nproc);
    /* as torchtitan's own launcher (run_train.sh) runs it; the memory prediction assumes it */
    fprintf(f, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n");
    fprintf(f, "torchrun --nproc-per-node %d --nnodes \"${NNODES:-%d}\" --node-rank "
               "\"${NODE_RANK:-0}\" \\\n  --master-addr \"${MASTER_ADDR:-localhost}\" "
               "--master-port \"${MASTER_PORT:-29500}\" -m torchtitan.train",
            nproc, e->gpus / nproc);
    flag(f, "--module", module);
    flag(f, "--config", config);
    int rep, shard;
    dp_degrees(l, &rep, &shard);
    flag_int(f, "--parallelism.data_parallel_replicate_degree", rep);
    flag_int(f, "--parallelism.data_parallel_shard_degree", shard);
    /* under CUDA graphs "always" fails at capture and "default" works (torchtitan f84224af0;
     * cuda_graphs.h): graphs run at PP 1 only, where "default" reshards every decoder layer as
     * "always" does and keeps the final norm and output layer gathered (memory_phases.c) */
    bool graphs = cuda_graphs_on(l);
    flag(f, "--parallelism.fsdp_reshard_after_forward",
         l->reshard_after_forward ? (graphs ? "default" : "always") : "never");
    flag_int(f, "--parallelism.tensor_parallel_degree", l->tp);
    if (l->tp > 1)
        flag(f, l->sp ? "--parallelism.enable_sequence_parallel"
                      : "--parallelism.no-enable_sequence_parallel",
             NULL);
    flag_int(f, "--parallelism.pipeline_parallel_degree", l->pp);
    if (l->pp > 1) {
        flag(f, "--parallelism.pipeline_parallel_schedule",
             layout_pp_schedule_name(layout_pp_schedule_of(l)));
        /* the costed split (pp_split.c) in torchtitan's keys: first/last_stage_less_layers a
         * / b, and pipeline_parallel_layers_per_stage k wherever one gives the pp x vpp
         * stages (ceil((layers + a + b) / k), _get_pipeline_metadata; without it the
         * schedule's default, 1 or 2 a rank, which layout_check requires then) */
        int a = 1, b = 1, stages = l->pp * l->vpp;
        layout_titan_split_keys(m, l, &a, &b, &stages);
        int k = layout_titan_layers_per_stage(m, l);
        if (k > 0) flag_int(f, "--parallelism.pipeline_parallel_layers_per_stage", k);
        flag_int(f, "--parallelism.pipeline_parallel_first_stage_less_layers", a);
        flag_int(f, "--parallelism.pipeline_parallel_last_stage_less_layers", b);
        /* every micro-batch of the step in one schedule: no gradient accumulation around it */
        flag_int(f, "--parallelism.num_pp_microbatches", e->microbatches);
    }
    flag_int(f, "--parallelism.context_parallel_degree", l->cp);
    flag_int(f, "--parallelism.expert_parallel_degree", l->ep);
    flag_int(f, "--training.num_tokens_per_microbatch_per_dp_rank", tokens_mb);
    flag_int(f, "--training.num_tokens_per_train_step", tokens_step);
    flag_int(f, "--training.max_context_length", t->seq_len);
    if (l->offload) flag(f, "--training.enable_cpu_offload", NULL);
    /* torchtitan graphs forward + loss + backward by default (TrainingConfig.
     * disable_cuda_graphs False, f84224af0) and refuses it with PP or a blocking EP
     * dispatcher: off is said (cuda_graphs.h) */
    /* both ways: deepseek_v3_16b and _671b set disable_cuda_graphs=True themselves
     * (models/deepseek_v3/config_registry.py), so a plan with graphs says so */
    flag(f, graphs ? "--training.no-disable_cuda_graphs" : "--training.disable_cuda_graphs", NULL);
    flag(f, l->compile ? "--compile.enable" : "--compile.no-enable", NULL);
    /* both ways: llama3_405b turns async TP on itself (CompileConfig(enable=True,
     * enable_async_tensor_parallel=True)), and CompileConfig.__post_init__ refuses it without
     * --compile.enable, so a plan without it says so */
    flag(f, l->async_tp ? "--compile.enable_async_tensor_parallel"
                        : "--compile.no-enable_async_tensor_parallel",
         NULL);
    /* what is compiled, always when compiling: compile.components is a list (one
     * comma-separated word, config/manager.py list_str_rule), default ["model", "loss"]
     * (config/configs.py), but deepseek_v3_16b and _671b set ["loss"] and llama3_8b_mxfp8
     * ["model"]; the loss left eager is layout.h loss_eager */
    if (l->compile) flag(f, "--compile.components", l->loss_eager ? "model" : "model,loss");
    flag(f, "--optimizer.implementation",
         optimizer_impl_name((layout_optimizer_impl)layout_optimizer_impl_of(l)));
    flag_int(f, "--training.steps", 100);
    char ac[48];
    snprintf(ac, sizeof ac, "activation-checkpoint:%s", layout_recompute_name(l->recompute));
    flag(f, ac, NULL);
    fputc('\n', f);
    return emit_finish(f, &buf, out, err, errlen);
}
