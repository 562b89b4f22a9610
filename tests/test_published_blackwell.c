/*
 * test_published_blackwell.c — `plan estimate` against NVIDIA's published Megatron-Bridge
 * training throughput of the dense models (Llama 3 8B/70B, Llama 3.1 405B) on Blackwell:
 * DGX-B200, DGX-GB200 and DGX-GB300 (tests/data/published_megatron_bridge_blackwell.csv, the
 * 25.11, 26.04.01 and 26.06 containers' rows; the tables hold no dense DGX-B300 row). Each row
 * carries the knobs of the recipe at its release (the row's note names file and config); the
 * runner is the H100 test's (published_runs.c).
 *
 * Unlike the H100 rows these are not the model's home ground: the Blackwell presets' GEMM
 * rate is a short-burst figure (ml-engineering MAMF), not a sustained one, and plan is
 * optimistic here (bench/README.md "Published Megatron-Bridge runs on Blackwell" has the
 * table, the error per system and precision, and the mechanisms found). The test asserts
 * what holds today so that a regression fails:
 *   - every priced row is predicted to fit (each published run ran);
 *   - the signed error of every priced row lies in today's band, and its median too.
 * Tighten the bounds as the mechanisms are priced.
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "published_runs.h"

#define MAXROWS 64

/* today's figures with some room (bench/README.md "Published Megatron-Bridge runs on
 * Blackwell", 2026-11-27): signed errors -8.3% (405B NVFP4 GB200) .. +41.2% (8B MXFP8 GB200),
 * median +13.3% over 24 priced rows; lower the bounds as the mechanisms there are priced */
#define ERR_MIN -0.12
#define ERR_MAX 0.45
#define MEDIAN_ERR_MAX 0.18


/* Median signed error of the priced rows whose system (or precision, if by_precision) is
 * `key`; n set to their count. */
static double group_median(const published_row *rows, int nrows, const char *key,
                           bool by_precision, int *n)
{
    double v[MAXROWS];
    int k = 0;
    for (int i = 0; i < nrows; i++) {
        if (!rows[i].priced) continue;
        if (strcmp(by_precision ? rows[i].precision : rows[i].system, key)) continue;
        v[k++] = rows[i].err;
    }
    *n = k;
    return published_median(v, k);
}

static void test_megatron_bridge_blackwell(void **state)
{
    (void)state;
    static published_row rows[MAXROWS];
    int nrows = published_runs_price(PUBLISHED_CSV, SOURCE_ROOT, rows, MAXROWS);
    double all[MAXROWS];
    int npriced = 0, oom = 0, banded = 0, not_expressible = 0;
    double lo = 1e300, hi = -1e300;
    for (int i = 0; i < nrows; i++) {
        const published_row *r = &rows[i];
        assert_string_equal(r->kind, "dense");
        if (!r->expressible) not_expressible++;
        if (r->banded) banded++;
        if (!r->priced) continue;
        if (!r->fits) oom++;
        all[npriced++] = r->err;
        lo = fmin(lo, r->err);
        hi = fmax(hi, r->err);
    }
    static const char *systems[] = {"b200", "gb200-nvl72", "gb300-nvl72"};
    static const char *precisions[] = {"fp8-cs", "mxfp8", "nvfp4"};
    for (int s = 0; s < 3; s++) {
        int n;
        double m = group_median(rows, nrows, systems[s], false, &n);
        printf("%-12s rows %2d: median error %+.1f%%\n", systems[s], n, 100 * m);
    }
    for (int p = 0; p < 3; p++) {
        int n;
        double m = group_median(rows, nrows, precisions[p], true, &n);
        printf("%-12s rows %2d: median error %+.1f%%\n", precisions[p], n, 100 * m);
    }
    double med = published_median(all, npriced);
    printf("priced rows %d: median error %+.1f%%, range %+.1f%%..%+.1f%%; predicted not to fit: "
           "%d; banded: %d; not expressible: %d\n",
           npriced, 100 * med, 100 * lo, 100 * hi, oom, banded, not_expressible);
    assert_true(npriced >= 15);
    /* every published run ran: each is predicted to fit (the 405B FP8-CS GB200 rows at TP4 PP16
     * VP4, 178.4 GiB, fit since gb200-nvl72 takes the capacity the GPU reports, not the rack's
     * label / 72) */
    assert_int_equal(oom, 0);
    assert_true(lo >= ERR_MIN);
    assert_true(hi <= ERR_MAX);
    assert_true(med <= MEDIAN_ERR_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_megatron_bridge_blackwell)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
