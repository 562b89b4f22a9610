/*
 * test_mcore_unfused.c — Megatron-Core's unfused eager kernels for YaRN RoPE and the experts'
 * output bias (costmodel/mcore_unfused.h, issues 15 and 20): their bytes and launches on a toy
 * model worked by hand; where they apply; and GPT-OSS 120B's layer at the published DGX-H100
 * row's shapes (TP 1, EP 8, MBS 1, seq 4096), priced by hand from the h100 preset, with the
 * host time the ops add to the Megatron MoE host floors; DeepSeek-V3's MLA RoPE without the
 * fusion (--no-rope-fusion) at its DGX-H100 row's shapes.
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
#include "layer_recipe.h"
#include "mcore_moe_host.h"
#include "mcore_unfused.h"
#include "recompute_modules.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("got %.12g, want %.12g", got, want);
}

/* h 100, 4 heads and 2 KV heads of 10, 8 experts top-2 with biases, rope_scaling yarn. */
static model_spec toy(void)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    m.hidden = 100;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 10;
    m.experts = 8;
    m.top_k = 2;
    m.expert_ffn = 50;
    m.expert_bias = true;
    snprintf(m.rope_scaling_type, sizeof m.rope_scaling_type, "yarn");
    return m;
}

static double total(const elementwise_kernel *k, int n) { return elementwise_bytes(k, n); }

/*
 * The bias at 4 local experts x 50 rows, h 100: one expert 5,000 elements, e = 20,000.
 *   forward: b * p 4 x 5,000 = 20,000 per launch x 4; t + b * p 10 x 5,000 = 50,000 x 4;
 *   cat 8e 160,000; .to(bf16) 6e 120,000: 560,000 bytes (28e) in 10 launches (2L + 2).
 *   backward: to_fp32 6e 120,000; per expert grad_t 6, grad_b mul 8, cast 6, sum 2, grad_p mul
 *   8, sum 4 = 34 x 5,000 x 4 = 680,000; split's cat 4e 80,000: 880,000 (44e) in 26 (6L + 2).
 * RoPE at 1,000 tokens, seq 500, TP 1: q 1,000 x 4 x 10 = 40,000 elements, k 20,000, the
 * table 500 x 10 = 5,000 fp32.
 *   forward: per call table 36 x 5,000 = 180,000 in 6 launches, tensor 24e in 6: q 960,000,
 *   k 480,000: 1,800,000 bytes in 24 launches.
 *   backward: 34e in 9 per call: 1,360,000 + 680,000 = 2,040,000 in 18.
 * At TP 2 the heads halve: tensor bytes halve, the tables stay.
 */
static void test_kernels(void **state)
{
    (void)state;
    model_spec m = toy();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.ep = 2, l.dp = 2;
    elementwise_list e;
    mcore_expert_bias(&m, &l, 4, 50, &e);
    assert_true(e.eager && !e.alone);
    near(total(e.fwd, e.n_fwd), 560000);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 10);
    near(total(e.bwd, e.n_bwd), 880000);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 26);

    mcore_unfused_rope(&m, &l, 1000, 500, &e);
    near(total(e.fwd, e.n_fwd), 1800000);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 24);
    near(total(e.bwd, e.n_bwd), 2040000);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 18);
    l.tp = 2;
    mcore_unfused_rope(&m, &l, 1000, 500, &e);
    near(total(e.fwd, e.n_fwd), 2 * 180000 + 720000);
    near(total(e.bwd, e.n_bwd), 1020000);
}

/*
 * The clamped GLU (moe11) over 200 routed rows, expert FFN 50: one half e = 10,000 elements.
 *   forward: clamp of each half 4e = 40,000 x 2, cat 8e 80,000: 160,000 bytes (16e), 3 launches.
 *   backward: masks 3e x 4 = 120,000, where 5e x 2 = 100,000, chunk's cat 8e 80,000: 300,000
 *   bytes (30e), 7 launches.
 * ETP 2 halves the width: 80,000 / 150,000. The measured kernels on H200 (bench/results/
 * moe11_2026-11-28: 16e in 0.402 ms, 30e in 0.788 ms at e = 47,185,920) ran 1.88 / 1.80 TB/s.
 */
