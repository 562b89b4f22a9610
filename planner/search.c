/*
 * search.c — exhaustive layout search (see search.h).
 *
 * Enumeration order: framework, tp, pp, cp (dp follows from the GPU count), ep and expert-tp,
 * vpp, micro-batch (every divisor of the per-replica batch), sequence parallel, sharding,
 * recompute (and for FSDP2: HSDP shard group, reshard-after-forward, offload); evaluation adds
 * the overlap knobs and the memory knobs (offload, partial recompute) per layout. Cheap divisibility checks come before the cost model; the
 * framework rules themselves are layout_check()'s, so the planner can never recommend a layout
 * that `plan estimate` would reject.
 */
#include "precision.h"
#include "search.h"

#include "exact_model.h"
#include "offload.h"

#include "layout_codec.h"
#include "search_layouts.h"
#include "search_ring.h"
#include "search_torchtitan.h"
#include "memory.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

search_result *search_result_new(void) { return calloc(1, sizeof(search_result)); }
void search_result_free(search_result *r) { free(r); }

static long parallel_degree(const layout *l)
{
    return (long)l->tp * l->pp * l->cp * l->ep * l->vpp;
}

double search_per_batch(double step_s, const estimate *a, const estimate *b)
{
    int ga = a->training.global_batch, gb = b->training.global_batch;
    return ga == gb || ga < 1 ? step_s : step_s / ga;
}

bool search_better(const estimate *a, const estimate *b)
{
    double ta = search_per_batch(a->time.step_s, a, b), tb = search_per_batch(b->time.step_s, b, a);
    if (fabs(ta - tb) > 1e-9 * fmax(ta, tb)) return ta < tb;
    double ma = a->memory.total_bytes, mb = b->memory.total_bytes;
    if (fabs(ma - mb) > 1e-9 * fmax(ma, mb)) return ma < mb;
    /* Equal time and memory: the simpler layout (fewer model-parallel splits) is easier to run. */
    return parallel_degree(&a->layout) < parallel_degree(&b->layout);
}

/*
 * The search enumerates the layouts into chunks (search_ring.h) and evaluates each chunk as it
 * fills (issue 21: the whole list was built first, ~150 MB and its page faults for
 * DeepSeek-V3 on 16384 GPUs, on one thread before any evaluation began). On one thread the
 * enumerating thread evaluates each chunk in place, in list order. On several, full chunks
 * go into a ring that the other threads take chunks from in turn (search_ring.c). Each
 * worker keeps its own partial result, with the candidate's position in the list as a
 * tie-break, and the partial results are merged in that order, so the ranking is the one a
 * single thread walking the list would produce.
 */
typedef struct worker worker;

/* Chunks in the ring per thread: enough that the enumerating thread rarely waits. */
enum { RING_CHUNKS_PER_THREAD = 3 };

typedef struct {
    const model_spec *m;
    const training_spec *t;
    const search_options *opt;
    const system_spec *sys;
    worker *w;        /* w[0] is this thread's */
    int nthreads;     /* workers made; the others' threads start once a chunk fills */
    bool tried;       /* the threads were started (when the first chunk filled) */
    int started;      /* threads running besides this one */
    pthread_t *tid;
    search_ring *ring; /* NULL: one thread */
    search_chunk *fill; /* the chunk being filled */
    long listed;        /* layouts enumerated so far */
} ctx;

static void emit_one(ctx *c, const layout *l);
static void emit(ctx *c, const layout *l);
/* search_torchtitan.c's way in (search_torchtitan.h) */
static void emit_cb(void *arg, const layout *l) { emit(arg, l); }

