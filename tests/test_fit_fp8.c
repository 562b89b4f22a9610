/*
 * test_fit_fp8.c — FP8 GEMM calibration (issue 16): plan calibrate's gemm_fp8 rows are read
 * apart from the bf16 ones, the FP8 roofline fit recovers a known efficiency (fixed cost held at
 * bf16's), the ratio of the two efficiencies and its propagated sd are what a hand computes, a
 * profile carries the ratio and refuses a bad one, and precision_gemm_ratio takes it for FP8
 * (blockwise scaled by its measured cost over per-tensor). Blockwise FP8 (gemm_fp8_blockwise
 * rows): read into their own list, fitted to their own ratio, carried by a profile as
 * fp8_blockwise_gemm, and taken by --fp8-recipe blockwise alone. No GPU.
 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "calib_csv.h"
#include "compute.h"
#include "fit.h"
#include "precision.h"
#include "profile.h"
#include "test_tmp.h"

static system_spec base(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "synthetic");
    s.peak_bf16_flops_per_s = 989.4e12;
    s.peak_fp8_flops_per_s = 1978.9e12;
    s.hbm_bandwidth_bytes_per_s = 3.35e12;
    s.hbm_efficiency = 0.9;
    s.gemm_efficiency_max = 0.5; /* start far from the truth */
    return s;
}

/* Truth: FP8 at 0.66 of the FP8 peak with a 6 us fixed cost; 2% noise, fixed seed. */
static void test_fp8_fit_recovers(void **state)
{
    (void)state;
    system_spec truth = base();
    truth.gemm_efficiency_max = 0.66;
    truth.gemm_overhead_s = 6e-6;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 16);
    fit_gemm_obs obs[40];
    int n = 0;
    for (int a = 256; a <= 16384 && n < 40; a *= 2)
        for (int b = 1024; b <= 8192 && n < 40; b *= 2) {
            double t = compute_gemm_lp_s(&truth, truth.peak_fp8_flops_per_s, 1.0, 1.0, a, b, 4096);
            obs[n++] = (fit_gemm_obs){a, b, 4096, t * (1 + gsl_ran_gaussian(rng, 0.02))};
        }
    gsl_rng_free(rng);
    system_spec s = base();
    fit_gemm_result r;
    char err[CM_ERRLEN];
    assert_int_equal(fit_gemm_fp8(&s, obs, n, 6e-6, &r, err, sizeof err), CM_OK);
    printf("  fp8 efficiency %.4f +- %.4f (truth 0.66), rms %.3f\n", r.efficiency,
           r.efficiency_sd, r.rms_rel_residual);
    assert_true(fabs(r.efficiency - 0.66) < 0.01);
    assert_true(r.overhead_s == 6e-6 && r.overhead_sd == 0); /* held, not fitted */
    assert_true(r.rms_rel_residual > 0.01 && r.rms_rel_residual < 0.03);
    /* no FP8 peak: a clear error */
    s.peak_fp8_flops_per_s = 0;
    assert_int_equal(fit_gemm_fp8(&s, obs, n, 6e-6, &r, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "peak_fp8_flops"));
}

