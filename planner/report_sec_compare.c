/*
 * report_sec_compare.c — section 2 of `plan report`: FSDP2 and Megatron compared, fixed rows from
 * the framework rules plus the speed and fit computed over the user's models and GPU counts.
 */
#include "report_sections.h"

#include <math.h>
#include <stdio.h>

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
    const char *hdr[] = {"", "FSDP2 (PyTorch `fully_shard` trainer path)",
                         "Megatron (Megatron-Core / Megatron-LM)"};
    doc_table(d, "lll", hdr);
    const char *rows[][3] = {
        {"Model code", "the Hugging Face model, eager PyTorch kernels (the cost model charges "
                       "its unfused elementwise work)",
         "Megatron-Core's model with fused kernels; Hugging Face checkpoints are converted "
         "(section 6)"},
        {"Parallelism", "data parallel (FSDP / HSDP) and Ulysses sequence parallel only: no "
                        "TP, PP or EP",
         "TP (+ sequence parallel), PP (+ interleaved VPP), CP (ring attention), EP (+ expert "
         "TP), DP"},
        {"Data-parallel sharding", "ZeRO-3 (`fully_shard`), HSDP shard group, "
                                   "`reshard_after_forward=False` (ZeRO-2-like)",
         "DDP, distributed optimizer (ZeRO-1), Megatron-FSDP (ZeRO-3, "
         "`optim_grads_params`; not with PP)"},
        {"Activation recompute", "whole layers (activation checkpointing)",
         "selective (attention core) or full (uniform / block)"},
        {"CPU offload", "parameters, gradients and optimizer to the host (pipeline size 1, no "
                        "recompute)",
         "not planned here (the search does not consider it)"},
        {"Checkpoint format", "PyTorch Distributed Checkpoint (DCP) of DTensor shards",
         "`torch_dist`; Megatron-FSDP requires `--ckpt-format fsdp_dtensor` and no other "
         "format"},
        {"Required flags", "-",
         "Megatron-FSDP: `--use-megatron-fsdp --data-parallel-sharding-strategy "
         "optim_grads_params --no-gradient-accumulation-fusion --use-distributed-optimizer "
         "--ckpt-format fsdp_dtensor`; not with `use_tp_pp_dp_mapping`; exclusive with torch "
         "FSDP2"},
        {"Recommended with it", "-",
         "`--calculate-per-token-loss --init-model-with-meta-device --grad-reduce-in-bf16 "
         "--fsdp-double-buffer --use-nccl-ub`, `CUDA_DEVICE_MAX_CONNECTIONS` unset"},
        {"Speed here (computed)", "baseline", speed},
        {"Fit here (computed)", fit_f2, fit_meg},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) doc_row(d, rows[i]);
    doc_table_end(d);
    doc_p(d, "The rules are the ones the planner enforces (DESIGN.md, \"Framework rules\"); "
             "section 4 checks each one against the rule code.");
}

