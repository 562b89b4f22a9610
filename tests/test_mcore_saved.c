/*
 * test_mcore_saved.c — what a Megatron-Core decoder layer keeps for its backward, term by term,
 * against hand-worked numbers (costmodel/memory_activations.c; bench/results/mcmem23_2026-11-29):
 * the routed copies (the probabilities applied in the experts' activation, so the combine keeps
 * no expert output), with PyTorch's path, which keeps it, beside for contrast; the q/k norms'
 * saved inputs; HybridEP's registered buffers.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "memory.h"
#include "moe_buffers.h"

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
/* byte counts compared in double (cmocka's assert_float_equal compares floats: 32 B apart at
 * 4e8) */
#define assert_bytes(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1.0)

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
    assert_bytes(moe_dispatch_buffer_bytes(&q, &b300, &t, &l), 1224736768.0);
    model_spec d = load("deepseek-v3");
    system_spec gb300 = sys_of("gb300-nvl72");
    l.ep = l.dp = 32;
    l.mbs = 2;
    assert_bytes(moe_dispatch_buffer_bytes(&d, &gb300, &t, &l), 4085252096.0);
    system_spec h100 = sys_of("h100");
    l.ep = l.dp = 16;
    l.mbs = 1;
    /* EP 16 on H100 leaves the 8-GPU NVLink domain: T = 4096 tokens, N = 2 domains of R = 8,
     * E = 128 / 16 = 8 experts a rank, h = 2048. NVLink buffers 4096 x 16 x (4096 + 4 x 8 x 8
     * + 64) = 289,406,976 B (the figure before moebuf24, which left the RDMA buffers out);
     * the RDMA coordinator's (internode_doca.cu at DeepEP 17cfb81): dispatch 4096 x (4096 + 4
     * x 128 + 64) + 4096 x 1 x (4096 + 4 x 64 + 64) = 19,136,512 + 18,087,936, combine 2 x
     * 4096 x 1 x (4096 + 4 x 64) = 35,651,584: 72,876,032 B; 362,283,008 B in all. */
    assert_bytes(moe_dispatch_buffer_bytes(&q, &h100, &t, &l), 362283008.0);
    l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    assert_float_equal(moe_dispatch_buffer_bytes(&q, &h100, &t, &l), 0.0, 0.0);
}

/* Megatron, DeepEP over EP 8 (DP 8), defaults otherwise */
static layout deepep_ep8(void)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    l.ep = l.dp = 8;
    return l;
}

/* DeepEP's normal-mode Buffer as Megatron's get_buffer sizes it (fused_a2a.py at d0b3b77;
 * DeepEP 17cfb81 csrc/config.hpp, deep_ep/buffer.py config maps), channels = 20 SMs / 2 = 10:
 *   EP 8, h 7168 (hidden_bytes 14336): NVLink 10 x 8 ranks x 256 slots x (14336 + 8 + 1024 +
 *     512 + 512) + 10 x 8 x 5 x 4 = 335,709,760, rounded up to 128 B: 335,709,824; no RDMA;
 *     + 160 B of pointers and signals + the 32 MiB workspace = 369,264,416 B, whatever the
 *     tokens.
 *   EP 32, h 7168 (4 RDMA ranks): NVLink 10 x 8 x 288 x 16392 + 10 x 8 x 11 x 4 =
 *     377,675,200 -> 377,675,264; RDMA (dispatch 32/128 and combine 8/128: 128 slots both)
 *     10 x 4 x 128 x 2 x (14336 + 2072) + 10 x 4 x 18 x 2 x 4 = 168,023,680; in all
 *     377,675,264 + 160 + 168,023,680 + 33,554,432 = 579,253,536 B. */
static void test_deepep_buffers_by_hand(void **state)
{
    (void)state;
    moe_deepep_buffer b = moe_deepep_buffer_bytes(8, 2.0 * 7168, 20);
    assert_bytes(b.nvl_bytes, 335709824.0);
    assert_bytes(b.rdma_bytes, 0.0);
    assert_bytes(b.workspace_bytes, 33554432.0);
    b = moe_deepep_buffer_bytes(32, 2.0 * 7168, 20);
    assert_bytes(b.nvl_bytes, 377675264.0);
    assert_bytes(b.rdma_bytes, 168023680.0);

    training_spec t = seq4k();
    layout l = deepep_ep8();
    model_spec d = load("deepseek-v3");
    system_spec h100 = sys_of("h100");
    assert_bytes(moe_dispatch_buffer_bytes(&d, &h100, &t, &l), 369264416.0);
    l.mbs = 4; /* token-independent */
    assert_bytes(moe_dispatch_buffer_bytes(&d, &h100, &t, &l), 369264416.0);
    l.ep = l.dp = 32;
    assert_bytes(moe_dispatch_buffer_bytes(&d, &h100, &t, &l), 579253536.0);
}

/* The dispatcher's buffers occupy the device (total_bytes, need_bytes) but never pass through
 * torch's caching allocator, so the reserved figure leaves them out, as async TP's workspace
 * (memory.c). Megatron's reserved figure is the allocated peak: total - framework - them. */
static void test_dispatch_buffers_outside_reserved(void **state)
{
    (void)state;
    training_spec t = seq4k();
    layout l = deepep_ep8();
    model_spec q = load("qwen3-30b-a3b");
    system_spec h100 = sys_of("h100");
    memory_breakdown mb = memory_peak(&q, &h100, &t, &l);
    double buffers = moe_dispatch_buffer_bytes(&q, &h100, &t, &l);
    assert_true(buffers > 0);
    assert_bytes(mb.outside_allocator_bytes, buffers);
    double unreserved = mb.total_bytes - mb.framework_bytes - mb.reserved_bytes;
    assert_bytes(unreserved, buffers);
    l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    memory_breakdown a2a = memory_peak(&q, &h100, &t, &l);
    double added = mb.total_bytes - a2a.total_bytes;
    assert_bytes(added, buffers);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routed_copies_by_hand),
        cmocka_unit_test(test_routed_copies_mxfp8_by_hand),
        cmocka_unit_test(test_qk_norm_inputs_by_hand),
        cmocka_unit_test(test_hybridep_buffers_by_hand),
        cmocka_unit_test(test_deepep_buffers_by_hand),
        cmocka_unit_test(test_dispatch_buffers_outside_reserved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
