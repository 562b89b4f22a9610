/*
 * explain.h — the short "why" under a recommendation: which constraint decided the layout and
 * what the alternatives cost, computed from the estimates (no canned text without numbers).
 */
#ifndef PLAN_EXPLAIN_H
#define PLAN_EXPLAIN_H

#include <stdbool.h>
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
/* Where the peak allocated leaves room but torch's reserved peak (memory_breakdown.reserved_bytes
 * + framework_bytes, memory_pools.h) comes within EXPLAIN_TIGHT_FRACTION of the capacity, the
 * caching allocator reaches the GPU's memory, frees its cache and retries (cudaFree and
 * cudaMalloc, synchronizing): measured on one H200, a cut GLM-4.5 (4 layers, s4k; 13% free by
 * allocation, 1.4% by reserved) ran 6 retries and its steps 0.59 s until the cache settled,
 * 0.37-0.40 s after (1.5x; bench/results/ho20_2026-11-29); Mistral-7B at 0.9% free by reserved
 * ran 7-8.5% slower every step (retry18). Not priced: how many steps it takes to settle is not
 * predictable from the sizes alone. */
bool explain_cache_tight(const memory_breakdown *mb);
/* The peak fits but leaves under EXPLAIN_TIGHT_FRACTION of the GPU (the "tight" line). */
bool explain_peak_tight(const memory_breakdown *mb);
#define EXPLAIN_CACHE_TIGHT_RISKS                                                                   \
    "torch's allocator then frees its cache and retries (synchronizing), unpriced: measured steps " \
    "ran 7-8.5% slower (Mistral-7B) and 1.5x slower until the cache settled (GLM-4.5 cut to 4 "     \
    "layers)"
void explain_tight(FILE *f, const search_result *r);

#endif
