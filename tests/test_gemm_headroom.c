/*
 * test_gemm_headroom.c — the GEMM power-headroom rate (costmodel/gemm_headroom.h) against numbers
 * worked by hand, and its use in a priced step.
 *
 * With exponent 1/2 the rate's equation r^(1/beta) = 1 + u r is a quadratic, r = (u + sqrt(u^2 +
 * 4)) / 2, u = [(1 - P_mem/P_cap) M + (1 - P_idle/P_cap) I] / G. The h100 preset's own figures
 * (0.39, 410 W, 121 W, 1.16) are checked at two points worked by hand by fixed-point iteration.
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

#include "estimate.h"
#include "estimate_internal.h"
#include "gemm_headroom.h"
#include "model.h"
#include "system.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

/* 700 W cap, idle 140 W (0.8 of the cap spare), memory-bound 350 W (0.5 spare), exponent 1/2,
 * burst 2 */
static system_spec toy(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    s.peak_bf16_flops_per_s = 1e15;
    s.gemm_efficiency_max = 0.7;
    s.tdp_w = 700;
    s.idle_power_w = 140;
    s.memory_bound_power_w = 350;
    s.gemm_power_exponent = 0.5;
    s.gemm_burst_ratio = 2;
    s.gemm_headroom_on = true;
    return s;
}

static void test_rate_by_hand(void **state)
{
    (void)state;
    system_spec s = toy();
    /* memory-bound 0.6 s per GEMM second: u = 0.5 x 0.6 = 0.3, r = (0.3 + sqrt(4.09)) / 2 */
    assert_true(fabs(gemm_headroom_rate(&s, 1, 0.6, 0) - 1.1611874) < 1e-6);
    /* idle 0.5 s: u = 0.8 x 0.5 = 0.4, r = (0.4 + sqrt(4.16)) / 2 = 1.2198039 */
    assert_true(fabs(gemm_headroom_rate(&s, 1, 0, 0.5) - 1.2198039) < 1e-6);
    /* both, scaled: G 2 s, M 1.2 s, I 1 s: u = (0.6 + 0.8) / 2 = 0.7, r = (0.7 + sqrt(4.49)) / 2 */
    assert_true(fabs(gemm_headroom_rate(&s, 2, 1.2, 1) - (0.7 + sqrt(4.49)) / 2) < 1e-9);
    /* nothing but GEMMs: no headroom */
    assert_true(gemm_headroom_rate(&s, 1, 0, 0) == 1);
    /* the burst rate caps it: u 0.4 gives 1.2198 > 1.1 */
    s.gemm_burst_ratio = 1.1;
    assert_true(gemm_headroom_rate(&s, 1, 0, 0.5) == 1.1);
    /* switched off, or no fit, or no GEMMs: 1 */
    s = toy();
    s.gemm_headroom_on = false;
    assert_true(gemm_headroom_rate(&s, 1, 0, 0.5) == 1);
    s = toy();
    s.gemm_power_exponent = 0;
    assert_true(gemm_headroom_rate(&s, 1, 0, 0.5) == 1);
    s = toy();
    assert_true(gemm_headroom_rate(&s, 0, 1, 1) == 1);
}

static void test_power_limit(void **state)
{
    (void)state;
    system_spec s = toy();
    s.power_limit_w = 350; /* half the TDP: the cap the balance holds at */
    assert_true(gemm_headroom_cap_w(&s) == 350);
    /* memory-bound kernels at 350 W leave nothing under a 350 W cap; idle 140 W leaves 0.6:
     * I 0.5 s gives u = 0.3, r = 1.1611874 */
    assert_true(fabs(gemm_headroom_rate(&s, 1, 5, 0.5) - 1.1611874) < 1e-6);
    /* the burst rate is the same GEMMs at the highest clock: over a sustained rate lowered by
     * (350/700)^beta (the toy's measured exponent 0.5: system_power_cap_scale), it is
     * 2 / 0.7071068 = 2.8284271 times the capped one */
    assert_true(fabs(gemm_headroom_max_rate(&s) - 2 / sqrt(0.5)) < 1e-9);
}

/* Exposed communication at its own power (bench/results/mgpu8_2026-11-28): comm 420 W under the
 * 700 W cap leaves 0.4 spare; 0.5 s of it per GEMM second: u = 0.2, r = (0.2 + sqrt(4.04)) / 2.
 * Without gpu.comm_power_w it counts as idle (0.8 spare): the idle figure, 1.2198039. */
