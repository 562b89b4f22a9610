/*
 * test_published_blackwell.c — `plan estimate` against NVIDIA's published Megatron-Bridge
 * training throughput on Blackwell (tests/data/published_megatron_bridge_blackwell.csv): the
 * dense models (Llama 3 8B/70B, Llama 3.1 405B) on DGX-B200, DGX-GB200 and DGX-GB300 (the
 * 25.11, 26.04.01 and 26.06 containers; the tables hold no dense DGX-B300 row), and the MoE
 * models (DeepSeek-V3, GPT-OSS 120B, Qwen3-30B-A3B, Qwen3-235B-A22B, Kimi-K2) on DGX-B200,
 * DGX-B300, DGX-GB200 and DGX-GB300 (the 25.11, 26.04.01 and 26.06 containers, the 26.08
 * container's DGX-GB200/GB300 rows, and GPT-OSS 120B at EP 64 on DGX-B200 and DGX-B300 from
 * 26.02; rows with kind=moe).
 * Each row carries the knobs of the recipe at its release (the row's note names file and
 * config); the runner is the H100 test's (published_runs.c).
 *
 * Unlike the H100 rows these are not the model's home ground: the Blackwell presets' GEMM
 * rate is a short-burst figure (ml-engineering MAMF), not a sustained one, and plan is
 * optimistic here (bench/README.md "Published Megatron-Bridge runs on Blackwell" has the
 * table, the error per system and precision, and the mechanisms found; "Published
 * Megatron-Bridge MoE runs on Blackwell" the MoE rows'). The test asserts what holds today so
 * that a regression fails, dense and MoE rows apart:
 *   - every priced dense row is predicted to fit (each published run ran); MoE rows predicted
 *     not to fit are counted and held to today's count;
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

#define MAXROWS 128

/* Dense rows: today's figures with some room (bench/README.md "Published Megatron-Bridge runs on
 * Blackwell", 2026-11-28): signed errors -13.9% (405B NVFP4 GB300, 26.04.01) .. +27.8% (70B
 * NVFP4 GB200), median +0.3% over 24 priced rows since prec7 priced TE's measured MXFP8 / NVFP4
 * GEMM rates (bench/results/prec7_2026-11-28; before: -14.2% .. +29.9%, median +4.3%); before
 * that, since the Blackwell presets' burst GEMM and
 * attention rates are derated to the power cap and attention is read from cuDNN's measured
 * table (costmodel/burst_sustain.h; before: -7.9% .. +42.7%, median +13.5%, bounds -0.12 /
 * 0.45 / 0.18). Since bw10 the 25.11 rows price attention at their container's cuDNN 9.13
 * (data/systems/calibration/SYSTEM-cudnn-9.13.json; bench/results/bw10_2026-11-28): range and median
 * unchanged, B200 median +16.8% -> +12.4%. Since bw12 the same profiles carry TE 2.9's scale
 * swizzles before every MXFP8/NVFP4 GEMM (bench/results/bw12_2026-11-28): the 25.11 MXFP8 rows
 * 1.3-1.6 points lower, B200 median +11.6%. Since bw13 Megatron's TP backward without userbuffers
 * runs the column-parallel Linear's input all-gather and dgrad reduce-scatter beside its GEMMs
 * and gathers the output gradient in TE's format (recipe_tp.c tp_nccl_block;
 * bench/results/bw13_2026-11-28): the five NVFP4 rows (no TP overlap in their recipe) move, 405B
 * -13.9..-10.9% -> -10.0..-7.8%, 70B GB200 +27.8 -> +31.5% (range -10.0..+31.5%, median +1.4%).
 * Since nvfp14 TE's NVFP4 casts the SP-gathered operands on their sequence shard and reorders
 * each gathered columnwise copy (precision.c "NVFP4 under SP"; bench/results/nvfp14_2026-11-28):
 * the four 405B NVFP4 rows -10.0..-7.8% -> -8.6..-6.7%, 70B GB200 +31.5 -> +32.5% (range
 * -9.9..+32.5%, median +1.4%).
 * Lower the bounds as the mechanisms there are priced */
