/*
 * search_stats.h — what each search knob cost (issue 21): for every knob, how many listed
 * layouts take a value other than the plain one (what the knob added to the space), and how
 * many of those went out on memory (not timed), on the lower bound (fit, but could not enter
 * the result) or were timed whole, and (speed23) how many went out on the lower bound before
 * their memory was made. `plan --search-stats` prints it; the JSON output holds it.
 */
#ifndef PLAN_SEARCH_STATS_H
#define PLAN_SEARCH_STATS_H

#include <jansson.h>
#include <stdio.h>

#include "estimate.h"

typedef enum {
    KNOB_TP, KNOB_PP, KNOB_CP, KNOB_EP, KNOB_ETP, KNOB_VPP, KNOB_MBS, KNOB_MBS_WIDE, KNOB_SP_OFF,
    KNOB_DISTOPT, KNOB_FSDP, KNOB_HSDP, KNOB_NO_RESHARD, KNOB_RECOMPUTE_SELECTIVE,
    KNOB_RECOMPUTE_FULL, KNOB_RECOMPUTE_PARTIAL, KNOB_FSDP2_OFFLOAD, KNOB_OPTIMIZER_OFFLOAD,
    KNOB_ACTIVATION_OFFLOAD, KNOB_PRECISION, KNOB_RANK_ORDER, KNOB_OVERLAP, KNOB_COUNT
} search_knob;

/* Indexes of the per-knob counters. */
/* STAT_UNCHECKED: out on the lower bound before the memory was made (search_options
 * bound_first, speed23): whether those fit is not known */
enum { STAT_LISTED, STAT_MEMORY, STAT_BOUND, STAT_TIMED, STAT_UNCHECKED, STAT_KINDS };

typedef struct {
    long layouts[STAT_KINDS];          /* all listed layouts (overlap variants not counted) */
    long knob[KNOB_COUNT][STAT_KINDS]; /* those with the knob on (overlap: the variants) */
    long layer_builds, layer_hits;     /* the layer-cost cache (estimate_search.c) */
} search_stats;

const char *search_knob_name(search_knob k);
/* Counts one listed layout l, searched with n overlap variants, by its outcome. */
void search_stats_count(search_stats *s, const layout *l, int n, estimate_outcome how);
void search_stats_add(search_stats *into, const search_stats *from);

/* search_stats_count deferred (a search counts a million layouts with a few hundred distinct
 * sets of knobs on): layouts tallied by outcome, knobs on and variant count, added into s
 * (search_stats_count's very counts, integer sums in another order) when the tally fills up
 * and at search_stats_tally_flush, which the caller runs before reading s. Starts zeroed. */
enum { SEARCH_STATS_TALLY = 1024 };
typedef struct {
    unsigned long key[SEARCH_STATS_TALLY];
    long count[SEARCH_STATS_TALLY];
    int used;
} search_stats_tally;
void search_stats_tally_count(search_stats_tally *t, search_stats *s, const layout *l, int n,
                              estimate_outcome how);
void search_stats_tally_flush(search_stats_tally *t, search_stats *s);
/* {"layouts": {listed, memory, bound, timed}, "knobs": {name: {...}}, "layer_costs": {built,
 * reused}}: plan's JSON "search.stats". */
json_t *search_stats_json(const search_stats *s);
/* The table, one knob a line, knobs that added nothing left out. */
void search_stats_print(FILE *f, const search_stats *s);

#endif
