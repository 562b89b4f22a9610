/*
 * search.c — exhaustive layout search (see search.h).
 *
 * Enumeration order: framework, tp, pp, cp (dp follows from the GPU count), ep and expert-tp,
 * vpp, micro-batch, sequence parallel, sharding, recompute (and for FSDP2: HSDP shard group,
 * reshard-after-forward, offload). Cheap divisibility checks come before the cost model; the
 * framework rules themselves are layout_check()'s, so the planner can never recommend a layout
 * that `plan estimate` would reject.
 */
#include "search.h"

#include "layout_codec.h"
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

search_result *search_result_new(void) { return calloc(1, sizeof(search_result)); }
void search_result_free(search_result *r) { free(r); }

static long parallel_degree(const layout *l)
{
    return (long)l->tp * l->pp * l->cp * l->ep * l->vpp;
}

bool search_better(const estimate *a, const estimate *b)
{
    double ta = a->time.step_s, tb = b->time.step_s;
    if (fabs(ta - tb) > 1e-9 * fmax(ta, tb)) return ta < tb;
    double ma = a->memory.total_bytes, mb = b->memory.total_bytes;
    if (fabs(ma - mb) > 1e-9 * fmax(ma, mb)) return ma < mb;
    /* Equal time and memory: the simpler layout (fewer model-parallel splits) is easier to run. */
    return parallel_degree(&a->layout) < parallel_degree(&b->layout);
}

static int divisors(long n, int *out, int max)
{
    int c = 0;
    for (long d = 1; d <= n && c < max; d++)
        if (n % d == 0) out[c++] = (int)d;
    return c;
}

typedef struct {
    const model_spec *m;
    const system_spec *sys;
    const training_spec *t;
    const search_options *opt;
    search_result *r;
    estimate scratch;
} ctx;

static void consider(ctx *c, const layout *l)
{
    estimate *e = &c->scratch;
    if (estimate_layout(c->m, c->sys, c->t, l, e, NULL, 0) != CM_OK) return;
    search_result *r = c->r;
    r->evaluated++;
    if (c->opt->visit) c->opt->visit(e, c->opt->visit_arg);
    int fw = l->framework;
    if (!e->feasible) {
        double over = e->memory.total_bytes - e->memory.capacity_bytes;
        if (!r->has_closest[fw] ||
            over < r->closest[fw].memory.total_bytes - r->closest[fw].memory.capacity_bytes) {
            r->closest[fw] = *e;
            r->has_closest[fw] = true;
        }
        return;
    }
    r->feasible++;
    int sh = l->sharding;
    if (!r->has_best_sharding[fw][sh] || search_better(e, &r->best_sharding[fw][sh])) {
        r->best_sharding[fw][sh] = *e;
        r->has_best_sharding[fw][sh] = true;
    }
    if (!r->has_best[fw] || search_better(e, &r->best[fw])) {
        r->best[fw] = *e;
        r->has_best[fw] = true;
    }
    int keep = c->opt->keep;
    if (r->count == keep && !search_better(e, &r->ranked[keep - 1])) return;
    int i = r->count < keep ? r->count++ : keep - 1;
    while (i > 0 && search_better(e, &r->ranked[i - 1])) {
        r->ranked[i] = r->ranked[i - 1];
        i--;
    }
    r->ranked[i] = *e;
}