/* Each layout once per precision searched (search_options.precisions). */
static void emit(ctx *c, const layout *l)
{
    unsigned mask = c->opt->precisions ? c->opt->precisions : 1u << PRECISION_BF16;
    for (int p = 0; p < PRECISION_COUNT; p++) {
        if (!(mask & (1u << p))) continue;
        layout lp = *l;
        lp.precision = (layout_precision)p;
        lp.fp8_recipe = p == PRECISION_FP8 ? c->opt->fp8_recipe : FP8_RECIPE_DEFAULT;
        if (p != PRECISION_BF16 && precision_check(c->sys, &lp, NULL, 0) != CM_OK) continue;
        bool megatron_lp = p != PRECISION_BF16 && lp.framework == FRAMEWORK_MEGATRON;
        if (megatron_lp) {
            lp.bf16_layers_start = c->opt->bf16_layers_start;
            lp.bf16_layers_end = c->opt->bf16_layers_end;
        }
        lp.moe_fp8_dispatch = p != PRECISION_BF16 && c->opt->moe_fp8_dispatch && lp.ep > 1 &&
                              lp.moe_dispatcher == MOE_DISPATCH_DEEPEP;
        /* --fp8-param-gather: off and on (pinned on when asked) where Megatron allows it */
        bool pg = megatron_lp && lp.sharding != SHARDING_DDP;
        if (!pg || !c->opt->fp8_param_gather) emit_one(c, &lp);
        if (pg) {
            lp.fp8_param_gather = true;
            emit_one(c, &lp);
        }
    }
}

static void publish(ctx *c);

static void emit_one(ctx *c, const layout *l)
{
    c->fill->v[c->fill->n++] = *l;
    c->listed++;
    if (c->fill->n == SEARCH_CHUNK_LAYOUTS) publish(c);
}

/* One worker's partial result; seq_* hold each kept estimate's position in the list. */
struct worker {
    const model_spec *m;
    const system_spec *sys;
    const training_spec *t;
    const search_options *opt;
    search_ring *ring;
    search_result *r;
    long ranked_seq[SEARCH_KEEP_MAX];
    long best_seq[LAYOUT_NFRAMEWORKS], best_sharding_seq[LAYOUT_NFRAMEWORKS][3],
        closest_seq[LAYOUT_NFRAMEWORKS];
    estimate scratch;
    /* consider(): the overlap-knob variants of one layout (variant), and a memory-knob try's
     * (trial); a try that is taken swaps the two, one that is not leaves variant as it was */
    estimate *variant, *trial;
    estimate variant_buf[2][6];
    estimate_cache *cache; /* this thread's layer costs (estimate_search.c) */
    search_stats_tally tally; /* r->stats' counts, added up at the end of worker_run */
};

static void count_layout(worker *w, const layout *l, int n, estimate_outcome how)
{
    if (w->opt->no_stats) return; /* nothing reads them (search.h) */
    search_stats_tally_count(&w->tally, &w->r->stats, l, n, how);
}

/* Does (a, sa) come before (b, sb): better, or equal and earlier in the list? */
static bool before(const estimate *a, long sa, const estimate *b, long sb)
{
    if (search_better(a, b)) return true;
    if (search_better(b, a)) return false;
    return sa < sb;
}

static double over_capacity(const estimate *e)
{
    return e->memory.need_bytes - e->memory.capacity_bytes;
}

/* The partial result's "closest to fitting" slot: an infeasible estimate at list position seq. */
static void fold_closest(search_result *r, long *closest_seq, const estimate *e, long seq)
{
    int fw = e->layout.framework;
    double over = over_capacity(e);
    if (!r->has_closest[fw] || over < over_capacity(&r->closest[fw]) ||
        (over == over_capacity(&r->closest[fw]) && seq < closest_seq[fw])) {
        r->closest[fw] = *e;
        r->has_closest[fw] = true;
        closest_seq[fw] = seq;
    }
}

/* The best-per-framework and best-per-sharding slots, for a feasible estimate. */
static void fold_best(search_result *r, long *best_seq, long (*best_sh_seq)[3],
                      const estimate *e, long seq)
{
    int fw = e->layout.framework, sh = e->layout.sharding;
    if (!r->has_best_sharding[fw][sh] ||
        before(e, seq, &r->best_sharding[fw][sh], best_sh_seq[fw][sh])) {
        r->best_sharding[fw][sh] = *e;
        r->has_best_sharding[fw][sh] = true;
        best_sh_seq[fw][sh] = seq;
    }
    if (!r->has_best[fw] || before(e, seq, &r->best[fw], best_seq[fw])) {
        r->best[fw] = *e;
        r->has_best[fw] = true;
        best_seq[fw] = seq;
    }
}

