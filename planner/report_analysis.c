/*
 * report_analysis.c — the searches of `plan report`, which fill its report (see
 * report_analysis.h).
 *
 * Build: one search per model x GPU count, over the union of the user's GPU counts and a
 * power-of-two sweep (for "the smallest GPU count at which it fits" and the throughput curves);
 * a search visitor collects, in the same pass, which memory classes fit (DDP / distributed
 * optimizer / FSDP, with and without recompute, offload), the best Megatron plan without expert
 * parallelism, and which features the search exercised; each search finds only what the
 * sections read of its point (point_need: past the user's counts, the memory classes alone,
 * with as few layouts timed as plan's own search times). A second sweep over a Llama-3-shaped
 * dense family (1.5B to 406B) at the user's GPU counts finds where Megatron overtakes FSDP2 and
 * how far each memory rung (DDP ... offload) reaches by model size.
 *
 * The memory classes and feature probes the visitors sort layouts into are report_classes.c's;
 * the numbers the sections read from a built report are in report_numbers.c.
 */
#include "report_analysis.h"
#include "doc_writer.h"
#include "report_classes.h"
#include "report_threads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#include "chart.h"
#include "search.h"

#define SWEEP_MAX 32
#define SWEEP_CAP 4096 /* the GPU-count sweep stops here when a class never fits */

/* What one search task adds to the report's totals: kept apart while tasks run on several
 * threads (report_run_searches) and added under the lock, so the sums are the same. */
typedef struct {
    long searches, layouts;
    long feat_count[2][REPORT_NFEATURES];
    /* the run of visited layouts with one framework and feature mask not yet in feat_count
     * (count_features: a layout's overlap variants come one after another), run_n long */
    uint32_t run_mask;
    int run_fw;
    long run_n;
} task_sums;

typedef struct {
    task_sums *sums;
    report_point *p;
} visit_ctx;

static int cmp_int(const void *a, const void *b);

static void progress(const report *r)
{
    if (r->progress) r->progress(r->stats.searches, r->progress_total, r->progress_arg);
}

/* The GPU counts a model is searched at: powers of two from 1 (up to the largest count asked,
 * or the cap) and the user's counts (ascending, no duplicates), ascending. Returns how many. */
static int sweep_counts_of(const int *gpus, int ngpus, int *counts)
{
    int maxg = gpus[ngpus - 1];
    int cap = maxg > SWEEP_CAP ? maxg : SWEEP_CAP;
    int n = 0;
    for (long g = 1; g <= cap && n < SWEEP_MAX; g *= 2) counts[n++] = (int)g;
    for (int i = 0; i < ngpus; i++) {
        bool dup = false;
        for (int k = 0; k < n; k++) dup |= counts[k] == gpus[i];
        if (!dup) counts[n++] = gpus[i];
    }
    qsort(counts, n, sizeof *counts, cmp_int);
    return n;
}

static int sweep_counts(const report *r, int *counts)
{
    return sweep_counts_of(r->gpus, r->ngpus, counts);
}

/* The searches a build plans before any runs, given the user's GPU counts (ascending, no
 * duplicates) and how many distinct models: per model, one search at each count of its sweep
 * and one torchtitan search at each of the user's counts (search_point; the user's counts are
 * never past the sweep's stopping point, so these always run); then the dense family at each
 * of the user's counts (search_size). A sweep that stops early takes its unrun counts off. */
static long planned_searches(const int *gpus, int ngpus, int nmodels)
{
    int counts[SWEEP_MAX + REPORT_MAX_GPUS];
    return (long)nmodels * (sweep_counts_of(gpus, ngpus, counts) + ngpus) +
           (long)REPORT_NSIZES * ngpus;
}

/* The user's GPU counts sorted, duplicates dropped, into out; returns how many. */
static int unique_gpus(const int *gpus, int n, int *out)
{
    memcpy(out, gpus, n * sizeof *gpus);
    qsort(out, n, sizeof *out, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!k || out[k - 1] != out[i]) out[k++] = out[i];
    return k;
}

