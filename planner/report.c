/*
 * report.c — the decision guide of `plan report` (see report.h).
 *
 * Build: one search per model x GPU count, over the union of the user's GPU counts and a
 * power-of-two sweep (for "the smallest GPU count at which it fits" and the throughput curves);
 * a search visitor collects, in the same pass, which memory classes fit (DDP / distributed
 * optimizer / FSDP, with and without recompute, offload), the best Megatron plan without expert
 * parallelism, and which features the search exercised. A second sweep over a Llama-3-shaped
 * dense family (1.5B to 406B) at the user's GPU counts finds where Megatron overtakes FSDP2 and
 * how far each memory rung (DDP ... offload) reaches by model size.
 *
 * Write: seven sections rendered through a small document layer (doc_*) that emits either HTML
 * (one file, charts as inline SVG) or Markdown (charts as PNG files beside it). Prose is fixed;
 * every number in it comes from the estimates above. Text that is not ours (rule messages, file
 * names) goes through plain() so it cannot be read as markup. Section 5 renders each plan with
 * emit.h (the same YAML and flags as `plan --emit`).
 */
#include "report.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chart.h"
#include "emit.h"
#include "search.h"

#ifndef PLAN_VERSION
#define PLAN_VERSION "unknown"
#endif

#define GIB 1073741824.0
#define SWEEP_MAX 32
#define SWEEP_CAP 4096 /* the GPU-count sweep stops here when a class never fits */

/* ------------------------------------------------------------------------------------------ */
/* Analysis                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Memory classes, from least to most intrusive (the "memory ladder" of section 1.4). Megatron
 * classes may use TP/PP/CP/EP to split the model; FSDP2 ones only data and Ulysses parallelism. */
enum {
    CLS_MEG_DDP, CLS_MEG_DDP_RC, CLS_MEG_DISTOPT, CLS_MEG_DISTOPT_RC, CLS_MEG_FSDP,
    CLS_MEG_FSDP_RC, CLS_FSDP2, CLS_FSDP2_RC, CLS_FSDP2_OFFLOAD, NCLS
};
static const char *const cls_name[NCLS] = {
    "Megatron, DDP (nothing sharded), no recompute",
    "Megatron, DDP, with recompute",
    "Megatron, distributed optimizer (ZeRO-1), no recompute",
    "Megatron, distributed optimizer, with recompute",
    "Megatron-FSDP (ZeRO-3), no recompute",
    "Megatron-FSDP, with recompute",
    "FSDP2 (ZeRO-3), no recompute",
    "FSDP2, full recompute",
    "FSDP2, CPU offload",
};
/* Ladder level of each class: 0 DDP, 1 distributed optimizer, 2 full sharding, 3 + recompute,
 * 4 + CPU offload. */
static const int cls_level[NCLS] = {0, 3, 1, 3, 2, 3, 2, 3, 4};
static const char *const level_name[5] = {
    "DDP (no sharding)", "distributed optimizer", "full sharding (FSDP)",
    "sharding + activation recompute", "CPU offload"};

static int class_of(const layout *l)
{
    bool rc = l->recompute != RECOMPUTE_NONE;
    if (l->framework == FRAMEWORK_FSDP2)
        return l->offload ? CLS_FSDP2_OFFLOAD : rc ? CLS_FSDP2_RC : CLS_FSDP2;
    int base = l->sharding == SHARDING_DDP       ? CLS_MEG_DDP
               : l->sharding == SHARDING_DISTOPT ? CLS_MEG_DISTOPT
                                                 : CLS_MEG_FSDP;
    return base + (rc ? 1 : 0);
}

/* Features of section 4: a probe layout each, and a predicate that says whether an evaluated
 * layout uses the feature (to report whether the search exercised it). */
enum {
    F_TP, F_SP, F_PP, F_VPP, F_CP, F_EP, F_ETP, F_DDP, F_DISTOPT, F_FSDP, F_HSDP, F_NORESHARD,
    F_SELECTIVE, F_FULL, F_OFFLOAD, F_FSDP_PP, F_OFFLOAD_RC, NFEAT
};
static const char *const feat_name[NFEAT] = {
    "Tensor parallel (TP 2)",
    "Megatron sequence parallel (SP, with TP 2)",
    "Pipeline parallel (PP 2)",
    "Interleaved pipeline (PP 2, VPP 2)",
    "Context parallel (CP 2; FSDP2: Ulysses)",
    "Expert parallel (EP 2)",
    "Expert tensor parallel (ETP 1 under TP 2)",
    "DDP (nothing sharded)",
    "Distributed optimizer (ZeRO-1)",
    "Full sharding (ZeRO-3: FSDP2 / Megatron-FSDP)",
    "HSDP (shard within 8 GPUs, replicate across)",
    "Keep gathered parameters after forward (ZeRO-2-like)",
    "Selective recompute",
    "Full recompute",
    "CPU offload",
    "Full sharding together with PP",
    "CPU offload together with recompute",
};

static bool feat_uses(int f, const layout *l)
{
    switch (f) {
    case F_TP: return l->tp > 1;
    case F_SP: return l->sp;
    case F_PP: return l->pp > 1;
    case F_VPP: return l->vpp > 1;
    case F_CP: return l->cp > 1;
    case F_EP: return l->ep > 1;
    case F_ETP: return l->etp > 0 && l->etp != l->tp;
    case F_DDP: return l->sharding == SHARDING_DDP;
    case F_DISTOPT: return l->sharding == SHARDING_DISTOPT;
    case F_FSDP: return l->sharding == SHARDING_FSDP;
    case F_HSDP: return l->shard_size > 0;
    case F_NORESHARD: return l->sharding == SHARDING_FSDP && !l->reshard_after_forward;
    case F_SELECTIVE: return l->recompute == RECOMPUTE_SELECTIVE;
    case F_FULL: return l->recompute == RECOMPUTE_FULL;
    case F_OFFLOAD: return l->offload;
    case F_FSDP_PP: return l->sharding == SHARDING_FSDP && l->pp > 1;
    case F_OFFLOAD_RC: return l->offload && l->recompute != RECOMPUTE_NONE;
    }
    return false;
}

/* The probe layout for feature f under framework fw on 64 GPUs. */
static layout feat_probe(int f, layout_framework fw)
{
    layout l = layout_default(fw);
    l.dp = 64;
    bool meg = fw == FRAMEWORK_MEGATRON;
    switch (f) {
    case F_TP: l.tp = 2; l.dp = 32; l.sp = meg; break; /* MoE under Megatron needs SP with TP */
    case F_SP: l.tp = 2; l.dp = 32; l.sp = true; break;
    case F_PP: l.pp = 2; l.dp = 32; break;
    case F_VPP: l.pp = 2; l.vpp = 2; l.dp = 32; break;
    case F_CP: l.cp = 2; l.dp = 32; break;
    case F_EP: l.ep = 2; break;
    case F_ETP: l.tp = 2; l.dp = 32; l.sp = meg; l.ep = 2; l.etp = 1; break;
    case F_DDP: l.sharding = SHARDING_DDP; break;
    case F_DISTOPT: l.sharding = SHARDING_DISTOPT; break;
    case F_FSDP: l.sharding = SHARDING_FSDP; break;
    case F_HSDP: l.sharding = SHARDING_FSDP; l.shard_size = 8; break;
    case F_NORESHARD: l.sharding = SHARDING_FSDP; l.reshard_after_forward = false; break;
    case F_SELECTIVE: l.recompute = RECOMPUTE_SELECTIVE; break;
    case F_FULL: l.recompute = RECOMPUTE_FULL; break;
    case F_OFFLOAD: l.sharding = SHARDING_FSDP; l.offload = true; break;
    case F_FSDP_PP: l.sharding = SHARDING_FSDP; l.pp = 2; l.dp = 32; break;
    case F_OFFLOAD_RC:
        l.sharding = SHARDING_FSDP; l.offload = true; l.recompute = RECOMPUTE_FULL; break;
    }
    return l;
}

typedef struct {
    int gpus;
    long evaluated, feasible;
    bool has_best[2];
    estimate best[2];
    bool has_closest[2];
    estimate closest[2];
    bool has_noep;            /* best feasible Megatron plan with ep == 1 */
    estimate noep;
    bool has_noep_closest;    /* when no ep == 1 Megatron plan fits: the closest */
    estimate noep_closest;
    bool fits[NCLS];
} point;

typedef struct {
    model_spec m;
    int npts;
    point *pts;               /* ascending GPU counts */
    int min_gpus[NCLS];       /* 0: never fits up to cap */
    int cap;                  /* the largest GPU count searched */
} model_result;

/* One member of the dense family swept for the Megatron-vs-FSDP2 threshold. */
typedef struct {
    double params;
    bool has[REPORT_MAX_GPUS][2];
    double step[REPORT_MAX_GPUS][2];
    bool fsdp2_offload[REPORT_MAX_GPUS]; /* FSDP2's best plan needs CPU offload */
    bool fit_level[REPORT_MAX_GPUS][5];  /* some layout of that memory rung fits */
    bool fit_level_dp[REPORT_MAX_GPUS][5]; /* ... without TP or PP (data parallel only) */
} size_point;

#define NSIZES 11

struct report {
    system_spec sys;
    char system_name[64];
    char calibration[512];
    char bench_path[512];
    training_spec t;
    int nmodels;
    model_result models[REPORT_MAX_MODELS];
    int ngpus;
    int gpus[REPORT_MAX_GPUS];
    bench_row *bench;
    int nbench;
    bool any_measured;
    size_point sizes[NSIZES];
    model_spec probe;         /* an MoE model for the feature probes */
    long feat_count[2][NFEAT];
    report_stats stats;
};

typedef struct {
    report *r;
    point *p;
} visit_ctx;

static void visit(const estimate *e, void *arg)
{
    visit_ctx *v = arg;
    const layout *l = &e->layout;
    int fw = l->framework;
    for (int f = 0; f < NFEAT; f++)
        if (feat_uses(f, l)) v->r->feat_count[fw][f]++;
    point *p = v->p;
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
    p->fits[class_of(l)] = true;
    if (noep && (!p->has_noep || search_better(e, &p->noep))) {
        p->noep = *e;
        p->has_noep = true;
    }
}

