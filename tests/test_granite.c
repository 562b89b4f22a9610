/*
 * test_granite.c — what Hugging Face's Granite code costs beyond a Llama layer, and what an odd
 * output width costs a Linear's GEMMs (issue 14, bench/results/granite24_2026-11-29), each
 * against a number worked by hand from bench/realruns/configs/granite-3.1-8b.json (h 4096,
 * vocabulary 49,155, residual_multiplier 0.22, embedding_multiplier 12, logits_scaling 16) at
 * seq 4096, mbs 1 (4096 tokens):
 *   residual.mul: two bf16 scalar multiplies a layer, 4 bytes an element: 2 x 4 x 4096 x 4096 =
 *   134,217,728 B forward, the same backward;
 *   embed.mul: 4 x 4096 x 4096 = 67,108,864 B each way; logits.div: 4 x 4096 x 49,155 =
 *   805,355,520 B each way; none of them for Llama, nor for Megatron's fused lists;
 *   the output layer's three GEMMs of 2 x 4096 x 49,155 x 4096 = 1,649,368,104,960 FLOPs each
 *   at the system's odd-width rates (set here to 2e14, 1e14 and 4e14 FLOP/s), plus the fixed
 *   cost per GEMM; at 49,152 or under Megatron (which pads the vocabulary) the ordinary GEMM.
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
#include "elementwise.h"
#include "layer_recipe.h"

#define NEAR(x, want) (fabs((x) - (want)) <= 1e-9 * fabs(want) + 1e-12)

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load_granite(model_spec *m)
{
    char path[512], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/granite-3.1-8b.json", REALRUNS_CONFIGS_DIR);
    if (model_load(path, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void hf_one_gpu(layout *l, training_spec *t)
{
    *t = training_default();
    t->seq_len = 4096;
    t->global_batch = 1;
    *l = layout_default(FRAMEWORK_FSDP2);
    l->mbs = 1;
    l->impl = IMPL_HF;
}

static double bytes_named(const elementwise_kernel *k, int n, const char *name)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) s += k[i].count * k[i].bytes;
    return s;
}

static void test_multipliers(void **state)
{
    (void)state;
    model_spec m;
    load_granite(&m);
    assert_true(m.residual_multiplier == 0.22 && m.embedding_multiplier == 12 &&
                m.logits_scaling == 16 && m.vocab == 49155);
    layout l;
    training_spec t;
    hf_one_gpu(&l, &t);
    static elementwise_list e;
    elementwise_layer(&m, &l, 4096, false, &e);
    assert_true(NEAR(bytes_named(e.fwd, e.n_fwd, "residual.mul"), 134217728.0));
    assert_true(NEAR(bytes_named(e.bwd, e.n_bwd, "residual.bwd.mul"), 134217728.0));
    elementwise_head(&m, &l, 4096, &e);
    assert_true(NEAR(bytes_named(e.fwd, e.n_fwd, "embed.mul"), 67108864.0));
    assert_true(NEAR(bytes_named(e.bwd, e.n_bwd, "embed.bwd.mul"), 67108864.0));
    assert_true(NEAR(bytes_named(e.fwd, e.n_fwd, "logits.div"), 805355520.0));
    assert_true(NEAR(bytes_named(e.bwd, e.n_bwd, "logits.bwd.div"), 805355520.0));
    /* Llama (no multiplier keys): none */
    model_spec llama;
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &llama, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_true(llama.residual_multiplier == 0 && llama.logits_scaling == 0);
    elementwise_layer(&llama, &l, 4096, false, &e);
    assert_true(bytes_named(e.fwd, e.n_fwd, "residual.mul") == 0);
    elementwise_head(&llama, &l, 4096, &e);
    assert_true(bytes_named(e.fwd, e.n_fwd, "logits.div") == 0);
    /* Megatron's fused lists: none */
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    mg.mbs = 1;
    elementwise_layer(&m, &mg, 4096, false, &e);
    assert_true(bytes_named(e.fwd, e.n_fwd, "residual.mul") == 0);
}

static void lm_head_s(const model_spec *m, const system_spec *s, const layout *l, double *fwd,
                      double *bwd)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    static recipe r;
    recipe_head(m, s, &t, l, &r, NULL);
    *fwd = *bwd = -1;
    for (int i = 0; i < r.n_ops; i++)
        if (!strcmp(r.op[i].name, "lm_head")) {
            *fwd = r.op[i].fwd_s;
            *bwd = r.op[i].bwd_s;
        }
}

static void test_odd_output_width(void **state)
{
    (void)state;
    model_spec m;
    load_granite(&m);
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    /* the preset carries measured rates (data/systems/h200.json); the test sets its own */
    assert_true(s.gemm_odd_out_fwd_flops_per_s > 0 && s.gemm_odd_out_dgrad_flops_per_s > 0 &&
                s.gemm_odd_out_wgrad_flops_per_s > 0);
    s.gemm_odd_out_fwd_flops_per_s = 2e14;
    s.gemm_odd_out_dgrad_flops_per_s = 1e14;
    s.gemm_odd_out_wgrad_flops_per_s = 4e14;
    layout l;
    training_spec t;
    hf_one_gpu(&l, &t);
    double fwd, bwd, f = 1649368104960.0, o = s.gemm_overhead_s;
    lm_head_s(&m, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, f / 2e14 + o));
    assert_true(NEAR(bwd, f / 1e14 + f / 4e14 + 2 * o));
    /* an aligned width: the ordinary GEMM */
    model_spec even = m;
    even.vocab = 49152;
    lm_head_s(&even, &s, &l, &fwd, &bwd);
    assert_true(NEAR(fwd, compute_gemm_s(&s, 4096, 49152, 4096)));
    /* Megatron pads the vocabulary: the ordinary GEMM at the configured width */
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    mg.mbs = 1;
    lm_head_s(&m, &s, &mg, &fwd, &bwd);
    assert_true(NEAR(fwd, compute_gemm_s(&s, 4096, 49155, 4096)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multipliers),
        cmocka_unit_test(test_odd_output_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
