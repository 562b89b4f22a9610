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
 * Transient, GPT-OSS: two bf16 score tensors, 4 x 64 x 4096 x 4097 = 4,296,015,872, and the
 * two bf16 masks (full, sliding) 2 x 2 x 4096^2 = 67,108,864: 4,363,124,736.
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
    near(hf_eager_transient_bytes(&g, &t, &hf), 4363124736.0);
    assert_true(hf_eager_saved_bytes_per_token(&q, &t, &hf) == 0); /* flash by default */
    t.attention = ATTENTION_UNFUSED;
    near(hf_eager_saved_bytes_per_token(&q, &t, &hf), 792576);
}

/*
 * Kernels, GPT-OSS, one layer: rows = 4096 x 64 = 262,144, Sc = rows x 4096 = 1,073,741,824
 * scores, Sk = rows x 4097 = 1,074,003,968 with the sink column.
 *   forward: scale 4 Sc, mask add 6 Sc, cat 4 Sk, max 2 Sk, sub 4 Sk, softmax 4 Sk =
 *     10 Sc + 14 Sk = 25,773,473,792 B in 6 launches;
 *   backward: scale 4 Sc, slice_backward 2 Sk + 4 Sc, softmax 6 Sk, sub's neg + sum 6 Sk, max's
 *     zeros 2 Sk, the gradients' sum 6 Sk = 8 Sc + 22 Sk = 32,218,021,888 B in 6 launches.
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
    near(elementwise_bytes(e.fwd, e.n_fwd), 25773473792.0);
    near(elementwise_bytes(e.bwd, e.n_bwd), 32218021888.0);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 6);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 6);
    training_spec tf = t;
    tf.attention_set = true;
    near(flops_hardware_per_step(&g, &t, &hf) - flops_hardware_per_step(&g, &tf, &hf),
         14539001167872.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which),
        cmocka_unit_test(test_saved),
        cmocka_unit_test(test_kernels_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
