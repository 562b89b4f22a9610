/*
 * golden.h — reads ../shared/data/published_runs.csv (libcsv) and predicts each published run
 * with the cost model, under the row's own FLOP definition. Shared by the golden test and the
 * bench that prints the error table.
 */
#ifndef PLAN_GOLDEN_H
#define PLAN_GOLDEN_H

#include "estimate.h"

typedef struct {
    char run_id[96];
    char metric[16];       /* what the source reported and we compare: "tflops", "mfu", "step_s" */
    bool zero3;            /* DeepSpeed ZeRO-3 rows: reported, but outside the tolerance */
    double reported;
    double predicted;
    double error;          /* (predicted - reported) / reported */
    estimate est;
} golden_row;

/* Fills rows (up to max); returns the count, or -1 with err set. */
int golden_run(const char *csv_path, const char *data_dir, golden_row *rows, int max, char *err,
               size_t errlen);

#endif
