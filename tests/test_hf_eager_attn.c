/*
 * test_hf_eager_attn.c — transformers' eager attention under --impl hf (costmodel/
 * hf_eager_attn.h), worked by hand on GPT-OSS-20B (tests/data/hf/gpt-oss-20b.json: 64 heads, 8 KV
 * heads of 64, sinks, sliding window 128 on every other layer of 24) and Llama-3.2-1B (32
 * heads, 8 KV heads of 64) at seq 4096, one sequence, one GPU: which attention runs, the bytes
 * autograd keeps per layer, the transient peak, the kernels' bytes and the hardware FLOPs.
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

#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "flops.h"
#include "hf_eager_attn.h"
#include "memory.h"

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("got %.12g, want %.12g", got, want);
}

static model_spec load(const char *file, const char *name)
{
    model_spec m;
    char err[256];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", HF_FIXTURE_DIR, file);
    if (model_load_json(path, name, &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

static training_spec train(void)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    return t;
}

/* The default under impl hf follows the class: GPT-OSS (sinks, _supports_sdpa = False) runs
 * eager, Llama flash; an explicit flash for GPT-OSS is refused; Megatron and torchtitan keep
 * what was asked. */
static void test_which(void **state)
{
    (void)state;
    model_spec g = load("gpt-oss-20b.json", "gpt-oss-20b");
    model_spec q = load("llama-3.2-1b.json", "llama-3.2-1b");
    training_spec t = train();
    layout hf = layout_default(FRAMEWORK_FSDP2), tt = layout_default(FRAMEWORK_TORCHTITAN);
    assert_true(hf_eager_refuses_sdpa(&g));
    assert_false(hf_eager_refuses_sdpa(&q));
    assert_int_equal(layout_attention_of(&g, &t, &hf), ATTENTION_UNFUSED);
    assert_int_equal(layout_attention_of(&q, &t, &hf), ATTENTION_FLASH);
    assert_int_equal(layout_attention_of(&g, &t, &tt), ATTENTION_FLASH);
    assert_false(hf_eager_flash_refused(&g, &t, &hf));
    t.attention_set = true;
    assert_true(hf_eager_flash_refused(&g, &t, &hf));
    assert_false(hf_eager_flash_refused(&q, &t, &hf));
    char err[512];
    assert_int_equal(layout_check(&g, NULL, &t, &hf, 1, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "gpt_oss"));
    t.attention = ATTENTION_UNFUSED;
    assert_true(hf_eager_attn_applies(&q, &t, &hf));
}

/*
 * Saved per token and layer, GPT-OSS: the bf16 softmax output over 4096 + 1 (sink) columns at
 * 64 heads, 2 x 64 x 4097 = 524,416; max's int64 indices 8 x 64 = 512; repeat_kv's k and v
 * copies at 64 heads where the base counts 8, 2 x (64 - 8) x 2 x 64 = 14,336: 539,264 B, so
 * 2,208,825,344 B for the layer's 4096 tokens (2.06 GiB).
 * Against explicit flash on the same layout, the layer's activations differ by 4096 x (539,264
 * - 256 (flash's fp32 log-sum-exp, 4 x 64) - 7,168 (HF's SDPA repeat_kv copies on the masked
 * half of the layers, 0.5 x 2 x 56 x 128)) - 16,777,216 (the SDPA bf16 mask per layer, 0.5 x
 * 2 x 4096^2) = 2,161,639,424.
 * Llama-3.2-1B: fp32 softmax 4 + its bf16 copy 2 over 4096 columns at 32 heads, 786,432;
 * repeat_kv 2 x 24 x 2 x 64 = 6,144: 792,576 B a token.
 * Transient, GPT-OSS: three bf16 s x (s + 1) tensors (the backward's peak, measured:
 * bench/results/oss22_2026-11-29), 6 x 64 x 4096 x 4097 = 6,444,023,808, and the two bf16
 * masks (full, sliding) 2 x 2 x 4096^2 = 67,108,864: 6,511,132,672.
 */
