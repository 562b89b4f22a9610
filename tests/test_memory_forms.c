/*
 * test_memory_forms.c — the analytic per-layer activation bytes (memory_activations.c) of the
 * Hugging Face layer forms beyond Llama's agree with the allocator replay's tensor lists
 * (alloc_step_forms.c, replay25) that memforms25 derived them from: one OLMo 2 and one
 * Command-R layer counted by hand, and every listed family (and the HF MoE blocks of
 * alloc_step_moe.c) against the replay's own saved set (alloc_step_layer_saved_bytes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>
#include <math.h>

#include "alloc_step.h"
#include "memory.h"

static void spec(const char *config, int seq, int mbs, model_spec *m, training_spec *t, layout *l)
{
    char err[CM_ERRLEN];
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", REALRUNS_CONFIGS_DIR, config);
    if (model_load(path, "data", m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    *t = training_default();
    t->seq_len = seq;
    t->global_batch = mbs;
    *l = layout_default(FRAMEWORK_FSDP2);
    l->dp = 1;
    l->mbs = mbs;
    l->impl = IMPL_HF;
}

/* one layer's analytic bytes at 4096 tokens (seq 4096, mbs 1) against a hand count a token */
static void check_layer(const char *config, double bytes_per_token)
{
    model_spec m;
    training_spec t;
    layout l;
    spec(config, 4096, 1, &m, &t, &l);
    double got = memory_layer_activation_bytes(&m, &t, &l, 0);
    if (fabs(got - 4096.0 * bytes_per_token) > 1)
        fail_msg("%s: %.1f bytes a token, hand count %.0f", config, got / 4096, bytes_per_token);
}

/* OLMo-2-7B (h = q = kv = 4096, 32 heads, f = 11008), per token, transformers 5.17.0
 * modeling_olmo2.py: the attention saves the layer's input x (2h: no input norm, 303-322); q_norm
 * and k_norm run over the whole [T, 4096] projections and Olmo2RMSNorm (61-65) saves x.float(),
 * x * rstd in fp32 and the fp32 rstd row: 8 q + 4 and 8 kv + 4; SDPA saves q, k, v (2 q, 2 kv,
 * 2 kv), its output (2 q) and log-sum-exp (4 x 32); the post-attention norm 8h + 4, the residual
 * sum the MLP reads (2h), the post-feedforward norm 8h + 4; the MLP gate's, silu's, up's outputs
 * and their product (4 x 2f):
 * 2h + 8h+4 + 2h + 8h+4 = 81,928; 65,544; 32,896; 88,064: 268,432 B a token.
 * Before memforms25: 235,912 (LlamaRMSNorm's bf16 copy, per-head rows). */
static void test_olmo2_layer(void **state)
{
    (void)state;
    check_layer("olmo2-7b", 268432);
}

/* Command-R v01 35B (h = q = kv = 8192, 64 heads, f = 22528, no q/k norms), per token,
 * modeling_cohere.py: one CohereLayerNorm (51-65) of fp32 ops saves x - mean twice, the
 * normalised product (4h each) and rsqrt's row (4): 12h + 4; its output, which q, k, v and the
 * MLP read, 2h; SDPA 2q + 2kv + 2kv + 2q + 4 x 64; the MLP 4 x 2f:
 * 98,308 + 16,384 + 65,792 + 180,224 = 360,708 B a token (the fp32 weight copy, 4h a layer, is
 * not per token). Before memforms25: 278,784 (the norm's input and output only). */
static void test_cohere_layer(void **state)
{
    (void)state;
    check_layer("command-r-35b", 360708);
}

/* every family alloc_step_forms.c lists: the analytic bytes, averaged over the layers,
 * equal the replay's saved set but for CohereLayerNorm's fp32 weight copy (4h a layer) */
static void check_family(const char *config, int layers)
{
    model_spec m;
    training_spec t;
    layout l;
    spec(config, 4096, 2, &m, &t, &l);
    if (layers > 0) m.layers = layers;
    double replay = 0, analytic = 0;
    for (int i = 0; i < m.layers; i++) {
        double r = alloc_step_layer_saved_bytes(&m, &t, &l, i);
        if (r < 0) fail_msg("%s: the replay does not list layer %d", config, i);
        replay += r;
        analytic += memory_layer_activation_bytes(&m, &t, &l, model_layer_is_moe(&m, i));
    }
    if (fabs(replay - analytic) > 4.0 * m.hidden * m.layers + 1)
        fail_msg("%s: replay %.0f analytic %.0f bytes", config, replay, analytic);
}

static void test_families(void **state)
{
    (void)state;
    check_family("olmo2-7b", 0);
    check_family("command-r-35b", 0);
    check_family("command-r7b", 0); /* Cohere2: whole config (its NoPE count is the config's) */
    check_family("stablelm-2-1.6b", 0);
    check_family("starcoder2-7b", 0);
    check_family("pythia-6.9b", 0);
    check_family("exaone4-1.2b", 0);
    check_family("seed-oss-36b", 4);
    /* Hugging Face MoE blocks on the grouped_mm experts (alloc_step_moe.c): OLMoE's (and its
     * q/k norms over the projection), Qwen2-MoE's gated shared expert, Qwen3-MoE's, Mixtral's */
    check_family("olmoe-1b-7b", 4);
    check_family("qwen1.5-moe-a2.7b", 4);
    check_family("qwen3-30b-a3b", 4);
    check_family("mixtral-8x7b", 2);
    check_family("llama-3.1-8b", 0);
    check_family("qwen3-0.6b", 0);
}

/* replay26: PhiMoE's input jitter (modeling_phimoe.py 481-484, 516-519: the block and its
 * router each multiply the norm's output in place by bf16 uniform noise, which mul_ saves):
 * 2 x 2 x 4096 B a token of an MoE layer, 134,217,728 B at s4k b2, as the replay lists them
 * (alloc_step_phimoe.c); the rest of its layer is within 24 B a token of the replay's list
 * (the sparsemixer's [T, E] and [T, 1] tensors against the analytic router terms) */
static void test_phimoe_jitter(void **state)
{
    (void)state;
    model_spec m, quiet;
    training_spec t;
    layout l;
    spec("phi-3.5-moe", 4096, 2, &m, &t, &l);
    assert_true(m.input_jitter);
    quiet = m;
    quiet.input_jitter = false;
    double with = memory_layer_activation_bytes(&m, &t, &l, 1);
    assert_true(fabs(with - memory_layer_activation_bytes(&quiet, &t, &l, 1) - 134217728.0) < 1);
    double replay = alloc_step_layer_saved_bytes(&m, &t, &l, 0);
    assert_true(fabs(replay - with) <= 24.0 * 8192 + 512); /* and the offsets' 512-B block */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_olmo2_layer),
        cmocka_unit_test(test_cohere_layer),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_phimoe_jitter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
