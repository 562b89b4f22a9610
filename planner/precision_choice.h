/*
 * precision_choice.h — the search's precision (issue 16). `plan --model M --gpus N` searches
 * bf16 and the low-precision formats the GPU has tensor cores for (`--precision auto`, the
 * default; `--precision bf16` or another format pins one); this module says which precision
 * the recommended plan runs and what it buys: the same layout in bf16 beside it (or, where
 * bf16 ranked first, the same layout in the framework's default FP8 recipe, or why that
 * layout cannot run FP8), for the text and JSON outputs.
 */
#ifndef PLAN_PRECISION_CHOICE_H
#define PLAN_PRECISION_CHOICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "estimate.h"

/* The formats `--precision auto` searches on sys (a search_options.precisions mask): bf16, and
 * the 8-bit formats (FP8, and MXFP8 where the GPU has it) when the GPU has FP8 tensor cores
 * (peak_fp8_flops: Hopper, Blackwell; the search skips those a GPU or framework cannot run,
 * precision_check); bf16 alone without them (A100). Issue 16 asks auto to search "both bf16
 * and fp8"; NVFP4 (4-bit) is left to an explicit request, because its training recipe changes
 * the numerics beyond what an 8-bit format does (NVIDIA's NVFP4 pretraining recipe keeps
 * layers in higher precision, adds random Hadamard transforms and stochastic rounding: arXiv
 * 2509.25149, section 4), which a planner should not choose on speed alone. */
unsigned precision_choice_auto_mask(const system_spec *sys);

/* `--precision any`: auto's formats plus NVFP4 where the GPU has FP4 tensor cores. */
unsigned precision_choice_any_mask(const system_spec *sys);

typedef struct {
    unsigned searched;     /* the formats the search could run here (mask of 1 << precision) */
    bool pinned;           /* one format was named (--precision bf16|fp8|...) */
    bool chosen_low;       /* the recommended plan runs its Linears in low precision */
    /* The recommended layout in the other precision, by the closed form: bf16 when the
     * recommendation is low precision; the framework's default FP8 recipe when it is bf16. */
    bool have_other;
    estimate other;
    /* bf16 ranked first and its layout cannot run FP8 (or FP8's estimate failed): why */
    char unavailable[CM_ERRLEN];
    /* A recommendation with --fp8-param-gather: the same layout without it. */
    bool have_no_param_gather;
    estimate no_param_gather;
} precision_choice;

/* Fill pc for the recommended plan `best` of a search over `mask` (pinned: one format was
 * named; fp8_recipe: the search's, 0 for each framework's default). The comparison is by the
 * closed form at best's training batch. */
void precision_choice_compare(const model_spec *m, const system_spec *sys, const estimate *best,
                              unsigned mask, bool pinned, layout_fp8_recipe fp8_recipe,
                              precision_choice *pc);

/* Whether the text output says anything: low-precision formats were searched (auto on a GPU
 * with FP8, or a low format pinned). A bf16 pin, or auto on a GPU without FP8, prints what a
 * bf16 search always printed. */
bool precision_choice_worth_saying(const precision_choice *pc);

/* The "Precision:" paragraph of plan's text output (nothing when not worth saying). */
void precision_choice_print(FILE *f, const precision_choice *pc, const estimate *best);

/* {"mode", "searched", "chosen", "label", "compared", "speedup", "unavailable"} for the
 * search's JSON (key "precision"); compared holds the other precision's figures or null. */
json_t *precision_choice_json(const precision_choice *pc, const estimate *best);

#endif
