/*
 * test_mcore_expert_gemm.c — Megatron-Core's expert GEMMs under Transformer Engine
 * (costmodel/mcore_expert_gemm.h, issues 15 and 20): one GEMM worked by hand, the main_grad
 * bytes, where the model applies, and GPT-OSS 120B's experts at the published DGX-H100 row's
 * shapes against the H100 measurement (bench/results/moegemm_2026-11-28); and the alltoall
 * dispatcher's second permutation (sort_chunks_by_idxs, costmodel/elementwise.c fused_layer) and
 * TEGroupedMLP's FP8/FP4 quantization padding behind it (fused_layer).
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
#include "mcore_expert_gemm.h"

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

/*
 * HBM 2e12 B/s at efficiency 0.5 = 1e12 B/s; a kernel's fixed cost 1 us. A GEMM of m 1,000,
 * n 2,000, k 500 (2e9 flops) with 4 us of math (a rate of 5e14 flop/s) and bf16 operands of
 * 2 x (1,000 x 500 + 500 x 2,000) = 3e6 B (3 us: shorter than the math). The reference 8192^3
 * product's output share at that rate: 5e14 / (8192 x 1e12) = 0.06103515625. Output 1,000 x
 * 2,000 elements x 4 bytes (bf16 main_grad read and written) = 8e6 B: 8 us. Time: 1 + 4 x (1 -
 * 0.06103515625) + 8 = 12.755859375 us. With K 10 (0.08 us of math, 60,000 B of operands: 0.06
 * us) the main loop is 0.08 x 0.93896484375 = 0.0751171875 us and the output the same 8 us:
 * 9.0751171875 us (the roofline's memory term would have counted a bf16 output of 4 us more).
 * With operands of 5e6 B (5 us, longer than the math) the main loop is their read: 1 + 5 + 8.
 */
static void test_one_gemm(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.hbm_efficiency = 0.5;
    s.gemm_overhead_s = 1e-6;
    near(mcore_expert_gemm_s(&s, 4e-6, 3e6, 1000, 2000, 500, 4), 12.755859375e-6);
    /* bf16 output (2 bytes): 4 us of output instead of 8 */
    near(mcore_expert_gemm_s(&s, 4e-6, 3e6, 1000, 2000, 500, 2), 8.755859375e-6);
    near(mcore_expert_gemm_s(&s, 0.08e-6, 6e4, 1000, 2000, 10, 4), 9.0751171875e-6);
    near(mcore_expert_gemm_s(&s, 4e-6, 5e6, 1000, 2000, 500, 4), 14e-6);
    /* no shape: nothing */
    near(mcore_expert_gemm_s(&s, 4e-6, 3e6, 0, 2000, 500, 4), 0);
}

static void test_wgrad_bytes_and_applies(void **state)
{
    (void)state;
    training_spec t = training_default();
    t.grad_reduce_bf16 = true;
    near(mcore_wgrad_out_bytes(&t), 4); /* bf16 main_grad: read 2 + write 2 */
    t.grad_reduce_bf16 = false;
    near(mcore_wgrad_out_bytes(&t), 8); /* fp32 main_grad: read 4 + write 4 */
    layout meg = layout_default(FRAMEWORK_MEGATRON);
    assert_true(mcore_expert_gemm_applies(&meg)); /* Megatron's default layer code is TE */
    meg.impl = IMPL_NATIVE;
    assert_false(mcore_expert_gemm_applies(&meg));
    layout fsdp = layout_default(FRAMEWORK_FSDP2), titan = layout_default(FRAMEWORK_TORCHTITAN);
    assert_false(mcore_expert_gemm_applies(&fsdp));
    assert_false(mcore_expert_gemm_applies(&titan));
}

static const recipe_op *op(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    fail_msg("no op %s", name);
    return NULL;
}

/* GPT-OSS 120B (tests/data/hf/gpt-oss-120b.json), the h100 preset, the published H100 row's
 * training (seq 4096, --grad-reduce-in-bf16) and layout (Megatron, distributed optimizer, EP 8
 * over DP 8, MBS 1; the alltoall dispatcher by default). */
