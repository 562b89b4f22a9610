/*
 * layout.c — defaults and the framework rules of a layout (the enums' names: layout_names.c;
 * rank placement into NVLink domains: layout_place.c; the pipeline split: pp_split.c).
 *
 * The rules are DESIGN.md's "Framework rules" (from the Megatron-FSDP and FSDP2 documentation)
 * plus the divisibility Megatron-LM asserts in megatron/training/arguments.py and
 * megatron/core/parallel_state.py. Each failure names the rule and the fix.
 */
#include "layout.h"
#include "cuda_graphs.h"
#include "hf_eager_attn.h"
#include "hf_trainer_rules.h"
#include "recompute_modules.h"
#include "schedule.h"
#include "precision.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

training_spec training_default(void)
{
    return (training_spec){
        .seq_len = 4096,
        .global_batch = 1024,
        .attention = ATTENTION_FLASH,
        .grad_reduce_bf16 = false,
        .causal = true,
        .moe_imbalance = 1.0,
        .moe_capacity_factor = 0,
    };
}

layout layout_default(layout_framework fw)
{
    return (layout){
        .framework = fw,
        .tp = 1, .pp = 1, .dp = 1, .cp = 1, .ep = 1, .etp = 0, .vpp = 1, .mbs = 1,
        .sp = false,
        /* torchtitan shards with FSDP2 (data_parallel_shard_degree -1: every rank left) */
        .sharding = fw == FRAMEWORK_MEGATRON ? SHARDING_DISTOPT : SHARDING_FSDP,
        .reshard_after_forward = true,
        .shard_size = 0,
        .recompute = RECOMPUTE_NONE,
        .recompute_layers = 0,
        .offload = false,
        .tp_comm_overlap = false,
        .overlap_grad_reduce = false,
        .overlap_param_gather = false,
        .moe_dispatcher = MOE_DISPATCH_ALLTOALL,
    };
}

layout_pp_schedule layout_pp_schedule_of(const layout *l)
{
    if (l->pp_schedule != PP_SCHEDULE_DEFAULT) return l->pp_schedule;
    return l->vpp > 1 ? PP_SCHEDULE_INTERLEAVED_1F1B : PP_SCHEDULE_1F1B;
}

int layout_head_stage(const layout *l)
{
    layout_pp_schedule s = layout_pp_schedule_of(l);
    if (l->pp > 1 && (s == PP_SCHEDULE_ZBV || s == PP_SCHEDULE_DUALPIPEV)) return 0;
    return l->pp - 1;
}

bool layout_is_pytorch(const layout *l) { return l->framework != FRAMEWORK_MEGATRON; }
bool layout_cp_is_ring(const layout *l) { return l->framework != FRAMEWORK_FSDP2; }
bool layout_loss_compiled(const layout *l)
{
    return layout_is_pytorch(l) && l->compile && !l->loss_eager && l->tp == 1 &&
           layout_impl_of(l) == IMPL_NATIVE;
}

int layout_gpus(const layout *l) { return l->tp * l->pp * l->dp * l->cp; }
int layout_etp(const layout *l) { return l->etp > 0 ? l->etp : l->tp; }

int layout_impl_of(const layout *l)
{
    if (l->impl != IMPL_DEFAULT) return l->impl;
    /* torchtitan runs its own PyTorch-native model definitions (torchtitan/models/) */
    return l->framework == FRAMEWORK_FSDP2         ? IMPL_HF
           : l->framework == FRAMEWORK_TORCHTITAN ? IMPL_NATIVE
                                                   : IMPL_TE;
}

int layout_optimizer_impl_of(const layout *l)
{
    if (l->optimizer_impl != OPTIMIZER_IMPL_DEFAULT) return l->optimizer_impl;
    /* torchtitan: OptimizersContainer.Config.implementation defaults to "fused"
     * (torchtitan b5bcd76, torchtitan/components/optimizer/optimizer.py:109-111) */
    return l->framework == FRAMEWORK_FSDP2 ? OPTIMIZER_IMPL_FOREACH : OPTIMIZER_IMPL_FUSED;
}

int layout_microbatches(const layout *l, const training_spec *t)
{
    return t->global_batch / (l->dp * l->mbs);
}

int layout_shard_group(const layout *l)
{
    return l->shard_size > 0 ? l->shard_size : l->dp * l->cp;
}

int layout_expert_dp(const layout *l)
{
    return l->dp * l->cp * l->tp / (l->ep * layout_etp(l));
}

int layout_mtp_layers(const model_spec *m, const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && m->mtp_layers > 0 ? m->mtp_layers : 0;
}

cm_status training_check(const training_spec *t, char *err, size_t errlen)
{
    if (t->seq_len <= 0 || t->seq_len > 16 * 1024 * 1024)
        return cm_fail(err, errlen, CM_EINVAL,
                       "sequence length %d is out of range: give --seq between 1 and 16777216",
                       t->seq_len);
    if (t->global_batch <= 0 || t->global_batch > 100000000)
        return cm_fail(err, errlen, CM_EINVAL,
                       "global batch %d is out of range: give --gbs between 1 and 100000000 "
                       "sequences",
                       t->global_batch);
    return CM_OK;
}

/*
 * The rules, in the order layout_check() has always tested them. One engine serves both entry
 * points: layout_check() stops at the first failure (same message, same status as before),
 * layout_check_all() records every failure so `plan check` can list them all at once. A rule
 * that makes later arithmetic meaningless (non-positive or absurd sizes) stops both.
 */
typedef struct {
    bool all;                 /* record every failure (layout_check_all) */
    layout_violation *out;
    int max, n;
    cm_status first;
    char *err;
    size_t errlen;
} rule_sink;

/* Records one failure; returns true when the caller should stop checking. */

static bool rule_fail(rule_sink *s, cm_status code, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool rule_fail(rule_sink *s, cm_status code, const char *rule, const char *fmt, ...)
{
    /* the message is formatted only where it is kept: a search checks each listed layout
     * without a buffer and reads the verdict alone (speed22: 27 k formatted and dropped in
     * DeepSeek-V3's search at 16384 GPUs) */
    bool want_err = s->n == 0 && s->err && s->errlen, want_out = s->out && s->n < s->max;
    char msg[CM_ERRLEN];
    msg[0] = '\0';
    if (want_err || want_out) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    }
    if (s->n == 0) {
        s->first = code;
        if (want_err) snprintf(s->err, s->errlen, "%s", msg);
    }
    if (want_out) {
        layout_violation *v = &s->out[s->n];
        v->rule = rule;
        v->code = code;
        snprintf(v->message, sizeof v->message, "%s", msg);
    }
    s->n++;
    return !s->all;
}

