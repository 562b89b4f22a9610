/*
 * explain.c — the "why" under a recommendation. Each line is a counterfactual the cost model
 * actually evaluated: the recommended layout with one knob turned (TP, PP, recompute,
 * sharding, micro-batch) and what that costs in time or memory, plus where the step's time
 * goes. Nothing here is canned: a line appears only with the numbers behind it.
 */
#include "explain.h"
#include "cuda_graphs.h"
#include "output.h"
#include "units.h"

#include <string.h>


typedef struct {
    const model_spec *m;
    const system_spec *sys;
    const training_spec *t;
    const estimate *best;
    FILE *f;
    bool best_overlap; /* price a turned knob with TP-comm overlap on where it is possible */
    bool no_overlap;   /* the search kept the overlap knobs off (plan --no-overlap) */
} ex;

static void describe(ex *x, const char *what, layout l)
{
    /* a turned knob can leave an overlap knob without what Megatron requires for it
     * (layout.c): drop it, as the search would have */
    if (l.tp == 1 || !l.sp) l.tp_comm_overlap = false;
    if (l.sharding == SHARDING_DDP) l.overlap_param_gather = false;
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(x->m, x->sys, x->t, &l, &e, err, sizeof err) != CM_OK) return;
    /* A turned knob that makes --tp-comm-overlap possible (TP > 1 with SP, Megatron) is priced
     * with it on too, and the faster that fits is shown, as the search ranks its layouts
     * (search.c overlap_variants); "without --tp-comm-overlap" below turns it off itself. */
    if (x->best_overlap && l.framework == FRAMEWORK_MEGATRON && l.tp > 1 && l.sp &&
        !l.tp_comm_overlap && !x->no_overlap) {
        layout o = l;
        o.tp_comm_overlap = true;
        estimate eo;
        if (estimate_layout(x->m, x->sys, x->t, &o, &eo, err, sizeof err) == CM_OK &&
            eo.feasible && (!e.feasible || eo.time.step_s < e.time.step_s))
            e = eo;
    }
    if (!e.feasible) {
        fprintf(x->f, "- %s: does not fit (%.1f GiB per GPU, %.1f GiB over).\n", what,
                e.memory.total_bytes / UNITS_GIB_BYTES,
                (e.memory.total_bytes - e.memory.capacity_bytes) / UNITS_GIB_BYTES);
        return;
    }
    double ratio = e.time.step_s / x->best->time.step_s;
    double dmem = (e.memory.total_bytes - x->best->memory.total_bytes) / UNITS_GIB_BYTES;
    fprintf(x->f, "- %s: %.2f s/step (%+.1f%%), %+.1f GiB per GPU.\n", what, e.time.step_s,
            100 * (ratio - 1), dmem);
}

/* A torchtitan plan's knobs turned one at a time (issue 19): TP, the pipeline schedule, async
 * TP, compile, resharding. */
static void explain_torchtitan(ex *x, const layout *l)
{
    char what[160];
    if (l->tp > 1 && l->tp % 2 == 0) {
        layout v = *l;
        v.tp /= 2;
        v.dp *= 2;
        if (v.tp == 1) v.sp = v.async_tp = false;
        if (v.shard_size) v.shard_size *= 2;
        snprintf(what, sizeof what, "TP %d instead of %d (DP %d)", v.tp, l->tp, v.dp);
        describe(x, what, v);
    }
    if (l->pp > 1) {
        /* the other schedules torchtitan runs at this pipeline size */
        static const layout_pp_schedule alt[] = {PP_SCHEDULE_1F1B, PP_SCHEDULE_INTERLEAVED_1F1B,
                                                 PP_SCHEDULE_ZBV, PP_SCHEDULE_DUALPIPEV};
        for (size_t i = 0; i < sizeof alt / sizeof *alt; i++) {
            if (alt[i] == layout_pp_schedule_of(l)) continue;
            layout v = *l;
            v.pp_schedule = alt[i];
            v.vpp = alt[i] == PP_SCHEDULE_1F1B ? 1 : 2;
            if (alt[i] == PP_SCHEDULE_ZBV || alt[i] == PP_SCHEDULE_DUALPIPEV)
                v.compile = v.async_tp = false; /* pipelining refuses compiled stages there */
            snprintf(what, sizeof what, "pipeline schedule %s instead", layout_pp_schedule_name(alt[i]));
            describe(x, what, v);
        }
    }
    if (l->async_tp) {
        layout v = *l;
        v.async_tp = false;
        describe(x, "without async TP", v);
    }
    if (l->compile) {
        layout v = *l;
        v.compile = v.async_tp = false;
        describe(x, "without torch.compile", v);
    }
    if (cuda_graphs_on(l)) { /* torchtitan's default graphed step (cuda_graphs.h) */
        layout v = *l;
        v.cuda_graphs = CUDA_GRAPHS_OFF;
        describe(x, "without CUDA graphs (--training.disable_cuda_graphs)", v);
    }
    layout v = *l;
    v.reshard_after_forward = !v.reshard_after_forward;
    /* graphed plans reshard with torchtitan's "default" policy (emit_torchtitan.c) */
    describe(x, v.reshard_after_forward ? cuda_graphs_on(&v) ? "with reshard_after_forward (default)"
                                                             : "with reshard_after_forward (always)"
                                        : "without reshard_after_forward (never)",
             v);
}