static void gptoss_h100(model_spec *m, system_spec *s, training_spec *t, layout *l)
{
    char err[CM_ERRLEN];
    if (model_load_json(HF_FIXTURE_DIR "/gpt-oss-120b.json", "gpt-oss-120b", m, err,
                        sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (system_load("h100", data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    *t = training_default();
    t->seq_len = 4096;
    t->global_batch = 64;
    t->grad_reduce_bf16 = true;
    *l = layout_default(FRAMEWORK_MEGATRON);
    l->sharding = SHARDING_DISTOPT;
    l->ep = 8, l->dp = 8, l->mbs = 1;
}

/* One expert GEMM of the h100 preset as the recipe prices it (bf16). */
static double te(const system_spec *s, double m, double n, double k, double out_bytes)
{
    return mcore_expert_gemm_s(s, compute_gemm_math_s(s, s->peak_bf16_flops_per_s, 1, m, n, k),
                               2 * (m * k + k * n), m, n, k, out_bytes);
}

/*
 * GPT-OSS 120B at the published H100 row (TP 1, EP 8, MBS 1, seq 4096, --grad-reduce-in-bf16):
 * 16 local experts x 1,024 rows, h = f = 2,880, fc1 2,880 -> 5,760 (gated), fc2 2,880 -> 2,880.
 * h100 preset: 989.4e12 x 0.70 = 692.58e12 flop/s, HBM 3.35e12 x 0.91 = 3.0485e12 B/s, 2.5 us a
 * kernel. fc1's forward per expert: 33.97e9 flops = 49.05 us of math, less the reference share
 * 692.58e12 / (8192 x 3.0485e12) = 2.773%, plus 1,024 x 5,760 x 2 B = 3.87 us of output, plus
 * 2.5 us = 54.06 us; each of the 6 GEMMs x 16 experts so. Measured on one H100 (the six groups
 * on 4 streams, 4 s back-to-back at the 700 W cap): 4.188 ms; the layer's experts op is within
 * 5% of it (4.35 ms; the plain roofline before, 3.55 ms, was 15% under).
 */
static void test_gptoss_experts(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    training_spec t;
    layout l;
    gptoss_h100(&m, &s, &t, &l);
    static recipe r;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_int_equal(r.local_experts, 16);
    near(r.expert_rows, 1024);
    double T = 1024, h = 2880, f = 2880;
    double fwd = 16 * (te(&s, T, 2 * f, h, 2) + te(&s, T, h, f, 2));
    double bwd = 16 * (te(&s, T, h, 2 * f, 2) + te(&s, h, 2 * f, T, 4) + te(&s, T, f, h, 2) +
                       te(&s, f, h, T, 4));
    const recipe_op *ex = op(&r, "experts");
    near(ex->fwd_s, fwd);
    near(ex->bwd_s, bwd);
    near(te(&s, T, 2 * f, h, 2), 2.5e-6 + (2 * T * 2 * f * h / 692.58e12) *
                                             (1 - 692.58e12 / (8192 * 3.0485e12)) +
                                     T * 2 * f * 2 / 3.0485e12);
    double measured = 4.188352e-3; /* bench/results/moegemm_2026-11-28 layer6 sustained */
    assert_true(fabs((ex->fwd_s + ex->bwd_s) / measured - 1) < 0.05);
    /* fp32 main_grad: the two wgrads move 4 more bytes per weight-gradient element */
    t.grad_reduce_bf16 = false;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    near(op(&r, "experts")->bwd_s, bwd + 16 * 4 * (h * 2 * f + f * h) / 3.0485e12);
    /* torchtitan's grouped experts keep the roofline: one grouped kernel per shape */
    layout tt = layout_default(FRAMEWORK_TORCHTITAN);
    tt.ep = 8, tt.dp = 8, tt.mbs = 1;
    recipe_layer(&m, &s, &t, &tt, true, &r, NULL);
    double ov = s.gemm_overhead_s;
    near(op(&r, "experts")->fwd_s,
         16 * (compute_gemm_s(&s, T, 2 * f, h) - ov) + ov + 16 * (compute_gemm_s(&s, T, h, f) - ov) +
             ov);
}


/*
 * The alltoall dispatcher's sort of the received rows by local expert and its inverse before
 * the combine, at GPT-OSS's H100 row: 4,096 tokens x top-4 = 16,384 rows of 2,880 bf16, read
 * and written: 4 x 16,384 x 2,880 = 188,743,680 B per kernel, two kernels each way, at the h100
 * preset's 3.35e12 x 0.91 B/s: 2 x 61.91 us = 0.1238 ms forward and backward. Not under the
 * flex dispatchers (DeepEP, HybridEP: their permute is their own), nor with one local expert.
 */
/* GPT-OSS at the H100 row behind the alltoall dispatcher, its MoE layer's recipe in *r. */
typedef struct {
    model_spec m;
    system_spec s;
    training_spec t;
    layout l;
} gptoss_case;

static void gptoss_alltoall(gptoss_case *c, recipe *r)
{
    gptoss_h100(&c->m, &c->s, &c->t, &c->l);
    c->l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    recipe_layer(&c->m, &c->s, &c->t, &c->l, true, r, NULL);
}

static void test_sort_chunks(void **state)
{
    (void)state;
    static gptoss_case c;
    static recipe r;
    gptoss_alltoall(&c, &r);
    model_spec m = c.m;
    system_spec s = c.s;
    training_spec t = c.t;
    layout l = c.l;
    double one = 4.0 * 4096 * 4 * 2880 / (3.35e12 * 0.91);
    near(op(&r, "moe.sort_chunks")->fwd_s, 2 * one);
    near(op(&r, "moe.sort_chunks.bwd")->bwd_s, 2 * one);
    assert_true(fabs(2 * one - 0.1238e-3) < 0.0001e-3);
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    for (int i = 0; i < r.n_ops; i++) assert_false(!strncmp(r.op[i].name, "moe.sort_chunks", 15));
    l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    l.ep = 64, l.dp = 64; /* 128 experts / 64: two local experts, still sorted */
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    near(op(&r, "moe.sort_chunks")->fwd_s, 2 * one);
}

/*
 * TEGroupedMLP's quantization padding (costmodel/elementwise.c fused_layer): in FP8 behind the
 * alltoall dispatcher the routed rows are padded before the experts and unpadded after (Megatron-LM
 * 2edffadb experts.py 344-352, 398-399; TE 366798e fp8_padding.py), the inverse copies in the
 * backward. At GPT-OSS's H100 row in FP8: 16,384 rows of 2,880 bf16 read and written, 188,743,680
 * B per copy, two each way at 3.35e12 x 0.91 B/s (the sort's bytes), plus the fp32 probs padded
 * (8 B a row: 131,072 B). None in bf16, and none behind HybridEP (it pads in its dispatch).
 */
static void test_quant_pad(void **state)
{
    (void)state;
    static gptoss_case c;
    static recipe r;
    gptoss_alltoall(&c, &r); /* bf16: no padding */
    for (int i = 0; i < r.n_ops; i++) assert_false(!strncmp(r.op[i].name, "moe.quant_pad", 13));
    c.l.precision = PRECISION_FP8;
    recipe_layer(&c.m, &c.s, &c.t, &c.l, true, &r, NULL);
    double bw = 3.35e12 * 0.91, one = 4.0 * 4096 * 4 * 2880 / bw, probs = 8.0 * 4096 * 4 / bw;
    near(op(&r, "moe.quant_pad")->fwd_s, 2 * one);
    near(op(&r, "moe.quant_pad.bwd")->bwd_s, 2 * one);
    near(op(&r, "moe.quant_pad.probs")->fwd_s, probs);
    near(op(&r, "moe.quant_pad.probs.bwd")->bwd_s, probs);
    c.l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    recipe_layer(&c.m, &c.s, &c.t, &c.l, true, &r, NULL);
    for (int i = 0; i < r.n_ops; i++) assert_false(!strncmp(r.op[i].name, "moe.quant_pad", 13));
    /* DeepEP: its permute pads from Megatron-LM 2edffadb on (no copies); --moe-expert-padding
     * prices older Megatron-Core's, the same copies */
    c.l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    recipe_layer(&c.m, &c.s, &c.t, &c.l, true, &r, NULL);
    for (int i = 0; i < r.n_ops; i++) assert_false(!strncmp(r.op[i].name, "moe.quant_pad", 13));
    c.l.moe_expert_padding = true;
    recipe_layer(&c.m, &c.s, &c.t, &c.l, true, &r, NULL);
    near(op(&r, "moe.quant_pad")->fwd_s, 2 * one);
    near(op(&r, "moe.quant_pad.bwd")->bwd_s, 2 * one);
    char err[CM_ERRLEN];
    if (layout_check(&c.m, &c.s, &c.t, &c.l, 8, err, sizeof err) != CM_OK) fail_msg("%s", err);
    /* the knob is DeepEP's: behind alltoall (priced anyway) or HybridEP it is refused */
    c.l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    assert_int_equal(layout_check(&c.m, &c.s, &c.t, &c.l, 8, err, sizeof err), CM_ERULE);
    if (!strstr(err, "--moe-expert-padding")) fail_msg("%s", err);
}

/*
 * TE's quantize kernels launched per local expert (mcore_expert_gemm.h): at 1 us a launch and
 * 1e12 B/s for the split traffic, 16 local experts, 2 tensors, 16e6 B over all experts: current
 * scaling (3 kernels: amax, scale, cast) 15 x (3 x 2 x 1 us + 16e6 / 16 / 1e12 s) = 15 x 7 us =
 * 105 us; MXFP8 (1 kernel) 15 x (2 + 1) = 45 us; delayed scaling (one fused multi-tensor cast for
 * all experts), NVFP4 (one fused split kernel), bf16, one local expert, torchtitan, or a system
 * without the measurement: nothing.
 */
static void test_quantize_split_by_hand(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.expert_split_launch_s = 1e-6;
    s.expert_split_bytes_per_s = 1e12;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_int_equal(mcore_expert_quantize_kernels(&l), 3);
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 105e-6);
    near(mcore_expert_quantize_split_s(&s, &l, 1, 2, 16e6), 0);
    l.precision = PRECISION_MXFP8;
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 45e-6);
    l.precision = PRECISION_NVFP4;
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 0);
    l.precision = PRECISION_BF16;
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 0);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_DELAYED;
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 0);
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 45e-6);
    layout tt = layout_default(FRAMEWORK_TORCHTITAN);
    tt.precision = PRECISION_FP8;
    near(mcore_expert_quantize_split_s(&s, &tt, 16, 2, 16e6), 0);
    s.expert_split_bytes_per_s = 0; /* not measured: not priced */
    near(mcore_expert_quantize_split_s(&s, &l, 16, 2, 16e6), 0);
}

