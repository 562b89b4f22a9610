/*
 * test_fsdp_order.c — FSDP2's prefetched traffic exposed in layer order (estimate.c
 * stage_layers_cost): layer j's all-gather hides behind layer j-1's forward, and layer j's
 * backward hides layer j-1's all-gather and layer j+1's reduce-scatter. A dense first layer
 * before MoE layers (DeepSeek, GLM-4.5) therefore hides the first MoE layer's large collectives
 * behind its own short compute; uniform layers price as count x their own terms (helper
 * hfmoe2r25, bench/results/hfmoe2r25_2026-11-29).
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

#include "estimate_internal.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* Hand-set layer times (ms): dense forward 2, backward 4, gather 1, reduce-scatter 1.5; MoE
 * forward 5, backward 10, gather 11, reduce-scatter 12. Layers [dense, MoE, MoE], FSDP2 with
 * reshard after forward. Forward exposure: layer 0 max(0, 1 - 2) = 0, layer 1 behind the
 * dense forward max(0, 11 - 2) = 9, layer 2 max(0, 11 - 5) = 6: 15. Backward: layer 2 (its
 * own reduce-scatter at the end of the order) 11 + 12 - 10 = 13, layer 1 (the dense gather,
 * layer 2's reduce-scatter) 1 + 12 - 10 = 3, layer 0 (its own gather, layer 1's
 * reduce-scatter) 1 + 12 - 4 = 9: 25. Compute 2 + 4 + 2 x 15 = 36: 76 ms in all (pairing each
 * layer with its own kind's traffic gave 36 + 2 x (6 + 13) = 74). All MoE: 3 x (15 + 6 + 13). */
static void test_dense_first_exposes_moe_traffic(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("deepseek-v2-lite", data_dir(), &m, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    m.layers = 3;
    assert_int_equal(m.dense_first, 1);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.mbs = 1;
    assert_true(l.reshard_after_forward);
    layer_kinds k;
    memset(&k, 0, sizeof k);
    k.dense.fwd_s = 2e-3;
    k.dense.bwd_s = 4e-3;
    k.dense.gather_s = 1e-3;
    k.dense.reduce_s = 1.5e-3;
    k.moe.fwd_s = 5e-3;
    k.moe.bwd_s = 10e-3;
    k.moe.gather_s = 11e-3;
    k.moe.reduce_s = 12e-3;
    k.dense_bf16 = k.dense;
    k.moe_bf16 = k.moe;
    double got = estimate_stage_layers_total(&m, &s, &t, &l, 0, &k);
    assert_true(fabs(got - 76e-3) < 1e-12);
    m.dense_first = 0;
    got = estimate_stage_layers_total(&m, &s, &t, &l, 0, &k);
    assert_true(fabs(got - 3 * 34e-3) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_first_exposes_moe_traffic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