static void test_saved(void **state)
{
    (void)state;
    model_spec g = load("gpt-oss-20b.json", "gpt-oss-20b");
    model_spec q = load("llama-3.2-1b.json", "llama-3.2-1b");
    training_spec t = train();
    layout hf = layout_default(FRAMEWORK_FSDP2);
    near(hf_eager_saved_bytes_per_token(&g, &t, &hf), 539264);
    near(4096 * hf_eager_saved_bytes_per_token(&g, &t, &hf), 2208825344.0);
    double eager = memory_layer_activation_bytes(&g, &t, &hf, 1);
    training_spec tf = t;
    tf.attention_set = true;
    double flash = memory_layer_activation_bytes(&g, &tf, &hf, 1);
    near(eager - flash, 2161639424.0);
    near(hf_eager_transient_bytes(&g, &t, &hf), 6511132672.0);
    assert_true(hf_eager_saved_bytes_per_token(&q, &t, &hf) == 0); /* flash by default */
    t.attention = ATTENTION_UNFUSED;
    near(hf_eager_saved_bytes_per_token(&q, &t, &hf), 792576);
    /* Llama's layer in backward peaks inside _softmax_backward_data (SoftMax.cu
     * softmax_backward_cuda_out: the result and `grad * output`, both fp32, beside the fp32
     * incoming gradient and the saved fp32 output): 16 bytes a score, 10 beyond the 6 saved,
     * 10 x 32 x 4096^2 = 5,368,709,120, and the bf16 mask 2 x 4096^2 = 33,554,432 (eagerck23;
     * 6 bytes a score before, -16.6% on the checkpointed run) */
    near(hf_eager_transient_bytes(&q, &t, &hf), 5402263552.0);
}

/*
 * Kernels, GPT-OSS, one layer: rows = 4096 x 64 = 262,144, Sc = rows x 4096 = 1,073,741,824
 * scores, Sk = rows x 4097 = 1,074,003,968 with the sink column.
 *   forward: scale 4 Sc, mask add 4 Sc + 2 Sc / 64 (the mask once), cat 2 Sc + 2 Sk, max
 *     2 Sk, sub 4 Sk, softmax 4 Sk = 10.03125 Sc + 12 Sk = 23,659,020,288 B in 6 launches;
 *   backward: slice_backward's zeros 2 Sk and copy 4 Sc, the softmax's grad * output 6 Sk and
 *     kernel 6 Sk, sub's neg 4 Sk and sum 2 Sk, max's zeros 2 Sk, the gradients' sum 6 Sk, the
 *     scale's 4 Sc = 8 Sc + 28 Sk = 38,662,045,696 B in 9 launches.
 * FLOPs: eager computes every score, flash the causal half (the sliding layers their window's):
 * per layer 2 x 4096 x 4096 x 64 x (64 + 64) = 274,877,906,944 against the mean of a full
 * layer's half, 137,438,953,472, and a sliding layer's (128 - 128^2 / 8192) / 4096 of it,
 * 8,455,716,864: 72,947,335,168. Three passes over 24 layers: 3 x 24 x 201,930,571,776 =
 * 14,539,001,167,872 hardware FLOPs more per step of one sequence.
 */
static void test_kernels_flops(void **state)
{
    (void)state;
    model_spec g = load("gpt-oss-20b.json", "gpt-oss-20b");
    training_spec t = train();
    layout hf = layout_default(FRAMEWORK_FSDP2);
    elementwise_list e;
    hf_eager_score_kernels(&g, &t, &hf, 4096.0 * 64, &e);
    assert_true(e.eager && e.alone);
    near(elementwise_bytes(e.fwd, e.n_fwd), 23659020288.0);
    near(elementwise_bytes(e.bwd, e.n_bwd), 38662045696.0);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 6);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 9);
    training_spec tf = t;
    tf.attention_set = true;
    near(flops_hardware_per_step(&g, &t, &hf) - flops_hardware_per_step(&g, &tf, &hf),
         14539001167872.0);
}

/*
 * Pricing on h200 (data/systems/h200.json gpu.score_*, gpu.gemm_align1_*), GPT-OSS layer above:
 *   P @ V reads probs[..., :-1], rows 4097 apart (odd): 2 x 262,144 x 64 x 4096 =
 *     137,438,953,472 FLOPs at 8.12e13 (align1, nn) + the GEMM overhead; its dV at 1.05e14;
 *     Llama's rows of 4096 keep the aligned time;
 *   the cat's output, 262,144 x 4097 = 1,074,003,968 elements, is 32-bit indexable:
 *     CatArrayBatchedCopy at 0.14 of 4.8 TB/s; at b 2 (2,148,007,936) the offsets path, 0.354;
 *   the softmax over 4097 bf16 (8194 bytes, not a multiple of 16) at 0.211 forward, 0.442
 *     backward; Llama's fp32 over 4096 at 0.455 / 0.894; each plus the 1.5 us launch gap.
 */