/* The ranked list (the best `keep`, in order), for a feasible estimate. */
static void fold_ranked(search_result *r, long *ranked_seq, int keep, const estimate *e,
                        long seq)
{
    if (r->count == keep && !before(e, seq, &r->ranked[keep - 1], ranked_seq[keep - 1])) return;
    int i = r->count < keep ? r->count++ : keep - 1;
    while (i > 0 && before(e, seq, &r->ranked[i - 1], ranked_seq[i - 1])) {
        r->ranked[i] = r->ranked[i - 1];
        ranked_seq[i] = ranked_seq[i - 1];
        i--;
    }
    r->ranked[i] = *e;
    ranked_seq[i] = seq;
}

/*
 * Megatron's overlap knobs (issue 15), searched where they change anything: with tp > 1 and
 * sequence parallel, --tp-comm-overlap off and on; a DDP or distributed-optimizer layout of
 * more than one data-parallel rank without DP overlap, with --overlap-grad-reduce, and
 * (distributed optimizer; Megatron allows it only with the former) with
 * --overlap-param-gather too. estimate_layout_search_overlap_variants prices memory and the
 * layer costs once per tp_comm_overlap value (its userbuffers cost memory; the DP knobs cost
 * none in this model) and each variant's step, and only the fastest variant that fits goes on:
 * the ranking orders by step time first, so the others could only rank right under it as
 * near-duplicates. plan --no-overlap keeps them off. Writes the variants into out; returns how
 * many (1: the layout alone).
 */
static int overlap_variants(const search_options *opt, const system_spec *sys, const layout *l,
                            layout out[6])
{
    out[0] = *l;
    if (opt->no_overlap || l->framework != FRAMEWORK_MEGATRON) return 1;
    int n = 1;
    if (l->sharding != SHARDING_FSDP && l->dp * l->cp > 1) {
        out[n] = *l;
        out[n++].overlap_grad_reduce = true;
        if (l->sharding == SHARDING_DISTOPT) {
            out[n] = out[n - 1];
            out[n++].overlap_param_gather = true;
        }
    }
    /* userbuffers reach the peers of one NVLink domain only (layer_recipe.c): a TP group
     * that leaves it gains nothing, so the variant would only duplicate the layout */
    if (l->tp > 1 && l->sp && !layout_tp_group(sys, l).spans_nodes)
        for (int i = 0, dp_n = n; i < dp_n; i++) {
            out[n] = out[i];
            out[n++].tp_comm_overlap = true;
        }
    return n;
}

static void consider_estimate(worker *w, const estimate *e, long seq, bool rank);

/*
 * The step time a layout must beat to change this worker's result: the last of a full ranked
 * list, and its framework and sharding's best so far (the framework's best is the best of its
 * shardings). 0: none yet, nothing is pruned. A layout that cannot beat either could only
 * rank below `keep` plans already held, so skipping it leaves the result as it was (the merge
 * keeps the best `keep` of the workers' lists, each a superset of its share of them).
 */
static double prune_threshold_s(const worker *w, const layout *l, int batch)
{
    const search_result *r = w->r;
    const search_options *o = w->opt;
    if (o->no_prune || (o->visit && !o->visit_bound) || r->count < o->keep) return 0;
    if (o->fits_only) return ESTIMATE_PRUNE_ALL_S;
    if (!r->has_best_sharding[l->framework][l->sharding]) return 0;
    const estimate *ea = &r->ranked[r->count - 1];
    const estimate *eb = &r->best_sharding[l->framework][l->sharding];
    /* per sequence of each plan's batch, as search_better ranks under --gbs-policy nearest */
    double a = ea->time.step_s / ea->training.global_batch;
    double b = eb->time.step_s / eb->training.global_batch;
    double c = o->visit ? o->visit_bound(l, o->visit_arg) : 0; /* the visitor's own */
    if (c < 0) return 0;
    if (c > a) a = c;
    /* a margin far above search_better's 1e-9 tie tolerance: only clearly slower ones go */
    return (a > b ? a : b) * batch * (1 + 1e-6);
}

/* Evaluates ls[0..nv) (the overlap variants of one layout) into w->variant; returns false
 * when the cost model rejects the layout. */
