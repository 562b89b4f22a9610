/*
 * cmd_search.c — `plan --model 30b --gpus 64`: search every layout of both frameworks and
 * print the recommendation, the FSDP2-vs-Megatron verdict, the top-N table and the why.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "exact_model.h"
#include "output.h"
#include "precision.h"
#include "precision_choice.h"
#include "search.h"
#include "sim.h"

static void usage(void)
{
    printf("usage: plan [search] --model NAME|config.json --gpus N [options]\n"
           "  --system NAME|FILE   GPU system preset (default h100) or a system JSON\n"
           "  --calibration FILE   overlay a calibration profile on the system\n"
           "  --nvls on|off        price in-domain all-reduces with NVLink SHARP (systems that\n"
           "                       have it; default: the system file's node.nvls, off)\n"
           "  --power-limit W      GPU power cap: GEMM and attention rates x (W/TDP)^beta (the\n"
           "                       GPU's measured exponent, else 1/3), an assumption\n"
           "  --seq N              sequence length (default 4096)\n"
           "  --gbs N              global batch in sequences (default 1024)\n"
           "  --top N              rows in the ranked table (default 10)\n"
           "  --framework F        search only fsdp2, megatron or torchtitan (default: all three)\n"
           "  --exact-model        search only the frameworks whose own model code builds the\n"
           "                       model as it is: FSDP2 always (the model's code); Megatron-LM\n"
           "                       and torchtitan unless they lack one of its forms (post-norms,\n"
           "                       parallel blocks, LayerNorm, ...); one line says each left out.\n"
           "                       With --framework: an error if that framework cannot build it\n"
           "  --attention flash|unfused, --no-overlap (overlap knobs off, not\n"
           "  searched), --grad-reduce-bf16\n"
           "  --expandable-segments  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: no free block\n"
           "                       kept for the fp32 logits (allocator fragmentation, memory.h);\n"
           "                       torchtitan's default. --no-expandable-segments: torch's default\n"
           "                       allocator (a torchtitan run without its launcher's setting)\n"
           "  --pp-keep-outputs    a pipelining loop that keeps the last stage's outputs\n"
           "                       (schedule.step's default return_outputs=True; torchtitan\n"
           "                       passes False): its bf16 logits of every micro-batch held\n"
           "  --pp-fsdp-rs-held    torch before pytorch#144535 (2025-01-10): FSDP2 keeps each\n"
           "                       local stage's last fp32 reduce-scatter input (one block)\n"
           "                       into the next step (torchtitan's 2024-12 tables)\n"
           "  --hold-logits        a native loop that keeps the bf16 logits through the backward\n"
           "                       (no `del pred` before loss.backward(), as torchtitan does)\n"
           "  --one-rank-groups N  N process groups of one rank beyond the layout's (a device\n"
           "                       mesh's size-1 dimensions): an NCCL communicator each\n"
           "  --moe-pad-index-copy a torch MoE padding the experts' rows by index_copy: autograd\n"
           "                       keeps the unpadded rows too (2h bytes a routed copy)\n"
           "  --moe-gather-routing a torch MoE regrouping tokens by gathers both ways, top-k\n"
           "                       weights as a [T,k,h] fp32 product (parallel_run.py's EP layer)\n"
           "  --precision auto|any|bf16|fp8|mxfp8|nvfp4   Linear GEMMs' format. auto (the\n"
           "                       default): bf16 and the 8-bit formats the GPU and framework\n"
           "                       support (FP8 on Hopper, also MXFP8 on Blackwell; bf16 alone\n"
           "                       on GPUs without FP8), and the output says what the chosen\n"
           "                       one buys against bf16; any: auto plus NVFP4 (4-bit, not\n"
           "                       chosen unless asked); a format pins it (--precision bf16:\n"
           "                       the bf16 search)\n"
           "  --fp8-recipe delayed|tensorwise|blockwise|rowwise   fp8 scaling (default:\n"
           "                       megatron delayed, fsdp2 tensorwise, torchtitan rowwise)\n"
           "  --fp8-param-gather   Megatron low-precision plans only with FP8 parameters\n"
           "                       (default: searched, off and on)\n"
           "  --bf16-first-layers N --bf16-last-layers N   Megatron low-precision plans keep\n"
           "                       these decoder layers in bf16 (--first-last-layers-bf16)\n"
           "  --moe-fp8-dispatch   DeepEP plans send the dispatch in FP8\n"
           "  --moe-dispatcher alltoall|allgather|deepep|hybridep (default alltoall)\n"
           "  --moe-imbalance R    busiest expert rank's tokens / mean (default 1: balanced)\n"
           "  --moe-capacity-factor C   drop tokens above C x mean per expert (0: dropless)\n"
           "  --moe-ep-overlap     hide dispatch/combine behind the paired micro-batch\n"
           "                       (Megatron --overlap-moe-expert-parallel-comm; pp 1 or vpp)\n"
           "  --moe-shared-expert-overlap   shared experts beside the alltoall exchange\n"
           "  --format human|json\n"
           "  --no-simulate        rank by the closed form only (default: the best plans are\n"
           "                       re-ranked by the step simulator, see plan simulate)\n"
           "  --trace FILE         write the recommended plan's simulated step (Chrome trace)\n"
           "  --emit yaml|megatron-args|bridge|torchtitan|json   print the recommended plan's\n"
           "                       config instead (the best plan that format can state)\n"
           "  --gbs-policy exact|nearest   exact (default): --gbs must split evenly; nearest:\n"
           "                       each DP size uses the largest multiple of it not above --gbs\n"
           "  --search-stats       per-knob counts: layouts listed, out on memory, out on the\n"
           "                       lower bound, timed (searched on one thread: on several,\n"
           "                       what each does depends on their interleaving)\n"
           "  --count-fits         check every layout's memory and count those that fit (by\n"
           "                       default a layout whose step's lower bound already exceeds\n"
           "                       the plans kept is not checked); --no-prune: time every\n"
           "                       layout that fits\n"
           "  --etp-fold           MoE layers' expert TP: every divisor of TP (Megatron's\n"
           "                       parallel folding), not only TP and 1\n"
           "exit status: 0 a layout fits, 1 none fits, 2 an error.\n"
           "other commands: plan estimate --help\n");
}

/* The search chooses the layout; a layout flag given to it was once silently ignored (issue
 * 18: `plan --gpus 64 --tp 8 --pp 2 --offload` searched everything). The first such flag that
 * differs from its default, or NULL. (Given with its default value it changes nothing.) */
