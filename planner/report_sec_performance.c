/*
 * report_sec_performance.c — section 3 of `plan report`: each framework's best plan per model and
 * GPU count (with measured step times from a bench CSV where given), and per model the charts
 * of memory, step-time breakdown and throughput against GPU count.
 */
#include "report_sections.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "report_text.h"

static const estimate *plan_or_closest(const report_point *p, int fw, bool *fits)
{
    *fits = p->has_best[fw];
    if (p->has_best[fw]) return &p->best[fw];
    if (p->has_closest[fw]) return &p->closest[fw];
    return NULL;
}

/* The GPU counts a model's bar charts show: the user's when the model fits at any of them,
 * else the first three searched counts where it fits. Returns how many; *own says which. */
static int chart_counts(const report *r, const report_model_result *mr, int *out, bool *own)
{
    int n = 0;
    for (int g = 0; g < r->ngpus; g++)
        if (report_best_of(report_find_point(mr, r->gpus[g]))) n++;
    *own = n > 0 || !report_primary_plan(r, mr);
    if (*own) {
        memcpy(out, r->gpus, r->ngpus * sizeof *out);
        return r->ngpus;
    }
    n = 0;
    for (int i = 0; i < mr->npts && n < 3; i++)
        if (report_best_of(&mr->pts[i])) out[n++] = mr->pts[i].gpus;
    return n;
}

/* A model's four charts and their takeaways, built before any is drawn so that the section can
 * give each kind one scale across models. */
enum { CH_MEMORY, CH_STEP, CH_TOKENS, CH_MFU, NCH };

typedef struct {
    chart c[NCH];
    char takeaway[NCH][384];
    char caption[NCH][512];
} model_charts;

static void bar_label(char *lab, size_t n, bool short_labels, int fw, int gpus)
{
    if (short_labels) snprintf(lab, n, "%c %d", fw ? 'M' : 'F', gpus);
    else snprintf(lab, n, "%s\n%d GPUs", report_fw_title(fw), gpus);
}

/* Memory per GPU of each framework's best plan (the closest when none fits) against HBM, each
 * bar marked with its headroom or overrun. */
static void memory_chart(const report *r, const report_model_result *mr, const int *counts,
                         int ncounts, const char *where, model_charts *mc)
{
    chart *c = &mc->c[CH_MEMORY];
    char title[sizeof mr->m.display + 96], lab[40];
    bool short_labels = 2 * ncounts > 8;
    snprintf(title, sizeof title, "%s: memory per GPU against capacity", mr->m.display);
    chart_init(c, CHART_STACKED_BARS, title, "framework and GPU count", "GiB per GPU");
    /* "buffers": memory.h's other_bytes (gathered FSDP units and gradient buckets in flight,
     * the CUDA context, NCCL, workspaces) */
    const char *mem_series[] = {"weights", "gradients", "optimizer", "activations", "buffers"};
    for (int s = 0; s < 5; s++) chart_add_series(c, mem_series[s]);
    c->ref_y = r->sys.hbm_bytes / UNITS_GIB_BYTES;
    snprintf(c->ref_label, sizeof c->ref_label, "HBM %.0f GiB", c->ref_y);
    bool any_hatched = false;
    const estimate *tight = NULL, *worst = NULL; /* least headroom that fits; most over */
    int nfit = 0, nover = 0;
    for (int g = 0; g < ncounts; g++) {
        const report_point *p = report_find_point(mr, counts[g]);
        for (int fw = 0; fw < 2; fw++) {
            bar_label(lab, sizeof lab, short_labels, fw, counts[g]);
            int i = chart_add_point(c, lab, counts[g]);
            bool fits;
            const estimate *e = p ? plan_or_closest(p, fw, &fits) : NULL;
            if (!e || i < 0) continue;
            const memory_breakdown *m = &e->memory;
            double v[5] = {m->weights_bytes, m->gradients_bytes, m->optimizer_bytes,
                           m->activations_bytes, m->other_bytes};
            for (int s = 0; s < 5; s++) c->y[s][i] = v[s] / UNITS_GIB_BYTES;
            c->hatched[i] = !fits;
            any_hatched |= !fits;
            if (fits) {
                snprintf(c->annot[i], sizeof c->annot[i], "%.1f free", report_headroom_gib(e));
                nfit++;
                if (!tight || report_headroom_gib(e) < report_headroom_gib(tight)) tight = e;
            } else {
                snprintf(c->annot[i], sizeof c->annot[i], "%.1f over", report_over_gib(e));
                nover++;
                if (!worst || report_over_gib(e) > report_over_gib(worst)) worst = e;
            }
        }
    }
    char *t = mc->takeaway[CH_MEMORY];
    size_t tn = sizeof mc->takeaway[CH_MEMORY];
    if (tight)
        snprintf(t, tn, "%s: the tightest plan that fits is %s on %d GPUs, %.1f of %.0f GiB "
                        "(%.1f GiB to spare)",
                 nover ? "Not every plan fits" : "Every best plan fits",
                 report_fw_title(tight->layout.framework), tight->gpus,
                 tight->memory.total_bytes / UNITS_GIB_BYTES, c->ref_y, report_headroom_gib(tight));
    else
        snprintf(t, tn, "Nothing shown fits");
    if (worst) {
        size_t o = strlen(t);
        snprintf(t + o, tn - o, "; %d layout%s over capacity, worst %s on %d GPUs by %.1f GiB",
                 nover, nover > 1 ? "s" : "", report_fw_title(worst->layout.framework),
                 worst->gpus, report_over_gib(worst));
    }
    snprintf(mc->caption[CH_MEMORY], sizeof mc->caption[0],
             "Per-GPU memory of the fullest pipeline stage of each framework's best plan%s, "
             "against the HBM capacity (dashed); the number above each bar is the headroom "
             "(\"free\") or the overrun (\"over\"); \"buffers\" are the FSDP units gathered "
             "and gradient buckets in flight, the CUDA context, NCCL and workspaces%s%s. Same "
             "scale for every model.",
             where,
             any_hatched ? "; hatched bars are the closest layout when none fits" : "",
             short_labels ? "; F = FSDP2, M = Megatron" : "");
}

