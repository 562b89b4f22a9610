/*
 * test_fp8_shape.c — the FP8 GEMM ratio by shape (issue 16, costmodel/fp8_shape.h): the nearest
 * measured shape in log2 space (m and n either way round, ties to the earlier point, points
 * without the asked ratio skipped), what plan fit builds from a calibrate CSV's rows (medians
 * over rounds, times the peak ratio), a profile carrying the points and refusing bad ones, and
 * the layer recipe's FP8 GEMM priced at its shape's ratio (delayed/tensorwise scaled as the
 * single ratio is; blockwise its own; bf16 untouched). Every expected number is worked in the
 * comments. No GPU.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "compute.h"
#include "fit.h"
#include "fp8_shape.h"
#include "precision.h"
#include "profile.h"
#include "recipe_builder.h"
#include "test_tmp.h"

/* Three points: A 4096x4096x512 (ratio 0.5, no blockwise), B 4096x768x4096 (0.8, 0.7),
 * C 8192x8192x8192 (0.97, 0.86). */
static fp8_shape_table three(void)
{
    fp8_shape_table t = {0};
    assert_true(fp8_shape_add(&t, 4096, 4096, 512, 0.5, 0));
    assert_true(fp8_shape_add(&t, 4096, 768, 4096, 0.8, 0.7));
    assert_true(fp8_shape_add(&t, 8192, 8192, 8192, 0.97, 0.86));
    return t;
}

static void test_nearest(void **state)
{
    (void)state;
    fp8_shape_table t = three();
    double r = 0;
    /* exact shapes */
    assert_true(fp8_shape_ratio(&t, false, 4096, 4096, 512, &r) && r == 0.5);
    assert_true(fp8_shape_ratio(&t, false, 4096, 768, 4096, &r) && r == 0.8);
    /* m and n swapped: the same GEMM to cuBLAS, B's ratio; with F 1024x1024x4096 beside B,
     * 768x4096x4096 is 0 from B swapped but (9.585 - 12)^2 x 2 = 11.7 from B as it stands and
     * (9.585 - 10)^2 + (12 - 10)^2 = 4.2 from F: B only because of the swap */
    assert_true(fp8_shape_ratio(&t, false, 768, 4096, 4096, &r) && r == 0.8);
    fp8_shape_table bf = {0};
    fp8_shape_add(&bf, 4096, 768, 4096, 0.8, 0);
    fp8_shape_add(&bf, 1024, 1024, 4096, 0.3, 0);
    assert_true(fp8_shape_ratio(&bf, false, 768, 4096, 4096, &r) && r == 0.8);
    assert_true(fp8_shape_ratio(&bf, false, 1024, 2048, 4096, &r) && r == 0.3);
    /* 4096x4096x600: log2 600 = 9.229; to A (9.229 - 9)^2 = 0.052; to B (12 - 9.585)^2 +
     * (9.229 - 12)^2 = 5.83 + 7.68 = 13.5; to C 1 + 1 + 14.3: A */
    assert_true(fp8_shape_ratio(&t, false, 4096, 4096, 600, &r) && r == 0.5);
    /* 16384^3: to C 3 x 1 = 3, to A 4 + 4 + 25, to B 4 + 21.5 + 4: C (the edge point) */
    assert_true(fp8_shape_ratio(&t, false, 16384, 16384, 16384, &r) && r == 0.97);
    /* blockwise at A's shape: A has none; B (0 + 5.83 + 9 = 14.8) is nearer than C (1 + 1 +
     * 16 = 18): 0.7 */
    assert_true(fp8_shape_ratio(&t, true, 4096, 4096, 512, &r) && r == 0.7);
    /* a tie goes to the earlier point: 4096x2048x2048 is 1 + 1 = 2 from both D and E */
    fp8_shape_table u = {0};
    fp8_shape_add(&u, 4096, 4096, 2048, 0.6, 0);
    fp8_shape_add(&u, 4096, 2048, 4096, 0.9, 0);
    assert_true(fp8_shape_ratio(&u, false, 4096, 2048, 2048, &r) && r == 0.6);
    /* nothing to give: an empty table, blockwise asked of a table without, a zero size */
    fp8_shape_table e = {0};
    assert_false(fp8_shape_ratio(&e, false, 4096, 4096, 4096, &r));
    assert_false(fp8_shape_ratio(&u, true, 4096, 4096, 4096, &r));
    assert_false(fp8_shape_ratio(&t, false, 0, 4096, 4096, &r));
}