/* How many of the n models are distinct by name (the build drops repeats). */
static int distinct_models(const model_spec *models, int n)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        bool dup = false;
        for (int k = 0; k < i; k++) dup |= !strcmp(models[k].name, models[i].name);
        count += !dup;
    }
    return count;
}

long report_planned_searches(const report_options *o)
{
    if (!o || o->nmodels < 1 || o->nmodels > REPORT_MAX_MODELS || o->ngpus < 1 ||
        o->ngpus > REPORT_MAX_GPUS)
        return 0;
    int gpus[REPORT_MAX_GPUS];
    int ng = unique_gpus(o->gpus, o->ngpus, gpus);
    return planned_searches(gpus, ng, distinct_models(o->models, o->nmodels));
}

/* The pending run of count_features into the counts. */
static void flush_features(task_sums *sums)
{
    long *count = sums->feat_count[sums->run_fw];
    for (uint32_t m = sums->run_mask; m; m &= m - 1) count[__builtin_ctz(m)] += sums->run_n;
    sums->run_n = 0;
}

/* Layout l's features into the counts (report_feature_mask): a layout with the framework and
 * mask of the one before it lengthens the pending run (flush_features adds a run at once,
 * the same sums), which a search's end flushes (search_point). */
static void count_features(task_sums *sums, const layout *l)
{
    uint32_t m = report_feature_mask(l);
    int fw = (int)l->framework;
    if (sums->run_n > 0 && m == sums->run_mask && fw == sums->run_fw) {
        sums->run_n++;
        return;
    }
    if (sums->run_n > 0) flush_features(sums);
    sums->run_mask = m;
    sums->run_fw = fw;
    sums->run_n = 1;
}

/* A layout that fits, timed or not: its features and its memory class. */
static void visit_fit(const estimate *e, void *arg)
{
    visit_ctx *v = arg;
    count_features(v->sums, &e->layout);
    v->p->fits[report_class_of(&e->layout)] = true;
}

/* Every layout, where the point needs no best plan without EP (point_need): its features and,
 * when it fits, its memory class. */
static void visit_classes(const estimate *e, void *arg)
{
    visit_ctx *v = arg;
    if (e->feasible) {
        visit_fit(e, arg);
        return;
    }
    count_features(v->sums, &e->layout);
}

/* The step time visit_classes needs of a layout: none (search.h). */
static double no_bound(const layout *l, void *arg)
{
    (void)l, (void)arg;
    return 0;
}

/* The time a layout must beat to matter here (search.h): only the best Megatron plan without
 * EP is timed by the visitor. */
static double visit_bound(const layout *l, void *arg)
{
    const report_point *p = ((const visit_ctx *)arg)->p;
    if (l->framework != FRAMEWORK_MEGATRON || l->ep != 1) return 0;
    if (!p->has_noep) return -1;
    return p->noep.time.step_s / p->noep.training.global_batch;
}

static void visit(const estimate *e, void *arg)
{
    visit_ctx *v = arg;
    const layout *l = &e->layout;
    int fw = l->framework;
    if (e->feasible) visit_fit(e, arg);
    else count_features(v->sums, l);
    report_point *p = v->p;
    bool noep = fw == FRAMEWORK_MEGATRON && l->ep == 1;
    if (!e->feasible) {
        if (noep) {
            double over = e->memory.total_bytes - e->memory.capacity_bytes;
            if (!p->has_noep_closest ||
                over < p->noep_closest.memory.total_bytes - p->noep_closest.memory.capacity_bytes) {
                p->noep_closest = *e;
                p->has_noep_closest = true;
            }
        }
        return;
    }
    if (noep && (!p->has_noep || search_better(e, &p->noep))) {
        p->noep = *e;
        p->has_noep = true;
    }
}

