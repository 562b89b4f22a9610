/*
 * test_fit.c — the calibration fits recover known parameters from synthetic measurements with
 * noise; a profile round-trips through its JSON; bad profiles give clear errors.
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

#include "compute.h"
#include "fit.h"
#include "profile.h"
#include "test_tmp.h"

static system_spec base(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "synthetic");
    s.peak_bf16_flops_per_s = 989.4e12;
    s.hbm_bandwidth_bytes_per_s = 3.35e12;
    s.hbm_efficiency = 0.9;
    s.gemm_efficiency_max = 0.5; /* start far from the truth */
    s.gemm_overhead_s = 0;
    return s;
}

/* Truth: efficiency 0.72, overhead 6 us; 2% multiplicative noise, fixed seed. */
static void test_gemm_fit_recovers(void **state)
{
    (void)state;
    system_spec truth = base();
    truth.gemm_efficiency_max = 0.72;
    truth.gemm_overhead_s = 6e-6;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42);
    fit_gemm_obs obs[40];
    int n = 0;
    for (int a = 256; a <= 16384; a *= 2)
        for (int b = 1024; b <= 8192; b *= 2) {
            if (n == 40) break;
            double t = compute_gemm_s(&truth, a, b, 4096);
            obs[n++] = (fit_gemm_obs){a, b, 4096, t * (1 + gsl_ran_gaussian(rng, 0.02))};
        }
    gsl_rng_free(rng);
    system_spec s = base();
    fit_gemm_result r;
    char err[CM_ERRLEN];
    assert_int_equal(fit_gemm(&s, obs, n, &r, err, sizeof err), CM_OK);
    printf("  efficiency %.4f +- %.4f (truth 0.72), overhead %.2f +- %.2f us (truth 6), rms %.3f\n",
           r.efficiency, r.efficiency_sd, r.overhead_s * 1e6, r.overhead_sd * 1e6,
           r.rms_rel_residual);
    assert_true(fabs(r.efficiency - 0.72) < 0.01);
    assert_true(fabs(r.efficiency - 0.72) < 4 * r.efficiency_sd + 1e-3);
    assert_true(fabs(r.overhead_s - 6e-6) < 2e-6);
    assert_true(r.rms_rel_residual > 0.01 && r.rms_rel_residual < 0.03); /* ~ the 2% noise */
}

/* Truth: alpha 22 us, busbw 340 GB/s (all-reduce, 4 GPUs); 3% noise; 1 KiB .. 1 GiB. */
static void test_collective_fit_recovers(void **state)
{
    (void)state;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    fit_collective_obs obs[16];
    int n = 0;
    for (double b = 1024; b <= 1073741824.0; b *= 4) {
        double t = 22e-6 + b * 1.5 / 340e9;
        obs[n++] = (fit_collective_obs){b, t * (1 + gsl_ran_gaussian(rng, 0.03))};
    }
    gsl_rng_free(rng);
    system_collective_fit f;
    char err[CM_ERRLEN];
    assert_int_equal(fit_collective(COLL_ALL_REDUCE, 4, false, obs, n, &f, err, sizeof err), CM_OK);
    printf("  alpha %.2f +- %.2f us (truth 22), busbw %.1f +- %.1f GB/s (truth 340)\n",
           f.alpha_s * 1e6, f.alpha_sd * 1e6, f.busbw_bytes_per_s / 1e9, f.busbw_sd / 1e9);
    assert_true(fabs(f.alpha_s - 22e-6) < 2e-6);
    assert_true(fabs(f.busbw_bytes_per_s - 340e9) / 340e9 < 0.05);
    assert_true(f.busbw_sd > 0 && f.alpha_sd > 0);
    /* too few sizes */
    assert_int_equal(fit_collective(COLL_ALL_REDUCE, 4, false, obs, 2, &f, err, sizeof err),
                     CM_EINVAL);
    assert_non_null(strstr(err, "at least 3 message sizes"));
}

/* A fitted profile written and read back gives the same system and the same collective
 * times; a fitted collective replaces the alpha-beta model for its group. */
