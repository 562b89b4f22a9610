/*
 * explain.h — the short "why" under a recommendation: which constraint decided the layout and
 * what the alternatives cost, computed from the estimates (no canned text without numbers).
 */
#ifndef PLAN_EXPLAIN_H
#define PLAN_EXPLAIN_H

#include <stdio.h>

#include "search.h"

/* Writes up to `max` bullet lines ("- ...\n") explaining r->ranked[0]. */
void explain_plan(FILE *f, const search_result *r, const model_spec *m, const system_spec *sys,
                  const training_spec *t);

/* "- Tight: ..." when r->ranked[0] needs all but under 5% of the GPU's memory (the memory
 * model's error on real runs reaches that), naming the fastest kept plan with that much room;
 * nothing otherwise. */
/* A plan whose peak is within this share of the GPU's memory is tight, for two measured reasons
 * (EXPLAIN_TIGHT_RISKS): the memory model has missed real peaks by up to 8.0% on one GPU and 6.6%
 * on 2-4 GPUs over every real-run table (bench/realruns fidelity.py, mgpu_fidelity.py;
 * bench/results/memphase17_2026-11-28/tables_after, README "Where the numbers stand"), so it may
 * not fit; and a step that close to the capacity ran 7-8.5% slower than priced, torch's caching
 * allocator releasing and re-allocating its cache (synchronizing) several times a step, not priced
 * (Mistral-7B at 2.4% free of one H200; 8.3% free: -2.0%; bench/results/retry18_2026-11-28). */
#define EXPLAIN_TIGHT_FRACTION 0.05
#define EXPLAIN_TIGHT_RISKS                                                                         \
    "the memory model has missed real peaks by up to 8.0% (one GPU) and 6.6% (2-4 GPUs), and a "   \
    "step this close ran 7-8.5% slower than priced (the allocator freeing and re-allocating its "  \
    "cache, unpriced)"
void explain_tight(FILE *f, const search_result *r);

#endif