static void test_clamped_glu(void **state)
{
    (void)state;
    model_spec m = toy();
    m.glu_limit = 7.0;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.ep = 2, l.dp = 2;
    elementwise_list e;
    mcore_clamped_glu(&m, &l, 200, &e);
    assert_true(e.eager);
    near(total(e.fwd, e.n_fwd), 160000);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 3);
    near(total(e.bwd, e.n_bwd), 300000);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 7);
    for (int i = 0; i < e.n_fwd; i++) assert_true(!strncmp(e.fwd[i].name, "moe_act.", 8));
    l.etp = 2, l.tp = 2;
    mcore_clamped_glu(&m, &l, 200, &e);
    near(total(e.fwd, e.n_fwd), 80000);
    near(total(e.bwd, e.n_bwd), 150000);
    /* not without the limit, outside Megatron, or under a full-iteration CUDA graph */
    layout g = layout_default(FRAMEWORK_MEGATRON);
    assert_true(mcore_clamped_glu_applies(&m, &g));
    g.cuda_graph_full_iteration = true;
    assert_false(mcore_clamped_glu_applies(&m, &g));
    layout titan = layout_default(FRAMEWORK_TORCHTITAN);
    assert_false(mcore_clamped_glu_applies(&m, &titan));
    m.glu_limit = 0;
    assert_false(mcore_clamped_glu_applies(&m, &l));
    mcore_clamped_glu(&m, &l, 200, &e);
    assert_int_equal(e.n_fwd + e.n_bwd, 0);
}

/* Megatron only; RoPE only for yarn without MLA or learned positions; the bias only with
 * expert biases. */
static void test_applies(void **state)
{
    (void)state;
    model_spec m = toy();
    layout meg = layout_default(FRAMEWORK_MEGATRON);
    layout fsdp = layout_default(FRAMEWORK_FSDP2);
    layout titan = layout_default(FRAMEWORK_TORCHTITAN);
    assert_true(mcore_unfused_rope_applies(&m, &meg));
    assert_true(mcore_expert_bias_applies(&m, &meg));
    assert_false(mcore_unfused_rope_applies(&m, &fsdp));
    assert_false(mcore_expert_bias_applies(&m, &titan));
    elementwise_list e;
    mcore_expert_bias(&m, &fsdp, 4, 50, &e);
    assert_int_equal(e.n_fwd + e.n_bwd, 0);
    snprintf(m.rope_scaling_type, sizeof m.rope_scaling_type, "llama3");
    assert_false(mcore_unfused_rope_applies(&m, &meg));
    snprintf(m.rope_scaling_type, sizeof m.rope_scaling_type, "yarn");
    m.mla = true;
    assert_false(mcore_unfused_rope_applies(&m, &meg));
    m.mla = false;
    m.expert_bias = false;
    assert_false(mcore_expert_bias_applies(&m, &meg));
}

static const recipe_op *op(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    fail_msg("no op %s", name);
    return NULL;
}

