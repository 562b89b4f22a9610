/*
 * search_rerank.c — the simulator's re-ranking of a search's best plans (search.h
 * search_rerank), apart from the enumeration and evaluation in search.c.
 */
#include "search.h"

#include "layout_codec.h"
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Is a better than b by simulated step time (closed-form order on a tie)? */
static bool simulated_better(const estimate *a, const estimate *b)
{
    double ta = search_per_batch(a->simulated ? a->time_sim.step_s : a->time.step_s, a, b);
    double tb = search_per_batch(b->simulated ? b->time_sim.step_s : b->time.step_s, b, a);
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
    if (n > SEARCH_KEEP_MAX - LAYOUT_NFRAMEWORKS)
        n = SEARCH_KEEP_MAX - LAYOUT_NFRAMEWORKS; /* room for each framework's best */
    estimate *pool = malloc((size_t)(n + LAYOUT_NFRAMEWORKS) * sizeof *pool);
    sim_workspace *w = sim_alloc();
    if (!pool || !w) {
        free(pool);
        sim_free(w);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory re-ranking with the simulator");
    }
    int np = 0;
    for (int i = 0; i < n; i++) pool[np++] = r->ranked[i];
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
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
        training_spec tp = *t; /* the batch the plan runs (--gbs-policy nearest) */
        tp.global_batch = pool[i].training.global_batch;
        cm_status st = sim_estimate(w, m, sys, &tp, &pool[i].layout, &so, &pool[i], err, errlen);
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
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++)
        for (int i = 0; i < np; i++)
            if ((int)pool[i].layout.framework == fw) {
                r->best[fw] = pool[i];
                r->has_best[fw] = true;
                break;
            }
    free(pool);
    return CM_OK;
}