static bool evaluate_variants(worker *w, const training_spec *t, const layout *ls, int nv,
                              estimate_outcome *how)
{
    return estimate_layout_search(w->m, w->sys, t, ls, nv, w->variant, w->cache,
                                  prune_threshold_s(w, &ls[0], t->global_batch), how) == CM_OK;
}

/* A memory-knob try of ls (estimate_layout_search_try: only the rules of the knobs it sets
 * are checked again) into w->trial. */
static bool evaluate_try(worker *w, const training_spec *t, const layout *ls, int nv,
                         estimate_outcome *how)
{
    return estimate_layout_search_try(w->m, w->sys, t, ls, nv, w->trial, w->cache,
                                      prune_threshold_s(w, &ls[0], t->global_batch),
                                      how) == CM_OK;
}

/* The try in w->trial becomes the layout's variants. */
static void take_try(worker *w)
{
    estimate *v = w->variant;
    w->variant = w->trial;
    w->trial = v;
}

/* Activation offload that fits with all layers but the last offloaded tries the fewest first
 * layers that still fit (--activation-offload-layers N): less host-link traffic and host
 * memory, never slower (offload.h). When it fits, lv and w->variant become it. */
static void fewest_offload_layers(worker *w, const training_spec *t, layout *lv, int nv,
                                  estimate_outcome *how)
{
    int most = offload_activation_layers(w->m, &lv[0]);
    if (most < 2) return;
    int lo = 1, hi = most; /* the fewest layers whose memory fits: in [lo, hi] */
    while (lo < hi) {
        layout p = lv[0];
        p.activation_offload_layers = (lo + hi) / 2;
        memory_breakdown mb = estimate_cache_memory_peak(w->cache, w->m, w->sys, t, &p);
        if (memory_fits(&mb)) hi = p.activation_offload_layers;
        else lo = p.activation_offload_layers + 1;
    }
    if (lo >= most) return;
    layout lf[6];
    for (int k = 0; k < nv; k++) {
        lf[k] = lv[k];
        lf[k].activation_offload_layers = lo;
    }
    estimate_outcome h;
    if (evaluate_try(w, t, lf, nv, &h) && h != ESTIMATE_UNTIMED) {
        take_try(w);
        memcpy(lv, lf, (size_t)nv * sizeof *lv);
        *how = h;
    }
}

/*
 * The memory knobs (issue 21), searched where they can matter: each only saves memory at a
 * cost in time, so a layout tries them only when it does not fit without them and they can
 * free enough, and keeps the cheapest that fits: Megatron's optimizer CPU offload (25, 50, 75
 * or 100% of the distributed optimizer's shard, the least that frees enough) and activation
 * offload (pp 1, no recompute; with the whole optimizer offloaded too if need be). Full
 * recompute that fits tries the fewest layers a stage (--recompute-method block
 * --recompute-num-layers k) that still fit, which is faster. Returns the number of overlap
 * variants now in w->variant and ls.
 */