static void test_comm_power(void **state)
{
    (void)state;
    system_spec s = toy();
    s.comm_power_w = 420;
    assert_true(fabs(gemm_headroom_rate_comm(&s, 1, 0, 0, 0.5) - 1.1049876) < 1e-6);
    /* idle and communication add: I 0.25 s (0.8 spare) + C 0.5 s (0.4): u = 0.4, 1.2198039 */
    assert_true(fabs(gemm_headroom_rate_comm(&s, 1, 0, 0.25, 0.5) - 1.2198039) < 1e-6);
    s.comm_power_w = 0;
    assert_true(fabs(gemm_headroom_rate_comm(&s, 1, 0, 0, 0.5) - 1.2198039) < 1e-6);
    /* the h100 preset's measured 314 W: C 0.25 s per GEMM second, u = (1 - 314/700) x 0.25 =
     * 0.137857, r = (1 + u r)^0.39 -> 1.054353 (fixed point) */
    char err[CM_ERRLEN];
    assert_int_equal(system_load("h100", data_dir(), &s, err, sizeof err), CM_OK);
    s.gemm_headroom_on = true;
    assert_true(s.comm_power_w == 314);
    double r = gemm_headroom_rate_comm(&s, 1, 0, 0, 0.25);
    assert_true(fabs(r - 1.054353) < 1e-6);
    assert_true(fabs(pow(r, 1 / 0.39) - (1 + 0.137857 * r)) < 1e-5);
}

static void test_h100_preset(void **state)
{
    (void)state;
    system_spec s;
    char err[CM_ERRLEN];
    assert_int_equal(system_load("h100", data_dir(), &s, err, sizeof err), CM_OK);
    assert_false(gemm_headroom_applies(&s)); /* off unless asked for */
    s.gemm_headroom_on = true;
    assert_true(gemm_headroom_applies(&s));
    /* half the step idle: u = (1 - 121/700) = 0.827; (1 + 0.827 x 1.16)^0.39 = 1.30 > 1.16, so
     * the burst rate (measured: 8192^3 with idle at GEMM fraction 0.65, x1.157) */
    assert_true(fabs(gemm_headroom_rate(&s, 1, 0, 1) - 1.16) < 1e-12);
    /* a quarter of memory-bound time per GEMM second: u = (1 - 410/700) x 0.25 = 0.103571;
     * r = 1.1036^0.39 = 1.0392, (1 + 0.103571 x 1.0392)^0.39 = 1.04069, ... -> 1.040731 */
    double r = gemm_headroom_rate(&s, 1, 0.25, 0);
    assert_true(fabs(r - 1.040731) < 1e-6);
    assert_true(fabs(pow(r, 1 / 0.39) - (1 + 0.103571 * r)) < 1e-5);
}

/* In a priced one-GPU step the GEMM time G found by the probe shrinks to G / r: the step with the
 * rate is the sustained step less G (1 - 1/r) (compute-bound GEMMs; a few memory-bound ones and
 * the per-kernel overheads do not move, hence the tolerance). */
static void test_step(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    assert_int_equal(model_load("8b", data_dir(), &m, err, sizeof err), CM_OK);
    assert_int_equal(system_load("h100", data_dir(), &s, err, sizeof err), CM_OK);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 8;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.tp = l.pp = l.dp = 1;
    l.mbs = 2;
    estimate off, on;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &off, err, sizeof err), CM_OK);
    assert_true(off.time.gemm_headroom_rate == 0);
    s.gemm_headroom_on = true;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &on, err, sizeof err), CM_OK);
    double r = on.time.gemm_headroom_rate;
    assert_true(r > 1.01 && r <= 1.16);
    /* the split the rate came from, from the sustained step */
    estimate base = off;
    stage_time w = estimate_worst_stage(&m, &s, &t, &l, NULL, NULL);
    gemm_headroom_mix mix;
    gemm_headroom_step(&m, &s, &t, &l, &w, &base, &mix);
    assert_true(mix.gemm_s > 0.5 * off.time.compute_s && mix.gemm_s < off.time.compute_s);
    assert_true(mix.attention_s > 0 && mix.memory_s > 0);
    /* the split covers the step (exposed communication and FSDP contention are their own parts
     * since the communication-power term, bench/results/mgpu8_2026-11-28) */
    assert_true(fabs(mix.gemm_s + mix.attention_s + mix.memory_s + mix.idle_s + mix.comm_s +
                     mix.at_cap_s - off.time.step_s) < 1e-9 * off.time.step_s);
    assert_true(fabs(gemm_headroom_rate_comm(&s, mix.gemm_s, mix.memory_s, mix.idle_s,
                                             mix.comm_s) - r) < 1e-12);
    assert_true(fabs(base.time.step_s - on.time.step_s) < 1e-12);
    double want = off.time.step_s - mix.gemm_s * (1 - 1 / r);
    assert_true(fabs(on.time.step_s - want) < 0.01 * want);
    /* a system without the fit prices the same step either way */
    system_spec b;
    assert_int_equal(system_load("b200", data_dir(), &b, err, sizeof err), CM_OK);
    estimate b_off, b_on;
    assert_int_equal(estimate_layout(&m, &b, &t, &l, &b_off, err, sizeof err), CM_OK);
    b.gemm_headroom_on = true;
    assert_int_equal(estimate_layout(&m, &b, &t, &l, &b_on, err, sizeof err), CM_OK);
    assert_true(b_on.time.step_s == b_off.time.step_s);
}