/* Where each best plan's step goes, as a share of the step, with the step time above the bar. */
static void step_chart(const report_model_result *mr, const int *counts, int ncounts,
                       const char *where, model_charts *mc)
{
    chart *c = &mc->c[CH_STEP];
    char title[sizeof mr->m.display + 96], lab[40];
    bool short_labels = 2 * ncounts > 8;
    snprintf(title, sizeof title, "%s: where the step goes", mr->m.display);
    chart_init(c, CHART_STACKED_BARS, title, "framework and GPU count", "% of the step time");
    const char *time_series[] = {"compute", "exposed comm", "pipeline bubble", "optimizer"};
    for (int s = 0; s < 4; s++) chart_add_series(c, time_series[s]);
    c->y_max = 100;
    double cmin = 101, cmax = -1, worst_share = 0;
    int worst_s = -1;
    const estimate *worst = NULL;
    const report_point *both_p = NULL; /* the largest count where both frameworks fit */
    for (int g = 0; g < ncounts; g++) {
        const report_point *p = report_find_point(mr, counts[g]);
        if (p && p->has_best[0] && p->has_best[1]) both_p = p;
        for (int fw = 0; fw < 2; fw++) {
            bar_label(lab, sizeof lab, short_labels, fw, counts[g]);
            int i = chart_add_point(c, lab, counts[g]);
            if (!p || i < 0 || !p->has_best[fw]) continue;
            const time_breakdown *t = &p->best[fw].time;
            double v[4] = {t->compute_s, t->comm_exposed_s, t->bubble_s, t->optimizer_s};
            double sum = v[0] + v[1] + v[2] + v[3];
            if (!(sum > 0)) continue;
            for (int s = 0; s < 4; s++) c->y[s][i] = 100 * v[s] / sum;
            snprintf(c->annot[i], sizeof c->annot[i], "%.2f s", t->step_s);
            if (c->y[0][i] < cmin) cmin = c->y[0][i];
            if (c->y[0][i] > cmax) cmax = c->y[0][i];
            for (int s = 1; s < 4; s++)
                if (c->y[s][i] > worst_share) {
                    worst_share = c->y[s][i];
                    worst_s = s;
                    worst = &p->best[fw];
                }
        }
    }
    char *t = mc->takeaway[CH_STEP];
    size_t tn = sizeof mc->takeaway[CH_STEP];
    if (cmax < 0)
        snprintf(t, tn, "No plan fits, so no step to break down");
    else if (worst && worst_share >= 1)
        snprintf(t, tn, "Compute is %.0f-%.0f%% of the step; the largest overhead is %s, %.0f%% "
                        "of %s's step on %d GPUs",
                 cmin, cmax, time_series[worst_s], worst_share,
                 report_fw_title(worst->layout.framework), worst->gpus);
    else
        snprintf(t, tn, "Compute is %.0f-%.0f%% of the step: no overhead reaches 1%%", cmin,
                 cmax);
    /* the shares hide the absolute gap: where both fit, how the compute seconds compare */
    if (both_p && both_p->best[FRAMEWORK_MEGATRON].time.compute_s > 0) {
        double q = both_p->best[FRAMEWORK_FSDP2].time.compute_s /
                   both_p->best[FRAMEWORK_MEGATRON].time.compute_s;
        size_t o = strlen(t);
        if (q >= 1.05 || q <= 0.95)
            snprintf(t + o, tn - o, "; on %d GPUs FSDP2's compute alone takes %.2fx "
                                    "Megatron's time",
                     both_p->gpus, q);
    }
    snprintf(mc->caption[CH_STEP], sizeof mc->caption[0],
             "Each best plan's step%s as shares of its step time (the number above the bar): "
             "compute, communication not hidden behind compute, pipeline fill and drain, and "
             "the optimizer step. \"no plan\": nothing fits.",
             where);
}

