/*
 * test_torchao_compiled.c — torchao float8 in a torch.compile'd block (issues 16, 14;
 * bench/results/fp8b19_2026-11-29): the measured rate of its casts
 * (gpu.torchao_cast_efficiency_rowwise / _tensorwise, recipe_builder.c
 * rb_torchao_compiled_cast_efficiency), the rowwise GEMM ratio on a system that measured it
 * against the per-tensor one (gpu.fp8_rowwise_over_tensorwise_gemm, precision.c), and the Linear
 * inputs the compiled graph does not save (memory_activations.c memory_torchao_compiled_recompute),
 * against hand-worked numbers.
 *
 * Llama-3.1-8B (h 4096, 32 heads of 128, 8 KV groups, SwiGLU ffn 14336) at seq 4096, mbs 1, one
 * GPU: per layer the Linears are qkv 6144x4096, attn_out 4096x4096, mlp_up 28672x4096, mlp_down
 * 4096x14336: sum(in) = 26624, sum(out) = 43008, sum(out*in) = 218,103,808 (test_precision.c).
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

#include "layer_recipe.h"
#include "memory.h"
#include "recipe_fixture.h"
#include "precision.h"
#include "recipe_builder.h"

static double op_time(const recipe *r, const char *name, bool bwd)
{
    const recipe_op *o = op_named(r, name);
    return bwd ? o->bwd_s : o->fwd_s;
}

static layout titan_fp8(layout_fp8_recipe rec, bool compile)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = rec;
    l.compile = compile;
    return l;
}

/* The h200 preset carries the measured fractions (bench/fp8b19_derive.py on probe.json). */
static void test_h200_values(void **state)
{
    (void)state;
    load("8b", "h200");
    system_spec s = S;
    near(s.torchao_cast_efficiency_rowwise, 0.2596, "rowwise cast efficiency");
    near(s.torchao_cast_efficiency_tensorwise, 0.3796, "tensorwise cast efficiency");
    near(s.fp8_rowwise_over_tensorwise_gemm, 1.0, "rowwise over tensorwise GEMM");
    load("8b", "h100"); /* not measured there: the eager rate, RATIO_ROWWISE */
    system_spec h = S;
    assert_true(h.torchao_cast_efficiency_rowwise == 0 && h.fp8_rowwise_over_tensorwise_gemm == 0);
}

/* Casts of one layer at T = 4096 tokens (test_precision.c's byte counts): rowwise forward
 * 5 T sum(in) + 5 sum(out*in) = 1,635,778,560 B, backward that + 10 T sum(out) =
 * 1,635,778,560 + 1,761,607,680; tensorwise backward 1,635,778,560 + 8 T sum(out) =
 * 1,635,778,560 + 1,409,286,144. HBM 2e12 B/s here: compiled rowwise at 0.25 of it (5e11 B/s),
 * tensorwise at 0.4 (8e11 B/s); eager (or with TP) at the eager rate, 0.5 (1e12 B/s). */
static void test_cast_rate(void **state)
{
    (void)state;
    load("8b", "h200");
    model_spec m = M;
    system_spec s = S;
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.eager_elementwise_efficiency = 0.5;
    s.torchao_cast_efficiency_rowwise = 0.25;
    s.torchao_cast_efficiency_tensorwise = 0.4;
    training_spec t = training_default();
    static recipe r;
    layout l = titan_fp8(FP8_RECIPE_ROWWISE, true);
    near(rb_torchao_compiled_cast_efficiency(&s, &l), 0.25, "rowwise efficiency");
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    near(op_time(&r, "lp.quantize", false), 1635778560.0 / 5e11, "rowwise fwd casts");
    near(op_time(&r, "lp.quantize_bwd", true), (1635778560.0 + 1761607680.0) / 5e11,
         "rowwise bwd casts");
    l = titan_fp8(FP8_RECIPE_TENSORWISE, true);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    near(op_time(&r, "lp.quantize", false), 1635778560.0 / 8e11, "tensorwise fwd casts");
    near(op_time(&r, "lp.quantize_bwd", true), (1635778560.0 + 1409286144.0) / 8e11,
         "tensorwise bwd casts");
    l = titan_fp8(FP8_RECIPE_ROWWISE, false); /* eager: the eager rate */
    assert_true(rb_torchao_compiled_cast_efficiency(&s, &l) == 0);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    near(op_time(&r, "lp.quantize", false), 1635778560.0 / 1e12, "eager fwd casts");
    l = titan_fp8(FP8_RECIPE_ROWWISE, true);
    l.tp = 2; /* not measured with TP */
    assert_true(rb_torchao_compiled_cast_efficiency(&s, &l) == 0);
}