/* plan fit's points: shape a has bf16 rows 2.0, 2.4, 2.2 ms (median 2.2) and FP8 rows 1.2,
 * 1.0, 1.1 ms (median 1.1), so ratio = 2.2 / 1.1 x (989.4 / 1978.8) = 1.0; blockwise rows 1.4,
 * 1.2 (median 1.3): 2.2 / 1.3 x 0.5 = 0.846154. Shape b: bf16 1.0, FP8 0.8 (1.25 x 0.5 =
 * 0.625), no blockwise. Shape c has FP8 rows but no bf16 row: left out. Shape d is blockwise
 * only: bf16 0.9, blockwise 0.6 -> 0.75, no per-tensor ratio. */
static void test_fit_points(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.peak_bf16_flops_per_s = 989.4e12;
    s.peak_fp8_flops_per_s = 1978.8e12;
    fit_gemm_obs bf16[] = {{4096, 4096, 4096, 2.0e-3}, {4096, 1536, 4096, 1.0e-3},
                           {4096, 4096, 4096, 2.4e-3}, {4096, 4096, 4096, 2.2e-3},
                           {4096, 768, 4096, 0.9e-3}};
    fit_gemm_obs fp8[] = {{4096, 4096, 4096, 1.2e-3}, {4096, 1536, 4096, 0.8e-3},
                          {4096, 4096, 4096, 1.0e-3}, {4096, 4096, 4096, 1.1e-3},
                          {4096, 4096, 1024, 0.3e-3}};
    fit_gemm_obs blk[] = {{4096, 4096, 4096, 1.4e-3}, {4096, 4096, 4096, 1.2e-3},
                          {4096, 768, 4096, 0.6e-3}};
    assert_int_equal(fit_apply_fp8_shapes(&s, bf16, 5, fp8, 5, blk, 3), 3);
    const fp8_shape_point *p = s.fp8_gemm_shapes.p;
    assert_true(p[0].m == 4096 && p[0].n == 4096 && p[0].k == 4096);
    assert_true(fabs(p[0].ratio - 1.0) < 1e-12);
    assert_true(fabs(p[0].blockwise_ratio - 2.2 / 1.3 * 0.5) < 1e-12);
    assert_true(p[1].n == 1536 && fabs(p[1].ratio - 0.625) < 1e-12 && p[1].blockwise_ratio == 0);
    assert_true(p[2].n == 768 && p[2].ratio == 0 && fabs(p[2].blockwise_ratio - 0.75) < 1e-12);
    /* a second fit replaces the points */
    assert_int_equal(fit_apply_fp8_shapes(&s, bf16, 2, fp8, 2, NULL, 0), 2);
    /* a system without an FP8 peak gets none */
    s.peak_fp8_flops_per_s = 0;
    assert_int_equal(fit_apply_fp8_shapes(&s, bf16, 5, fp8, 5, blk, 3), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* A profile carries the points (null where a ratio is not measured) and refuses bad ones by
 * name. */
static void test_profile_points(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.gemm_efficiency_max = 0.7;
    s.fp8_gemm_shapes = three();
    char err[CM_ERRLEN];
    const char *p = test_tmp_path("plan_profile_fp8_shape.json");
    assert_int_equal(profile_write(p, &s, NULL, err, sizeof err), CM_OK);
    system_spec r;
    memset(&r, 0, sizeof r);
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_OK);
    assert_int_equal(r.fp8_gemm_shapes.n, 3);
    assert_true(r.fp8_gemm_shapes.p[0].k == 512 && r.fp8_gemm_shapes.p[0].ratio == 0.5 &&
                r.fp8_gemm_shapes.p[0].blockwise_ratio == 0);
    assert_true(r.fp8_gemm_shapes.p[2].m == 8192 && r.fp8_gemm_shapes.p[2].blockwise_ratio == 0.86);
    static const char *const bad[] = {
        "{\"calibration\": {\"fp8_gemm_shapes\": {\"points\": [[4096, 4096, 512, 3.0, null]]}}}",
        "{\"calibration\": {\"fp8_gemm_shapes\": {\"points\": [[4096, 4096, 0.5]]}}}",
        "{\"calibration\": {\"fp8_gemm_shapes\": {\"points\": [[-1, 4096, 512, 0.5, 0.4]]}}}",
        "{\"calibration\": {\"fp8_gemm_shapes\": {\"points\": [[4096, 4096, 512, null, null]]}}}",
        "{\"calibration\": {\"fp8_gemm_shapes\": [[4096, 4096, 512, 0.5, 0.4]]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(p, bad[i]);
        assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_EPARSE);
        assert_non_null(strstr(err, "fp8_gemm_shapes"));
    }
    unlink(p);
}

