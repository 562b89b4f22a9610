/*
 * test_titan_sac_tp.c — two facts of torchtitan's tensor-parallel blocks that the published
 * async-TP table (pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md)
 * turns on, checked by hand (bench/results/atp22_2026-11-29):
 *  - per-op selective AC re-runs each block's SP all-gather in the backward (its policy saves
 *    the reduce-scatters, not the gathers; costmodel/recipe_recompute.c), and under async TP
 *    the re-run gather is fused with the re-run consumers only (wk, w3: recipe_tp.c
 *    rb_tp_sac_regather);
 *  - under async TP a gather whose result is quantized before its matmul (torchao's rowwise
 *    float8 on plain DTensor TP) is not fused: Inductor fuses an all-gather only with matmuls
 *    that take its result as their left operand (costmodel/async_tp.c async_tp_gather_fused).
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

#include "async_tp.h"
#include "collective.h"
#include "compute.h"
#include "layer_recipe.h"
#include "precision.h"
#include "recipe_fixture.h"

/* The 8B row of the table: FSDP 8 x TP 8 (SP), local batch 12 x 8192, compiled, per-op SAC. */
static layout row_8b(void)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = 8, l.dp = 8, l.pp = l.cp = 1, l.mbs = 12;
    l.sp = true;
    l.sharding = SHARDING_FSDP;
    l.compile = true;
    l.recompute = RECOMPUTE_SELECTIVE;
    return l;
}

/* Llama-3.1-8B's layer under l (seq 8192) on the h100 preset, into *r. */
static void build_8b(const layout *l, recipe *r)
{
    load("8b", "h100");
    training_spec t = training_default();
    t.seq_len = 8192;
    recipe_layer(&M, &S, &t, l, false, r, NULL);
}

/* Vanilla TP: each TP op re-runs its gather, 12 x 8192 x 4096 bf16 = 805,306,368 bytes over the
 * TP group, and not its reduce-scatter; the recompute is exactly the NCCL all-gather's time. */
static void test_sac_regathers(void **state)
{
    (void)state;
    layout l = row_8b();
    recipe r;
    build_8b(&l, &r);
    double ag = collective_time_s(&S, COLL_ALL_GATHER, 12.0 * 8192 * 4096 * 2,
                                  layout_tp_group(&S, &l));
    const char *names[] = {"tp.attention", "tp.mlp"};
    for (int k = 0; k < 2; k++) {
        const recipe_op *o = op_named(&r, names[k]);
        assert_true(o->recompute && o->recompute_enter_only);
        near(recipe_op_recompute_s(o), ag, "re-run gather");
        near(o->fwd_s - o->leave_fwd_s, ag, "forward gather");
    }
    /* full recompute keeps its own rule: the attention block's op whole, the MLP's gather */
    l.recompute = RECOMPUTE_FULL;
    build_8b(&l, &r);
    const recipe_op *a = op_named(&r, "tp.attention"), *p = op_named(&r, "tp.mlp");
    assert_float_equal(recipe_op_recompute_s(a), a->fwd_s, 1e-12);
    assert_float_equal(recipe_op_recompute_s(p), ag, 1e-12);
    /* no selective recompute of the gathers outside torchtitan's policy (Megatron's modules);
     * the guide's FSDP2 path has no TP ops at all */
    l = megatron(8, 1, 8, true);
    l.recompute = RECOMPUTE_SELECTIVE;
    l.mbs = 12;
    build_8b(&l, &r);
    assert_false(op_named(&r, "tp.attention")->recompute);
    l = fsdp2(8);
    build_8b(&l, &r);
    for (int i = 0; i < r.n_ops; i++) assert_int_not_equal(r.op[i].kind, RECIPE_TP);
}

/* Async TP: the re-run gather is fused with wk (1024 / 8 columns) or w3 (14336 / 8), not the
 * forward's whole QKV (6144 / 8) or w1 + w3 (28672 / 8): async_tp_block's gather with that GEMM
 * (bf16, compute_gemm_s; its 8 chunks of 12,288 rows at gpu.tp_chunk_gemm_efficiency). The
 * attention's re-run gather, beside a GEMM a sixth of QKV's, is bandwidth-bound: more exposed
 * than the forward's. */