/*
 * GPT-OSS 120B (tests/data/hf/gpt-oss-120b.json: h 2880, 64 heads and 8 KV heads of 64, 128
 * experts top-4 with biases, rope_scaling yarn) at the published H100 row: EP 8 over DP 8, MBS
 * 1, seq 4096. 16 local experts x 4096 x 4 / 128 x 8 = 1,024 rows each.
 * h100 preset: HBM 3.35e12 B/s, eager_elementwise_efficiency 0.51 (not alone: 64 GPUs), gap
 * 1.5e-6 s per launch.
 *   moe_bias.add: 10 x 1,024 x 2,880 = 29,491,200 B per launch; 29,491,200 / (3.35e12 x 0.51)
 *   = 17.2614e-6 s + 1.5e-6 = 18.7614e-6 s x 16 = 300.18e-6 s.
 *   rope.yarn.q.add: 6 x 4,096 x 64 x 64 = 100,663,296 B: 58.9195e-6 + 1.5e-6 = 60.4195e-6 s.
 * Host (host.eager_op_fwd_s 1.31e-5, eager_op_bwd_s 1.52e-5): forward ops 24 (RoPE, before
 * the sync) + 34 (bias, after it) + 3 (the activation's clamps, moe11) = 61: 0.7991 ms, of it
 * 0.4847 ms after the sync; backward nodes 12 (RoPE without its tables) + 34 + 3 = 49:
 * 0.7448 ms (46 and 0.6992 ms before moe11 priced the clamps: changed on purpose).
 * The clamps: e = 16,384 rows x 2,880 = 47,185,920 elements a half; moe_act.clamp_cat
 * 8e = 377,487,360 B: 220.9436e-6 + 1.5e-6 s.
 */
