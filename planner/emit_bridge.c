/*
 * emit_bridge.c — a Megatron plan as Megatron-Bridge overrides (`--emit bridge`): the named
 * recipe of the model (or the Llama 3.1 8B recipe with the checkpoint's own model provider,
 * where AutoBridge has a bridge for its architecture; otherwise an error), then cfg.model /
 * cfg.ddp / cfg.dist / cfg.dataset statements that set the plan's layout, precision and the
 * gradient-reduce dtype through a MixedPrecisionConfig, the overlaps through a CommOverlapConfig
 * (Bridge's runtime_config_update() writes both over the model and ddp fields), and the pipeline
 * split rebuilt for the emitted PP size. Knobs a recipe turns on by itself (flex dispatcher,
 * shared-expert overlap, precision-aware optimizer, full-recompute layer counts) are stated
 * either way. Split from emit.c (issue 13: small rooms); bench/bridge_fields_check.py checks
 * every cfg field it writes against the Bridge sources, bench/bridge_execute.py runs the
 * scripts through Bridge itself (bench/BRIDGE.md).
 */
#include "emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_internal.h"
#include "offload.h"
#include "recompute_modules.h"
#include "precision.h"
#include "shard_grads.h"

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

/* ---- Megatron Bridge ----
 *
 * Recipe names: Megatron-Bridge commit 067f987,
 * src/megatron/bridge/recipes/FAMILY/h100/MODEL.py (every one is re-exported by
 * megatron.bridge.recipes). A model without a recipe of its own gets the Llama 3.1 8B recipe
 * for the training loop with its model provider replaced by the checkpoint's own
 * (AutoBridge.to_megatron_provider). */

static const struct {
    const char *hf_repo;
    const char *recipe;
} bridge_recipes[] = {
    {"meta-llama/Llama-3.2-1B", "llama32_1b_pretrain_1gpu_h100_bf16_config"},
    {"meta-llama/Llama-3.2-3B", "llama32_3b_pretrain_1gpu_h100_bf16_config"},
    {"meta-llama/Llama-3.1-8B", "llama31_8b_pretrain_2gpu_h100_bf16_config"},
    {"meta-llama/Llama-3.1-70B", "llama31_70b_pretrain_32gpu_h100_bf16_config"},
    {"meta-llama/Llama-3.1-405B", "llama31_405b_pretrain_256gpu_h100_bf16_config"},
    {"meta-llama/Llama-2-7b-hf", "llama2_7b_pretrain_2gpu_h100_bf16_config"},
    {"deepseek-ai/DeepSeek-V3", "deepseek_v3_pretrain_1024gpu_h100_bf16_config"},
    {"deepseek-ai/DeepSeek-V2-Lite", "deepseek_v2_lite_pretrain_8gpu_h100_bf16_config"},
    {"Qwen/Qwen2.5-7B", "qwen25_7b_pretrain_2gpu_h100_bf16_config"},
    {"Qwen/Qwen3-30B-A3B", "qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config"},
};
#define BRIDGE_FALLBACK_RECIPE "llama31_8b_pretrain_2gpu_h100_bf16_config"

/* The recipe of m, or NULL when Megatron-Bridge has none (GPT-3 175B has no Hugging Face
 * repository: matched by its preset name and display). */
const char *emit_bridge_recipe(const model_spec *m)
{
    for (size_t i = 0; i < sizeof bridge_recipes / sizeof *bridge_recipes; i++)
        if (!strcmp(m->hf_repo, bridge_recipes[i].hf_repo)) return bridge_recipes[i].recipe;
    if (!m->hf_repo[0] && !strcmp(m->name, "175b") && !strcmp(m->display, "GPT-3 175B"))
        return "gpt3_175b_pretrain_32gpu_h100_bf16_config";
    return NULL;
}

/* The Hugging Face classes Megatron-Bridge 067f987 has a bridge for (every
 * `MegatronModelBridge.register_bridge(source=...)` under src/megatron/bridge/models): AutoBridge
 * refuses any other ("Model architecture '...' is not yet supported"), e.g. Mixtral, Phi-3,
 * GPT-2. Executed: bench/BRIDGE.md. */