static int memory_knobs(worker *w, const training_spec *t, layout *ls, int nv,
                        estimate_outcome *how)
{
    const layout *l = &ls[0];
    if (l->framework != FRAMEWORK_MEGATRON) return nv;
    if (*how == ESTIMATE_UNTIMED) {
        /* what each can free at most (memory.c, offload.h): the optimizer state, linear in
         * the fraction; the activations but one layer's (the logits stay) */
        const memory_breakdown *mb = &w->variant[0].memory;
        double over = mb->need_bytes - mb->capacity_bytes;
        double opt = l->sharding == SHARDING_DISTOPT ? mb->optimizer_bytes : 0;
        double act = mb->activations_bytes - mb->logits_bytes;
        layout tries[3];
        int n = 0;
        if (opt > 0 && over <= opt) { /* the least of 25, 50, 75, 100% that frees enough */
            int pct = 25;
            while (pct < 100 && pct / 100.0 * opt < over) pct += 25;
            tries[n] = *l;
            tries[n++].optimizer_offload_pct = pct;
        }
        if (l->pp == 1 && l->recompute == RECOMPUTE_NONE && over <= act + opt) {
            tries[n] = *l;
            tries[n++].activation_offload = true;
            if (l->sharding == SHARDING_DISTOPT) {
                tries[n] = tries[n - 1];
                tries[n++].optimizer_offload_pct = 100;
            }
        }
        /* the base's estimates stay in w->variant unless a try fits (the tries go to
         * w->trial: nothing of the base fits, so nothing of it was timed or pruned, its
         * memory halves are all there is) */
        for (int i = 0; i < n; i++) {
            layout lv[6];
            for (int k = 0; k < nv; k++) {
                lv[k] = ls[k];
                lv[k].optimizer_offload_pct = tries[i].optimizer_offload_pct;
                lv[k].activation_offload = tries[i].activation_offload;
            }
            estimate_outcome h;
            if (!evaluate_try(w, t, lv, nv, &h)) continue;
            count_layout(w, &lv[0], nv, h);
            if (h == ESTIMATE_UNTIMED) continue;
            take_try(w);
            if (lv[0].activation_offload && !w->opt->fits_only)
                fewest_offload_layers(w, t, lv, nv, &h);
            memcpy(ls, lv, (size_t)nv * sizeof *ls);
            *how = h;
            return nv;
        }
        /* nothing fits: the layout without offload stays the one judged (closest) */
        return nv;
    }
    /* fits_only (search.h): these tries and fewest_offload_layers change only layer counts
     * and which variants fit; taken only where one fits, as one of their base does */
    if (l->recompute == RECOMPUTE_FULL && l->recompute_layers == 0 && !w->opt->fits_only) {
        int per = layout_max_stage_layers(w->m, l);
        if (per < 2) return nv;
        layout lv[6];
        estimate_outcome h;
        /* one layer a stage first: if it fits it is the answer; if its lower bound already
         * rules it out, so it does every k (more recompute, more time) */
        for (int k = 0; k < nv; k++) {
            lv[k] = ls[k];
            lv[k].recompute_layers = 1;
        }
        /* a pruned layout whose tries are all bounded out stays pruned: none is made (the
         * result is the same, the counts hold none of them; speed15) */
        if (*how == ESTIMATE_PRUNED && !w->opt->visit &&
            estimate_search_recompute_tries_pruned(w->m, w->sys, t, lv, nv, w->cache,
                                                   prune_threshold_s(w, lv, t->global_batch)))
            return nv;
        if (!evaluate_try(w, t, lv, nv, &h)) return nv;
        if (h != ESTIMATE_UNTIMED) {
            count_layout(w, &lv[0], nv, h);
            take_try(w);
            memcpy(ls, lv, (size_t)nv * sizeof *ls);
            *how = h;
            return nv;
        }
        int lo = 2, hi = per; /* the fewest layers a stage whose memory fits: in [lo, hi] */
        while (lo < hi) {
            layout p = *l;
            p.recompute_layers = (lo + hi) / 2;
            memory_breakdown mb = estimate_cache_memory_peak(w->cache, w->m, w->sys, t, &p);
            if (memory_fits(&mb)) hi = p.recompute_layers;
            else lo = p.recompute_layers + 1;
        }
        if (lo >= per) return nv;
        for (int k = 0; k < nv; k++) lv[k].recompute_layers = lo;
        if (evaluate_try(w, t, lv, nv, &h) && h != ESTIMATE_UNTIMED) {
            count_layout(w, &lv[0], nv, h);
            take_try(w);
            memcpy(ls, lv, (size_t)nv * sizeof *ls);
            *how = h;
            return nv;
        }
    }
    return nv;
}

