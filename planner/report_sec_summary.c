/*
 * report_sec_summary.c — the answer at the top of `plan report`: one box per model saying which
 * framework and layout to run on the user's GPUs, how much faster it is than the other
 * framework's best plan, and whether it fits with how much headroom, then one line per other
 * GPU count. The recommended plan is the one `plan --model M --gpus N --precision bf16` prints
 * (the same search, re-ranked by the step simulator, see report_best_of; the guide compares the
 * frameworks in bf16, issue 16), and the box quotes plan's own layout line so a reader can
 * check it. The FP8 line prices the same layout with FP8 Linears (the
 * framework's default recipe, precision.h), as `plan estimate ... --precision fp8` does.
 */
#include "report_sections.h"

#include <stdio.h>
#include <string.h>

#include "output.h"
#include "precision.h"
#include "report_text.h"

/* "1.50x the best FSDP2 plan", or why the other framework has none. */
static void versus(const report_point *p, const estimate *e, char *buf, size_t n)
{
    int other = e->layout.framework == FRAMEWORK_MEGATRON ? FRAMEWORK_FSDP2 : FRAMEWORK_MEGATRON;
    if (p->has_best[other]) {
        snprintf(buf, n, "**%.2fx** the speed of the best %s plan",
                 report_speedup(e, &p->best[other]), report_fw_title(other));
    } else if (p->has_closest[other]) {
        snprintf(buf, n, "%s does not fit (its closest layout needs %.1f GiB per GPU, %.1f "
                         "over)",
                 report_fw_title(other), p->closest[other].memory.total_bytes / UNITS_GIB_BYTES,
                 report_over_gib(&p->closest[other]));
    } else {
        snprintf(buf, n, "%s has no valid layout here", report_fw_title(other));
    }
}

/* One line for a GPU count other than the headline's. */
static void other_count(doc *d, const report *r, const report_model_result *mr, int gpus)
{
    const report_point *p = report_find_point(mr, gpus);
    if (!p) return;
    const estimate *e = report_best_of(p);
    char lay[160], vs[256], tok[32];
    if (!e) {
        double over = -1;
        for (int fw = 0; fw < 2; fw++)
            if (p->has_closest[fw] && (over < 0 || report_over_gib(&p->closest[fw]) < over))
                over = report_over_gib(&p->closest[fw]);
        if (over >= 0)
            doc_li(d, 0, "%d GPUs: does not fit (the closest layout is %.1f GiB over per GPU).",
                   gpus, over);
        else
            doc_li(d, 0, "%d GPUs: no valid layout.", gpus);
        return;
    }
    report_fmt_layout_short(e, lay, sizeof lay);
    versus(p, e, vs, sizeof vs);
    report_fmt_count(report_tokens_per_gpu(e), tok, sizeof tok);
    (void)r;
    doc_li(d, 0, "%d GPUs: %s, %s; %s tokens/s per GPU, MFU %.1f%%; %.1f GiB headroom.", gpus,
           lay, vs, tok, 100 * e->mfu, report_headroom_gib(e));
}

/* What FP8 buys the recommended plan: the same layout with FP8 Linears in the framework's
 * default recipe (precision.h), by the closed form like the box's own figures. */
static void fp8_line(doc *d, const report *r, const report_model_result *mr, const estimate *e)
{
    layout l8 = e->layout;
    l8.precision = PRECISION_FP8;
    l8.fp8_recipe = FP8_RECIPE_DEFAULT;
    char why[CM_ERRLEN];
    if (precision_check(&r->sys, &l8, why, sizeof why) != CM_OK) {
        doc_note(d, "**FP8:** not available for this plan: %s", why);
        return;
    }
    estimate e8;
    if (report_fp8_variant(r, &mr->m, e, &e8, why, sizeof why) != CM_OK) {
        doc_note(d, "**FP8:** the same layout in FP8 is not a valid plan: %s", why);
        return;
    }
    double gain = e->time.step_s / e8.time.step_s;
    doc_note(d, "**FP8 (%s):** the same layout %.2f s per step, **%.2fx** the bf16 speed; "
                "%.1f GiB per GPU%s (`--precision fp8`; MFU stays against the bf16 peak).",
             precision_label(&l8), e8.time.step_s, gain, e8.memory.total_bytes / UNITS_GIB_BYTES,
             e8.feasible ? "" : ", which does not fit");
}