#define FAIL(code, rule, ...)                                                                   \
    do {                                                                                        \
        if (rule_fail(s, code, rule, __VA_ARGS__)) return;                                      \
    } while (0)
#define FATAL(code, rule, ...)                                                                  \
    do {                                                                                        \
        rule_fail(s, code, rule, __VA_ARGS__);                                                  \
        return;                                                                                 \
    } while (0)

/*
 * torchtitan's own rules (issue 19), each from torchtitan b5bcd76 unless said otherwise. TP must
 * divide the attention and KV heads, CP the sequence (2*cp, the head-tail load balancer), EP the
 * experts: the shared rules above test those for every framework.
 */
static void check_torchtitan(const model_spec *m, const training_spec *t, const layout *l,
                             long micro, rule_sink *s)
{
    (void)micro;
    /* trainer.py:296-309 (Trainer.__init__): the tokens of a micro-batch must divide by tp
     * (with sequence parallel) x 2 cp (with CP): "The number of tokens per pipeline microbatch
     * ... must be divisible by ..." */
    long tokens_mb = (long)l->mbs * t->seq_len;
    long divisor = (l->sp ? l->tp : 1) * (l->cp > 1 ? 2L * l->cp : 1);
    if (tokens_mb % divisor)
        FAIL(CM_ERULE, "torchtitan-sp-tokens",
             "torchtitan needs a micro-batch's tokens (%ld) divisible by %ld (tp with sequence "
             "parallel x 2 cp, trainer.py Trainer.__init__): change --seq or --mbs",
             tokens_mb, divisor);
    /* a sequence past the shipped config's RoPE context is the emitter's to say
     * (emit_torchtitan.c): an older torchtitan, or the user's own config, accepts it */
    /* torchtitan/models/llama3/parallelize.py applies fully_shard over dp_shard x cp (HSDP
     * with dp_replicate); plain DDP only without any other parallelism */
    if (l->sharding != SHARDING_FSDP)
        FAIL(CM_ERULE, "torchtitan-shards-with-fsdp",
             "torchtitan shards parameters with FSDP2 (HSDP with --shard-size): use "
             "--sharding fsdp");
    /* torchtitan/distributed/parallel_dims.py: the FSDP mesh is dp_shard x cp, dp_replicate
     * outside it, so a shard group holds whole CP groups */
    if (l->shard_size > 0 && l->shard_size % l->cp)
        FAIL(CM_ERULE, "torchtitan-hsdp-covers-cp",
             "torchtitan's FSDP mesh is data_parallel_shard_degree x context_parallel_degree: the "
             "HSDP shard size (%d) must be a multiple of cp (%d)",
             l->shard_size, l->cp);
    /* parallel_dims.py _validate: expert_parallel_degree must divide dp_shard * cp * tp; EP
     * borrows ranks from FSDP and TP (config/configs.py expert_parallel_degree), and there is
     * no separate expert TP degree: an expert is whole on its rank */
    if (l->ep > 1 && layout_etp(l) != 1)
        FAIL(CM_ERULE, "torchtitan-expert-tp",
             "torchtitan's expert parallelism borrows ranks from FSDP and TP and keeps each "
             "expert whole (no expert TP degree, config/configs.py): set --etp 1 with --ep %d",
             l->ep);
    /* models/common/config_utils.py build_token_dispatcher_config (b5bcd76): the comm
     * backends are standard (all-to-all), deepep, hybridep and minimal_async_ep; no
     * all-gather dispatcher (cfg21: it was priced and the command ran all-to-all) */
    if (l->ep > 1 && l->moe_dispatcher == MOE_DISPATCH_ALLGATHER)
        FAIL(CM_ERULE, "torchtitan-no-allgather-dispatch",
             "torchtitan has no all-gather MoE dispatcher (its moe_comm_backend: standard "
             "all-to-all, deepep, hybridep; models/common/config_utils.py): use --moe-dispatcher "
             "alltoall, deepep or hybridep");
    if (l->ep > 1 && l->shard_size > 0 && ((long)l->shard_size * l->tp) % l->ep)
        FAIL(CM_ERULE, "torchtitan-ep-within-shard",
             "expert_parallel_degree %d must divide dp_shard * cp * tp = %ld "
             "(torchtitan/distributed/parallel_dims.py): lower --ep or raise --shard-size",
             l->ep, (long)l->shard_size * l->tp);
    /* config/configs.py CompileConfig.__post_init__: "Async TP requires 'model' in
     * --compile.components and --compile.enable"; the micro-pipeline TP pass rewrites the
     * all-gather -> matmul and matmul -> reduce-scatter pairs of sequence-parallel TP */
    if (l->async_tp && (!l->compile || l->tp < 2 || !l->sp))
        FAIL(CM_ERULE, "async-tp-needs-compile",
             "async TP (--async-tp) is an Inductor pass over sequence-parallel TP collectives: it "
             "needs --compile, --tp > 1 and --sp (torchtitan config/configs.py)");
    /* pipeline_parallel.py _generate_llm_fqn_per_model_part (pp_split.c): the split must be
     * one torchtitan's first/last_stage_less_layers (>= 0) produce, and the stage count one
     * its keys reach: the schedule's default stages a rank (1, or 2 for multi-stage
     * schedules, _get_pipeline_metadata) or ceil(E / pipeline_parallel_layers_per_stage) */
    if (l->pp >= 2 && m->layers >= l->pp) {
        int a, b, S;
        layout_pp_schedule sch = layout_pp_schedule_of(l);
        int spr = sch == PP_SCHEDULE_1F1B || sch == PP_SCHEDULE_GPIPE ? 1 : 2;
        if (!layout_titan_split_keys(m, l, &a, &b, &S))
            FAIL(CM_ERULE, "torchtitan-uneven-less",
                 "torchtitan splits %d layers over %d stages from first/last_stage_less_layers "
                 ">= 0 (distributed/pipeline_parallel.py): this split is not one it makes (the "
                 "first stage at most one layer above the fullest middle one, the last at most "
                 "the emptiest middle one's, each at least 0): change --pp-first-layers / "
                 "--pp-last-layers or --vpp",
                 m->layers, S);
        else if ((l->vpp > 1 ? l->vpp : 1) != spr && !layout_titan_layers_per_stage(m, l))
            FAIL(CM_ERULE, "torchtitan-stages-unreachable",
                 "torchtitan reaches %d stages (vpp %d) only through "
                 "pipeline_parallel_layers_per_stage k, ceil((%d + %d + %d) / k) stages, and no "
                 "k gives %d: choose another --vpp, or --pp-first-layers / --pp-last-layers",
                 S, l->vpp, m->layers, a, b, S);
    }
    /* models/common/decoder.py (update_from_config): "Weight tying is not supported with
     * Pipeline Parallel" (NotImplementedError), the embedding and the output layer being on
     * different stages */
    if (m->tied_embeddings && l->pp > 1)
        FAIL(CM_ERULE, "torchtitan-tied-no-pp",
             "torchtitan refuses pipeline parallelism for a model with tied embeddings "
             "(models/common/decoder.py: weight tying is not supported with pipeline parallel): "
             "use --pp 1, or a config.json with tie_word_embeddings false");
    /* activation_checkpoint.py applies a policy to every transformer block: no layer count */
    if (l->recompute_layers > 0)
        FAIL(CM_ERULE, "torchtitan-recompute-every-block",
             "torchtitan checkpoints every transformer block (activation_checkpoint.py): drop "
             "--recompute-layers");
    if (l->overlap_grad_reduce || l->overlap_param_gather)
        FAIL(CM_ERULE, "torchtitan-no-megatron-overlap",
             "--overlap-grad-reduce / --overlap-param-gather are Megatron's; torchtitan's FSDP2 "
             "prefetches and reduce-scatters per block by itself: drop them");
}