static void consider(worker *w, const layout *base, long seq)
{
    layout ls[6];
    int nv = overlap_variants(w->opt, w->sys, base, ls);
    training_spec t = *w->t; /* the batch this layout's data-parallel size runs */
    t.global_batch = search_batch_for(w->opt, w->t, base->dp);
    if (w->opt->visit) {
        /* the caller sees every variant: timed whole where it fits (with the layer-cost
         * cache), memory alone where it does not (feasible false, no reason text: plan
         * report's visitors read only the memory of those); pruned only where the visitor
         * says which times it needs (prune_threshold_s), its fitting variants then untimed
         * to visit_fit */
        estimate_outcome how;
        if (!evaluate_variants(w, &t, ls, nv, &how)) return;
        /* the memory knobs as plan's search tries them, so the report recommends what plan
         * does */
        if (!w->opt->no_memory_knobs) nv = memory_knobs(w, &t, ls, nv, &how);
        if (how == ESTIMATE_PRUNED) estimate_search_share_memory(ls, nv, w->variant);
        /* the ranked list holds one variant per layout, as below, so that the simulator
         * re-ranks the same pool plan's search does */
        int best = 0;
        for (int i = 1; i < nv; i++)
            if (w->variant[i].feasible && search_better(&w->variant[i], &w->variant[best]))
                best = i;
        for (int i = 0; i < nv; i++) {
            estimate *e = &w->variant[i];
            if (how == ESTIMATE_PRUNED && memory_fits(&e->memory)) {
                e->feasible = true; /* as a pruned layout counts below */
                w->r->evaluated++;
                w->r->feasible++;
                w->opt->visit_fit(e, w->opt->visit_arg);
            } else {
                consider_estimate(w, e, seq, i == best);
            }
        }
        return;
    }
    /* A layout that does not fit in memory is not timed: it can only be "closest to
     * fitting", which needs its memory alone (search_run times the one kept); one over the
     * device by more than the closest held cannot be it, so its memory may stop at a stage
     * over by that much (estimate_cache_unfit_stop_over; speed24) */
    const search_result *r = w->r;
    estimate_cache_unfit_stop_over(w->cache, r->has_closest[base->framework]
                                                 ? over_capacity(&r->closest[base->framework])
                                                 : INFINITY);
    estimate_outcome how;
    if (!evaluate_variants(w, &t, ls, nv, &how)) return;
    count_layout(w, base, nv, how);
    if (how == ESTIMATE_BOUNDED) { /* bounded before its memory: not known to fit */
        w->r->evaluated += nv;
        w->r->unchecked++;
        return;
    }
    if (!w->opt->no_memory_knobs) nv = memory_knobs(w, &t, ls, nv, &how);
    if (how == ESTIMATE_PRUNED) { /* it fits: counted as the feasible layout it is */
        w->r->evaluated += nv;
        w->r->feasible++;
        return;
    }
    int best = 0; /* the knobs off: the least memory, so feasible if any variant is */
    for (int i = 1; i < nv; i++)
        if (w->variant[i].feasible && search_better(&w->variant[i], &w->variant[best])) best = i;
    w->r->evaluated += nv - 1;
    consider_estimate(w, &w->variant[best], seq, true);
}

/* e into the result (and to the visitor); rank: into the ranked list too */
static void consider_estimate(worker *w, const estimate *e, long seq, bool rank)
{
    search_result *r = w->r;
    r->evaluated++;
    if (w->opt->visit) w->opt->visit(e, w->opt->visit_arg);
    if (!e->feasible) {
        fold_closest(r, w->closest_seq, e, seq);
        return;
    }
    r->feasible++;
    fold_best(r, w->best_seq, w->best_sharding_seq, e, seq);
    if (rank) fold_ranked(r, w->ranked_seq, w->opt->keep, e, seq);
}

/* A chunk's layouts, in list order; the worker's tables grown ahead of the list (the whole
 * length is not known while it is evaluated): sized for twice the layouts listed so far, so at
 * the end at most twice the size a table for the whole list had. Larger is not better: a key
 * spread over a larger table touches a page of its own (DeepSeek-V3 at 16384 on one thread:
 * 42,456 recipes built with tables for the layouts so far, 36,187 for twice them, 32,988 for
 * 16 times them; but 16 times cost 405B at 16384 30,161 minor faults against 15,057 and
 * 7,851, and 30B on 64 GPUs 23,930 against 7,693 and 4,643). */
static void run_chunk(void *arg, const search_chunk *ch)
{
    worker *w = arg;
    estimate_cache_expect(w->cache, 2 * (ch->seq0 + ch->n));
    for (int i = 0; i < ch->n; i++) consider(w, &ch->v[i], ch->seq0 + i);
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    search_ring_work(w->ring, w);
    search_stats_tally_flush(&w->tally, &w->r->stats);
    return NULL;
}

static void start_threads(ctx *c)
{
    c->tried = true;
    int started = 0;
    if (c->tid)
        for (int k = 1; k < c->nthreads; k++) {
            if (pthread_create(&c->tid[k], NULL, worker_run, &c->w[k]) != 0) break;
            started = k;
        }
    c->started = started;
}

