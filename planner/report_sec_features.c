/*
 * report_sec_features.c — section 4 of `plan report`: the feature-support matrix, each cell a
 * probe layout checked against the planner's rule code, with how often the searches used it.
 */
#include "report_sections.h"

#include <stdio.h>

void report_section_features(doc *d, const report *r)
{
    doc_h(d, 2, "features", "4. Feature-support matrix");
    doc_p(d, "Each row is a probe layout (on 64 GPUs, an MoE model of Mixtral-8x7B's shape) "
             "passed through the planner's rule check (`layout_check`): a \"no\" quotes the "
             "rule. \"searched\" counts the layouts with that feature the searches of this "
             "report evaluated, so a rule the search never exercises shows as \"not searched\".");
    /* issue 19: torchtitan's column is its rule check alone (section 2b searches it at your
     * GPU counts only, so there is no count to give) */
    const char *hdr[] = {"Feature", "FSDP2", "Megatron", "torchtitan"};
    doc_table(d, "llll", hdr);
    for (int f = 0; f < REPORT_NFEATURES; f++) {
        char cells[3][2 * CM_ERRLEN + 64];
        for (int fw = 0; fw < 3; fw++) {
            char err[CM_ERRLEN], esc[2 * CM_ERRLEN];
            cm_status st = report_feature_check(r, f, (layout_framework)fw, err, sizeof err);
            if (st == CM_OK && fw == FRAMEWORK_TORCHTITAN) {
                snprintf(cells[fw], sizeof cells[fw], "**yes**");
            } else if (st == CM_OK) {
                long n = r->feat_count[fw][f];
                if (n) snprintf(cells[fw], sizeof cells[fw], "**yes** (searched: %ld layouts)", n);
                else snprintf(cells[fw], sizeof cells[fw], "**yes** (not searched)");
            } else {
                doc_plain(esc, sizeof esc, err);
                snprintf(cells[fw], sizeof cells[fw], "no: %s", esc);
            }
        }
        const char *row[] = {report_feature_name[f], cells[0], cells[1], cells[2]};
        doc_row(d, row);
    }
    const char *ck[] = {"Checkpoint format (documented, not checked)",
                        "PyTorch DCP (`torch.distributed.checkpoint`)",
                        "`torch_dist`; `fsdp_dtensor` with Megatron-FSDP",
                        "PyTorch DCP (torchtitan/components/checkpointer)"};
    doc_row(d, ck);
    doc_table_end(d);
}