static void test_profile_round_trip(void **state)
{
    (void)state;
    system_spec s = base();
    s.gemm_efficiency_max = 0.71;
    s.gemm_overhead_s = 5e-6;
    s.gemm_efficiency_sd = 0.004;
    s.gpus_per_node = 4;
    s.intra_bandwidth_bytes_per_s = 450e9;
    s.intra_busbw_efficiency = 0.8;
    system_collective_fit f = {COLL_ALL_GATHER, 4, 0, 20e-6, 1e-6, 300e9, 5e9, 0.02, 12};
    char err[CM_ERRLEN];
    assert_int_equal(fit_apply_collective(&s, &f, err, sizeof err), CM_OK);
    char path[] = "/tmp/plan_profile_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(profile_write(path, &s, NULL, err, sizeof err), CM_OK);
    system_spec r = base();
    r.gpus_per_node = 4;
    r.intra_bandwidth_bytes_per_s = 450e9;
    r.intra_busbw_efficiency = 0.8;
    assert_int_equal(profile_overlay(path, &r, err, sizeof err), CM_OK);
    assert_true(r.gemm_efficiency_max == 0.71 && r.gemm_overhead_s == 5e-6);
    assert_true(r.gemm_efficiency_sd == 0.004);
    assert_int_equal(r.n_collective_fits, 1);
    assert_true(r.collective_fits[0].busbw_bytes_per_s == 300e9);
    layout_group g = layout_group_place(&r, 4, 1);
    /* 20 us + 1e9 * 3/4 / 300e9 = 2.52 ms, not the alpha-beta model's 360 GB/s figure */
    assert_true(fabs(collective_time_s(&r, COLL_ALL_GATHER, 1e9, g) - 0.00252) < 1e-12);
    /* other ops keep the model */
    assert_true(fabs(collective_time_s(&r, COLL_REDUCE_SCATTER, 1e9, g) - 0.75e9 / 360e9) < 1e-9);
    unlink(path);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_bad_profiles(void **state)
{
    (void)state;
    system_spec s = base();
    char err[CM_ERRLEN];
    const char *p = test_tmp_path("plan_bad_profile.json");
    write_text(p, "{\"calibration\": {\"collectives\": [{\"op\": \"all_shuffle\", \"group_size\": 4, "
                  "\"span\": \"intra\", \"alpha_s\": 1e-5, \"busbw_bytes_per_s\": 3e11}]}}");
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "no known \"op\""));
    write_text(p, "{\"calibration\": {\"collectives\": [{\"op\": \"all_reduce\", \"group_size\": 4, "
                  "\"span\": \"intra\", \"alpha_s\": 1e-5, \"busbw_bytes_per_s\": -3}]}}");
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "busbw_bytes_per_s"));
    write_text(p, "{\"gpu\": {\"gemm_efficiency_max\": 7}}");
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "sane range"));
    write_text(p, "{\"calibration\": [1, 2]}");
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_EPARSE);
    write_text(p, "{ not json");
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "not valid JSON"));
    unlink(p);
}

/* --system PROFILE: a profile naming the preset it overlays loads as that preset plus the
 * profile (data/systems/calibration/ holds the measured H200 one). */
static void test_profile_as_system(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir) skip();
    char path[1024], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/systems/calibration/h200-x4-2026-11-21.json", dir);
    system_spec base, prof;
    assert_int_equal(system_load("h200-x4", dir, &base, err, sizeof err), CM_OK);
    assert_int_equal(profile_load_system(path, dir, &prof, err, sizeof err), CM_OK);
    assert_true(prof.peak_bf16_flops_per_s == base.peak_bf16_flops_per_s); /* from the preset */
    assert_int_equal(base.n_collective_fits, 0);
    assert_true(prof.n_collective_fits >= 10);                 /* from the profile */
    assert_non_null(strstr(prof.name, "h200-x4+"));
    const char *p = test_tmp_path("plan_bad_base.json");
    write_text(p, "{\"calibration_of\": \"nosuch\"}");
    assert_int_equal(profile_load_system(p, dir, &prof, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "unknown system 'nosuch'"));
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_fit_recovers),
        cmocka_unit_test(test_collective_fit_recovers),
        cmocka_unit_test(test_profile_round_trip),
        cmocka_unit_test(test_bad_profiles),
        cmocka_unit_test(test_profile_as_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
