/*
 * system_compare.h — "which cluster" (issue 22): the same model on several systems at one GPU
 * count, each with the plan `plan` would recommend there, and what a million trained tokens
 * costs in GPU-hours and money. One place computes the table; `plan compare-systems` prints it
 * as text or CSV and `plan report --systems` puts it in the guide.
 *
 * GPU-hours per million tokens = gpus x (1e6 / tokens_per_s) / 3600; cost = that x the price
 * per GPU-hour the user gives (no price: no cost column). The plan is the one `plan` recommends
 * (the search re-ranked by the step simulator); its step time and tokens per second are the
 * closed-form figures `plan` prints on its "step time" line (tokens = global batch x sequence).
 */
#ifndef PLAN_SYSTEM_COMPARE_H
#define PLAN_SYSTEM_COMPARE_H

#include <stdbool.h>
#include <stdio.h>

#include "estimate.h"
#include "model.h"
#include "system.h"

#define SYSTEM_COMPARE_MAX 16

typedef struct {
    char system[64];            /* the name the user gave */
    char gpu[64];
    int gpus_per_node, domain_gpus;
    double price_per_gpu_hour;  /* 0: not given */
    bool fits;                  /* some layout fits; else best is the closest and why_not says */
    estimate best;              /* the recommended plan (fits) */
    double step_s;              /* its closed-form step time */
    double tokens_per_s;
    double gpu_hours_per_mtok;
    double cost_per_mtok;       /* 0 without a price */
    char why_not[256];          /* when nothing fits: the closest layout's reason */
} system_compare_row;

typedef struct system_compare_table {
    char model[64];             /* the model's name (preset or file) */
    char display[128];          /* its display name */
    int gpus;
    int n;
    system_compare_row rows[SYSTEM_COMPARE_MAX];
} system_compare_table;

/* GPU-hours to train a million tokens at tokens_per_s on gpus GPUs (0 when tokens_per_s <= 0). */
double system_compare_gpu_hours_per_mtok(int gpus, double tokens_per_s);

/* Search m on each of the n systems (names[i] for the table) at gpus GPUs, both frameworks,
 * bf16, re-ranked by the step simulator as `plan` does; prices[i] per GPU-hour (NULL or 0: not
 * given). */
cm_status system_compare_run(const model_spec *m, const training_spec *t, int gpus,
                             const system_spec *systems, const char *const *names,
                             const double *prices, int n, system_compare_table *out, char *err,
                             size_t errlen);
/* The same with each system searched, when low_precision, in bf16 and the low-precision
 * formats its GPU has (precision_choice_auto_mask: what `plan --model M --gpus N --system S`
 * searches by default, issue 16); system_compare_run is this with false (plan report's
 * "Which cluster" compares in bf16, as the rest of the guide). */
cm_status system_compare_run_precision(const model_spec *m, const training_spec *t, int gpus,
                                       const system_spec *systems, const char *const *names,
                                       const double *prices, int n, bool low_precision,
                                       system_compare_table *out, char *err, size_t errlen);

/* The index of the row with the lowest cost per million tokens (by GPU-hours where a price is
 * missing), -1 when nothing fits. */
int system_compare_cheapest(const system_compare_table *tab);
/* The index of the fastest fitting row (highest tokens/s), -1 when nothing fits. */
int system_compare_fastest(const system_compare_table *tab);

/* The layout of a row's plan in one short line ("megatron TP 2 · PP 1 · DP 512 · CP 1 · EP 1"). */
void system_compare_layout(const system_compare_row *row, char *buf, size_t len);

/* The table as aligned text (with the cheapest and fastest named) or as CSV (header + rows). */
void system_compare_print_text(FILE *f, const system_compare_table *tab);
void system_compare_print_csv(FILE *f, const system_compare_table *tab);

#endif
