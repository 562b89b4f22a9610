/*
 * test_titan_work.c — plan measure's work for torchtitan-style multi-GPU layouts (issues 14 and
 * 19; bench/results/meas10_2026-11-28), without a GPU:
 *
 *  - the root unit (embedding and output layer) is sharded over tp, as torchtitan's
 *    RowwiseParallel embedding and ColwiseParallel output and Megatron's vocab-parallel layers
 *    shard it (the estimate's FSDP2 copies count the root so: fsdp_root_params / tp, the final
 *    norm's 4,096 included): Llama-3.1-8B (vocab 128,256, hidden 4,096, untied) at TP 4 holds
 *    (2 x 128,256 x 4,096 + 4,096) / 4 = 262,669,312 root parameters per GPU; the arena's root buffer
 *    (bf16, FSDP2 on a one-rank dp mesh) and the copy-in buffer are 2 bytes each of them; it held
 *    4 x that before, 4.73 GiB of communication buffers at TP 4 where 1.79 GiB are the plan's;
 *  - torchtitan's per-expert loop (expert_loop.c) fits the work lists: Qwen3-30B-A3B at EP 2 has
 *    64 local experts, so a MoE layer's backward launches 3 x 64 = 192 zero fills and 192 slice
 *    copies of the stacked weights and 3 x 63 = 189 adds (one work item per launch), and its
 *    expert GEMMs are looped (a kernel per expert, 64 each), the grouped path's are not;
 *  - torchtitan EP's split-size sync: the cost model's issue queue has the host wait for the GPU
 *    after the router's launches (host_dispatch.c q_sync), so exactly one forward item of a MoE
 *    layer, the router GEMM, carries host_sync (and its recompute under full checkpointing);
 *    no item does without EP, nor under Megatron;
 *  - the loop's row counts under --moe-new-counts (work_rows.c, bench/results/meas27_2026-11-29):
 *    each pass's counts add up to the balanced rows (c0 x experts), the share's new counts come
 *    as pairs c0 +- d never handed out before, the rest are c0; at 512 rows and 64 experts, half
 *    new: 32 new a pass, 10 passes 320 distinct counts; share 0.82 over 10 passes 524 new
 *    (0.82 x 640 = 524.8, in whole pairs); 4 rows and 8 experts: only d = 1..3 exist, 6 new;
 *  - under a share the looped items' host pacing leaves out the model's price of the new shapes
 *    (plan measure issues them and cuBLAS takes its own time): Qwen3-30B-A3B at EP 2 on h200,
 *    the MoE lists' host times at share 0.5 equal those at share 0, while the estimate's host
 *    time grows (host.gemm_new_shape_s).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bk_pools.h"
#include "work.h"
#include "work_rows.h"

static model_spec M;
static system_spec S;
static work_plan W;

static void load_on(const char *model, const char *sys)
{
    char err[CM_ERRLEN];
    const char *d = getenv("PLAN_DATA_DIR") ? getenv("PLAN_DATA_DIR") : "data";
    if (model_load(model, d, &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, d, &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void load(const char *model) { load_on(model, "h100"); }

static void build(const layout *l, const training_spec *t)
{
    char err[CM_ERRLEN];
    if (work_plan_build(&M, &S, t, l, &W, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static training_spec train(int seq_len, int global_batch, bool loop)
{
    training_spec t = training_default();
    t.seq_len = seq_len, t.global_batch = global_batch;
    t.moe_expert_loop = loop;
    return t;
}

static layout titan(int tp, int dp, int ep)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = tp, l.dp = dp, l.ep = ep, l.mbs = 1;
    l.sp = tp > 1;
    l.impl = IMPL_NATIVE;
    l.sharding = SHARDING_FSDP;
    return l;
}

static int count_named(const work_list *w, const char *name)
{
    int n = 0;
    for (int i = 0; i < w->n; i++) n += !strcmp(w->item[i].name, name);
    return n;
}

static int count_sync(const work_list *w, const char **name)
{
    int n = 0;
    for (int i = 0; i < w->n; i++)
        if (w->item[i].host_sync) {
            n++;
            *name = w->item[i].name;
        }
    return n;
}

static void test_root_sharded_by_tp(void **state)
{
    (void)state;
    load("8b");
    layout l = titan(4, 1, 1);
    training_spec t = train(4096, 1, false);
    build(&l, &t);
    assert_true(W.stage_root_params[0] == 262669312.0);
    assert_true(W.root_params == 262669312.0);
    bk_pool_shape sh;
    bk_pools_whole_shape(&W, &sh);
    bk_pools p;
    bk_pools_size(&W, &sh, &p);
    assert_int_equal(bk_pools_root_count(&W, 1, 0), 262669312);
    assert_int_equal(p.root_sz, 525338624); /* 2 bytes each, a multiple of 256 already */
    assert_true(p.cin_sz >= 525338624 && p.cin_sz < 525338624 + 512);
    /* tp 1: the whole root, 2 x 128,256 x 4,096 + the final norm's 4,096 */
    layout one = titan(1, 4, 1);
    t.global_batch = 4;
    build(&one, &t);
    assert_true(W.stage_root_params[0] == 1050677248.0);
}