static cm_status search_point(report *r, const model_spec *m, point *p, search_result *sr,
                              char *err, size_t errlen)
{
    visit_ctx v = {r, p};
    search_options o = {.gpus = p->gpus, .keep = 1, .frameworks = {true, true},
                        .visit = visit, .visit_arg = &v};
    cm_status st = search_run(m, &r->sys, &r->t, &o, sr, err, errlen);
    if (st != CM_OK) return st;
    r->stats.searches++;
    r->stats.layouts += sr->evaluated;
    p->evaluated = sr->evaluated;
    p->feasible = sr->feasible;
    for (int fw = 0; fw < 2; fw++) {
        p->has_best[fw] = sr->has_best[fw];
        if (sr->has_best[fw]) p->best[fw] = sr->best[fw];
        p->has_closest[fw] = sr->has_closest[fw];
        if (sr->has_closest[fw]) p->closest[fw] = sr->closest[fw];
    }
    return CM_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Search the model at the user's GPU counts and at powers of two from 1: up to the largest
 * count asked, and beyond it while some memory class has not fitted yet (up to the cap). */
static cm_status build_model(report *r, model_result *mr, search_result *sr, char *err,
                             size_t errlen)
{
    int maxg = 0;
    for (int i = 0; i < r->ngpus; i++)
        if (r->gpus[i] > maxg) maxg = r->gpus[i];
    int cap = maxg > SWEEP_CAP ? maxg : SWEEP_CAP;
    int counts[SWEEP_MAX + REPORT_MAX_GPUS], n = 0;
    for (long g = 1; g <= cap && n < SWEEP_MAX; g *= 2) counts[n++] = (int)g;
    for (int i = 0; i < r->ngpus; i++) {
        bool dup = false;
        for (int k = 0; k < n; k++) dup |= counts[k] == r->gpus[i];
        if (!dup) counts[n++] = r->gpus[i];
    }
    qsort(counts, n, sizeof *counts, cmp_int);
    mr->pts = calloc(n, sizeof *mr->pts);
    if (!mr->pts) return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    mr->npts = 0;
    mr->cap = 0;
    for (int k = 0; k < NCLS; k++) mr->min_gpus[k] = 0;
    for (int i = 0; i < n; i++) {
        bool all = true;
        for (int k = 0; k < NCLS; k++) all &= mr->min_gpus[k] > 0;
        if (all && counts[i] > maxg) break;
        point *p = &mr->pts[mr->npts];
        p->gpus = counts[i];
        cm_status st = search_point(r, &mr->m, p, sr, err, errlen);
        if (st != CM_OK) return st;
        mr->npts++;
        mr->cap = counts[i];
        for (int k = 0; k < NCLS; k++)
            if (p->fits[k] && !mr->min_gpus[k]) mr->min_gpus[k] = p->gpus;
    }
    return CM_OK;
}

static const point *find_point(const model_result *mr, int gpus)
{
    for (int i = 0; i < mr->npts; i++)
        if (mr->pts[i].gpus == gpus) return &mr->pts[i];
    return NULL;
}

/* The faster of the two frameworks' best plans, or NULL when nothing fits. */
static const estimate *best_of(const point *p)
{
    if (!p) return NULL;
    if (p->has_best[0] && p->has_best[1])
        return search_better(&p->best[1], &p->best[0]) ? &p->best[1] : &p->best[0];
    if (p->has_best[0]) return &p->best[0];
    if (p->has_best[1]) return &p->best[1];
    return NULL;
}

/* The plan recommended for a model: the best at the largest of the user's GPU counts where one
 * fits; when none does, at the smallest swept count where one fits. */
static const estimate *primary_plan(const report *r, const model_result *mr)
{
    for (int i = r->ngpus - 1; i >= 0; i--) {
        const estimate *e = best_of(find_point(mr, r->gpus[i]));
        if (e) return e;
    }
    for (int i = 0; i < mr->npts; i++) {
        const estimate *e = best_of(&mr->pts[i]);
        if (e) return e;
    }
    return NULL;
}

/* Llama-3-shaped dense models (head dim 128, 8 KV groups, SwiGLU, untied embeddings,
 * vocabulary 128256), 1.5B to 406B: the 8B/70B/405B rows are the Llama-3.1 shapes, the others
 * interpolate (layers and width grow together, FFN about 3.5x hidden). */
static const struct { int layers, hidden, heads; long ffn; } dense_family[NSIZES] = {
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
    size_point *sp;
    int g;
} size_visit_ctx;

static void size_visit(const estimate *e, void *arg)
{
    size_visit_ctx *v = arg;
    if (!e->feasible) return;
    int lev = cls_level[class_of(&e->layout)];
    v->sp->fit_level[v->g][lev] = true;
    if (e->layout.tp == 1 && e->layout.pp == 1) v->sp->fit_level_dp[v->g][lev] = true;
}

static cm_status build_sizes(report *r, search_result *sr, char *err, size_t errlen)
{
    for (int i = 0; i < NSIZES; i++) {
        model_spec m;
        dense_model(&m, i);
        cm_status st = model_validate(&m, err, errlen);
        if (st != CM_OK) return st;
        size_point *sp = &r->sizes[i];
        sp->params = model_params_total(&m);
        for (int g = 0; g < r->ngpus; g++) {
            size_visit_ctx v = {sp, g};
            search_options o = {.gpus = r->gpus[g], .keep = 1, .frameworks = {true, true},
                                .visit = size_visit, .visit_arg = &v};
            st = search_run(&m, &r->sys, &r->t, &o, sr, err, errlen);
            if (st != CM_OK) return st;
            r->stats.searches++;
            r->stats.layouts += sr->evaluated;
            for (int fw = 0; fw < 2; fw++) {
                sp->has[g][fw] = sr->has_best[fw];
                sp->step[g][fw] = sr->has_best[fw] ? sr->best[fw].time.step_s : NAN;
            }
            sp->fsdp2_offload[g] =
                sr->has_best[FRAMEWORK_FSDP2] && sr->best[FRAMEWORK_FSDP2].layout.offload;
        }
    }
    return CM_OK;
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
    search_result *sr = search_result_new();
    if (!r || !sr) {
        free(r);
        search_result_free(sr);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    }
    r->sys = *o->sys;
    snprintf(r->system_name, sizeof r->system_name, "%s",
             o->system_name ? o->system_name : o->sys->name);
    snprintf(r->calibration, sizeof r->calibration, "%s",
             o->calibration_path ? o->calibration_path : "");
    snprintf(r->bench_path, sizeof r->bench_path, "%s", o->bench_path ? o->bench_path : "");
    r->t = o->training;
    r->ngpus = o->ngpus;
    memcpy(r->gpus, o->gpus, o->ngpus * sizeof *o->gpus);
    qsort(r->gpus, r->ngpus, sizeof *r->gpus, cmp_int);
    /* drop duplicate GPU counts */
    int ng = 0;
    for (int i = 0; i < r->ngpus; i++)
        if (!ng || r->gpus[ng - 1] != r->gpus[i]) r->gpus[ng++] = r->gpus[i];
    r->ngpus = ng;
    if (o->nbench > 0 && o->bench) {
        r->bench = malloc(o->nbench * sizeof *r->bench);
        if (!r->bench) {
            report_free(r);
            search_result_free(sr);
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
        }
        memcpy(r->bench, o->bench, o->nbench * sizeof *r->bench);
        r->nbench = o->nbench;
        for (int i = 0; i < r->nbench; i++)
            if (!isnan(r->bench[i].measured_step_s)) r->any_measured = true;
    }
    probe_model(&r->probe);
    r->nmodels = 0;
    for (int i = 0; i < o->nmodels && st == CM_OK; i++) {
        bool dup = false; /* the same model twice would repeat sections and anchors */
        for (int k = 0; k < r->nmodels; k++) dup |= !strcmp(r->models[k].m.name, o->models[i].name);
        if (dup) continue;
        model_result *mr = &r->models[r->nmodels++];
        mr->m = o->models[i];
        st = build_model(r, mr, sr, err, errlen);
    }
    if (st == CM_OK) st = build_sizes(r, sr, err, errlen);
    search_result_free(sr);
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

report_stats report_get_stats(const report *r) { return r->stats; }

int report_format_from_path(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return -1;
    if (!strcmp(dot, ".html") || !strcmp(dot, ".htm")) return REPORT_HTML;
    if (!strcmp(dot, ".md") || !strcmp(dot, ".markdown")) return REPORT_MARKDOWN;
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* The document layer: one call per block, HTML or Markdown.                                  */
/* Inline markup in our own text: `code`, **bold**, [text](url), and \x for a literal x.      */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    FILE *f;
    report_format fmt;
    char dir[PATH_MAX];
    char stem[256];
    int ncols;
    char align[40];            /* the open table's column alignment, 'l' or 'r' */
    int depth;                 /* open list levels */
    bool li_open[8];
    int charts, images;
    cm_status st;              /* first failure (a chart that could not be written) */
    char err[CM_ERRLEN];
} doc;

/* Escape text that is not ours so neither format reads it as markup. */
static void plain(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    for (; *src && o + 3 < n; src++) {
        if (strchr("\\`*_[]|<>#", *src)) dst[o++] = '\\';
        dst[o++] = *src;
    }
    dst[o] = '\0';
}

/* Text that is not ours, for inside a `code span`: Markdown takes it literally, so only the
 * characters that would end the span (backquote) or start an escape (backslash) change. */
static void code_safe(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    for (; *src && o + 1 < n; src++) dst[o++] = *src == '`' || *src == '\\' ? '\'' : *src;
    dst[o] = '\0';
}

static void html_esc_char(FILE *f, char c)
{
    switch (c) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(c, f);
    }
}

static void html_esc_n(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1]) i++;
        html_esc_char(f, s[i]);
    }
}

/* Our inline markup to HTML. */
static void html_inline(FILE *f, const char *s)
{
    while (*s) {
        if (*s == '\\' && s[1]) {
            html_esc_char(f, s[1]);
            s += 2;
            continue;
        }
        if (*s == '`') {
            const char *e = strchr(s + 1, '`');
            if (e) {
                fputs("<code>", f);
                html_esc_n(f, s + 1, e - s - 1);
                fputs("</code>", f);
                s = e + 1;
                continue;
            }
        }
        if (s[0] == '*' && s[1] == '*') {
            const char *e = strstr(s + 2, "**");
            if (e) {
                fputs("<strong>", f);
                html_esc_n(f, s + 2, e - s - 2);
                fputs("</strong>", f);
                s = e + 2;
                continue;
            }
        }
        if (*s == '[') {
            const char *m = strchr(s, ']');
            const char *e = m && m[1] == '(' ? strchr(m, ')') : NULL;
            if (e) {
                fputs("<a href=\"", f);
                html_esc_n(f, m + 2, e - m - 2);
                fputs("\">", f);
                html_esc_n(f, s + 1, m - s - 1);
                fputs("</a>", f);
                s = e + 1;
                continue;
            }
        }
        html_esc_char(f, *s++);
    }
}

static char *vfmt(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = malloc(n > 0 ? n + 1 : 1);
    if (!s) return NULL;
    vsnprintf(s, n + 1, fmt, ap);
    return s;
}

static void doc_list_end(doc *d);

/* An id/anchor safe in both formats: letters, digits, '-' and '_' (others become '-'). */
static void safe_id(char *dst, size_t n, const char *src)
{
    size_t o = 0;
    for (; *src && o + 1 < n; src++)
        dst[o++] = isalnum((unsigned char)*src) || *src == '_' ? *src : '-';
    dst[o] = '\0';
}

