/*
 * report_sec_compare.c — section 2 of `plan report`: FSDP2, Megatron and torchtitan compared.
 * What each framework can do comes from the planner's rule check on probe layouts (report_feature_check),
 * each column is backed by that framework's best plans, and the speed and fit are computed over
 * the user's models and GPU counts; only the checkpoint and flag rows are documented text.
 */
#include "report_sections.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_text.h"

/* One framework's cell for a group of features: the ones the rule check accepts under it, and
 * the ones it refuses (section 4 quotes the rules). Asked of the probes, never restated. */
static void rule_cell(const report *r, int fw, const int *feats, int n, char *buf, size_t len)
{
    char yes[512] = "", no[512] = "";
    for (int i = 0; i < n; i++) {
        char err[CM_ERRLEN];
        bool ok = report_feature_check(r, feats[i], (layout_framework)fw, err, sizeof err) ==
                  CM_OK;
        char *dst = ok ? yes : no;
        size_t o = strlen(dst);
        snprintf(dst + o, 512 - o, "%s%s", o ? "; " : "", report_feature_name[feats[i]]);
    }
    snprintf(buf, len, "%s%s%s%s", yes[0] ? yes : "none",
             no[0] ? ". **Refused by the rule check:** " : "", no, no[0] ? " (section 4)" : "");
}

/* The point of a model where framework fw's column takes its plan: the largest of the user's
 * GPU counts where fw has one that fits (NULL: none). */
static const report_point *column_point(const report *r, const report_model_result *mr, int fw)
{
    for (int g = r->ngpus - 1; g >= 0; g--) {
        const report_point *q = report_find_point(mr, r->gpus[g]);
        if (report_framework_best(q, fw)) return q;
    }
    return NULL;
}

/* The plan that backs a framework's column: its best plan for each model at the largest of the
 * user's GPU counts where it fits. */
static void plan_cell(const report *r, int fw, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const report_point *p = column_point(r, mr, fw);
        size_t o = strlen(buf);
        if (!p) {
            snprintf(buf + o, len - o, "%s%s: does not fit on your GPU counts", o ? "; " : "",
                     mr->display_doc);
            continue;
        }
        const estimate *e = report_framework_best(p, fw);
        char lay[160];
        report_fmt_layout_short(e, lay, sizeof lay);
        snprintf(buf + o, len - o, "%s%s on %d GPUs: %s, %.2f s/step", o ? "; " : "",
                 mr->display_doc, p->gpus, lay, e->time.step_s);
    }
}

/* What FP8 buys each plan of the column (the same layout with FP8 Linears, report_fp8_variant). */
static void fp8_cell(const report *r, int fw, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const report_point *p = column_point(r, mr, fw);
        if (!p) continue;
        const estimate *e = report_framework_best(p, fw);
        estimate e8;
        char why[CM_ERRLEN], esc[2 * CM_ERRLEN];
        size_t o = strlen(buf);
        if (report_fp8_variant(r, &mr->m, e, &e8, why, sizeof why) != CM_OK) {
            doc_plain(esc, sizeof esc, why);
            snprintf(buf + o, len - o, "%s%s: no FP8 (%s)", o ? "; " : "", mr->display_doc,
                     esc);
            continue;
        }
        snprintf(buf + o, len - o, "%s%s %.2fx%s", o ? "; " : "", mr->display_doc,
                 e->time.step_s / e8.time.step_s, e8.feasible ? "" : " (does not fit)");
    }
    if (!buf[0]) snprintf(buf, len, "-");
}