/*
 * What the sections read of a model's point at a GPU count (report_sec_*.c), which decides
 * what its search must find. Everything at the user's counts. Between the smallest and the
 * largest of them (with one count: below it) the line charts read the best plan of each
 * framework and the one plan recommends (line_range, report_sec_performance.c), nothing of the
 * best plan without EP. Elsewhere only the memory classes that fit (the smallest GPU count per
 * class, the sweep's stop rule) and the features evaluated. All of them count the same
 * searches and layouts: what a search evaluates and which of it fits does not depend on which
 * layouts it times (search.h, visit_bound). A model that fits at none of the user's counts is
 * shown where it does fit, from any point: its points are then searched again whole
 * (search_again), so the report is the one whole searches give.
 */
typedef enum { NEED_CLASSES, NEED_BEST, NEED_ALL } point_need;

static point_need need_of(const report *r, int gpus)
{
    for (int g = 0; g < r->ngpus; g++)
        if (r->gpus[g] == gpus) return NEED_ALL;
    if (gpus > r->gpus[r->ngpus - 1]) return NEED_CLASSES;
    return gpus > r->gpus[0] || r->ngpus == 1 ? NEED_BEST : NEED_CLASSES;
}

static cm_status search_point(const report *r, const model_spec *m, report_point *p,
                              point_need need, search_result *sr, task_sums *sums, char *err,
                              size_t errlen)
{
    visit_ctx v = {sums, p};
    /* The options `plan --model M --gpus N --precision bf16` searches with (cmd_search.c), so
     * the report recommends what plan recommends: the best plans re-ranked by the step
     * simulator, except under a refined profile, whose closed form is the calibrated figure.
     * bf16 (search_options.precisions 0): the guide compares the frameworks in bf16 and prices
     * FP8 on each recommendation beside it (report_sec_summary.c), issue 16. */
    search_options o = {.gpus = p->gpus, .keep = SEARCH_SIMULATE_DEFAULT,
                        .frameworks = {true, true}, .visit = visit, .visit_arg = &v,
                        .visit_bound = visit_bound, .visit_fit = visit_fit,
                        .simulate = r->sys.step.active ? 0 : SEARCH_SIMULATE_DEFAULT};
    if (need != NEED_ALL) { /* no best plan without EP: only the layouts plan's search times */
        o.visit = visit_classes;
        o.visit_bound = no_bound;
    }
    if (need == NEED_CLASSES) {
        /* no plan at all, only whether one fits: the first that fits is timed, the rest not
         * (search.h fits_only: visit_classes reads of a layout's variants their feature masks
         * and memory class, which read neither layer count, and whether one fits; p->feasible
         * is read by no section), none simulated */
        o.keep = 1;
        o.simulate = 0;
        o.fits_only = true;
    }
    cm_status st = search_run(m, &r->sys, &r->t, &o, sr, err, errlen);
    if (sums->run_n > 0) flush_features(sums); /* the visitors' last run */
    if (st != CM_OK) return st;
    sums->searches++;
    sums->layouts += sr->evaluated;
    p->evaluated = sr->evaluated;
    p->rec_fw = sr->count > 0 ? (int)sr->ranked[0].layout.framework : -1;
    p->feasible = sr->feasible;
    for (int fw = 0; fw < 2; fw++) {
        p->has_best[fw] = sr->has_best[fw];
        if (sr->has_best[fw]) p->best[fw] = sr->best[fw];
        p->has_closest[fw] = sr->has_closest[fw];
        if (sr->has_closest[fw]) p->closest[fw] = sr->closest[fw];
    }
    /* torchtitan at the GPU counts the user asked about (report_sec_torchtitan.c): its own
     * search, on every core (no visit), re-ranked by the simulator like plan's */
    for (int g = 0; g < r->ngpus; g++) {
        if (r->gpus[g] != p->gpus) continue;
        search_options to = {.gpus = p->gpus, .keep = SEARCH_SIMULATE_DEFAULT,
                             .frameworks = {[FRAMEWORK_TORCHTITAN] = true},
                             .simulate = r->sys.step.active ? 0 : SEARCH_SIMULATE_DEFAULT};
        st = search_run(m, &r->sys, &r->t, &to, sr, err, errlen);
        if (st != CM_OK) return st;
        sums->searches++;
        sums->layouts += sr->evaluated;
        p->titan_searched = true;
        p->has_titan = sr->has_best[FRAMEWORK_TORCHTITAN];
        if (p->has_titan) p->titan = sr->best[FRAMEWORK_TORCHTITAN];
        p->has_titan_closest = sr->has_closest[FRAMEWORK_TORCHTITAN];
        if (p->has_titan_closest) p->titan_closest = sr->closest[FRAMEWORK_TORCHTITAN];
    }
    return CM_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Llama-3-shaped dense models (head dim 128, 8 KV groups, SwiGLU, untied embeddings,
 * vocabulary 128256), 1.5B to 406B: the 8B/70B/405B rows are the Llama-3.1 shapes, the others
 * interpolate (layers and width grow together, FFN about 3.5x hidden). */
static const struct { int layers, hidden, heads; long ffn; } dense_family[REPORT_NSIZES] = {
    {16, 2048, 16, 8192},    {28, 3072, 24, 8192},    {32, 4096, 32, 14336},
    {40, 5120, 40, 17920},   {48, 6144, 48, 20480},   {60, 7168, 56, 24576},
    {80, 8192, 64, 28672},   {96, 10240, 80, 32768},  {96, 12288, 96, 40960},
    {112, 14336, 112, 49152}, {126, 16384, 128, 53248},
};

static void dense_model(model_spec *m, int i)
{
    memset(m, 0, sizeof *m);
    m->layers = dense_family[i].layers;
    m->hidden = dense_family[i].hidden;
    m->heads = dense_family[i].heads;
    m->kv_heads = 8;
    m->head_dim = m->hidden / m->heads;
    m->ffn = dense_family[i].ffn;
    m->vocab = 128256;
    m->max_positions = 131072;
    m->activation = MODEL_ACT_SWIGLU;
    m->norm = MODEL_NORM_RMS;
    double p = model_params_total(m);
    snprintf(m->name, sizeof m->name, "dense-%.0fb", p / 1e9);
    snprintf(m->display, sizeof m->display, "dense %.1fB (Llama-3 shape)", p / 1e9);
}

/* An MoE model for the feature probes (Mixtral-8x7B's shape), so EP is probed whatever the
 * user's models are. */
static void probe_model(model_spec *m)
{
    dense_model(m, 2);
    m->vocab = 32000;
    m->experts = 8;
    m->top_k = 2;
    m->expert_ffn = m->ffn;
    snprintf(m->name, sizeof m->name, "probe-moe");
    snprintf(m->display, sizeof m->display, "probe MoE (8 experts, top 2)");
}

typedef struct {
    report_size_point *sp;
    int g;
} size_visit_ctx;

static void size_visit(const estimate *e, void *arg)
{
    size_visit_ctx *v = arg;
    if (!e->feasible) return;
    int lev = report_class_level[report_class_of(&e->layout)];
    v->sp->fit_level[v->g][lev] = true;
    if (e->layout.tp == 1 && e->layout.pp == 1) v->sp->fit_level_dp[v->g][lev] = true;
}

/* The dense family's shapes (r->sizes), before their searches. */
static cm_status setup_sizes(report *r, char *err, size_t errlen)
{
    for (int i = 0; i < REPORT_NSIZES; i++) {
        model_spec m;
        dense_model(&m, i);
        cm_status st = model_validate(&m, err, errlen);
        if (st != CM_OK) return st;
        report_size_point *sp = &r->sizes[i];
        sp->params = model_params_total(&m);
        sp->layers = m.layers;
        sp->hidden = m.hidden;
    }
    return CM_OK;
}

/* Dense-family member i at the user's g-th GPU count. */
static cm_status search_size(const report *r, report_size_point *sp, int i, int g,
                             search_result *sr, task_sums *sums, char *err, size_t errlen)
{
    model_spec m;
    dense_model(&m, i);
    size_visit_ctx v = {sp, g};
    /* no step time but the best plans' (no_bound) */
    search_options o = {.gpus = r->gpus[g], .keep = 1, .frameworks = {true, true},
                        .visit = size_visit, .visit_arg = &v, .visit_bound = no_bound,
                        .visit_fit = size_visit};
    cm_status st = search_run(&m, &r->sys, &r->t, &o, sr, err, errlen);
    if (st != CM_OK) return st;
    sums->searches++;
    sums->layouts += sr->evaluated;
    for (int fw = 0; fw < 2; fw++) {
        sp->has[g][fw] = sr->has_best[fw];
        sp->step[g][fw] = sr->has_best[fw] ? sr->best[fw].time.step_s : NAN;
    }
    sp->fsdp2_offload[g] =
        sr->has_best[FRAMEWORK_FSDP2] && sr->best[FRAMEWORK_FSDP2].layout.offload;
    return CM_OK;
}

/*
 * The report's searches on every core (PLAN_THREADS overrides the count, as for plan's own
 * search): each search is a task writing its own report_point or size cell, its totals added
 * under the lock, so the report is the one a single thread writes. A model's GPU counts up to
 * the largest asked are independent tasks; each count past it runs only if the earlier ones
 * did not already fit every memory class (the sweep stops there). Free tasks go largest first:
 * a model's later counts first when ready (the longest chain), then the counts up to the
 * largest asked, the largest model's first and each model's largest count first (the later
 * counts of a model wait for all of these, and larger models sweep further), then the dense
 * family. A core
 * that would otherwise wait takes a later count before that is decided (speculation, one or
 * two counts ahead); its totals are held until the counts before it have finished and the
 * stop rule, applied to them as before, says it runs, and dropped if it says the sweep ends:
 * the points, their totals and the sweep's length are the ones the chain gives.
 */
enum { SWEEP_POINTS = SWEEP_MAX + REPORT_MAX_GPUS, SPECULATE_AHEAD = 2 };

typedef struct {
    int counts[SWEEP_POINTS];
    int n, fixed;     /* counts; the first `fixed` are <= the largest count asked */
    int fixed_out;    /* of those, handed out (the largest first) */
    int next;         /* counts past them handed out: [fixed, next) */
    int done;         /* the first `done` points have all finished */
    int decided;      /* counts [fixed, decided) are known to run (the stop rule said go) */
    bool fin[SWEEP_POINTS];
    task_sums held[SWEEP_POINTS]; /* a finished count's totals, until it is decided */
    bool stopped;
    int end;          /* the sweep's length when stopped */
} model_sweep;

typedef struct {
    report *r;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    model_sweep sw[REPORT_MAX_MODELS];
    int order[REPORT_MAX_MODELS]; /* the models by parameter count, largest first */
    int next_size, nsizes; /* size tasks: member i x GPU count g, i * ngpus + g */
    int running;
    cm_status st;
    char *err;
    size_t errlen;
} scheduler;

/* Sets mr's smallest fitting GPU count per class from its first n points, in order. */
static void min_gpus_of(report_model_result *mr, int n)
{
    for (int k = 0; k < NCLS; k++) mr->min_gpus[k] = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < NCLS; k++)
            if (mr->pts[i].fits[k] && !mr->min_gpus[k]) mr->min_gpus[k] = mr->pts[i].gpus;
}

