/*
 * published_runs.h — runs a table of published Megatron-Bridge training runs through
 * `plan estimate` as a user would type it, row by row, and prints the table a reader checks
 * against the source (tests/test_published_h100.c, tests/test_published_blackwell.c). Each
 * row names its system preset (column `system`), its layout, the recipe's knobs as plan
 * options (`plan_args`), the alternatives of a knob the source leaves open (`unknown_args`,
 * priced as a band and kept out of the statistics) and whether plan can express it at all.
 * The callers hold the model to their own bounds.
 */
#ifndef PLAN_TESTS_PUBLISHED_RUNS_H
#define PLAN_TESTS_PUBLISHED_RUNS_H

#include <stdbool.h>

typedef struct {
    char run_id[96];
    char system[48];
    char precision[16];
    char kind[8];          /* dense | moe */
    bool priced;           /* expressible, every knob stated: err and fits are set */
    bool banded;           /* a knob unstated: lo_err..hi_err over its values */
    bool expressible;
    double published_tokens_per_gpu;
    double predicted_tokens_per_gpu;
    double err;            /* predicted / published - 1 */
    double lo_err, hi_err;
    double mem_gib;
    bool fits;
    /* banded rows: the predicted peak GiB over the knob's values, and how many of them fit */
    double lo_gib, hi_gib;
    int n_alts, n_alts_fit;
} published_row;

/* Reads csv_path (columns as tests/data/published_megatron_bridge_h100.csv), prices every
 * row through the CLI (fails the cmocka test on an error), prints the table and fills
 * rows[0..n-1]; returns n. source_root resolves model paths relative to the repository. */
int published_runs_price(const char *csv_path, const char *source_root, published_row *rows,
                         int maxrows);

/* Median of v[0..n-1] (v is sorted in place); 0 for n == 0. */
double published_median(double *v, int n);

#endif
