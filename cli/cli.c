/*
 * cli.c — shared option parsing (getopt_long) and spec loading for the subcommands.
 * Every malformed value is one line on stderr naming the flag and the accepted range.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exact_model.h"
#include "precision.h"
#include "precision_choice.h"
#include "recompute_modules.h"
#include "cli_number.h"
#include "profile.h"

#ifndef PLAN_DATA_DIR_DEFAULT
#define PLAN_DATA_DIR_DEFAULT "data"
#endif

const char *cli_data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return (d && *d) ? d : PLAN_DATA_DIR_DEFAULT;
}

void cli_keep_freed_memory(void)
{
#ifdef __GLIBC__
    /* chunks up to glibc's largest mmap threshold (32 MiB on 64-bit) come from the heap, and
     * the heap's free top is kept up to 1 GiB (both mallopt(3)); a call that fails leaves the
     * default, which only costs the faults */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int cli_error(const char *msg)
{
    fprintf(stderr, "plan: error: %s\n", msg);
    return CLI_EXIT_USAGE;
}

int cli_one_layout_precision(const cli_options *o)
{
    /* One layout has one format: the search's auto has nothing to choose here. */
    if (o->precision_auto)
        return cli_error("--precision auto searches formats, and this command prices one "
                         "layout: name its format (bf16, fp8, mxfp8 or nvfp4), or leave the flag "
                         "out for bf16");
    return 0;
}

unsigned cli_precision_mask(const cli_options *o, const system_spec *sys)
{
    if (o->precision_given) return 1u << o->layout.precision;
    return o->precision_any ? precision_choice_any_mask(sys) : precision_choice_auto_mask(sys);
}

static int parse_int(const char *flag, const char *s, long lo, long hi, int *out)
{
    return cli_parse_int(flag, s, lo, hi, out); /* strict: cli_number.h */
}

static int parse_double(const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "plan: error: --%s needs a number between %g and %g, got '%s'\n", flag,
                lo, hi, s);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

enum {
    OPT_SEQ = 1000, OPT_GBS, OPT_TOP, OPT_FORMAT, OPT_TP, OPT_PP, OPT_DP, OPT_CP, OPT_EP,
    OPT_ETP, OPT_VPP, OPT_MBS, OPT_SP, OPT_NO_SP, OPT_SHARDING, OPT_RECOMPUTE,
    OPT_RECOMPUTE_LAYERS, OPT_FRAMEWORK, OPT_NO_RESHARD, OPT_SHARD_SIZE, OPT_OFFLOAD,
    OPT_ATTENTION, OPT_NO_OVERLAP, OPT_GRAD_BF16, OPT_CALIBRATION, OPT_EMIT,
    OPT_SIMULATE, OPT_NO_SIMULATE, OPT_OPS, OPT_TRACE, OPT_PRECISION, OPT_FP8_RECIPE,
    OPT_IMPL, OPT_COMPILE, OPT_OPTIMIZER_IMPL,
    OPT_TP_COMM_OVERLAP, OPT_OVERLAP_GRAD_REDUCE, OPT_OVERLAP_PARAM_GATHER,
    OPT_MOE_DISPATCHER, OPT_MOE_IMBALANCE, OPT_MOE_CAPACITY, OPT_MOE_EP_OVERLAP,
    OPT_MOE_SHARED_OVERLAP, OPT_MOE_EXPERT_LOOP, OPT_MOE_NEW_COUNTS, OPT_NVLS, OPT_POWER_LIMIT, OPT_GEMM_HEADROOM, OPT_PP_SCHEDULE, OPT_ASYNC_TP,
    OPT_RESHARD, OPT_FP8_PARAM_GATHER, OPT_BF16_FIRST, OPT_BF16_LAST,
    OPT_MOE_FP8_DISPATCH, OPT_OPT_OFFLOAD,
    OPT_OPT_OFFLOAD_FRACTION, OPT_ACT_OFFLOAD, OPT_ACT_OFFLOAD_LAYERS, OPT_EXPANDABLE_SEGMENTS, OPT_NO_EXPANDABLE_SEGMENTS, OPT_PP_KEEP_OUTPUTS, OPT_PP_FSDP_RS_HELD, OPT_HOLD_LOGITS, OPT_ONE_RANK_GROUPS, OPT_MOE_PAD_INDEX_COPY, OPT_MOE_GATHER_ROUTING, OPT_PP_FIRST,
    OPT_PP_LAST,
    OPT_RECOMPUTE_MODULES, OPT_BF16_OPT_STATES, OPT_TE_CROSS_ENTROPY, OPT_CUDA_GRAPH_FULL,
    OPT_CUDA_GRAPH_ATTN, OPT_NO_ROPE_FUSION, OPT_SHARD_GRADS, OPT_RMS_NORM_UNFUSED, OPT_MOE_EXPERT_PADDING, OPT_MOE_DISPATCHER_SMS, OPT_RANK_ORDER, OPT_CP_ROTATE,
    OPT_COMPILE_COMPONENTS,
    OPT_CUDA_GRAPHS, OPT_NO_CUDA_GRAPHS, OPT_EXACT_MODEL,
};

