/*
 * test_sdpa_dropout.c — what dropout inside SDPA adds to the attention core (issue 14,
 * bench/results/sdpadrop24_2026-11-29): transformers passes the config's attention_dropout as
 * SDPA's dropout_p while training, and cuDNN's flash kernels then draw a mask per computed score,
 * forward and again backward. Worked by hand from bench/realruns/configs/starcoder2-7b.json
 * (attention_dropout 0.1, 36 query heads, head dim 128) at seq 4096, mbs 2 on one GPU:
 *   scores computed (causal) = 2 x 36 x 4096^2 / 2 = 603,979,776;
 *   forward  + 603,979,776 x 1.006e-12 s  = 0.607604 ms (data/systems/h200.json);
 *   backward + 603,979,776 x 5.555e-13 s  = 0.335511 ms;
 * (that case with sliding_window cleared: StarCoder2's window of 4096 reaches seq 4096, so
 * transformers passes its explicit mask, below), nothing with attention_dropout 0, nothing under
 * Megatron (its own attention, not transformers' SDPA call), nothing on a system without the
 * measured figures (h100).
 * Under the explicit window mask (bench/results/sc2step25_2026-11-29) the masked kernel computes
 * every score of s x s and its dropout costs more a score: StarCoder2 as published, seq 4096,
 * mbs 2:
 *   scores computed = 2 x 36 x 4096^2 = 1,207,959,552;
 *   forward  + 1,207,959,552 x 1.6285e-12 s = 1.967162 ms (gpu.sdpa_masked_dropout_fwd_s_per_score);
 *   backward + 1,207,959,552 x 2.6781e-12 s = 3.235036 ms;
 * and at seq 2048 (under the window: no mask, is_causal) the causal count and rate:
 *   2 x 36 x 2048^2 / 2 = 150,994,944 scores: + 0.151901 ms forward, + 0.083878 ms backward.
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

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *name, model_spec *m)
{
    char path[512], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/%s.json", REALRUNS_CONFIGS_DIR, name);
    if (model_load(path, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* The attention core's forward and backward seconds of one layer at seq, mbs 2. */
static void attn_core_seq_s(const model_spec *m, const char *system, layout_framework fw, int seq,
                            double *fwd, double *bwd)
{
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load(system, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = seq;
    t.global_batch = 2;
    layout l = layout_default(fw);
    l.mbs = 2;
    if (fw == FRAMEWORK_FSDP2) l.impl = IMPL_HF;
    static recipe r;
    recipe_layer(m, &s, &t, &l, false, &r, NULL);
    *fwd = *bwd = -1;
    for (int i = 0; i < r.n_ops; i++)
        if (!strcmp(r.op[i].name, "attn.core")) {
            *fwd = r.op[i].fwd_s;
            *bwd = r.op[i].bwd_s;
        }
    assert_true(*fwd > 0 && *bwd > 0);
}

static void attn_core_s(const model_spec *m, const char *system, layout_framework fw, double *fwd,
                        double *bwd)
{
    attn_core_seq_s(m, system, fw, 4096, fwd, bwd);
}

static void test_config_read(void **state)
{
    (void)state;
    model_spec m;
    load("starcoder2-7b", &m);
    assert_true(m.attention_dropout == 0.1);
    load("llama-3.1-8b", &m);
    assert_true(m.attention_dropout == 0);
}

static void test_hf_sdpa_dropout(void **state)
{
    (void)state;
    model_spec m, m0;
    load("starcoder2-7b", &m);
    m.sliding_window = 0; /* no explicit mask: is_causal */
    m0 = m;
    m0.attention_dropout = 0;
    double f1, b1, f0, b0;
    attn_core_s(&m, "h200", FRAMEWORK_FSDP2, &f1, &b1);
    attn_core_s(&m0, "h200", FRAMEWORK_FSDP2, &f0, &b0);
    assert_true(fabs((f1 - f0) - 0.607604e-3) < 1e-9);
    assert_true(fabs((b1 - b0) - 0.335511e-3) < 1e-9);
}

static void test_hf_sdpa_masked_dropout(void **state)
{
    (void)state;
    model_spec m, m0;
    load("starcoder2-7b", &m);
    m0 = m;
    m0.attention_dropout = 0;
    double f1, b1, f0, b0;
    attn_core_s(&m, "h200", FRAMEWORK_FSDP2, &f1, &b1); /* window 4096 = seq: masked */
    attn_core_s(&m0, "h200", FRAMEWORK_FSDP2, &f0, &b0);
    assert_true(fabs((f1 - f0) - 1.967162e-3) < 1e-9);
    assert_true(fabs((b1 - b0) - 3.235036e-3) < 1e-9);
    attn_core_seq_s(&m, "h200", FRAMEWORK_FSDP2, 2048, &f1, &b1); /* under the window */
    attn_core_seq_s(&m0, "h200", FRAMEWORK_FSDP2, 2048, &f0, &b0);
    assert_true(fabs((f1 - f0) - 0.151901e-3) < 1e-9);
    assert_true(fabs((b1 - b0) - 0.083878e-3) < 1e-9);
}

static void test_not_priced_elsewhere(void **state)
{
    (void)state;
    model_spec m, m0;
    load("starcoder2-7b", &m);
    m0 = m;
    m0.attention_dropout = 0;
    double f1, b1, f0, b0;
    attn_core_s(&m, "h200", FRAMEWORK_MEGATRON, &f1, &b1); /* Megatron's own attention */
    attn_core_s(&m0, "h200", FRAMEWORK_MEGATRON, &f0, &b0);
    assert_true(f1 == f0 && b1 == b0);
    attn_core_s(&m, "h100", FRAMEWORK_FSDP2, &f1, &b1); /* no measured figure on H100 */
    attn_core_s(&m0, "h100", FRAMEWORK_FSDP2, &f0, &b0);
    assert_true(f1 == f0 && b1 == b0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_read),
        cmocka_unit_test(test_hf_sdpa_dropout),
        cmocka_unit_test(test_hf_sdpa_masked_dropout),
        cmocka_unit_test(test_not_priced_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