static void model_box(doc *d, const report *r, const report_model_result *mr)
{
    char id[96], title[sizeof mr->display_doc + 96], pbuf[16], abuf[16];
    report_fmt_params(model_params_total(&mr->m), pbuf, sizeof pbuf);
    report_fmt_params(model_params_active(&mr->m), abuf, sizeof abuf);
    snprintf(id, sizeof id, "answer-%s", mr->m.name);
    snprintf(title, sizeof title, "%s (%s parameters%s%s)", mr->display_doc, pbuf,
             model_is_moe(&mr->m) ? ", active " : "", model_is_moe(&mr->m) ? abuf : "");
    doc_box_begin(d, id, title);
    const estimate *e = report_primary_plan(r, mr);
    char gl[256], lay[160], vs[256], tok[32], line[320], esc[700];
    report_fmt_gpu_list(r->gpus, r->ngpus, gl, sizeof gl);
    if (!e) {
        doc_p(d, "**Does not fit** on your %s %s GPUs, nor on any power of two up to %d: no "
                 "framework has a layout whose memory fits. Shorten the sequence or pick a "
                 "larger GPU.",
              gl, r->gpu_doc, mr->cap);
        doc_box_end(d);
        return;
    }
    bool own = false;
    for (int g = 0; g < r->ngpus; g++) own |= r->gpus[g] == e->gpus;
    const report_point *p = report_find_point(mr, e->gpus);
    report_fmt_layout_short(e, lay, sizeof lay);
    versus(p, e, vs, sizeof vs);
    if (own)
        doc_p(d, "On your **%d %s**: **%s**, %s; fits with **%.1f GiB headroom** (%.1f of "
                 "%.1f GiB per GPU).",
              e->gpus, r->gpu_doc, lay, vs, report_headroom_gib(e),
              e->memory.total_bytes / UNITS_GIB_BYTES, e->memory.capacity_bytes / UNITS_GIB_BYTES);
    else
        doc_p(d, "**Does not fit on your %s GPUs.** The smallest GPU count that fits (powers "
                 "of two): **%d %s** with **%s**, %s; %.1f GiB headroom.",
              gl, e->gpus, r->gpu_doc, lay, vs, report_headroom_gib(e));
    report_fmt_count(report_tokens_per_gpu(e), tok, sizeof tok);
    output_layout_line(e, line, sizeof line);
    doc_code_safe(esc, sizeof esc, line);
    char name[160];
    doc_code_safe(name, sizeof name, mr->m.name);
    /* issue 19: plan searches torchtitan too; where its best beats this plan, plan recommends
     * that one, and the box says so (the guide's sections stay FSDP2 vs Megatron) */
    bool titan_wins = p && p->has_titan && report_speedup(&p->titan, e) > 1;
    char fw_flag[48] = "";
    if (titan_wins)
        snprintf(fw_flag, sizeof fw_flag, " --framework %s", layout_framework_name(e->layout.framework));
    doc_p(d, "%s tokens/s per GPU · MFU %.1f%% · %.2f s per step of %d sequences. `plan --model "
             "%s --gpus %d%s --precision bf16` recommends the same plan: `%s`.",
          tok, 100 * e->mfu, e->time.step_s, e->training.global_batch, name, e->gpus, fw_flag,
          esc);
    if (titan_wins) {
        char tl[160];
        report_fmt_layout_short(&p->titan, tl, sizeof tl);
        doc_note(d, "**torchtitan is faster here:** %s, **%.2fx** this plan (section 2b); `plan "
                    "--model %s --gpus %d --precision bf16` recommends it.",
                 tl, report_speedup(&p->titan, e), name, e->gpus);
    } else if (p && p->has_titan) { /* the third framework, backed by its own plan */
        char tl[160];
        report_fmt_layout_short(&p->titan, tl, sizeof tl);
        doc_p(d, "Against **torchtitan** (PyTorch-native, section 2b): **%.2fx** the speed of "
                 "its best plan, %s.",
              report_speedup(e, &p->titan), tl);
    } else if (p && p->titan_searched) {
        doc_p(d, "**torchtitan** (section 2b): no layout fits here.");
    }
    fp8_line(d, r, mr, e);
    if (r->ngpus > 1 || !own) doc_p(d, "%s", own ? "Your other GPU counts:" : "Your GPU counts:");
    for (int g = 0; g < r->ngpus; g++)
        if (r->gpus[g] != e->gpus) other_count(d, r, mr, r->gpus[g]);
    char sid[96];
    doc_safe_id(sid, sizeof sid, mr->m.name);
    doc_p(d, "Detail: [performance and charts](#model-%s) · [configuration](#config-%s).", sid,
          sid);
    doc_box_end(d);
}