/* The pipeline schedule's rules (torch.distributed.pipelining, pytorch 1fd7abc
 * torch/distributed/pipelining/schedules.py; torchtitan b5bcd76
 * torchtitan/distributed/pipeline_parallel.py). */
static void check_pp_schedule(const layout *l, long micro, bool batch_divides, rule_sink *s)
{
    layout_pp_schedule sched = layout_pp_schedule_of(l);
    const char *name = layout_pp_schedule_name(sched);
    if (l->async_tp && l->framework != FRAMEWORK_TORCHTITAN)
        FAIL(CM_ERULE, "async-tp-needs-compile",
             "--async-tp is torchtitan's (compile.enable_async_tensor_parallel): use "
             "--framework torchtitan, or --tp-comm-overlap under Megatron");
    /* the rotate method is PyTorch's context parallelism (cp_allgather.h) */
    if (l->cp_rotate_alltoall && l->framework != FRAMEWORK_TORCHTITAN)
        FAIL(CM_ERULE, "cp-rotate-torchtitan",
             "--cp-rotate is PyTorch's context parallelism (set_rotate_method), which torchtitan "
             "runs: use --framework torchtitan, or drop it (Megatron's CP is its own ring)");
    if (l->loss_eager && (!l->compile || !layout_is_pytorch(l))) /* configs.py CompileConfig */
        FAIL(CM_ERULE, "compile-components-needs-compile", "--compile-components says what "
             "torch.compile takes (torchtitan's compile.components): give it with --compile");
    if (l->pp_schedule == PP_SCHEDULE_DEFAULT) return;
    if (l->framework != FRAMEWORK_TORCHTITAN && sched != PP_SCHEDULE_1F1B &&
        sched != PP_SCHEDULE_INTERLEAVED_1F1B)
        FAIL(CM_ERULE, "pp-schedule-framework",
             "the %s schedule is torch.distributed.pipelining's: use --framework torchtitan, or "
             "--pp-schedule 1F1B / Interleaved1F1B",
             name);
    if (l->pp < 2 && sched != PP_SCHEDULE_1F1B)
        FAIL(CM_ERULE, "pp-schedule-needs-pp",
             "--pp-schedule %s needs a pipeline: raise --pp or drop --pp-schedule", name);
    /* pipeline_parallel.py _get_pipeline_metadata: single-stage schedules run 1 stage per rank,
     * multi-stage ones at least 2; _get_pp_rank_to_stage_indices_mapping and schedules.py: "v"
     * schedules exactly 2 */
    if ((sched == PP_SCHEDULE_1F1B || sched == PP_SCHEDULE_GPIPE) && l->vpp != 1)
        FAIL(CM_ERULE, "pp-schedule-stages",
             "%s is a single-stage schedule (one stage per rank): set --vpp 1, or use "
             "--pp-schedule Interleaved1F1B",
             name);
    if (sched == PP_SCHEDULE_INTERLEAVED_1F1B && l->vpp < 2)
        FAIL(CM_ERULE, "pp-schedule-stages",
             "Interleaved1F1B is a multi-stage schedule and needs at least 2 stages per rank "
             "(torchtitan pipeline_parallel.py): set --vpp 2 or more");
    if ((sched == PP_SCHEDULE_ZBV || sched == PP_SCHEDULE_DUALPIPEV) && l->vpp != 2)
        FAIL(CM_ERULE, "pp-schedule-stages",
             "%s places exactly 2 stages on each rank in a V (schedules.py): set --vpp 2", name);
    /* schedules.py _check_torch_compile_compatibility: the split input/weight backward of the
     * zero-bubble V schedules refuses compiled stage modules */
    if ((sched == PP_SCHEDULE_ZBV || sched == PP_SCHEDULE_DUALPIPEV) && l->compile)
        FAIL(CM_ERULE, "pp-schedule-no-compile",
             "the %s schedule is not supported with torch.compile'd stages "
             "(torch.distributed.pipelining splits their backward): drop --compile or use "
             "Interleaved1F1B",
             name);
    /* ScheduleDualPipeV.__init__: "requires at least as many microbatches as stages" */
    if (batch_divides && sched == PP_SCHEDULE_DUALPIPEV && micro < 2L * l->pp)
        FAIL(CM_ERULE, "dualpipev-microbatches",
             "DualPipeV needs at least as many micro-batches (%ld) as stages (2*pp = %d): raise "
             "--gbs or lower --mbs",
             micro, 2 * l->pp);
}

