/*
 * test_gather_moe.c — the routing kernels of a MoE that regroups by gathers both ways
 * (costmodel/gather_moe.h, bench/realruns/prun_moe.py): their bytes and launches on a toy layer
 * worked by hand, padded (grouped experts) and not (the loop); the row gathers at the streaming
 * rate; and a torchtitan EP layer's recipe carrying this list under
 * training_spec.moe_gather_routing in place of torchtitan's (titan_moe.h).
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
#include "elementwise.h"
#include "gather_moe.h"
#include "layer_recipe.h"
#include "titan_moe.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* T = 1000 tokens, top_k 2 (S = 2000 routed copies), h 100, E 10 experts (5 local at ep 2). */
static model_spec toy_moe(void)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    m.hidden = 100;
    m.experts = 10;
    m.top_k = 2;
    m.expert_ffn = 50;
    return m;
}

static const elementwise_kernel *find(const elementwise_kernel *k, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) return &k[i];
    return NULL;
}

/*
 * Forward (gather_moe.c header), T 1000, S = R = 2000, h 100, E 10, 5 local, no renorm:
 *   router cast 60,000, softmax 80,000, topk 64,000; argsort 40S 80,000 (one tile: iota + sort,
 *   2 launches); idx // k 32,000; x[order // k] 4Sh + 8S 816,000; counts 8E + 32S 64,080 (3);
 *   split sums 160 (2); regroup: seg 8R 16,000 (3), key 72R 144,000 (4), argsort 80,000 (2),
 *   inv 32R 64,000 (2); recv[idx] 816,000; padded: the pad indices 48R 96,000 (13), zeros
 *   2 (R + 16 x 5) h 416,000, index_copy's clone 4 (R + 80) h 832,000 and kernel 4Rh + 8R
 *   816,000, [pos] 816,000; out_local[inv] 816,000; unsort indices 32S 64,000 (2); back[unsort]
 *   816,000; .float() 6Sh 1,200,000; the product 8Sh + 4S 1,608,000; the sum 4Sh + 4Th
 *   1,200,000; .to(bf16) 6Th 600,000: 11,596,240 bytes in 50 launches.
 * Backward: 6Th 600,000; g * topw 4Th + 4S + 4Sh 1,208,000; g * y 4Th + 8Sh 2,000,000; the
 *   sum 4Sh + 4S 808,000; .float()'s 6Sh 1,200,000; five index backwards (zeros rows 2h, the
 *   sort 40 a index, the update 6h + 8 an index): back[unsort] S rows 1,696,000, out_local[inv]
 *   R rows 1,696,000, [pos] R + 80 rows 1,712,000, recv[idx] 1,696,000, x[order // k] T rows
 *   with S updates 1,496,000; index_copy's index_select 816,000; router topk 64,000, softmax
 *   120,000, cast 60,000: 15,172,000 bytes in 30 launches.
 * The loop (no padding): forward less 96,000 + 416,000 + 832,000 + 816,000 + 816,000 and 17
 * launches, backward less 1,712,000 + 816,000 and 5 launches.
 */
static void test_gather_bytes(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2;
    elementwise_list e;
    gather_moe_routing(&m, &l, 1000, 2000, true, &e);
    assert_true(e.eager && !e.alone);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 50);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 30);
    assert_true(fabs(elementwise_bytes(e.fwd, e.n_fwd) - 11596240.0) < 1e-6);
    assert_true(fabs(elementwise_bytes(e.bwd, e.n_bwd) - 15172000.0) < 1e-6);
    /* five index backwards, each an update kernel of 6h + 8 bytes an index */
    const char *upd[] = {"moe.bwd.unsort", "moe.bwd.unpermute", "moe.bwd.unpad",
                         "moe.bwd.permute", "moe.bwd.gather"};
    for (int i = 0; i < 5; i++) {
        const elementwise_kernel *k = find(e.bwd, e.n_bwd, upd[i]);
        assert_non_null(k);
        assert_true(k->bytes == 1216000.0);
    }
    /* index_copy on the offset path, the row gathers as plain (vectorized) kernels */
    assert_int_equal(find(e.fwd, e.n_fwd, "moe.pad.index_copy")->access.pattern, EW_OFFSETS);
    assert_int_equal(find(e.fwd, e.n_fwd, "moe.unpad.rows")->access.pattern, EW_VECTORIZED);

    elementwise_list loop;
    gather_moe_routing(&m, &l, 1000, 2000, false, &loop);
    assert_int_equal(elementwise_launches(loop.fwd, loop.n_fwd), 33);
    assert_int_equal(elementwise_launches(loop.bwd, loop.n_bwd), 25);
    assert_true(fabs(elementwise_bytes(loop.fwd, loop.n_fwd) - 8620240.0) < 1e-6);
    assert_true(fabs(elementwise_bytes(loop.bwd, loop.n_bwd) - 12644000.0) < 1e-6);
    assert_null(find(loop.fwd, loop.n_fwd, "moe.unpad.rows"));
    assert_null(find(loop.bwd, loop.n_bwd, "moe.bwd.unpad"));

    /* torchtitan's form runs two index backwards of [S or R, h] rows (titan_moe.c) and its
     * forward has no [T, k, h] product: this form moves more in both passes */
    elementwise_list t;
    titan_moe_routing(&m, &l, 1000, 2000, &t);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) > elementwise_bytes(t.bwd, t.n_bwd));
}

