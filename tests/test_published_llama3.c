/*
 * test_published_llama3.c — `plan estimate` against the three Llama 3 405B pre-training
 * configurations Meta published (tests/data/published_llama3_meta.csv: Dubey et al. 2024, "The
 * Llama 3 Herd of Models", arXiv 2407.21783, Sec. 3.3 and Table 4: 8,192 and 16,384 H100s at
 * TP 8 x PP 16 with DP 64 / 128, and CP 16 at a 128K sequence). The runs are Meta's own stack
 * (neither Megatron nor torchtitan); the rows carry the knobs the paper states, as plan's
 * Megatron path expresses them (--shard-grads for its FSDP that shards optimizer state and
 * gradients), and the one it leaves open, TP communication overlap, as a band. The test prints
 * the table a reader checks against the source, each band's predicted peak memory, and holds
 * the model to today's figures with some room (bench/results/meta405_2026-11-29/README.md has
 * the mechanisms and what is still wrong):
 *
 *   - every row is expressible and banded (the TP overlap is not stated);
 *   - the 8K rows' bands stay within +-12%, issue 15's bar for a row's error (today -1.6..+6.3%
 *     and -0.7..+7.2%; with the distributed optimizer in place of --shard-grads, the only
 *     expression plan had before, +25.5..+38.4% and +28.1..+41.0%, and out of memory);
 *   - the 128K row within -10..+70% (today +48..+56% against the tokens/s derived from the
 *     paper's MFU definition, 6N + 12LHQT; +6..+11% if its attention term were causal-halved);
 *   - the DP 128 runs are predicted to fit with both values of the knob (they ran); the DP 64
 *     one is not today (81.5-84.0 GiB of 79.2), counted and printed as a wrong answer.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "published_runs.h"

#define MAXROWS 8
#define BAND_8K_MAX 0.12   /* the 8K rows' band edges, |error| */
#define BAND_128K_LO -0.10 /* the 128K row's band */
#define BAND_128K_HI 0.70
#define NOT_FIT_MAX 1      /* rows with a knob value predicted not to fit (today 1: DP 64) */

static void test_llama3_meta(void **state)
{
    (void)state;
    static published_row rows[MAXROWS];
    int n = published_runs_price(PUBLISHED_CSV, SOURCE_ROOT, rows, MAXROWS);
    assert_int_equal(n, 3);
    int not_fit = 0;
    for (int i = 0; i < n; i++) {
        const published_row *r = &rows[i];
        assert_true(r->expressible);
        assert_true(r->banded);
        printf("  %-36s peak %.1f..%.1f GiB, %d of %d knob values fit%s\n", r->run_id, r->lo_gib,
               r->hi_gib, r->n_alts_fit, r->n_alts,
               r->n_alts_fit < r->n_alts ? "  PREDICTED NOT TO FIT (it ran)" : "");
        if (r->n_alts_fit < r->n_alts) not_fit++;
        if (strstr(r->run_id, "128k")) {
            assert_true(r->lo_err >= BAND_128K_LO && r->hi_err <= BAND_128K_HI);
        } else {
            assert_true(fabs(r->lo_err) <= BAND_8K_MAX && fabs(r->hi_err) <= BAND_8K_MAX);
        }
    }
    /* the DP 128 runs (16 micro-batches: 128 layer-micro-batches held on stage 1) fit */
    assert_int_equal(rows[1].n_alts_fit, rows[1].n_alts);
    assert_int_equal(rows[2].n_alts_fit, rows[2].n_alts);
    assert_true(not_fit <= NOT_FIT_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_llama3_meta)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