/* The one rule of check_rules that reads a precision field (layout_check_precision). */
static bool fp8_delayed_recompute_conflict(const layout *l)
{
    return (l->recompute_modules & (RECOMPUTE_MOD_MOE_ACT | RECOMPUTE_MOD_LAYERNORM)) &&
           l->precision == PRECISION_FP8 &&
           precision_fp8_recipe_resolved(l) == FP8_RECIPE_DELAYED;
}

static void check_rules(const model_spec *m, const training_spec *t, const layout *l, int gpus,
                        rule_sink *s)
{
    const int big = 1 << 20;
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->cp < 1 || l->ep < 1 || l->vpp < 1 ||
        l->mbs < 1 || l->etp < 0 || l->shard_size < 0 || l->recompute_layers < 0)
        FATAL(CM_EINVAL, "sizes",
              "layout sizes must be positive integers (tp %d, pp %d, dp %d, cp %d, ep "
              "%d, vpp %d, mbs %d): fix the flag",
              l->tp, l->pp, l->dp, l->cp, l->ep, l->vpp, l->mbs);
    if (l->tp > big || l->pp > big || l->dp > big || l->cp > big || l->ep > big ||
        l->vpp > big || l->mbs > big || l->etp > big || l->shard_size > big ||
        l->recompute_layers > big)
        FATAL(CM_EINVAL, "sizes", "layout sizes above %d are absurd: fix the flag", big);
    /* Each size is at most 2^20, but their products overflow an int: bound the GPU count first
     * so every product below is exact. */
    long span = (long)l->tp * l->pp * l->dp * l->cp;
    if (span > 10000000)
        FATAL(CM_EINVAL, "sizes",
              "tp*pp*dp*cp = %ld GPUs is absurd (more than 10000000): fix the sizes", span);
    if (gpus > 0 && span != gpus)
        FAIL(CM_EINVAL, "gpu-count",
             "tp*pp*dp*cp = %d*%d*%d*%d = %ld does not equal --gpus %d: choose sizes "
             "whose product is the GPU count",
             l->tp, l->pp, l->dp, l->cp, span, gpus);
    if (m->heads % l->tp || m->kv_heads % l->tp)
        FAIL(CM_ERULE, "tp-divides-heads",
             "tensor parallel size %d must divide the attention heads (%d) and KV "
             "groups (%d): pick a tp that divides both",
             l->tp, m->heads, m->kv_heads);
    if (hf_eager_flash_refused(m, t, l)) /* hf_eager_attn.h */
        FAIL(CM_ERULE, "hf-no-sdpa",
             "transformers has no SDPA (flash) attention for model_type %s (its class sets "
             "_supports_sdpa = False): under --impl hf it trains with eager attention; drop "
             "--attention flash or give --attention unfused",
             m->hf_model_type);
    if (layout_impl_of(l) == IMPL_HF && l->recompute == RECOMPUTE_FULL &&
        hf_rotary_tables_fp32(m->hf_model_type)) /* hf_trainer_rules.h */
        FAIL(CM_ERULE, "hf-fp32-rope-full-recompute",
             "transformers' %s hands its layers fp32 rotary tables, and under FSDP2's bf16 mixed "
             "precision full (non-reentrant) recompute fails the first step (CheckpointError on "
             "the rotary tables): use --recompute none or selective",
             m->hf_model_type);
    if (l->pp > m->layers)
        FAIL(CM_ERULE, "pp-fits-layers", "pipeline size %d exceeds the %d layers: use pp <= %d",
             l->pp, m->layers, m->layers);
    if (l->pp_first_layers < 0 || l->pp_last_layers < 0 || l->pp_first_layers > big ||
        l->pp_last_layers > big)
        FATAL(CM_EINVAL, "sizes", "--pp-first-layers / --pp-last-layers must be between 0 and %d",
              big);
    if (l->pp_first_layers > 0 || l->pp_last_layers > 0) {
        int fixed = (l->pp_first_layers > 0) + (l->pp_last_layers > 0);
        long rest = (long)m->layers - l->pp_first_layers - l->pp_last_layers;
        int middle = l->pp - fixed;
        if (l->pp < 2 || (l->vpp > 1 && l->framework == FRAMEWORK_FSDP2))
            FAIL(CM_ERULE, "uneven-pp-needs-pp",
                 "--pp-first-layers / --pp-last-layers set the first and last of pp >= 2 stages "
                 "(Megatron's --pipeline-model-parallel-layout, torchtitan's first/last_stage_"
                 "less_layers): drop them, or set --pp >= 2 under megatron or torchtitan");
        else if (l->framework == FRAMEWORK_TORCHTITAN) {
            /* the first and last VIRTUAL stage; the rest as even as it goes, at least one
             * layer a stage (pp_split.c; check_torchtitan tests torchtitan's own rule) */
            int S = l->pp * (l->vpp > 1 ? l->vpp : 1);
            if (rest < S - fixed)
                FAIL(CM_ERULE, "uneven-pp-divides",
                     "%d layers less %d on the first and %d on the last stage leave %ld for the "
                     "%d other virtual stage(s), fewer than one each: change the counts",
                     m->layers, l->pp_first_layers, l->pp_last_layers, rest, S - fixed);
        } else if (middle == 0 ? rest != 0 : (rest < middle || rest % middle))
            FAIL(CM_ERULE, "uneven-pp-divides",
                 "%d layers less %d on the first and %d on the last stage leave %ld for the %d "
                 "other stage(s), which must split evenly with at least one each "
                 "(Megatron-LM arguments.py; torchtitan pipeline_parallel.py): change the counts",
                 m->layers, l->pp_first_layers, l->pp_last_layers, rest, middle);
    }
    if (l->vpp > 1) {
        if (l->pp < 2)
            FAIL(CM_ERULE, "vpp-needs-pp",
                 "virtual pipeline stages (vpp %d) need pp >= 2: set --vpp 1 or raise "
                 "--pp",
                 l->vpp);
        /* An uneven split under Megatron is written as --pipeline-model-parallel-layout, whose
         * virtual stages need not be equal (pipeline_parallel_layer_layout.py): each rank's
         * layers go to its vpp chunks, every chunk but the one holding the embedding (rank
         * 0) or the loss (last rank) with at least one decoder layer (Megatron-Bridge's H100
         * DeepSeek-V3 recipe: "Et|(tt|)*30mL"; Llama-3.1-405B's account-for-embedding/loss
         * split, 15/16.../15 layers over pp 8 x vpp 8, is the same thing). */
        if (l->framework == FRAMEWORK_MEGATRON && (l->pp_first_layers > 0 || l->pp_last_layers > 0)) {
            for (int st = 0; st < l->pp; st++) {
                int n = layout_stage_layers(m, l, st), need = l->vpp;
                if (st == 0 || st == l->pp - 1) need = l->vpp - 1 > 0 ? l->vpp - 1 : 1;
                if (n < need)
                    FAIL(CM_ERULE, "uneven-vpp-chunks",
                         "pipeline stage %d holds %d layer(s), fewer than its %d virtual stages "
                         "need (one decoder layer per chunk; the first and last stage may leave "
                         "the chunk with the embedding / loss empty): lower --vpp or change "
                         "--pp-first-layers / --pp-last-layers",
                         st, n, need);
            }
        } else if (l->framework != FRAMEWORK_TORCHTITAN && m->layers % ((long)l->pp * l->vpp))
            /* torchtitan splits unevenly (pp_split.c; its rules in check_torchtitan) */
            FAIL(CM_ERULE, "vpp-divides-layers",
                 "the interleaved schedule needs layers (%d) divisible by pp*vpp = %ld "
                 "(Megatron-LM arguments.py): change --vpp or --pp",
                 m->layers, (long)l->pp * l->vpp);
    }
    long dp_mbs = (long)l->dp * l->mbs;
    bool batch_divides = t->global_batch % dp_mbs == 0;
    if (!batch_divides)
        FAIL(CM_EINVAL, "batch-divisible",
             "global batch %d is not divisible by dp*mbs = %d*%d: change --gbs, --dp "
             "or --mbs",
             t->global_batch, l->dp, l->mbs);
    long micro = t->global_batch / dp_mbs;
    layout_pp_schedule sched = layout_pp_schedule_of(l);
    /* torchtitan runs torch's ScheduleInterleaved1F1B, which needs the micro-batch count
     * divisible only by its rounds, max(1, m / pp) (schedule.h schedule_pipeline_torch, the
     * order the simulator runs; torchtitan b5bcd76 distributed/pipeline_parallel.py:305 only
     * warns below pp x vpp): 10 micro-batches on pp 4 run there, not under Megatron */
    long rounds = schedule_torch_rounds(l->pp, micro);
    if (batch_divides && l->vpp > 1 && sched == PP_SCHEDULE_INTERLEAVED_1F1B &&
        l->framework == FRAMEWORK_TORCHTITAN && micro % rounds)
        FAIL(CM_ERULE, "vpp-microbatches",
             "torch's interleaved 1F1B needs the micro-batch count (%ld) divisible by its "
             "rounds, max(1, micro-batches / pp) = %ld (torch.distributed.pipelining "
             "ScheduleInterleaved1F1B): change --gbs or --mbs",
             micro, rounds);
    else if (batch_divides && l->vpp > 1 && sched == PP_SCHEDULE_INTERLEAVED_1F1B &&
             l->framework != FRAMEWORK_TORCHTITAN && micro % l->pp)
        FAIL(CM_ERULE, "vpp-microbatches",
             "the interleaved schedule needs the micro-batch count (%ld) divisible by "
             "pp (%d) (Megatron-LM schedules.py): change --gbs or --mbs",
             micro, l->pp);
    if (l->sp && l->tp == 1)
        FAIL(CM_ERULE, "sp-needs-tp",
             "sequence parallel shards activations across the TP group and needs tp > "
             "1: drop --sp or raise --tp");
    if (l->cp > 1 && t->seq_len % (2L * l->cp))
        FAIL(CM_ERULE, "cp-divides-seq",
             "context parallel %d needs the sequence length (%d) divisible by 2*cp "
             "(load-balanced causal split): change --seq or --cp",
             l->cp, t->seq_len);
    if (l->ep > 1 && !model_is_moe(m))
        FAIL(CM_ERULE, "ep-needs-moe",
             "expert parallel size %d needs an MoE model; '%s' is dense: use --ep 1", l->ep,
             m->name);
    if (model_is_moe(m) && l->tp > 1 && !l->sp && l->framework == FRAMEWORK_MEGATRON)
        FAIL(CM_ERULE, "moe-tp-needs-sp",
             "Megatron requires sequence parallel when an MoE model uses tensor "
             "parallelism (arguments.py): add --sp");
    if (model_is_moe(m) && m->experts % l->ep)
        FAIL(CM_ERULE, "ep-divides-experts",
             "expert parallel size %d must divide the %d experts: pick a divisor", l->ep,
             m->experts);
    /* Megatron keeps add_bias_linear on (emit.c) for a model with biases on its output and MLP
     * matrices; with MoE experts that needs ETP 1 (transformer_config.py at d98e8a6, line 2614:
     * "Bias in Moe is only supported when ETP==1") */
    bool bias_linear = m->out_bias || (m->attn_out_bias && (m->mlp_bias || m->expert_bias));
    if (l->framework == FRAMEWORK_MEGATRON && model_is_moe(m) && bias_linear &&
        layout_etp(l) != 1)
        FAIL(CM_ERULE, "moe-bias-needs-etp1",
             "'%s' keeps biases on its linear layers (Megatron --add-bias-linear), which "
             "Megatron's MoE supports only with expert TP 1: set --etp 1",
             m->name);
    long ep_etp = (long)l->ep * layout_etp(l);
    if (((long)l->dp * l->cp * l->tp) % ep_etp)
        FAIL(CM_ERULE, "ep-within-dp",
             "ep*etp = %d*%d must divide tp*cp*dp = %d (in Megatron the expert-"
             "parallel group is carved out of the data-parallel ranks): lower --ep",
             l->ep, layout_etp(l), l->dp * l->cp * l->tp);
    /* Megatron's combined 1F1B runs only with PP 1 or the interleaved schedule
     * (megatron/core/pipeline_parallel/combined_1f1b.py; MoE README "EP A2A overlap") */
    if (t && t->moe_ep_overlap && l->framework == FRAMEWORK_MEGATRON && l->pp > 1 && l->vpp < 2)
        FAIL(CM_ERULE, "moe-ep-overlap-needs-vpp",
             "--moe-ep-overlap (Megatron --overlap-moe-expert-parallel-comm) pairs micro-batches "
             "in the combined 1F1B schedule, which runs with pp 1 or virtual pipeline stages: "
             "add --vpp or drop --moe-ep-overlap");
    /* Megatron-Core MoE README, "Shared Experts": the overlap needs the alltoall dispatcher */
    if (t && t->moe_shared_overlap && l->framework == FRAMEWORK_MEGATRON &&
        l->moe_dispatcher != MOE_DISPATCH_ALLTOALL)
        FAIL(CM_ERULE, "moe-shared-overlap-needs-alltoall",
             "--moe-shared-expert-overlap runs beside the alltoall dispatcher only (Megatron-Core "
             "MoE README): use --moe-dispatcher alltoall or drop the overlap");
    /* torchtitan's GroupedExperts(use_grouped_mm=False) loop (expert_loop.h): torchtitan's eager
     * MoE code only */
    if (t && t->moe_expert_loop &&
        (l->framework != FRAMEWORK_TORCHTITAN || l->compile || l->tp > 1 || l->cp > 1))
        FAIL(CM_ERULE, "moe-expert-loop-needs-torchtitan",
             "--moe-expert-loop prices torchtitan's per-expert loop (use_grouped_mm off), which "
             "this layout does not run: use --framework torchtitan without --compile, tp 1 and "
             "cp 1, or drop --moe-expert-loop");
    if (l->shard_size > 0) {
        if (l->sharding == SHARDING_DDP)
            FAIL(CM_ERULE, "hsdp-needs-sharding",
                 "a shard group (HSDP) needs --sharding distopt or fsdp, not ddp");
        if ((l->dp * l->cp) % l->shard_size)
            FAIL(CM_ERULE, "hsdp-divides-dp",
                 "HSDP shard size %d must divide dp*cp = %d: pick a divisor", l->shard_size,
                 l->dp * l->cp);
    }
    /* Megatron-FSDP's CPU offload only (DESIGN.md "Framework rules"): PyTorch FSDP2's
     * CPUOffloadPolicy works with activation checkpointing (the FSDP2 guide recommends the two
     * together; torchtitan's --training.enable_cpu_offload composes with
     * --activation_checkpoint), so the fsdp2 and torchtitan paths are not held to it. */
    if (l->offload && !layout_is_pytorch(l) && (l->pp != 1 || l->recompute != RECOMPUTE_NONE))
        FAIL(CM_ERULE, "offload-pp1-no-recompute",
             "CPU offload is valid only with pipeline size 1 and no activation "
             "recompute: set --pp 1 and --recompute none, or drop --offload");
    if (l->offload && l->sharding != SHARDING_FSDP)
        FAIL(CM_ERULE, "offload-needs-fsdp",
             "CPU offload moves FSDP shards to the host: use --sharding fsdp");
    /* Megatron CPU offload (offload.h): HybridDeviceOptimizer wraps the distributed
     * optimizer's shard; TransformerConfig rejects --cpu-offloading with pp > 1 or recompute */
    if (l->optimizer_offload_pct < 0 || l->optimizer_offload_pct > 100)
        FAIL(CM_EINVAL, "optimizer-offload-fraction",
             "--optimizer-offload-fraction must be between 0 and 1");
    if (l->optimizer_offload_pct > 0 &&
        (l->framework != FRAMEWORK_MEGATRON || l->sharding != SHARDING_DISTOPT))
        FAIL(CM_ERULE, "optimizer-offload-needs-distopt",
             "--optimizer-cpu-offload offloads Megatron's distributed-optimizer shard: use "
             "--framework megatron --sharding distopt, or drop it");
    if (l->activation_offload && (l->framework != FRAMEWORK_MEGATRON || l->pp != 1 ||
                                  l->recompute != RECOMPUTE_NONE))
        FAIL(CM_ERULE, "activation-offload-pp1-no-recompute",
             "--activation-offload (Megatron --cpu-offloading) needs --framework megatron, "
             "--pp 1 and --recompute none (Megatron-Core TransformerConfig)");
    if (l->activation_offload_layers > 0 && !l->activation_offload)
        FAIL(CM_ERULE, "activation-offload-layers-needs-offload",
             "activation_offload_layers %d is set without activation_offload: set "
             "activation_offload true (--activation-offload-layers N sets both)",
             l->activation_offload_layers);
    /* TransformerConfig (d98e8a6): cpu_offloading_num_layers in [0, num_layers); Transformer
     * Engine's default schedule keeps the last layer on the GPU */
    if (l->activation_offload && l->activation_offload_layers >= m->layers)
        FAIL(CM_ERULE, "activation-offload-layers-below-layers",
             "--activation-offload-layers %d must be below the model's %d decoder layers "
             "(Megatron-Core offloads at most all but the last): lower it",
             l->activation_offload_layers, m->layers);
    if (l->framework == FRAMEWORK_FSDP2) {
        if (l->tp != 1 || l->pp != 1 || l->ep != 1 || l->vpp != 1)
            FAIL(CM_ERULE, "fsdp2-no-model-parallel",
                 "the FSDP2 trainer path has no TP/PP/EP (tp %d, pp %d, ep %d): use "
                 "--framework megatron or torchtitan for model parallelism, or set them to 1",
                 l->tp, l->pp, l->ep);
        if (l->sp)
            FAIL(CM_ERULE, "fsdp2-sp-is-ulysses",
                 "FSDP2's sequence parallelism is Ulysses, given as --cp; Megatron "
                 "--sp does not apply: drop --sp");
        if (l->sharding != SHARDING_FSDP)
            FAIL(CM_ERULE, "fsdp2-shards-with-fsdp",
                 "the FSDP2 trainer path shards with FSDP: use --sharding fsdp");
        if (l->recompute == RECOMPUTE_SELECTIVE)
            FAIL(CM_ERULE, "fsdp2-recompute-full",
                 "FSDP2 gradient checkpointing recomputes whole layers: use "
                 "--recompute full or none");
        if (l->cp > 1 && (m->heads % l->cp || m->kv_heads % l->cp))
            FAIL(CM_ERULE, "ulysses-divides-heads",
                 "Ulysses sequence parallel %d must divide the heads (%d) and KV "
                 "groups (%d): pick a divisor",
                 l->cp, m->heads, m->kv_heads);
    }
    if (l->framework == FRAMEWORK_TORCHTITAN) check_torchtitan(m, t, l, micro, s);
    check_pp_schedule(l, micro, batch_divides, s);
    /* Megatron-LM arguments.py validate_args: tp_comm_overlap asserts sequence_parallel (which
     * it turns off at tp 1); overlap_param_gather asserts the distributed optimizer (or
     * Megatron-FSDP) and overlap_grad_reduce. */
    if (l->tp_comm_overlap && (l->framework != FRAMEWORK_MEGATRON || l->tp == 1 || !l->sp))
        FAIL(CM_ERULE, "tp-comm-overlap-needs-sp",
             "--tp-comm-overlap (Transformer Engine userbuffers) needs Megatron with tp > 1 and "
             "sequence parallel (arguments.py): add --sp and --tp > 1, or drop it");
    if (l->overlap_param_gather && l->sharding == SHARDING_DDP)
        FAIL(CM_ERULE, "param-gather-needs-distopt",
             "--overlap-param-gather is only supported with the distributed optimizer or "
             "Megatron-FSDP (arguments.py): use --sharding distopt, or drop it");
    if (l->overlap_param_gather && !l->overlap_grad_reduce)
        FAIL(CM_ERULE, "param-gather-needs-grad-reduce",
             "Megatron requires --overlap-grad-reduce with --overlap-param-gather "
             "(arguments.py): add --overlap-grad-reduce");
    /* a layer count is full recompute's (transformer_config.py d98e8a6 l.1927: with selective
     * "recompute_num_layers must be None"); past a stage's layers it was printed as given */
    if (l->recompute_layers > 0 && l->recompute != RECOMPUTE_FULL)
        FAIL(CM_ERULE, "recompute-layers-need-full",
             "--recompute-layers counts the layers of full recompute: add --recompute full, or "
             "drop it");
    if (l->recompute_layers > 0 && s->n == 0 && l->recompute_layers > layout_max_stage_layers(m, l))
        FAIL(CM_EINVAL, "recompute-layers-fit-stage",
             "--recompute-layers %d is more than the %d layers of the fullest pipeline stage: "
             "give 1 to %d, or drop it to recompute every layer",
             l->recompute_layers, layout_max_stage_layers(m, l), layout_max_stage_layers(m, l));
    /* Megatron's selective recompute by module (recompute_modules.h; transformer_config.py
     * __post_init__ at d98e8a6) */
    if (l->recompute_modules) {
        unsigned mods = l->recompute_modules;
        bool moe = model_is_moe(m);
        if (l->framework != FRAMEWORK_MEGATRON || l->recompute != RECOMPUTE_SELECTIVE)
            FAIL(CM_ERULE, "recompute-modules-need-selective",
                 "--recompute-modules is Megatron's selective recompute: use --framework "
                 "megatron --recompute selective, or drop it");
        if ((mods & (RECOMPUTE_MOD_MOE_ACT | RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_SHARED_EXPERTS)) &&
            !moe)
            FAIL(CM_ERULE, "recompute-modules-need-moe",
                 "moe, moe_act and shared_experts recompute MoE layers, which %s does not "
                 "have: drop them from --recompute-modules",
                 m->display[0] ? m->display : m->name);
        if ((mods & RECOMPUTE_MOD_SHARED_EXPERTS) && moe && !m->shared_experts)
            FAIL(CM_ERULE, "recompute-modules-need-moe",
                 "shared_experts recomputes the shared experts, which %s does not have: drop "
                 "it from --recompute-modules",
                 m->display[0] ? m->display : m->name);
        if ((mods & RECOMPUTE_MOD_MLA_UP_PROJ) && !m->mla)
            FAIL(CM_ERULE, "recompute-mla-up-proj-needs-mla",
                 "mla_up_proj in recompute_modules is only supported with multi-latent "
                 "attention (transformer_config.py): drop it for %s",
                 m->display[0] ? m->display : m->name);
        if ((mods & RECOMPUTE_MOD_SHARED_EXPERTS) && t->moe_shared_overlap)
            FAIL(CM_ERULE, "recompute-shared-not-with-overlap",
                 "shared_experts recompute cannot work with --moe-shared-expert-overlap "
                 "(transformer_config.py): drop one");
        if ((mods & RECOMPUTE_MOD_MOE) && t->moe_ep_overlap)
            FAIL(CM_ERULE, "recompute-moe-not-with-ep-overlap",
                 "disable moe in recompute_modules when enabling "
                 "overlap_moe_expert_parallel_comm (transformer_config.py): drop moe or "
                 "--moe-ep-overlap");
        if (fp8_delayed_recompute_conflict(l))
            FAIL(CM_ERULE, "recompute-modules-fp8-delayed",
                 "delayed scaling does not support moe_act and layernorm recompute for fp8 "
                 "(transformer_config.py): use --fp8-recipe tensorwise or blockwise");
    }
    /* megatron/core/optimizer/__init__.py: "--use-precision-aware-optimizer only supported with
     * distributed optimizer" (Megatron-FSDP runs it too) */
    if (l->optimizer_bf16_states &&
        (l->framework != FRAMEWORK_MEGATRON || l->sharding == SHARDING_DDP))
        FAIL(CM_ERULE, "bf16-optimizer-states-need-distopt",
             "--bf16-optimizer-states is Megatron's precision-aware optimizer, which needs the "
             "distributed optimizer: use --framework megatron --sharding distopt (or fsdp)");
    /* Megatron's loss fusion (language_module.py at d98e8a6: cross_entropy_fusion_impl 'te'
     * calls Transformer Engine's parallel_cross_entropy); the other frameworks run their own */
    if (l->cuda_graph_full_iteration && l->framework != FRAMEWORK_MEGATRON)
        FAIL(CM_ERULE, "cuda-graph-full-iteration-megatron-only",
             "--cuda-graph-full-iteration is Megatron's full-iteration CUDA graph "
             "(cuda_graph_impl full_iteration): use --framework megatron, or leave it out");
    if (l->moe_dispatcher_sms != 0 &&
        (l->framework != FRAMEWORK_MEGATRON || l->ep <= 1 ||
         (l->moe_dispatcher != MOE_DISPATCH_DEEPEP && l->moe_dispatcher != MOE_DISPATCH_HYBRIDEP) ||
         l->moe_dispatcher_sms < 1 || l->moe_dispatcher_sms > 256))
        FAIL(CM_ERULE, "dispatcher-sms-need-flex",
             "--moe-dispatcher-sms N is the SMs of Megatron's flex dispatcher (1-256): it needs "
             "--framework megatron, --ep above 1 and --moe-dispatcher deepep or hybridep");
    { /* torchtitan's CUDA graphs asked for where torchtitan refuses them (cuda_graphs.c says
       * which source each rule comes from) */
        const char *rule = NULL;
        char msg[CM_ERRLEN];
        if (cuda_graphs_rule(l, &rule, msg, sizeof msg)) FAIL(CM_ERULE, rule, "%s", msg);
    }
    if (l->cuda_graph_attn && l->framework != FRAMEWORK_MEGATRON)
        FAIL(CM_ERULE, "cuda-graph-attn-megatron-only",
             "--cuda-graph-attn is Megatron's per-layer CUDA graph of the attention block "
             "(cuda_graph_scope attn): use --framework megatron, or leave it out");
    if (l->rms_norm_unfused && layout_impl_of(l) != IMPL_NATIVE)
        FAIL(CM_ERULE, "rms-norm-unfused-native-only",
             "--rms-norm-unfused is torchtitan 2024's own RMSNorm (native layer code): use "
             "--framework torchtitan (or --impl native), or leave it out");
    if (l->moe_expert_padding &&
        (l->framework != FRAMEWORK_MEGATRON || l->moe_dispatcher != MOE_DISPATCH_DEEPEP))
        FAIL(CM_ERULE, "moe-expert-padding-deepep-only", "--moe-expert-padding is Megatron-Core's "
             "padding behind DeepEP before 2edffadb: use --moe-dispatcher deepep, or leave it out");
    if (l->rope_unfused && l->framework != FRAMEWORK_MEGATRON)
        FAIL(CM_ERULE, "no-rope-fusion-megatron-only",
             "--no-rope-fusion is Megatron's eager RoPE (apply_rope_fusion off): use --framework "
             "megatron, or leave it out");
    if (l->te_cross_entropy && l->framework != FRAMEWORK_MEGATRON)
        FAIL(CM_ERULE, "te-cross-entropy-megatron-only",
             "--te-cross-entropy is Megatron's fused cross entropy (Transformer Engine's kernel): "
             "use --framework megatron, or leave it out");
    { /* the rank order's rules (layout_place.c says where each comes from), ZeRO-2's */
        const char *rule = NULL; char msg[CM_ERRLEN];
        if (layout_rank_order_rule(l, &rule, msg, sizeof msg) ||
            layout_shard_grads_rule(l, &rule, msg, sizeof msg)) FAIL(CM_ERULE, rule, "%s", msg);
    }
    /* Megatron-FSDP combines with pipeline parallelism: Megatron-LM's validate_args (commit
     * d98e8a6, megatron/training/arguments.py:1031-1033) asserts pipeline size 1 only for
     * --use-torch-fsdp2; its --use-megatron-fsdp block (lines 1118-1191) has no such rule. The
     * planner's Megatron layouts never use torch FSDP2, so no rule here; plan check enforces
     * megatron-torch-fsdp2-no-pp for configs that ask for it (check.c). */
}

