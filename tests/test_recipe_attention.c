/*
 * test_recipe_attention.c — the attention core of the layer recipe under sliding-window masks:
 * a masked (Hugging Face / SDPA) window priced at the masked kernel's measured rate whatever
 * the window, and Megatron/Transformer Engine's own 128-key window at cuDNN's measured
 * "sliding" rate (costmodel/layer_recipe.c sliding_attention_s). Split from test_recipe.c.
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

#include "attention_rate.h"
#include "compute.h"
#include "layer_recipe.h"

#include "recipe_fixture.h"

static void test_window_mask_attention(void **state)
{
    (void)state;
    load("8b", "h100");
    training_spec t = training_default();
    t.seq_len = 4096, t.global_batch = 1;
    layout l = fsdp2(1);
    static recipe r;
    double fwd[2], bwd[2];
    const int windows[2] = {2047, 1024};
    for (int k = 0; k < 2; k++) {
        M.sliding_window = windows[k], M.sliding_period = 1, M.sliding_mask = 1;
        M.sliding_first_layer = 0;
        recipe_layer(&M, &S, &t, &l, false, &r, NULL);
        fwd[k] = op_named(&r, "attn.core")->fwd_s;
        bwd[k] = op_named(&r, "attn.core")->bwd_s;
    }
    near(fwd[1], fwd[0], "masked attention forward does not depend on the window");
    near(bwd[1], bwd[0], "masked attention backward does not depend on the window");
    double fw, bw;
    assert_true(attn_table_rates(&S.attention_rates, ATTN_MASK_WINDOW, 128, 32, 4096, &fw, &bw));
    double flops = 0.5 * 2.0 * 4096.0 * 4096.0 * 32 * (128 + 128); /* 5.50e11 */
    near(fwd[0], flops / fw, "masked attention forward: causal FLOPs over the window rate");
    near(bwd[0], 2.5 * flops / bw, "masked attention backward: 2.5x over the window rate");
}

/* Megatron/TE's own sliding window (cuDNN, window_size) of 128 keys: the sliding layers at
 * the system's measured "sliding" rate over the window's FLOPs, the full layers at the causal
 * rate (layer_recipe.c sliding_attention_s; NVIDIA's cuDNN benchmark of GPT-OSS's attention on
 * GB200 in the b200 preset). Every other layer sliding, as GPT-OSS; head dim 64, seq 4096. A
 * window the points were not measured at (127) keeps the causal rate over the mean FLOPs. */
static void test_sliding_attention_te(void **state)
{
    (void)state;
    load("8b", "b200");
    training_spec t = training_default();
    t.seq_len = 4096, t.global_batch = 8;
    M.head_dim = 64;
    M.sliding_period = 2, M.sliding_mask = 1, M.sliding_first_layer = 0;
    layout l = megatron(1, 1, 8, false);
    static recipe r;
    double fw, bw, sfw, sbw, sc = compute_attention_rate_scale(&S);
    assert_true(attn_table_rates(&S.attention_rates, ATTN_MASK_CAUSAL, 64, 32, 4096, &fw, &bw));
    assert_true(attn_table_rates(&S.attention_rates, ATTN_MASK_SLIDING, 64, 32, 4096, &sfw, &sbw));
    assert_true(sfw < 0.2 * fw && sbw < 0.2 * bw);
    double full = 2.0 * 4096 * 4096 * 32 * 128; /* every score, d_qk + d_v = 128 */
    M.sliding_window = 128;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double f_f = 0.5 * full, f_s = full * (128 - 128.0 * 128 / 8192) / 4096;
    near(op_named(&r, "attn.core")->fwd_s, 0.5 * (f_f / fw + f_s / sfw) / sc,
         "sliding layers at the sliding rate, full ones at the causal rate (forward)");
    near(op_named(&r, "attn.core")->bwd_s, 2.5 * 0.5 * (f_f / bw + f_s / sbw) / sc,
         "the same, backward");
    M.sliding_window = 127;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double f127 = 0.5 * (f_f + full * (127 - 127.0 * 127 / 8192) / 4096);
    near(op_named(&r, "attn.core")->fwd_s, f127 / (fw * sc), "another window: the causal rate");
}

/* Hugging Face's mask only on the sliding layers (gemma19; transformers 5.17.0 masking_utils.py
 * _ignore_causal_mask_sdpa: the full layers' mask is skipped, SDPA runs is_causal): every other
 * layer sliding, as Gemma 2, window 2048 < seq 4096, head dim 256 (Gemma's, the H200 table's
 * points measured in bench/results/gemma19_2026-11-29). Both kinds divide the same causal
 * FLOPs, half the s x s scores: the sliding half at the window rate, the full half at the
 * causal rate. */
static void test_window_mask_full_layers(void **state)
{
    (void)state;
    load("8b", "h200");
    training_spec t = training_default();
    t.seq_len = 4096, t.global_batch = 1;
    layout l = fsdp2(1);
    static recipe r;
    M.head_dim = 256;
    M.sliding_window = 2048, M.sliding_period = 2, M.sliding_mask = 1, M.sliding_first_layer = 0;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double wf, wb, cf, cb, sc = compute_attention_rate_scale(&S);
    assert_true(attn_table_rates(&S.attention_rates, ATTN_MASK_WINDOW, 256, 32, 4096, &wf, &wb));
    assert_true(attn_table_rates(&S.attention_rates, ATTN_MASK_CAUSAL, 256, 32, 4096, &cf, &cb));
    assert_true(cf > 3 * wf && cb > 3 * wb); /* measured: 556 / 409 against 130 / 107 TFLOP/s */
    double flops = 0.5 * 2.0 * 4096.0 * 4096.0 * 32 * (256 + 256); /* 1.10e12 */
    near(op_named(&r, "attn.core")->fwd_s, 0.5 * (flops / wf + flops / cf) / sc,
         "sliding layers at the window rate, full ones causal (forward)");
    near(op_named(&r, "attn.core")->bwd_s, 2.5 * 0.5 * (flops / wb + flops / cb) / sc,
         "the same, backward");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_mask_attention),
        cmocka_unit_test(test_sliding_attention_te),
        cmocka_unit_test(test_window_mask_full_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