/*
 * In the layer: GPT-OSS 120B at the H100 row (16 local experts) in FP8 with current scaling.
 * With the per-byte term switched off (an unbounded rate) and 1 us a launch, the quantize ops
 * grow by 15 extra launches x 3 kernels x 2 tensors = 90 us each way over the same layer without
 * the measurement. The h100 and h200 presets carry the H200 measurement (1.262 us; 23.44e12 B/s
 * on H200, x 3.35 / 4.8 on H100: bench/results/bwmoe23_2026-11-29/split_fit.txt).
 */
static void test_quantize_split_in_layer(void **state)
{
    (void)state;
    static gptoss_case c;
    static recipe r;
    gptoss_alltoall(&c, &r);
    near(c.s.expert_split_launch_s, 1.262e-6);
    near(c.s.expert_split_bytes_per_s, 1.636e13);
    c.l.precision = PRECISION_FP8;
    c.l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    c.s.expert_split_bytes_per_s = 0;
    recipe_layer(&c.m, &c.s, &c.t, &c.l, true, &r, NULL);
    double f0 = op(&r, "lp.quantize")->fwd_s, b0 = op(&r, "lp.quantize_bwd")->bwd_s;
    c.s.expert_split_launch_s = 1e-6;
    c.s.expert_split_bytes_per_s = 1e300;
    recipe_layer(&c.m, &c.s, &c.t, &c.l, true, &r, NULL);
    near(op(&r, "lp.quantize")->fwd_s - f0, 90e-6);
    near(op(&r, "lp.quantize_bwd")->bwd_s - b0, 90e-6);
    system_spec h200;
    char err[CM_ERRLEN];
    if (system_load("h200", data_dir(), &h200, err, sizeof err) != CM_OK) fail_msg("%s", err);
    near(h200.expert_split_launch_s, 1.262e-6);
    near(h200.expert_split_bytes_per_s, 2.344e13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_gemm),
        cmocka_unit_test(test_wgrad_bytes_and_applies),
        cmocka_unit_test(test_gptoss_experts),
        cmocka_unit_test(test_sort_chunks),
        cmocka_unit_test(test_quant_pad),
        cmocka_unit_test(test_quantize_split_by_hand),
        cmocka_unit_test(test_quantize_split_in_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