static void doc_h(doc *d, int level, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void doc_h(doc *d, int level, const char *id, const char *fmt, ...)
{
    doc_list_end(d);
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (!s) return;
    char sid[128];
    safe_id(sid, sizeof sid, id);
    if (d->fmt == REPORT_HTML) {
        fprintf(d->f, "<h%d id=\"%s\">", level, sid);
        html_inline(d->f, s);
        fprintf(d->f, "</h%d>\n", level);
    } else {
        fprintf(d->f, "%.*s <a id=\"%s\"></a>%s\n\n", level, "######", sid, s);
    }
    free(s);
}

static void doc_p(doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void doc_p(doc *d, const char *fmt, ...)
{
    doc_list_end(d);
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (!s) return;
    if (d->fmt == REPORT_HTML) {
        fputs("<p>", d->f);
        html_inline(d->f, s);
        fputs("</p>\n", d->f);
    } else {
        fprintf(d->f, "%s\n\n", s);
    }
    free(s);
}

/* A list item at nesting depth (0 = top level). */
static void doc_li(doc *d, int depth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void doc_li(doc *d, int depth, const char *fmt, ...)
{
    if (depth > 6) depth = 6;
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (!s) return;
    if (d->fmt == REPORT_HTML) {
        while (d->depth > depth + 1) {
            if (d->li_open[d->depth - 1]) fputs("</li>", d->f);
            fputs("</ul>\n", d->f);
            d->depth--;
        }
        if (d->depth == depth + 1 && d->li_open[depth]) fputs("</li>\n", d->f);
        while (d->depth < depth + 1) {
            fputs("<ul>\n", d->f);
            d->li_open[d->depth] = false;
            d->depth++;
        }
        fputs("<li>", d->f);
        html_inline(d->f, s);
        d->li_open[depth] = true;
    } else {
        fprintf(d->f, "%*s- %s\n", 2 * depth, "", s);
        d->depth = depth + 1;
    }
    free(s);
}

static void doc_list_end(doc *d)
{
    if (!d->depth) return;
    if (d->fmt == REPORT_HTML) {
        while (d->depth > 0) {
            if (d->li_open[d->depth - 1]) fputs("</li>", d->f);
            fputs("</ul>\n", d->f);
            d->depth--;
        }
    } else {
        fputs("\n", d->f);
        d->depth = 0;
    }
}

/* A table: align is one letter per column, 'l' or 'r'. */
static void doc_table(doc *d, const char *align, const char *const *hdr)
{
    doc_list_end(d);
    d->ncols = (int)strlen(align);
    if (d->ncols >= (int)sizeof d->align) d->ncols = (int)sizeof d->align - 1;
    snprintf(d->align, sizeof d->align, "%.*s", d->ncols, align);
    if (d->fmt == REPORT_HTML) {
        fputs("<table>\n<thead><tr>", d->f);
        for (int i = 0; i < d->ncols; i++) {
            fprintf(d->f, "<th class=\"%s\">", align[i] == 'r' ? "r" : "l");
            html_inline(d->f, hdr[i]);
            fputs("</th>", d->f);
        }
        fputs("</tr></thead>\n<tbody>\n", d->f);
    } else {
        fputs("|", d->f);
        for (int i = 0; i < d->ncols; i++) fprintf(d->f, " %s |", hdr[i]);
        fputs("\n|", d->f);
        for (int i = 0; i < d->ncols; i++) fputs(align[i] == 'r' ? " ---: |" : " --- |", d->f);
        fputs("\n", d->f);
    }
}

static void doc_row(doc *d, const char *const *cells)
{
    if (d->fmt == REPORT_HTML) {
        fputs("<tr>", d->f);
        for (int i = 0; i < d->ncols; i++) {
            fputs(d->align[i] == 'r' ? "<td class=\"r\">" : "<td>", d->f);
            html_inline(d->f, cells[i] ? cells[i] : "");
            fputs("</td>", d->f);
        }
        fputs("</tr>\n", d->f);
    } else {
        fputs("|", d->f);
        for (int i = 0; i < d->ncols; i++) fprintf(d->f, " %s |", cells[i] ? cells[i] : "");
        fputs("\n", d->f);
    }
}

static void doc_table_end(doc *d)
{
    if (d->fmt == REPORT_HTML) fputs("</tbody>\n</table>\n", d->f);
    else fputs("\n", d->f);
}

static void doc_code(doc *d, const char *lang, const char *text)
{
    doc_list_end(d);
    if (d->fmt == REPORT_HTML) {
        fprintf(d->f, "<pre><code class=\"language-%s\">", lang);
        for (const char *s = text; *s; s++) html_esc_char(d->f, *s);
        fputs("</code></pre>\n", d->f);
    } else {
        fprintf(d->f, "```%s\n%s%s```\n\n", lang, text,
                text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n");
    }
}

/* A code block folded under a summary line in HTML (a plain paragraph and block in Markdown). */
static void doc_details(doc *d, const char *summary, const char *lang, const char *text)
{
    doc_list_end(d);
    if (d->fmt == REPORT_HTML) {
        fputs("<details><summary>", d->f);
        html_inline(d->f, summary);
        fputs("</summary>\n", d->f);
        doc_code(d, lang, text);
        fputs("</details>\n", d->f);
    } else {
        fprintf(d->f, "%s:\n\n", summary);
        doc_code(d, lang, text);
    }
}

/* A chart: inline SVG in HTML, a PNG beside the Markdown file. name is unique per report. */
static void doc_chart(doc *d, const chart *c, const char *name, const char *caption)
{
    doc_list_end(d);
    char msg[CM_ERRLEN];
    if (!chart_available()) {
        doc_p(d, "*(Chart \"%s\" not drawn: this build of plan has no cairo; install "
                 "libcairo2-dev and reconfigure with `-Dcharts=enabled`.)*",
              c->title);
        return;
    }
    char sname[128];
    safe_id(sname, sizeof sname, name);
    name = sname;
    if (d->fmt == REPORT_HTML) {
        char prefix[64], *svg = NULL;
        snprintf(prefix, sizeof prefix, "c%d-", d->charts);
        if (chart_svg(c, prefix, &svg, NULL, msg, sizeof msg) != CM_OK) {
            if (d->st == CM_OK) {
                d->st = CM_ENOMEM;
                snprintf(d->err, sizeof d->err, "%s", msg);
            }
            return;
        }
        fprintf(d->f, "<figure id=\"chart-%s\">\n%s\n<figcaption>", name, svg);
        html_inline(d->f, caption);
        fputs("</figcaption>\n</figure>\n", d->f);
        free(svg);
    } else {
        char file[PATH_MAX], path[2 * PATH_MAX + 2];
        char stem[256];
        safe_id(stem, sizeof stem, d->stem); /* no spaces or brackets in the link */
        snprintf(file, sizeof file, "%s-%s.png", stem, name);
        snprintf(path, sizeof path, "%s/%s", d->dir, file);
        if (chart_png(c, path, msg, sizeof msg) != CM_OK) {
            if (d->st == CM_OK) {
                d->st = CM_EIO;
                snprintf(d->err, sizeof d->err, "%s", msg);
            }
            return;
        }
        d->images++;
        fprintf(d->f, "![%s](%s)\n\n*%s*\n\n", c->title, file, caption);
    }
    d->charts++;
}

/* ------------------------------------------------------------------------------------------ */
/* Formatting helpers                                                                         */
/* ------------------------------------------------------------------------------------------ */

static const char *fw_title(int fw) { return fw == FRAMEWORK_FSDP2 ? "FSDP2" : "Megatron"; }

static void fmt_params(double p, char *buf, size_t n)
{
    if (p >= 1e9) snprintf(buf, n, "%.*fB", p >= 1e11 ? 0 : 1, p / 1e9);
    else snprintf(buf, n, "%.0fM", p / 1e6);
}

/* Compact layout: "TP 2 · PP 1 · DP 4 · CP 1 · EP 1 · mbs 1 · SP · distopt · recompute none". */
static void fmt_layout(const estimate *e, char *buf, size_t n)
{
    const layout *l = &e->layout;
    if (l->framework == FRAMEWORK_FSDP2) {
        char shard[32] = "";
        if (l->shard_size) snprintf(shard, sizeof shard, " (HSDP %d)", l->shard_size);
        snprintf(buf, n, "DP %d · Ulysses %d · mbs %d · FSDP%s%s · recompute %s%s", l->dp,
                 l->cp, l->mbs, shard, l->reshard_after_forward ? "" : " no-reshard",
                 layout_recompute_name(l->recompute), l->offload ? " · CPU offload" : "");
        return;
    }
    char ep[32] = "", vpp[32] = "";
    if (l->ep > 1) snprintf(ep, sizeof ep, " · EP %d%s", l->ep, layout_etp(l) != l->tp ? " (ETP 1)" : "");
    if (l->vpp > 1) snprintf(vpp, sizeof vpp, " · VPP %d", l->vpp);
    snprintf(buf, n, "TP %d · PP %d · DP %d · CP %d%s%s · mbs %d%s · %s · recompute %s", l->tp,
             l->pp, l->dp, l->cp, ep, vpp, l->mbs, l->sp ? " · SP" : "",
             l->sharding == SHARDING_FSDP      ? "Megatron-FSDP"
             : l->sharding == SHARDING_DISTOPT ? "distopt"
                                               : "DDP",
             layout_recompute_name(l->recompute));
}

static double headroom_gib(const estimate *e)
{
    return (e->memory.capacity_bytes - e->memory.total_bytes) / GIB;
}

static double over_gib(const estimate *e) { return -headroom_gib(e); }

/* "8, 16 and 32" */
static void fmt_gpu_list(const int *g, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t o = strlen(buf);
        snprintf(buf + o, len - o, "%s%d", i == 0 ? "" : i == n - 1 ? " and " : ", ", g[i]);
    }
}

/* A measured bench row for this estimate: same layout first, else the same model, system, GPU
 * count and framework (another layout). */
static const bench_row *measured_for(const report *r, const estimate *e, bool *same_layout)
{
    if (!r->any_measured) return NULL;
    bench_row me;
    bench_row_from_estimate(&me, e, r->sys.name, PLAN_VERSION);
    for (int i = 0; i < r->nbench; i++)
        if (!isnan(r->bench[i].measured_step_s) && bench_row_same_layout(&r->bench[i], &me)) {
            *same_layout = true;
            return &r->bench[i];
        }
    for (int i = 0; i < r->nbench; i++) {
        const bench_row *b = &r->bench[i];
        if (!isnan(b->measured_step_s) && !strcmp(b->model, me.model) &&
            !strcmp(b->system, me.system) && b->gpus == me.gpus &&
            !strcmp(b->framework, me.framework)) {
            *same_layout = false;
            return b;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Section 1: the decision tree and its thresholds                                            */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    int both;                  /* sizes where both frameworks fit */
    double rmin, rmax;         /* Megatron speed / FSDP2 speed over those */
    double cross_params;       /* the last upward crossing of 1 (Megatron ahead above it); 0: none */
    int ncross;
    double fsdp2_last_fit;     /* largest size FSDP2 fits (0: none) */
    double meg_last_fit;
} size_summary;

static size_summary summarize_sizes(const report *r, int g)
{
    size_summary s = {0};
    s.rmin = INFINITY;
    s.rmax = -INFINITY;
    double prev_r = NAN, prev_p = NAN;
    for (int i = 0; i < NSIZES; i++) {
        const size_point *sp = &r->sizes[i];
        if (sp->has[g][FRAMEWORK_FSDP2]) s.fsdp2_last_fit = sp->params;
        if (sp->has[g][FRAMEWORK_MEGATRON]) s.meg_last_fit = sp->params;
        if (!sp->has[g][0] || !sp->has[g][1]) continue;
        double ratio = sp->step[g][FRAMEWORK_FSDP2] / sp->step[g][FRAMEWORK_MEGATRON];
        s.both++;
        if (ratio < s.rmin) s.rmin = ratio;
        if (ratio > s.rmax) s.rmax = ratio;
        if (!isnan(prev_r) && (prev_r - 1) * (ratio - 1) < 0) {
            s.ncross++;
            if (ratio > 1) { /* interpolate on log(params) */
                double f = (1 - prev_r) / (ratio - prev_r);
                s.cross_params = exp(log(prev_p) + f * (log(sp->params) - log(prev_p)));
            } else {
                s.cross_params = 0; /* FSDP2 ahead again above this point */
            }
        }
        prev_r = ratio;
        prev_p = sp->params;
    }
    return s;
}

/* The largest swept dense size that fits on the g-th GPU count using memory rungs up to lev
 * (0 when none does). */
static double largest_fit(const report *r, int g, int lev, bool dp_only)
{
    double best = 0;
    for (int i = 0; i < NSIZES; i++)
        for (int l = 0; l <= lev; l++) {
            bool fits = dp_only ? r->sizes[i].fit_level_dp[g][l] : r->sizes[i].fit_level[g][l];
            if (fits && r->sizes[i].params > best) best = r->sizes[i].params;
        }
    return best;
}

/* "DDP up to 8.0B, distributed optimizer up to 14.8B, ..." for the g-th GPU count. */
static void ladder_sentence(const report *r, int g, char *buf, size_t n)
{
    static const char *const short_name[5] = {"DDP", "distributed optimizer", "full sharding",
                                              "+ recompute", "+ CPU offload"};
    snprintf(buf, n, "on %d GPUs, data parallel only (no TP/PP), a dense model fits with ",
             r->gpus[g]);
    double prev = 0;
    bool any = false;
    for (int lev = 0; lev < 5; lev++) {
        double p = largest_fit(r, g, lev, true);
        if (p <= prev) continue;
        char ps[16];
        fmt_params(p, ps, sizeof ps);
        size_t o = strlen(buf);
        snprintf(buf + o, n - o, "%s%s up to %s", any ? ", " : "", short_name[lev], ps);
        prev = p;
        any = true;
    }
    if (!any) {
        snprintf(buf, n, "on %d GPUs no swept dense size fits", r->gpus[g]);
        return;
    }
    /* what Megatron's model parallelism adds */
    double ddp_mp = largest_fit(r, g, 0, false), all = largest_fit(r, g, 4, false);
    char ps[16], qs[16];
    size_t o = strlen(buf);
    if (ddp_mp > largest_fit(r, g, 0, true)) {
        fmt_params(ddp_mp, ps, sizeof ps);
        snprintf(buf + o, n - o, "; with Megatron's TP/PP, DDP alone reaches %s", ps);
        o = strlen(buf);
    }
    if (all < r->sizes[NSIZES - 1].params && all > 0) {
        fmt_params(all, qs, sizeof qs);
        snprintf(buf + o, n - o, "; nothing larger than %s fits", qs);
    }
}

/* One sentence: where Megatron overtakes FSDP2 on gpus GPUs. */
static void size_sentence(const report *r, int g, char *buf, size_t n)
{
    size_summary s = summarize_sizes(r, g);
    char a[16], b[16], c[16];
    fmt_params(r->sizes[0].params, a, sizeof a);
    if (s.both == 0) {
        if (s.meg_last_fit > 0) {
            fmt_params(s.meg_last_fit, b, sizeof b);
            snprintf(buf, n, "on %d GPUs FSDP2 fits none of the swept sizes; Megatron fits up "
                             "to %s",
                     r->gpus[g], b);
        } else {
            snprintf(buf, n, "on %d GPUs neither framework fits any swept size", r->gpus[g]);
        }
        return;
    }
    char tail[128] = "";
    if (s.meg_last_fit > s.fsdp2_last_fit) {
        fmt_params(s.fsdp2_last_fit, b, sizeof b);
        fmt_params(s.meg_last_fit, c, sizeof c);
        snprintf(tail, sizeof tail, "; above %s only Megatron fits (up to %s)", b, c);
    } else if (s.fsdp2_last_fit > s.meg_last_fit) {
        fmt_params(s.meg_last_fit, b, sizeof b);
        fmt_params(s.fsdp2_last_fit, c, sizeof c);
        snprintf(tail, sizeof tail, "; above %s only FSDP2 fits (up to %s, with CPU offload "
                                    "where the table says so)",
                 b, c);
    }
    if (s.rmin > 1) {
        snprintf(buf, n, "on %d GPUs Megatron is faster at every size from %s (%.2f-%.2fx)%s",
                 r->gpus[g], a, s.rmin, s.rmax, tail);
    } else if (s.rmax < 1) {
        snprintf(buf, n, "on %d GPUs FSDP2 is faster at every size where both fit "
                         "(Megatron %.2f-%.2fx)%s",
                 r->gpus[g], s.rmin, s.rmax, tail);
    } else if (s.cross_params > 0) {
        fmt_params(s.cross_params, b, sizeof b);
        snprintf(buf, n, "on %d GPUs Megatron overtakes FSDP2 at about **%s parameters** and "
                         "stays ahead above it (ratio %.2f-%.2fx over the sweep%s)%s",
                 r->gpus[g], b, s.rmin, s.rmax,
                 s.ncross > 1 ? "; the ratio crosses 1 more than once" : "", tail);
    } else {
        snprintf(buf, n, "on %d GPUs the lead changes hands (ratio %.2f-%.2fx) and FSDP2 is "
                         "ahead at the largest size where both fit%s",
                 r->gpus[g], s.rmin, s.rmax, tail);
    }
}

/* EP analysis for one MoE model at one GPU count; returns false when there is nothing to say. */
static bool ep_sentence(const model_result *mr, const point *p, char *buf, size_t n)
{
    if (!p || !p->has_best[FRAMEWORK_MEGATRON]) {
        if (p) snprintf(buf, n, "%s on %d GPUs: no Megatron plan fits", mr->m.display, p->gpus);
        return p != NULL;
    }
    const estimate *b = &p->best[FRAMEWORK_MEGATRON];
    if (b->layout.ep == 1) {
        snprintf(buf, n, "%s on %d GPUs: the best Megatron plan uses **no** expert "
                         "parallelism (EP 1, %.2f s/step)",
                 mr->m.display, p->gpus, b->time.step_s);
        return true;
    }
    if (p->has_noep) {
        snprintf(buf, n, "%s on %d GPUs: **EP %d** is %.2fx faster than the best EP 1 plan "
                         "(%.2f vs %.2f s/step)",
                 mr->m.display, p->gpus, b->layout.ep, p->noep.time.step_s / b->time.step_s,
                 b->time.step_s, p->noep.time.step_s);
    } else if (p->has_noep_closest) {
        snprintf(buf, n, "%s on %d GPUs: **EP is needed to fit**: without it the closest plan "
                         "needs %.1f GiB per GPU (%.1f GiB over); with EP %d it runs at %.2f "
                         "s/step",
                 mr->m.display, p->gpus, p->noep_closest.memory.total_bytes / GIB,
                 over_gib(&p->noep_closest), b->layout.ep, b->time.step_s);
    } else {
        snprintf(buf, n, "%s on %d GPUs: EP %d, %.2f s/step (no EP 1 layout is valid here)",
                 mr->m.display, p->gpus, b->layout.ep, b->time.step_s);
    }
    return true;
}

/* The least intrusive ladder level that fits at point p (5: none). */
static int fit_level(const point *p, bool *meg, bool *fsdp2)
{
    *meg = *fsdp2 = false;
    for (int lev = 0; lev < 5; lev++) {
        bool any = false;
        for (int k = 0; k < NCLS; k++)
            if (cls_level[k] == lev && p->fits[k]) {
                any = true;
                if (k >= CLS_FSDP2) *fsdp2 = true;
                else *meg = true;
            }
        if (any) return lev;
    }
    return 5;
}

static void chart_ratio(doc *d, const report *r)
{
    chart c;
    chart_init(&c, CHART_LINES, "Megatron speed relative to FSDP2, by model size",
               "parameters (dense, Llama-3 shape; log scale)",
               "FSDP2 step time / Megatron step time");
    c.log_x = true;
    c.ref_y = 1;
    snprintf(c.ref_label, sizeof c.ref_label, "equal speed");
    for (int i = 0; i < NSIZES; i++) {
        char lab[16];
        fmt_params(r->sizes[i].params, lab, sizeof lab);
        chart_add_point(&c, lab, r->sizes[i].params);
    }
    for (int g = 0; g < r->ngpus && g < CHART_MAX_SERIES; g++) {
        char name[32];
        snprintf(name, sizeof name, "%d GPUs", r->gpus[g]);
        int s = chart_add_series(&c, name);
        for (int i = 0; i < NSIZES; i++) {
            const size_point *sp = &r->sizes[i];
            if (sp->has[g][0] && sp->has[g][1])
                c.y[s][i] = sp->step[g][FRAMEWORK_FSDP2] / sp->step[g][FRAMEWORK_MEGATRON];
        }
    }
    doc_chart(d, &c, "size-ratio",
              "Above the dashed line Megatron is faster. A gap means one framework does not "
              "fit at that size (see the table).");
}

static void section_decision(doc *d, const report *r)
{
    char buf[1024], gl[256];
    fmt_gpu_list(r->gpus, r->ngpus, gl, sizeof gl);
    doc_h(d, 2, "decision", "1. Decision tree");
    doc_p(d, "Every threshold below was computed for **%s** (%s, %d GPUs per node) at sequence "
             "%d and global batch %d sequences, at your GPU counts (%s).",
          r->system_name, r->sys.gpu_name, r->sys.gpus_per_node, r->t.seq_len,
          r->t.global_batch, gl);

    /* the tree */
    bool any_moe = false;
    for (int i = 0; i < r->nmodels; i++) any_moe |= model_is_moe(&r->models[i].m);
    doc_li(d, 0, "**Is the model a mixture of experts?**");
    doc_li(d, 1, "**Yes** → Megatron with expert parallelism (the FSDP2 trainer path has no EP).");
    if (!any_moe)
        doc_li(d, 2, "No MoE model in `--models`: add one (e.g. `mixtral-8x7b`) to compute "
                     "when EP pays here.");
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        if (!model_is_moe(&mr->m)) continue;
        for (int g = 0; g < r->ngpus; g++)
            if (ep_sentence(mr, find_point(mr, r->gpus[g]), buf, sizeof buf))
                doc_li(d, 2, "%s.", buf);
    }
    doc_li(d, 1, "**No (dense)** → does Megatron overtake FSDP2 at this size? Computed from "
                 "the size sweep of 1.2:");
    for (int g = 0; g < r->ngpus; g++) {
        size_sentence(r, g, buf, sizeof buf);
        doc_li(d, 2, "%c%s.", toupper((unsigned char)buf[0]), buf + 1);
    }
    doc_li(d, 2, "Where FSDP2 is within a few percent, prefer it for the simpler stack "
                 "(Hugging Face model code, no checkpoint conversion); where Megatron leads, "
                 "the gap is the price of staying on FSDP2.");
    doc_li(d, 0, "**Then memory: take the first rung that fits at your GPU count** (smallest "
                 "GPU counts in 1.4):");
    static const char *const rung[5] = {
        "DDP: nothing sharded (Megatron may still split the model with TP/PP/EP)",
        "distributed optimizer (ZeRO-1): shards the fp32 master weights and Adam moments",
        "full sharding: Megatron-FSDP or FSDP2 (ZeRO-3), parameters and gradients too",
        "activation recompute (selective first under Megatron, full under FSDP2)",
        "CPU offload (FSDP2 only; pipeline size 1, no recompute)"};
    for (int lev = 0; lev < 5; lev++) {
        /* which models first fit at exactly this rung, at which of the user's GPU counts */
        char who[2048] = "";
        for (int i = 0; i < r->nmodels; i++) {
            const model_result *mr = &r->models[i];
            int hit[REPORT_MAX_GPUS], nh = 0;
            for (int g = 0; g < r->ngpus; g++) {
                const point *p = find_point(mr, r->gpus[g]);
                bool meg, f2;
                if (p && fit_level(p, &meg, &f2) == lev) hit[nh++] = r->gpus[g];
            }
            if (!nh) continue;
            fmt_gpu_list(hit, nh, gl, sizeof gl);
            size_t o = strlen(who);
            snprintf(who + o, sizeof who - o, "%s%s on %s GPUs", who[0] ? "; " : "",
                     mr->m.display, gl);
        }
        doc_li(d, 1, "Rung %d, %s: %s%s.", lev + 1, rung[lev],
               who[0] ? "first fit for " : "first fit for none of your models",
               who[0] ? who : "");
    }
    doc_li(d, 1, "By model size (the dense family of 1.2), each rung's reach:");
    for (int g = 0; g < r->ngpus; g++) {
        ladder_sentence(r, g, buf, sizeof buf);
        doc_li(d, 2, "%c%s.", toupper((unsigned char)buf[0]), buf + 1);
    }
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        int nh = 0, hit[REPORT_MAX_GPUS];
        for (int g = 0; g < r->ngpus; g++) {
            const point *p = find_point(mr, r->gpus[g]);
            bool meg, f2;
            if (p && fit_level(p, &meg, &f2) == 5) hit[nh++] = r->gpus[g];
        }
        if (!nh) continue;
        fmt_gpu_list(hit, nh, gl, sizeof gl);
        int first = 0;
        for (int k = 0; k < NCLS; k++)
            if (mr->min_gpus[k] && (!first || mr->min_gpus[k] < first)) first = mr->min_gpus[k];
        if (first)
            doc_li(d, 1, "%s does not fit on %s GPUs at all; the smallest GPU count searched "
                         "(powers of two) that fits is **%d**.",
                   mr->m.display, gl, first);
        else
            doc_li(d, 1, "%s does not fit on %s GPUs, nor on any power of two up to %d.",
                   mr->m.display, gl, mr->cap);
    }
    doc_list_end(d);

    /* 1.2 the size sweep */
    doc_h(d, 3, "threshold-size", "1.2 Model size at which Megatron overtakes FSDP2");
    doc_p(d, "A Llama-3-shaped dense family (head dim 128, 8 KV groups, SwiGLU, untied "
             "embeddings, vocabulary 128256; the 8B, 70B and 405B rows are the Llama-3.1 "
             "shapes, the others interpolate) searched at each of your GPU counts. Each cell "
             "is the best FSDP2 step time divided by the best Megatron step time: above 1 "
             "Megatron is faster. \"M only\" means only Megatron fits; \"-\" neither.");
    {
        const char *hdr[REPORT_MAX_GPUS + 2];
        char hbuf[REPORT_MAX_GPUS][24], align[REPORT_MAX_GPUS + 3];
        hdr[0] = "Parameters";
        hdr[1] = "Shape (layers × hidden)";
        align[0] = 'r';
        align[1] = 'l';
        for (int g = 0; g < r->ngpus; g++) {
            snprintf(hbuf[g], sizeof hbuf[g], "%d GPUs", r->gpus[g]);
            hdr[g + 2] = hbuf[g];
            align[g + 2] = 'r';
        }
        align[r->ngpus + 2] = '\0';
        doc_table(d, align, hdr);
        for (int i = 0; i < NSIZES; i++) {
            const size_point *sp = &r->sizes[i];
            char cells[REPORT_MAX_GPUS + 2][32];
            const char *row[REPORT_MAX_GPUS + 2];
            fmt_params(sp->params, cells[0], sizeof cells[0]);
            snprintf(cells[1], sizeof cells[1], "%d × %d", dense_family[i].layers,
                     dense_family[i].hidden);
            for (int g = 0; g < r->ngpus; g++) {
                if (sp->has[g][0] && sp->has[g][1])
                    snprintf(cells[g + 2], sizeof cells[0], "%.2f",
                             sp->step[g][FRAMEWORK_FSDP2] / sp->step[g][FRAMEWORK_MEGATRON]);
                else if (sp->has[g][FRAMEWORK_MEGATRON])
                    snprintf(cells[g + 2], sizeof cells[0], "M only");
                else if (sp->has[g][FRAMEWORK_FSDP2])
                    snprintf(cells[g + 2], sizeof cells[0], "FSDP2 only%s",
                             sp->fsdp2_offload[g] ? " (offload)" : "");
                else
                    snprintf(cells[g + 2], sizeof cells[0], "-");
            }
            for (int k = 0; k < r->ngpus + 2; k++) row[k] = cells[k];
            doc_row(d, row);
        }
        doc_table_end(d);
    }
    for (int g = 0; g < r->ngpus; g++) {
        size_sentence(r, g, buf, sizeof buf);
        doc_li(d, 0, "%c%s.", toupper((unsigned char)buf[0]), buf + 1);
    }
    doc_list_end(d);
    chart_ratio(d, r);

    /* 1.3 EP */
    doc_h(d, 3, "threshold-ep", "1.3 When an MoE model needs expert parallelism");
    if (!any_moe) {
        doc_p(d, "No MoE model in `--models`, so nothing to compare. Add one (for example "
                 "`mixtral-8x7b` or `deepseek-v3`).");
    } else {
        doc_p(d, "For each MoE model and GPU count: the best Megatron plan overall against the "
                 "best Megatron plan restricted to EP 1 (both from the same search), and the "
                 "best FSDP2 plan (which never has EP).");
        const char *hdr[] = {"Model", "GPUs", "Best Megatron (s/step)", "its EP",
                             "Best with EP 1 (s/step)", "EP speed-up", "Best FSDP2 (s/step)"};
        doc_table(d, "lrrrrrr", hdr);
        for (int i = 0; i < r->nmodels; i++) {
            const model_result *mr = &r->models[i];
            if (!model_is_moe(&mr->m)) continue;
            for (int g = 0; g < r->ngpus; g++) {
                const point *p = find_point(mr, r->gpus[g]);
                if (!p) continue;
                char c[7][64];
                snprintf(c[0], sizeof c[0], "%s", mr->m.display);
                snprintf(c[1], sizeof c[1], "%d", p->gpus);
                bool hb = p->has_best[FRAMEWORK_MEGATRON];
                const estimate *b = &p->best[FRAMEWORK_MEGATRON];
                if (hb) {
                    snprintf(c[2], sizeof c[2], "%.2f", b->time.step_s);
                    snprintf(c[3], sizeof c[3], "%d", b->layout.ep);
                } else {
                    snprintf(c[2], sizeof c[2], "does not fit");
                    snprintf(c[3], sizeof c[3], "-");
                }
                if (p->has_noep)
                    snprintf(c[4], sizeof c[4], "%.2f", p->noep.time.step_s);
                else if (p->has_noep_closest)
                    snprintf(c[4], sizeof c[4], "does not fit (%.1f GiB over)",
                             over_gib(&p->noep_closest));
                else
                    snprintf(c[4], sizeof c[4], "-");
                if (hb && p->has_noep)
                    snprintf(c[5], sizeof c[5], "%.2fx", p->noep.time.step_s / b->time.step_s);
                else if (hb)
                    snprintf(c[5], sizeof c[5], "needed to fit");
                else
                    snprintf(c[5], sizeof c[5], "-");
                if (p->has_best[FRAMEWORK_FSDP2])
                    snprintf(c[6], sizeof c[6], "%.2f", p->best[FRAMEWORK_FSDP2].time.step_s);
                else
                    snprintf(c[6], sizeof c[6], "does not fit");
                const char *row[] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
                doc_row(d, row);
            }
        }
        doc_table_end(d);
    }

    /* 1.4 memory */
    doc_h(d, 3, "threshold-memory", "1.4 Where memory forces sharding, recompute or offload");
    doc_p(d, "Smallest GPU count (powers of two from 1, plus your counts) at which each model "
             "has a layout that fits in each memory class; \"-\" means none up to the number "
             "shown in the last row. Megatron rows may split the model with TP/PP/CP/EP; FSDP2 "
             "rows only with data and Ulysses parallelism.");
    {
        const char *hdr[REPORT_MAX_MODELS + 1];
        char align[REPORT_MAX_MODELS + 2];
        hdr[0] = "Memory class";
        align[0] = 'l';
        for (int i = 0; i < r->nmodels; i++) {
            hdr[i + 1] = r->models[i].m.display;
            align[i + 1] = 'r';
        }
        align[r->nmodels + 1] = '\0';
        doc_table(d, align, hdr);
        for (int k = 0; k < NCLS; k++) {
            char cells[REPORT_MAX_MODELS + 1][24];
            const char *row[REPORT_MAX_MODELS + 1];
            row[0] = cls_name[k];
            for (int i = 0; i < r->nmodels; i++) {
                if (r->models[i].min_gpus[k])
                    snprintf(cells[i + 1], sizeof cells[0], "%d", r->models[i].min_gpus[k]);
                else
                    snprintf(cells[i + 1], sizeof cells[0], "-");
                row[i + 1] = cells[i + 1];
            }
            doc_row(d, row);
        }
        char cells[REPORT_MAX_MODELS + 1][24];
        const char *row[REPORT_MAX_MODELS + 1];
        row[0] = "*(searched up to)*";
        for (int i = 0; i < r->nmodels; i++) {
            snprintf(cells[i + 1], sizeof cells[0], "%d", r->models[i].cap);
            row[i + 1] = cells[i + 1];
        }
        doc_row(d, row);
        doc_table_end(d);
    }
    doc_p(d, "By model size: the largest member of the dense family of 1.2 that fits on each "
             "of your GPU counts when the rungs up to that row are allowed, with any layout "
             "(either framework) and with data parallelism only (TP = PP = 1, as FSDP2 runs).");
    {
        const char *hdr[2 * REPORT_MAX_GPUS + 1];
        char hbuf[2 * REPORT_MAX_GPUS][40], align[2 * REPORT_MAX_GPUS + 2];
        hdr[0] = "Memory rungs allowed";
        align[0] = 'l';
        for (int g = 0; g < r->ngpus; g++)
            for (int k = 0; k < 2; k++) {
                snprintf(hbuf[2 * g + k], sizeof hbuf[0], "%d GPUs%s", r->gpus[g],
                         k ? ", DP only" : "");
                hdr[2 * g + k + 1] = hbuf[2 * g + k];
                align[2 * g + k + 1] = 'r';
            }
        align[2 * r->ngpus + 1] = '\0';
        doc_table(d, align, hdr);
        static const char *const upto[5] = {
            "DDP only", "+ distributed optimizer", "+ full sharding", "+ activation recompute",
            "+ CPU offload"};
        for (int lev = 0; lev < 5; lev++) {
            char cells[2 * REPORT_MAX_GPUS + 1][24];
            const char *row[2 * REPORT_MAX_GPUS + 1];
            row[0] = upto[lev];
            for (int c = 0; c < 2 * r->ngpus; c++) {
                double p = largest_fit(r, c / 2, lev, c % 2);
                if (p > 0) fmt_params(p, cells[c + 1], sizeof cells[0]);
                else snprintf(cells[c + 1], sizeof cells[0], "-");
                row[c + 1] = cells[c + 1];
            }
            doc_row(d, row);
        }
        doc_table_end(d);
    }
    doc_p(d, "At your GPU counts, the least intrusive rung that fits (and which framework "
             "offers it there):");
    {
        const char *hdr[REPORT_MAX_GPUS + 1];
        char hbuf[REPORT_MAX_GPUS][24], align[REPORT_MAX_GPUS + 2];
        hdr[0] = "Model";
        align[0] = 'l';
        for (int g = 0; g < r->ngpus; g++) {
            snprintf(hbuf[g], sizeof hbuf[g], "%d GPUs", r->gpus[g]);
            hdr[g + 1] = hbuf[g];
            align[g + 1] = 'l';
        }
        align[r->ngpus + 1] = '\0';
        doc_table(d, align, hdr);
        for (int i = 0; i < r->nmodels; i++) {
            char cells[REPORT_MAX_GPUS + 1][96];
            const char *row[REPORT_MAX_GPUS + 1];
            row[0] = r->models[i].m.display;
            for (int g = 0; g < r->ngpus; g++) {
                const point *p = find_point(&r->models[i], r->gpus[g]);
                bool meg = false, f2 = false;
                int lev = p ? fit_level(p, &meg, &f2) : 5;
                if (lev == 5)
                    snprintf(cells[g + 1], sizeof cells[0], "does not fit");
                else
                    snprintf(cells[g + 1], sizeof cells[0], "%s (%s)", level_name[lev],
                             meg && f2 ? "both" : meg ? "Megatron" : "FSDP2");
                row[g + 1] = cells[g + 1];
            }
            doc_row(d, row);
        }
        doc_table_end(d);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Section 2: the frameworks compared                                                          */
/* ------------------------------------------------------------------------------------------ */

static void section_compare(doc *d, const report *r)
{
    doc_h(d, 2, "compare", "2. FSDP2 and Megatron compared");
    /* computed rows first: speed and fit over the user's grid */
    int both = 0, meg_only = 0, f2_only = 0, none = 0, meg_wins = 0;
    double logsum = 0, rmin = INFINITY, rmax = -INFINITY;
    for (int i = 0; i < r->nmodels; i++)
        for (int g = 0; g < r->ngpus; g++) {
            const point *p = find_point(&r->models[i], r->gpus[g]);
            if (!p) continue;
            bool f = p->has_best[FRAMEWORK_FSDP2], m = p->has_best[FRAMEWORK_MEGATRON];
            if (f && m) {
                double ratio = p->best[FRAMEWORK_FSDP2].time.step_s /
                               p->best[FRAMEWORK_MEGATRON].time.step_s;
                both++;
                logsum += log(ratio);
                if (ratio < rmin) rmin = ratio;
                if (ratio > rmax) rmax = ratio;
                if (ratio > 1) meg_wins++;
            } else if (m) meg_only++;
            else if (f) f2_only++;
            else none++;
        }
    char speed[256];
    if (both)
        snprintf(speed, sizeof speed,
                 "Megatron faster in %d of %d model × GPU-count cases where both fit; geometric "
                 "mean %.2fx (range %.2f-%.2fx)",
                 meg_wins, both, exp(logsum / both), rmin, rmax);
    else
        snprintf(speed, sizeof speed, "no case in your grid where both fit");
    int cases = both + meg_only + f2_only + none;
    char fit_f2[128], fit_meg[128];
    snprintf(fit_f2, sizeof fit_f2, "fits in %d of %d cases", both + f2_only, cases);
    snprintf(fit_meg, sizeof fit_meg, "fits in %d of %d cases (neither fits: %d)",
             both + meg_only, cases, none);
    const char *hdr[] = {"", "FSDP2 (PyTorch `fully_shard` trainer path)",
                         "Megatron (Megatron-Core / Megatron-LM)"};
    doc_table(d, "lll", hdr);
    const char *rows[][3] = {
        {"Model code", "the Hugging Face model, eager PyTorch kernels (the cost model charges "
                       "its unfused elementwise work)",
         "Megatron-Core's model with fused kernels; Hugging Face checkpoints are converted "
         "(section 6)"},
        {"Parallelism", "data parallel (FSDP / HSDP) and Ulysses sequence parallel only: no "
                        "TP, PP or EP",
         "TP (+ sequence parallel), PP (+ interleaved VPP), CP (ring attention), EP (+ expert "
         "TP), DP"},
        {"Data-parallel sharding", "ZeRO-3 (`fully_shard`), HSDP shard group, "
                                   "`reshard_after_forward=False` (ZeRO-2-like)",
         "DDP, distributed optimizer (ZeRO-1), Megatron-FSDP (ZeRO-3, "
         "`optim_grads_params`; not with PP)"},
        {"Activation recompute", "whole layers (activation checkpointing)",
         "selective (attention core) or full (uniform / block)"},
        {"CPU offload", "parameters, gradients and optimizer to the host (pipeline size 1, no "
                        "recompute)",
         "not planned here (the search does not consider it)"},
        {"Checkpoint format", "PyTorch Distributed Checkpoint (DCP) of DTensor shards",
         "`torch_dist`; Megatron-FSDP requires `--ckpt-format fsdp_dtensor` and no other "
         "format"},
        {"Required flags", "-",
         "Megatron-FSDP: `--use-megatron-fsdp --data-parallel-sharding-strategy "
         "optim_grads_params --no-gradient-accumulation-fusion --use-distributed-optimizer "
         "--ckpt-format fsdp_dtensor`; not with `use_tp_pp_dp_mapping`; exclusive with torch "
         "FSDP2"},
        {"Recommended with it", "-",
         "`--calculate-per-token-loss --init-model-with-meta-device --grad-reduce-in-bf16 "
         "--fsdp-double-buffer --use-nccl-ub`, `CUDA_DEVICE_MAX_CONNECTIONS` unset"},
        {"Speed here (computed)", "baseline", speed},
        {"Fit here (computed)", fit_f2, fit_meg},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) doc_row(d, rows[i]);
    doc_table_end(d);
    doc_p(d, "The rules are the ones the planner enforces (DESIGN.md, \"Framework rules\"); "
             "section 4 checks each one against the rule code.");
}

/* ------------------------------------------------------------------------------------------ */
/* Section 3: performance per model and GPU count, with the charts                             */
/* ------------------------------------------------------------------------------------------ */

static const estimate *plan_or_closest(const point *p, int fw, bool *fits)
{
    *fits = p->has_best[fw];
    if (p->has_best[fw]) return &p->best[fw];
    if (p->has_closest[fw]) return &p->closest[fw];
    return NULL;
}

/* The GPU counts a model's bar charts show: the user's when the model fits at any of them,
 * else the first three searched counts where it fits. Returns how many; *own says which. */
static int chart_counts(const report *r, const model_result *mr, int *out, bool *own)
{
    int n = 0;
    for (int g = 0; g < r->ngpus; g++)
        if (best_of(find_point(mr, r->gpus[g]))) n++;
    *own = n > 0 || !primary_plan(r, mr);
    if (*own) {
        memcpy(out, r->gpus, r->ngpus * sizeof *out);
        return r->ngpus;
    }
    n = 0;
    for (int i = 0; i < mr->npts && n < 3; i++)
        if (best_of(&mr->pts[i])) out[n++] = mr->pts[i].gpus;
    return n;
}

static void charts_for_model(doc *d, const report *r, int mi)
{
    const model_result *mr = &r->models[mi];
    int counts[REPORT_MAX_GPUS];
    bool own;
    int ncounts = chart_counts(r, mr, counts, &own);
    bool short_labels = 2 * ncounts > 8;
    char title[160], name[96], lab[40];
    const char *where = own ? "" : " (none of your GPU counts fits: the smallest that do)";

    /* memory breakdown per plan */
    chart c;
    snprintf(title, sizeof title, "%s: memory per GPU of the best plans", mr->m.display);
    chart_init(&c, CHART_STACKED_BARS, title, "framework and GPU count", "GiB per GPU");
    const char *mem_series[] = {"weights", "gradients", "optimizer", "activations", "other"};
    for (int s = 0; s < 5; s++) chart_add_series(&c, mem_series[s]);
    c.ref_y = r->sys.hbm_bytes / GIB;
    snprintf(c.ref_label, sizeof c.ref_label, "HBM %.0f GiB", c.ref_y);
    bool any_hatched = false;
    for (int g = 0; g < ncounts; g++) {
        const point *p = find_point(mr, counts[g]);
        for (int fw = 0; fw < 2; fw++) {
            if (short_labels) snprintf(lab, sizeof lab, "%c %d", fw ? 'M' : 'F', counts[g]);
            else snprintf(lab, sizeof lab, "%s\n%d GPUs", fw_title(fw), counts[g]);
            int i = chart_add_point(&c, lab, counts[g]);
            bool fits;
            const estimate *e = p ? plan_or_closest(p, fw, &fits) : NULL;
            if (!e || i < 0) continue;
            const memory_breakdown *m = &e->memory;
            double v[5] = {m->weights_bytes, m->gradients_bytes, m->optimizer_bytes,
                           m->activations_bytes, m->other_bytes};
            for (int s = 0; s < 5; s++) c.y[s][i] = v[s] / GIB;
            c.hatched[i] = !fits;
            any_hatched |= !fits;
        }
    }
    snprintf(name, sizeof name, "%s-memory", mr->m.name);
    char cap[512];
    snprintf(cap, sizeof cap, "Per-GPU memory of the fullest pipeline stage of each "
                              "framework's best plan%s%s%s.",
             where,
             any_hatched ? "; hatched bars are the closest layout when none fits (over the "
                           "dashed line)" : "",
             short_labels ? "; F = FSDP2, M = Megatron" : "");
    doc_chart(d, &c, name, cap);

    /* step-time breakdown */
    snprintf(title, sizeof title, "%s: step time of the best plans", mr->m.display);
    chart_init(&c, CHART_STACKED_BARS, title, "framework and GPU count", "seconds per step");
    const char *time_series[] = {"compute", "exposed comm", "pipeline bubble", "optimizer"};
    for (int s = 0; s < 4; s++) chart_add_series(&c, time_series[s]);
    for (int g = 0; g < ncounts; g++) {
        const point *p = find_point(mr, counts[g]);
        for (int fw = 0; fw < 2; fw++) {
            if (short_labels) snprintf(lab, sizeof lab, "%c %d", fw ? 'M' : 'F', counts[g]);
            else snprintf(lab, sizeof lab, "%s\n%d GPUs", fw_title(fw), counts[g]);
            int i = chart_add_point(&c, lab, counts[g]);
            if (!p || i < 0 || !p->has_best[fw]) continue;
            const time_breakdown *t = &p->best[fw].time;
            double v[4] = {t->compute_s, t->comm_exposed_s, t->bubble_s, t->optimizer_s};
            for (int s = 0; s < 4; s++) c.y[s][i] = v[s];
        }
    }
    snprintf(name, sizeof name, "%s-steptime", mr->m.name);
    snprintf(cap, sizeof cap,
             "Where each best plan's step goes%s: compute, communication not hidden behind "
             "compute, pipeline fill and drain, and the optimizer step. \"no plan\": nothing "
             "fits.",
             where);
    doc_chart(d, &c, name, cap);

    /* throughput against GPU count */
    snprintf(title, sizeof title, "%s: throughput against GPU count", mr->m.display);
    chart_init(&c, CHART_LINES, title, "GPUs (log scale)", "tokens per second (whole job)");
    c.log_x = true;
    chart_add_series(&c, "FSDP2");
    chart_add_series(&c, "Megatron");
    int lo = r->gpus[0], hi = r->gpus[r->ngpus - 1];
    if (r->ngpus == 1) /* one GPU count is no curve: start from the smallest that fits */
        for (int i = 0; i < mr->npts; i++)
            if (best_of(&mr->pts[i])) {
                if (mr->pts[i].gpus < lo) lo = mr->pts[i].gpus;
                break;
            }
    bool any = false;
    for (int i = 0; i < mr->npts; i++) {
        const point *p = &mr->pts[i];
        if (p->gpus >= lo && p->gpus <= hi && best_of(p)) any = true;
    }
    if (!any) { /* nothing fits at the user's counts: show where it does */
        lo = hi = 0;
        for (int i = 0; i < mr->npts; i++)
            if (best_of(&mr->pts[i])) {
                if (!lo) lo = mr->pts[i].gpus;
                hi = mr->pts[i].gpus;
            }
    }
    for (int i = 0; i < mr->npts && lo; i++) {
        const point *p = &mr->pts[i];
        if (p->gpus < lo || p->gpus > hi) continue;
        snprintf(lab, sizeof lab, "%d", p->gpus);
        int k = chart_add_point(&c, lab, p->gpus);
        if (k < 0) break;
        for (int fw = 0; fw < 2; fw++)
            if (p->has_best[fw]) c.y[fw][k] = p->best[fw].tokens_per_s;
    }
    snprintf(name, sizeof name, "%s-throughput", mr->m.name);
    snprintf(cap, sizeof cap,
             "Tokens per second of each framework's best plan%s; a missing point means no "
             "layout of that framework fits there.",
             any ? " at your GPU counts and the powers of two between (or below) them"
                 : lo ? " where the model fits (none of your GPU counts fits)"
                      : " (the model fits nowhere up to the sweep's end)");
    doc_chart(d, &c, name, cap);
}

static void section_performance(doc *d, const report *r)
{
    doc_h(d, 2, "performance", "3. Performance per model and GPU count");
    doc_p(d, "The best layout of each framework, predicted by the cost model%s%s. Throughput "
             "relative to FSDP2 is FSDP2's step time divided by the strategy's (above 1: "
             "faster than FSDP2).",
          r->calibration[0] ? " with the calibration profile overlaid on the system" : "",
          r->any_measured ? "; measured columns come from the bench CSV (same layout unless "
                            "marked)" : "");
    bool meas = r->any_measured;
    const char *hdr[] = {"Model", "Strategy", "GPUs", "Time/Step (s)",
                         "Throughput relative to FSDP2", "tokens/s", "MFU", "Memory (GiB)",
                         "Layout", "Measured (s)", "Measured relative to FSDP2"};
    const char *align = meas ? "llrrrrrrlrr" : "llrrrrrrl";
    doc_table(d, align, hdr);
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        for (int g = 0; g < r->ngpus; g++) {
            const point *p = find_point(mr, r->gpus[g]);
            if (!p) continue;
            double meas_s[2] = {NAN, NAN};
            for (int fw = 0; fw < 2; fw++) {
                bool same = false;
                const bench_row *b =
                    p->has_best[fw] ? measured_for(r, &p->best[fw], &same) : NULL;
                if (b) meas_s[fw] = b->measured_step_s;
            }
            for (int fw = 0; fw < 2; fw++) {
                char c[11][192];
                for (int k = 0; k < 11; k++) c[k][0] = '\0';
                snprintf(c[0], sizeof c[0], "%s", mr->m.display);
                snprintf(c[1], sizeof c[1], "%s", fw_title(fw));
                snprintf(c[2], sizeof c[2], "%d", p->gpus);
                if (p->has_best[fw]) {
                    const estimate *e = &p->best[fw];
                    snprintf(c[3], sizeof c[3], "%.2f", e->time.step_s);
                    if (p->has_best[FRAMEWORK_FSDP2])
                        snprintf(c[4], sizeof c[4], "%.2f",
                                 p->best[FRAMEWORK_FSDP2].time.step_s / e->time.step_s);
                    else
                        snprintf(c[4], sizeof c[4], "n/a (FSDP2 does not fit)");
                    snprintf(c[5], sizeof c[5], "%.0f", e->tokens_per_s);
                    snprintf(c[6], sizeof c[6], "%.1f%%", 100 * e->mfu);
                    snprintf(c[7], sizeof c[7], "%.1f", e->memory.total_bytes / GIB);
                    fmt_layout(e, c[8], sizeof c[8]);
                    bool same = false;
                    const bench_row *b = measured_for(r, e, &same);
                    if (b) {
                        snprintf(c[9], sizeof c[9], "%.2f%s", b->measured_step_s,
                                 same ? "" : " (other layout)");
                        if (!isnan(meas_s[0]))
                            snprintf(c[10], sizeof c[10], "%.2f", meas_s[0] / b->measured_step_s);
                    }
                } else {
                    snprintf(c[3], sizeof c[3], "does not fit");
                    snprintf(c[4], sizeof c[4], "n/a");
                    if (p->has_closest[fw])
                        snprintf(c[7], sizeof c[7], "%.1f (%.1f over)",
                                 p->closest[fw].memory.total_bytes / GIB,
                                 over_gib(&p->closest[fw]));
                }
                const char *row[11];
                for (int k = 0; k < 11; k++) row[k] = c[k];
                doc_row(d, row);
            }
        }
    }
    doc_table_end(d);
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        char pbuf[16], abuf[16];
        fmt_params(model_params_total(&mr->m), pbuf, sizeof pbuf);
        fmt_params(model_params_active(&mr->m), abuf, sizeof abuf);
        char id[96];
        snprintf(id, sizeof id, "model-%s", mr->m.name);
        doc_h(d, 3, id, "3.%d %s (%s parameters%s%s)", i + 1, mr->m.display, pbuf,
              model_is_moe(&mr->m) ? ", active " : "", model_is_moe(&mr->m) ? abuf : "");
        charts_for_model(d, r, i);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Section 4: the feature-support matrix, checked against the rule code                        */
/* ------------------------------------------------------------------------------------------ */

static void section_features(doc *d, const report *r)
{
    doc_h(d, 2, "features", "4. Feature-support matrix");
    doc_p(d, "Each row is a probe layout (on 64 GPUs, an MoE model of Mixtral-8x7B's shape) "
             "passed through the planner's rule check (`layout_check`): a \"no\" quotes the "
             "rule. \"searched\" counts the layouts with that feature the searches of this "
             "report evaluated, so a rule the search never exercises shows as \"not searched\".");
    const char *hdr[] = {"Feature", "FSDP2", "Megatron"};
    doc_table(d, "lll", hdr);
    for (int f = 0; f < NFEAT; f++) {
        char cells[2][2 * CM_ERRLEN + 64];
        for (int fw = 0; fw < 2; fw++) {
            layout l = feat_probe(f, (layout_framework)fw);
            char err[CM_ERRLEN], esc[2 * CM_ERRLEN];
            training_spec t = training_default(); /* the probes need gbs divisible by 64 */
            cm_status st = layout_check(&r->probe, &r->sys, &t, &l, 64, err, sizeof err);
            if (st == CM_OK) {
                long n = r->feat_count[fw][f];
                if (n) snprintf(cells[fw], sizeof cells[fw], "**yes** (searched: %ld layouts)", n);
                else snprintf(cells[fw], sizeof cells[fw], "**yes** (not searched)");
            } else {
                plain(esc, sizeof esc, err);
                snprintf(cells[fw], sizeof cells[fw], "no: %s", esc);
            }
        }
        const char *row[] = {feat_name[f], cells[0], cells[1]};
        doc_row(d, row);
    }
    const char *ck[] = {"Checkpoint format (documented, not checked)",
                        "PyTorch DCP (`torch.distributed.checkpoint`)",
                        "`torch_dist`; `fsdp_dtensor` with Megatron-FSDP"};
    doc_row(d, ck);
    doc_table_end(d);
}

/* ------------------------------------------------------------------------------------------ */
/* Section 5: the recommended configuration per model, as YAML                                 */
/* ------------------------------------------------------------------------------------------ */

static void section_config(doc *d, const report *r)
{
    doc_h(d, 2, "config", "5. Recommended configuration per model");
    doc_p(d, "The fastest plan at the largest of your GPU counts where the model fits (or, "
             "when it fits at none of them, at the smallest GPU count that fits), as the trainer "
             "YAML of `plan --emit yaml` (and, for Megatron plans, the Megatron-LM flags of "
             "`--emit megatron-args`). Other GPU counts: the layouts in section 3.");
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        const estimate *e = primary_plan(r, mr);
        char id[96];
        snprintf(id, sizeof id, "config-%s", mr->m.name);
        doc_h(d, 3, id, "%s", mr->m.display);
        if (!e) {
            doc_p(d, "Does not fit on any GPU count up to %d: nothing to recommend.", mr->cap);
            continue;
        }
        char lay[256];
        fmt_layout(e, lay, sizeof lay);
        doc_p(d, "**%s on %d GPUs** (%s): %.2f s/step, %.0f tokens/s, MFU %.1f%%, %.1f of %.1f "
                 "GiB per GPU (%.1f GiB headroom).",
              fw_title(e->layout.framework), e->gpus, lay, e->time.step_s, e->tokens_per_s,
              100 * e->mfu, e->memory.total_bytes / GIB, e->memory.capacity_bytes / GIB,
              headroom_gib(e));
        emit_context ctx = {.model_ref = mr->m.name};
        char *text = NULL, msg[CM_ERRLEN], esc[2 * CM_ERRLEN];
        if (emit_yaml(e, &mr->m, &r->sys, &ctx, &text, msg, sizeof msg) == CM_OK) {
            doc_code(d, "yaml", text);
        } else {
            plain(esc, sizeof esc, msg);
            doc_p(d, "*(YAML not emitted: %s)*", esc);
        }
        free(text);
        text = NULL;
        if (e->layout.framework == FRAMEWORK_MEGATRON &&
            emit_megatron_args(e, &mr->m, &r->sys, &ctx, &text, msg, sizeof msg) == CM_OK) {
            doc_details(d, "The same plan as Megatron-LM flags", "sh", text);
        }
        free(text);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Section 6: migration                                                                        */
/* ------------------------------------------------------------------------------------------ */

#define SRC_FSDP_GUIDE "https://github.com/NVIDIA/Megatron-LM/blob/main/docs/discussions/megatron-fsdp-user-guide/megatron-fsdp-user-guide.md"
#define SRC_FSDP_FEATURE "https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/megatron_fsdp.md"
#define SRC_BRIDGE "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/examples/conversion/convert_checkpoints.py"
#define SRC_BRIDGE_GUIDE "https://docs.nvidia.com/nemo/megatron-bridge/latest/bridge-guide.html"
#define SRC_TORCH_NCCL "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html"
#define SRC_TORCH_TIMEOUT "https://github.com/pytorch/pytorch/pull/110947"

static void section_migration(doc *d, const report *r)
{
    char lay0[256], lay1[256];
    doc_h(d, 2, "migration", "6. Migration notes");
    doc_p(d, "What each of your models gains or loses by switching, at the largest of your GPU "
             "counts where both frameworks fit:");
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        const point *p = NULL;
        for (int g = r->ngpus - 1; g >= 0 && !p; g--) {
            const point *q = find_point(mr, r->gpus[g]);
            if (q && q->has_best[0] && q->has_best[1]) p = q;
        }
        if (!p) {
            doc_li(d, 0, "%s: no GPU count of yours where both fit; %s.", mr->m.display,
                   primary_plan(r, mr) ? "see section 5 for the framework that does"
                                       : "it fits nowhere");
            continue;
        }
        const estimate *f = &p->best[FRAMEWORK_FSDP2], *m = &p->best[FRAMEWORK_MEGATRON];
        fmt_layout(f, lay0, sizeof lay0);
        fmt_layout(m, lay1, sizeof lay1);
        doc_li(d, 0, "%s on %d GPUs: FSDP2 (%s) %.2f s/step, %.1f GiB → Megatron (%s) %.2f "
                     "s/step, %.1f GiB: **%.2fx** %s.",
               mr->m.display, p->gpus, lay0, f->time.step_s, f->memory.total_bytes / GIB, lay1,
               m->time.step_s, m->memory.total_bytes / GIB,
               f->time.step_s / m->time.step_s,
               f->time.step_s > m->time.step_s ? "faster on Megatron" : "(Megatron is slower)");
    }
    doc_list_end(d);

    doc_h(d, 3, "fsdp2-to-megatron", "6.1 FSDP2 → Megatron");
    doc_li(d, 0, "**Weights to Hugging Face format.** Save the trained model from the FSDP2 "
                 "job as a Hugging Face checkpoint (a full state dict, e.g. "
                 "`get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))` "
                 "then `save_pretrained`), or turn its DCP directory into one file with `python "
                 "-m torch.distributed.checkpoint.format_utils dcp_to_torch dcp_ckpt/ "
                 "torch_ckpt.pt` [(Megatron-FSDP feature guide, \"Checkpoint Conversion\")](%s).",
           SRC_FSDP_FEATURE);
    doc_li(d, 0, "**Import into Megatron** with Megatron Bridge: `python "
                 "examples/conversion/convert_checkpoints.py import --hf-model <hf dir or id> "
                 "--megatron-path <megatron ckpt dir>` [(Megatron Bridge)](%s); the Python API "
                 "is `AutoBridge.import_ckpt(hf_model_id=..., megatron_path=...)` [(bridge "
                 "guide)](%s). This writes a `torch_dist` checkpoint.",
           SRC_BRIDGE, SRC_BRIDGE_GUIDE);
    doc_li(d, 0, "**If the Megatron plan uses Megatron-FSDP**, it needs `--ckpt-format "
                 "fsdp_dtensor`; convert `torch_dist` → `fsdp_dtensor` as documented "
                 "[(Megatron-FSDP user guide, \"Checkpoint Conversion from 3D-Parallel to "
                 "Megatron-FSDP\")](%s):",
           SRC_FSDP_GUIDE);
    doc_li(d, 1, "run the N-D-parallel job (a very short run is enough) with "
                 "`--dump-param-to-param-group-map /path/to/param_to_param_group_map`;");
    doc_li(d, 1, "`python tools/checkpoint/checkpoint_inspector.py print-torch-dcp-in-json "
                 "/path/to/param_to_param_group_map` writes `param_to_param_group_map.json` "
                 "there;");
    doc_li(d, 1, "`torchrun --nproc_per_node=8 --nnodes=1 tools/checkpoint/checkpoint_inspector.py "
                 "convert-torch-dist-to-fsdp-dtensor --swiglu /path/to/input_torch_dist_checkpoint "
                 "/path/to/output_fsdp_dtensor_checkpoint --param-to-param-group-map-json "
                 "/path/to/param_to_param_group_map.json` (`--swiglu` for SwiGLU models such as "
                 "the Llama and Mixtral presets; multi-node: the guide's "
                 "`sbatch_checkpoint_convert.sh`);");
    doc_li(d, 1, "train with the required flags (section 2) and the converted checkpoint.");
    doc_li(d, 0, "**Knobs that carry over**: micro-batch → `--micro-batch-size`, global batch → "
                 "`--global-batch-size`, `max_grad_norm` → `--clip-grad`, gradient checkpointing "
                 "→ `--recompute-granularity full` (or `selective`, which FSDP2 lacks), Ulysses "
                 "size → `--context-parallel-size` (a different algorithm: ring attention, "
                 "needs the sequence divisible by 2·CP). FSDP2's `fsdp_size` / "
                 "`reshard_after_forward` / CPU offload have no one-to-one Megatron flag: take "
                 "the layout from section 5.");
    doc_li(d, 0, "Hugging Face checkpoints carry weights only: the optimizer state starts "
                 "fresh after the import.");
    doc_list_end(d);

    doc_h(d, 3, "megatron-to-fsdp2", "6.2 Megatron → FSDP2");
    doc_li(d, 0, "**From Megatron-FSDP (`fsdp_dtensor`) back to `torch_dist`** "
                 "[(Megatron-FSDP feature guide, \"Converting Megatron-FSDP (fsdp_dtensor) to "
                 "N-D Parallel (torch_dist) Checkpoints\")](%s): `python "
                 "tools/checkpoint/checkpoint_inspector.py convert-fsdp-dtensor-to-torch-dist "
                 "/path/to/input_fsdp_dtensor_checkpoint/ /path/to/output_torch_dist_checkpoint/`. "
                 "It runs on the CPU and holds the checkpoint in host memory (about 14 bytes per "
                 "parameter with optimizer state, about 2 with `--no-optimizer`; under `torchrun "
                 "--nproc_per_node N` the peak drops about N-fold).",
           SRC_FSDP_FEATURE);
    for (int i = 0; i < r->nmodels; i++) {
        double p = model_params_total(&r->models[i].m);
        doc_li(d, 1, "%s: about %.0f GB of host memory with optimizer state, %.0f GB with "
                     "`--no-optimizer`.",
               r->models[i].m.display, 14 * p / 1e9, 2 * p / 1e9);
    }
    doc_li(d, 1, "A classic N-D-parallel job resuming with optimizer state from the converted "
                 "checkpoint must set `--dist-ckpt-optim-fully-reshardable --ckpt-format "
                 "torch_dist --use-distributed-optimizer --dist-ckpt-strictness log_all "
                 "--no-load-rng`; optimizer state cannot be loaded into a job with EP > 1 "
                 "(resume with EP 1, or weights only with `--finetune --no-load-optim`).");
    for (int i = 0; i < r->nmodels; i++) {
        const estimate *e = primary_plan(r, &r->models[i]);
        if (e && e->layout.framework == FRAMEWORK_MEGATRON && e->layout.ep > 1)
            doc_li(d, 2, "This applies to your %s plan (EP %d).", r->models[i].m.display,
                   e->layout.ep);
    }
    doc_li(d, 0, "**Export to Hugging Face** with Megatron Bridge: `python "
                 "examples/conversion/convert_checkpoints.py export --hf-model <hf id or config "
                 "dir> --megatron-path <megatron ckpt dir> --hf-path <output dir>` [(Megatron "
                 "Bridge)](%s), then load it in the FSDP2 trainer (`from_pretrained`) and apply "
                 "`fully_shard`.",
           SRC_BRIDGE);
    doc_li(d, 0, "**What FSDP2 cannot keep**: TP, PP and EP. Each GPU then holds a 1/DP shard "
                 "of everything plus full-width activations; where FSDP2 does not fit "
                 "(sections 1.4 and 3), switch only with more GPUs or recompute/offload.");
    doc_list_end(d);
}

/* ------------------------------------------------------------------------------------------ */
/* Section 7: troubleshooting                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    char name[96];
    bool valid;
    char why[CM_ERRLEN];   /* the rule, when not valid */
    estimate e;
} knob;

/* The plan with one memory knob turned; returns how many were filled. */
static int knob_variants(const estimate *b, const model_spec *m, const system_spec *sys,
                         knob *out, int max)
{
    int n = 0;
    const layout *l = &b->layout;
    layout v[8];
    const char *names[8];
    int k = 0;
    if (l->framework == FRAMEWORK_MEGATRON && l->recompute != RECOMPUTE_SELECTIVE) {
        v[k] = *l;
        v[k].recompute = RECOMPUTE_SELECTIVE;
        names[k++] = "recompute selective";
    }
    if (l->recompute != RECOMPUTE_FULL) {
        v[k] = *l;
        v[k].recompute = RECOMPUTE_FULL;
        v[k].recompute_layers = 0;
        v[k].offload = false;
        names[k++] = "recompute full";
    }
    if (l->framework == FRAMEWORK_MEGATRON && l->tp > 1 && !l->sp) {
        v[k] = *l;
        v[k].sp = true;
        names[k++] = "sequence parallel on";
    }
    if (l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_DDP) {
        v[k] = *l;
        v[k].sharding = SHARDING_DISTOPT;
        names[k++] = "DDP → distributed optimizer";
    }
    if (l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_DISTOPT) {
        v[k] = *l;
        v[k].sharding = SHARDING_FSDP;
        names[k++] = "distributed optimizer → Megatron-FSDP";
    }
    if (l->mbs > 1) {
        v[k] = *l;
        v[k].mbs = l->mbs / 2;
        names[k++] = "micro-batch halved";
    }
    if (l->framework == FRAMEWORK_FSDP2 && !l->offload) {
        v[k] = *l;
        v[k].offload = true;
        v[k].recompute = RECOMPUTE_NONE;
        names[k++] = l->recompute != RECOMPUTE_NONE ? "CPU offload (instead of recompute)"
                                                    : "CPU offload";
    }
    if (l->framework == FRAMEWORK_FSDP2 && !l->reshard_after_forward) {
        v[k] = *l;
        v[k].reshard_after_forward = true;
        names[k++] = "reshard after forward";
    }
    for (int i = 0; i < k && n < max; i++) {
        knob *o = &out[n++];
        snprintf(o->name, sizeof o->name, "%s", names[i]);
        o->valid = estimate_layout(m, sys, &b->training, &v[i], &o->e, o->why, sizeof o->why) ==
                   CM_OK;
    }
    return n;
}

/* The knob that frees at least 1 GiB for the least extra step time; -1 if none. */
static int best_knob(const estimate *b, const knob *k, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (!k[i].valid || !k[i].e.feasible) continue;
        double freed = (b->memory.total_bytes - k[i].e.memory.total_bytes) / GIB;
        if (freed < 1) continue;
        if (best < 0 || k[i].e.time.step_s < k[best].e.time.step_s) best = i;
    }
    return best;
}

static void section_troubleshooting(doc *d, const report *r)
{
    char lay[256];
    doc_h(d, 2, "troubleshooting", "7. Troubleshooting");
    doc_h(d, 3, "headroom", "7.1 Memory headroom, and which knob frees how much");
    doc_p(d, "Headroom is HBM capacity minus the predicted peak of the fullest GPU. The "
             "prediction includes %.1f GB reserved for the CUDA context, cuBLAS and NCCL but "
             "not allocator fragmentation, so keep a few GiB spare. \"Cheapest knob\" frees at "
             "least 1 GiB for the least extra step time.",
          r->sys.framework_reserved_bytes / 1e9);
    const char *hdr[] = {"Model", "GPUs", "Plan", "Memory (GiB)", "Headroom (GiB)",
                         "Cheapest knob"};
    doc_table(d, "lrlrrl", hdr);
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        for (int g = 0; g < r->ngpus; g++) {
            const estimate *e = best_of(find_point(mr, r->gpus[g]));
            if (!e) continue;
            knob k[8];
            int n = knob_variants(e, &mr->m, &r->sys, k, 8);
            int b = best_knob(e, k, n);
            char c[6][320];
            snprintf(c[0], sizeof c[0], "%s", mr->m.display);
            snprintf(c[1], sizeof c[1], "%d", e->gpus);
            fmt_layout(e, lay, sizeof lay);
            snprintf(c[2], sizeof c[2], "%s %s", fw_title(e->layout.framework), lay);
            snprintf(c[3], sizeof c[3], "%.1f", e->memory.total_bytes / GIB);
            snprintf(c[4], sizeof c[4], "%.1f", headroom_gib(e));
            if (b >= 0)
                snprintf(c[5], sizeof c[5], "%s: frees %.1f GiB, %+.1f%% step time", k[b].name,
                         (e->memory.total_bytes - k[b].e.memory.total_bytes) / GIB,
                         100 * (k[b].e.time.step_s / e->time.step_s - 1));
            else
                snprintf(c[5], sizeof c[5], "none frees 1 GiB or more");
            const char *row[] = {c[0], c[1], c[2], c[3], c[4], c[5]};
            doc_row(d, row);
        }
    }
    doc_table_end(d);

    bool selective_nothing = false;
    for (int i = 0; i < r->nmodels; i++) {
        const model_result *mr = &r->models[i];
        const estimate *e = primary_plan(r, mr);
        if (!e) continue;
        fmt_layout(e, lay, sizeof lay);
        doc_p(d, "**%s**, recommended plan on %d GPUs (%s %s): %.1f GiB used, %.1f GiB "
                 "headroom. Each knob turned alone:",
              mr->m.display, e->gpus, fw_title(e->layout.framework), lay,
              e->memory.total_bytes / GIB, headroom_gib(e));
        knob k[8];
        int n = knob_variants(e, &mr->m, &r->sys, k, 8);
        const char *kh[] = {"Knob", "Memory (GiB)", "Frees (GiB)", "Step (s)", "Step change"};
        doc_table(d, "lrrrr", kh);
        for (int j = 0; j < n; j++) {
            char c[5][3 * CM_ERRLEN];
            snprintf(c[0], sizeof c[0], "%.95s", k[j].name);
            if (!k[j].valid) {
                char esc[2 * CM_ERRLEN];
                plain(esc, sizeof esc, k[j].why);
                snprintf(c[0], sizeof c[0], "%.95s (not valid here: %s)", k[j].name, esc);
                snprintf(c[1], sizeof c[1], "-");
                c[2][0] = c[3][0] = c[4][0] = '\0';
            } else {
                snprintf(c[1], sizeof c[1], "%.1f%s", k[j].e.memory.total_bytes / GIB,
                         k[j].e.feasible ? "" : " (does not fit)");
                snprintf(c[2], sizeof c[2], "%+.1f",
                         (e->memory.total_bytes - k[j].e.memory.total_bytes) / GIB);
                snprintf(c[3], sizeof c[3], "%.2f", k[j].e.time.step_s);
                snprintf(c[4], sizeof c[4], "%+.1f%%",
                         100 * (k[j].e.time.step_s / e->time.step_s - 1));
            }
            const char *row[] = {c[0], c[1], c[2], c[3], c[4]};
            doc_row(d, row);
            if (k[j].valid && e->layout.recompute == RECOMPUTE_NONE &&
                k[j].e.layout.recompute == RECOMPUTE_SELECTIVE &&
                fabs(k[j].e.memory.total_bytes - e->memory.total_bytes) < 0.05 * GIB)
                selective_nothing = true;
        }
        doc_table_end(d);
    }
    if (selective_nothing)
        doc_p(d, "Selective recompute frees nothing above because the plans use flash "
                 "attention, which already does not store the attention scores (the 5as/h "
                 "term of Korthikanti et al. 2022) that selective recompute drops; it only "
                 "costs time here.");

    doc_h(d, 3, "nccl-timeouts", "7.2 NCCL timeouts");
    doc_p(d, "A collective times out when some rank does not reach it in time: PyTorch's NCCL "
             "watchdog aborts after the process-group timeout (`init_process_group(timeout=...)`; "
             "the NCCL default has been 10 minutes since PyTorch 2.2 [(pytorch#110947)](%s); "
             "Megatron sets it with `--distributed-timeout-minutes`; some launchers expose it as "
             "`NCCL_TIMEOUT`). NCCL's own `NCCL_IB_TIMEOUT` is the InfiniBand retry timeout, a "
             "different thing.",
          SRC_TORCH_TIMEOUT);
    doc_li(d, 0, "**Common causes**: a rank died or hit CUDA OOM and the others wait in the "
                 "next collective (check every rank's log, not rank 0's); ranks disagree on the "
                 "sequence of collectives (different micro-batch counts, a data loader that ran "
                 "out on one rank, a rank-dependent branch); slow work outside collectives on "
                 "some ranks (checkpoint saving, evaluation, dataset index building on the first "
                 "run); network faults (an InfiniBand link flapping, wrong `NCCL_SOCKET_IFNAME` "
                 "or `NCCL_IB_HCA`).");
    doc_li(d, 0, "**To find the rank**: `NCCL_DEBUG=INFO`; PyTorch's flight recorder "
                 "(`TORCH_NCCL_TRACE_BUFFER_SIZE` > 0 with `TORCH_NCCL_DUMP_ON_TIMEOUT=1`) and "
                 "`TORCH_NCCL_DESYNC_DEBUG=1` name the culprit rank [(PyTorch NCCL environment "
                 "variables)](%s).",
           SRC_TORCH_NCCL);
    doc_li(d, 0, "**Your plans** (a healthy step is far below the timeout; what can approach it "
                 "is saving a checkpoint, whose size per GPU is the sharded state below):");
    for (int i = 0; i < r->nmodels; i++) {
        const estimate *e = primary_plan(r, &r->models[i]);
        if (!e) continue;
        const layout *l = &e->layout;
        int nodes = (e->gpus + r->sys.gpus_per_node - 1) / r->sys.gpus_per_node;
        double state = (e->memory.weights_bytes + e->memory.optimizer_bytes) / 1e9;
        char extra[256] = "";
        if (l->pp > 1)
            snprintf(extra, sizeof extra, "; PP %d: the last stage waits %.2f s of bubble per "
                                          "step",
                     l->pp, e->time.bubble_s);
        else if (l->ep > 1)
            snprintf(extra, sizeof extra, "; EP %d: a routing imbalance stalls the all-to-all "
                                          "(%.2f s exposed per step predicted)",
                     l->ep, e->time.ep_s);
        doc_li(d, 1, "%s on %d GPUs (%d node%s): %.2f s/step, one micro-batch %.2f s, %.2f s "
                     "of exposed communication; about %.1f GB of weights and optimizer state "
                     "per GPU to save%s.",
               r->models[i].m.display, e->gpus, nodes, nodes > 1 ? "s" : "", e->time.step_s,
               e->time.microbatch_s, e->time.comm_exposed_s, state, extra);
    }
    doc_list_end(d);

    doc_h(d, 3, "nan", "7.3 Gradient NaN and max_grad_norm");
    doc_li(d, 0, "Clip gradients: Megatron `--clip-grad` (default 1.0); FSDP2 "
                 "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` on the sharded "
                 "(DTensor) gradients; the emitted YAML sets `optimizer_config.max_grad_norm: "
                 "1.0`. A norm that grows steadily before the NaN points at the learning rate "
                 "(warm-up too short, peak too high); a sudden NaN at one step points at a "
                 "batch or at one rank.");
    doc_li(d, 0, "Megatron checks loss and gradients for NaN by default "
                 "(`--check-for-nan-in-loss-and-grad`) and reports the rank; a NaN that always "
                 "appears on the same rank suggests a faulty GPU rather than the model.");
    doc_li(d, 0, "Lower-precision gradient reduction trades speed for accuracy: the "
                 "predictions above reduce gradients in fp32; `--grad-reduce-in-bf16` "
                 "(recommended with Megatron-FSDP) would change your plans' step time as "
                 "follows. If the loss spikes or turns NaN with it, drop it first:");
    for (int i = 0; i < r->nmodels; i++) {
        const estimate *e = primary_plan(r, &r->models[i]);
        if (!e || e->layout.framework != FRAMEWORK_MEGATRON) continue;
        training_spec t = e->training;
        t.grad_reduce_bf16 = !t.grad_reduce_bf16;
        estimate v;
        if (estimate_layout(&r->models[i].m, &r->sys, &t, &e->layout, &v, NULL, 0) != CM_OK)
            continue;
        doc_li(d, 1, "%s (Megatron, DP×CP %d): %.2f → %.2f s/step with bf16 reduction "
                     "(%+.1f%%), %+.1f GiB.",
               r->models[i].m.display, e->layout.dp * e->layout.cp, e->time.step_s,
               v.time.step_s, 100 * (v.time.step_s / e->time.step_s - 1),
               (v.memory.total_bytes - e->memory.total_bytes) / GIB);
    }
    doc_list_end(d);
}

/* ------------------------------------------------------------------------------------------ */
/* The document                                                                                */
/* ------------------------------------------------------------------------------------------ */

static const char *const css =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;"
    "margin:2em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}"
    "h1{font-size:1.7em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}"
    "table{border-collapse:collapse;margin:1em 0;font-size:.88em}"
    "th,td{border:1px solid #d0d0d0;padding:.3em .55em;vertical-align:top}"
    "th{background:#f3f3f3;text-align:left}th.r,td.r{text-align:right}"
    "code{background:#f4f4f4;padding:0 .25em;border-radius:3px;font-size:.92em}"
    "pre{background:#f6f8fa;padding:.8em;overflow-x:auto;border-radius:4px}"
    "pre code{background:none;padding:0}"
    "figure{margin:1.2em 0}figure svg{max-width:100%;height:auto}"
    "figcaption{font-size:.88em;color:#555}"
    "nav ol{columns:2}";

static void write_body(doc *d, const report *r)
{
    char models[1024] = "", gl[256], esc[1100];
    for (int i = 0; i < r->nmodels; i++) {
        char p[16];
        fmt_params(model_params_total(&r->models[i].m), p, sizeof p);
        size_t o = strlen(models);
        snprintf(models + o, sizeof models - o, "%s%s (%s)", i ? ", " : "",
                 r->models[i].m.display, p);
    }
    fmt_gpu_list(r->gpus, r->ngpus, gl, sizeof gl);
    doc_h(d, 1, "top", "FSDP2 or Megatron on %s: a decision guide", r->sys.gpu_name);
    plain(esc, sizeof esc, r->sys.description);
    doc_p(d, "System **%s**: %s", r->system_name, esc);
    if (r->calibration[0]) {
        code_safe(esc, sizeof esc, r->calibration);
        doc_p(d, "Calibration profile `%s` is overlaid on the system: the predictions use its "
                 "measured terms.",
              esc);
    }
    if (r->bench_path[0]) {
        code_safe(esc, sizeof esc, r->bench_path);
        doc_p(d, "Bench results `%s`: %d rows, %s.", esc, r->nbench,
              r->any_measured ? "measured step times shown in section 3"
                              : "none has measured columns, so everything here is predicted");
    }
    doc_p(d, "Models: %s. GPU counts: %s. Training: sequence %d, global batch %d sequences, "
             "bf16 with Adam. Generated by `plan report` %s from %ld searches (%ld layouts "
             "through the cost model); every number is computed, none is copied from a guide.",
          models, gl, r->t.seq_len, r->t.global_batch, PLAN_VERSION, r->stats.searches,
          r->stats.layouts);
    if (!chart_available())
        doc_p(d, "**Charts are not included**: this build of plan has no cairo (install "
                 "libcairo2-dev and reconfigure with `-Dcharts=enabled`); the tables carry the "
                 "same numbers.");
    if (d->fmt == REPORT_HTML) {
        fputs("<nav><ol>"
              "<li><a href=\"#decision\">Decision tree</a></li>"
              "<li><a href=\"#compare\">FSDP2 and Megatron compared</a></li>"
              "<li><a href=\"#performance\">Performance per model and GPU count</a></li>"
              "<li><a href=\"#features\">Feature-support matrix</a></li>"
              "<li><a href=\"#config\">Recommended configuration per model</a></li>"
              "<li><a href=\"#migration\">Migration notes</a></li>"
              "<li><a href=\"#troubleshooting\">Troubleshooting</a></li>"
              "</ol></nav>\n",
              d->f);
    } else {
        fputs("1. [Decision tree](#decision)\n2. [FSDP2 and Megatron compared](#compare)\n"
              "3. [Performance per model and GPU count](#performance)\n"
              "4. [Feature-support matrix](#features)\n"
              "5. [Recommended configuration per model](#config)\n"
              "6. [Migration notes](#migration)\n7. [Troubleshooting](#troubleshooting)\n\n",
              d->f);
    }
    section_decision(d, r);
    section_compare(d, r);
    section_performance(d, r);
    section_features(d, r);
    section_config(d, r);
    section_migration(d, r);
    section_troubleshooting(d, r);
    doc_list_end(d);
}

cm_status report_write(report *r, report_format fmt, const char *path, char *err, size_t errlen)
{
    doc d;
    memset(&d, 0, sizeof d);
    d.fmt = fmt;
    /* where Markdown's images go: beside the file, named after its stem */
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(d.dir, sizeof d.dir, "%.*s", (int)(slash - path), path);
    else snprintf(d.dir, sizeof d.dir, ".");
    if (!d.dir[0]) snprintf(d.dir, sizeof d.dir, "/");
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    snprintf(d.stem, sizeof d.stem, "%.*s", (int)(dot ? dot - base : (long)strlen(base)), base);
    d.f = fopen(path, "w");
    if (!d.f)
        return cm_fail(err, errlen, CM_EIO, "cannot write '%s': %s (check the directory exists "
                       "and is writable)", path, strerror(errno));
    if (fmt == REPORT_HTML) {
        fprintf(d.f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<title>FSDP2 or Megatron on %s: a decision guide</title>\n<style>%s</style>\n"
                     "</head>\n<body>\n",
                r->sys.gpu_name, css);
    }
    write_body(&d, r);
    if (fmt == REPORT_HTML) fputs("</body>\n</html>\n", d.f);
    bool werr = ferror(d.f);
    if (fclose(d.f) != 0) werr = true;
    r->stats.charts = d.charts;
    r->stats.images = d.images;
    if (werr)
        return cm_fail(err, errlen, CM_EIO, "writing '%s' failed (disk full?)", path);
    if (d.st != CM_OK) return cm_fail(err, errlen, d.st, "%s", d.err);
    return CM_OK;
}