/* The filled chunk goes to the workers (one thread: evaluated here and now), and the next
 * layouts go into a free one (search_ring_publish). The other threads start with the first
 * full chunk: a list that fills none is evaluated on this thread alone. */
static void publish(ctx *c)
{
    if (!c->ring) {
        run_chunk(&c->w[0], c->fill);
        c->fill->seq0 = c->listed;
        c->fill->n = 0;
        return;
    }
    if (!c->tried) start_threads(c);
    c->fill = search_ring_publish(c->ring, c->fill, &c->w[0], c->listed);
}

/* The end of the list: the last chunk evaluated, the threads' work finished and joined. */
static void finish_list(ctx *c)
{
    if (!c->ring || !c->tried) { /* one thread, or no chunk filled: the rest here */
        run_chunk(&c->w[0], c->fill);
    } else { /* this thread works too; a failed start leaves it all here */
        search_ring_finish(c->ring, c->fill, &c->w[0]);
        for (int k = 1; k <= c->started; k++) pthread_join(c->tid[k], NULL);
    }
    search_stats_tally_flush(&c->w[0].tally, &c->w[0].r->stats);
}

static void free_workers(worker *w, int n)
{
    if (w)
        for (int k = 0; k < n; k++) estimate_cache_free(w[k].cache);
    free(w);
}

static void cache_counts(search_result *r, const worker *w)
{
    long b, h;
    estimate_cache_counts(w->cache, &b, &h);
    r->stats.layer_builds += b;
    r->stats.layer_hits += h;
}

/* Merges the workers' partial results into r: every kept estimate of every part, folded with
 * its list position. */
static void merge_parts(const search_options *opt, worker *w, int nthreads, search_result *r)
{
    long ranked_seq[SEARCH_KEEP_MAX], best_seq[LAYOUT_NFRAMEWORKS] = {0},
         best_sh_seq[LAYOUT_NFRAMEWORKS][3] = {{0}}, closest_seq[LAYOUT_NFRAMEWORKS] = {0};
    for (int k = 0; k < nthreads; k++) {
        worker *pk = &w[k];
        search_result *p = pk->r;
        r->evaluated += p->evaluated;
        r->feasible += p->feasible;
        r->unchecked += p->unchecked;
        search_stats_add(&r->stats, &p->stats);
        cache_counts(r, pk);
        for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
            if (p->has_closest[fw]) fold_closest(r, closest_seq, &p->closest[fw], pk->closest_seq[fw]);
            for (int sh = 0; sh < 3; sh++)
                if (p->has_best_sharding[fw][sh])
                    fold_best(r, best_seq, best_sh_seq, &p->best_sharding[fw][sh],
                              pk->best_sharding_seq[fw][sh]);
        }
        for (int i = 0; i < p->count; i++)
            fold_ranked(r, ranked_seq, opt->keep, &p->ranked[i], pk->ranked_seq[i]);
    }
}

/* Enumerates the layouts and evaluates them into r: on several threads unless a visit
 * callback wants one order. */
