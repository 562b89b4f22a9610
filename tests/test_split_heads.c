/*
 * test_split_heads.c — Falcon-40B's attention under transformers' SDPA call (issue 14, ho27;
 * costmodel/hf_split_heads.h; bench/results/falcon27_2026-11-29). Worked by hand from
 * bench/realruns/configs/falcon-40b.json (128 query heads, 8 KV groups, head dim 64, hidden
 * 8192) on one H200:
 *  - FalconModel always materializes the causal mask, so every layer runs SDPA's masked path:
 *    the attention table's "window" points (data/systems/h200.json attention_rates, head dim
 *    64), whose rates divide the causal FLOPs 0.5 x 4 b a s^2 d.
 *    b 2, s 2048 (rows b x a = 256): 0.5 x 4 x 2 x 128 x 2048^2 x 64 = 137,438,953,472 FLOPs;
 *    forward at 123.3 TFLOP/s = 1.114671 ms, backward 2.5x at 125.2 = 2.744388 ms (the probe:
 *    1.151 and 2.667; is_causal 0.404 and 1.093, what plan priced before: 0.372 and 1.114).
 *    b 1, s 4096 (rows 128): 274,877,906,944 FLOPs; 132.3 -> 2.077687 ms, 126.3 -> 5.440972 ms
 *    (the probe: 2.176 and 5.498).
 *  - _split_heads' copies at b 2, s 2048 (4096 tokens; q width 8192, k/v 512, fused 9216):
 *    q's copy 4 x 4096 x 8192 = 134,217,728 bytes; k's and v's (2 x 512 + 2 x 8192) x 4096 =
 *    71,303,168 each; the backward's zeros 2 x 4096 x 9216 = 75,497,472 (three) and adds
 *    6 x 4096 x 9216 = 226,492,416 (two); RoPE's k at 128 heads (rope.k.mul 4 x 4096 x 8192
 *    = 134,217,728 a launch, as q's), without the view copy.
 *  - What a FalconDecoderLayer keeps (the probe, b 2, s 2048): 2,385,641,504 saved bytes less
 *    1,359,020,032 of bf16 parameters = 1,026,621,472: k and v at 128 heads (SDPA saves
 *    them) and the bf16 additive mask SDPA makes of the boolean one (2 b s^2 = 16,777,216).
 * Falcon-7B (multi_query: the math backend, hf_sdpa_math.h) and a Llama keep their pricing.
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

#include "elementwise.h"
#include "hf_split_heads.h"
#include "layer_recipe.h"
#include "memory.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *name, model_spec *m)
{
    char err[CM_ERRLEN], path[512];
    snprintf(path, sizeof path, "%s/%s", REALRUNS_CONFIGS_DIR, name);
    if (model_load(path, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static training_spec train(int seq, int mbs)
{
    training_spec t = training_default();
    t.seq_len = seq;
    t.global_batch = mbs;
    return t;
}

static layout hf(int mbs)
{
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.impl = IMPL_HF;
    l.mbs = mbs;
    l.dp = 1;
    return l;
}

static void test_which(void **state)
{
    (void)state;
    model_spec m;
    training_spec t = train(2048, 2);
    layout l = hf(2);
    load("falcon-40b.json", &m);
    assert_true(m.hf_mask_always);
    assert_true(m.hf_split_broadcast);
    assert_true(memory_hf_window_mask_share(&m, &t, &l) == 1.0);
    /* the bf16 additive mask SDPA saves: 2 x 2 x 2048^2 */
    assert_true(fabs(memory_hf_window_mask_bytes(&m, &t, &l) - 16777216.0) < 0.5);
    load("falcon-7b.json", &m); /* SDPA's math backend: priced by hf_sdpa_math.c */
    assert_true(m.hf_mask_always);
    assert_false(m.hf_split_broadcast);
    assert_true(memory_hf_window_mask_share(&m, &t, &l) == 0);
    load("llama-3.1-8b.json", &m);
    assert_false(m.hf_mask_always);
    assert_true(memory_hf_window_mask_share(&m, &t, &l) == 0);
}

