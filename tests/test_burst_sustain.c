/*
 * test_burst_sustain.c — burst rates derated to the power cap (costmodel/burst_sustain.h), with
 * numbers checkable by hand: k = ratio x (tdp / ref_power)^(1/3) x ref_clock / max_clock,
 * at most 1, from the B200 reference (flashinfer PR #2899: 1237/1450 = 0.853 at 1000 W and
 * 1965 MHz), and the presets that carry it.
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

#include "burst_sustain.h"
#include "profile.h"
#include "system.h"

static system_spec ref(double tdp_w, double max_clock_mhz)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    s.sustained_ref_ratio = 0.853;
    s.sustained_ref_power_w = 1000;
    s.sustained_ref_clock_mhz = 1965;
    s.tdp_w = tdp_w;
    s.max_sm_clock_mhz = max_clock_mhz;
    return s;
}

static void test_fraction(void **state)
{
    (void)state;
    system_spec s = ref(1000, 1965); /* the reference itself: its own ratio */
    assert_true(fabs(burst_sustain_fraction(&s) - 0.853) < 1e-12);
    s = ref(1200, 2062); /* GB200: 0.853 x 1.2^(1/3) x 1965/2062 = 0.853 x 1.06266 x 0.95296 */
    assert_true(fabs(burst_sustain_fraction(&s) - 0.863807) < 1e-6);
    s = ref(1400, 2070); /* GB300: 0.853 x 1.4^(1/3) x 1965/2070 = 0.853 x 1.11869 x 0.94928 */
    assert_true(fabs(burst_sustain_fraction(&s) - 0.905838) < 1e-6);
    s = ref(8000, 1965); /* 0.853 x 2 = 1.706: never above the burst rate */
    assert_true(burst_sustain_fraction(&s) == 1);
    s = ref(1200, 0); /* no clock to move it with: unchanged */
    assert_true(burst_sustain_fraction(&s) == 1);
    memset(&s, 0, sizeof s); /* no reference: the figures are sustained */
    s.tdp_w = 700;
    assert_true(burst_sustain_fraction(&s) == 1);
}

static void test_apply(void **state)
{
    (void)state;
    system_spec s = ref(1200, 2062);
    s.gemm_efficiency_max = 0.73;
    s.attention_efficiency = 0.5;
    s.attention_rates.n = 1;
    s.attention_rates.p[0].fwd_flops_per_s = 1574e12f;
    s.attention_rates.p[0].bwd_flops_per_s = 1332e12f;
    burst_sustain_apply(&s);
    assert_true(fabs(s.sustained_over_burst - 0.863807) < 1e-6);
    assert_true(fabs(s.gemm_efficiency_max - 0.73 * 0.863807) < 1e-6);    /* 0.63058 */
    assert_true(fabs(s.attention_efficiency - 0.5 * 0.863807) < 1e-6);    /* 0.43190 */
    assert_true(fabs(s.attention_rates.p[0].fwd_flops_per_s / 1e12 - 1359.63) < 0.01);
    assert_true(fabs(s.attention_rates.p[0].bwd_flops_per_s / 1e12 - 1150.59) < 0.01);
}

/* The presets: b200 is the reference (0.78 x 0.853 = 0.66534); gb300's cuDNN causal s 8192
 * forward point 1856 TFLOP/s becomes 1856 x 0.905838 = 1681.2; h100 carries sustained figures
 * and is untouched (0.70). */
static void test_presets(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir) skip();
    char err[CM_ERRLEN];
    system_spec s;
    assert_int_equal(system_load("b200", dir, &s, err, sizeof err), CM_OK);
    assert_true(fabs(s.sustained_over_burst - 0.853) < 1e-12);
    assert_true(fabs(s.gemm_efficiency_max - 0.66534) < 1e-9);
    assert_int_equal(system_load("gb300-nvl72", dir, &s, err, sizeof err), CM_OK);
    assert_true(fabs(s.sustained_over_burst - 0.905838) < 1e-6);
    bool found = false;
    for (int i = 0; i < s.attention_rates.n; i++) {
        const attn_point *p = &s.attention_rates.p[i];
        if (p->head_dim == 128 && p->mask == ATTN_MASK_CAUSAL && fabsf(p->log2_seq - 13) < 1e-6) {
            assert_true(fabs(p->fwd_flops_per_s / 1e12 - 1681.24) < 0.05);
            found = true;
        }
    }
    assert_true(found);
    assert_int_equal(system_load("h100", dir, &s, err, sizeof err), CM_OK);
    assert_true(s.sustained_over_burst == 1);
    assert_true(fabs(s.gemm_efficiency_max - 0.70) < 1e-12);
}

/* The (causal, head dim 128, rows 128, seq 8192) and (no mask, ...) points of a system. */
static void point_8192(const system_spec *s, attn_mask mask, double *fwd_tflops, double *bwd_tflops)
{
    *fwd_tflops = *bwd_tflops = -1;
    for (int i = 0; i < s->attention_rates.n; i++) {
        const attn_point *p = &s->attention_rates.p[i];
        if (p->head_dim == 128 && p->mask == mask && fabsf(p->log2_seq - 13) < 1e-6 &&
            fabsf(p->log2_rows - 7) < 1e-6) {
            *fwd_tflops = p->fwd_flops_per_s / 1e12;
            *bwd_tflops = p->bwd_flops_per_s / 1e12;
        }
    }
}

/* A calibration profile's attention table (data/systems/calibration/b200-cudnn-9.13.json:
 * NVIDIA's cuDNN 9.13.1 measurement on B200, causal s 8192 1384.2 / 994.9 TFLOP/s burst) is
 * derated like the preset's (x 0.853: 1180.72 / 848.65) and replaces only the causal head-dim
 * 128 group: the no-mask point stays the preset's 1687.7 / 1338 x 0.853 = 1439.61 / 1141.31.
 * The same through --calibration (profile_overlay) and through --system PROFILE. */
static void test_profile_attention(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir) skip();
    char err[CM_ERRLEN], path[1024];
    snprintf(path, sizeof path, "%s/systems/calibration/b200-cudnn-9.13.json", dir);
    static system_spec s;
    double f, b;
    for (int via_chain = 0; via_chain < 2; via_chain++) {
        if (via_chain) {
            assert_int_equal(profile_load_system(path, dir, &s, err, sizeof err), CM_OK);
        } else {
            assert_int_equal(system_load("b200", dir, &s, err, sizeof err), CM_OK);
            point_8192(&s, ATTN_MASK_CAUSAL, &f, &b); /* the preset's own, cuDNN 9.22 x clock */
            assert_true(fabs(f - 1500 * 0.853) < 0.05 && fabs(b - 1269.3 * 0.853) < 0.05);
            assert_int_equal(profile_overlay(path, &s, err, sizeof err), CM_OK);
        }
        point_8192(&s, ATTN_MASK_CAUSAL, &f, &b);
        assert_true(fabs(f - 1180.72) < 0.05 && fabs(b - 848.65) < 0.05);
        point_8192(&s, ATTN_MASK_NONE, &f, &b);
        assert_true(fabs(f - 1439.61) < 0.05 && fabs(b - 1141.31) < 0.05);
        assert_true(fabs(s.gemm_efficiency_max - 0.66534) < 1e-9); /* GEMMs untouched */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fraction),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_profile_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