static const char *layout_flag_given(const cli_options *o)
{
    const layout d = layout_default(FRAMEWORK_MEGATRON), *l = &o->layout;
    const struct { bool given; const char *flag; } flags[] = {
        {l->tp != d.tp, "--tp"},
        {l->pp != d.pp, "--pp"},
        {o->dp_given, "--dp"},
        {l->cp != d.cp, "--cp"},
        {l->ep != d.ep, "--ep"},
        {l->etp != d.etp, "--etp"},
        {l->vpp != d.vpp, "--vpp"},
        {l->mbs != d.mbs, "--mbs"},
        {o->sp_given, "--sp/--no-sp"},
        {o->sharding_given, "--sharding"},
        {l->recompute != d.recompute, "--recompute"},
        {l->recompute_layers != d.recompute_layers, "--recompute-layers"},
        {l->recompute_modules != d.recompute_modules, "--recompute-modules"},
        {l->optimizer_bf16_states != d.optimizer_bf16_states, "--bf16-optimizer-states"},
        {l->te_cross_entropy != d.te_cross_entropy, "--te-cross-entropy"},
        {l->cuda_graph_full_iteration != d.cuda_graph_full_iteration,
         "--cuda-graph-full-iteration"},
        {l->cuda_graph_attn != d.cuda_graph_attn, "--cuda-graph-attn"},
        {l->rope_unfused != d.rope_unfused, "--no-rope-fusion"},
        {l->shard_grads != d.shard_grads, "--shard-grads"},
        {l->rms_norm_unfused != d.rms_norm_unfused, "--rms-norm-unfused"},
        {l->moe_expert_padding != d.moe_expert_padding, "--moe-expert-padding"},
        {l->cuda_graphs != d.cuda_graphs, "--cuda-graphs/--no-cuda-graphs"},
        {l->moe_dispatcher_sms != d.moe_dispatcher_sms, "--moe-dispatcher-sms"},
        {l->reshard_after_forward != d.reshard_after_forward, "--no-reshard-after-forward"},
        {l->shard_size != d.shard_size, "--shard-size"},
        {l->offload != d.offload, "--offload"},
        {l->pp_schedule != d.pp_schedule, "--pp-schedule"},
        {l->async_tp != d.async_tp, "--async-tp"},
        {l->cp_rotate_alltoall != d.cp_rotate_alltoall, "--cp-rotate alltoall"},
        {l->loss_eager != d.loss_eager, "--compile-components model"},
        {l->rank_order != d.rank_order, "--rank-order"},
        {l->optimizer_offload_pct != d.optimizer_offload_pct, "--optimizer-cpu-offload"},
        {l->activation_offload != d.activation_offload, "--activation-offload"},
        {l->pp_first_layers != d.pp_first_layers, "--pp-first-layers"},
        {l->pp_last_layers != d.pp_last_layers, "--pp-last-layers"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (flags[i].given) return flags[i].flag;
    return NULL;
}

/* The search's own options (beside cli.c's shared ones). */
typedef struct {
    bool stats, no_prune, gbs_nearest, etp_fold, count_fits;
} search_flags;

enum { OPT_SEARCH_STATS = CLI_OWN_OPT, OPT_NO_PRUNE, OPT_GBS_POLICY, OPT_ETP_FOLD,
       OPT_COUNT_FITS };

static const struct option search_opts[] = {
    {"search-stats", no_argument, NULL, OPT_SEARCH_STATS},
    {"no-prune", no_argument, NULL, OPT_NO_PRUNE},
    {"gbs-policy", required_argument, NULL, OPT_GBS_POLICY},
    {"etp-fold", no_argument, NULL, OPT_ETP_FOLD},
    {"count-fits", no_argument, NULL, OPT_COUNT_FITS},
    {NULL, 0, NULL, 0},
};

static int take_search_opt(int opt, const char *value, void *arg)
{
    search_flags *f = arg;
    switch (opt) {
    case OPT_SEARCH_STATS: f->stats = true; return 0;
    case OPT_NO_PRUNE: f->no_prune = true; return 0;
    case OPT_ETP_FOLD: f->etp_fold = true; return 0;
    case OPT_COUNT_FITS: f->count_fits = true; return 0;
    case OPT_GBS_POLICY:
        if (value && !strcmp(value, "exact")) f->gbs_nearest = false;
        else if (value && !strcmp(value, "nearest")) f->gbs_nearest = true;
        else return cli_error("--gbs-policy takes exact or nearest");
        return 0;
    default: return cli_error("unknown option");
    }
}

int cmd_search(int argc, char **argv)
{
    cli_options o;
    bool help;
    search_flags sf = {0};
    cli_own_options own = {search_opts, "", take_search_opt, &sf};
    int rc = cli_parse_own(argc, argv, &own, &o, &help);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    if (!o.model_given)
        return cli_error("no model: give --model NAME|config.json (e.g. --model 8b)");
    if (o.gpus == 0) return cli_error("no GPU count: give --gpus N (e.g. --gpus 64)");
    const char *fixed = layout_flag_given(&o);
    if (fixed) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "%s fixes a layout, but the search chooses the layout itself: drop it, or "
                 "estimate that layout with plan estimate %s ... (the search takes --framework, "
                 "--seq, --gbs and the training flags)",
                 fixed, fixed);
        return cli_error(msg);
    }
    if (o.gemm_headroom_on || o.gemm_headroom_bubble)
        return cli_error(o.gemm_headroom_on
                             ? "--gemm-headroom on prices one layout (plan estimate); the search "
                               "ranks every layout at the sustained GEMM rate: drop the flag here "
                               "and pass it to plan estimate for the layout it picks"
                             : "--gemm-headroom bubble prices one layout (plan estimate's "
                               "default); the search ranks every layout at the sustained GEMM "
                               "rate: drop the flag here, plan estimate of the layout it picks "
                               "adds the bubble's headroom");
    model_spec m;
    system_spec sys;
    if ((rc = cli_load_specs(&o, &m, &sys))) return rc;
    /* --framework X --exact-model: X must build the model as it is (without --framework the
     * search leaves out the frameworks that cannot, and says which) */
    if (o.framework_given && (rc = cli_exact_model_check(&o, &m))) return rc;
    search_options so = {.gpus = o.gpus, .keep = o.top < 32 ? 32 : o.top,
                         .no_overlap = o.no_overlap, .no_prune = sf.no_prune,
                         .gbs_nearest = sf.gbs_nearest, .etp_fold = sf.etp_fold,
                         .moe_dispatcher = o.layout.moe_dispatcher,
                         .fp8_param_gather = o.layout.fp8_param_gather,
                         .bf16_layers_start = o.layout.bf16_layers_start,
                         .bf16_layers_end = o.layout.bf16_layers_end,
                         .moe_fp8_dispatch = o.layout.moe_fp8_dispatch,
                         /* the per-knob counts: printed by --search-stats alone (human or
                          * JSON), on one thread: they count the work done, which on several
                          * threads moves from run to run (det26) */
                         .no_stats = !sf.stats, .one_thread = sf.stats,
                         /* --count-fits: every layout's memory checked, the fits counted */
                         .bound_first = !sf.count_fits, .exact_model = o.exact_model};
    /* The kept plans (at least SEARCH_SIMULATE_DEFAULT) are re-ranked by the step simulator —
     * except under a refined profile: its step terms were fitted to the closed form against
     * measured steps (plan measure --refine), so the refined closed form is the calibrated
     * figure and ranks on its own. */
    so.simulate = (o.no_simulate || sys.step.active) ? 0 : so.keep;
    so.frameworks[FRAMEWORK_FSDP2] = !o.framework_given || o.layout.framework == FRAMEWORK_FSDP2;
    so.frameworks[FRAMEWORK_MEGATRON] =
        !o.framework_given || o.layout.framework == FRAMEWORK_MEGATRON;
    so.frameworks[FRAMEWORK_TORCHTITAN] =
        !o.framework_given || o.layout.framework == FRAMEWORK_TORCHTITAN;
    /* Precision (issue 16): --precision auto, the default, searches bf16 and every
     * low-precision format when the GPU has FP8 tensor cores (the search skips what a GPU or
     * framework cannot run), bf16 alone when it has none; a named format pins it. */
    so.fp8_recipe = o.layout.fp8_recipe;
    so.precisions = cli_precision_mask(&o, &sys);
    if (o.precision_given) { /* one format: some searched framework must run it */
        char perr[CM_ERRLEN] = "";
        bool runs = false;
        for (int fw = 0; fw < LAYOUT_NFRAMEWORKS && !runs; fw++) {
            layout probe = o.layout;
            probe.framework = (layout_framework)fw;
            runs = so.frameworks[fw] && precision_check(&sys, &probe, perr, sizeof perr) == CM_OK;
        }
        if (!runs) return cli_error(perr);
    }
    search_result *r = search_result_new();
    if (!r) return cli_error("out of memory");
    char err[CM_ERRLEN];
    if (search_run(&m, &sys, &o.training, &so, r, err, sizeof err) != CM_OK) {
        search_result_free(r);
        return cli_error(err);
    }
    if (r->evaluated == 0) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "no valid layout of %d GPUs for %s: the global batch (%d sequences) must be "
                 "divisible by the data-parallel size and the heads (%d) by TP; try a --gbs "
                 "that is a multiple of %d, --gbs-policy nearest, or another GPU count",
                 o.gpus, m.name, o.training.global_batch, m.heads, o.gpus);
        search_result_free(r);
        return cli_error(msg);
    }
    if (o.emit != EMIT_NONE) {
        /* The config of the recommended plan, alone on stdout so it can go to a file. */
        if (r->count == 0) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "no layout of %s fits on %d x %s: nothing to emit; try more GPUs, a "
                     "shorter --seq, or plan without --emit to see the closest layouts",
                     m.name, o.gpus, sys.gpu_name);
            search_result_free(r);
            cli_error(msg);
            return 1;
        }
        /* The best plan the format can state: a trainer YAML, Megatron's flags and a Bridge
         * recipe do not hold a torchtitan layout, nor --emit torchtitan the others (issue 19);
         * the fastest plan of the frameworks the format serves */
        /* --exact-model left out the framework whose config the format states: say why */
        int own_fw = o.emit == EMIT_TORCHTITAN ? FRAMEWORK_TORCHTITAN
                   : o.emit == EMIT_MEGATRON_ARGS || o.emit == EMIT_BRIDGE ? FRAMEWORK_MEGATRON
                                                                           : -1;
        if (own_fw >= 0 && r->excluded[own_fw]) {
            char how[96], msg[1024];
            snprintf(how, sizeof how, "%s (the framework --emit %s configures)",
                     layout_framework_name((layout_framework)own_fw), emit_format_name(o.emit));
            exact_model_refusal((layout_framework)own_fw, &m, how, msg, sizeof msg);
            search_result_free(r);
            return cli_error(msg);
        }
        const estimate *pick = &r->ranked[0];
        bool found = false;
        for (int i = 0; i < r->count && !found; i++)
            if (emit_serves(o.emit, r->ranked[i].layout.framework)) {
                pick = &r->ranked[i];
                found = true;
            }
        for (int fw = 0; fw < LAYOUT_NFRAMEWORKS && !found; fw++) /* beyond the kept plans */
            if (r->has_best[fw] && emit_serves(o.emit, (layout_framework)fw)) {
                pick = &r->best[fw];
                found = true;
            }
        char *text = NULL;
        emit_context ctx = {.model_ref = o.model};
        cm_status st = emit_render(o.emit, pick, &m, &sys, &ctx, &text, err, sizeof err);
        search_result_free(r);
        if (st != CM_OK) return cli_error(err);
        fputs(text, stdout);
        free(text);
        return 0;
    }
    if (o.trace && r->count > 0) {
        /* --trace: the recommended plan's simulated step (as plan simulate --trace writes it) */
        sim_workspace *w = sim_alloc();
        sim_options sim = {.serialize = false, .trace = true};
        estimate e = r->ranked[0];
        cm_status st = w ? sim_estimate(w, &m, &sys, &o.training, &e.layout, &sim, &e, err,
                                        sizeof err)
                         : cm_fail(err, sizeof err, CM_ENOMEM, "out of memory");
        if (st == CM_OK) st = output_write_trace(w, o.trace, err, sizeof err);
        sim_free(w);
        if (st != CM_OK) {
            search_result_free(r);
            return cli_error(err);
        }
    }
    /* which precision the recommended plan runs, and what it buys (precision_choice.h) */
    precision_choice pc;
    if (r->count > 0)
        precision_choice_compare(&m, &sys, &r->ranked[0], so.precisions, o.precision_given,
                                 so.fp8_recipe, &pc);
    if (o.format == FORMAT_JSON) {
        json_t *j = output_plan_json(r, o.top, &m, &sys, sf.stats);
        if (r->count > 0)
            json_object_set_new(j, "precision", precision_choice_json(&pc, &r->ranked[0]));
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        /* under --gbs-policy nearest, the batch the recommended plan runs */
        const training_spec *tu = sf.gbs_nearest && r->count ? &r->ranked[0].training : &o.training;
        output_plan_human(stdout, r, o.top, &m, &sys, tu);
        if (r->count > 0) precision_choice_print(stdout, &pc, &r->ranked[0]);
        if (sf.gbs_nearest && r->count > 0)
            printf("\nGlobal batch (--gbs-policy nearest): the recommended plan runs %d "
                   "sequences per step (asked: %d); plans are ranked by time per sequence.\n",
                   r->ranked[0].training.global_batch, o.training.global_batch);
        if (sf.stats) search_stats_print(stdout, &r->stats);
    }
    /* No feasible layout: the table of the closest layouts is the answer, and the exit status
     * is 1 (the JSON's "fits" is false), as for plan estimate and plan check. */
    int fits = r->feasible > 0 && r->count > 0;
    search_result_free(r);
    return fits ? 0 : 1;
}