static void add_sums(report *r, const task_sums *sums)
{
    r->stats.searches += sums->searches;
    r->stats.layouts += sums->layouts;
    for (int fw = 0; fw < 2; fw++)
        for (int f = 0; f < REPORT_NFEATURES; f++) r->feat_count[fw][f] += sums->feat_count[fw][f];
}

/* Model i's stop rule for every count past the fixed ones whose earlier points have all
 * finished, in order: the count runs (its totals, if it already ran ahead, are added now), or
 * the sweep ends there. */
static void decide(scheduler *s, int i)
{
    report *r = s->r;
    model_sweep *w = &s->sw[i];
    while (w->done < w->n && w->fin[w->done]) w->done++;
    while (!w->stopped && w->decided < w->n && w->done >= w->decided) {
        report_model_result *mr = &r->models[i];
        min_gpus_of(mr, w->decided);
        /* Megatron's offload is searched only where a layout does not fit without it
         * (search.c memory_knobs), so it need not appear: not waited for */
        bool all = true;
        for (int c = 0; c < NCLS; c++) all &= c == CLS_MEG_OFFLOAD || mr->min_gpus[c] > 0;
        if (all) { /* every class fits: the sweep ends here */
            w->stopped = true;
            w->end = w->decided;
            r->progress_total -= w->n - w->end;
            progress(r);
            return;
        }
        if (w->fin[w->decided]) add_sums(r, &w->held[w->decided]);
        w->decided++;
    }
}

