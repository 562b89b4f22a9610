/*
 * report_sec_compare.c — section 2 of `plan report`: FSDP2 and Megatron compared. What each
 * framework can do comes from the planner's rule check on probe layouts (report_feature_check),
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

/* The plan that backs a framework's column: its best plan for each model at the largest of the
 * user's GPU counts where it fits. */
static void plan_cell(const report *r, int fw, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const report_point *p = NULL;
        for (int g = r->ngpus - 1; g >= 0 && !p; g--) {
            const report_point *q = report_find_point(mr, r->gpus[g]);
            if (q && q->has_best[fw]) p = q;
        }
        size_t o = strlen(buf);
        if (!p) {
            snprintf(buf + o, len - o, "%s%s: does not fit on your GPU counts", o ? "; " : "",
                     mr->display_doc);
            continue;
        }
        char lay[160];
        report_fmt_layout_short(&p->best[fw], lay, sizeof lay);
        snprintf(buf + o, len - o, "%s%s on %d GPUs: %s, %.2f s/step", o ? "; " : "",
                 mr->display_doc, p->gpus, lay, p->best[fw].time.step_s);
    }
}

void report_section_compare(doc *d, const report *r)
{
    doc_h(d, 2, "compare", "2. FSDP2 and Megatron compared");
    /* computed rows first: speed and fit over the user's grid */
    int both = 0, meg_only = 0, f2_only = 0, none = 0, meg_wins = 0;
    double logsum = 0, rmin = INFINITY, rmax = -INFINITY;
    for (int i = 0; i < r->nmodels; i++)
        for (int g = 0; g < r->ngpus; g++) {
            const report_point *p = report_find_point(&r->models[i], r->gpus[g]);
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
    static const int par_f[] = {REPORT_F_TP, REPORT_F_SP, REPORT_F_PP, REPORT_F_VPP, REPORT_F_CP,
                                REPORT_F_EP, REPORT_F_ETP};
    static const int shard_f[] = {REPORT_F_DDP, REPORT_F_DISTOPT, REPORT_F_FSDP, REPORT_F_HSDP,
                                  REPORT_F_NORESHARD, REPORT_F_FSDP_PP};
    static const int rc_f[] = {REPORT_F_SELECTIVE, REPORT_F_FULL};
    static const int off_f[] = {REPORT_F_OFFLOAD, REPORT_F_OFFLOAD_RC};
    char par[2][1200], shard[2][1200], rc[2][1200], off[2][1200], plans[2][2048];
    for (int fw = 0; fw < 2; fw++) {
        rule_cell(r, fw, par_f, 7, par[fw], sizeof par[fw]);
        rule_cell(r, fw, shard_f, 6, shard[fw], sizeof shard[fw]);
        rule_cell(r, fw, rc_f, 2, rc[fw], sizeof rc[fw]);
        rule_cell(r, fw, off_f, 2, off[fw], sizeof off[fw]);
        plan_cell(r, fw, plans[fw], sizeof plans[fw]);
    }
    /* the flag and checkpoint rows from the emitter (report_flags.c) */
    char mflags[1024], mckpt[320];
    if (!report_megatron_fsdp_rows(r, mflags, sizeof mflags, mckpt, sizeof mckpt)) {
        snprintf(mflags, sizeof mflags, "(the emitter could not render the probe plan)");
        snprintf(mckpt, sizeof mckpt, "(the emitter could not render the probe plan)");
    }
    const char *hdr[] = {"", "FSDP2 (PyTorch `fully_shard` trainer path)",
                         "Megatron (Megatron-Core / Megatron-LM)"};
    doc_table(d, "lll", hdr);
    const char *rows[][3] = {
        {"Model code", "the Hugging Face model, eager PyTorch kernels (the cost model charges "
                       "its unfused elementwise work)",
         "Megatron-Core's model with fused kernels; Hugging Face checkpoints are converted "
         "(section 6)"},
        {"Parallelism (rule check)", par[0], par[1]},
        {"Data-parallel sharding (rule check)", shard[0], shard[1]},
        {"Activation recompute (rule check)", rc[0], rc[1]},
        {"CPU offload (rule check)", off[0], off[1]},
        {"Checkpoint format (emitted)", "PyTorch Distributed Checkpoint (DCP) of DTensor shards "
         "(documented: the FSDP2 trainer YAML has no format key)",
         mckpt},
        {"Flags Megatron-FSDP adds (emitted; required and recommended)", "-", mflags},
        {"The plan behind each column (best at the largest of your GPU counts where it fits)",
         plans[0], plans[1]},
        {"Speed here (computed)", "baseline", speed},
        {"Fit here (computed)", fit_f2, fit_meg},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) doc_row(d, rows[i]);
    doc_table_end(d);
    doc_p(d, "The rows marked \"rule check\" are asked of the planner's own rule code "
             "(`layout_check` on the probe layouts of section 4), so they change when a rule "
             "does; the rows marked \"emitted\" are read from the Megatron-LM flags `plan "
             "--emit megatron-args` writes for a Megatron-FSDP probe plan against the same plan "
             "with the distributed optimizer, so they change when the emitter does (`plan check` "
             "enforces the same checkpoint format). Torchtitan and FP8 get a column here once "
             "the planner searches them.");
}

