/*
 * bench_csv.h — the result rows of `plan bench`: one row per (model, framework, layout, system),
 * written and read with libcsv so files from different versions, machines and people compare.
 * The column names are the public schema (issue 5); readers find columns by name.
 */
#ifndef PLAN_BENCH_CSV_H
#define PLAN_BENCH_CSV_H

#include <stdbool.h>
#include <stdio.h>

#include "estimate.h"

typedef struct {
    char model[64];
    double params;
    char framework[16];
    char sharding[16];
    int tp, pp, dp, cp, ep, vpp, mbs, gbs, seq;
    char recompute[16];
    int gpus;
    char system[64];
    double step_s, tokens_per_s, mfu, memory_gib;
    bool feasible;
    double measured_step_s, measured_memory_gib, error_pct; /* NaN when not measured */
    char version[32];
    char precision[24]; /* the Linears' format and recipe ("bf16", "fp8-delayed"; issue 16) */
} bench_row;

/* Fill a row from an estimate (measured fields NaN). */
void bench_row_from_estimate(bench_row *r, const estimate *e, const char *system_name,
                             const char *version);

void bench_csv_write_header(FILE *f);
void bench_csv_write_row(FILE *f, const bench_row *r);

/* Read a results file. Returns the row count (rows malloc'd into *rows, caller frees) or -1
 * with err saying what is wrong (unreadable, not CSV, missing columns, bad numbers). */
int bench_csv_read(const char *path, bench_row **rows, char *err, size_t errlen);

/* Two rows describe the same layout (model, system, gpus, framework, sharding, sizes, seq,
 * gbs, recompute, precision). */
bool bench_row_same_layout(const bench_row *a, const bench_row *b);

/* Same sweep point (model, system, gpus, framework, sharding, seq, gbs): a different layout
 * there means the best layout moved. */
bool bench_row_same_config(const bench_row *a, const bench_row *b);

#endif