static void core(int seq, int mbs, double *fwd, double *bwd)
{
    model_spec m;
    load("falcon-40b.json", &m);
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = train(seq, mbs);
    layout l = hf(mbs);
    static recipe r;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    *fwd = *bwd = -1;
    for (int i = 0; i < r.n_ops; i++)
        if (!strcmp(r.op[i].name, "attn.core")) *fwd = r.op[i].fwd_s, *bwd = r.op[i].bwd_s;
}

static void test_core_time(void **state)
{
    (void)state;
    double fwd, bwd;
    core(2048, 2, &fwd, &bwd);
    assert_true(fabs(fwd - 137438953472.0 / 123.3e12) < 1e-9);
    assert_true(fabs(bwd - 2.5 * 137438953472.0 / 125.2e12) < 1e-9);
    core(4096, 1, &fwd, &bwd);
    assert_true(fabs(fwd - 274877906944.0 / 132.3e12) < 1e-9);
    assert_true(fabs(bwd - 2.5 * 274877906944.0 / 126.3e12) < 1e-9);
}

static const elementwise_kernel *find(const elementwise_kernel *k, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) return &k[i];
    return NULL;
}

static void layer_list(const char *config, elementwise_list *e)
{
    model_spec m;
    load(config, &m);
    training_spec t = train(2048, 2);
    layout l = hf(2);
    elementwise_layer(&m, &l, 4096, false, e);
    hf_split_heads_kernels(&m, &t, &l, 4096, false, e);
}

static void test_kernels(void **state)
{
    (void)state;
    static elementwise_list e;
    layer_list("falcon-40b.json", &e);
    const elementwise_kernel *k = find(e.fwd, e.n_fwd, "split.copy_q");
    assert_non_null(k);
    assert_true(k->bytes == 134217728.0 && k->count == 1);
    k = find(e.fwd, e.n_fwd, "split.copy_kv");
    assert_non_null(k);
    assert_true(k->bytes == 71303168.0 && k->count == 2);
    k = find(e.fwd, e.n_fwd, "rope.k.mul");
    assert_non_null(k);
    assert_true(k->bytes == 134217728.0 && k->count == 2);
    k = find(e.bwd, e.n_bwd, "split.zeros");
    assert_non_null(k);
    assert_true(k->bytes == 75497472.0 && k->count == 3);
    k = find(e.bwd, e.n_bwd, "split.add");
    assert_non_null(k);
    assert_true(k->bytes == 226492416.0 && k->count == 2);
    assert_null(find(e.bwd, e.n_bwd, "rope.k.bwd.view_copy"));
    assert_non_null(find(e.bwd, e.n_bwd, "rope.q.bwd.view_copy"));
    /* a Llama keeps RoPE's k at its KV width and no split kernels */
    layer_list("llama-3.1-8b.json", &e);
    assert_null(find(e.fwd, e.n_fwd, "split.copy_q"));
    k = find(e.fwd, e.n_fwd, "rope.k.mul");
    assert_non_null(k);
    assert_true(k->bytes == 4.0 * 4096 * 8 * 128);
}

/* the probe's FalconDecoderLayer at b 2, s 2048 kept 1,026,621,472 bytes beyond its weights */
static void test_layer_bytes(void **state)
{
    (void)state;
    model_spec m;
    load("falcon-40b.json", &m);
    training_spec t = train(2048, 2);
    layout l = hf(2);
    double plan = memory_layer_activation_bytes(&m, &t, &l, 0);
    double measured = 1026621472.0;
    print_message("plan %.0f, measured %.0f bytes\n", plan, measured);
    assert_true(fabs(plan - measured) / measured < 0.01);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which),
        cmocka_unit_test(test_core_time),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_layer_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
