/*
 * report_sec_performance.c — section 3 of `plan report`: each framework's best plan per model and
 * GPU count (with measured step times from a bench CSV where given), and per model the charts
 * of memory, step-time breakdown and throughput against GPU count.
 */
#include "report_sections.h"

#include <math.h>
#include <stdio.h>
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

static void charts_for_model(doc *d, const report *r, int mi)
{
    const report_model_result *mr = &r->models[mi];
    int counts[REPORT_MAX_GPUS];
    bool own;
    int ncounts = chart_counts(r, mr, counts, &own);
    bool short_labels = 2 * ncounts > 8;
    char title[sizeof mr->m.display + 96], name[96], lab[40];
    const char *where = own ? "" : " (none of your GPU counts fits: the smallest that do)";

    /* memory breakdown per plan */
    chart c;
    snprintf(title, sizeof title, "%s: memory per GPU of the best plans", mr->m.display);
    chart_init(&c, CHART_STACKED_BARS, title, "framework and GPU count", "GiB per GPU");
    const char *mem_series[] = {"weights", "gradients", "optimizer", "activations", "other"};
    for (int s = 0; s < 5; s++) chart_add_series(&c, mem_series[s]);
    c.ref_y = r->sys.hbm_bytes / REPORT_GIB;
    snprintf(c.ref_label, sizeof c.ref_label, "HBM %.0f GiB", c.ref_y);
    bool any_hatched = false;
    for (int g = 0; g < ncounts; g++) {
        const report_point *p = report_find_point(mr, counts[g]);
        for (int fw = 0; fw < 2; fw++) {
            if (short_labels) snprintf(lab, sizeof lab, "%c %d", fw ? 'M' : 'F', counts[g]);
            else snprintf(lab, sizeof lab, "%s\n%d GPUs", report_fw_title(fw), counts[g]);
            int i = chart_add_point(&c, lab, counts[g]);
            bool fits;
            const estimate *e = p ? plan_or_closest(p, fw, &fits) : NULL;
            if (!e || i < 0) continue;
            const memory_breakdown *m = &e->memory;
            double v[5] = {m->weights_bytes, m->gradients_bytes, m->optimizer_bytes,
                           m->activations_bytes, m->other_bytes};
            for (int s = 0; s < 5; s++) c.y[s][i] = v[s] / REPORT_GIB;
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
        const report_point *p = report_find_point(mr, counts[g]);
        for (int fw = 0; fw < 2; fw++) {
            if (short_labels) snprintf(lab, sizeof lab, "%c %d", fw ? 'M' : 'F', counts[g]);
            else snprintf(lab, sizeof lab, "%s\n%d GPUs", report_fw_title(fw), counts[g]);
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
            if (report_best_of(&mr->pts[i])) {
                if (mr->pts[i].gpus < lo) lo = mr->pts[i].gpus;
                break;
            }
    bool any = false;
    for (int i = 0; i < mr->npts; i++) {
        const report_point *p = &mr->pts[i];
        if (p->gpus >= lo && p->gpus <= hi && report_best_of(p)) any = true;
    }
    if (!any) { /* nothing fits at the user's counts: show where it does */
        lo = hi = 0;
        for (int i = 0; i < mr->npts; i++)
            if (report_best_of(&mr->pts[i])) {
                if (!lo) lo = mr->pts[i].gpus;
                hi = mr->pts[i].gpus;
            }
    }
    for (int i = 0; i < mr->npts && lo; i++) {
        const report_point *p = &mr->pts[i];
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
                         "Throughput relative to FSDP2", "tokens/s", "MFU", "Memory (GiB)",
                         "Layout", "Measured (s)", "Measured relative to FSDP2"};
    const char *align = meas ? "llrrrrrrlrr" : "llrrrrrrl";
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
                char c[11][192];
                for (int k = 0; k < 11; k++) c[k][0] = '\0';
                snprintf(c[0], sizeof c[0], "%s", mr->m.display);
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
                    snprintf(c[6], sizeof c[6], "%.1f%%", 100 * e->mfu);
                    snprintf(c[7], sizeof c[7], "%.1f", e->memory.total_bytes / REPORT_GIB);
                    report_fmt_layout(e, c[8], sizeof c[8]);
                    bool same = false;
                    const bench_row *b = report_measured_for(r, e, &same);
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
                                 p->closest[fw].memory.total_bytes / REPORT_GIB,
                                 report_over_gib(&p->closest[fw]));
                }
                const char *row[11];
                for (int k = 0; k < 11; k++) row[k] = c[k];
                doc_row(d, row);
            }
        }
    }
    doc_table_end(d);
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        char pbuf[16], abuf[16];
        report_fmt_params(model_params_total(&mr->m), pbuf, sizeof pbuf);
        report_fmt_params(model_params_active(&mr->m), abuf, sizeof abuf);
        char id[96];
        snprintf(id, sizeof id, "model-%s", mr->m.name);
        doc_h(d, 3, id, "3.%d %s (%s parameters%s%s)", i + 1, mr->m.display, pbuf,
              model_is_moe(&mr->m) ? ", active " : "", model_is_moe(&mr->m) ? abuf : "");
        charts_for_model(d, r, i);
    }
}

