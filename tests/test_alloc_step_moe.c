/*
 * test_alloc_step_moe.c — the allocator replay's Hugging Face MoE block with Qwen2-MoE's gated
 * shared expert (costmodel/alloc_step_moe.c, replay24), by hand-checkable bytes: what the
 * block's forward leaves alive beyond the routed-only block's (the shared expert's saved
 * tensors), and that its backward frees all it makes but the gradients it returns, and the
 * experts' saved tensors as their nodes run (replay26); PhiMoE's
 * block (costmodel/alloc_step_phimoe.c, replay26) by the same hand count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_step_internal.h"

/* Qwen1.5-MoE-A2.7B's block (bench/realruns/configs/qwen1.5-moe-a2.7b.json: hidden 2048, 60
 * experts of width 1408, top 4, shared_expert_intermediate_size 5632) at 8192 tokens (s4k b2):
 * every tensor a multiple of the allocator's 512-byte rounding, so allocated bytes are exact. */
static dims block(bool shared)
{
    dims d = {.T = 8192, .h = 2048, .E = 60, .topk = 4, .ef = 1408, .sf = 5632, .f = 5632,
              .moe = true, .shared_gate = shared};
    return d;
}

/* GLM-4.5-Air's block (bench/realruns/configs/glm-4.5-air.json: hidden 4096, 128 experts of
 * width 1408, top 8, renormalised, one shared expert of 1408) at 8192 tokens (s4k b2); glm
 * false: the same experts behind Qwen3-MoE's softmax router */
static dims glm_block(bool glm)
{
    dims d = {.T = 8192, .h = 4096, .E = 128, .topk = 8, .ef = 1408, .sf = 1408, .f = 10944,
              .moe = true, .norm_topk = true, .glm = glm};
    return d;
}

/* The forward's live bytes (the saved set and the output), and after the backward with the
 * output's gradient dy alive: what is live beyond before it (the returned gradients) */
static void run_dims(dims d, uint64_t *fwd_bytes, uint64_t *bwd_extra_bytes, int *nwg)
{
    ctx c = {.a = alloc_replay_new()};
    assert_non_null(c.a);
    saved sv = {.n = 0};
    c.layer_saved = &sv;
    int out = alloc_step_moe_fwd(&c, &d, &sv);
    *fwd_bytes = alloc_replay_allocated_bytes(c.a);
    int dy = A(&c, 2.0 * d.T * d.h);
    uint64_t before = alloc_replay_allocated_bytes(c.a);
    int wg[MAX_LAYER_PARAMS];
    *nwg = 0;
    int gx = alloc_step_moe_bwd(&c, &d, dy, wg, nwg);
    *bwd_extra_bytes = alloc_replay_allocated_bytes(c.a) - before;
    F(&c, gx);
    for (int i = 0; i < *nwg; i++) F(&c, wg[i]);
    F(&c, dy);
    F(&c, out);
    release(&c, &sv);
    assert_int_equal(alloc_replay_allocated_bytes(c.a), 0); /* nothing leaks */
    assert_false(c.fail);
    alloc_replay_delete(c.a);
}

static void run(bool shared, uint64_t *fwd_bytes, uint64_t *bwd_extra_bytes, int *nwg)
{
    run_dims(block(shared), fwd_bytes, bwd_extra_bytes, nwg);
}

/* Saved per token by the shared expert (Qwen2MoeMLP at width 5632 and the gate's product):
 * gate_proj's, silu's, up_proj's outputs and their product, bf16: 4 x 2 x 5632 = 45,056 B;
 * down_proj's output, kept by the mul with the sigmoid: 2 x 2048 = 4,096 B; the sigmoid's
 * [T, 1] bf16: 2 B. 49,154 B a token, 402,669,568 B at 8192 tokens. */
static void test_shared_saved(void **state)
{
    (void)state;
    uint64_t f0, f1, b0, b1;
    int n0, n1;
    run(false, &f0, &b0, &n0);
    run(true, &f1, &b1, &n1);
    assert_int_equal(f1 - f0, 8192ull * 49154);
    /* the backward returns the input's gradient and the weight gradients (bf16): the routed
     * block's three (gate_up [E, 2f, h], down [E, h, f], router [E, h]), then the shared
     * expert's gate [1, h], its down, up and gate [sf, h] each */
    assert_int_equal(n0, 3);
    assert_int_equal(n1, 7);
    uint64_t routed = 2ull * (60 * 2 * 1408 * 2048 + 60 * 2048 * 1408 + 60 * 2048);
    uint64_t grad_in = 2ull * 8192 * 2048;
    /* and frees, as their nodes run, the eleven tensors the experts saved (replay26; before,
     * they stayed to the layer's end): at S = 32,768 copies, the int64 permutation, token
     * index and inverse permutation 3 x 262,144; the gathered rows and the masked down output
     * bf16 [S, h] 2 x 134,217,728; the fp32 sorted weights 131,072; the offsets (240 B, a
     * 512-byte block); the bool mask 32,768; the masked gate_up output bf16 [S, 2f]
     * 184,549,376; silu's output and the product, 2 x 92,274,688: 638,484,992 B */
    uint64_t experts_saved = 638484992ull;
    assert_int_equal(b0 + experts_saved, grad_in + routed);
    /* 2 x 2048 = 4,096 B, rounded up to 512: 4,096 */
    assert_int_equal(b1 + experts_saved, grad_in + routed + 4096 + 3ull * 2 * 5632 * 2048);
}

