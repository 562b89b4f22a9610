/*
 * test_mcore_saved.c — what a Megatron-Core decoder layer keeps for its backward, term by term,
 * against hand-worked numbers (costmodel/memory_activations.c; bench/results/mcmem23_2026-11-29):
 * the routed copies (the probabilities applied in the experts' activation, so the combine keeps
 * no expert output), with PyTorch's path, which keeps it, beside for contrast; the q/k norms'
 * saved inputs; HybridEP's registered buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "memory.h"
#include "moe_dispatch.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static model_spec load(const char *name)
{
    char err[CM_ERRLEN];
    model_spec m;
    if (model_load(name, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

static training_spec seq4k(void)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    return t;
}

/* Qwen3-30B-A3B (hidden 2048, top 8 of 128 experts, expert FFN 768, SwiGLU), one sequence of
 * 4096 tokens, bf16, EP 8. Megatron: each routed copy keeps its permuted input (FC1's, 2 x 2048),
 * the weighted SwiGLU's input (FC1's output, 2 x 2 x 768) and product (FC2's input, 2 x 768),
 * and its fp32 probability (4): 4096 + 4608 + 4 = 8708 bytes, x 8 copies x 4096 tokens =
 * 285,343,744 bytes. torchtitan (compiled) also keeps the expert output the combine weights,
 * 2 x 2048 more a copy: 4096 x 8 x (4096 + 4608 + 4096) = 419,430,400. */
/* Qwen3-30B-A3B's routed bytes a layer, 4096 tokens at EP 8, under `framework` and `precision` */
static double qwen3_routed(int framework, layout_precision precision)
{
    model_spec m = load("qwen3-30b-a3b");
    training_spec t = seq4k();
    layout l = layout_default(framework);
    l.ep = l.dp = 8;
    l.precision = precision;
    l.compile = framework == FRAMEWORK_TORCHTITAN;
    return memory_layer_routed_activation_bytes(&m, &t, &l);
}

static void test_routed_copies_by_hand(void **state)
{
    (void)state;
    assert_float_equal(qwen3_routed(FRAMEWORK_MEGATRON, PRECISION_BF16), 285343744.0, 1.0);
    assert_float_equal(qwen3_routed(FRAMEWORK_TORCHTITAN, PRECISION_BF16), 419430400.0, 1.0);
}

/* MXFP8 (Megatron, --precision mxfp8): TE's GroupedLinear keeps FC1's and FC2's inputs as their
 * columnwise MXFP8 copies, 1 + 1/32 bytes an element: per copy 2048 x 33/32 + 4 x 768 +
 * 768 x 33/32 + 4 = 2112 + 3072 + 792 + 4 = 5980 bytes, x 8 x 4096 = 195,952,640. */
static void test_routed_copies_mxfp8_by_hand(void **state)
{
    (void)state;
    assert_float_equal(qwen3_routed(FRAMEWORK_MEGATRON, PRECISION_MXFP8), 195952640.0, 1.0);
}

/* Qwen3's q/k norms under Megatron (32 query heads, 4 KV heads, head dim 128): Transformer
 * Engine's RMSNorm keeps its input, 2 x (32 + 4) x 128 = 9216 bytes a token, and its fp32 rstd
 * per head, 4 x 36 = 144: 9360 x 4096 tokens = 38,338,560 bytes a layer, dense or MoE; half of
 * it at TP 2. */
static void test_qk_norm_inputs_by_hand(void **state)
{
    (void)state;
    model_spec m = load("qwen3-30b-a3b");
    assert_true(m.qk_norm);
    model_spec plain = m;
    plain.qk_norm = false;
    training_spec t = seq4k();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    for (int moe = 0; moe <= 1; moe++)
        assert_float_equal(memory_layer_activation_bytes(&m, &t, &l, moe) -
                               memory_layer_activation_bytes(&plain, &t, &l, moe),
                           38338560.0, 1.0);
    l.tp = 2;
    assert_float_equal(memory_layer_activation_bytes(&m, &t, &l, 0) -
                           memory_layer_activation_bytes(&plain, &t, &l, 0),
                       38338560.0 / 2, 1.0);
}

static system_spec sys_of(const char *name)
{
    char err[CM_ERRLEN];
    system_spec s;
    if (system_load(name, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return s;
}

/* HybridEP's buffers (moe_dispatch.c): rows = the rank's tokens x the EP group; per row a bf16
 * token (2h), fp32 probabilities of the domain's experts (4 x experts per rank x ranks per
 * NVLink domain) and fp32 scaling factors (4 x h / 128).
 * Qwen3-30B-A3B on B300, EP 8 in one host, MBS 8 x 4096: 262,144 rows x (4096 + 4 x 16 x 8 +
 * 4 x 16) = 262,144 x 4672 = 1,224,736,768 bytes.
 * DeepSeek-V3 on GB300 NVL72, EP 32 inside the rack, MBS 2 x 4096: 262,144 rows x (14336 +
 * 4 x 8 x 32 + 4 x 56) = 262,144 x 15584 = 4,085,252,096.
 * Qwen3-30B-A3B on H100, EP 16 over two 8-GPU hosts, MBS 1: 65,536 rows x (4096 + 4 x 8 x 8 +
 * 64) = 65,536 x 4416 = 289,406,976. The all-to-all dispatcher: none. */
static void test_hybridep_buffers_by_hand(void **state)
{
    (void)state;
    training_spec t = seq4k();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    l.ep = 8;
    l.dp = 8;
    l.mbs = 8;
    model_spec q = load("qwen3-30b-a3b");
    system_spec b300 = sys_of("b300");
    assert_float_equal(moe_dispatch_buffer_bytes(&q, &b300, &t, &l), 1224736768.0, 1.0);
    model_spec d = load("deepseek-v3");
    system_spec gb300 = sys_of("gb300-nvl72");
    l.ep = l.dp = 32;
    l.mbs = 2;
    assert_float_equal(moe_dispatch_buffer_bytes(&d, &gb300, &t, &l), 4085252096.0, 1.0);
    system_spec h100 = sys_of("h100");
    l.ep = l.dp = 16;
    l.mbs = 1;
    assert_float_equal(moe_dispatch_buffer_bytes(&q, &h100, &t, &l), 289406976.0, 1.0);
    l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    assert_float_equal(moe_dispatch_buffer_bytes(&q, &h100, &t, &l), 0.0, 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routed_copies_by_hand),
        cmocka_unit_test(test_routed_copies_mxfp8_by_hand),
        cmocka_unit_test(test_qk_norm_inputs_by_hand),
        cmocka_unit_test(test_hybridep_buffers_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
