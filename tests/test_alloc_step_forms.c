/*
 * test_alloc_step_forms.c — the allocator replay's layer forms beyond Llama's
 * (costmodel/alloc_step_forms.c, replay25) by hand-checkable bytes: what one decoder layer's
 * forward leaves alive (its saved set and its output, tensor by tensor from transformers
 * 5.17.0's modeling files), and that its backward frees all it makes but the input's gradient
 * and the weight gradients.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_step_internal.h"

/* T tokens (s 4096, b 1), hidden = q = kv 1024 (8 heads of 128), MLP width 2048: every tensor
 * a multiple of the allocator's 512-byte rounding, so allocated bytes are exact */
enum { T = 4096, H = 1024, NH = 8, FF = 2048 };

static dims layer(int block, int norm_form)
{
    dims d = {.T = T, .s = T, .h = H, .q = H, .kv = H, .hd = H / NH, .f = FF, .a = NH,
              .rf = 1, .block = block, .norm_form = norm_form, .norms = 2};
    return d;
}

/* forward from a live input x (the layer may keep it); returns the bytes alive after it beyond
 * x, and after the backward (dy consumed) the bytes beyond x: the input's and weights'
 * gradients; then frees everything and checks that nothing leaks */
static void run(dims *d, uint64_t *fwd_bytes, uint64_t *bwd_bytes, int *nwg)
{
    ctx c = {.a = alloc_replay_new()};
    assert_non_null(c.a);
    alloc_step_layer_params(d);
    int x = A(&c, 2.0 * T * H);
    uint64_t x_bytes = alloc_replay_allocated_bytes(c.a);
    saved sv = {.n = 0};
    c.layer_saved = &sv;
    int y = alloc_step_form_layer_fwd(&c, d, x, &sv);
    *fwd_bytes = alloc_replay_allocated_bytes(c.a) - x_bytes;
    F(&c, y);
    int dy = A(&c, 2.0 * T * H);
    int wg[MAX_LAYER_PARAMS];
    *nwg = 0;
    int gx = alloc_step_form_layer_bwd(&c, d, dy, wg, nwg);
    release(&c, &sv);
    F(&c, x); /* a no-op where the layer kept (and so released) it */
    *bwd_bytes = alloc_replay_allocated_bytes(c.a);
    F(&c, gx);
    for (int i = 0; i < *nwg; i++) F(&c, wg[i]);
    assert_int_equal(alloc_replay_allocated_bytes(c.a), 0);
    assert_false(c.fail);
    alloc_replay_delete(c.a);
}

/* Cohere (modeling_cohere.py 51-65, 175-208, 330-344): CohereLayerNorm saves x - mean twice
 * (pow's and the product's), rsqrt's output and the fp32 normalised product (4Th + 4Th + 4T +
 * 4Th) and weight.float() (4h); the one norm's output feeds the attention (its projections save
 * it: 2Th), SDPA saves q, k, v after RoPE (fp32 inside, bf16 out: 2Tq, 2Tkv, 2Tkv), its output
 * (2Tq) and log-sum-exp (4T heads), and the gated MLP saves gate's, silu's, up's outputs and
 * their product (4 x 2Tf); the output 2Th. The input x is not saved (the norm copies it). */
static void test_cohere_parallel(void **state)
{
    (void)state;
    dims d = layer(ALLOC_BLOCK_PARALLEL, ALLOC_NORM_COHERE);
    d.rope32 = true;
    d.norms = 1;
    uint64_t fwd, bwd;
    int nwg;
    run(&d, &fwd, &bwd, &nwg);
    uint64_t th = (uint64_t)T * H, tf = (uint64_t)T * FF;
    uint64_t norm = 3 * 4 * th + 4 * T + 4 * H;
    uint64_t attn = 2 * th + 3 * 2 * th + 2 * th + 4ull * T * NH;
    assert_int_equal(fwd, norm + attn + 4 * 2 * tf + 2 * th);
    /* left after the backward: the input's gradient (2Th) and seven weight gradients (bf16):
     * the MLP's down, up, gate (2hf each), then o, v, k, q (2h^2 each) */
    assert_int_equal(nwg, 7);
    assert_int_equal(bwd, 2 * th + 3 * 2ull * H * FF + 4 * 2ull * H * H);
    /* its parameters: q, k, v, o, gate, up, down, one norm's weight (no biases) */
    assert_int_equal(d.nlp, 8);
}