static const char *const bridge_architectures[] = {
    "BailingMoeV2ForCausalLM", "DeciLMForCausalLM", "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", "Exaone4ForCausalLM",
    "ExaoneMoeForCausalLM", "FalconH1ForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
    "GemmaForCausalLM", "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM",
    "GptOssForCausalLM", "HYV3ForCausalLM", "KimiK2ForCausalLM", "LlamaForCausalLM",
    "MiMoForCausalLM", "MiMoV2FlashForCausalLM", "MiniMaxM2ForCausalLM",
    "Mistral3ForConditionalGeneration", "MistralForCausalLM", "NemotronForCausalLM",
    "NemotronHForCausalLM", "OlmoeForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
    "SarvamMLAForCausalLM", "SarvamMoEForCausalLM", "Step3p5ForCausalLM",
};

static bool bridge_has_architecture(const char *arch)
{
    for (size_t i = 0; i < sizeof bridge_architectures / sizeof *bridge_architectures; i++)
        if (!strcmp(arch, bridge_architectures[i])) return true;
    return false;
}

/* Checkpoints whose model_type transformers does not define: their config class is the
 * repository's own code (auto_map), which AutoBridge loads only with trust_remote_code=True --
 * as Bridge's own Kimi-K2 recipe passes it (recipes/kimi/h100/kimi_k2.py, 067f987). Without it
 * AutoBridge stops ("contains custom code which must be executed", bench/BRIDGE.md). */
static bool bridge_needs_remote_code(const model_spec *m)
{
    static const char *const types[] = {"kimi_k2"};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(m->hf_model_type, types[i])) return true;
    return false;
}

static const char *py_bool(bool b) { return b ? "True" : "False"; }

