/*
 * report_sec_config.c — section 5 of `plan report`: the recommended plan per model as the
 * trainer YAML of `plan --emit yaml` (and Megatron-LM flags), rendered with emit.h.
 */
#include "report_sections.h"

#include <stdio.h>
#include <stdlib.h>

#include "emit.h"
#include "report_text.h"

void report_section_config(doc *d, const report *r)
{
    doc_h(d, 2, "config", "5. Recommended configuration per model");
    doc_p(d, "The fastest plan at the largest of your GPU counts where the model fits (or, "
             "when it fits at none of them, at the smallest GPU count that fits), as the trainer "
             "YAML of `plan --emit yaml` (and, for Megatron plans, the Megatron-LM flags of "
             "`--emit megatron-args`), folded: click to open. Other GPU counts: the layouts in section 3.");
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const estimate *e = report_primary_plan(r, mr);
        char id[96];
        snprintf(id, sizeof id, "config-%s", mr->m.name);
        doc_h(d, 3, id, "%s", mr->display_doc);
        if (!e) {
            doc_p(d, "Does not fit on any GPU count up to %d: nothing to recommend.", mr->cap);
            continue;
        }
        char lay[256];
        report_fmt_layout(e, lay, sizeof lay);
        doc_p(d, "**%s on %d GPUs** (%s): %.2f s/step, %.0f tokens/s, MFU %.1f%%, %.1f of %.1f "
                 "GiB per GPU (%.1f GiB headroom).",
              report_fw_title(e->layout.framework), e->gpus, lay, e->time.step_s, e->tokens_per_s,
              100 * e->mfu, e->memory.total_bytes / UNITS_GIB_BYTES,
              e->memory.capacity_bytes / UNITS_GIB_BYTES, report_headroom_gib(e));
        emit_context ctx = {.model_ref = mr->m.name};
        char *text = NULL, msg[CM_ERRLEN], esc[2 * CM_ERRLEN];
        if (emit_yaml(e, &mr->m, &r->sys, &ctx, &text, msg, sizeof msg) == CM_OK) {
            /* folded: a reader copies it rather than reads it (the page stays short) */
            doc_details(d, "The trainer YAML (`plan --emit yaml`; check it with `plan check`)",
                        "yaml", text);
        } else {
            doc_plain(esc, sizeof esc, msg);
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