#define ERR_MIN -0.17
#define ERR_MAX 0.35
#define MEDIAN_ERR_MAX 0.08

/* MoE rows: today's figures with some room (bench/README.md "Published Megatron-Bridge MoE runs
 * on Blackwell", 2026-11-27); lower them as the mechanisms listed there are priced */
#define MOE_ERR_MIN -0.125      /* -11.8% today (DeepSeek-V3 MXFP8 GB300 26.06, GBS 15360) since
                                   bwmoe23 priced TE's per-expert quantize launches (measured on
                                   H200, mcore_expert_gemm.h: -0.9 points on that row, 8 local
                                   experts; the GB300 rows sit low by the GB300/GB200 split bw21
                                   left unpriced); bound -0.11 and -10.8% before; -10.1% (-9.9%
                                   before moe12 priced the EP A2A overlap's unpaired warm-up and
                                   cool-down steps, estimate.c ep_unpaired_path_s; -8.1% before
                                   later rounds, -6.0% before moe7's HybridEP SMs) */
#define MOE_ERR_MAX 0.65        /* +57.5% today (DeepSeek-V3 MXFP8 B200, 25.11) since bwmoe16 priced
                                   the 25.11 GPT-OSS B200 row at its recipe's EP 64 (+93.7% at the
                                   table's EP 8; bench/results/bwmoe16_2026-11-28); bound 1.70
                                   before; +296% (Qwen3-30B-A3B MXFP8 B200 at MBS 1, 25.11; now
                                   +4.8%) and bound 3.20 before the MoE layer's host time was priced
                                   (mcore_moe_host.h) */
#define MOE_MEDIAN_ERR_MAX 0.16 /* +9.5% today over 47 priced rows since bw2608 added the eight
                                   26.08 rows (same recipes as their 26.06 rows, published 0.4-2.2%
                                   lower: errors +0.4..+2.2 points; bench/results/bw2608_2026-11-28);
                                   +12.8% over 39 before; bound unchanged;
                                   +12.6% over 37 (bound 0.25 before bwmoe16);
                                   +18.5% once the attention block's host time and HybridEP's 32 SMs
                                   were priced (moe7; +21.5% before, bound 0.45; +39.0% before the
                                   MoE host term) */
#define MOE_OOM_MAX 0           /* 0 today since mcmem23: Megatron keeps no routed expert output
                                   for the combine (the probabilities are applied in the experts'
                                   activation; bench/results/mcmem23_2026-11-29); 4 before
                                   (5 and bound 7 before bwmoe16: the 25.11 GPT-OSS B200
                                   row fits at its recipe's EP 64): plan's memory for MoE runs at
                                   MBS 2-8 (see README) */

/* Which field of a row a group is keyed on. */
typedef enum { BY_SYSTEM, BY_PRECISION, BY_MODEL } group_key;

/* The model's short name of a MoE row, from its run id (the part before the precision). */
static const char *moe_model(const published_row *r)
{
    static const char *models[] = {"deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                                   "kimi-k2"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
        if (!strncmp(r->run_id, models[i], strlen(models[i]))) return models[i];
    return "?";
}

/* Median signed error of the priced rows of `kind` whose system, precision or model is `key`
 * (key NULL: all of them); n set to their count, lo/hi to their range. */
static double group_median(const published_row *rows, int nrows, const char *kind,
                           group_key by, const char *key, int *n, double *lo, double *hi)
{
    double v[MAXROWS];
    int k = 0;
    *lo = 1e300;
    *hi = -1e300;
    for (int i = 0; i < nrows; i++) {
        const published_row *r = &rows[i];
        if (!r->priced || strcmp(r->kind, kind)) continue;
        const char *field = by == BY_SYSTEM ? r->system : by == BY_PRECISION ? r->precision : moe_model(r);
        if (key && strcmp(field, key)) continue;
        v[k++] = r->err;
        *lo = fmin(*lo, r->err);
        *hi = fmax(*hi, r->err);
    }
    *n = k;
    return published_median(v, k);
}

static void test_megatron_bridge_blackwell(void **state)
{
    (void)state;
    static published_row rows[MAXROWS];
    int nrows = published_runs_price(PUBLISHED_CSV, SOURCE_ROOT, rows, MAXROWS);
    int oom = 0, moe_oom = 0, banded = 0, not_expressible = 0, moe_banded = 0,
        moe_not_expressible = 0;
    for (int i = 0; i < nrows; i++) {
        const published_row *r = &rows[i];
        bool moe = !strcmp(r->kind, "moe");
        assert_true(moe || !strcmp(r->kind, "dense"));
        if (!r->expressible) moe ? moe_not_expressible++ : not_expressible++;
        if (r->banded) moe ? moe_banded++ : banded++;
        if (r->priced && !r->fits) moe ? moe_oom++ : oom++;
    }
    int n;
    double lo, hi;
    static const char *systems[] = {"b200", "b300", "gb200-nvl72", "gb300-nvl72"};
    static const char *precisions[] = {"fp8-cs", "mxfp8", "nvfp4"};
    for (int s = 0; s < 4; s++) {
        double m = group_median(rows, nrows, "dense", BY_SYSTEM, systems[s], &n, &lo, &hi);
        if (n) printf("dense %-12s rows %2d: median error %+.1f%%\n", systems[s], n, 100 * m);
    }
    for (int p = 0; p < 3; p++) {
        double m = group_median(rows, nrows, "dense", BY_PRECISION, precisions[p], &n, &lo, &hi);
        printf("dense %-12s rows %2d: median error %+.1f%%\n", precisions[p], n, 100 * m);
    }
    double med = group_median(rows, nrows, "dense", BY_SYSTEM, NULL, &n, &lo, &hi);
    int npriced = n;
    printf("dense priced rows %d: median error %+.1f%%, range %+.1f%%..%+.1f%%; banded: %d; not "
           "expressible: %d\n",
           npriced, 100 * med, 100 * lo, 100 * hi, banded, not_expressible);
    assert_true(npriced >= 15);
    assert_true(lo >= ERR_MIN);
    assert_true(hi <= ERR_MAX);
    assert_true(med <= MEDIAN_ERR_MAX);

    /* MoE rows: per system, per model, and each model on each system */
    static const char *models[] = {"deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b"};
    for (int s = 0; s < 4; s++) {
        double m = group_median(rows, nrows, "moe", BY_SYSTEM, systems[s], &n, &lo, &hi);
        printf("moe   %-15s rows %2d: median error %+6.1f%%, range %+6.1f%%..%+6.1f%%\n",
               systems[s], n, 100 * m, 100 * lo, 100 * hi);
    }
    for (int k = 0; k < 4; k++) {
        double m = group_median(rows, nrows, "moe", BY_MODEL, models[k], &n, &lo, &hi);
        printf("moe   %-15s rows %2d: median error %+6.1f%%, range %+6.1f%%..%+6.1f%%\n",
               models[k], n, 100 * m, 100 * lo, 100 * hi);
    }
    double moe_med = group_median(rows, nrows, "moe", BY_SYSTEM, NULL, &n, &lo, &hi);
    int nmoe = n;
    printf("moe   priced rows %d: median error %+.1f%%, range %+.1f%%..%+.1f%%; banded: %d; not "
           "expressible: %d\n",
           nmoe, 100 * moe_med, 100 * lo, 100 * hi, moe_banded, moe_not_expressible);
    printf("predicted not to fit (each ran): dense %d, moe %d\n", oom, moe_oom);
    /* every published run ran: each dense row is predicted to fit (the 405B FP8-CS GB200 rows at
     * TP4 PP16 VP4, 178.4 GiB, fit since gb200-nvl72 takes the capacity the GPU reports, not the
     * rack's label / 72); the MoE rows predicted not to fit are today's count, a known miss
     * (bench/README.md "Published Megatron-Bridge MoE runs on Blackwell") */
    assert_int_equal(oom, 0);
    assert_true(moe_oom <= MOE_OOM_MAX);
    assert_true(nmoe >= 20);
    assert_true(lo >= MOE_ERR_MIN);
    assert_true(hi <= MOE_ERR_MAX);
    assert_true(moe_med <= MOE_MEDIAN_ERR_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_megatron_bridge_blackwell)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