/* Rowwise GEMM ratio: with the measured 1.0 it equals the per-tensor one (0.9135 on Hopper);
 * without, RATIO_ROWWISE 0.8385 (H100's measurement); the shape profile's scale alike. */
static void test_rowwise_gemm_ratio(void **state)
{
    (void)state;
    load("8b", "h200");
    system_spec s = S;
    layout rw = titan_fp8(FP8_RECIPE_ROWWISE, true), tw = titan_fp8(FP8_RECIPE_TENSORWISE, true);
    near(precision_gemm_ratio(&s, &rw), precision_gemm_ratio(&s, &tw), "measured rowwise ratio");
    bool blk;
    double scale;
    if (precision_gemm_shape_ratios(&s, &rw, &blk, &scale)) near(scale, 1.0, "shape scale");
    s.fp8_rowwise_over_tensorwise_gemm = 0;
    near(precision_gemm_ratio(&s, &rw) / precision_gemm_ratio(&s, &tw), 0.8385 / 0.9135,
         "H100 rowwise ratio");
    if (precision_gemm_shape_ratios(&s, &rw, &blk, &scale))
        near(scale, 0.8385 / 0.9135, "H100 shape scale");
}

/* Memory: compiled torchao float8 keeps neither norm output (QKV and w1/w3 input, 2h each) nor
 * the SwiGLU product (w2's input, 2 ffn): T (2 x 2 x 4096 + 2 x 14336) = 4096 x 45,056 =
 * 184,549,376 bytes a layer less than compiled bf16 (the probe: 369.1 MB at 8192 tokens);
 * eager FP8, TP, MoE layers, Transformer Engine and bf16 unchanged. */
static void test_saved_inputs(void **state)
{
    (void)state;
    load("8b", "h200");
    model_spec m = M;
    training_spec t = training_default();
    layout bf = layout_default(FRAMEWORK_TORCHTITAN);
    bf.compile = true;
    double base = memory_layer_activation_bytes(&m, &t, &bf, 0);
    layout rw = titan_fp8(FP8_RECIPE_ROWWISE, true), tw = titan_fp8(FP8_RECIPE_TENSORWISE, true);
    assert_true(memory_torchao_compiled_recompute(&m, &rw, 0));
    assert_false(memory_torchao_compiled_recompute(&m, &bf, 0));
    assert_false(memory_torchao_compiled_recompute(&m, &rw, 1)); /* MoE layers: not measured */
    near(base - memory_layer_activation_bytes(&m, &t, &rw, 0), 184549376.0, "rowwise saved");
    near(base - memory_layer_activation_bytes(&m, &t, &tw, 0), 184549376.0, "tensorwise saved");
    layout eg = titan_fp8(FP8_RECIPE_ROWWISE, false), bfe = layout_default(FRAMEWORK_TORCHTITAN);
    bfe.compile = false;
    near(memory_layer_activation_bytes(&m, &t, &eg, 0),
         memory_layer_activation_bytes(&m, &t, &bfe, 0), "eager unchanged");
    rw.tp = 2;
    assert_false(memory_torchao_compiled_recompute(&m, &rw, 0));
    layout fs = fsdp2(1); /* plain FSDP2 with torchao tensorwise: the same */
    fs.compile = true, fs.precision = PRECISION_FP8, fs.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_true(memory_torchao_compiled_recompute(&m, &fs, 0));
    layout mg = megatron(1, 1, 1, false); /* Transformer Engine: not torchao */
    mg.precision = PRECISION_FP8;
    assert_false(memory_torchao_compiled_recompute(&m, &mg, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200_values),
        cmocka_unit_test(test_cast_rate),
        cmocka_unit_test(test_rowwise_gemm_ratio),
        cmocka_unit_test(test_saved_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
