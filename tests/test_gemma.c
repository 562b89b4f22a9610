/*
 * test_gemma.c — what Hugging Face's Gemma 2 / Gemma 3 code costs beyond a Llama layer (issue
 * 14, bench/results/gemma19_2026-11-29), each term against a number worked by hand from the
 * configs bench/realruns/configs/gemma-3-1b.json (h 1152, 4 heads, 1 KV head, head dim 256, 26
 * layers, 22 of them sliding with a 512-token window, vocabulary 262,144) and gemma-2-9b.json
 * (h 3584, 16 heads, 8 KV heads, head dim 256, 42 layers alternating sliding with a 4096-token
 * window, vocabulary 256,000, final logits soft-capped at 30):
 *   GemmaRMSNorm's kernels (elementwise_norm.c): 40 bytes an element forward, 104 backward, four
 *   norms of the hidden size a layer (and the q/k norms);
 *   its saved tensors (memory_activations.c): 8 bytes an element per norm, fp32 x and x_hat;
 *   the soft-capping's kernels and the bf16 tensor it keeps through the loss's backward;
 *   the sliding layers' explicit mask from seq = window on, and repeat_kv before it;
 *   four norm tensors a layer for the host's per-tensor costs.
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
#include "host_dispatch.h"
#include "memory.h"

#define NEAR(x, want) (fabs((x) - (want)) <= 1e-9 * fabs(want) + 1e-6)

static void load(const char *name, model_spec *m)
{
    const char *d = getenv("PLAN_DATA_DIR");
    char path[512], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/%s.json", REALRUNS_CONFIGS_DIR, name);
    if (model_load(path, d ? d : "data", m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* One GPU, FSDP2, Hugging Face's model code, seq 4096, mbs 1. */
static void hf_one_gpu(layout *l, training_spec *t)
{
    *t = training_default();
    t->seq_len = 4096;
    t->global_batch = 1;
    *l = layout_default(FRAMEWORK_FSDP2);
    l->mbs = 1;
    l->impl = IMPL_HF;
}

static double bytes_with_prefix(const elementwise_kernel *k, int n, const char *prefix)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        if (!strncmp(k[i].name, prefix, strlen(prefix))) s += k[i].count * k[i].bytes;
    return s;
}

/* Gemma-3-1B over 4096 tokens: four GemmaRMSNorms of h = 1152, 40 x 4096 x 1152 x 4 =
 * 754,974,720 B forward, 104 x ... = 1,962,934,272 B backward; the q and k norms over the mean
 * width of q (1024) and k (256), 640 a token, twice: 40 x 4096 x 640 x 2 = 209,715,200 B and
 * 104 x ... = 545,259,520 B. No LlamaRMSNorm kernel is left. */
static void test_gemma_norm_kernels(void **state)
{
    (void)state;
    model_spec m;
    load("gemma-3-1b", &m);
    assert_true(m.norm_fp32_scale && m.sandwich_norm && m.qk_norm);
    layout l;
    training_spec t;
    hf_one_gpu(&l, &t);
    static elementwise_list e;
    elementwise_layer(&m, &l, 4096, false, &e);
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "gnorm."), 754974720.0));
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "gnorm."), 1962934272.0));
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "gqknorm."), 209715200.0));
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "gqknorm."), 545259520.0));
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "rmsnorm.") == 0);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "qknorm.") == 0);
    /* the final norm: one GemmaRMSNorm, 40 x 4096 x 1152 = 188,743,680 B */
    elementwise_head(&m, &l, 4096, &e);
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "gnorm."), 188743680.0));
    /* parameter tensors a layer: q, k, v, o, four norms, q and k norms, gate, up, down */
    assert_true(host_dispatch_layer_tensors(&m, false) == 13);
}

/* Gemma-3-1B's activations a layer over 4096 tokens, against the same model with Llama's norms
 * (two of them, weight x the bf16 cast): per token 4 x 8h - 4h = 28h against 8h, 20 x 1152 =
 * 23,040 B, and the q/k norms 8 against 6 bytes an element of q and k, 2 x 5 x 256 = 2,560 B,
 * and the two more norms' fp32 rstd, 2 x 4 B (bench/results/hfsav20_2026-11-29): 25,608 B a
 * token, 104,890,368 B. */
static void test_gemma_norm_activations(void **state)
{
    (void)state;
    model_spec m;
    load("gemma-3-1b", &m);
    layout l;
    training_spec t;
    hf_one_gpu(&l, &t);
    double gemma = memory_layer_activation_bytes(&m, &t, &l, 0);
    m.norm_fp32_scale = false, m.sandwich_norm = false;
    double llama = memory_layer_activation_bytes(&m, &t, &l, 0);
    assert_true(NEAR(gemma - llama, 104890368.0));
}

