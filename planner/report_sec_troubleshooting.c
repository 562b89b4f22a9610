/*
 * report_sec_troubleshooting.c — section 7 of `plan report`, troubleshooting tied to the
 * plans: memory headroom and which knob frees how much, NCCL timeouts, gradient NaN and
 * max_grad_norm.
 */
#include "report_sections.h"

#include <math.h>
#include <stdio.h>

#include "report_text.h"

#define SRC_TORCH_NCCL "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html"
#define SRC_TORCH_TIMEOUT "https://github.com/pytorch/pytorch/pull/110947"

void report_section_troubleshooting(doc *d, const report *r)
{
    char lay[256];
    doc_h(d, 2, "troubleshooting", "7. Troubleshooting");
    doc_h(d, 3, "headroom", "7.1 Memory headroom, and which knob frees how much");
    doc_p(d, "Headroom is HBM capacity minus the predicted peak of the fullest GPU. The "
             "prediction includes %.1f GB reserved for the CUDA context, cuBLAS and NCCL but "
             "not allocator fragmentation, so keep a few GiB spare. \"Cheapest knob\" frees at "
             "least 1 GiB for the least extra step time.",
          r->sys.framework_reserved_bytes / 1e9);
    const char *hdr[] = {"Model", "GPUs", "Plan", "Memory (GiB)", "Headroom (GiB)",
                         "Cheapest knob"};
    doc_table(d, "lrlrrl", hdr);
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        for (int g = 0; g < r->ngpus; g++) {
            const estimate *e = report_best_of(report_find_point(mr, r->gpus[g]));
            if (!e) continue;
            report_knob k[8];
            int n = report_knob_variants(e, &mr->m, &r->sys, k, 8);
            int b = report_best_knob(e, k, n);
            char c[6][320];
            snprintf(c[0], sizeof c[0], "%s", mr->display_doc);
            snprintf(c[1], sizeof c[1], "%d", e->gpus);
            report_fmt_layout(e, lay, sizeof lay);
            snprintf(c[2], sizeof c[2], "%s %s", report_fw_title(e->layout.framework), lay);
            snprintf(c[3], sizeof c[3], "%.1f", e->memory.total_bytes / UNITS_GIB_BYTES);
            snprintf(c[4], sizeof c[4], "%.1f", report_headroom_gib(e));
            if (b >= 0)
                snprintf(c[5], sizeof c[5], "%s: frees %.1f GiB, %+.1f%% step time", k[b].name,
                         (e->memory.total_bytes - k[b].e.memory.total_bytes) / UNITS_GIB_BYTES,
                         100 * (k[b].e.time.step_s / e->time.step_s - 1));
            else
                snprintf(c[5], sizeof c[5], "none frees 1 GiB or more");
            const char *row[] = {c[0], c[1], c[2], c[3], c[4], c[5]};
            doc_row(d, row);
        }
    }
    doc_table_end(d);

    bool selective_nothing = false;
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const estimate *e = report_primary_plan(r, mr);
        if (!e) continue;
        report_fmt_layout(e, lay, sizeof lay);
        doc_p(d, "**%s**, recommended plan on %d GPUs (%s %s): %.1f GiB used, %.1f GiB "
                 "headroom. Each knob turned alone:",
              mr->display_doc, e->gpus, report_fw_title(e->layout.framework), lay,
              e->memory.total_bytes / UNITS_GIB_BYTES, report_headroom_gib(e));
        report_knob k[8];
        int n = report_knob_variants(e, &mr->m, &r->sys, k, 8);
        const char *kh[] = {"Knob", "Memory (GiB)", "Frees (GiB)", "Step (s)", "Step change"};
        doc_table(d, "lrrrr", kh);
        for (int j = 0; j < n; j++) {
            char c[5][3 * CM_ERRLEN];
            snprintf(c[0], sizeof c[0], "%.95s", k[j].name);
            if (!k[j].valid) {
                char esc[2 * CM_ERRLEN];
                doc_plain(esc, sizeof esc, k[j].why);
                snprintf(c[0], sizeof c[0], "%.95s (not valid here: %s)", k[j].name, esc);
                snprintf(c[1], sizeof c[1], "-");
                c[2][0] = c[3][0] = c[4][0] = '\0';
            } else {
                snprintf(c[1], sizeof c[1], "%.1f%s", k[j].e.memory.total_bytes / UNITS_GIB_BYTES,
                         k[j].e.feasible ? "" : " (does not fit)");
                snprintf(c[2], sizeof c[2], "%+.1f",
                         (e->memory.total_bytes - k[j].e.memory.total_bytes) / UNITS_GIB_BYTES);
                snprintf(c[3], sizeof c[3], "%.2f", k[j].e.time.step_s);
                snprintf(c[4], sizeof c[4], "%+.1f%%",
                         100 * (k[j].e.time.step_s / e->time.step_s - 1));
            }
            const char *row[] = {c[0], c[1], c[2], c[3], c[4]};
            doc_row(d, row);
            if (k[j].valid && e->layout.recompute == RECOMPUTE_NONE &&
                k[j].e.layout.recompute == RECOMPUTE_SELECTIVE &&
                fabs(k[j].e.memory.total_bytes - e->memory.total_bytes) < 0.05 * UNITS_GIB_BYTES)
                selective_nothing = true;
        }
        doc_table_end(d);
    }
    if (selective_nothing)
        doc_p(d, "Selective recompute frees nothing above because the plans use flash "
                 "attention, which already does not store the attention scores (the 5as/h "
                 "term of Korthikanti et al. 2022) that selective recompute drops; it only "
                 "costs time here.");

    doc_h(d, 3, "nccl-timeouts", "7.2 NCCL timeouts");
    doc_p(d, "A collective times out when some rank does not reach it in time: PyTorch's NCCL "
             "watchdog aborts after the process-group timeout (`init_process_group(timeout=...)`; "
             "the NCCL default has been 10 minutes since PyTorch 2.2 [(pytorch#110947)](%s); "
             "Megatron sets it with `--distributed-timeout-minutes`; some launchers expose it as "
             "`NCCL_TIMEOUT`). NCCL's own `NCCL_IB_TIMEOUT` is the InfiniBand retry timeout, a "
             "different thing.",
          SRC_TORCH_TIMEOUT);
    doc_li(d, 0, "**Common causes**: a rank died or hit CUDA OOM and the others wait in the "
                 "next collective (check every rank's log, not rank 0's); ranks disagree on the "
                 "sequence of collectives (different micro-batch counts, a data loader that ran "
                 "out on one rank, a rank-dependent branch); slow work outside collectives on "
                 "some ranks (checkpoint saving, evaluation, dataset index building on the first "
                 "run); network faults (an InfiniBand link flapping, wrong `NCCL_SOCKET_IFNAME` "
                 "or `NCCL_IB_HCA`).");
    doc_li(d, 0, "**To find the rank**: `NCCL_DEBUG=INFO`; PyTorch's flight recorder "
                 "(`TORCH_NCCL_TRACE_BUFFER_SIZE` > 0 with `TORCH_NCCL_DUMP_ON_TIMEOUT=1`) and "
                 "`TORCH_NCCL_DESYNC_DEBUG=1` name the culprit rank [(PyTorch NCCL environment "
                 "variables)](%s).",
           SRC_TORCH_NCCL);
    doc_li(d, 0, "**Your plans** (a healthy step is far below the timeout; what can approach it "
                 "is saving a checkpoint, whose size per GPU is the sharded state below):");
    for (int i = 0; i < r->nmodels; i++) {
        const estimate *e = report_primary_plan(r, &r->models[i]);
        if (!e) continue;
        const layout *l = &e->layout;
        int nodes = (e->gpus + r->sys.gpus_per_node - 1) / r->sys.gpus_per_node;
        double state = (e->memory.weights_bytes + e->memory.optimizer_bytes) / 1e9;
        char extra[256] = "";
        if (l->pp > 1)
            snprintf(extra, sizeof extra, "; PP %d: the last stage waits %.2f s of bubble per "
                                          "step",
                     l->pp, e->time.bubble_s);
        else if (l->ep > 1)
            snprintf(extra, sizeof extra, "; EP %d: a routing imbalance stalls the all-to-all "
                                          "(%.2f s exposed per step predicted)",
                     l->ep, e->time.ep_s);
        doc_li(d, 1, "%s on %d GPUs (%d node%s): %.2f s/step, one micro-batch %.2f s, %.2f s "
                     "of exposed communication; about %.1f GB of weights and optimizer state "
                     "per GPU to save%s.",
               r->models[i].display_doc, e->gpus, nodes, nodes > 1 ? "s" : "", e->time.step_s,
               e->time.microbatch_s, e->time.comm_exposed_s, state, extra);
    }
    doc_list_end(d);

    doc_h(d, 3, "nan", "7.3 Gradient NaN and max_grad_norm");
    doc_li(d, 0, "Clip gradients: Megatron `--clip-grad` (default 1.0); FSDP2 "
                 "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` on the sharded "
                 "(DTensor) gradients; the emitted YAML sets `optimizer_config.max_grad_norm: "
                 "1.0`. A norm that grows steadily before the NaN points at the learning rate "
                 "(warm-up too short, peak too high); a sudden NaN at one step points at a "
                 "batch or at one rank.");
    doc_li(d, 0, "Megatron checks loss and gradients for NaN by default "
                 "(`--check-for-nan-in-loss-and-grad`) and reports the rank; a NaN that always "
                 "appears on the same rank suggests a faulty GPU rather than the model.");
    doc_li(d, 0, "Lower-precision gradient reduction trades speed for accuracy: the "
                 "predictions above reduce gradients in fp32; `--grad-reduce-in-bf16` "
                 "(recommended with Megatron-FSDP) would change your plans' step time as "
                 "follows. If the loss spikes or turns NaN with it, drop it first:");
    for (int i = 0; i < r->nmodels; i++) {
        const estimate *e = report_primary_plan(r, &r->models[i]);
        if (!e || e->layout.framework != FRAMEWORK_MEGATRON) continue;
        estimate v;
        if (!report_grad_reduce_variant(r, &r->models[i].m, e, &v)) continue;
        doc_li(d, 1, "%s (Megatron, DP×CP %d): %.2f → %.2f s/step with bf16 reduction "
                     "(%+.1f%%), %+.1f GiB.",
               r->models[i].display_doc, e->layout.dp * e->layout.cp, e->time.step_s,
               v.time.step_s, 100 * (v.time.step_s / e->time.step_s - 1),
               (v.memory.total_bytes - e->memory.total_bytes) / UNITS_GIB_BYTES);
    }
    doc_list_end(d);
}