/* ratio = 0.72 / 0.80 = 0.9; sd = 0.9 sqrt(0.01^2 + 0.01^2) = 0.0127279 */
static void test_fp8_ratio(void **state)
{
    (void)state;
    system_spec s = base();
    fit_gemm_result bf = {.efficiency = 0.80, .efficiency_sd = 0.008};
    fit_gemm_result f8 = {.efficiency = 0.72, .efficiency_sd = 0.0072};
    fit_apply_fp8_ratio(&s, &bf, &f8);
    assert_true(fabs(s.fp8_gemm_ratio - 0.9) < 1e-12);
    assert_true(fabs(s.fp8_gemm_ratio_sd - 0.0127279) < 1e-6);
    /* precision_gemm_ratio: the calibrated ratio for per-tensor FP8, blockwise keeps its
     * measured cost over per-tensor (0.8265 / 0.9135), bf16 stays 1 */
    snprintf(s.gpu_name, sizeof s.gpu_name, "H100-SXM5-80GB");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    assert_true(precision_gemm_ratio(&s, &l) == 1.0);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_DELAYED;
    assert_true(fabs(precision_gemm_ratio(&s, &l) - 0.9) < 1e-12);
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_true(fabs(precision_gemm_ratio(&s, &l) - 0.9) < 1e-12);
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    assert_true(fabs(precision_gemm_ratio(&s, &l) - 0.9 * 0.8265 / 0.9135) < 1e-12);
    assert_non_null(strstr(precision_gemm_ratio_source(&s), "calibrated"));
    /* uncalibrated: the measured table (H100 per-tensor 0.9135) */
    s.fp8_gemm_ratio = 0;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_true(fabs(precision_gemm_ratio(&s, &l) - 0.9135) < 1e-12);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* gemm_fp8 rows go to their own list; the bf16 and collective rows as before */
static void test_csv_fp8_rows(void **state)
{
    (void)state;
    const char *p = test_tmp_path("plan_calib_fp8.csv");
    write_text(p, "op,dtype,name,m,n,k,bytes,group_size,span,time_s\n"
                  "gemm,bf16,a,4096,4096,4096,1,1,intra,2.0e-4\n"
                  "gemm_fp8,e4m3,a,4096,4096,4096,1,1,intra,1.1e-4\n"
                  "gemm,bf16,b,8192,8192,8192,1,1,intra,1.6e-3\n"
                  "gemm_fp8,e4m3,b,8192,8192,8192,1,1,intra,8.5e-4\n"
                  "gemm_fp8,e4m3,c,4096,1536,4096,1,1,intra,4.5e-5\n"
                  "all_reduce,bf16,,0,0,0,1048576,2,intra,2.0e-5\n");
    calib_csv r;
    char err[CM_ERRLEN];
    assert_int_equal(calib_csv_read(p, &r, err, sizeof err), CM_OK);
    assert_int_equal(r.ngemm, 2);
    assert_int_equal(r.ngemm_fp8, 3);
    assert_int_equal(r.ncolls, 1);
    assert_true(r.gemm[1].m == 8192 && r.gemm[1].time_s == 1.6e-3);
    assert_true(r.gemm_fp8[2].n == 1536 && r.gemm_fp8[2].time_s == 4.5e-5);
    calib_csv_free(&r);
    unlink(p);
}

/* A profile carries the ratio and its sd; a ratio outside (0, 2] is refused by name. */
static void test_profile_fp8(void **state)
{
    (void)state;
    system_spec s = base();
    s.gemm_efficiency_max = 0.7;
    s.fp8_gemm_ratio = 0.955;
    s.fp8_gemm_ratio_sd = 0.012;
    char err[CM_ERRLEN];
    const char *p = test_tmp_path("plan_profile_fp8.json");
    assert_int_equal(profile_write(p, &s, NULL, err, sizeof err), CM_OK);
    system_spec r = base();
    assert_true(r.fp8_gemm_ratio == 0);
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_OK);
    assert_true(r.fp8_gemm_ratio == 0.955 && r.fp8_gemm_ratio_sd == 0.012);
    /* a profile without the section leaves an earlier ratio alone; no ratio is not written */
    s.fp8_gemm_ratio = 0;
    assert_int_equal(profile_write(p, &s, NULL, err, sizeof err), CM_OK);
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_OK);
    assert_true(r.fp8_gemm_ratio == 0.955);
    write_text(p, "{\"calibration\": {\"fp8_gemm\": {\"ratio\": 3.0}}}");
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "fp8_gemm"));
    write_text(p, "{\"calibration\": {\"fp8_gemm\": {\"ratio\": 0.9, \"ratio_sd\": -1}}}");
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_EPARSE);
    unlink(p);
}