/* Gemma 2's soft-capped logits over 4096 tokens: the loss keeps 14 bytes a logit at its
 * backward's peak, not 12: 2 x 4096 x 256,000 = 2,097,152,000 B more; its kernels 4 + 4 + 4
 * bytes a logit forward (12,582,912,000 B) and 4 + 6 + 4 backward (14,680,064,000 B). */
static void test_gemma2_softcap(void **state)
{
    (void)state;
    model_spec m;
    load("gemma-2-9b", &m);
    assert_true(m.final_logit_softcap == 30);
    layout l;
    training_spec t;
    hf_one_gpu(&l, &t);
    double capped = memory_logits_bytes(&m, &t, &l);
    static elementwise_list e;
    elementwise_head(&m, &l, 4096, &e);
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "softcap."), 12582912000.0));
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "softcap."), 14680064000.0));
    m.final_logit_softcap = 0;
    assert_true(NEAR(capped - memory_logits_bytes(&m, &t, &l), 2097152000.0));
    elementwise_head(&m, &l, 4096, &e);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "softcap.") == 0);
}

/* The explicit mask from seq = window on (masking_utils.py line 263): Gemma-2-9B's 21 sliding
 * layers of 42 at seq 4096 (its window), none at 4095; Gemma-3-1B's 22 of 26 at seq 1024.
 * repeat_kv before the masked SDPA: Gemma-2's 8 KV heads to 16, per token and repeated tensor
 * 16 x 256 elements, the copy reading 8 x 256 x 2 and writing 16 x 256 x 2 = 12,288 B; over
 * 4096 tokens, k and v, on half the layers: 0.5 x 2 x 4096 x 12,288 = 50,331,648 B forward, the
 * backward's sums the same; kept by SDPA, 0.5 x 2 x (16 - 8) x 512 = 4,096 B a token more
 * (16,777,216 B). Gemma-3-1B's one KV head: a view, no copy, only the backward's sum. */
static void test_sliding_mask_and_repeat_kv(void **state)
{
    (void)state;
    model_spec m;
    load("gemma-2-9b", &m);
    layout l;
    training_spec t;
    hf_one_gpu(&l, &t);
    assert_true(NEAR(memory_hf_window_mask_share(&m, &t, &l), 0.5));
    static elementwise_list e;
    elementwise_layer(&m, &l, 4096, false, &e);
    double before = bytes_with_prefix(e.fwd, e.n_fwd, "");
    elementwise_hf_repeat_kv(&m, &l, 4096, memory_hf_window_mask_share(&m, &t, &l), &e);
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "repeat_kv.copy"), 50331648.0));
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "repeat_kv.bwd.sum"), 50331648.0));
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "") - before, 50331648.0));
    double masked = memory_layer_activation_bytes(&m, &t, &l, 0);
    double mask = memory_hf_window_mask_bytes(&m, &t, &l); /* 0.5 x 2 x 4096^2 */
    assert_true(NEAR(mask, 16777216.0));
    t.seq_len = 4095;
    assert_true(memory_hf_window_mask_share(&m, &t, &l) == 0);
    double unmasked = memory_layer_activation_bytes(&m, &t, &l, 0) * 4096.0 / 4095.0;
    assert_true(NEAR(masked - mask - unmasked, 16777216.0));

    load("gemma-3-1b", &m);
    t.seq_len = 1024;
    assert_true(NEAR(memory_hf_window_mask_share(&m, &t, &l), 22.0 / 26.0));
    elementwise_layer(&m, &l, 1024, false, &e);
    elementwise_hf_repeat_kv(&m, &l, 1024, 22.0 / 26.0, &e);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "repeat_kv.") == 0);
    /* the sum reads the 4-head gradient and writes the 1-head one: (2 + 2/4) x 1024 x 1024 */
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "repeat_kv.bwd.sum"),
                     22.0 / 26.0 * 2 * 2.5 * 1024 * 1024));
    /* no mask under the native implementation */
    l.impl = IMPL_NATIVE;
    assert_true(memory_hf_window_mask_share(&m, &t, &l) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemma_norm_kernels),
        cmocka_unit_test(test_gemma_norm_activations),
        cmocka_unit_test(test_gemma2_softcap),
        cmocka_unit_test(test_sliding_mask_and_repeat_kv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