static void test_pricing(void **state)
{
    (void)state;
    model_spec g = load("gpt-oss-20b.json", "gpt-oss-20b");
    model_spec q = load("llama-3.2-1b.json", "llama-3.2-1b");
    system_spec sys;
    char err[512];
    if (system_load("h200", getenv("PLAN_DATA_DIR"), &sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = train();
    layout hf = layout_default(FRAMEWORK_FSDP2);
    double rows = 4096.0 * 64, f = 137438953472.0, fwd, dv;
    hf_eager_pv_gemm_s(&sys, &g, &t, rows, 64, 1.0, &fwd, &dv);
    near(fwd, f / 8.12e13 + sys.gemm_overhead_s);
    near(dv, f / 1.05e14 + sys.gemm_overhead_s);
    hf_eager_pv_gemm_s(&sys, &q, &t, rows, 64, 1.0, &fwd, &dv);
    near(fwd, 1.0);
    near(dv, 1.0);
    elementwise_list e;
    hf_eager_score_kernels(&g, &t, &hf, rows, &e);
    double bw = 4.8e12, gap = 1.5e-6;
    for (int i = 0; i < e.n_fwd; i++) {
        const elementwise_kernel *k = &e.fwd[i];
        double s = hf_eager_kernel_s(&sys, &e, k);
        if (!strcmp(k->name, HF_EAGER_CAT)) near(s, k->bytes / (bw * 0.14) + gap);
        if (!strcmp(k->name, "eager.softmax")) near(s, k->bytes / (bw * 0.211) + gap);
        if (!strcmp(k->name, "eager.mask_add")) near(s, k->bytes / (bw * 0.354) + gap);
    }
    for (int i = 0; i < e.n_bwd; i++)
        if (!strcmp(e.bwd[i].name, "eager.softmax.bwd"))
            near(hf_eager_kernel_s(&sys, &e, &e.bwd[i]), e.bwd[i].bytes / (bw * 0.442) + gap);
    hf_eager_score_kernels(&g, &t, &hf, 2 * rows, &e); /* b 2: past 32-bit indexing */
    for (int i = 0; i < e.n_fwd; i++)
        if (!strcmp(e.fwd[i].name, HF_EAGER_CAT))
            near(hf_eager_kernel_s(&sys, &e, &e.fwd[i]), e.fwd[i].bytes / (bw * 0.354) + gap);
    t.attention = ATTENTION_UNFUSED;
    hf_eager_score_kernels(&q, &t, &hf, 4096.0 * 32, &e);
    for (int i = 0; i < e.n_fwd; i++)
        if (!strcmp(e.fwd[i].name, "eager.softmax"))
            near(hf_eager_kernel_s(&sys, &e, &e.fwd[i]), e.fwd[i].bytes / (bw * 0.455) + gap);
    for (int i = 0; i < e.n_bwd; i++)
        if (!strcmp(e.bwd[i].name, "eager.softmax.bwd"))
            near(hf_eager_kernel_s(&sys, &e, &e.bwd[i]), e.bwd[i].bytes / (bw * 0.894) + gap);
}

/* The trainer YAML states the attention the plan priced and plan check reads it back: GPT-OSS
 * under impl hf is priced eager, so flash_attn: false (SkyRL's flash_attention_2 switch) and
 * plan's attn_implementation: eager, named in the header as not SkyRL's; Llama keeps
 * flash_attn: true and no such key; an implementation plan does not price is bad input. */
static void emit_check(const model_spec *m, const char *name, bool eager)
{
    system_spec sys;
    char err[512];
    if (system_load("h200", getenv("PLAN_DATA_DIR"), &sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = train();
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 1;
    estimate e;
    if (estimate_layout(m, &sys, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = name};
    char *text = NULL;
    assert_int_equal(emit_yaml(&e, m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, eager ? "flash_attn: false" : "flash_attn: true"));
    assert_true((strstr(text, "attn_implementation: eager") != NULL) == eager);
    if (eager)
        assert_non_null(strstr(text, "NOT IN SkyRL's schema (SkyRL rejects it; plan check reads "
                                     "it): trainer.attn_implementation"));
    check_config cfg;
    check_report rep;
    assert_int_equal(check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err), CM_OK);
    assert_int_equal(cfg.training.attention, eager ? ATTENTION_UNFUSED : ATTENTION_FLASH);
    assert_int_equal(layout_attention_of(m, &cfg.training, &cfg.layout),
                     eager ? ATTENTION_UNFUSED : ATTENTION_FLASH);
    free(text);
}

static void test_emit_attention(void **state)
{
    (void)state;
    model_spec g = load("gpt-oss-20b.json", "gpt-oss-20b");
    model_spec q = load("llama-3.2-1b.json", "llama-3.2-1b");
    g.layers = 2; /* a cut, so one H200 holds it */
    emit_check(&g, "gpt-oss-20b", true);
    emit_check(&q, "llama-3.2-1b", false);
    const char *y = "trainer:\n  strategy: fsdp2\n  attn_implementation: flex_attention\n";
    check_config cfg;
    check_report rep;
    char err[512];
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "attn_implementation"));
    y = "trainer:\n  strategy: fsdp2\n  flash_attn: true\n  attn_implementation: eager\n";
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    assert_int_equal(cfg.training.attention, ATTENTION_UNFUSED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which),
        cmocka_unit_test(test_saved),
        cmocka_unit_test(test_kernels_flops),
        cmocka_unit_test(test_pricing),
        cmocka_unit_test(test_emit_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
