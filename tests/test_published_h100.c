/*
 * test_published_h100.c — `plan estimate` against NVIDIA's published Megatron-Bridge training
 * throughput on DGX-H100 (tests/data/published_megatron_bridge_h100.csv: one row per published
 * configuration, its release, the recipe's knobs as plan options, and whether plan can express
 * it). These are runs the model was never fitted to; the test prints the table a reader checks
 * against the source and holds the model to it:
 *
 *   - every expressible row runs through the command line as a user would type it, and the
 *     tokens/s/GPU error is printed beside the published figure;
 *   - a published run ran, so a row predicted not to fit is a wrong answer, and is counted;
 *   - rows plan cannot express are printed with why, never dropped silently.
 *
 * Tolerances (bench/README.md "Published Megatron-Bridge runs on H100" has the table and the discussion): the dense rows are
 * the model's home ground (median |error| <= 7%, issue 14's bar for published runs, none beyond
 * 12%); the MoE rows carry knobs plan prices only roughly (EP overlap, dispatcher back-ends,
 * recompute module lists) and are held to looser bounds that still catch a regression.
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

/* MoE bounds: today's figures with some room; lower them as bench/README.md "Published Megatron-Bridge runs on H100"'s open
 * mechanisms are modelled */
#define MOE_MEDIAN_MAX 0.20 /* 15.1% today over 15 rows since the attention block's host time
                               is priced beside the MoE block's (moe7, bench/results/
                               moe7_2026-11-28; 27.9% before, bound 0.45; 75.3% before the MoE
                               host term): GPT-OSS 120B +21..+25%, Qwen3-30B-A3B EP 16 +14..+16%;
                               6.9% since bwmoe20 priced HybridEP's measured H100 rates across
                               nodes (network.hybridep_rdma_algbw): Qwen3-30B-A3B EP 16 (2 nodes)
                               +9.3..+11.0% -> +5.6..+7.2% (7.1% before) */
#define MOE_MAX_MAX 0.85    /* 74.8% today (Qwen3-30B-A3B, 26.02: the recipe that ran 1.77x faster
                               in 26.02.01; 116% before, bound 1.30; 234% before the host term) */

#define MAXROWS 64

static void test_megatron_bridge_h100(void **state)
{
    (void)state;
    static published_row rows[MAXROWS];
    int nrows = published_runs_price(PUBLISHED_CSV, SOURCE_ROOT, rows, MAXROWS);
    double dense[MAXROWS], moe[MAXROWS];
    int ndense = 0, nmoe = 0, expressed = 0, not_expressible = 0, oom = 0, banded = 0;
    for (int i = 0; i < nrows; i++) {
        const published_row *r = &rows[i];
        assert_string_equal(r->system, "h100");
        if (!r->expressible) not_expressible++;
        if (r->banded) banded++;
        if (!r->priced) continue;
        if (!r->fits) oom++;
        if (!strcmp(r->kind, "moe")) moe[nmoe++] = fabs(r->err);
        else dense[ndense++] = fabs(r->err);
        expressed++;
    }
    double dense_max = 0, moe_max = 0;
    for (int i = 0; i < ndense; i++) dense_max = fmax(dense_max, dense[i]);
    for (int i = 0; i < nmoe; i++) moe_max = fmax(moe_max, moe[i]);
    double dense_med = published_median(dense, ndense), moe_med = published_median(moe, nmoe);
    printf("dense rows %d: median |error| %.1f%%, max %.1f%%; MoE rows %d: median %.1f%%, max "
           "%.1f%%; predicted not to fit: %d; banded: %d; not expressible: %d\n",
           ndense, 100 * dense_med, 100 * dense_max, nmoe, 100 * moe_med, 100 * moe_max, oom,
           banded, not_expressible);
    assert_true(expressed >= 10);
    /* every published run ran: with its recipe's knobs each is predicted to fit (DeepSeek-V3's
     * 72.6 GiB on stage 1 rests on the experts' inputs saved in FP8, memory.c) */
    assert_int_equal(oom, 0);
    assert_true(ndense >= 5);
    assert_true(dense_med <= 0.07);
    assert_true(dense_max <= 0.12);
    /* MoE: today's median and max with some room (bench/README.md "Published Megatron-Bridge runs on H100"); tighten as the
     * mechanisms listed there are modelled */
    assert_true(moe_med <= MOE_MEDIAN_MAX);
    assert_true(moe_max <= MOE_MAX_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_megatron_bridge_h100)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