/* Blockwise: rows of their own, a ratio of their own (0.62 / 0.75 = 0.826667, sd from 0.0124
 * and 0.015: 0.826667 * sqrt(0.02^2 + 0.02^2) = 0.0233812), a profile section of their own,
 * and precision_gemm_ratio gives it to the blockwise recipe only. */
static void test_fp8_blockwise(void **state)
{
    (void)state;
    const char *p = test_tmp_path("plan_calib_fp8_block.csv");
    write_text(p, "op,dtype,name,m,n,k,bytes,group_size,span,time_s\n"
                  "gemm,bf16,a,4096,4096,4096,1,1,intra,2.0e-4\n"
                  "gemm_fp8,e4m3,a,4096,4096,4096,1,1,intra,1.1e-4\n"
                  "gemm_fp8_blockwise,e4m3,a,4096,4096,4096,1,1,intra,1.3e-4\n"
                  "gemm_fp8_blockwise,e4m3,b,4096,1536,4096,1,1,intra,6.0e-5\n");
    calib_csv c;
    char err[CM_ERRLEN];
    assert_int_equal(calib_csv_read(p, &c, err, sizeof err), CM_OK);
    assert_int_equal(c.ngemm, 1);
    assert_int_equal(c.ngemm_fp8, 1);
    assert_int_equal(c.ngemm_fp8_block, 2);
    assert_true(c.gemm_fp8_block[1].n == 1536 && c.gemm_fp8_block[1].time_s == 6.0e-5);
    calib_csv_free(&c);

    system_spec s = base();
    fit_gemm_result bf16 = {.efficiency = 0.75, .efficiency_sd = 0.015};
    fit_gemm_result blk = {.efficiency = 0.62, .efficiency_sd = 0.0124};
    fit_apply_fp8_blockwise_ratio(&s, &bf16, &blk);
    assert_true(fabs(s.fp8_blockwise_gemm_ratio - 0.62 / 0.75) < 1e-12);
    assert_true(fabs(s.fp8_blockwise_gemm_ratio_sd - 0.0233812) < 1e-6);
    assert_true(s.fp8_gemm_ratio == 0); /* the per-tensor ratio is not touched */

    s.fp8_gemm_ratio = 0.95;
    p = test_tmp_path("plan_profile_fp8_block.json");
    assert_int_equal(profile_write(p, &s, NULL, err, sizeof err), CM_OK);
    system_spec r = base();
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_OK);
    assert_true(fabs(r.fp8_blockwise_gemm_ratio - s.fp8_blockwise_gemm_ratio) < 1e-9);
    assert_true(fabs(r.fp8_blockwise_gemm_ratio_sd - s.fp8_blockwise_gemm_ratio_sd) < 1e-9);
    assert_true(fabs(r.fp8_gemm_ratio - 0.95) < 1e-9);
    snprintf(r.gpu_name, sizeof r.gpu_name, "H100-SXM5-80GB");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    assert_true(fabs(precision_gemm_ratio(&r, &l) - 0.62 / 0.75) < 1e-9);
    assert_non_null(strstr(precision_gemm_ratio_source(&r), "fp8_blockwise_gemm"));
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_true(fabs(precision_gemm_ratio(&r, &l) - 0.95) < 1e-9);
    l.fp8_recipe = FP8_RECIPE_DELAYED;
    assert_true(fabs(precision_gemm_ratio(&r, &l) - 0.95) < 1e-9);
    write_text(p, "{\"calibration\": {\"fp8_blockwise_gemm\": {\"ratio\": 0}}}");
    assert_int_equal(profile_overlay(p, &r, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "fp8_blockwise_gemm"));
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_fit_recovers),
        cmocka_unit_test(test_fp8_ratio),
        cmocka_unit_test(test_csv_fp8_rows),
        cmocka_unit_test(test_profile_fp8),
        cmocka_unit_test(test_fp8_blockwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