/* The next task under the lock: model mi's point k (returns 1), size task k (2), none now
 * but some still run (0), or none left (-1). */
static int take(scheduler *s, int *mi, int *k)
{
    report *r = s->r;
    if (s->st != CM_OK) return s->running ? 0 : -1;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < r->nmodels; j++) {
            int i = s->order[j];
            model_sweep *w = &s->sw[i];
            if (w->stopped) continue;
            if (pass == 1) { /* a count up to the largest asked */
                if (w->fixed_out >= w->fixed) continue;
                *mi = i;
                *k = w->fixed - 1 - w->fixed_out++;
                return 1;
            }
            /* a later count ready first: the longest chain */
            if (w->fixed_out < w->fixed || w->next >= w->n) continue;
            decide(s, i);
            if (w->stopped || w->decided <= w->next) continue; /* not known to run yet */
            *mi = i;
            *k = w->next++;
            return 1;
        }
    if (s->next_size < s->nsizes) {
        *k = s->next_size++;
        return 2;
    }
    /* nothing known to run: a later count ahead of its decision, on a core that would wait */
    for (int j = 0; j < r->nmodels; j++) {
        int i = s->order[j];
        model_sweep *w = &s->sw[i];
        if (w->stopped || w->next >= w->n || w->fixed_out < w->fixed) continue;
        if (w->next - w->decided >= SPECULATE_AHEAD) continue;
        *mi = i;
        *k = w->next++;
        return 1;
    }
    for (int i = 0; i < r->nmodels; i++)
        if (!s->sw[i].stopped && s->sw[i].next < s->sw[i].n) return 0;
    return s->running ? 0 : -1;
}