static const struct option long_opts[] = {
    {"model", required_argument, NULL, 'm'},
    {"gpus", required_argument, NULL, 'g'},
    {"system", required_argument, NULL, 's'},
    {"calibration", required_argument, NULL, OPT_CALIBRATION},
    {"emit", required_argument, NULL, OPT_EMIT},
    {"simulate", no_argument, NULL, OPT_SIMULATE},
    {"ops", no_argument, NULL, OPT_OPS},
    {"no-simulate", no_argument, NULL, OPT_NO_SIMULATE},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"gbs", required_argument, NULL, OPT_GBS},
    {"top", required_argument, NULL, OPT_TOP},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"framework", required_argument, NULL, OPT_FRAMEWORK},
    {"tp", required_argument, NULL, OPT_TP},
    {"pp", required_argument, NULL, OPT_PP},
    {"dp", required_argument, NULL, OPT_DP},
    {"cp", required_argument, NULL, OPT_CP},
    {"ep", required_argument, NULL, OPT_EP},
    {"etp", required_argument, NULL, OPT_ETP},
    {"vpp", required_argument, NULL, OPT_VPP},
    {"mbs", required_argument, NULL, OPT_MBS},
    {"sp", no_argument, NULL, OPT_SP},
    {"no-sp", no_argument, NULL, OPT_NO_SP},
    {"sharding", required_argument, NULL, OPT_SHARDING},
    {"recompute", required_argument, NULL, OPT_RECOMPUTE},
    {"recompute-layers", required_argument, NULL, OPT_RECOMPUTE_LAYERS},
    {"recompute-modules", required_argument, NULL, OPT_RECOMPUTE_MODULES},
    {"bf16-optimizer-states", no_argument, NULL, OPT_BF16_OPT_STATES},
    {"te-cross-entropy", no_argument, NULL, OPT_TE_CROSS_ENTROPY},
    {"cuda-graph-full-iteration", no_argument, NULL, OPT_CUDA_GRAPH_FULL},
    {"cuda-graph-attn", no_argument, NULL, OPT_CUDA_GRAPH_ATTN},
    {"rms-norm-unfused", no_argument, NULL, OPT_RMS_NORM_UNFUSED},
    {"moe-expert-padding", no_argument, NULL, OPT_MOE_EXPERT_PADDING},
    {"no-rope-fusion", no_argument, NULL, OPT_NO_ROPE_FUSION},
    {"shard-grads", no_argument, NULL, OPT_SHARD_GRADS},
    {"cuda-graphs", no_argument, NULL, OPT_CUDA_GRAPHS},
    {"no-cuda-graphs", no_argument, NULL, OPT_NO_CUDA_GRAPHS},
    {"moe-dispatcher-sms", required_argument, NULL, OPT_MOE_DISPATCHER_SMS},
    {"no-reshard-after-forward", no_argument, NULL, OPT_NO_RESHARD},
    {"shard-size", required_argument, NULL, OPT_SHARD_SIZE},
    {"offload", no_argument, NULL, OPT_OFFLOAD},
    {"attention", required_argument, NULL, OPT_ATTENTION},
    {"no-overlap", no_argument, NULL, OPT_NO_OVERLAP},
    {"tp-comm-overlap", no_argument, NULL, OPT_TP_COMM_OVERLAP},
    {"overlap-grad-reduce", no_argument, NULL, OPT_OVERLAP_GRAD_REDUCE},
    {"overlap-param-gather", no_argument, NULL, OPT_OVERLAP_PARAM_GATHER},
    {"grad-reduce-bf16", no_argument, NULL, OPT_GRAD_BF16},
    {"expandable-segments", no_argument, NULL, OPT_EXPANDABLE_SEGMENTS},
    {"no-expandable-segments", no_argument, NULL, OPT_NO_EXPANDABLE_SEGMENTS},
    {"pp-keep-outputs", no_argument, NULL, OPT_PP_KEEP_OUTPUTS},
    {"pp-fsdp-rs-held", no_argument, NULL, OPT_PP_FSDP_RS_HELD},
    {"hold-logits", no_argument, NULL, OPT_HOLD_LOGITS},
    {"one-rank-groups", required_argument, NULL, OPT_ONE_RANK_GROUPS},
    {"moe-pad-index-copy", no_argument, NULL, OPT_MOE_PAD_INDEX_COPY},
    {"moe-gather-routing", no_argument, NULL, OPT_MOE_GATHER_ROUTING},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {"fp8-recipe", required_argument, NULL, OPT_FP8_RECIPE},
    {"impl", required_argument, NULL, OPT_IMPL},
    {"compile", no_argument, NULL, OPT_COMPILE},
    {"optimizer-impl", required_argument, NULL, OPT_OPTIMIZER_IMPL},
    {"moe-dispatcher", required_argument, NULL, OPT_MOE_DISPATCHER},
    {"moe-imbalance", required_argument, NULL, OPT_MOE_IMBALANCE},
    {"moe-capacity-factor", required_argument, NULL, OPT_MOE_CAPACITY},
    {"moe-ep-overlap", no_argument, NULL, OPT_MOE_EP_OVERLAP},
    {"moe-shared-expert-overlap", no_argument, NULL, OPT_MOE_SHARED_OVERLAP},
    {"moe-expert-loop", no_argument, NULL, OPT_MOE_EXPERT_LOOP},
    {"moe-new-counts", required_argument, NULL, OPT_MOE_NEW_COUNTS},
    {"nvls", required_argument, NULL, OPT_NVLS},
    {"power-limit", required_argument, NULL, OPT_POWER_LIMIT},
    {"gemm-headroom", required_argument, NULL, OPT_GEMM_HEADROOM},
    {"pp-schedule", required_argument, NULL, OPT_PP_SCHEDULE},
    {"rank-order", required_argument, NULL, OPT_RANK_ORDER},
    {"async-tp", no_argument, NULL, OPT_ASYNC_TP},
    {"cp-rotate", required_argument, NULL, OPT_CP_ROTATE},
    {"compile-components", required_argument, NULL, OPT_COMPILE_COMPONENTS},
    {"reshard-after-forward", no_argument, NULL, OPT_RESHARD},
    {"fp8-param-gather", no_argument, NULL, OPT_FP8_PARAM_GATHER},
    {"bf16-first-layers", required_argument, NULL, OPT_BF16_FIRST},
    {"pp-first-layers", required_argument, NULL, OPT_PP_FIRST},
    {"pp-last-layers", required_argument, NULL, OPT_PP_LAST},
    {"bf16-last-layers", required_argument, NULL, OPT_BF16_LAST},
    {"moe-fp8-dispatch", no_argument, NULL, OPT_MOE_FP8_DISPATCH},
    {"optimizer-cpu-offload", no_argument, NULL, OPT_OPT_OFFLOAD},
    {"optimizer-offload-fraction", required_argument, NULL, OPT_OPT_OFFLOAD_FRACTION},
    {"activation-offload", no_argument, NULL, OPT_ACT_OFFLOAD},
    {"activation-offload-layers", required_argument, NULL, OPT_ACT_OFFLOAD_LAYERS},
    {"exact-model", no_argument, NULL, OPT_EXACT_MODEL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Is c one of the command's own options? */
static bool is_own(const cli_own_options *own, int c)
{
    if (!own || c <= 0) return false;
    for (const struct option *p = own->opts; p && p->name; p++)
        if (p->val == c) return true;
    return c < 128 && own->short_opts && strchr(own->short_opts, c) && c != ':';
}

int cli_parse(int argc, char **argv, cli_options *o, bool *help)
{
    return cli_parse_own(argc, argv, NULL, o, help);
}

int cli_parse_own(int argc, char **argv, const cli_own_options *own, cli_options *o, bool *help)
{
    /* the shared rows, then the command's own (room for both: past it a command's last rows
     * were dropped silently — plan refine's --refine at 83 shared + 12 own rows) */
    enum { MAX_OPTS = 160 };
    struct option all[MAX_OPTS];
    int n = 0, want = 1;
    for (const struct option *p = long_opts; p->name; p++) want++;
    for (const struct option *p = own ? own->opts : NULL; p && p->name; p++) want++;
    if (want > MAX_OPTS) /* a build with more rows than room: say so, never drop one */
    {
        char msg[128];
        snprintf(msg, sizeof msg, "internal: %d option rows exceed the parser's %d; raise "
                 "MAX_OPTS in cli/cli.c", want - 1, MAX_OPTS - 1);
        return cli_error(msg);
    }
    for (const struct option *p = long_opts; p->name; p++) all[n++] = *p;
    for (const struct option *p = own ? own->opts : NULL; p && p->name; p++) all[n++] = *p;
    all[n] = (struct option){NULL, 0, NULL, 0};
    char shorts[64];
    snprintf(shorts, sizeof shorts, ":m:g:s:h%s", own && own->short_opts ? own->short_opts : "");

    memset(o, 0, sizeof *o);
    o->model = "30b";
    o->system = "h100";
    o->top = 10;
    o->training = training_default();
    o->layout = layout_default(FRAMEWORK_MEGATRON);
    *help = false;
    const long BIG = 1L << 20;
    /* 0, not 1: glibc then re-initialises getopt completely. With 1 it keeps its pointer into
     * the previous call's argv (mid "-hq" style clusters), which a second cli_parse() in one
     * process read after that argv was gone (found by tests/fuzz/fuzz_cli). */
    optind = 0;
    opterr = 0;
    int c, rc = 0, idx;
    while ((idx = -1, c = getopt_long(argc, argv, shorts, all, &idx)) != -1) {
        layout *l = &o->layout;
        if (is_own(own, c) || (c == ':' && is_own(own, optopt))) {
            /* value: "" for an option without one, NULL when a needed one is missing */
            rc = own->take(c == ':' ? optopt : c, c == ':' ? NULL : optarg ? optarg : "",
                           own->arg);
            if (rc) return rc;
            continue;
        }
        /* the shared options given, by name, for the commands that take only some of them */
        if (c != ':' && c != '?' && o->n_given < CLI_MAX_GIVEN)
            o->given[o->n_given++] = idx >= 0 ? all[idx].name
                                   : c == 'm' ? "model"
                                   : c == 'g' ? "gpus"
                                   : c == 's' ? "system"
                                              : "help";
        switch (c) {
        case 'm':
            o->model = optarg;
            o->model_given = true;
            break;
        case 's': o->system = optarg; break;
        case OPT_CALIBRATION: o->calibration = optarg; break;
        case OPT_SIMULATE: o->simulate = true; break;
        case OPT_OPS: o->ops = true; break;
        case OPT_NO_SIMULATE: o->no_simulate = true; break;
        case OPT_TRACE: o->trace = optarg; break;
        case OPT_EMIT:
            if (!emit_parse_format(optarg, &o->emit))
                rc = cli_error("--emit must be yaml, megatron-args, bridge, torchtitan or json");
            break;
        case 'g': rc = parse_int("gpus", optarg, 1, 10000000, &o->gpus); break;
        case OPT_SEQ: rc = parse_int("seq", optarg, 1, 16 * 1024 * 1024, &o->training.seq_len); break;
        case OPT_GBS: rc = parse_int("gbs", optarg, 1, 100000000, &o->training.global_batch); break;
        case OPT_TOP: rc = parse_int("top", optarg, 1, 256, &o->top); break;
        case OPT_TP: rc = parse_int("tp", optarg, 1, BIG, &l->tp); break;
        case OPT_PP: rc = parse_int("pp", optarg, 1, BIG, &l->pp); break;
        case OPT_DP: rc = parse_int("dp", optarg, 1, 10000000, &l->dp); o->dp_given = true; break;
        case OPT_CP: rc = parse_int("cp", optarg, 1, BIG, &l->cp); break;
        case OPT_EP: rc = parse_int("ep", optarg, 1, BIG, &l->ep); break;
        case OPT_ETP: rc = parse_int("etp", optarg, 1, BIG, &l->etp); break;
        case OPT_VPP: rc = parse_int("vpp", optarg, 1, BIG, &l->vpp); o->vpp_given = true; break;
        case OPT_MBS: rc = parse_int("mbs", optarg, 1, BIG, &l->mbs); break;
        case OPT_RECOMPUTE_LAYERS:
            rc = parse_int("recompute-layers", optarg, 0, BIG, &l->recompute_layers);
            break;
        case OPT_SHARD_SIZE: rc = parse_int("shard-size", optarg, 1, 10000000, &l->shard_size); break;
        case OPT_SP: l->sp = true; o->sp_given = true; break;
        case OPT_NO_SP: l->sp = false; o->sp_given = true; break;
        case OPT_NO_RESHARD: l->reshard_after_forward = false; o->reshard_given = true; break;
        case OPT_RESHARD: l->reshard_after_forward = true; o->reshard_given = true; break;
        case OPT_PP_SCHEDULE:
            if (!layout_parse_pp_schedule(optarg, &l->pp_schedule) ||
                l->pp_schedule == PP_SCHEDULE_DEFAULT)
                rc = cli_error("--pp-schedule must be 1F1B, Interleaved1F1B, GPipe, ZBVZeroBubble "
                               "or DualPipeV");
            break;
        case OPT_RANK_ORDER:
            if (!layout_parse_rank_order(optarg, &l->rank_order))
                rc = cli_error("--rank-order must be tp-cp-ep-dp-pp (Megatron's default) or "
                               "tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping)");
            break;
        case OPT_ASYNC_TP: l->async_tp = true; break;
        case OPT_CP_ROTATE:
            if (strcmp(optarg, "allgather") && strcmp(optarg, "alltoall"))
                rc = cli_error("--cp-rotate must be allgather (torch's default) or alltoall");
            else
                l->cp_rotate_alltoall = !strcmp(optarg, "alltoall");
            break;
        case OPT_COMPILE_COMPONENTS:
            if (strcmp(optarg, "model") && strcmp(optarg, "model,loss"))
                rc = cli_error("--compile-components must be model,loss (torchtitan's default: "
                               "the loss compiled too) or model (the loss eager)");
            else
                l->loss_eager = !strcmp(optarg, "model");
            break;
        case OPT_EXACT_MODEL: o->exact_model = true; break;
        case OPT_OFFLOAD: l->offload = true; break;
        case OPT_NO_OVERLAP:
            /* the layout's overlap knobs off, and the search keeps them off */
            l->tp_comm_overlap = l->overlap_grad_reduce = l->overlap_param_gather = false;
            o->no_overlap = true;
            break;
        case OPT_TP_COMM_OVERLAP: l->tp_comm_overlap = true; break;
        case OPT_OVERLAP_GRAD_REDUCE: l->overlap_grad_reduce = true; break;
        case OPT_OVERLAP_PARAM_GATHER: l->overlap_param_gather = true; break;
        case OPT_GRAD_BF16: o->training.grad_reduce_bf16 = true; break;
        case OPT_EXPANDABLE_SEGMENTS: o->training.expandable_segments = true; break;
        case OPT_NO_EXPANDABLE_SEGMENTS: o->training.no_expandable_segments = true; break;
        case OPT_PP_KEEP_OUTPUTS: o->training.pp_keep_outputs = true; break;
        case OPT_PP_FSDP_RS_HELD: o->training.pp_fsdp_rs_held = true; break;
        case OPT_HOLD_LOGITS: o->training.hold_logits = true; break;
        case OPT_MOE_PAD_INDEX_COPY: o->training.moe_pad_index_copy = true; break;
        case OPT_MOE_GATHER_ROUTING: o->training.moe_gather_routing = true; break;
        case OPT_ONE_RANK_GROUPS:
            rc = parse_int("one-rank-groups", optarg, 0, 64, &o->training.one_rank_groups);
            break;
        case OPT_PRECISION:
            if (!strcmp(optarg, "auto") || !strcmp(optarg, "any")) {
                o->precision_auto = true;
                o->precision_any = !strcmp(optarg, "any"); /* auto plus NVFP4 */
                o->precision_given = false;
                l->precision = PRECISION_BF16;
            } else if (precision_parse(optarg, &l->precision)) {
                o->precision_given = true;
                o->precision_auto = o->precision_any = false;
            } else {
                rc = cli_error("--precision must be auto, any, bf16, fp8, mxfp8 or nvfp4 (auto, the "
                               "search's default: bf16 and the 8-bit formats the GPU supports; any: "
                               "also NVFP4)");
            }
            break;
        case OPT_FP8_RECIPE:
            if (!precision_parse_fp8_recipe(optarg, &l->fp8_recipe))
                rc = cli_error("--fp8-recipe must be delayed, tensorwise, blockwise or rowwise");
            break;
        case OPT_IMPL:
            if (!impl_parse(optarg, &l->impl) || l->impl == IMPL_DEFAULT)
                rc = cli_error("--impl must be hf, native or te");
            break;
        case OPT_COMPILE: l->compile = true; break;
        case OPT_OPTIMIZER_IMPL:
            if (!optimizer_impl_parse(optarg, &l->optimizer_impl) ||
                l->optimizer_impl == OPTIMIZER_IMPL_DEFAULT)
                rc = cli_error("--optimizer-impl must be fused, foreach or for-loop");
            break;
        case OPT_MOE_DISPATCHER:
            if (!layout_parse_moe_dispatcher(optarg, &l->moe_dispatcher))
                rc = cli_error("--moe-dispatcher must be alltoall, allgather, deepep or hybridep");
            break;
        case OPT_MOE_IMBALANCE:
            rc = parse_double("moe-imbalance", optarg, 1.0, 1000.0, &o->training.moe_imbalance);
            break;
        case OPT_MOE_EP_OVERLAP: o->training.moe_ep_overlap = true; break;
        case OPT_MOE_SHARED_OVERLAP: o->training.moe_shared_overlap = true; break;
        case OPT_MOE_EXPERT_LOOP: o->training.moe_expert_loop = true; break;
        case OPT_MOE_NEW_COUNTS:
            rc = parse_double("moe-new-counts", optarg, 0.0, 1.0, &o->training.moe_new_count_share);
            break;
        case OPT_FP8_PARAM_GATHER: l->fp8_param_gather = true; break;
        case OPT_BF16_FIRST:
            rc = parse_int("bf16-first-layers", optarg, 0, 100000, &l->bf16_layers_start);
            break;
        case OPT_BF16_LAST:
            rc = parse_int("bf16-last-layers", optarg, 0, 100000, &l->bf16_layers_end);
            break;
        case OPT_PP_FIRST:
            rc = parse_int("pp-first-layers", optarg, 0, 100000, &l->pp_first_layers);
            break;
        case OPT_PP_LAST:
            rc = parse_int("pp-last-layers", optarg, 0, 100000, &l->pp_last_layers);
            break;
        case OPT_MOE_FP8_DISPATCH: l->moe_fp8_dispatch = true; break;
        /* Megatron CPU offload (costmodel/offload.h); a fraction implies the offload */
        case OPT_OPT_OFFLOAD: if (!l->optimizer_offload_pct) l->optimizer_offload_pct = 100; break;
        case OPT_OPT_OFFLOAD_FRACTION: {
            double f = 0;
            rc = parse_double("optimizer-offload-fraction", optarg, 0, 1, &f);
            l->optimizer_offload_pct = (int)(f * 100 + 0.5);
            break;
        }
        case OPT_ACT_OFFLOAD: l->activation_offload = true; break;
        case OPT_ACT_OFFLOAD_LAYERS: /* a layer count implies the offload */
            rc = parse_int("activation-offload-layers", optarg, 1, 100000,
                           &l->activation_offload_layers);
            l->activation_offload = true;
            break;
        case OPT_MOE_CAPACITY:
            /* 0: dropless; else the expert capacity over the mean tokens per expert */
            rc = parse_double("moe-capacity-factor", optarg, 0, 1000.0,
                              &o->training.moe_capacity_factor);
            break;
        case OPT_FORMAT:
            if (!strcmp(optarg, "json")) o->format = FORMAT_JSON;
            else if (!strcmp(optarg, "human")) o->format = FORMAT_HUMAN;
            else rc = cli_error("--format must be human or json");
            break;
        case OPT_FRAMEWORK:
            if (!layout_parse_framework(optarg, &l->framework))
                rc = cli_error("--framework must be fsdp2, megatron or torchtitan");
            o->framework_given = true;
            break;
        case OPT_SHARDING:
            if (!layout_parse_sharding(optarg, &l->sharding))
                rc = cli_error("--sharding must be ddp, distopt or fsdp");
            o->sharding_given = true;
            break;
        case OPT_RECOMPUTE:
            if (!layout_parse_recompute(optarg, &l->recompute))
                rc = cli_error("--recompute must be none, selective or full");
            break;
        case OPT_BF16_OPT_STATES: l->optimizer_bf16_states = true; break;
        case OPT_TE_CROSS_ENTROPY: l->te_cross_entropy = true; break;
        case OPT_CUDA_GRAPH_FULL: l->cuda_graph_full_iteration = true; break;
        case OPT_CUDA_GRAPH_ATTN: l->cuda_graph_attn = true; break;
        case OPT_RMS_NORM_UNFUSED: l->rms_norm_unfused = true; break;
        case OPT_MOE_EXPERT_PADDING: l->moe_expert_padding = true; break;
        case OPT_NO_ROPE_FUSION: l->rope_unfused = true; break;
        case OPT_SHARD_GRADS: l->shard_grads = true; break;
        case OPT_CUDA_GRAPHS: l->cuda_graphs = CUDA_GRAPHS_ON; break;
        case OPT_NO_CUDA_GRAPHS: l->cuda_graphs = CUDA_GRAPHS_OFF; break;
        case OPT_MOE_DISPATCHER_SMS:
            rc = parse_int("moe-dispatcher-sms", optarg, 1, 256, &l->moe_dispatcher_sms);
            break;
        case OPT_RECOMPUTE_MODULES: {
            char bad[80], msg[320];
            if (!recompute_modules_parse(optarg, &l->recompute_modules, bad, sizeof bad)) {
                snprintf(msg, sizeof msg,
                         "--recompute-modules takes Megatron's module names separated by commas "
                         "(core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                         "shared_experts)%s%s%s",
                         bad[0] ? ": unknown '" : "", bad, bad[0] ? "'" : "");
                rc = cli_error(msg);
            }
            break;
        }
        case OPT_ATTENTION:
            o->training.attention_set = true;
            if (!strcmp(optarg, "flash")) o->training.attention = ATTENTION_FLASH;
            else if (!strcmp(optarg, "unfused")) o->training.attention = ATTENTION_UNFUSED;
            else rc = cli_error("--attention must be flash or unfused");
            break;
        case OPT_NVLS:
            if (!strcmp(optarg, "on")) o->nvls = CLI_NVLS_ON;
            else if (!strcmp(optarg, "off")) o->nvls = CLI_NVLS_OFF;
            else rc = cli_error("--nvls must be on or off");
            break;
        case OPT_POWER_LIMIT:
            rc = parse_double("power-limit", optarg, 50, 5000, &o->power_limit_w);
            break;
        case OPT_GEMM_HEADROOM:
            o->gemm_headroom_given = true;
            o->gemm_headroom_on = !strcmp(optarg, "on");
            o->gemm_headroom_bubble = !strcmp(optarg, "bubble");
            if (!o->gemm_headroom_on && !o->gemm_headroom_bubble && strcmp(optarg, "off"))
                rc = cli_error("--gemm-headroom must be on or off (or bubble: plan estimate's default)");
            break;
        case 'h': *help = true; break;
        case ':': {
            char msg[160];
            snprintf(msg, sizeof msg, "option '%s' needs a value", argv[optind - 1]);
            rc = cli_error(msg);
            break;
        }
        default: {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown option '%s': see plan --help",
                     argv[optind - 1]);
            rc = cli_error(msg);
            break;
        }
        }
        if (rc) return rc;
    }
    if (optind < argc) {
        char msg[200];
        snprintf(msg, sizeof msg, "unexpected argument '%s': options start with -- (see plan "
                                  "--help)", argv[optind]);
        return cli_error(msg);
    }
    return 0;
}

