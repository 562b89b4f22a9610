/*
 * test_unaligned_out.c — what an output width that is not a multiple of 8 costs a Linear's
 * three GEMMs under a PyTorch framework, by alignment class (issue 14,
 * bench/results/oddgemm24_2026-11-29), each against a number worked by hand from
 * data/models/8b.json (Llama-3.1-8B, hidden 4096) at seq 4096, mbs 1 (4096 tokens), with the
 * system's class rates set here (the preset's are measured, data/systems/h200.json):
 *   vocabulary 128,258 (2 mod 4): lm_head's GEMMs of 2 x 4096 x 128,258 x 4096 =
 *   4,303,624,339,456 FLOPs each at the 2 mod 4 rates 2e14 / 1e14 / 4e14 FLOP/s plus the fixed
 *   cost per GEMM;
 *   vocabulary 128,260 (4 mod 8): 4,303,691,448,320 FLOPs at the 4 mod 8 rates 3e14 / 1.5e14 /
 *   6e14; with those rates absent (not measured) the ordinary GEMM;
 *   torchtitan, tp 2, vocabulary 128,258: each rank's shard 64,129 (odd): 2,151,812,169,728
 *   FLOPs at the odd rates 1e14 / 0.5e14 / 2e14;
 *   tp 2, vocabulary 128,259: DTensor's chunks 64,130 (2 mod 4) and 64,129 (odd); the odd
 *   rank is the slower at these rates: the same numbers as the line above;
 *   an MLP of ffn 14,340 (4 mod 8): gate and up, two Linears of 14,340 each (the fused
 *   GEMM's 28,680 is a multiple of 8): 2 x (481,170,554,880 / 3e14 + fixed cost) forward.
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

#include "compute.h"
#include "layer_recipe.h"

#define NEAR(x, want) (fabs((x) - (want)) <= 1e-9 * fabs(want) + 1e-12)

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void setup(model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    s->gemm_odd_out_fwd_flops_per_s = 1e14;
    s->gemm_odd_out_dgrad_flops_per_s = 0.5e14;
    s->gemm_odd_out_wgrad_flops_per_s = 2e14;
    s->gemm_out_2mod4_fwd_flops_per_s = 2e14;
    s->gemm_out_2mod4_dgrad_flops_per_s = 1e14;
    s->gemm_out_2mod4_wgrad_flops_per_s = 4e14;
    s->gemm_out_4mod8_fwd_flops_per_s = 3e14;
    s->gemm_out_4mod8_dgrad_flops_per_s = 1.5e14;
    s->gemm_out_4mod8_wgrad_flops_per_s = 6e14;
}

static training_spec tokens_4096(void)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    return t;
}

static layout hf_one_gpu(void)
{
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.mbs = 1;
    l.impl = IMPL_HF;
    return l;
}

static void op_s(const recipe *r, const char *name, double *fwd, double *bwd)
{
    *fwd = *bwd = -1;
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) {
            *fwd = r->op[i].fwd_s;
            *bwd = r->op[i].bwd_s;
        }
}

static void lm_head_s(const model_spec *m, const system_spec *s, const layout *l, double *fwd,
                      double *bwd)
{
    training_spec t = tokens_4096();
    static recipe r;
    recipe_head(m, s, &t, l, &r, NULL);
    op_s(&r, "lm_head", fwd, bwd);
}

static void test_vocab_classes(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    setup(&m, &s);
    double o = s.gemm_overhead_s, fwd, bwd;
    layout l = hf_one_gpu();
    m.vocab = 128258;
    double f = 4303624339456.0;
    lm_head_s(&m, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, f / 2e14 + o));
    assert_true(NEAR(bwd, f / 1e14 + f / 4e14 + 2 * o));
    m.vocab = 128260;
    f = 4303691448320.0;
    lm_head_s(&m, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, f / 3e14 + o));
    assert_true(NEAR(bwd, f / 1.5e14 + f / 6e14 + 2 * o));
    /* a class without rates (not measured): the ordinary GEMM */
    s.gemm_out_4mod8_fwd_flops_per_s = 0;
    lm_head_s(&m, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, compute_gemm_s(&s, 4096, 128260, 4096)));
    /* Megatron pads the vocabulary: the ordinary GEMM at the configured width */
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    mg.mbs = 1;
    m.vocab = 128258;
    lm_head_s(&m, &s, &mg, &fwd, &bwd);
    assert_true(NEAR(fwd, compute_gemm_s(&s, 4096, 128258, 4096)));
}

static void test_tp_shards(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    setup(&m, &s);
    double o = s.gemm_overhead_s, fwd, bwd, f = 2151812169728.0;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.mbs = 1;
    l.tp = 2;
    m.vocab = 128258; /* 64,129 a rank */
    lm_head_s(&m, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, f / 1e14 + o));
    assert_true(NEAR(bwd, f / 0.5e14 + f / 2e14 + 2 * o));
    m.vocab = 128259; /* 64,130 and 64,129: the odd rank is the slower */
    lm_head_s(&m, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, f / 1e14 + o));
    assert_true(NEAR(bwd, f / 0.5e14 + f / 2e14 + 2 * o));
}

static void test_mlp_parts(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    setup(&m, &s);
    m.ffn = 14340;
    training_spec t = tokens_4096();
    layout l = hf_one_gpu();
    static recipe r;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    double fwd, bwd, f = 481170554880.0, o = s.gemm_overhead_s;
    op_s(&r, "mlp_up", &fwd, &bwd);
    assert_true(NEAR(fwd, 2 * (f / 3e14 + o)));
    assert_true(NEAR(bwd, 2 * (f / 1.5e14 + f / 6e14 + 2 * o)));
    /* an aligned ffn: the fused GEMM as before */
    m.ffn = 14336;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    op_s(&r, "mlp_up", &fwd, &bwd);
    assert_true(NEAR(fwd, compute_gemm_s(&s, 4096, 2 * 14336, 4096)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab_classes),
        cmocka_unit_test(test_tp_shards),
        cmocka_unit_test(test_mlp_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