/* The GPU counts of a model's line charts: the user's range, with the powers of two between
 * (or, for one count, from the smallest that fits), else wherever it fits. *lo = 0: nowhere. */
static void line_range(const report *r, const report_model_result *mr, int *lo, int *hi,
                       bool *any)
{
    *lo = r->gpus[0];
    *hi = r->gpus[r->ngpus - 1];
    if (r->ngpus == 1) /* one GPU count is no curve: start from the smallest that fits */
        for (int i = 0; i < mr->npts; i++)
            if (report_best_of(&mr->pts[i])) {
                if (mr->pts[i].gpus < *lo) *lo = mr->pts[i].gpus;
                break;
            }
    *any = false;
    for (int i = 0; i < mr->npts; i++) {
        const report_point *p = &mr->pts[i];
        if (p->gpus >= *lo && p->gpus <= *hi && report_best_of(p)) *any = true;
    }
    if (!*any) { /* nothing fits at the user's counts: show where it does */
        *lo = *hi = 0;
        for (int i = 0; i < mr->npts; i++)
            if (report_best_of(&mr->pts[i])) {
                if (!*lo) *lo = mr->pts[i].gpus;
                *hi = mr->pts[i].gpus;
            }
    }
}

/* Tokens/s per GPU and MFU of each framework's best plan against GPU count. */
static void line_charts(const report *r, const report_model_result *mr, model_charts *mc)
{
    int lo, hi;
    bool any;
    line_range(r, mr, &lo, &hi, &any);
    char title[sizeof mr->m.display + 96], lab[40];
    chart *ct = &mc->c[CH_TOKENS], *cm = &mc->c[CH_MFU];
    snprintf(title, sizeof title, "%s: tokens/s per GPU against GPU count", mr->m.display);
    chart_init(ct, CHART_LINES, title, "GPUs (log scale)", "tokens/s per GPU (log scale)");
    ct->log_x = ct->log_y = true;
    snprintf(title, sizeof title, "%s: MFU against GPU count", mr->m.display);
    chart_init(cm, CHART_LINES, title, "GPUs (log scale)", "MFU (% of dense bf16 peak)");
    cm->log_x = true;
    /* series index = framework (FSDP2, Megatron, torchtitan: dots at your GPU counts only,
     * where section 2b searched it) */
    bool titan = false;
    for (int i = 0; i < mr->npts; i++) titan |= mr->pts[i].titan_searched;
    for (int fw = 0; fw < (titan ? REPORT_NFRAMEWORKS : 2); fw++) {
        chart_add_series(ct, report_fw_title(fw));
        chart_add_series(cm, report_fw_title(fw));
    }
    double tt_min = INFINITY, tt_max = 0, tt_mfu = 0; /* torchtitan / Megatron per-GPU rate */
    int tt_n = 0, tt_mfu_gpus = 0;
    int both = 0, meg_ahead = 0, nshown = 0;
    double rmin = INFINITY, rmax = 0, best_mfu[2] = {0, 0};
    int best_mfu_gpus[2] = {0, 0};
    const estimate *first = NULL, *last = NULL; /* the recommended plan at the ends */
    for (int i = 0; i < mr->npts && lo; i++) {
        const report_point *p = &mr->pts[i];
        if (p->gpus < lo || p->gpus > hi) continue;
        snprintf(lab, sizeof lab, "%d", p->gpus);
        int k = chart_add_point(ct, lab, p->gpus);
        chart_add_point(cm, lab, p->gpus);
        if (k < 0) break;
        nshown++;
        for (int fw = 0; fw < 2; fw++) {
            if (!p->has_best[fw]) continue;
            const estimate *e = &p->best[fw];
            ct->y[fw][k] = report_tokens_per_gpu(e);
            cm->y[fw][k] = 100 * e->mfu;
            if (100 * e->mfu > best_mfu[fw]) {
                best_mfu[fw] = 100 * e->mfu;
                best_mfu_gpus[fw] = p->gpus;
            }
        }
        const estimate *te = titan ? report_framework_best(p, FRAMEWORK_TORCHTITAN) : NULL;
        if (te) {
            ct->y[FRAMEWORK_TORCHTITAN][k] = report_tokens_per_gpu(te);
            cm->y[FRAMEWORK_TORCHTITAN][k] = 100 * te->mfu;
            if (100 * te->mfu > tt_mfu) {
                tt_mfu = 100 * te->mfu;
                tt_mfu_gpus = p->gpus;
            }
            if (p->has_best[FRAMEWORK_MEGATRON]) {
                double q = report_tokens_per_gpu(te) /
                           report_tokens_per_gpu(&p->best[FRAMEWORK_MEGATRON]);
                tt_n++;
                if (q < tt_min) tt_min = q;
                if (q > tt_max) tt_max = q;
            }
        }
        if (p->has_best[0] && p->has_best[1]) {
            double ratio = report_tokens_per_gpu(&p->best[FRAMEWORK_MEGATRON]) /
                           report_tokens_per_gpu(&p->best[FRAMEWORK_FSDP2]);
            both++;
            meg_ahead += ratio > 1;
            if (ratio < rmin) rmin = ratio;
            if (ratio > rmax) rmax = ratio;
        }
        const estimate *b = report_best_of(p);
        if (b) {
            if (!first) first = b;
            last = b;
        }
    }
    char *t = mc->takeaway[CH_TOKENS];
    size_t tn = sizeof mc->takeaway[CH_TOKENS];
    if (!first) {
        snprintf(t, tn, "No plan fits at any GPU count shown");
    } else {
        if (both == 0)
            snprintf(t, tn, "%s fits at none of the GPU counts shown",
                     report_fw_title(first->layout.framework == FRAMEWORK_FSDP2
                                         ? FRAMEWORK_MEGATRON
                                         : FRAMEWORK_FSDP2));
        else if (meg_ahead == both || meg_ahead == 0) {
            char range[48];
            if (rmax - rmin < 0.005) snprintf(range, sizeof range, "%.2fx", rmin);
            else snprintf(range, sizeof range, "%.2f-%.2fx", rmin, rmax);
            snprintf(t, tn, "%s gives more tokens/s per GPU at every GPU count where both fit "
                            "(Megatron at %s FSDP2's)",
                     meg_ahead ? "Megatron" : "FSDP2", range);
        } else
            snprintf(t, tn, "Megatron leads at %d of %d GPU counts where both fit "
                            "(Megatron/FSDP2 %.2f-%.2fx)",
                     meg_ahead, both, rmin, rmax);
        if (last != first) {
            char a[32], b[32];
            double f = report_tokens_per_gpu(last) / report_tokens_per_gpu(first);
            report_fmt_count(report_tokens_per_gpu(first), a, sizeof a);
            report_fmt_count(report_tokens_per_gpu(last), b, sizeof b);
            size_t o = strlen(t);
            if (f > 1.02)
                snprintf(t + o, tn - o, "; the recommended plan's per-GPU rate rises %.2fx from "
                                        "%d to %d GPUs (%s to %s: more GPUs free memory for a "
                                        "faster layout)",
                         f, first->gpus, last->gpus, a, b);
            else if (f >= 0.98)
                snprintf(t + o, tn - o, "; the recommended plan keeps about %s tokens/s per GPU "
                                        "from %d to %d GPUs (linear scaling)",
                         a, first->gpus, last->gpus);
            else
                snprintf(t + o, tn - o, "; the recommended plan keeps %.0f%% of its per-GPU rate "
                                        "from %d to %d GPUs (%s to %s)",
                         100 * f, first->gpus, last->gpus, a, b);
        }
    }
    if (first && tt_n) {
        size_t o = strlen(t);
        if (tt_max - tt_min < 0.005)
            snprintf(t + o, tn - o, "; torchtitan at %.2fx Megatron's rate", tt_min);
        else
            snprintf(t + o, tn - o, "; torchtitan at %.2f-%.2fx Megatron's rate", tt_min, tt_max);
    }
    t = mc->takeaway[CH_MFU];
    if (!first) {
        snprintf(t, tn, "No plan fits at any GPU count shown");
    } else {
        int hi_fw = best_mfu[FRAMEWORK_MEGATRON] >= best_mfu[FRAMEWORK_FSDP2] ? FRAMEWORK_MEGATRON
                                                                              : FRAMEWORK_FSDP2;
        int lo_fw = 1 - hi_fw;
        snprintf(t, tn, "MFU peaks at %.1f%% (%s, %d GPUs)", best_mfu[hi_fw],
                 report_fw_title(hi_fw), best_mfu_gpus[hi_fw]);
        size_t o = strlen(t);
        if (best_mfu[lo_fw] > 0)
            snprintf(t + o, tn - o, "; %s's best is %.1f%% (%d GPUs)", report_fw_title(lo_fw),
                     best_mfu[lo_fw], best_mfu_gpus[lo_fw]);
        else
            snprintf(t + o, tn - o, "; %s fits nowhere shown", report_fw_title(lo_fw));
        o = strlen(t);
        if (tt_mfu > 0)
            snprintf(t + o, tn - o, "; torchtitan's best is %.1f%% (%d GPUs)", tt_mfu,
                     tt_mfu_gpus);
    }
    const char *span = any ? " at your GPU counts and the powers of two between (or below) them"
                       : lo ? " where the model fits (none of your GPU counts fits)"
                            : " (the model fits nowhere up to the sweep's end)";
    snprintf(mc->caption[CH_TOKENS], sizeof mc->caption[0],
             "Tokens per second per GPU of each framework's best plan%s (the job's tokens/s "
             "divided by its GPUs); a flat line scales perfectly, a missing point means no layout "
             "of that framework fits there%s. Log scale, the same for every model: equal gaps "
             "are equal ratios.",
             span, titan ? " (torchtitan: your GPU counts only, section 2b)" : "");
    snprintf(mc->caption[CH_MFU], sizeof mc->caption[0],
             "Model FLOPs utilization of each framework's best plan%s: the share of the GPUs' "
             "dense bf16 peak spent on the model's own FLOPs (recompute excluded)%s. Same "
             "scale for every model.",
             span, titan ? "; torchtitan at your GPU counts only (section 2b)" : "");
    (void)nshown;
}