static void test_expert_loop_fits(void **state)
{
    (void)state;
    load("qwen3-30b-a3b");
    layout l = titan(1, 2, 2);
    training_spec t = train(4096, 2, true);
    build(&l, &t);
    assert_true(W.moe);
    assert_int_equal(W.local_experts, 64);
    assert_int_equal(count_named(&W.moe_bwd, "moe.loop.bwd.select.zeros"), 192);
    assert_int_equal(count_named(&W.moe_bwd, "moe.loop.bwd.select.copy"), 192);
    assert_int_equal(count_named(&W.moe_bwd, "moe.loop.bwd.select.accumulate"), 189);
    assert_int_equal(count_named(&W.moe_bwd, "moe.loop.bwd.split"), 1);
    assert_int_equal(count_named(&W.moe_fwd, "moe.loop.cat"), 1);
    /* the expert GEMMs: a kernel per expert, as the recipe prices them (64 launches each) */
    int looped = 0;
    for (int i = 0; i < W.moe_fwd.n; i++)
        if (!strncmp(W.moe_fwd.item[i].name, "experts_", 8)) {
            assert_true(W.moe_fwd.item[i].looped);
            assert_int_equal(W.moe_fwd.item[i].batch, 64);
            looped++;
        }
    for (int i = 0; i < W.moe_bwd.n; i++)
        if (!strncmp(W.moe_bwd.item[i].name, "experts_", 8)) {
            assert_true(W.moe_bwd.item[i].looped);
            looped++;
        }
    assert_int_equal(looped, 6); /* up and down: forward, dgrad, wgrad */
    /* torch._grouped_mm: one kernel for all of them */
    t.moe_expert_loop = false;
    build(&l, &t);
    for (int i = 0; i < W.moe_fwd.n; i++) assert_false(W.moe_fwd.item[i].looped);
    for (int i = 0; i < W.moe_bwd.n; i++) assert_false(W.moe_bwd.item[i].looped);
}

static void test_ep_host_sync(void **state)
{
    (void)state;
    load("qwen3-30b-a3b");
    training_spec t = train(4096, 4, false);
    layout l = titan(1, 4, 4);
    build(&l, &t);
    assert_true(W.host_pace);
    const char *name = NULL;
    assert_int_equal(count_sync(&W.moe_fwd, &name), 1);
    assert_string_equal(name, "router");
    assert_int_equal(count_sync(&W.moe_bwd, &name), 0);
    assert_int_equal(count_sync(&W.layer_fwd, &name), 0); /* no dense layers: empty or none */
    assert_int_equal(count_sync(&W.head_fwd, &name), 0);
    /* full recompute re-runs the router and its sync before the backward */
    l.recompute = RECOMPUTE_FULL;
    build(&l, &t);
    assert_int_equal(count_sync(&W.moe_fwd, &name), 1);
    assert_int_equal(count_sync(&W.moe_bwd, &name), 1);
    assert_string_equal(name, "re.router");
    /* no EP: the split sizes stay on the GPU; Megatron's MoE host terms are per layer */
    layout noep = titan(1, 4, 1);
    build(&noep, &t);
    assert_int_equal(count_sync(&W.moe_fwd, &name), 0);
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    mg.dp = 4, mg.ep = 4, mg.mbs = 1;
    build(&mg, &t);
    assert_int_equal(count_sync(&W.moe_fwd, &name), 0);
}

