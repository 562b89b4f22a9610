/*
 * report_numbers.c — the numbers `plan report`'s sections quote from a built report (see
 * report_analysis.h): the best plan at a GPU count, speed-ups and tokens per GPU, memory
 * headroom, the measured step that matches a plan, the dense family's summary and largest fits,
 * a plan's knob variants and which frameworks support a feature. It exists apart from
 * report_analysis.c, which runs the searches that fill the report: these only read it (and
 * price a few variants of one plan).
 */
#include "report_analysis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "precision.h"

const report_point *report_find_point(const report_model_result *mr, int gpus)
{
    for (int i = 0; i < mr->npts; i++)
        if (mr->pts[i].gpus == gpus) return &mr->pts[i];
    return NULL;
}

const estimate *report_best_of(const report_point *p)
{
    if (!p || p->rec_fw < 0 || !p->has_best[p->rec_fw]) return NULL;
    return &p->best[p->rec_fw];
}

double report_speedup(const estimate *a, const estimate *b)
{
    bool sim = a->simulated && b->simulated;
    return (sim ? b->time_sim.step_s : b->time.step_s) / (sim ? a->time_sim.step_s : a->time.step_s);
}

double report_tokens_per_gpu(const estimate *e) { return e->tokens_per_s / e->gpus; }

const estimate *report_primary_plan(const report *r, const report_model_result *mr)
{
    for (int i = r->ngpus - 1; i >= 0; i--) {
        const estimate *e = report_best_of(report_find_point(mr, r->gpus[i]));
        if (e) return e;
    }
    for (int i = 0; i < mr->npts; i++) {
        const estimate *e = report_best_of(&mr->pts[i]);
        if (e) return e;
    }
    return NULL;
}

double report_headroom_gib(const estimate *e)
{
    return (e->memory.capacity_bytes - e->memory.total_bytes) / UNITS_GIB_BYTES;
}

double report_over_gib(const estimate *e) { return -report_headroom_gib(e); }

const bench_row *report_measured_for(const report *r, const estimate *e, bool *same_layout)
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

report_size_summary report_summarize_sizes(const report *r, int g)
{
    report_size_summary s = {0};
    s.rmin = INFINITY;
    s.rmax = -INFINITY;
    double prev_r = NAN, prev_p = NAN;
    for (int i = 0; i < REPORT_NSIZES; i++) {
        const report_size_point *sp = &r->sizes[i];
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

double report_largest_fit(const report *r, int g, int lev, bool dp_only)
{
    double best = 0;
    for (int i = 0; i < REPORT_NSIZES; i++)
        for (int l = 0; l <= lev; l++) {
            bool fits = dp_only ? r->sizes[i].fit_level_dp[g][l] : r->sizes[i].fit_level[g][l];
            if (fits && r->sizes[i].params > best) best = r->sizes[i].params;
        }
    return best;
}

int report_knob_variants(const estimate *b, const model_spec *m, const system_spec *sys,
                         report_knob *out, int max)
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
        report_knob *o = &out[n++];
        snprintf(o->name, sizeof o->name, "%s", names[i]);
        o->valid = estimate_layout(m, sys, &b->training, &v[i], &o->e, o->why, sizeof o->why) ==
                   CM_OK;
    }
    return n;
}

int report_best_knob(const estimate *b, const report_knob *k, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (!k[i].valid || !k[i].e.feasible) continue;
        double freed = (b->memory.total_bytes - k[i].e.memory.total_bytes) / UNITS_GIB_BYTES;
        if (freed < 1) continue;
        if (best < 0 || k[i].e.time.step_s < k[best].e.time.step_s) best = i;
    }
    return best;
}

bool report_grad_reduce_variant(const report *r, const model_spec *m, const estimate *e,
                                estimate *out)
{
    training_spec t = e->training;
    t.grad_reduce_bf16 = !t.grad_reduce_bf16;
    return estimate_layout(m, &r->sys, &t, &e->layout, out, NULL, 0) == CM_OK;
}

const char *const report_framework_name[REPORT_NFRAMEWORKS] = {"FSDP2", "Megatron",
                                                               "torchtitan"};

/* "A", "A and B", "A, B and C" of the frameworks whose flag is `want` in ok (sel NULL: all). */
static void framework_list(const bool ok[REPORT_NFRAMEWORKS], bool want, char *buf, size_t n)
{
    int idx[REPORT_NFRAMEWORKS], k = 0;
    for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++)
        if (ok[fw] == want) idx[k++] = fw;
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        size_t o = strlen(buf);
        snprintf(buf + o, n - o, "%s%s", i == 0 ? "" : i == k - 1 ? " and " : ", ",
                 report_framework_name[idx[i]]);
    }
}

void report_feature_support(const report *r, int f, bool ok[REPORT_NFRAMEWORKS], char *words,
                            size_t n, char *refusal, size_t rn)
{
    char err[REPORT_NFRAMEWORKS][CM_ERRLEN];
    int nok = 0;
    for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++) {
        ok[fw] = report_feature_check(r, f, (layout_framework)fw, err[fw], sizeof err[fw]) ==
                 CM_OK;
        nok += ok[fw];
    }
    char list[128];
    framework_list(ok, true, list, sizeof list);
    if (nok == REPORT_NFRAMEWORKS) snprintf(words, n, "all three frameworks");
    else if (nok == 0) snprintf(words, n, "none of the frameworks");
    else snprintf(words, n, "%s%s", list, nok == 1 ? " only" : "");
    /* the refusals, frameworks refused by the same rule message named together */
    if (rn) refusal[0] = '\0';
    bool done[REPORT_NFRAMEWORKS] = {false};
    for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++) {
        if (ok[fw] || done[fw]) continue;
        bool same[REPORT_NFRAMEWORKS];
        for (int k = 0; k < REPORT_NFRAMEWORKS; k++) {
            same[k] = !ok[k] && !done[k] && !strcmp(err[k], err[fw]);
            done[k] |= same[k];
        }
        char who[128];
        framework_list(same, true, who, sizeof who);
        size_t o = strlen(refusal);
        snprintf(refusal + o, rn - o, "%s%s: %s", o ? "; " : "", who, err[fw]);
    }
}

void report_feature_list(const report *r, layout_framework fw, const int *feats,
                         const char *const *labels, int nf, bool accepted, char *buf, size_t n)
{
    char err[CM_ERRLEN];
    int idx[REPORT_NFEATURES], k = 0;
    for (int i = 0; i < nf && k < REPORT_NFEATURES; i++)
        if ((report_feature_check(r, feats[i], fw, err, sizeof err) == CM_OK) == accepted)
            idx[k++] = i;
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        size_t o = strlen(buf);
        snprintf(buf + o, n - o, "%s%s", i == 0 ? "" : i == k - 1 ? " and " : ", ",
                 labels[idx[i]]);
    }
}

cm_status report_fp8_variant(const report *r, const model_spec *m, const estimate *e,
                             estimate *out, char *why, size_t n)
{
    layout l8 = e->layout;
    l8.precision = PRECISION_FP8;
    l8.fp8_recipe = FP8_RECIPE_DEFAULT;
    cm_status st = precision_check(&r->sys, &l8, why, n);
    if (st != CM_OK) return st;
    return estimate_layout(m, &r->sys, &e->training, &l8, out, why, n);
}

const estimate *report_framework_best(const report_point *p, int fw)
{
    if (!p) return NULL;
    if (fw == FRAMEWORK_TORCHTITAN) return p->titan_searched && p->has_titan ? &p->titan : NULL;
    return p->has_best[fw] ? &p->best[fw] : NULL;
}
