/*
 * test_mtp.c — Megatron's multi-token-prediction modules on the last pipeline stage
 * (costmodel/recipe_mtp.c, memory.c): the loss head's recipe gains, per module, the two norms
 * and the concatenation, eh_proj, one decoder layer and a second pass of the output layer; the
 * last stage's parameters gain exactly the module's parameters (model_mtp_params, checked
 * against DeepSeek-V3's published 11.5 B in test_hf_configs) and its logits a second buffer.
 * Frameworks that do not run MTP (torchtitan, the Hugging Face trainer) are unchanged.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compute.h"
#include "layer_recipe.h"
#include "memory.h"
#include "model.h"
#include "system.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load("deepseek-v3", data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_int_equal(m->mtp_layers, 1); /* num_nextn_predict_layers in the preset */
}

static training_spec training(void)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 64;
    return t;
}

/* One GPU's layout (tp 1, ep 1, pp 1) so the stage holds every parameter. */
static layout one_gpu(layout_framework f)
{
    layout l = layout_default(f);
    l.tp = l.pp = l.dp = l.cp = l.ep = 1;
    l.mbs = 1;
    return l;
}

static double find_op(const recipe *r, const char *name, int nth)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name) && nth-- == 0) return r->op[i].fwd_s;
    return -1;
}

static void test_head_recipe(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    training_spec t = training();
    layout l = one_gpu(FRAMEWORK_MEGATRON);
    assert_int_equal(layout_mtp_layers(&m, &l), 1);
    model_spec plain = m;
    plain.mtp_layers = 0;
    recipe with, without, layer;
    recipe_head(&m, &s, &t, &l, &with, NULL);
    recipe_head(&plain, &s, &t, &l, &without, NULL);
    recipe_layer(&m, &s, &t, &l, true, &layer, NULL); /* DeepSeek-V3's last layer is MoE */
    /* head + norms (fwd, bwd) + eh_proj + the layer's ops + the head again; no TP, bf16: no
     * collective and no quantize op */
    assert_int_equal(with.n_ops, 2 * without.n_ops + 3 + layer.n_ops);
    /* eh_proj: 4096 rows x 7168 out x 14336 in, one bf16 GEMM */
    double h = m.hidden, tokens = 4096;
    assert_true(find_op(&with, "mtp.eh_proj", 0) == compute_gemm_s(&s, tokens, h, 2 * h));
    /* norms + cat: 16 bytes x h per token forward */
    assert_true(find_op(&with, "mtp.norms", 0) == compute_stream_s(&s, 16.0 * h * tokens));
    /* the output layer runs twice */
    assert_true(find_op(&with, "lm_head", 1) == find_op(&without, "lm_head", 0));
    /* priced: forward = 2 x head + layer + eh_proj + norms (no exchange at ep 1) */
    recipe_time xw, xo, xl;
    recipe_price(&with, &xw);
    recipe_price(&without, &xo);
    recipe_price(&layer, &xl);
    double expect = 2 * xo.fwd_s + xl.fwd_s + compute_gemm_s(&s, tokens, h, 2 * h) +
                    compute_stream_s(&s, 16.0 * h * tokens);
    assert_true(fabs(xw.fwd_s - expect) <= 1e-12 * expect);
    /* torchtitan does not run MTP: its head is the plain one */
    layout lt = one_gpu(FRAMEWORK_TORCHTITAN);
    recipe tt, tt_plain;
    recipe_head(&m, &s, &t, &lt, &tt, NULL);
    recipe_head(&plain, &s, &t, &lt, &tt_plain, NULL);
    assert_int_equal(tt.n_ops, tt_plain.n_ops);
}

static void test_head_with_tp(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    training_spec t = training();
    layout l = one_gpu(FRAMEWORK_MEGATRON);
    l.tp = 8;
    l.sp = true;
    recipe r;
    recipe_head(&m, &s, &t, &l, &r, NULL);
    /* eh_proj's exchanges under SP: all-gather of the 2h-wide input over the sequence and of
     * the h/tp-wide output over the hidden dimension; backward: the input gradient's
     * reduce-scatter. bf16: 4096 x 14336 x 2 and 4096 x 7168 x 2 bytes. */
    layout_group g = layout_tp_group(&s, &l);
    double h = m.hidden, tokens = 4096;
    double fwd = collective_time_s(&s, COLL_ALL_GATHER, tokens * 2 * h * 2, g) +
                 collective_time_s(&s, COLL_ALL_GATHER, tokens * h * 2, g);
    double bwd = collective_time_s(&s, COLL_REDUCE_SCATTER, tokens * 2 * h * 2, g);
    int i;
    for (i = 0; i < r.n_ops && strcmp(r.op[i].name, "mtp.tp"); i++) {}
    assert_true(i < r.n_ops);
    assert_true(r.op[i].fwd_s == fwd && r.op[i].bwd_s == bwd);
    /* the norms run on the rank's sequence share */
    assert_true(find_op(&r, "mtp.norms", 0) == compute_stream_s(&s, 16.0 * h * tokens / 8));
}

static void test_last_stage_memory(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    model_spec plain = m;
    plain.mtp_layers = 0;
    layout l = one_gpu(FRAMEWORK_MEGATRON);
    double dw, ew, dp, ep;
    memory_stage_params(&m, &l, 0, &dw, &ew);
    memory_stage_params(&plain, &l, 0, &dp, &ep);
    /* one GPU holds the whole MTP module: 11,610,068,224 parameters (test_hf_configs) */
    assert_true(dw + ew - (dp + ep) == model_mtp_params(&m));
    assert_true(model_mtp_params(&m) == 11610068224.0);
    /* on pp 2 only the last stage holds it */
    l.pp = 2;
    memory_stage_params(&m, &l, 0, &dw, &ew);
    memory_stage_params(&plain, &l, 0, &dp, &ep);
    assert_true(dw + ew == dp + ep);
    memory_stage_params(&m, &l, 1, &dw, &ew);
    memory_stage_params(&plain, &l, 1, &dp, &ep);
    assert_true(dw + ew - (dp + ep) == model_mtp_params(&m));
    /* torchtitan: no MTP parameters anywhere */
    layout lt = one_gpu(FRAMEWORK_TORCHTITAN);
    memory_stage_params(&m, &lt, 0, &dw, &ew);
    memory_stage_params(&plain, &lt, 0, &dp, &ep);
    assert_true(dw + ew == dp + ep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_recipe),
        cmocka_unit_test(test_head_with_tp),
        cmocka_unit_test(test_last_stage_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
