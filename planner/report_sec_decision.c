/*
 * report_sec_decision.c — section 1 of `plan report`, the decision tree and its thresholds:
 * whether the model is MoE (and when expert parallelism pays), the dense model size at which
 * Megatron overtakes FSDP2 (from the size sweep, with its chart), and the memory ladder (which
 * rung of DDP / distributed optimizer / full sharding / recompute / offload first fits).
 */
#include "report_sections.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "chart.h"
#include "report_text.h"

/* "DDP up to 8.0B, distributed optimizer up to 14.8B, ..." for the g-th GPU count. */
static void ladder_sentence(const report *r, int g, char *buf, size_t n)
{
    static const char *const short_name[REPORT_NLEVELS] = {
        "DDP", "distributed optimizer", "full sharding", "+ recompute", "+ CPU offload"};
    snprintf(buf, n, "on %d GPUs, data parallel only (no TP/PP), a dense model fits with ",
             r->gpus[g]);
    double prev = 0;
    bool any = false;
    for (int lev = 0; lev < REPORT_NLEVELS; lev++) {
        double p = report_largest_fit(r, g, lev, true);
        if (p <= prev) continue;
        char ps[16];
        report_fmt_params(p, ps, sizeof ps);
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
    double ddp_mp = report_largest_fit(r, g, 0, false), all = report_largest_fit(r, g, 4, false);
    char ps[16], qs[16];
    size_t o = strlen(buf);
    if (ddp_mp > report_largest_fit(r, g, 0, true)) {
        report_fmt_params(ddp_mp, ps, sizeof ps);
        snprintf(buf + o, n - o, "; with TP/PP, DDP alone reaches %s", ps);
        o = strlen(buf);
    }
    if (all < r->sizes[REPORT_NSIZES - 1].params && all > 0) {
        report_fmt_params(all, qs, sizeof qs);
        snprintf(buf + o, n - o, "; nothing larger than %s fits", qs);
    }
}

/* A rung of the memory ladder with who offers it, from the rule check's probes: "label (FSDP2
 * and Megatron; together with PP: Megatron only — "<rule>")". f2 < 0: no second probe. */
static void rule_rung(const report *r, char *buf, size_t n, const char *label, int f,
                      int f2, const char *f2_label)
{
    bool ok[REPORT_NFRAMEWORKS];
    char who[96], why[3 * CM_ERRLEN + 64], esc[6 * CM_ERRLEN + 128];
    report_feature_support(r, f, ok, who, sizeof who, why, sizeof why);
    snprintf(buf, n, "%s (%s", label, who);
    if (f2 >= 0) {
        report_feature_support(r, f2, ok, who, sizeof who, why, sizeof why);
        doc_plain(esc, sizeof esc, why);
        size_t o = strlen(buf);
        snprintf(buf + o, n - o, "; %s: %s%s%s", f2_label, who, why[0] ? ", refused for " : "",
                 esc);
    }
    size_t o = strlen(buf);
    snprintf(buf + o, n - o, ")");
}

/* One sentence: where Megatron overtakes FSDP2 on gpus GPUs. */
static void size_sentence(const report *r, int g, char *buf, size_t n)
{
    report_size_summary s = report_summarize_sizes(r, g);
    char a[16], b[16], c[16];
    report_fmt_params(r->sizes[0].params, a, sizeof a);
    if (s.both == 0) {
        if (s.meg_last_fit > 0) {
            report_fmt_params(s.meg_last_fit, b, sizeof b);
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
        report_fmt_params(s.fsdp2_last_fit, b, sizeof b);
        report_fmt_params(s.meg_last_fit, c, sizeof c);
        snprintf(tail, sizeof tail, "; above %s only Megatron fits (up to %s)", b, c);
    } else if (s.fsdp2_last_fit > s.meg_last_fit) {
        report_fmt_params(s.meg_last_fit, b, sizeof b);
        report_fmt_params(s.fsdp2_last_fit, c, sizeof c);
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
        report_fmt_params(s.cross_params, b, sizeof b);
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
static bool ep_sentence(const report_model_result *mr, const report_point *p, char *buf, size_t n)
{
    if (!p || !p->has_best[FRAMEWORK_MEGATRON]) {
        if (p) snprintf(buf, n, "%s on %d GPUs: no Megatron plan fits", mr->display_doc, p->gpus);
        return p != NULL;
    }
    const estimate *b = &p->best[FRAMEWORK_MEGATRON];
    if (b->layout.ep == 1) {
        snprintf(buf, n, "%s on %d GPUs: the best Megatron plan uses **no** expert "
                         "parallelism (EP 1, %.2f s/step)",
                 mr->display_doc, p->gpus, b->time.step_s);
        return true;
    }
    if (p->has_noep && p->noep.time.step_s >= b->time.step_s) {
        snprintf(buf, n, "%s on %d GPUs: **EP %d** is %.2fx faster than the best EP 1 plan "
                         "(%.2f vs %.2f s/step)",
                 mr->display_doc, p->gpus, b->layout.ep, p->noep.time.step_s / b->time.step_s,
                 b->time.step_s, p->noep.time.step_s);
    } else if (p->has_noep) { /* ranked first by the step simulator, not by the closed form */
        snprintf(buf, n, "%s on %d GPUs: **EP %d** ranks first by the step simulator, about "
                         "even with the best EP 1 plan (%.2f vs %.2f s/step by the closed form)",
                 mr->display_doc, p->gpus, b->layout.ep, b->time.step_s, p->noep.time.step_s);
    } else if (p->has_noep_closest) {
        snprintf(buf, n, "%s on %d GPUs: **EP is needed to fit**: without it the closest plan "
                         "needs %.1f GiB per GPU (%.1f GiB over); with EP %d it runs at %.2f "
                         "s/step",
                 mr->display_doc, p->gpus, p->noep_closest.memory.total_bytes / UNITS_GIB_BYTES,
                 report_over_gib(&p->noep_closest), b->layout.ep, b->time.step_s);
    } else {
        snprintf(buf, n, "%s on %d GPUs: EP %d, %.2f s/step (no EP 1 layout is valid here)",
                 mr->display_doc, p->gpus, b->layout.ep, b->time.step_s);
    }
    return true;
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
    for (int i = 0; i < REPORT_NSIZES; i++) {
        char lab[16];
        report_fmt_params(r->sizes[i].params, lab, sizeof lab);
        chart_add_point(&c, lab, r->sizes[i].params);
    }
    for (int g = 0; g < r->ngpus && g < CHART_MAX_SERIES; g++) {
        char name[32];
        snprintf(name, sizeof name, "%d GPUs", r->gpus[g]);
        int s = chart_add_series(&c, name);
        for (int i = 0; i < REPORT_NSIZES; i++) {
            const report_size_point *sp = &r->sizes[i];
            if (sp->has[g][0] && sp->has[g][1])
                c.y[s][i] = sp->step[g][FRAMEWORK_FSDP2] / sp->step[g][FRAMEWORK_MEGATRON];
        }
    }
    char takeaway[1024];
    size_sentence(r, r->ngpus - 1, takeaway, sizeof takeaway);
    takeaway[0] = (char)toupper((unsigned char)takeaway[0]);
    doc_chart(d, &c, "size-ratio", takeaway,
              "Above the dashed line Megatron is faster. A gap means one framework does not "
              "fit at that size (see the table).");
}

void report_section_decision(doc *d, const report *r)
{
    char buf[1024], gl[256];
    report_fmt_gpu_list(r->gpus, r->ngpus, gl, sizeof gl);
    doc_h(d, 2, "decision", "1. Decision tree");
    doc_p(d, "Every threshold below was computed for **%s** (%s, %d GPUs per node) at sequence "
             "%d and global batch %d sequences, at your GPU counts (%s).",
          r->system_doc, r->gpu_doc, r->sys.gpus_per_node, r->t.seq_len,
          r->t.global_batch, gl);

    /* the tree */
    bool any_moe = false;
    for (int i = 0; i < r->nmodels; i++) any_moe |= model_is_moe(&r->models[i].m);
    /* What each framework can do is asked of the planner's rule check (report_feature_support
     * on the probe layouts of section 4), never restated: fixing a rule fixes these lines. */
    bool ok[REPORT_NFRAMEWORKS];
    char who[96], why[3 * CM_ERRLEN + 64], esc[6 * CM_ERRLEN + 128];
    doc_li(d, 0, "**Is the model a mixture of experts?**");
    report_feature_support(r, REPORT_F_EP, ok, who, sizeof who, why, sizeof why);
    doc_plain(esc, sizeof esc, why);
    doc_li(d, 1, "**Yes** → expert parallelism: %s%s%s%s.", who, why[0] ? " (refused for " : "",
           esc, why[0] ? ")" : "");
    if (!any_moe)
        doc_li(d, 2, "No MoE model in `--models`: add one (e.g. `mixtral-8x7b`) to compute "
                     "when EP pays here.");
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        if (!model_is_moe(&mr->m)) continue;
        for (int g = 0; g < r->ngpus; g++)
            if (ep_sentence(mr, report_find_point(mr, r->gpus[g]), buf, sizeof buf))
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
                 "GPU counts in 1.4; who offers each rung is the planner's rule check, section "
                 "4):");
    char rung[REPORT_NLEVELS][8 * CM_ERRLEN];
    rule_rung(r, rung[0], sizeof rung[0], "DDP: nothing sharded", REPORT_F_DDP, -1, NULL);
    rule_rung(r, rung[1], sizeof rung[1],
              "distributed optimizer (ZeRO-1): shards the fp32 master weights and Adam moments",
              REPORT_F_DISTOPT, -1, NULL);
    rule_rung(r, rung[2], sizeof rung[2],
              "full sharding (ZeRO-3): parameters and gradients too", REPORT_F_FSDP,
              REPORT_F_FSDP_PP, "together with PP");
    rule_rung(r, rung[3], sizeof rung[3], "activation recompute, full", REPORT_F_FULL,
              REPORT_F_SELECTIVE, "selective");
    rule_rung(r, rung[4], sizeof rung[4], "CPU offload of the FSDP shards", REPORT_F_OFFLOAD,
              REPORT_F_OFFLOAD_RC, "together with recompute");
    {   /* and Megatron's own host offloads (issue 21), from their probes too */
        bool ok[REPORT_NFRAMEWORKS];
        char who_o[96], who_a[96], why[3 * CM_ERRLEN + 64];
        report_feature_support(r, REPORT_F_OPT_OFFLOAD, ok, who_o, sizeof who_o, why,
                               sizeof why);
        report_feature_support(r, REPORT_F_ACT_OFFLOAD, ok, who_a, sizeof who_a, why,
                               sizeof why);
        size_t o = strlen(rung[4]);
        snprintf(rung[4] + o, sizeof rung[4] - o,
                 ", or of the optimizer state (%s) or the activations (%s)", who_o, who_a);
    }
    for (int lev = 0; lev < REPORT_NLEVELS; lev++) {
        /* which models first fit at exactly this rung, at which of the user's GPU counts */
        char who[2048] = "";
        for (int i = 0; i < r->nmodels; i++) {
            const report_model_result *mr = &r->models[i];
            int hit[REPORT_MAX_GPUS], nh = 0;
            for (int g = 0; g < r->ngpus; g++) {
                const report_point *p = report_find_point(mr, r->gpus[g]);
                bool meg, f2;
                if (p && report_fit_level(p, &meg, &f2) == lev) hit[nh++] = r->gpus[g];
            }
            if (!nh) continue;
            report_fmt_gpu_list(hit, nh, gl, sizeof gl);
            size_t o = strlen(who);
            snprintf(who + o, sizeof who - o, "%s%s on %s GPUs", who[0] ? "; " : "",
                     mr->display_doc, gl);
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
        const report_model_result *mr = &r->models[i];
        int nh = 0, hit[REPORT_MAX_GPUS];
        for (int g = 0; g < r->ngpus; g++) {
            const report_point *p = report_find_point(mr, r->gpus[g]);
            bool meg, f2;
            if (p && report_fit_level(p, &meg, &f2) == REPORT_NLEVELS) hit[nh++] = r->gpus[g];
        }
        if (!nh) continue;
        report_fmt_gpu_list(hit, nh, gl, sizeof gl);
        int first = 0;
        for (int k = 0; k < REPORT_NCLASSES; k++)
            if (mr->min_gpus[k] && (!first || mr->min_gpus[k] < first)) first = mr->min_gpus[k];
        if (first)
            doc_li(d, 1, "%s does not fit on %s GPUs at all; the smallest GPU count searched "
                         "(powers of two) that fits is **%d**.",
                   mr->display_doc, gl, first);
        else
            doc_li(d, 1, "%s does not fit on %s GPUs, nor on any power of two up to %d.",
                   mr->display_doc, gl, mr->cap);
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
        for (int i = 0; i < REPORT_NSIZES; i++) {
            const report_size_point *sp = &r->sizes[i];
            char cells[REPORT_MAX_GPUS + 2][32];
            const char *row[REPORT_MAX_GPUS + 2];
            report_fmt_params(sp->params, cells[0], sizeof cells[0]);
            snprintf(cells[1], sizeof cells[1], "%d × %d", sp->layers, sp->hidden);
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
        bool ok[REPORT_NFRAMEWORKS];
        char who[96], why[3 * CM_ERRLEN + 64];
        report_feature_support(r, REPORT_F_EP, ok, who, sizeof who, why, sizeof why);
        doc_p(d, "For each MoE model and GPU count: the best Megatron plan overall against the "
                 "best Megatron plan restricted to EP 1 (both from the same search; when the "
                 "best plan has EP 1 it is that plan), and the best FSDP2 plan (%s).",
              ok[FRAMEWORK_FSDP2] ? "which may use EP"
                                  : "which has no EP: the rule check refuses it, section 4");
        const char *hdr[] = {"Model", "GPUs", "Best Megatron (s/step)", "its EP",
                             "Best with EP 1 (s/step)", "EP speed-up", "Best FSDP2 (s/step)"};
        doc_table(d, "lrrrrrr", hdr);
        for (int i = 0; i < r->nmodels; i++) {
            const report_model_result *mr = &r->models[i];
            if (!model_is_moe(&mr->m)) continue;
            for (int g = 0; g < r->ngpus; g++) {
                const report_point *p = report_find_point(mr, r->gpus[g]);
                if (!p) continue;
                char c[7][sizeof mr->display_doc]; /* whole display name */
                snprintf(c[0], sizeof c[0], "%s", mr->display_doc);
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
                /* when the best plan has EP 1 it is the best EP 1 plan (plan's ranking) */
                const estimate *noep = hb && b->layout.ep == 1 ? b
                                       : p->has_noep           ? &p->noep
                                                               : NULL;
                if (noep)
                    snprintf(c[4], sizeof c[4], "%.2f", noep->time.step_s);
                else if (p->has_noep_closest)
                    snprintf(c[4], sizeof c[4], "does not fit (%.1f GiB over)",
                             report_over_gib(&p->noep_closest));
                else
                    snprintf(c[4], sizeof c[4], "-");
                if (hb && noep)
                    snprintf(c[5], sizeof c[5], "%.2fx", noep->time.step_s / b->time.step_s);
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
    {   /* how each framework's rows may split the model: the rule check's probes */
        static const int mp_f[] = {REPORT_F_TP, REPORT_F_PP, REPORT_F_CP, REPORT_F_EP};
        static const char *const mp_label[] = {"TP", "PP", "CP", "EP"};
        static const char *const mp_label_f2[] = {"TP", "PP", "Ulysses (CP)", "EP"};
        char meg[64], f2[64];
        report_feature_list(r, FRAMEWORK_MEGATRON, mp_f, mp_label, 4, true, meg, sizeof meg);
        report_feature_list(r, FRAMEWORK_FSDP2, mp_f, mp_label_f2, 4, true, f2, sizeof f2);
        doc_p(d, "Smallest GPU count (powers of two from 1, plus your counts) at which each "
                 "model has a layout that fits in each memory class; \"-\" means none up to the "
                 "number shown in the last row. Besides data parallelism, Megatron rows may "
                 "split the model with %s; FSDP2 rows %s%s (what the rule check accepts, "
                 "section 4).",
              meg[0] ? meg : "nothing", f2[0] ? "with " : "with nothing", f2);
    }
    {
        const char *hdr[REPORT_MAX_MODELS + 1];
        char align[REPORT_MAX_MODELS + 2];
        hdr[0] = "Memory class";
        align[0] = 'l';
        for (int i = 0; i < r->nmodels; i++) {
            hdr[i + 1] = r->models[i].display_doc;
            align[i + 1] = 'r';
        }
        align[r->nmodels + 1] = '\0';
        doc_table(d, align, hdr);
        for (int k = 0; k < REPORT_NCLASSES; k++) {
            char cells[REPORT_MAX_MODELS + 1][24];
            const char *row[REPORT_MAX_MODELS + 1];
            row[0] = report_class_name[k];
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
    {
        char err[CM_ERRLEN];
        bool f2_dp_only =
            report_feature_check(r, REPORT_F_TP, FRAMEWORK_FSDP2, err, sizeof err) != CM_OK &&
            report_feature_check(r, REPORT_F_PP, FRAMEWORK_FSDP2, err, sizeof err) != CM_OK;
        doc_p(d, "By model size: the largest member of the dense family of 1.2 that fits on "
                 "each of your GPU counts when the rungs up to that row are allowed, with any "
                 "layout (either framework) and with data parallelism only (TP = PP = 1%s).",
              f2_dp_only ? ", the only choice the rule check leaves FSDP2" : "");
    }
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
        static const char *const upto[REPORT_NLEVELS] = {
            "DDP only", "+ distributed optimizer", "+ full sharding", "+ activation recompute",
            "+ CPU offload"};
        for (int lev = 0; lev < REPORT_NLEVELS; lev++) {
            char cells[2 * REPORT_MAX_GPUS + 1][24];
            const char *row[2 * REPORT_MAX_GPUS + 1];
            row[0] = upto[lev];
            for (int c = 0; c < 2 * r->ngpus; c++) {
                double p = report_largest_fit(r, c / 2, lev, c % 2);
                if (p > 0) report_fmt_params(p, cells[c + 1], sizeof cells[0]);
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
            row[0] = r->models[i].display_doc;
            for (int g = 0; g < r->ngpus; g++) {
                const report_point *p = report_find_point(&r->models[i], r->gpus[g]);
                bool meg = false, f2 = false;
                int lev = p ? report_fit_level(p, &meg, &f2) : REPORT_NLEVELS;
                if (lev == REPORT_NLEVELS)
                    snprintf(cells[g + 1], sizeof cells[0], "does not fit");
                else
                    snprintf(cells[g + 1], sizeof cells[0], "%s (%s)", report_level_name[lev],
                             meg && f2 ? "both" : meg ? "Megatron" : "FSDP2");
                row[g + 1] = cells[g + 1];
            }
            doc_row(d, row);
        }
        doc_table_end(d);
    }
}