void cli_layout_defaults(const cli_options *o, layout *l)
{
    if (!o->sharding_given)
        l->sharding = l->framework == FRAMEWORK_MEGATRON ? SHARDING_DISTOPT : SHARDING_FSDP;
    /* torchtitan: enable_sequence_parallel defaults on (config/configs.py); with a pipeline its
     * "default" reshard policy keeps parameters gathered after forward (distributed/fsdp.py
     * get_fsdp_reshard_after_forward_policy: "default" -> not pp_enabled); a multi-stage
     * schedule runs 2 stages per rank unless told (distributed/pipeline_parallel.py
     * _get_pipeline_metadata) */
    if (!o->sp_given) l->sp = l->framework != FRAMEWORK_FSDP2 && l->tp > 1;
    if (l->framework != FRAMEWORK_TORCHTITAN) return;
    if (!o->reshard_given && l->pp > 1) l->reshard_after_forward = false;
    if (l->ep > 1 && l->etp == 0) l->etp = 1; /* experts whole: no expert TP degree */
    /* the schedule named, as torchtitan's configs always name one (ParallelismConfig) */
    if (l->pp > 1 && l->pp_schedule == PP_SCHEDULE_DEFAULT)
        l->pp_schedule = l->vpp > 1 ? PP_SCHEDULE_INTERLEAVED_1F1B : PP_SCHEDULE_1F1B;
    if (l->pp == 1 && l->pp_schedule == PP_SCHEDULE_1F1B) l->pp_schedule = PP_SCHEDULE_DEFAULT;
    layout_pp_schedule s = l->pp_schedule;
    if (!o->vpp_given && l->pp > 1 &&
        (s == PP_SCHEDULE_INTERLEAVED_1F1B || s == PP_SCHEDULE_ZBV || s == PP_SCHEDULE_DUALPIPEV))
        l->vpp = 2;
}