static void search_megatron(ctx *c)
{
    const model_spec *m = c->m;
    const training_spec *t = c->t;
    int gpus = c->opt->gpus;
    int tps[64], pps[64], cps[64], eps[64], vps[64];
    int ntp = divisors(gpus, tps, 64);
    static const int mbs_list[] = {1, 2, 4, 8, 16};
    for (int a = 0; a < ntp; a++) {
        int tp = tps[a];
        if (m->heads % tp || m->kv_heads % tp) continue;
        int npp = divisors(gpus / tp, pps, 64);
        for (int b = 0; b < npp; b++) {
            int pp = pps[b];
            if (pp > m->layers) break;
            int ncp = divisors(gpus / (tp * pp), cps, 64);
            for (int cc = 0; cc < ncp; cc++) {
                int cp = cps[cc];
                if (cp > 1 && t->seq_len % (2 * cp)) continue;
                int dp = gpus / (tp * pp * cp);
                if (t->global_batch % dp) continue;
                int nep = model_is_moe(m) ? divisors(m->experts, eps, 64) : 1;
                if (!model_is_moe(m)) eps[0] = 1;
                int nvp = 1;
                vps[0] = 1;
                if (pp > 1 && m->layers % pp == 0) {
                    int per = m->layers / pp;
                    for (int v = 2; v <= per && nvp < 64; v++)
                        if (per % v == 0) vps[nvp++] = v;
                }
                for (int d = 0; d < nep; d++) {
                    int ep = eps[d];
                    for (int etp_i = 0; etp_i < (tp > 1 && ep > 1 ? 2 : 1); etp_i++) {
                        int etp = etp_i ? 1 : tp;
                        if ((dp * cp * tp) % (ep * etp)) continue;
                        for (int v = 0; v < nvp; v++) {
                            for (size_t mb = 0; mb < sizeof mbs_list / sizeof *mbs_list; mb++) {
                                int mbs = mbs_list[mb];
                                if (t->global_batch % (dp * mbs)) break;
                                if (vps[v] > 1 && (t->global_batch / (dp * mbs)) % pp) continue;
                                for (int sp = (tp > 1 ? 1 : 0); sp >= 0; sp--) {
                                    if (!sp && tp > 1 && model_is_moe(m)) continue;
                                    for (int sh = 0; sh < 3; sh++) {
                                        if (sh == SHARDING_FSDP && pp > 1) continue;
                                        for (int rc = 0; rc < 3; rc++) {
                                            layout l = layout_default(FRAMEWORK_MEGATRON);
                                            l.tp = tp; l.pp = pp; l.dp = dp; l.cp = cp;
                                            l.ep = ep; l.etp = etp == tp ? 0 : etp;
                                            l.vpp = vps[v]; l.mbs = mbs; l.sp = sp;
                                            l.sharding = (layout_sharding)sh;
                                            l.recompute = (layout_recompute)rc;
                                            consider(c, &l);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

static void search_fsdp2(ctx *c)
{
    const model_spec *m = c->m;
    const training_spec *t = c->t;
    const system_spec *sys = c->sys;
    int gpus = c->opt->gpus;
    int cps[64];
    int ncp = divisors(gpus, cps, 64);
    static const int mbs_list[] = {1, 2, 4, 8, 16};
    for (int a = 0; a < ncp; a++) {
        int cp = cps[a];
        if (m->heads % cp || m->kv_heads % cp) continue;
        if (cp > 1 && t->seq_len % (2 * cp)) continue;
        int dp = gpus / cp;
        if (t->global_batch % dp) continue;
        int shard_opts[2] = {0, sys->gpus_per_node};
        int nshard = (sys->gpus_per_node < dp * cp && (dp * cp) % sys->gpus_per_node == 0) ? 2 : 1;
        for (size_t mb = 0; mb < sizeof mbs_list / sizeof *mbs_list; mb++) {
            int mbs = mbs_list[mb];
            if (t->global_batch % (dp * mbs)) break;
            for (int s = 0; s < nshard; s++)
                for (int rs = 1; rs >= 0; rs--)
                    for (int rc = 0; rc < 2; rc++)
                        for (int off = 0; off < (rc == 0 ? 2 : 1); off++) {
                            layout l = layout_default(FRAMEWORK_FSDP2);
                            l.dp = dp; l.cp = cp; l.mbs = mbs;
                            l.shard_size = shard_opts[s];
                            l.reshard_after_forward = rs;
                            l.recompute = rc ? RECOMPUTE_FULL : RECOMPUTE_NONE;
                            l.offload = off;
                            consider(c, &l);
                        }
        }
    }
}

/* Is a better than b by simulated step time (closed-form order on a tie)? */
static bool simulated_better(const estimate *a, const estimate *b)
{
    double ta = a->simulated ? a->time_sim.step_s : a->time.step_s;
    double tb = b->simulated ? b->time_sim.step_s : b->time.step_s;
    if (fabs(ta - tb) > 1e-9 * fmax(ta, tb)) return ta < tb;
    return search_better(a, b);
}

static bool same_layout(const estimate *a, const estimate *b)
{
    return layout_equal(&a->layout, &b->layout);
}

/*
 * The closed form ranks every layout; the simulator re-ranks the best few, where its exact
 * overlap of pipeline, gathers and reductions decides between layouts the closed form puts
 * within a few percent of each other. The pool is the first k ranked plans plus each
 * framework's best when it is not among them, so the FSDP2-vs-Megatron verdict compares
 * simulated figures too. best[] is then the best of each framework by simulated time.
 */
cm_status search_rerank(const model_spec *m, const system_spec *sys, const training_spec *t,
                        search_result *r, int k, char *err, size_t errlen)
{
    int n = k < r->count ? k : r->count;
    if (n > SEARCH_KEEP_MAX - 2) n = SEARCH_KEEP_MAX - 2; /* room for two frameworks' bests */
    estimate *pool = malloc((size_t)(n + 2) * sizeof *pool);
    sim_workspace *w = sim_alloc();
    if (!pool || !w) {
        free(pool);
        sim_free(w);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory re-ranking with the simulator");
    }
    int np = 0;
    for (int i = 0; i < n; i++) pool[np++] = r->ranked[i];
    for (int fw = 0; fw < 2; fw++) {
        if (!r->has_best[fw]) continue;
        bool in = false;
        for (int i = 0; i < n && !in; i++) in = same_layout(&pool[i], &r->best[fw]);
        if (in) continue;
        /* Take it out of the closed-form tail if it is there, so it is not listed twice. */
        for (int i = n; i < r->count; i++)
            if (same_layout(&r->ranked[i], &r->best[fw])) {
                memmove(&r->ranked[i], &r->ranked[i + 1],
                        (size_t)(r->count - i - 1) * sizeof *r->ranked);
                r->count--;
                break;
            }
        pool[np++] = r->best[fw];
    }
    /* A plan the simulator cannot time keeps its closed-form figure (and no time_simulated);
     * only running out of memory stops the search. */
    sim_options so = {.serialize = false, .trace = false};
    for (int i = 0; i < np; i++) {
        cm_status st = sim_estimate(w, m, sys, t, &pool[i].layout, &so, &pool[i], err, errlen);
        if (st == CM_ENOMEM) {
            sim_free(w);
            free(pool);
            return st;
        }
    }
    sim_free(w);
    /* Stable insertion sort: np is at most SEARCH_KEEP_MAX + 2. */
    for (int i = 1; i < np; i++) {
        estimate x = pool[i];
        int j = i;
        while (j > 0 && simulated_better(&x, &pool[j - 1])) {
            pool[j] = pool[j - 1];
            j--;
        }
        pool[j] = x;
    }
    /* ranked = the re-ranked pool, then the rest in closed-form order, within SEARCH_KEEP_MAX */
    int tail = r->count - n;
    if (tail + np > SEARCH_KEEP_MAX) tail = SEARCH_KEEP_MAX - np;
    if (tail < 0) tail = 0;
    memmove(&r->ranked[np], &r->ranked[n], (size_t)tail * sizeof *r->ranked);
    memcpy(r->ranked, pool, (size_t)np * sizeof *pool);
    r->count = np + tail;
    r->simulated = np;
    for (int fw = 0; fw < 2; fw++)
        for (int i = 0; i < np; i++)
            if ((int)pool[i].layout.framework == fw) {
                r->best[fw] = pool[i];
                r->has_best[fw] = true;
                break;
            }
    free(pool);
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
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ctx c = {.m = m, .sys = sys, .t = t, .opt = opt, .r = result};
    if (opt->frameworks[FRAMEWORK_MEGATRON]) search_megatron(&c);
    if (opt->frameworks[FRAMEWORK_FSDP2]) search_fsdp2(&c);
    if (opt->simulate > 0 && result->count > 0) {
        st = search_rerank(m, sys, t, result, opt->simulate, err, errlen);
        if (st != CM_OK) return st;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    result->seconds = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    return CM_OK;
}