static void build_charts(const report *r, int mi, model_charts *mc)
{
    const report_model_result *mr = &r->models[mi];
    int counts[REPORT_MAX_GPUS];
    bool own;
    int ncounts = chart_counts(r, mr, counts, &own);
    const char *where = own ? "" : " (none of your GPU counts fits: the smallest that do)";
    memory_chart(r, mr, counts, ncounts, where, mc);
    step_chart(mr, counts, ncounts, where, mc);
    line_charts(r, mr, mc);
}

void report_section_performance(doc *d, const report *r)
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
                         "Throughput relative to FSDP2", "tokens/s", "tokens/s per GPU", "MFU",
                         "Memory (GiB)", "Layout", "Measured (s)", "Measured relative to FSDP2"};
    const char *align = meas ? "llrrrrrrrlrr" : "llrrrrrrrl";
    doc_table(d, align, hdr);
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        for (int g = 0; g < r->ngpus; g++) {
            const report_point *p = report_find_point(mr, r->gpus[g]);
            if (!p) continue;
            double meas_s[2] = {NAN, NAN};
            for (int fw = 0; fw < 2; fw++) {
                bool same = false;
                const bench_row *b =
                    p->has_best[fw] ? report_measured_for(r, &p->best[fw], &same) : NULL;
                if (b) meas_s[fw] = b->measured_step_s;
            }
            for (int fw = 0; fw < 2; fw++) {
                char c[12][sizeof mr->display_doc];
                for (int k = 0; k < 12; k++) c[k][0] = '\0';
                snprintf(c[0], sizeof c[0], "%s", mr->display_doc);
                snprintf(c[1], sizeof c[1], "%s", report_fw_title(fw));
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
                    report_fmt_count(report_tokens_per_gpu(e), c[6], sizeof c[6]);
                    snprintf(c[7], sizeof c[7], "%.1f%%", 100 * e->mfu);
                    snprintf(c[8], sizeof c[8], "%.1f", e->memory.total_bytes / UNITS_GIB_BYTES);
                    report_fmt_layout(e, c[9], sizeof c[9]);
                    bool same = false;
                    const bench_row *b = report_measured_for(r, e, &same);
                    if (b) {
                        snprintf(c[10], sizeof c[10], "%.2f%s", b->measured_step_s,
                                 same ? "" : " (other layout)");
                        if (!isnan(meas_s[0]))
                            snprintf(c[11], sizeof c[11], "%.2f", meas_s[0] / b->measured_step_s);
                    }
                } else {
                    snprintf(c[3], sizeof c[3], "does not fit");
                    snprintf(c[4], sizeof c[4], "n/a");
                    if (p->has_closest[fw])
                        snprintf(c[8], sizeof c[8], "%.1f (%.1f over)",
                                 p->closest[fw].memory.total_bytes / UNITS_GIB_BYTES,
                                 report_over_gib(&p->closest[fw]));
                }
                const char *row[12];
                for (int k = 0; k < 12; k++) row[k] = c[k];
                doc_row(d, row);
            }
        }
    }
    doc_table_end(d);
    model_charts *mc = calloc(r->nmodels, sizeof *mc);
    if (!mc) {
        doc_p(d, "*(Charts not drawn: out of memory.)*");
        return;
    }
    /* one scale per kind of chart across models: memory and MFU linear from 0, tokens/s per GPU
     * on one log range (the step chart is in percent already) */
    double mem_hi = 0, mfu_hi = 0, tok_lo = INFINITY, tok_hi = 0;
    for (int i = 0; i < r->nmodels; i++) {
        build_charts(r, i, &mc[i]);
        double lo, hi;
        chart_data_range(&mc[i].c[CH_MEMORY], &lo, &hi);
        if (hi > mem_hi) mem_hi = hi;
        chart_data_range(&mc[i].c[CH_MFU], &lo, &hi);
        if (hi > mfu_hi) mfu_hi = hi;
        chart_data_range(&mc[i].c[CH_TOKENS], &lo, &hi);
        if (hi > tok_hi) tok_hi = hi;
        if (hi > 0 && lo < tok_lo) tok_lo = lo;
    }
    /* memory: at most twice the capacity, so a closest layout far over it (DeepSeek-V3 on 8
     * GPUs: 1,410 GiB) does not flatten every plan that fits; a taller bar is cut at the top
     * (chart.c) and its number says how far over it is */
    double cap_gib = r->sys.hbm_bytes / UNITS_GIB_BYTES;
    bool cut = mem_hi > 2 * cap_gib;
    if (cut) mem_hi = 2 * cap_gib;
    for (int i = 0; i < r->nmodels; i++) {
        if (cut) {
            size_t o = strlen(mc[i].caption[CH_MEMORY]);
            snprintf(mc[i].caption[CH_MEMORY] + o, sizeof mc[i].caption[0] - o,
                     " The scale stops at twice the capacity (%.0f GiB): a bar cut at the top "
                     "is taller.",
                     2 * cap_gib);
        }
        mc[i].c[CH_MEMORY].y_max = mem_hi;
        mc[i].c[CH_MFU].y_max = mfu_hi;
        if (tok_hi > 0) {
            mc[i].c[CH_TOKENS].y_min = tok_lo;
            mc[i].c[CH_TOKENS].y_max = tok_hi;
        }
    }
    static const char *const kind_name[NCH] = {"memory", "steptime", "throughput", "mfu"};
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        char pbuf[16], abuf[16];
        report_fmt_params(model_params_total(&mr->m), pbuf, sizeof pbuf);
        report_fmt_params(model_params_active(&mr->m), abuf, sizeof abuf);
        char id[96];
        snprintf(id, sizeof id, "model-%s", mr->m.name);
        doc_h(d, 3, id, "3.%d %s (%s parameters%s%s)", i + 1, mr->display_doc, pbuf,
              model_is_moe(&mr->m) ? ", active " : "", model_is_moe(&mr->m) ? abuf : "");
        for (int k = 0; k < NCH; k++) {
            char name[96];
            snprintf(name, sizeof name, "%s-%s", mr->m.name, kind_name[k]);
            doc_chart(d, &mc[i].c[k], name, mc[i].takeaway[k], mc[i].caption[k]);
        }
    }
    free(mc);
}