/* The layer recipe's GEMM: with points, an FP8 GEMM at A's shape is priced at ratio 0.5 (x the
 * recipe's scale: delayed and tensorwise are per-tensor, 1), blockwise at B's 0.7 (A has no
 * blockwise one), a GEMM far from A at its own nearest (C, 0.97); bf16 is not touched. */
static void test_recipe_gemm(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.gpu_name, sizeof s.gpu_name, "H100-SXM5-80GB");
    s.peak_bf16_flops_per_s = 989.4e12;
    s.peak_fp8_flops_per_s = 1978.9e12;
    s.hbm_bandwidth_bytes_per_s = 3.35e12;
    s.hbm_efficiency = 0.9;
    s.gemm_efficiency_max = 0.7;
    s.gemm_overhead_s = 2.5e-6;
    s.fp8_gemm_ratio = 0.95;
    s.fp8_blockwise_gemm_ratio = 0.85;
    s.fp8_gemm_shapes = three();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.precision = PRECISION_FP8;
    builder b = {.sys = &s};
    for (int rec = 0; rec < 2; rec++) {
        l.fp8_recipe = rec ? FP8_RECIPE_TENSORWISE : FP8_RECIPE_DELAYED;
        rb_precision(&b, &l);
        bool blk;
        double scale;
        assert_true(precision_gemm_shape_ratios(&s, &l, &blk, &scale));
        assert_false(blk);
        assert_true(fabs(scale - 1.0) < 1e-12);
        double want = compute_gemm_lp_s(&s, s.peak_fp8_flops_per_s, 0.5, 1.0, 4096, 4096, 512);
        assert_true(fabs(rb_gemm_s(&b, 4096, 4096, 512) - want) < 1e-15);
        want = compute_gemm_lp_s(&s, s.peak_fp8_flops_per_s, 0.97, 1.0, 8192, 16384, 8192);
        assert_true(fabs(rb_gemm_s(&b, 8192, 16384, 8192) - want) < 1e-15);
        /* not the single ratio: 0.5 of it is much slower at A's shape */
        assert_true(rb_gemm_s(&b, 4096, 4096, 512) >
                    1.5 * compute_gemm_lp_s(&s, s.peak_fp8_flops_per_s, 0.95, 1.0, 4096, 4096, 512));
    }
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    rb_precision(&b, &l);
    double want = compute_gemm_lp_s(&s, s.peak_fp8_flops_per_s, 0.7, 1.0, 4096, 4096, 512);
    assert_true(fabs(rb_gemm_s(&b, 4096, 4096, 512) - want) < 1e-15);
    /* without points: the single ratios, as before */
    s.fp8_gemm_shapes.n = 0;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    rb_precision(&b, &l);
    want = compute_gemm_lp_s(&s, s.peak_fp8_flops_per_s, 0.95, 1.0, 4096, 4096, 512);
    assert_true(fabs(rb_gemm_s(&b, 4096, 4096, 512) - want) < 1e-15);
    /* bf16: compute_gemm_s whatever the profile holds */
    s.fp8_gemm_shapes = three();
    layout bf = layout_default(FRAMEWORK_MEGATRON);
    rb_precision(&b, &bf);
    assert_true(rb_gemm_s(&b, 4096, 4096, 512) == compute_gemm_s(&s, 4096, 4096, 512));
    bool blk;
    double scale;
    assert_false(precision_gemm_shape_ratios(&s, &bf, &blk, &scale));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nearest),
        cmocka_unit_test(test_fit_points),
        cmocka_unit_test(test_profile_points),
        cmocka_unit_test(test_recipe_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