#undef FAIL
#undef FATAL

/* The precision rule (precision.h): the format must be one the GPU and framework train in. */
static void check_precision(const model_spec *m, const system_spec *sys, const layout *l,
                            rule_sink *s)
{
    char msg[CM_ERRLEN];
    if ((s->all || s->n == 0) && sys && precision_check(sys, l, msg, sizeof msg) != CM_OK)
        rule_fail(s, CM_ERULE, "precision-supported", "%s", msg);
    if ((s->all || s->n == 0) && precision_check_model(m, l, msg, sizeof msg) != CM_OK)
        rule_fail(s, CM_ERULE, "bf16-layers", "%s", msg);
    /* FP8 dispatch (moe_dispatch.h): DeepEP's own FP8 path; HybridEP has none ("HybridEP
     * dispatcher does not support fp8 dispatch now", Megatron-LM d98e8a6
     * megatron/core/transformer/moe/fused_a2a.py) and NCCL's all-to-all moves what it is given */
    if ((s->all || s->n == 0) && l->moe_fp8_dispatch &&
        (l->ep <= 1 || l->moe_dispatcher != MOE_DISPATCH_DEEPEP))
        rule_fail(s, CM_ERULE, "fp8-dispatch-needs-deepep",
                  "--moe-fp8-dispatch is DeepEP's FP8 dispatch: it needs --ep above 1 and "
                  "--moe-dispatcher deepep");
}