cm_status emit_bridge(const estimate *e, const model_spec *m, const system_spec *sys,
                      const emit_context *ctx, char **out, char *err, size_t errlen)
{
    cm_status st = emit_need_megatron(e, "Megatron Bridge overrides", err, errlen);
    if (st != CM_OK) return st;
    const char *recipe = emit_bridge_recipe(m);
    if (!recipe && !bridge_has_architecture(m->hf_architecture))
        return cm_fail(err, errlen, CM_EINVAL,
                       "Megatron-Bridge has no recipe for %s and AutoBridge cannot read its "
                       "checkpoint (%s%s): use --emit megatron-args (Megatron-LM) instead",
                       m->display,
                       m->hf_architecture[0] ? "no bridge for " : "config.json names no ",
                       m->hf_architecture[0] ? m->hf_architecture : "architectures");
    const layout *l = &e->layout;
    const training_spec *t = &e->training;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the overrides");
    emit_header(f, "#", e, m, sys);
    fprintf(f, "import torch\nfrom megatron.bridge.recipes import %s\n",
            recipe ? recipe : BRIDGE_FALLBACK_RECIPE);
    if (!recipe) fprintf(f, "from megatron.bridge import AutoBridge\n");
    fprintf(f, "\ncfg = %s()\n", recipe ? recipe : BRIDGE_FALLBACK_RECIPE);
    if (!recipe) {
        fputs("# Megatron-Bridge has no recipe for ", f);
        emit_comment_text(f, m->display);
        fputs(": the Llama 3.1 8B recipe's training loop with this checkpoint's model\n", f);
        fputs("cfg.model = AutoBridge.from_hf_pretrained(", f);
        emit_python_quote(f, emit_model_path(m, ctx));
        fputs(bridge_needs_remote_code(m) ? ", trust_remote_code=True" : "", f);
        fputs(").to_megatron_provider(load_weights=False)\n", f);
    }
    fprintf(f, "cfg.model.tensor_model_parallel_size = %d\n", l->tp);
    fprintf(f, "cfg.model.pipeline_model_parallel_size = %d\n", l->pp);
    /* no cfg.model.pipeline_dtype: MixedPrecisionConfig.setup() writes its own over it (every
     * Bridge precision recipe has pipeline_dtype bf16) */
    /* the MTP modules the prediction prices on the last stage (recipe_mtp.c); the recipes set
     * the same count from the checkpoint's num_nextn_predict_layers, stated for the reader */
    if (m->mtp_layers > 0) fprintf(f, "cfg.model.mtp_num_layers = %d\n", m->mtp_layers);
    if (l->vpp > 1) fprintf(f, "cfg.model.virtual_pipeline_model_parallel_size = %d\n", l->vpp);
    else fprintf(f, "cfg.model.virtual_pipeline_model_parallel_size = None\n");
    /* the pipeline split rebuilt for this PP size: the costed one, stated whole when uneven */
    char split[FLAG_VALUE_MAX];
    if (layout_split_uneven(m, l) &&
        emit_pipeline_layout_text(m, l, split, sizeof split)) {
        fputs("cfg.model.pipeline_model_parallel_layout = ", f);
        emit_python_quote(f, split);
        fputc('\n', f);
    } else {
        fprintf(f, "cfg.model.pipeline_model_parallel_layout = None\n");
    }
    fprintf(f, "cfg.model.num_layers_in_first_pipeline_stage = None\n");
    fprintf(f, "cfg.model.num_layers_in_last_pipeline_stage = None\n");
    fprintf(f, "cfg.model.account_for_embedding_in_pipeline_split = False\n");
    fprintf(f, "cfg.model.account_for_loss_in_pipeline_split = False\n");
    fprintf(f, "cfg.model.context_parallel_size = %d\n", l->cp);
    if (model_is_moe(m)) {
        fprintf(f, "cfg.model.expert_model_parallel_size = %d\n", l->ep);
        fprintf(f, "cfg.model.expert_tensor_parallel_size = %d\n", layout_etp(l));
        bool flex = l->moe_dispatcher == MOE_DISPATCH_DEEPEP ||
                    l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP;
        /* stated whole: the Qwen3 and DeepSeek-V3 recipes end with
         * apply_flex_dispatcher_backend(), which turns an H100's alltoall into DeepEP/HybridEP
         * flex; DeepSeek's recipes turn the shared-expert overlap on */
        fprintf(f, "cfg.model.moe_token_dispatcher_type = \"%s\"\n",
                flex ? "flex" : layout_moe_dispatcher_name(l->moe_dispatcher));
        if (flex)
            fprintf(f, "cfg.model.moe_flex_dispatcher_backend = \"%s\"\n",
                    layout_moe_dispatcher_name(l->moe_dispatcher));
        else
            fprintf(f, "cfg.model.moe_flex_dispatcher_backend = None\n");
        if (t->moe_capacity_factor > 0)
            fprintf(f, "cfg.model.moe_expert_capacity_factor = %g\n", t->moe_capacity_factor);
        fprintf(f, "cfg.model.overlap_moe_expert_parallel_comm = %s\n", py_bool(t->moe_ep_overlap));
        fprintf(f, "cfg.model.delay_wgrad_compute = %s\n", py_bool(t->moe_ep_overlap));
        fprintf(f, "cfg.model.moe_shared_expert_overlap = %s\n",
                py_bool(t->moe_shared_overlap && m->shared_experts > 0));
    }
    fprintf(f, "cfg.model.sequence_parallel = %s\n", py_bool(l->sp));
    fprintf(f, "cfg.model.tp_comm_overlap = %s\n", py_bool(l->tp_comm_overlap));
    /* the recipes' full-recompute method and layer count are cleared otherwise: Megatron-Core
     * refuses recompute_num_layers with selective recompute (transformer_config.py) */
    if (l->recompute == RECOMPUTE_NONE) {
        fprintf(f, "cfg.model.recompute_granularity = None\n");
        fprintf(f, "cfg.model.recompute_method = None\n");
        fprintf(f, "cfg.model.recompute_num_layers = None\n");
    } else if (l->recompute == RECOMPUTE_SELECTIVE) {
        fprintf(f, "cfg.model.recompute_granularity = \"selective\"\n");
        fprintf(f, "cfg.model.recompute_method = None\n");
        fprintf(f, "cfg.model.recompute_num_layers = None\n");
        if (l->recompute_modules) {
            char mods[160];
            recompute_modules_text(l->recompute_modules, ' ', mods, sizeof mods);
            fputs("cfg.model.recompute_modules = [", f);
            char *save = NULL;
            int k = 0;
            for (char *w = strtok_r(mods, " ", &save); w; w = strtok_r(NULL, " ", &save), k++)
                fprintf(f, "%s\"%s\"", k ? ", " : "", w); /* Megatron's own names, no quoting */
            fputs("]\n", f);
        }
    } else {
        fprintf(f, "cfg.model.recompute_granularity = \"full\"\n");
        fprintf(f, "cfg.model.recompute_method = \"%s\"\n",
                l->recompute_layers > 0 ? "block" : "uniform");
        fprintf(f, "cfg.model.recompute_num_layers = %d\n",
                l->recompute_layers > 0 ? l->recompute_layers : 1);
    }
    /* Megatron CPU offload (costmodel/offload.h), set as Bridge's performance scripts set it
     * (scripts/performance/utils/overrides.py at v0.4.2: cpu_offloading, no weights, the
     * layer count); the optimizer's on OptimizerConfig as Megatron-LM's flags name it */
    if (l->activation_offload) {
        fprintf(f, "cfg.model.cpu_offloading = True\n");
        fprintf(f, "cfg.model.cpu_offloading_weights = False\n");
        fprintf(f, "cfg.model.cpu_offloading_num_layers = %d\n", offload_activation_layers(m, l));
    }
    if (l->optimizer_offload_pct > 0) {
        fprintf(f, "cfg.optimizer.optimizer_cpu_offload = True\n");
        fprintf(f, "cfg.optimizer.optimizer_offload_fraction = %.2f\n",
                l->optimizer_offload_pct / 100.0);
        fprintf(f, "cfg.optimizer.overlap_cpu_optimizer_d2h_h2d = True\n");
    }
    if (l->rope_unfused) /* TransformerConfig: Megatron's eager RoPE (layout.h) */
        fprintf(f, "cfg.model.apply_rope_fusion = False\n");
    if (l->te_cross_entropy) { /* TransformerConfig: the loss fusion in TE's kernel */
        fprintf(f, "cfg.model.cross_entropy_loss_fusion = True\n");
        fprintf(f, "cfg.model.cross_entropy_fusion_impl = \"te\"\n");
    }
    /* OptimizerConfig's precision-aware optimizer, stated both ways: the DeepSeek-V3 recipe
     * turns it on with bf16 moments, which Megatron refuses without the distributed optimizer */
    {
        const char *dt = l->optimizer_bf16_states ? "torch.bfloat16" : "torch.float32";
        fprintf(f, "cfg.optimizer.use_precision_aware_optimizer = %s\n",
                py_bool(l->optimizer_bf16_states || l->optimizer_offload_pct > 0));
        fprintf(f, "cfg.optimizer.main_grads_dtype = %s\n", dt);
        fprintf(f, "cfg.optimizer.exp_avg_dtype = %s\n", dt);
        fprintf(f, "cfg.optimizer.exp_avg_sq_dtype = %s\n", dt);
    }
    fprintf(f, "cfg.model.seq_length = %d\n", t->seq_len);
    fprintf(f, "cfg.dataset.seq_length = %d\n", t->seq_len);
    fprintf(f, "cfg.train.micro_batch_size = %d\n", l->mbs);
    fprintf(f, "cfg.train.global_batch_size = %d\n", t->global_batch);
    fprintf(f, "cfg.optimizer.clip_grad = 1.0\n");
    /* Precision through Bridge's MixedPrecisionConfig: runtime_config_update() runs its setup(),
     * which writes grad_reduce_in_fp32 and pipeline_dtype over cfg.ddp and cfg.model, so the
     * plan's gradient-reduce precision goes here: the one the prediction priced, for
     * Megatron-FSDP too (bf16 is recommended there; plan --grad-reduce-bf16 prices it) */
    const char *mp = bridge_precision_recipe(l);
    fprintf(f, "from megatron.bridge.training.mixed_precision import get_mixed_precision_config\n");
    fprintf(f, "cfg.mixed_precision = get_mixed_precision_config(\"%s\")\n", mp ? mp : "bf16_mixed");
    fprintf(f, "cfg.mixed_precision.grad_reduce_in_fp32 = %s\n",
            py_bool(!t->grad_reduce_bf16));
    if (mp) {
        /* what the prediction assumed where the recipe differs: FP8 parameters or bf16 ones
         * beside TE's low-precision copies, and which decoder layers stay bf16
         * (MixedPrecisionConfig's fields of those names) */
        bool pg = precision_param_gather(l), fl16 = l->bf16_layers_start || l->bf16_layers_end;
        if (l->precision == PRECISION_NVFP4) {
            fprintf(f, "cfg.mixed_precision.fp4_param_gather = %s\n", py_bool(pg));
        } else {
            fprintf(f, "cfg.mixed_precision.fp8_param = %s\n", py_bool(pg));
            fprintf(f, "cfg.mixed_precision.fp8_param_gather = %s\n", py_bool(pg));
            /* bf16_with_mxfp8_mixed() also reuses the gradient buffer for the MXFP8 parameter
             * all-gather, which Megatron-Core refuses without MXFP8 parameters
             * (distributed_data_parallel_config.py: "Reuse grad buffer only when keeping params
             * in MXFP8"; seen running Bridge 067f987, bench/BRIDGE.md) */
            if (l->precision == PRECISION_MXFP8 && !pg)
                fprintf(f, "cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = False\n");
        }
        fprintf(f, "cfg.mixed_precision.first_last_layers_bf16 = %s\n", py_bool(fl16));
        if (fl16) {
            fprintf(f, "cfg.mixed_precision.num_layers_at_start_in_bf16 = %d\n",
                    l->bf16_layers_start);
            fprintf(f, "cfg.mixed_precision.num_layers_at_end_in_bf16 = %d\n",
                    l->bf16_layers_end);
        }
    }
    bool distopt = l->sharding != SHARDING_DDP;
    fprintf(f, "cfg.optimizer.use_distributed_optimizer = %s\n", py_bool(distopt));
    fprintf(f, "cfg.ddp.use_distributed_optimizer = %s\n", py_bool(distopt));
    if (l->shard_size > 0 && distopt)
        fprintf(f, "cfg.ddp.num_distributed_optimizer_instances = %d\n",
                l->dp * l->cp / l->shard_size);
    bool overlap_grad = l->overlap_grad_reduce && l->dp * l->cp > 1;
    fprintf(f, "cfg.ddp.overlap_grad_reduce = %s\n", py_bool(overlap_grad));
    fprintf(f, "cfg.ddp.overlap_param_gather = %s\n",
            py_bool(overlap_grad && l->overlap_param_gather && distopt));
    /* the rank order tp-cp-ep-pp-dp: DistributedInitConfig.use_tp_pp_dp_mapping, which
     * Bridge's initialize.py:817 (067f987) turns into Megatron-Core's order */
    if (l->rank_order == RANK_ORDER_PP_DP) fprintf(f, "cfg.dist.use_tp_pp_dp_mapping = True\n");
    if (emit_megatron_fsdp(l)) {
        fprintf(f, "# Megatron-FSDP, required:\n");
        fprintf(f, "cfg.dist.use_megatron_fsdp = True\n");
        fprintf(f, "cfg.ddp.use_megatron_fsdp = True\n");
        fprintf(f, "cfg.ddp.data_parallel_sharding_strategy = \"%s\"\n",
                layout_zero2(l) ? "optim_grads" : "optim_grads_params");
        fprintf(f, "cfg.ddp.average_in_collective = False\n");
        fprintf(f, "cfg.model.gradient_accumulation_fusion = False\n");
        fprintf(f, "cfg.checkpoint.ckpt_format = \"fsdp_dtensor\"\n");
        fprintf(f, "# Megatron-FSDP, recommended (double buffer and NCCL user buffers cost peak "
                   "memory); leave CUDA_DEVICE_MAX_CONNECTIONS unset:\n");
        fprintf(f, "cfg.model.calculate_per_token_loss = True\n");
        fprintf(f, "cfg.model.init_model_with_meta_device = True\n");
        fprintf(f, "cfg.ddp.fsdp_double_buffer = True\n");
        fprintf(f, "cfg.ddp.nccl_ub = True\n");
    }
    /* Megatron Bridge's CommOverlapConfig.setup() (training/comm_overlap.py) writes its own
     * values over the overlap fields of cfg.model and cfg.ddp above where the recipe sets
     * cfg.comm_overlap (the 70B, 405B and GPT-3 recipes turn TP overlap on, the DeepSeek ones
     * the EP overlap off, and the DP overlaps default to on at dp > 1): one with the plan's
     * values, keeping the recipe's userbuffer shapes for TP overlap */
    fprintf(f, "from megatron.bridge.training.comm_overlap import CommOverlapConfig\n");
    fprintf(f, "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=%s, "
               "tp_comm_overlap_cfg=getattr(cfg.comm_overlap, \"tp_comm_overlap_cfg\", None), "
               "overlap_grad_reduce=%s, overlap_param_gather=%s",
            py_bool(l->tp_comm_overlap), py_bool(overlap_grad),
            py_bool(overlap_grad && l->overlap_param_gather && distopt));
    if (model_is_moe(m))
        fprintf(f, ", overlap_moe_expert_parallel_comm=%s, delay_wgrad_compute=%s",
                py_bool(t->moe_ep_overlap), py_bool(t->moe_ep_overlap));
    fprintf(f, ")\n");
    if (emit_megatron_max_connections(l, sys) > 0)
        fprintf(f, "# launch with CUDA_DEVICE_MAX_CONNECTIONS=1 in the environment (TP or CP > 1 "
                   "before Blackwell)\n");
    return emit_finish(f, &buf, out, err, errlen);
}