static void test_loop_rows(void **state)
{
    (void)state;
    enum { E = 64, C0 = 512, PASSES = 10 };
    int counts[E];
    unsigned char is_new[E];
    static unsigned char used[2 * C0];
    work_rows r;
    work_rows_init(&r, C0, E, 0.5);
    int distinct = 0;
    for (int p = 0; p < PASSES; p++) {
        int made = work_rows_next(&r, counts, is_new);
        assert_int_equal(made, 32);
        long sum = 0;
        int n_new = 0;
        for (int b = 0; b < E; b++) {
            sum += counts[b];
            assert_true(counts[b] >= 1 && counts[b] <= 2 * C0 - 1);
            if (is_new[b]) {
                n_new++;
                assert_int_not_equal(counts[b], C0);
                assert_false(used[counts[b]]); /* never handed out before */
                used[counts[b]] = 1;
                distinct++;
            } else {
                assert_int_equal(counts[b], C0);
            }
        }
        assert_int_equal(sum, (long)C0 * E);
        assert_int_equal(n_new, 32);
    }
    assert_int_equal(distinct, 320);
    assert_int_equal(r.exhausted, 0);
    /* a share that is not a whole number of pairs a pass: kept over the passes */
    work_rows_init(&r, C0, E, 0.82);
    long total = 0;
    for (int p = 0; p < PASSES; p++) total += work_rows_next(&r, counts, NULL);
    assert_int_equal(total, 524);
    /* share 0: the balanced count everywhere */
    work_rows_init(&r, C0, E, 0);
    assert_int_equal(work_rows_next(&r, counts, is_new), 0);
    for (int b = 0; b < E; b++) assert_int_equal(counts[b], C0);
    /* 4 rows: the pairs 4 +- 1, 2, 3 only */
    work_rows_init(&r, 4, 8, 1);
    assert_int_equal(work_rows_next(&r, counts, NULL), 6);
    assert_int_equal(r.exhausted, 2);
    assert_int_equal(work_rows_next(&r, counts, NULL), 0);
    assert_int_equal(r.exhausted, 10);
}

static double host_sum(const work_list *w)
{
    double s = w->host_lead_s;
    for (int i = 0; i < w->n; i++) s += w->item[i].host_s;
    return s;
}

static void test_loop_pace_without_new_shape_price(void **state)
{
    (void)state;
    load_on("qwen3-30b-a3b", "h200");
    assert_true(S.host_gemm_new_shape_s > 0);
    layout l = titan(1, 2, 2);
    training_spec t = train(4096, 2, true);
    build(&l, &t);
    assert_true(W.loop_new_share == 0);
    double f0 = host_sum(&W.moe_fwd), b0 = host_sum(&W.moe_bwd);
    double est0 = W.est.time.step_s;
    t.moe_new_count_share = 0.5;
    build(&l, &t);
    assert_true(W.loop_new_share == 0.5);
    assert_true(W.gemm_new_shape_s == S.host_gemm_new_shape_s);
    assert_true(fabs(host_sum(&W.moe_fwd) - f0) < 1e-12);
    assert_true(fabs(host_sum(&W.moe_bwd) - b0) < 1e-12);
    assert_true(W.est.time.step_s > est0 + 1e-3); /* the estimate still prices them */
    /* grouped experts: no loop, no new counts issued */
    t.moe_expert_loop = false;
    build(&l, &t);
    assert_true(W.loop_new_share == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_sharded_by_tp),
        cmocka_unit_test(test_expert_loop_fits),
        cmocka_unit_test(test_ep_host_sync),
        cmocka_unit_test(test_loop_rows),
        cmocka_unit_test(test_loop_pace_without_new_shape_price),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
