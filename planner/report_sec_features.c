/*
 * report_sec_features.c — section 4 of `plan report`: the feature-support matrix, each cell a
 * probe layout checked against the planner's rule code, with how often the searches used it.
 * The frameworks are the rows of `columns`: adding one is one entry there, its probes and counts coming from the same rule check and searches.
 */
#include "report_sections.h"

#include <stdio.h>

/* One column of the matrix: the framework its probes run under, its heading, and how its
 * checkpoint cell is known (NULL: the Megatron-LM argv the emitter writes, report_flags.c). */
typedef struct {
    layout_framework fw;
    const char *title;
    const char *ckpt_documented;
} matrix_column;

static const matrix_column columns[] = {
    {FRAMEWORK_FSDP2, "FSDP2", "PyTorch DCP (`torch.distributed.checkpoint`; documented)"},
    {FRAMEWORK_MEGATRON, "Megatron", NULL},
    {FRAMEWORK_TORCHTITAN, "torchtitan", "PyTorch DCP (torchtitan/components/checkpointer; documented)"},
};
#define NCOLUMNS ((int)(sizeof columns / sizeof *columns))

void report_section_features(doc *d, const report *r)
{
    doc_h(d, 2, "features", "4. Feature-support matrix");
    doc_p(d, "Each row is a probe layout (on 64 GPUs, an MoE model of Mixtral-8x7B's shape) "
             "passed through the planner's rule check (`layout_check`): a \"no\" quotes the "
             "rule. \"searched\" counts the layouts with that feature the searches of this "
             "report evaluated, so a rule the search never exercises shows as \"not searched\".");
    const char *hdr[NCOLUMNS + 1] = {"Feature"};
    char align[NCOLUMNS + 2] = "l";
    for (int c = 0; c < NCOLUMNS; c++) {
        hdr[c + 1] = columns[c].title;
        align[c + 1] = 'l';
    }
    align[NCOLUMNS + 1] = '\0';
    doc_table(d, align, hdr);
    for (int f = 0; f < REPORT_NFEATURES; f++) {
        char cells[NCOLUMNS][2 * CM_ERRLEN + 64];
        const char *row[NCOLUMNS + 1] = {report_feature_name[f]};
        for (int c = 0; c < NCOLUMNS; c++) {
            layout_framework fw = columns[c].fw;
            char err[CM_ERRLEN], esc[2 * CM_ERRLEN];
            cm_status st = report_feature_check(r, f, fw, err, sizeof err);
            if (st == CM_OK && fw == FRAMEWORK_TORCHTITAN) {
                /* issue 19: torchtitan's column is its rule check alone (section 2b searches it
                 * at your GPU counts only, so there is no count to give) */
                snprintf(cells[c], sizeof cells[c], "**yes**");
            } else if (st == CM_OK) {
                long n = r->feat_count[fw][f];
                if (n) snprintf(cells[c], sizeof cells[c], "**yes** (searched: %ld layouts)", n);
                else snprintf(cells[c], sizeof cells[c], "**yes** (not searched)");
            } else {
                doc_plain(esc, sizeof esc, err);
                snprintf(cells[c], sizeof cells[c], "no: %s", esc);
            }
            row[c + 1] = cells[c];
        }
        doc_row(d, row);
    }
    char mflags[1024], mckpt[320];
    if (!report_megatron_fsdp_rows(r, mflags, sizeof mflags, mckpt, sizeof mckpt))
        snprintf(mckpt, sizeof mckpt, "(the emitter could not render the probe plan)");
    const char *ck[NCOLUMNS + 1] = {"Checkpoint format (Megatron: emitted by `--emit "
                                    "megatron-args`)"};
    for (int c = 0; c < NCOLUMNS; c++)
        ck[c + 1] = columns[c].ckpt_documented ? columns[c].ckpt_documented : mckpt;
    doc_row(d, ck);
    doc_table_end(d);
}