/* OLMo 2 (modeling_olmo2.py 61-65, 221-236, 303-322): no input norm, so the projections save
 * the layer's input x itself (the layer keeps it: not counted); Olmo2RMSNorm saves x.float(),
 * rsqrt's output and x * rstd in fp32 (4 rows w + 4 rows + 4 rows w) for q_norm over [T, q],
 * k_norm over [T, kv], and the two post norms over [T, h]; SDPA as above; the MLP's four; the
 * residual sum the MLP reads (2Th) and the output (2Th). */
static void test_olmo2_post(void **state)
{
    (void)state;
    dims d = layer(ALLOC_BLOCK_POST, ALLOC_NORM_FP32W);
    d.qk_norm = d.qk_full = d.qk_wfull = true;
    uint64_t fwd, bwd;
    int nwg;
    run(&d, &fwd, &bwd, &nwg);
    uint64_t th = (uint64_t)T * H, tf = (uint64_t)T * FF;
    uint64_t olmo_norm = 8 * th + 4 * T; /* width h = q = kv here */
    uint64_t sdpa = 3 * 2 * th + 2 * th + 4ull * T * NH;
    assert_int_equal(fwd, 4 * olmo_norm + sdpa + 4 * 2 * tf + 2 * th + 2 * th);
    assert_int_equal(nwg, 7);
    assert_int_equal(bwd, 2 * th + 3 * 2ull * H * FF + 4 * 2ull * H * H);
    /* q, k, v, o, q_norm [q], k_norm [kv], gate, up, down, the two post norms */
    assert_int_equal(d.nlp, 11);
    assert_int_equal(d.lp[4], H);
}

/* StarCoder2 (modeling_starcoder2.py 54-61, 158-199): nn.LayerNorm saves its input (x, kept by
 * the layer; the residual sum for the second: 2Th) and fp32 mean and rstd (4T each, twice);
 * SDPA as above (GQA without a mask: k, v not repeated); dropout on o_proj's and c_proj's
 * outputs saves a bool mask each (Th); c_fc's output (saved by the GELU) and the GELU's (by
 * c_proj): 2 x 2Tf; the second norm's output (2Th, saved by c_fc); the output 2Th. */
static void test_starcoder2_seq(void **state)
{
    (void)state;
    dims d = layer(ALLOC_BLOCK_SEQ, ALLOC_NORM_LN);
    d.ln_bias = d.plain = d.mlp_bias = d.drop = d.qkv_bias = d.o_bias = true;
    uint64_t fwd, bwd;
    int nwg;
    run(&d, &fwd, &bwd, &nwg);
    uint64_t th = (uint64_t)T * H, tf = (uint64_t)T * FF;
    uint64_t ln = 2 * 4ull * T;
    uint64_t sdpa = 2 * th + 3 * 2 * th + 2 * th + 4ull * T * NH; /* n1 and SDPA's */
    assert_int_equal(fwd, 2 * ln + sdpa + 2 * th + 2 * 2 * tf + 2 * th + 2 * th + 2 * th);
    assert_int_equal(nwg, 6); /* c_proj, c_fc, o, v, k, q */
    assert_int_equal(bwd, 2 * th + 2 * 2ull * H * FF + 4 * 2ull * H * H);
    /* q, b, k, b, v, b, o, b, c_fc, b, c_proj, b, two norms' weight and bias */
    assert_int_equal(d.nlp, 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cohere_parallel),
        cmocka_unit_test(test_olmo2_post),
        cmocka_unit_test(test_starcoder2_seq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