/* GLM-4.5's block against the softmax-routed one (moereplay25; Glm4MoeTopkRouter.forward and
 * Glm4MoeMoE.forward, transformers 5.17.0 modeling_glm4_moe.py 292-317, 395-402). Saved beyond
 * it: F.linear's fp32 input x.float() [T, h] (4 x 4096 = 16,384 B a token) and fp32 weight
 * [E, h] (4 x 128 x 4096 = 2,097,152 B once); sigmoid's fp32 [T, E] output for the softmax's,
 * the gathered weights [T, k] for topk's values, the indices and the denominator for the sum's:
 * the same bytes; the shared expert's four [T, 1408] bf16 tensors (4 x 2 x 1408 = 11,264 B a
 * token). 27,648 B a token: 226,492,416 + 2,097,152 = 228,589,568 B. */
static void test_glm_saved(void **state)
{
    (void)state;
    uint64_t f0, f1, b0, b1;
    int n0, n1;
    run_dims(glm_block(false), &f0, &b0, &n0);
    run_dims(glm_block(true), &f1, &b1, &n1);
    assert_int_equal(f1 - f0, 228589568ull);
    /* the weight gradients: the experts' two and the router's [E, h] bf16, then the shared
     * expert's down, up, gate [1408, h] */
    assert_int_equal(n0, 3);
    assert_int_equal(n1, 6);
    assert_int_equal(b1 - b0, 3ull * 2 * 1408 * 4096);
}

/* PhiMoE's block (bench/realruns/configs/phi-3.5-moe.json: hidden 4096, 16 experts of width
 * 6400, top 2) at T = 8192 tokens (s4k b2), S = 2T = 16,384 routed copies. What its forward
 * leaves alive (modeling_phimoe.py 480-525, 349-469; alloc_step_phimoe.c's header):
 *  - the two input-jitter noises mul_ saves, bf16 [T, h]: 2 x 2 x 8192 x 4096 = 134,217,728;
 *  - per sparsemixer pass: masked_fill's bool mask [T, E] 131,072, softmax's bf16 [T, E]
 *    262,144, gather's [T, 1] 16,384, the int64 selection [T, 1] 65,536: x 2 = 950,272;
 *  - the grouped_mm experts with bf16 routing weights: perm, token index, inverse permutation,
 *    int64 [S]: 3 x 131,072; the gathered rows and the masked down output, bf16 [S, h]:
 *    2 x 134,217,728; the sorted weights bf16 [S] 32,768; the offsets int32 [E] (64, rounded
 *    to 512); the bool mask [S] 16,384; the masked gate_up output bf16 [S, 2f] 419,430,400;
 *    silu's output and the product, bf16 [S, f]: 2 x 209,715,200: 1,107,739,136 in all;
 *  - the output, the bf16 sum over k, [T, h]: 67,108,864.
 * 1,310,016,000 B. (With Qwen3-MoE's softmax router and fp32 routing weights the list differs:
 * before replay26 the block was not listed, alloc_step_layer_saved_bytes refused the form.) */
static void test_phimoe_saved(void **state)
{
    (void)state;
    dims d = {.T = 8192, .h = 4096, .E = 16, .topk = 2, .ef = 6400, .f = 6400, .moe = true,
              .phimoe = true, .jitter = true};
    uint64_t f, b;
    int n;
    run_dims(d, &f, &b, &n);
    assert_int_equal(f, 1310016000ull);
    /* returned: the input's gradient [T, h] and, bf16, down [E, h, f], gate_up [E, 2f, h], the
     * router [E, h]; freed: the experts' saved 1,107,739,136 B (above) */
    assert_int_equal(n, 3);
    assert_int_equal(b + 1107739136ull,
                     2ull * 8192 * 4096 + 2ull * (16ull * 4096 * 6400 * 3 + 16 * 4096));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_saved),
        cmocka_unit_test(test_glm_saved),
        cmocka_unit_test(test_phimoe_saved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