void report_section_compare(doc *d, const report *r)
{
    doc_h(d, 2, "compare", "2. FSDP2, Megatron and torchtitan compared");
    /* computed rows first: speed and fit over the user's grid, each framework against FSDP2 */
    int cases = 0, fits[REPORT_NFRAMEWORKS] = {0}, both[REPORT_NFRAMEWORKS] = {0};
    int wins[REPORT_NFRAMEWORKS] = {0}, fastest[REPORT_NFRAMEWORKS] = {0}, none = 0;
    double logsum[REPORT_NFRAMEWORKS] = {0}, rmin[REPORT_NFRAMEWORKS], rmax[REPORT_NFRAMEWORKS];
    for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++) rmin[fw] = INFINITY, rmax[fw] = -INFINITY;
    for (int i = 0; i < r->nmodels; i++)
        for (int g = 0; g < r->ngpus; g++) {
            const report_point *p = report_find_point(&r->models[i], r->gpus[g]);
            if (!p) continue;
            cases++;
            const estimate *f2 = report_framework_best(p, FRAMEWORK_FSDP2);
            int best_fw = -1;
            for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++) {
                const estimate *e = report_framework_best(p, fw);
                if (!e) continue;
                fits[fw]++;
                const estimate *b = best_fw < 0 ? NULL : report_framework_best(p, best_fw);
                if (!b || report_speedup(e, b) > 1) best_fw = fw;
                if (!f2 || fw == FRAMEWORK_FSDP2) continue;
                double ratio = report_speedup(e, f2);
                both[fw]++;
                logsum[fw] += log(ratio);
                if (ratio < rmin[fw]) rmin[fw] = ratio;
                if (ratio > rmax[fw]) rmax[fw] = ratio;
                if (ratio > 1) wins[fw]++;
            }
            if (best_fw < 0) none++;
            else fastest[best_fw]++;
        }
    char speed[REPORT_NFRAMEWORKS][320], fit[REPORT_NFRAMEWORKS][160];
    for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++) {
        int n = 0;
        if (fw == FRAMEWORK_FSDP2)
            n = snprintf(speed[fw], sizeof speed[fw], "baseline");
        else if (both[fw])
            n = snprintf(speed[fw], sizeof speed[fw],
                         "faster than FSDP2 in %d of %d model × GPU-count cases where both fit; "
                         "geometric mean %.2fx (range %.2f-%.2fx)",
                         wins[fw], both[fw], exp(logsum[fw] / both[fw]), rmin[fw], rmax[fw]);
        else
            n = snprintf(speed[fw], sizeof speed[fw], "no case in your grid where it and "
                                                      "FSDP2 both fit");
        snprintf(speed[fw] + n, sizeof speed[fw] - n, "; fastest of the three in %d of %d cases",
                 fastest[fw], cases);
        n = snprintf(fit[fw], sizeof fit[fw], "fits in %d of %d cases", fits[fw], cases);
        if (fw == REPORT_NFRAMEWORKS - 1 && none)
            snprintf(fit[fw] + n, sizeof fit[fw] - n, " (none of the three fits: %d)", none);
    }
    static const int par_f[] = {REPORT_F_TP, REPORT_F_SP, REPORT_F_PP, REPORT_F_VPP, REPORT_F_CP,
                                REPORT_F_EP, REPORT_F_ETP};
    static const int shard_f[] = {REPORT_F_DDP, REPORT_F_DISTOPT, REPORT_F_FSDP, REPORT_F_HSDP,
                                  REPORT_F_NORESHARD, REPORT_F_FSDP_PP};
    static const int rc_f[] = {REPORT_F_SELECTIVE, REPORT_F_FULL};
    static const int off_f[] = {REPORT_F_OFFLOAD, REPORT_F_OFFLOAD_RC, REPORT_F_OPT_OFFLOAD,
                                REPORT_F_ACT_OFFLOAD};
    static char par[REPORT_NFRAMEWORKS][1200], shard[REPORT_NFRAMEWORKS][1200],
        rc[REPORT_NFRAMEWORKS][1200], off[REPORT_NFRAMEWORKS][1200],
        plans[REPORT_NFRAMEWORKS][2048], fp8[REPORT_NFRAMEWORKS][2048];
    for (int fw = 0; fw < REPORT_NFRAMEWORKS; fw++) {
        rule_cell(r, fw, par_f, 7, par[fw], sizeof par[fw]);
        rule_cell(r, fw, shard_f, 6, shard[fw], sizeof shard[fw]);
        rule_cell(r, fw, rc_f, 2, rc[fw], sizeof rc[fw]);
        rule_cell(r, fw, off_f, 4, off[fw], sizeof off[fw]);
        plan_cell(r, fw, plans[fw], sizeof plans[fw]);
        fp8_cell(r, fw, fp8[fw], sizeof fp8[fw]);
    }
    /* the flag and checkpoint rows from the emitter (report_flags.c) */
    char mflags[1024], mckpt[320];
    if (!report_megatron_fsdp_rows(r, mflags, sizeof mflags, mckpt, sizeof mckpt)) {
        snprintf(mflags, sizeof mflags, "(the emitter could not render the probe plan)");
        snprintf(mckpt, sizeof mckpt, "(the emitter could not render the probe plan)");
    }
    const char *hdr[] = {"", "FSDP2 (PyTorch `fully_shard` trainer path)",
                         "Megatron (Megatron-Core / Megatron-LM)",
                         "torchtitan (PyTorch-native, section 2b)"};
    doc_table(d, "llll", hdr);
    const char *rows[][4] = {
        {"Model code", "the Hugging Face model, eager PyTorch kernels (the cost model charges "
                       "its unfused elementwise work)",
         "Megatron-Core's model with fused kernels; Hugging Face checkpoints are converted "
         "(section 6)",
         "torchtitan's PyTorch-native model, compiled where the schedule allows"},
        {"Parallelism (rule check)", par[0], par[1], par[2]},
        {"Data-parallel sharding (rule check)", shard[0], shard[1], shard[2]},
        {"Activation recompute (rule check)", rc[0], rc[1], rc[2]},
        {"CPU offload (rule check)", off[0], off[1], off[2]},
        {"Checkpoint format (emitted)", "PyTorch Distributed Checkpoint (DCP) of DTensor shards "
         "(documented: the FSDP2 trainer YAML has no format key)",
         mckpt, "PyTorch DCP (torchtitan/components/checkpointer; documented)"},
        {"Flags Megatron-FSDP adds (emitted; required and recommended)", "-", mflags, "-"},
        {"The plan behind each column (best at the largest of your GPU counts where it fits)",
         plans[0], plans[1], plans[2]},
        {"Speed here (computed)", speed[0], speed[1], speed[2]},
        {"Fit here (computed)", fit[0], fit[1], fit[2]},
        {"FP8 on that plan (computed: speed against its bf16 step)", fp8[0], fp8[1], fp8[2]},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) doc_row(d, rows[i]);
    doc_table_end(d);
    doc_p(d, "The rows marked \"rule check\" are asked of the planner's own rule code "
             "(`layout_check` on the probe layouts of section 4), so they change when a rule "
             "does; the rows marked \"emitted\" are read from the Megatron-LM flags `plan "
             "--emit megatron-args` writes for a Megatron-FSDP probe plan against the same plan "
             "with the distributed optimizer, so they change when the emitter does (`plan check` "
             "enforces the same checkpoint format). Each column's plans come from the searches "
             "of this report (torchtitan's at your GPU counts, section 2b); the FP8 row prices "
             "the same layouts with FP8 Linears in the framework's default recipe, as "
             "`--precision fp8` does. Speed ratios compare the step simulator's figures where "
             "both plans were simulated, as `plan` ranks them (and as section 2b does); the "
             "step times shown are the closed form, as in section 3.");
}