int cli_layout(const cli_options *o, layout *out)
{
    int rc = cli_one_layout_precision(o);
    if (rc) return rc;
    layout l = o->layout;
    cli_layout_defaults(o, &l);
    long mp = (long)l.tp * l.pp * l.cp;
    if (!o->dp_given) {
        if (o->gpus) {
            if (o->gpus % mp) {
                char msg[200];
                snprintf(msg, sizeof msg,
                         "--gpus %d is not divisible by tp*pp*cp = %ld: change the sizes",
                         o->gpus, mp);
                return cli_error(msg);
            }
            l.dp = (int)(o->gpus / mp);
        } else {
            l.dp = 1;
        }
    }
    *out = l;
    return 0;
}

int cli_load_specs(const cli_options *o, model_spec *m, system_spec *sys)
{
    char err[CM_ERRLEN];
    const char *dir = cli_data_dir();
    if (model_load(o->model, dir, m, err, sizeof err) != CM_OK) return cli_error(err);
    if (profile_load_system(o->system, dir, sys, err, sizeof err) != CM_OK) return cli_error(err);
    if (o->calibration && profile_overlay(o->calibration, sys, err, sizeof err) != CM_OK)
        return cli_error(err);
    sys->gemm_headroom_on = o->gemm_headroom_on; /* --gemm-headroom on (gemm_headroom.h) */
    sys->gemm_headroom_bubble = o->gemm_headroom_bubble;
    return cli_apply_system_knobs(o->nvls, o->power_limit_w, sys);
}