static double fused_gather_s(const layout *l, double tokens, double n1)
{
    layout_group g = layout_tp_group(&S, l);
    double h = 4096, rows = tokens / 8, ck = 8 / S.tp_chunk_gemm_efficiency;
    async_tp_gemms gm = {compute_gemm_s(&S, tokens, n1, h), ck * compute_gemm_s(&S, rows, n1, h),
                         0, 0, 0, 0};
    async_tp_exposed e = async_tp_block(&S, l, g, tokens * h, &gm);
    return e.fwd_s - e.fwd_leave_s;
}

static void test_sac_regather_async(void **state)
{
    (void)state;
    layout l = row_8b();
    l.async_tp = true;
    recipe r;
    build_8b(&l, &r);
    assert_float_equal(S.tp_chunk_gemm_efficiency, 0.926, 0);
    double tokens = 12.0 * 8192;
    const recipe_op *a = op_named(&r, "tp.attention"), *p = op_named(&r, "tp.mlp");
    assert_true(a->recompute_sac_enter && p->recompute_sac_enter);
    near(recipe_op_recompute_s(a), fused_gather_s(&l, tokens, 1024.0 / 8), "attention");
    near(recipe_op_recompute_s(p), fused_gather_s(&l, tokens, 14336.0 / 8), "mlp");
    near(a->fwd_s - a->leave_fwd_s, fused_gather_s(&l, tokens, 6144.0 / 8), "forward");
    assert_true(recipe_op_recompute_s(a) > a->fwd_s - a->leave_fwd_s);
}

/* async_tp_block with the rowwise recipe, the numbers of test_torchtitan.c test_async_tp_block
 * (latency 0, gathers of 8 ms of pulls, 6/8 ms GEMMs): the forward and backward gathers are
 * NCCL all-gathers of the bf16 elements, exposed whole; the forward reduce-scatter still fused
 * (4 ms + the reduction); tensorwise keeps its fused gathers (3 ms exposed each). */
static void test_rowwise_gather_not_fused(void **state)
{
    (void)state;
    load("70b", "h100");
    system_spec s = S;
    s.intra_latency_s = 0;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = 8, l.dp = 32, l.pp = l.cp = 1, l.sp = true;
    l.compile = l.async_tp = true;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_ROWWISE;
    assert_true(async_tp_applies(&l));
    layout_group g = layout_tp_group(&s, &l);
    /* elems such that a bf16 gather's 7 pulls take 16 ms (the fp8 one's 8 ms) */
    double elems = 8e-3 * collective_busbw_bytes_per_s(&s, g) * 8 / 7;
    async_tp_gemms gm = {6e-3, 8e-3, 20e-3, 24e-3, 6e-3, 8e-3};
    async_tp_exposed e = async_tp_block(&s, &l, g, elems, &gm);
    double reduce = compute_stream_s(&s, 2 * elems * (1 + 1.0 / 8));
    double ag = collective_time_s(&s, COLL_ALL_GATHER, 2 * elems, g);
    double rs = collective_time_s(&s, COLL_REDUCE_SCATTER, 2 * elems, g);
    assert_float_equal(e.fwd_leave_s, 4e-3 + reduce, 1e-9);
    assert_float_equal(e.fwd_s, ag + 4e-3 + reduce, 1e-9);
    assert_float_equal(e.bwd_s, ag + rs, 1e-9);
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    e = async_tp_block(&s, &l, g, elems, &gm);
    assert_float_equal(e.fwd_s, 3e-3 + 4e-3 + reduce, 1e-9);
    l.precision = PRECISION_BF16; /* bf16: 16 ms of pulls beside 8 chunks of 1 ms: 1 + 16 - 6 */
    e = async_tp_block(&s, &l, g, elems, &gm);
    assert_float_equal(e.fwd_s, 11e-3 + 4e-3 + reduce, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sac_regathers),
        cmocka_unit_test(test_sac_regather_async),
        cmocka_unit_test(test_rowwise_gather_not_fused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