static void *run_tasks(void *arg)
{
    scheduler *s = arg;
    report *r = s->r;
    search_result *sr = search_result_new();
    char err[512] = "";
    pthread_mutex_lock(&s->mu);
    if (!sr && s->st == CM_OK) {
        s->st = cm_fail(s->err, s->errlen, CM_ENOMEM, "out of memory");
        pthread_cond_broadcast(&s->cv);
    }
    for (;;) {
        int mi = 0, k = 0, what = sr ? take(s, &mi, &k) : -1;
        if (what < 0) break;
        if (what == 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        s->running++;
        pthread_mutex_unlock(&s->mu);
        task_sums sums = {0};
        cm_status st;
        if (what == 1) {
            report_model_result *mr = &r->models[mi];
            report_point *p = &mr->pts[k];
            p->gpus = s->sw[mi].counts[k];
            st = search_point(r, &mr->m, p, need_of(r, p->gpus), sr, &sums, err, sizeof err);
        } else {
            int i = k / r->ngpus, g = k % r->ngpus;
            st = search_size(r, &r->sizes[i], i, g, sr, &sums, err, sizeof err);
        }
        pthread_mutex_lock(&s->mu);
        s->running--;
        if (st != CM_OK && s->st == CM_OK) {
            s->st = st;
            snprintf(s->err, s->errlen, "%s", err);
        }
        if (what == 1) {
            model_sweep *w = &s->sw[mi];
            w->fin[k] = true;
            if (k < w->fixed || k < w->decided) add_sums(r, &sums);
            else if (!w->stopped) w->held[k] = sums; /* ran ahead: added once decided */
            /* else past the sweep's end: dropped */
            if (!w->stopped) decide(s, mi);
        } else {
            add_sums(r, &sums);
        }
        progress(r);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    search_result_free(sr);
    return NULL;
}

static cm_status run_searches(report *r, char *err, size_t errlen)
{
    scheduler *s = calloc(1, sizeof *s);
    if (!s) return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    *s = (scheduler){.r = r, .nsizes = REPORT_NSIZES * r->ngpus, .st = CM_OK, .err = err,
                     .errlen = errlen};
    int maxg = r->gpus[r->ngpus - 1];
    for (int i = 0; i < r->nmodels; i++) {
        model_sweep *w = &s->sw[i];
        w->n = sweep_counts(r, w->counts);
        while (w->fixed < w->n && w->counts[w->fixed] <= maxg) w->fixed++;
        w->decided = w->next = w->fixed;
        /* insertion by parameter count, largest first (ties: in the order given) */
        double params = model_params_total(&r->models[i].m);
        int j = i;
        for (; j > 0 && model_params_total(&r->models[s->order[j - 1]].m) < params; j--)
            s->order[j] = s->order[j - 1];
        s->order[j] = i;
        r->models[i].pts = calloc(w->n, sizeof *r->models[i].pts);
        if (!r->models[i].pts) {
            free(s);
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
        }
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    report_on_threads(run_tasks, s, REPORT_MAX_MODELS * SWEEP_POINTS);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    cm_status st = s->st;
    for (int i = 0; i < r->nmodels && st == CM_OK; i++) {
        report_model_result *mr = &r->models[i];
        mr->npts = s->sw[i].stopped ? s->sw[i].end : s->sw[i].next;
        mr->cap = mr->npts > 0 ? mr->pts[mr->npts - 1].gpus : 0;
        min_gpus_of(mr, mr->npts);
    }
    free(s);
    return st;
}

/* The points search_again searches whole, handed out in turn. */
typedef struct {
    report *r;
    pthread_mutex_t mu;
    int n, next;
    int model[REPORT_MAX_MODELS * SWEEP_POINTS], point[REPORT_MAX_MODELS * SWEEP_POINTS];
    cm_status st;
    char *err;
    size_t errlen;
} again_tasks;

static void *run_again(void *arg)
{
    again_tasks *a = arg;
    report *r = a->r;
    search_result *sr = search_result_new();
    char err[512] = "";
    pthread_mutex_lock(&a->mu);
    if (!sr && a->st == CM_OK) a->st = cm_fail(a->err, a->errlen, CM_ENOMEM, "out of memory");
    while (sr && a->st == CM_OK && a->next < a->n) {
        int k = a->next++;
        pthread_mutex_unlock(&a->mu);
        report_model_result *mr = &r->models[a->model[k]];
        task_sums sums = {0}; /* counted when the point was first searched */
        cm_status st = search_point(r, &mr->m, &mr->pts[a->point[k]], NEED_ALL, sr, &sums, err,
                                    sizeof err);
        pthread_mutex_lock(&a->mu);
        if (st != CM_OK && a->st == CM_OK) {
            a->st = st;
            snprintf(a->err, a->errlen, "%s", err);
        }
    }
    pthread_mutex_unlock(&a->mu);
    search_result_free(sr);
    return NULL;
}

/* A model that fits at none of the user's counts is shown at the counts where it fits, which
 * read every part of a point (point_need): its points searched for less are searched again
 * whole, on every core. The same searches as before, so the totals stay. */
static cm_status search_again(report *r, char *err, size_t errlen)
{
    again_tasks *a = calloc(1, sizeof *a);
    if (!a) return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    *a = (again_tasks){.r = r, .st = CM_OK, .err = err, .errlen = errlen};
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        bool fits = false;
        for (int g = 0; g < r->ngpus; g++)
            fits |= report_best_of(report_find_point(mr, r->gpus[g])) != NULL;
        for (int k = 0; k < mr->npts && !fits; k++)
            if (need_of(r, mr->pts[k].gpus) != NEED_ALL) {
                a->model[a->n] = i;
                a->point[a->n++] = k;
            }
    }
    pthread_mutex_init(&a->mu, NULL);
    if (a->n) report_on_threads(run_again, a, a->n);
    pthread_mutex_destroy(&a->mu);
    cm_status st = a->st;
    free(a);
    return st;
}


cm_status report_build(const report_options *o, report **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!o->sys || o->nmodels < 1 || o->nmodels > REPORT_MAX_MODELS || o->ngpus < 1 ||
        o->ngpus > REPORT_MAX_GPUS)
        return cm_fail(err, errlen, CM_EINVAL,
                       "a report needs 1 to %d models and 1 to %d GPU counts",
                       REPORT_MAX_MODELS, REPORT_MAX_GPUS);
    cm_status st = training_check(&o->training, err, errlen);
    if (st != CM_OK) return st;
    for (int i = 0; i < o->ngpus; i++)
        if (o->gpus[i] < 1 || o->gpus[i] > 10000000)
            return cm_fail(err, errlen, CM_EINVAL,
                           "GPU count %d is out of range: give --gpus between 1 and 10000000",
                           o->gpus[i]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    report *r = calloc(1, sizeof *r);
    if (!r) return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    r->sys = *o->sys;
    snprintf(r->system_name, sizeof r->system_name, "%s",
             o->system_name ? o->system_name : o->sys->name);
    doc_plain(r->system_doc, sizeof r->system_doc, r->system_name);
    doc_plain(r->gpu_doc, sizeof r->gpu_doc, r->sys.gpu_name);
    snprintf(r->calibration, sizeof r->calibration, "%s",
             o->calibration_path ? o->calibration_path : "");
    snprintf(r->bench_path, sizeof r->bench_path, "%s", o->bench_path ? o->bench_path : "");
    r->t = o->training;
    r->ngpus = unique_gpus(o->gpus, o->ngpus, r->gpus);
    if (o->nbench > 0 && o->bench) {
        r->bench = malloc(o->nbench * sizeof *r->bench);
        if (!r->bench) {
            report_free(r);
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
        }
        memcpy(r->bench, o->bench, o->nbench * sizeof *r->bench);
        r->nbench = o->nbench;
        for (int i = 0; i < r->nbench; i++)
            if (!isnan(r->bench[i].measured_step_s)) r->any_measured = true;
    }
    probe_model(&r->probe);
    r->progress = o->progress;
    r->progress_arg = o->progress_arg;
    r->which_cluster = o->which_cluster;
    r->nwhich_cluster = o->which_cluster ? o->nwhich_cluster : 0;
    r->progress_total =
        planned_searches(r->gpus, r->ngpus, distinct_models(o->models, o->nmodels));
    r->nmodels = 0;
    for (int i = 0; i < o->nmodels && st == CM_OK; i++) {
        bool dup = false; /* the same model twice would repeat sections and anchors */
        for (int k = 0; k < r->nmodels; k++) dup |= !strcmp(r->models[k].m.name, o->models[i].name);
        if (dup) continue;
        report_model_result *mr = &r->models[r->nmodels++];
        mr->m = o->models[i];
        doc_plain(mr->display_doc, sizeof mr->display_doc, mr->m.display);
    }
    if (st == CM_OK) st = setup_sizes(r, err, errlen);
    if (st == CM_OK) st = run_searches(r, err, errlen);
    if (st == CM_OK) st = search_again(r, err, errlen);
    if (st != CM_OK) {
        report_free(r);
        return st;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->stats.seconds = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    r->stats.charts_available = chart_available();
    *out = r;
    return CM_OK;
}

void report_free(report *r)
{
    if (!r) return;
    for (int i = 0; i < r->nmodels; i++) free(r->models[i].pts);
    free(r->bench);
    free(r);
}