void explain_plan(FILE *f, const search_result *r, const model_spec *m, const system_spec *sys,
                  const training_spec *t)
{
    if (r->count == 0) return;
    const estimate *b = &r->ranked[0];
    ex x = {m, sys, t, b, f, true, r->no_overlap};
    const layout *l = &b->layout;
    const time_breakdown *tm = &b->time;
    char what[160];

    /* Where the time goes. */
    fprintf(f, "- Compute is %.0f%% of the step; exposed communication %.0f%%, pipeline bubble "
               "%.0f%%, optimizer %.0f%%.\n",
            100 * tm->compute_s / tm->step_s, 100 * tm->comm_exposed_s / tm->step_s,
            100 * tm->bubble_s / tm->step_s, 100 * tm->optimizer_s / tm->step_s);

    /* Where the model-parallel groups sit, on systems whose NVLink domain is larger than a
     * host (NVL72), where that is not obvious. */
    if (system_domain_gpus(sys) != sys->gpus_per_node) {
        char notes[1024];
        layout_domain_notes(sys, l, notes, sizeof notes);
        if (notes[0]) fprintf(f, "- Placement: %s\n", notes);
    }

    /* Counterfactuals on the recommended layout. */
    layout ro = *l; /* issue 21: the other rank order, where it moves a group and is allowed */
    ro.rank_order = RANK_ORDER_DP_PP;
    if (l->framework == FRAMEWORK_MEGATRON && layout_rank_order_matters(sys, l) &&
        (l->rank_order == RANK_ORDER_PP_DP || layout_rank_order_alternative(sys, l, &ro))) {
        layout v = ro;
        snprintf(what, sizeof what, "rank order %s (%s) instead",
                 layout_rank_order_name(v.rank_order),
                 v.rank_order == RANK_ORDER_PP_DP ? "--use-tp-pp-dp-mapping" : "Megatron's default");
        describe(&x, what, v);
    }
    if (l->framework == FRAMEWORK_MEGATRON) {
        if (l->tp > 1 && l->tp % 2 == 0) {
            layout v = *l;
            v.tp /= 2;
            v.dp *= 2;
            if (v.tp == 1) v.sp = false;
            snprintf(what, sizeof what, "TP %d instead of %d (DP %d)", v.tp, l->tp, v.dp);
            describe(&x, what, v);
        }
        if (l->dp % 2 == 0 && l->tp * 2 <= system_domain_gpus(sys)) {
            layout v = *l;
            v.tp *= 2;
            v.dp /= 2;
            v.sp = true;
            snprintf(what, sizeof what, "TP %d instead of %d (DP %d)", v.tp, l->tp, v.dp);
            describe(&x, what, v);
        }
        if (l->pp > 1 && l->pp % 2 == 0) {
            layout v = *l;
            v.pp /= 2;
            v.dp *= 2;
            v.vpp = 1;
            snprintf(what, sizeof what, "PP %d instead of %d (DP %d)", v.pp, l->pp, v.dp);
            describe(&x, what, v);
        }
        if (l->tp_comm_overlap) {
            layout v = *l;
            v.tp_comm_overlap = false;
            x.best_overlap = false;
            describe(&x, "without --tp-comm-overlap", v);
            x.best_overlap = true;
        }
        if (l->overlap_grad_reduce && l->sharding != SHARDING_FSDP) {
            layout v = *l;
            v.overlap_grad_reduce = v.overlap_param_gather = false;
            describe(&x, "without --overlap-grad-reduce / --overlap-param-gather", v);
        }
        if (l->sharding != SHARDING_DISTOPT) {
            layout v = *l;
            v.sharding = SHARDING_DISTOPT;
            describe(&x, "distributed optimizer instead", v);
        } else {
            layout v = *l;
            v.sharding = SHARDING_DDP;
            describe(&x, "plain DDP (unsharded optimizer) instead", v);
        }
    } else if (l->framework == FRAMEWORK_TORCHTITAN) {
        explain_torchtitan(&x, l);
    } else {
        if (l->cp > 1) {
            layout v = *l;
            v.dp *= v.cp;
            v.cp = 1;
            describe(&x, "without Ulysses sequence parallelism", v);
        }
        layout v = *l;
        v.reshard_after_forward = !v.reshard_after_forward;
        describe(&x, v.reshard_after_forward ? "with reshard_after_forward"
                                             : "without reshard_after_forward (ZeRO-2-like)",
                 v);
    }
    if (l->recompute != RECOMPUTE_NONE) {
        layout v = *l;
        v.recompute = l->recompute == RECOMPUTE_FULL && l->framework != FRAMEWORK_FSDP2
                          ? RECOMPUTE_SELECTIVE
                          : RECOMPUTE_NONE;
        snprintf(what, sizeof what, "recompute %s instead of %s",
                 layout_recompute_name(v.recompute), layout_recompute_name(l->recompute));
        describe(&x, what, v);
    }
    {
        layout v = *l;
        v.mbs *= 2;
        snprintf(what, sizeof what, "micro-batch %d instead of %d", v.mbs, l->mbs);
        if (t->global_batch % (v.dp * v.mbs) == 0) describe(&x, what, v);
    }
    const memory_breakdown *mb = &b->memory;
    fprintf(f, "- Memory: activations %.0f%%, weights+gradients+optimizer %.0f%% of the %.1f GiB "
               "used; %.1f GiB headroom.\n",
            100 * mb->activations_bytes / mb->total_bytes,
            100 * (mb->weights_bytes + mb->gradients_bytes + mb->optimizer_bytes) /
                mb->total_bytes,
            mb->total_bytes / UNITS_GIB_BYTES, (mb->capacity_bytes - mb->total_bytes) / UNITS_GIB_BYTES);
    explain_tight(f, r);
}