/* Every model's answer in one table, before the boxes, so the first screen holds them all:
 * the same plan, ratios and headroom the boxes give (report_primary_plan, report_speedup,
 * report_fp8_variant). */
static void glance_table(doc *d, const report *r)
{
    const char *hdr[] = {"Model", "GPUs", "Recommended plan", "Speed vs best FSDP2",
                         "vs best torchtitan", "FP8 on it", "Headroom (GiB)"};
    doc_table(d, "lrlrrrr", hdr);
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const estimate *e = report_primary_plan(r, mr);
        char sid[96], c[7][sizeof mr->display_doc + 128];
        doc_safe_id(sid, sizeof sid, mr->m.name);
        /* the name stays out of the link's text: a config.json's display name is the
         * user's text, quoted by doc_plain, and must never take part in link syntax */
        snprintf(c[0], sizeof c[0], "%s ([box](#answer-%s))", mr->display_doc, sid);
        if (!e) {
            snprintf(c[1], sizeof c[1], "-");
            snprintf(c[2], sizeof c[2], "does not fit up to %d GPUs", mr->cap);
            for (int k = 3; k < 7; k++) snprintf(c[k], sizeof c[k], "-");
        } else {
            const report_point *p = report_find_point(mr, e->gpus);
            snprintf(c[1], sizeof c[1], "%d", e->gpus);
            report_fmt_layout_short(e, c[2], sizeof c[2]);
            const estimate *f2 = p ? report_framework_best(p, FRAMEWORK_FSDP2) : NULL;
            if (e->layout.framework == FRAMEWORK_FSDP2)
                snprintf(c[3], sizeof c[3], "(is FSDP2)");
            else if (f2)
                snprintf(c[3], sizeof c[3], "**%.2fx**", report_speedup(e, f2));
            else
                snprintf(c[3], sizeof c[3], "FSDP2 does not fit");
            const estimate *tt = p ? report_framework_best(p, FRAMEWORK_TORCHTITAN) : NULL;
            if (e->layout.framework == FRAMEWORK_TORCHTITAN)
                snprintf(c[4], sizeof c[4], "(is torchtitan)");
            else if (tt)
                snprintf(c[4], sizeof c[4], "%.2fx", report_speedup(e, tt));
            else
                snprintf(c[4], sizeof c[4], p && p->titan_searched ? "torchtitan does not fit"
                                                                   : "not searched");
            estimate e8;
            char why[CM_ERRLEN];
            if (report_fp8_variant(r, &mr->m, e, &e8, why, sizeof why) != CM_OK)
                snprintf(c[5], sizeof c[5], "not available");
            else
                snprintf(c[5], sizeof c[5], "%.2fx%s", e->time.step_s / e8.time.step_s,
                         e8.feasible ? "" : " (does not fit)");
            snprintf(c[6], sizeof c[6], "%.1f", report_headroom_gib(e));
        }
        const char *row[] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        doc_row(d, row);
    }
    doc_table_end(d);
}

void report_section_summary(doc *d, const report *r)
{
    doc_h(d, 2, "answer", "The answer");
    doc_p(d, "Each model's recommended plan at the largest of your GPU counts where it fits "
             "(what `plan --model M --gpus N --precision bf16` recommends), how many times the "
             "speed of the best plan of the other frameworks it runs, what FP8 would add, and the "
             "memory left; a box per model follows with the detail. The guide compares the "
             "frameworks in bf16; `plan` without `--precision` also searches FP8 where the GPU "
             "has it, and the FP8 column is what that adds to the same plan.");
    glance_table(d, r);
    for (int i = 0; i < r->nmodels; i++) model_box(d, r, &r->models[i]);
}
