/*
 * test_golden.c — the cost model against every row of ../shared/data/published_runs.csv,
 * each compared under its own FLOP definition (eq. 3 TFLOP/s, Korthikanti MFU, or step time).
 * Prints the error table. Tolerances: see the assertions and bench/README.md.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "golden.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_published_runs(void **state)
{
    (void)state;
    const char *csv = getenv("PLAN_PUBLISHED_RUNS");
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!csv || !dir) skip();
    FILE *probe = fopen(csv, "r");
    if (!probe) {
        printf("no %s (the shared/ folder beside the checkout): golden test skipped\n", csv);
        skip();
    }
    fclose(probe);
    static golden_row rows[64];
    char err[CM_ERRLEN] = "";
    int n = golden_run(csv, dir, rows, 64, err, sizeof err);
    if (n < 0) fail_msg("%s", err);
    printf("%-36s %-7s %9s %9s %7s  %s\n", "run", "metric", "reported", "predicted", "error",
           "layout");
    double abs_err[64];
    int k = 0;
    for (int i = 0; i < n; i++) {
        const golden_row *g = &rows[i];
        const layout *l = &g->est.layout;
        printf("%-36s %-7s %9.3f %9.3f %+6.1f%%  tp%d pp%d dp%d v%d mbs%d %s%s\n", g->run_id,
               g->metric, g->reported, g->predicted, 100 * g->error, l->tp, l->pp, l->dp, l->vpp,
               l->mbs, layout_recompute_name(l->recompute), l->sp ? " sp" : "");
        if (!g->zero3) abs_err[k++] = fabs(g->error);
    }
    qsort(abs_err, k, sizeof *abs_err, cmp);
    double median = k % 2 ? abs_err[k / 2] : 0.5 * (abs_err[k / 2 - 1] + abs_err[k / 2]);
    printf("Megatron rows %d of %d: median |error| %.1f%%, max |error| %.1f%%\n", k, n,
           100 * median, 100 * abs_err[k - 1]);
    assert_int_equal(n, 23); /* every row of the file is usable */
    /* Tolerance over the Megatron rows: issue 15's target, median 7%, no row beyond 15%
     * (2026-11-28: median 5.5%, max 13.9% on the README's GPT-3 row; before the 2021 code's
     * unfused gradient accumulation (costmodel/grad_accum.h) and the attention dropout at the
     * eager rate (layer_recipe.c) were priced: 8.7% and 19.2%, bounds 12% / 25%). The two
     * DeepSpeed ZeRO-3 rows are printed but not asserted: DeepSpeed 2021's ZeRO-3 parameter
     * fetching is far slower than the prefetching FSDP this model describes (bench/README.md
     * "A100 golden rows"). */
    assert_true(median <= 0.07);
    assert_true(abs_err[k - 1] <= 0.15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_published_runs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