/* The bubble alone (plan estimate's default, gemm_headroom.h): torchtitan 1F1B, Llama-3 8B cut to
 * 16 layers, pp 4, 8 micro-batches of 4096 tokens on H100. The spare power is the bubble's wait
 * only, in NCCL kernels: u = (1 - P_comm/P_cap) I / G, so the rate is the one gemm_headroom_rate
 * gives with no memory-bound time, by hand: the fixed point of r = (1 + u r)^0.39 at most 1.16. A layout
 * without a pipeline has no bubble and keeps the sustained step. */
static void test_bubble_only(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    assert_int_equal(model_load("8b", data_dir(), &m, err, sizeof err), CM_OK);
    assert_int_equal(system_load("h100", data_dir(), &s, err, sizeof err), CM_OK);
    m.layers = 16;
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 8;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = l.dp = 1;
    l.pp = 4;
    l.mbs = 1;
    estimate off, bub, full;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &off, err, sizeof err), CM_OK);
    assert_true(off.time.bubble_s > 0.05 * off.time.step_s);
    system_spec sb = s;
    sb.gemm_headroom_bubble = true;
    assert_int_equal(estimate_layout(&m, &sb, &t, &l, &bub, err, sizeof err), CM_OK);
    estimate probe = off;
    stage_time w = estimate_worst_stage(&m, &s, &t, &l, NULL, NULL);
    gemm_headroom_mix mix;
    gemm_headroom_step(&m, &sb, &t, &l, &w, &probe, &mix);
    /* the bubble is NCCL waits at gpu.comm_power_w (gemm_headroom.h; pp21's traces) */
    assert_true(mix.memory_s == 0 && mix.idle_s == 0 && mix.at_cap_s == 0);
    assert_true(fabs(mix.comm_s - off.time.bubble_s) < 1e-12);
    assert_true(s.comm_power_w > s.idle_power_w);
    double u = (1 - s.comm_power_w / s.tdp_w) * mix.comm_s / mix.gemm_s, r = 1;
    for (int i = 0; i < 500; i++) r = fmin(pow(1 + u * r, s.gemm_power_exponent), s.gemm_burst_ratio);
    assert_true(r > 1.01);
    assert_true(fabs(bub.time.gemm_headroom_rate - r) < 1e-9);
    assert_true(bub.time.step_s < off.time.step_s);
    /* the whole model (memory-bound time as well) gives at least as much */
    system_spec sf = s;
    sf.gemm_headroom_on = true;
    assert_int_equal(estimate_layout(&m, &sf, &t, &l, &full, err, sizeof err), CM_OK);
    assert_true(full.time.gemm_headroom_rate >= bub.time.gemm_headroom_rate - 1e-12);
    /* no pipeline, no bubble: the sustained step */
    layout one = layout_default(FRAMEWORK_TORCHTITAN);
    one.tp = one.pp = one.dp = 1;
    one.mbs = 1;
    t.global_batch = 1;
    estimate a, b;
    assert_int_equal(estimate_layout(&m, &s, &t, &one, &a, err, sizeof err), CM_OK);
    assert_int_equal(estimate_layout(&m, &sb, &t, &one, &b, err, sizeof err), CM_OK);
    assert_true(a.time.step_s == b.time.step_s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_by_hand),
        cmocka_unit_test(test_power_limit),
        cmocka_unit_test(test_h100_preset),
        cmocka_unit_test(test_comm_power),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_bubble_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