void cli_gemm_headroom_default(cli_options *o)
{
    if (!o->gemm_headroom_given) o->gemm_headroom_bubble = true;
}

int cli_apply_system_knobs(cli_nvls nvls, double power_limit_w, system_spec *sys)
{
    char err[CM_ERRLEN];
    if (nvls != CLI_NVLS_UNSET &&
        system_set_nvls(sys, nvls == CLI_NVLS_ON, err, sizeof err) != CM_OK)
        return cli_error(err);
    if (power_limit_w > 0 && system_set_power_limit(sys, power_limit_w, err, sizeof err) != CM_OK)
        return cli_error(err);
    return 0;
}

int cli_exact_model_check(const cli_options *o, const model_spec *m)
{
    layout_framework fw = o->layout.framework;
    if (!o->exact_model || exact_model_builds(fw, m)) return 0;
    char how[96], msg[1024];
    if (o->framework_given) snprintf(how, sizeof how, "--framework %s", layout_framework_name(fw));
    else snprintf(how, sizeof how, "%s (the default framework here)", layout_framework_name(fw));
    exact_model_refusal(fw, m, how, msg, sizeof msg);
    return cli_error(msg);
}

int cli_estimate(const cli_options *o, model_spec *m, system_spec *sys, layout *l, estimate *e)
{
    int rc;
    if ((rc = cli_layout(o, l))) return rc;
    if ((rc = cli_load_specs(o, m, sys))) return rc;
    if ((rc = cli_exact_model_check(o, m))) return rc;
    char err[CM_ERRLEN];
    if (layout_check(m, sys, &o->training, l, o->gpus, err, sizeof err) != CM_OK ||
        estimate_layout(m, sys, &o->training, l, e, err, sizeof err) != CM_OK)
        return cli_error(err);
    return 0;
}

/* (cli_number.h parses; the message and exit status are the front end's) */
int cli_parse_int(const char *flag, const char *s, long lo, long hi, int *out)
{
    long v;
    if (!cli_number_long(s, lo, hi, &v)) {
        fprintf(stderr, "plan: error: --%s needs an integer between %ld and %ld, got '%s'\n",
                flag, lo, hi, s);
        return CLI_EXIT_USAGE;
    }
    *out = (int)v;
    return 0;
}

const char *cli_given_other(const cli_options *o, const char *const *allowed)
{
    for (int i = 0; i < o->n_given; i++) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, o->given[i]);
        if (!ok) return o->given[i];
    }
    return NULL;
}
