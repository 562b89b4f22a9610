/*
 * test_cp_ring_torch.c — PyTorch's ring attention beyond its SDPA calls (costmodel/
 * cp_ring_torch.h) against numbers worked by hand from the byte table in cp_ring_torch.c:
 *   forward  12 E + 38 E (c-1) + 8 K (c-1)
 *   backward E (10 + 10 c) + K (8 + 8 (c-1) + 20 + 26 (c-1) + 16 c + 12)
 * (E: output elements per rank, K: elements of k as SDPA gets it), and the torchtitan layer
 * recipe's CP ops against the Megatron one's.
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

#include "collective.h"
#include "cp_ring_torch.h"
#include "estimate.h"
#include "layer_recipe.h"

/* Llama-3.1-8B and the h200 preset, the recipes' model and system. */
static void load_8b_h200(model_spec *m, system_spec *s)
{
    const char *d = getenv("PLAN_DATA_DIR") ? getenv("PLAN_DATA_DIR") : "data";
    char err[CM_ERRLEN];
    if (model_load("8b", d, m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", d, s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* The list's forward and backward bytes and launches are the ones worked out by hand. */
static void expect_sums(const elementwise_list *el, double fwd_bytes, double bwd_bytes,
                        int fwd_launches, int bwd_launches)
{
    assert_true(fabs(elementwise_bytes(el->fwd, el->n_fwd) - fwd_bytes) < 1e-9);
    assert_true(fabs(elementwise_bytes(el->bwd, el->n_bwd) - bwd_bytes) < 1e-9);
    assert_int_equal(elementwise_launches(el->fwd, el->n_fwd), fwd_launches);
    assert_int_equal(elementwise_launches(el->bwd, el->n_bwd), bwd_launches);
}

/* E = 1000, K = 250. c = 2: forward 12000 + 38000 + 2000 = 52000 bytes in 2 + 1 + 1 + 1 + 1 + 1
 * = 7 launches; backward 30 x 1000 + 106 x 250 = 56500 in 1+2+1+2+2+2+2+2+1+1 = 16.
 * c = 4: forward 12000 + 114000 + 6000 = 132000 in 4 + 3 x 4 + 1 = 17; backward 50 x 1000 +
 * 206 x 250 = 101500 in 1+2+3+2+6+6+4+4+1+1 = 30. */
static void test_bytes_by_hand(void **state)
{
    (void)state;
    elementwise_list el = {.eager = true};
    cp_ring_torch_kernels(1000, 250, 2, false, true, &el);
    assert_true(el.eager);
    expect_sums(&el, 52000, 56500, 7, 16);

    el = (elementwise_list){.eager = true};
    cp_ring_torch_kernels(1000, 250, 4, false, true, &el);
    expect_sums(&el, 132000, 101500, 17, 30);

    /* no ring, nothing */
    el = (elementwise_list){.eager = true};
    cp_ring_torch_kernels(1000, 250, 1, false, true, &el);
    assert_int_equal(el.n_fwd + el.n_bwd, 0);
    /* the last dk + dv exchange, fp32: 2 x 4 x K */
    assert_true(fabs(cp_ring_torch_dkv_bytes(250) - 2000) < 1e-9);
}

/* The measured case (bench/results/cp_ring_2026-11-27): seq 32768, CP 2, 32 heads x 128,
 * repeated K/V: E = K = 16384 x 32 x 128 = 67,108,864; 58 E + 136 E = 194 E = 13.02 GB, which
 * at the H200's 4.8 TB/s x 0.59 (eager kernels, measured apart) is 4.60 ms: the profile's
 * 4.30 ms (rank 0, lighter merges) to 4.7 ms. */
static void test_measured_case(void **state)
{
    (void)state;
    double e = 16384.0 * 32 * 128;
    elementwise_list el = {.eager = true};
    cp_ring_torch_kernels(e, e, 2, false, true, &el);
    double bytes = elementwise_bytes(el.fwd, el.n_fwd) + elementwise_bytes(el.bwd, el.n_bwd);
    assert_true(fabs(bytes - 194 * e) < 1);
    double ms = 1e3 * bytes / (4.8e12 * 0.59);
    assert_true(ms > 4.3 && ms < 4.7);
}

static const recipe_op *find(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    return NULL;
}

/* Llama-3.1-8B (32 heads, 8 KV heads, head dim 128), seq 8192, CP 2 on h200: tokens per GPU
 * 4096. torchtitan (impl native repeats K/V to 32 heads before SDPA): the chunk is 4096 x 32 x
 * 256 x 2 = 67,108,864 bytes, dK/dV in fp32 twice that; the exposed tail is one SendRecv of
 * 134,217,728 bytes; the merges' bytes are the table's at E = 4096 x 32 x 128 = 16,777,216 =
 * K. Megatron's (TE) ring keeps the 8 KV heads, equal dK/dV, no tail and no merge ops. */
static void test_recipe_ops(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load_8b_h200(&m, &s);
    training_spec t = training_default();
    t.seq_len = 8192;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cp = 2;
    l.cp_rotate_alltoall = true; /* the ring of K/V priced here (cp_allgather.h: the default) */
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    layout_group g = layout_cp_group(&s, &l);
    double chunk = 4096.0 * 32 * 256 * 2;
    double p = collective_time_s(&s, COLL_SEND_RECV, chunk, g);
    double pd = collective_time_s(&s, COLL_SEND_RECV, 2 * chunk, g);
    const recipe_op *ring = find(&r, "cp.ring"), *tail = find(&r, "cp.ring_dkv_tail");
    assert_non_null(ring);
    assert_non_null(tail);
    assert_true(fabs(ring->fwd_s - p) < 1e-12);
    assert_true(fabs(ring->bwd_s - (p + pd)) < 1e-12);
    assert_true(fabs(tail->bwd_s - pd) < 1e-12 && tail->fwd_s == 0);
    assert_int_equal(tail->overlap, RECIPE_OVERLAP_NONE);
    double e = 4096.0 * 32 * 128;
    elementwise_list el = {.eager = true};
    cp_ring_torch_kernels(e, e, 2, false, false, &el);
    double want = 0, got = 0;
    for (int i = 0; i < el.n_fwd; i++) want += el.fwd[i].count * elementwise_kernel_s(&s, &el, &el.fwd[i]);
    for (int i = 0; i < el.n_bwd; i++) want += el.bwd[i].count * elementwise_kernel_s(&s, &el, &el.bwd[i]);
    for (int i = 0; i < r.n_ops; i++)
        if (r.op[i].kind == RECIPE_ELEMENTWISE && !strncmp(r.op[i].name, "cp.", 3))
            got += r.op[i].fwd_s + r.op[i].bwd_s;
    assert_true(want > 0 && fabs(got - want) < 1e-12 * want);

    l = layout_default(FRAMEWORK_MEGATRON);
    l.cp = 2;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    double mchunk = 4096.0 * 8 * 256 * 2;
    double mp = collective_time_s(&s, COLL_SEND_RECV, mchunk, layout_cp_group(&s, &l));
    ring = find(&r, "cp.ring");
    assert_non_null(ring);
    assert_true(fabs(ring->fwd_s - mp) < 1e-12 && fabs(ring->bwd_s - 2 * mp) < 1e-12);
    assert_null(find(&r, "cp.ring_dkv_tail"));
    assert_null(find(&r, "cp.merge.diff"));
}

/* The ring traced into a compiled block (cp_ring_torch.h cp_ring_torch_traced): E = 1000,
 * K = 250, c = 4, all-gather rotate: forward 6 E (step 0's cast) + 3 x 10 E (fused merges) +
 * 8 K (the one cat the gather reads) + 6 E = 44000 bytes in 1 + 3 + 1 + 1 = 6 launches;
 * backward the eager 101500 less two dropped cats of 8 K = 97500 in 30 - 2 = 28, Inductor's.
 * In the recipe (8B, seq 8192, CP 2 on h200) the K/V all-gather is exposed whole in both
 * passes and the dK/dV exchange runs on the compute stream, overlapping nothing. */
static void test_traced_ring(void **state)
{
    (void)state;
    elementwise_list el = {.eager = true};
    cp_ring_torch_kernels(1000, 250, 4, true, true, &el);
    assert_true(el.inductor);
    expect_sums(&el, 44000, 97500, 6, 28);

    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cp = 2;
    assert_false(cp_ring_torch_traced(&l));
    l.compile = true;
    assert_true(cp_ring_torch_traced(&l));
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    mg.cp = 2;
    mg.compile = true;
    assert_false(cp_ring_torch_traced(&mg));

    model_spec m;
    system_spec s;
    load_8b_h200(&m, &s);
    training_spec t = training_default();
    t.seq_len = 8192;
    static recipe r;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    layout_group g = layout_cp_group(&s, &l);
    double chunk = 4096.0 * 32 * 256 * 2;
    double ag = collective_time_s(&s, COLL_ALL_GATHER, 2 * chunk, g);
    double pd = collective_time_s(&s, COLL_SEND_RECV, 2 * chunk, g);
    const recipe_op *gather = find(&r, "cp.kv_allgather"), *ring = find(&r, "cp.ring");
    assert_non_null(gather);
    assert_non_null(ring);
    assert_true(fabs(gather->fwd_s - ag) < 1e-12 && fabs(gather->bwd_s - ag) < 1e-12);
    assert_int_equal(ring->overlap, RECIPE_OVERLAP_NONE);
    assert_true(ring->fwd_s == 0 && fabs(ring->bwd_s - pd) < 1e-12);
    assert_non_null(find(&r, "cp.merge.fused"));
    assert_null(find(&r, "cp.merge.diff"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_by_hand),
        cmocka_unit_test(test_measured_case),
        cmocka_unit_test(test_recipe_ops),
        cmocka_unit_test(test_traced_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