static void test_gptoss_layer(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load_json(HF_FIXTURE_DIR "/gpt-oss-120b.json", "gpt-oss-120b", &m, err,
                        sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    near(s.host_eager_op_fwd_s, 1.31e-5);
    near(s.host_eager_op_bwd_s, 1.52e-5);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.ep = 8, l.dp = 8, l.mbs = 1;
    static recipe r;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_int_equal(r.local_experts, 16);
    near(r.expert_rows, 1024);
    const recipe_op *add = op(&r, "moe_bias.add");
    assert_int_equal(add->launches, 16);
    near(add->fwd_s, 16 * (29491200 / (3.35e12 * 0.51) + 1.5e-6));
    near(op(&r, "rope.yarn.q.add")->fwd_s, 100663296 / (3.35e12 * 0.51) + 1.5e-6);

    /* the host floors: the layer's own constants (the MoE block's, 3.7808 / 3.0216 ms, and
     * the attention block's, 0.777 / 0.371 ms: GPT-OSS has no q/k norms) plus the unfused
     * ops' (behaviour changed on purpose by moe7: the attention block's host time) */
    mcore_moe_host_times h = mcore_moe_host_of(&s, 8, 16);
    mcore_moe_host_add_attention(&s, &m, &h);
    near(h.fwd_s, 3.7808e-3 + 7.77e-4);
    near(h.bwd_s, 3.0216e-3 + 3.71e-4);
    recipe bare = r;
    bare.host_fwd_s = bare.host_bwd_s = 0;
    recipe_time g;
    recipe_price(&bare, &g);
    double bwd_host = h.bwd_s + 49 * 1.52e-5;
    near(r.host_bwd_s, fmax(0, bwd_host - g.bwd_comm_s));
    assert_true(r.host_fwd_s >= h.fwd_s + 61 * 1.31e-5 - g.fwd_comm_s - 1e-12);
    near(op(&r, "moe_act.clamp_cat")->fwd_s, 377487360 / (3.35e12 * 0.51) + 1.5e-6);
    /* the activation's sync (mcore_moe_host.h): without the limit, no clamps and one sync, a
     * lower forward floor */
    double fwd_two = r.host_fwd_s;
    double limit = m.glu_limit;
    m.glu_limit = 0;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_true(r.host_fwd_s < fwd_two);
    m.glu_limit = limit;

    /* without the biases, the clamps and with plain RoPE the layer has none of these ops */
    m.expert_bias = false;
    m.glu_limit = 0;
    m.rope_scaling_type[0] = '\0';
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    for (int i = 0; i < r.n_ops; i++) {
        assert_false(!strncmp(r.op[i].name, "moe_bias.", 9));
        assert_false(!strncmp(r.op[i].name, "rope.yarn.", 10));
        assert_false(!strncmp(r.op[i].name, "moe_act.", 8));
    }
    assert_true(r.host_bwd_s <= fmax(0, h.bwd_s - g.bwd_comm_s) + 1e-12);
}

/*
 * DeepSeek-V3's MLA RoPE without the fusion (--no-rope-fusion, moe12) at the published DGX-H100
 * row's attention shapes: TP 2 (64 of 128 heads a GPU), MBS 1, seq 4096; nope 128, rope 64, v
 * 128. tn = 4,096 x 64 = 262,144 (token, head) pairs.
 *   rope.mla.query_cat: 4 x tn x 192 = 201,326,592 B at 3.35e12 x 0.262 (h100 preset
 *   gpu.mla_rope_unfused_efficiency, bench/results/moe12_2026-11-28) = 229.3798e-6 s + 1.5e-6.
 *   rope.mla.q.add: 6 x tn x 64 = 100,663,296 B: 114.6899e-6 + 1.5e-6 s.
 *   rope.mla.bwd.kv_split_cat: 4 x tn x 256 = 268,435,456 B.
 * Off by default and under the fused path; under mla_up_proj the forward kernels re-run; the
 * knob is Megatron's only and reaches the layout's JSON.
 */
static void test_mla_rope(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load_json(HF_FIXTURE_DIR "/deepseek-v3.json", "deepseek-v3", &m, err,
                        sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    near(s.mla_rope_unfused_efficiency, 0.262);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 8192;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.tp = 2, l.sp = true, l.ep = 64, l.dp = 64, l.mbs = 1;
    l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    assert_false(mcore_unfused_mla_rope_applies(&m, &l)); /* yarn: the fused kernel */
    static recipe r, f;
    recipe_layer(&m, &s, &t, &l, true, &f, NULL);
    for (int i = 0; i < f.n_ops; i++) assert_true(strncmp(f.op[i].name, "rope.mla.", 9) != 0);
    l.rope_unfused = true;
    assert_true(mcore_unfused_mla_rope_applies(&m, &l));
    assert_false(mcore_unfused_rope_applies(&m, &l)); /* MLA's own path, not the plain one */
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    const recipe_op *qc = op(&r, "rope.mla.query_cat");
    near(qc->fwd_s, 201326592.0 / (3.35e12 * 0.262) + 1.5e-6);
    assert_true(qc->block == RECIPE_BLOCK_ATTENTION);
    near(op(&r, "rope.mla.q.add")->fwd_s, 100663296.0 / (3.35e12 * 0.262) + 1.5e-6);
    near(op(&r, "rope.mla.bwd.kv_split_cat")->bwd_s, 268435456.0 / (3.35e12 * 0.262) + 1.5e-6);
    assert_false(qc->recompute);
    /* the fused lump no longer carries RoPE's 4 bytes per element of q and k */
    assert_true(op(&r, "elementwise")->fwd_s < op(&f, "elementwise")->fwd_s);
    /* the mla_up_proj module re-runs them with the up projections */
    l.recompute = RECOMPUTE_SELECTIVE;
    char bad[64];
    assert_true(recompute_modules_parse("mla_up_proj", &l.recompute_modules, bad, sizeof bad));
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_true(op(&r, "rope.mla.query_cat")->recompute);
    assert_true(op(&r, "rope.mla.q.interleave")->recompute);
    assert_false(op(&r, "rope.mla.bwd.q_split_cat")->recompute);
    /* Megatron's only */
    layout fs = layout_default(FRAMEWORK_FSDP2);
    fs.dp = 8, fs.mbs = 1, fs.rope_unfused = true;
    assert_int_equal(layout_check(&m, &s, &t, &fs, 8, err, sizeof err), CM_ERULE);
    if (!strstr(err, "--no-rope-fusion is Megatron")) fail_msg("%s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_applies),
        cmocka_unit_test(test_clamped_glu),
        cmocka_unit_test(test_gptoss_layer),
        cmocka_unit_test(test_mla_rope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