static cm_status enumerate_and_evaluate(const model_spec *m, const system_spec *sys,
                                        const training_spec *t, const search_options *opt,
                                        search_result *r, char *err, size_t errlen)
{
    int nthreads = opt->visit || opt->one_thread ? 1 : search_ring_threads();
    ctx c = {.m = m, .sys = sys, .t = t, .opt = opt, .nthreads = nthreads};
    c.w = calloc((size_t)nthreads, sizeof *c.w);
    search_result *parts = nthreads > 1 ? calloc((size_t)nthreads, sizeof *parts) : NULL;
    search_chunk *alone = nthreads == 1 ? malloc(sizeof *alone) : NULL;
    if (nthreads > 1) {
        c.ring = search_ring_new(RING_CHUNKS_PER_THREAD * nthreads, run_chunk);
        c.tid = calloc((size_t)nthreads, sizeof *c.tid);
    }
    bool oom = !c.w || (nthreads > 1 ? !parts || !c.ring || !c.tid : !alone);
    for (int k = 0; c.w && k < nthreads; k++) {
        c.w[k] = (worker){.m = m, .sys = sys, .t = t, .opt = opt, .ring = c.ring,
                          .r = nthreads > 1 ? &parts[k] : r,
                          .cache = estimate_cache_new_for(0)};
        c.w[k].variant = c.w[k].variant_buf[0];
        c.w[k].trial = c.w[k].variant_buf[1];
        oom |= !c.w[k].cache;
        /* a pruned layout's memory is read only by a visitor (consider) */
        estimate_cache_skip_pruned_memory(c.w[k].cache, !opt->visit);
        estimate_cache_bound_first(c.w[k].cache, opt->bound_first && !opt->visit &&
                                                     !opt->fits_only && !opt->no_prune);
        estimate_cache_unfit_memory_whole(c.w[k].cache, opt->unfit_memory_whole);
        /* several precisions: each layout listed once per precision (emit) */
        estimate_cache_check_per_layout(c.w[k].cache, opt->precisions & (opt->precisions - 1));
    }
    if (oom) {
        free_workers(c.w, nthreads);
        free(parts);
        free(alone);
        search_ring_free(c.ring);
        free(c.tid);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory for the search's workers");
    }
    if (c.ring) {
        c.fill = search_ring_first(c.ring);
    } else {
        c.fill = alone;
        c.fill->seq0 = 0;
        c.fill->n = 0;
    }
    if (opt->frameworks[FRAMEWORK_MEGATRON])
        search_megatron_layouts(m, sys, t, opt, emit_cb, &c);
    if (opt->frameworks[FRAMEWORK_FSDP2]) search_fsdp2_layouts(m, sys, t, opt, emit_cb, &c);
    if (opt->frameworks[FRAMEWORK_TORCHTITAN]) search_torchtitan_layouts(m, sys, t, opt, emit_cb, &c);
    finish_list(&c);
    if (nthreads == 1) cache_counts(r, &c.w[0]);
    else merge_parts(opt, c.w, nthreads, r);
    free(parts);
    free(alone);
    search_ring_free(c.ring);
    free(c.tid);
    free_workers(c.w, nthreads);
    return CM_OK;
}

cm_status search_run(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const search_options *opt, search_result *result, char *err,
                     size_t errlen)
{
    if (opt->gpus < 1 || opt->gpus > 10000000)
        return cm_fail(err, errlen, CM_EINVAL,
                       "GPU count %d is out of range: give --gpus between 1 and 10000000",
                       opt->gpus);
    if (opt->keep < 1 || opt->keep > SEARCH_KEEP_MAX)
        return cm_fail(err, errlen, CM_EINVAL, "--top must be between 1 and %d",
                       SEARCH_KEEP_MAX);
    cm_status st = training_check(t, err, errlen);
    if (st != CM_OK) return st;
    memset(result, 0, sizeof *result);
    result->gpus = opt->gpus;
    result->no_overlap = opt->no_overlap;
    /* the bound before the memory is taken as enumerate_and_evaluate sets it per cache */
    result->feasible_counted =
        !opt->fits_only && !(opt->bound_first && !opt->visit && !opt->no_prune);
    /* --exact-model: the frameworks whose own model code cannot build m are not enumerated */
    search_options o = *opt;
    result->exact_model = opt->exact_model;
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        if (o.exact_model && o.frameworks[fw] && !exact_model_builds((layout_framework)fw, m)) {
            o.frameworks[fw] = false;
            result->excluded[fw] = true;
        }
        result->searched[fw] = o.frameworks[fw];
    }
    opt = &o;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = enumerate_and_evaluate(m, sys, t, opt, result, err, errlen);
    if (st != CM_OK) return st;
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) /* the closest plans whole (the search skipped their time) */
        if (result->has_closest[fw]) {
            layout l = result->closest[fw].layout;
            training_spec tc = *t;
            tc.global_batch = result->closest[fw].training.global_batch;
            st = estimate_layout(m, sys, &tc, &l, &result->closest[fw], err, errlen);
            if (st != CM_OK) return st;
        }
    if (opt->simulate > 0 && result->count > 0) {
        st = search_rerank(m, sys, t, result, opt->simulate, err, errlen);
        if (st != CM_OK) return st;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    result->seconds = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    return CM_OK;
}