/* A gather of whole rows (".rows") at the streaming rate, as a device copy; the same bytes
 * under another moe. name at the eager elementwise rate (titan_moe.c's gathers unchanged). */
static void test_rows_streaming(void **state)
{
    (void)state;
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(gather_moe_copy_kernel("moe.unsort.rows"));
    assert_true(gather_moe_copy_kernel("moe.pad.index_copy.clone"));
    assert_false(gather_moe_copy_kernel("moe.gather"));
    assert_false(gather_moe_copy_kernel("experts.rows"));
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2;
    elementwise_list e, t;
    gather_moe_routing(&m, &l, 1000, 2000, true, &e);
    titan_moe_routing(&m, &l, 1000, 2000, &t);
    const elementwise_kernel *g = find(e.fwd, e.n_fwd, "moe.gather.rows");
    const elementwise_kernel *tg = find(t.fwd, t.n_fwd, "moe.gather");
    assert_true(g->bytes == tg->bytes);
    assert_true(fabs(elementwise_kernel_s(&s, &e, g) -
                     (compute_stream_s(&s, g->bytes) + s.eager_kernel_gap_s)) < 1e-15);
    assert_true(fabs(elementwise_kernel_s(&s, &t, tg) - elementwise_eager_kernel_s(&s, tg)) <
                1e-15);
    assert_true(elementwise_kernel_s(&s, &e, g) < elementwise_kernel_s(&s, &t, tg));
}

static const recipe_op *op_named(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    return NULL;
}

/* Qwen3-30B-A3B under torchtitan EP 2 on two H200s at seq 4096: with moe_gather_routing the layer
 * carries this list (five index backwards, [pos] for the grouped experts, no scores gather);
 * without it torchtitan's; the loop drops the padding. */
static void test_recipe_gather_form(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2, l.mbs = 1, l.impl = IMPL_NATIVE;
    l.sharding = SHARDING_FSDP;
    static recipe r0, r1, r2;
    recipe_layer(&m, &s, &t, &l, true, &r0, NULL);
    assert_non_null(op_named(&r0, "moe.bwd.scores"));
    assert_null(op_named(&r0, "moe.bwd.unpad"));
    t.moe_gather_routing = true;
    recipe_layer(&m, &s, &t, &l, true, &r1, NULL);
    assert_null(op_named(&r1, "moe.bwd.scores"));
    assert_non_null(op_named(&r1, "moe.bwd.unpad"));
    assert_non_null(op_named(&r1, "moe.unpad.rows"));
    /* the priced ops add up to the list's passes at the layer's token counts */
    elementwise_list e;
    gather_moe_routing(&m, &l, 4096, 4096.0 * 8, true, &e);
    double fwd = 0, bwd = 0;
    for (int i = 0; i < r1.n_ops; i++)
        if (!strncmp(r1.op[i].name, "moe.", 4)) fwd += r1.op[i].fwd_s, bwd += r1.op[i].bwd_s;
    assert_true(fabs(fwd - elementwise_pass_s(&s, &e, e.fwd, e.n_fwd)) < 1e-12);
    assert_true(fabs(bwd - elementwise_pass_s(&s, &e, e.bwd, e.n_bwd)) < 1e-12);
    t.moe_expert_loop = true;
    recipe_layer(&m, &s, &t, &l, true, &r2, NULL);
    assert_null(op_named(&r2, "moe.unpad.rows"));
    assert_non_null(op_named(&r2, "moe.bwd.unpermute"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gather_bytes),
        cmocka_unit_test(test_rows_streaming),
        cmocka_unit_test(test_recipe_gather_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