cm_status layout_check(const model_spec *m, const system_spec *sys, const training_spec *t,
                       const layout *l, int gpus, char *err, size_t errlen)
{
    rule_sink s = {.all = false, .err = err, .errlen = errlen, .first = CM_OK};
    check_rules(m, t, l, gpus, &s);
    check_precision(m, sys, l, &s);
    return s.n ? s.first : CM_OK;
}

cm_status layout_check_base(const model_spec *m, const training_spec *t, const layout *bf16)
{
    rule_sink s = {.all = false, .first = CM_OK};
    check_rules(m, t, bf16, 0, &s);
    return s.n ? s.first : CM_OK;
}

cm_status layout_check_precision(const model_spec *m, const system_spec *sys, const layout *l)
{
    if (fp8_delayed_recompute_conflict(l)) return CM_ERULE;
    rule_sink s = {.all = false, .first = CM_OK};
    check_precision(m, sys, l, &s);
    return s.n ? s.first : CM_OK;
}

int layout_check_all(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const layout *l, int gpus, layout_violation *out, int max)
{
    rule_sink s = {.all = true, .out = out, .max = max < 0 ? 0 : max, .first = CM_OK};
    check_rules(m, t, l, gpus, &s);
    check_precision(m, sys, l, &s);
    return s.n;
}