/* A plan whose peak is within EXPLAIN_TIGHT_FRACTION of the GPU's memory (explain.h): names the
 * fastest kept plan with that much room, for the user to weigh; the ranking is unchanged. */

static double step_of(const estimate *e) { return e->simulated ? e->time_sim.step_s : e->time.step_s; }

bool explain_peak_tight(const memory_breakdown *mb)
{
    return mb->total_bytes <= mb->capacity_bytes &&
           mb->capacity_bytes - mb->total_bytes < EXPLAIN_TIGHT_FRACTION * mb->capacity_bytes;
}

bool explain_cache_tight(const memory_breakdown *mb)
{
    double cache = mb->reserved_bytes + mb->framework_bytes;
    return mb->total_bytes <= mb->capacity_bytes && !explain_peak_tight(mb) &&
           mb->capacity_bytes - cache < EXPLAIN_TIGHT_FRACTION * mb->capacity_bytes;
}

void explain_tight(FILE *f, const search_result *r)
{
    if (r->count == 0) return;
    const memory_breakdown *mb = &r->ranked[0].memory;
    double room = mb->capacity_bytes - mb->total_bytes; /* the headroom the output shows */
    if (explain_cache_tight(mb))
        fprintf(f, "- Cache tight: %.1f GiB headroom, but torch's reserved peak (%.1f GiB with the "
                   "context) leaves under %.0f%% of the GPU: %s.",
                room / UNITS_GIB_BYTES, (mb->reserved_bytes + mb->framework_bytes) / UNITS_GIB_BYTES,
                100 * EXPLAIN_TIGHT_FRACTION, EXPLAIN_CACHE_TIGHT_RISKS);
    else if (room >= EXPLAIN_TIGHT_FRACTION * mb->capacity_bytes) return;
    else
        fprintf(f, "- Tight: %.1f GiB headroom is under %.0f%% of the GPU: %s.",
                room / UNITS_GIB_BYTES, 100 * EXPLAIN_TIGHT_FRACTION, EXPLAIN_TIGHT_RISKS);
    for (int i = 1; i < r->count; i++) {
        const estimate *e = &r->ranked[i];
        /* a feasible plan's peak fits (need_bytes >= total_bytes) */
        if (!e->feasible || explain_peak_tight(&e->memory) || explain_cache_tight(&e->memory))
            continue;
        /* compare like with like: simulated figures only when both were re-ranked */
        bool sim = e->simulated && r->ranked[0].simulated;
        double t0 = sim ? step_of(&r->ranked[0]) : r->ranked[0].time.step_s;
        double t1 = sim ? step_of(e) : e->time.step_s;
        char line[256];
        output_layout_line(e, line, sizeof line);
        fprintf(f, " The fastest ranked plan with that room is #%d (%s): %.2f s/step (%+.1f%%), "
                   "%.1f GiB.",
                i + 1, line, t1, 100 * (t1 - t0) / t0, e->memory.total_bytes / UNITS_GIB_BYTES);
        break;
    }
    fputc('\n', f);
}
