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
#include <jansson.h>
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

#include "csv_table.h"
#include "plan_run.h"

/* MoE bounds: today's figures with some room; lower them as bench/README.md "Published Megatron-Bridge runs on H100"'s open
 * mechanisms are modelled */
#define MOE_MEDIAN_MAX 0.40 /* 35% today (72% before the MTP layer and the merged EP-overlap
                               schedule were priced, 2026-11-27) */
#define MOE_MAX_MAX 0.90    /* 82% today (GPT-OSS 120B) */

#define MAXROWS 64
#define CELL 512

static const char *cell(const csv_table *t, int r, const char *name)
{
    if (!csv_table_has_column(t, name)) fail_msg("no column %s in the published-runs file", name);
    return csv_table_cell(t, r, name);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One row through `plan estimate --format json`, with extra options appended: tokens/s per
 * GPU, the predicted peak GiB and whether it fits. */
static void price(const csv_table *t, int r, const char *extra, double *tokens_per_gpu,
                  double *mem_gib, bool *fits)
{
    const char *model = cell(t, r, "model");
    char model_arg[CELL + 64];
    if (strchr(model, '/'))
        snprintf(model_arg, sizeof model_arg, "'%s/%s'", SOURCE_ROOT, model);
    else
        snprintf(model_arg, sizeof model_arg, "%s", model);
    char args[4096];
    snprintf(args, sizeof args,
             "estimate --model %s --gpus %s --system h100 --tp %s --pp %s --cp %s --vpp %s "
             "--ep %s --mbs %s --gbs %s --seq %s %s %s --format json",
             model_arg, cell(t, r, "gpus"), cell(t, r, "tp"), cell(t, r, "pp"), cell(t, r, "cp"),
             cell(t, r, "vp"), cell(t, r, "ep"), cell(t, r, "mbs"), cell(t, r, "gbs"),
             cell(t, r, "seq"), cell(t, r, "plan_args"), extra);
    static plan_run_result res;
    assert_int_equal(plan_run(&res, args), 0);
    if (res.status == 2) fail_msg("%s: plan %s\n%s", cell(t, r, "run_id"), args, res.err);
    json_error_t je;
    json_t *j = json_loads(res.out, 0, &je);
    if (!j) fail_msg("%s: no JSON from plan: %s", cell(t, r, "run_id"), je.text);
    *tokens_per_gpu = json_number_value(json_object_get(j, "tokens_per_s")) / atof(cell(t, r, "gpus"));
    *mem_gib = json_number_value(json_object_get(json_object_get(j, "memory"), "total_bytes")) /
               1073741824.0;
    *fits = json_is_true(json_object_get(j, "fits"));
    json_decref(j);
    assert_true(*tokens_per_gpu > 0);
}

static void test_megatron_bridge_h100(void **state)
{
    (void)state;
    char rerr[256];
    csv_table *tab = csv_table_read(PUBLISHED_CSV, rerr, sizeof rerr);
    if (!tab) fail_msg("%s", rerr);
    int nrows = csv_table_rows(tab);
    assert_true(nrows >= 1 && nrows <= MAXROWS);
    double dense[MAXROWS], moe[MAXROWS];
    int ndense = 0, nmoe = 0, expressed = 0, not_expressible = 0, oom = 0, banded = 0;
    printf("%-38s %-8s %9s %9s %7s %6s  %s\n", "run", "release", "published", "predicted",
           "error", "GiB", "layout (tokens/s/GPU)");
    for (int r = 1; r <= nrows; r++) {
        const char *id = cell(tab, r, "run_id");
        if (strcmp(cell(tab, r, "expressible"), "yes")) {
            printf("%-38s %-8s %9s %9s %7s %6s  not expressible: %s\n", id,
                   cell(tab, r, "release"), cell(tab, r, "tokens_per_s_per_gpu"), "-", "-", "-",
                   cell(tab, r, "note"));
            not_expressible++;
            continue;
        }
        const char *unknown = cell(tab, r, "unknown_args");
        double pub = atof(cell(tab, r, "tokens_per_s_per_gpu"));
        assert_true(pub > 0);
        bool is_moe = !strcmp(cell(tab, r, "kind"), "moe");
        if (unknown[0]) {
            /* a knob the source does not state: the band over its plausible values, kept out
             * of the statistics (no value is picked because it fits) */
            char alts[CELL];
            snprintf(alts, sizeof alts, "%s", unknown);
            double lo = 1e300, hi = -1e300;
            char *save = NULL;
            for (char *a = strtok_r(alts, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
                double pred, gib;
                bool ok;
                price(tab, r, a, &pred, &gib, &ok);
                lo = fmin(lo, pred / pub - 1);
                hi = fmax(hi, pred / pub - 1);
            }
            printf("%-38s %-8s %9.0f %9s %+6.1f%%..%+.1f%%  band over an unstated knob (%s)\n",
                   id, cell(tab, r, "release"), pub, "-", 100 * lo, 100 * hi, unknown);
            banded++;
            continue;
        }
        double pred, mem_gib;
        bool fits;
        price(tab, r, "", &pred, &mem_gib, &fits);
        double err = pred / pub - 1;
        printf("%-38s %-8s %9.0f %9.0f %+6.1f%% %6.1f  tp%s pp%s cp%s vp%s ep%s %s%s\n", id,
               cell(tab, r, "release"), pub, pred, 100 * err, mem_gib, cell(tab, r, "tp"),
               cell(tab, r, "pp"), cell(tab, r, "cp"), cell(tab, r, "vp"), cell(tab, r, "ep"),
               cell(tab, r, "precision"), fits ? "" : "  PREDICTED NOT TO FIT (it ran)");
        if (!fits) oom++;
        if (is_moe) moe[nmoe++] = fabs(err);
        else dense[ndense++] = fabs(err);
        expressed++;
    }
    double dense_max = 0, moe_max = 0;
    for (int i = 0; i < ndense; i++) dense_max = fmax(dense_max, dense[i]);
    for (int i = 0; i < nmoe; i++) moe_max = fmax(moe_max, moe[i]);
    double dense_med = ndense ? median(dense, ndense) : 0, moe_med = nmoe ? median(moe, nmoe) : 0;
    printf("dense rows %d: median |error| %.1f%%, max %.1f%%; MoE rows %d: median %.1f%%, max "
           "%.1f%%; predicted not to fit: %d; banded: %d; not expressible: %d\n",
           ndense, 100 * dense_med, 100 * dense_max, nmoe, 100 * moe_med, 100 * moe_max, oom,
           banded, not_expressible);
    csv_table_free(tab);
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
