/*
 * test_host_pace.c — plan measure's host pacing (issue 14): the host issue time the backend
 * spins before each work item is what the cost model's issue queue charges (host_dispatch.c,
 * host_dispatch_host_of), without a GPU.
 *
 *  - where the queue is host-bound (seq 64, one micro-batch of one sequence: the GPU work of a
 *    layer is tens of microseconds against milliseconds of host work), the per-item host times
 *    of a layer add up to the estimate's aggregate host_fwd_s / host_bwd_s (with the unit's
 *    FSDP2 launches), dense and MoE, with and without full recompute; the head's always;
 *  - by hand at host.eager_launch_s = 40.5 us (data/systems/h100.json): the q, k, v modules
 *    behind the recipe's one qkv GEMM are 3 launches (121.5 us), the attention core 1 launch
 *    and its output's copy (81 us over its items), FSDP2's all-gather of a Llama layer unit on
 *    one GPU 9 casts + 9 copies = 18 launches (0.729 ms; no copy-in or collective launch at one
 *    rank: FSDP2's unshard skips the all-gather there, fsdp_copies.h, and the profiled step of
 *    bench/results/host23_2026-11-29 launched 146 + 146 in its pre-forwards for Llama-3.2-1B's
 *    16 x 9 + 2 tensors; 20 with the 2 before); the optimizer's host floor is
 *    optimizer_host_s (by hand for Llama-3.2-1B below);
 *  - where the queue is GPU-bound (Llama-3.1-8B, seq 4096) the host work is less than the
 *    queue's time (host_s is the host's own time, not the floor);
 *  - Megatron and torch.compile'd layers price no per-launch host work: every host_s is 0;
 *  - the GPU work the estimate prices on one GPU runs there too: FSDP2's copies (dp_active at
 *    world size 1) and the bytes torch's clip + AdamW move beyond the fused Adam kernel's 28 per
 *    parameter (estimate.c optimizer_cost: impl bytes + 12): foreach 80 + 12 - 28 = 64, fused
 *    28 + 12 - 28 = 12, Megatron's own kernel 0;
 *  - torchtitan layouts wait for the GPU before the optimizer (the clip's float(norm)), FSDP2's
 *    and Megatron's do not (work_plan.host_sync_clip).
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

#include "host_dispatch.h"
#include "layer_recipe.h"
#include "optimizer_host.h"
#include "work.h"

static model_spec M;
static system_spec S;
static work_plan W;

static void load(const char *model)
{
    char err[CM_ERRLEN];
    const char *d = getenv("PLAN_DATA_DIR") ? getenv("PLAN_DATA_DIR") : "data";
    if (model_load(model, d, &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", d, &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void near(double a, double b, double rel, const char *what)
{
    if (!(fabs(a - b) <= rel * fabs(b) + 1e-15)) fail_msg("%s: %.12g != %.12g", what, a, b);
}

static void build(const layout *l, const training_spec *t)
{
    char err[CM_ERRLEN];
    if (work_plan_build(&M, &S, t, l, &W, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static training_spec train(int seq_len, int global_batch)
{
    training_spec t = training_default();
    t.seq_len = seq_len, t.global_batch = global_batch;
    return t;
}

static layout fsdp2_one_gpu(void)
{
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    l.dp = 1, l.mbs = 1;
    return l;
}

/* Sum of the host time of the items of a list named `name` (and that they are >= 0). */
static double named_host_s(const work_list *w, const char *name)
{
    double s = 0;
    for (int i = 0; i < w->n; i++) {
        assert_true(w->item[i].host_s >= 0);
        if (!strcmp(w->item[i].name, name)) s += w->item[i].host_s;
    }
    return s;
}

/* The work plan's layer (moe) and head host times equal the recipe's host floors. */
static void sums_equal_floors(const layout *l, const training_spec *t, bool moe, const char *what)
{
    build(l, t);
    assert_true(W.host_priced && W.host_pace);
    recipe r;
    recipe_layer(&M, &S, t, l, moe, &r, NULL);
    double f, b;
    work_host_layer_s(&W, moe, &f, &b);
    char msg[160];
    snprintf(msg, sizeof msg, "%s: layer forward", what);
    near(f, r.host_fwd_s, 1e-9, msg);
    snprintf(msg, sizeof msg, "%s: layer backward", what);
    near(b, r.host_bwd_s, 1e-9, msg);
    recipe_head(&M, &S, t, l, &r, NULL);
    snprintf(msg, sizeof msg, "%s: head forward", what);
    near(work_list_host_s(&W.head_fwd), r.host_fwd_s, 1e-9, msg);
    snprintf(msg, sizeof msg, "%s: head backward", what);
    near(work_list_host_s(&W.head_bwd), r.host_bwd_s, 1e-9, msg);
}

static void test_host_bound_sums(void **state)
{
    (void)state;
    load("1b");
    near(S.host_eager_launch_s, 40.5e-6, 1e-12, "host.eager_launch_s");
    training_spec t = train(64, 1);
    layout l = fsdp2_one_gpu();
    sums_equal_floors(&l, &t, false, "1b seq 64");
    double c = S.host_eager_launch_s;
    near(named_host_s(&W.layer_fwd, "qkv"), 3 * c, 1e-12, "qkv: q, k, v modules");
    /* forward attention: the core's launch and its output's .contiguous() */
    double att = 0;
    for (int i = 0; i < W.layer_fwd.n; i++)
        if (W.layer_fwd.item[i].component == WC_ATTENTION) att += W.layer_fwd.item[i].host_s;
    near(att, 2 * c, 1e-12, "attention forward");
    /* Llama: q, k, v, o, 2 norms, gate, up, down = 9 tensors; one GPU casts each */
    near(W.host_gather_fwd_s[0], (9 + 9) * c, 1e-12, "FSDP2 all-gather launches");
    near(W.host_gather_bwd_s[0], (9 + 9) * c, 1e-12, "FSDP2 re-gather launches");
    l.recompute = RECOMPUTE_FULL;
    sums_equal_floors(&l, &t, false, "1b seq 64 full recompute");
    /* the recomputed forward charges its ops again (3 modules), the backward the dgrad and
     * wgrad launches of each module (6), shared over its two items */
    near(named_host_s(&W.layer_bwd, "re.qkv"), 3 * c, 1e-12, "recomputed qkv");
    near(named_host_s(&W.layer_bwd, "qkv.dgrad") + named_host_s(&W.layer_bwd, "qkv.wgrad"),
         6 * c, 1e-12, "qkv backward");
}

static void test_moe_host_bound(void **state)
{
    (void)state;
    load("qwen3-30b-a3b");
    training_spec t = train(64, 1);
    layout l = fsdp2_one_gpu();
    sums_equal_floors(&l, &t, true, "qwen3-30b-a3b seq 64");
}

/* Llama-3.2-1B (16 layers x 9 tensors + embedding + final norm, tied: 146 tensors; 1.236e9
 * parameters) under foreach AdamW: 146 x (22.1 + 35.2) us + 10 x ceil(1.236e9 / 20,971,520)
 * = 590 launches x 14.2 us = 8.3658 + 8.378 = 16.744 ms. */
static void test_optimizer_host(void **state)
{
    (void)state;
    load("1b");
    training_spec t = train(4096, 1);
    layout l = fsdp2_one_gpu();
    build(&l, &t);
    near(optimizer_host_tensors(&M, &l, 0), 146, 0, "tensors");
    near(W.host_optimizer_s[0], optimizer_host_s(&S, &M, &l, 0, W.stage_optimizer_params[0]), 0,
         "optimizer host");
    near(W.host_optimizer_s[0], 146 * (22.1e-6 + 35.2e-6) + 590 * 14.2e-6, 1e-6,
         "optimizer host by hand");
}

static void test_gpu_bound(void **state)
{
    (void)state;
    load("8b");
    training_spec t = train(4096, 2);
    layout l = fsdp2_one_gpu();
    l.mbs = 2;
    build(&l, &t);
    recipe r;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double f, b;
    work_host_layer_s(&W, false, &f, &b);
    /* 8B's layer: ~8 ms of GPU work forward against ~2.5 ms of host work */
    assert_true(f > 0 && f < 0.5 * r.host_fwd_s);
    assert_true(b > 0 && b < 0.5 * r.host_bwd_s);
}

static void no_host(const work_list *w)
{
    assert_true(w->host_lead_s == 0);
    for (int i = 0; i < w->n; i++) assert_true(w->item[i].host_s == 0);
}

static void test_not_priced(void **state)
{
    (void)state;
    load("8b");
    training_spec t = train(4096, 2);
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.tp = 2, l.dp = 1;
    build(&l, &t);
    assert_false(W.host_priced);
    assert_false(W.host_pace);
    no_host(&W.layer_fwd), no_host(&W.layer_bwd), no_host(&W.head_fwd), no_host(&W.head_bwd);
    /* compiled blocks: no per-launch host work; the optimizer's stays (clip, AdamW) */
    l = fsdp2_one_gpu();
    l.compile = true;
    t.global_batch = 1;
    build(&l, &t);
    no_host(&W.layer_fwd), no_host(&W.layer_bwd), no_host(&W.head_fwd), no_host(&W.head_bwd);
    assert_true(W.host_gather_fwd_s[0] == 0 && W.host_reduce_s[0] == 0);
    assert_true(W.host_optimizer_s[0] > 0 && W.host_priced);
}

static void test_single_gpu_work(void **state)
{
    (void)state;
    load("1b");
    training_spec t = train(4096, 1);
    layout l = fsdp2_one_gpu();
    build(&l, &t);
    assert_true(W.fsdp && W.dp_active);
    near(W.optimizer_extra_bytes_per_param, 64, 0, "foreach AdamW + clip");
    l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    build(&l, &t);
    near(W.optimizer_extra_bytes_per_param, 12, 0, "fused AdamW + clip");
    l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.dp = 1;
    build(&l, &t);
    assert_false(W.dp_active);
    near(W.optimizer_extra_bytes_per_param, 0, 0, "Megatron");
}

/* The clip's wait for the GPU (work_plan.host_sync_clip): torchtitan layouts, whose real step
 * takes the clip coefficient from float(norm) (bench/realruns/prun_step.py clip); not FSDP2's
 * trainer (clip_grad_norm_ keeps it on the GPU, realrun.py), not Megatron (no host pacing). */
static void test_clip_sync(void **state)
{
    (void)state;
    load("8b");
    training_spec t = train(4096, 2);
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.sharding = SHARDING_FSDP;
    l.impl = IMPL_NATIVE;
    l.tp = 2, l.dp = 1, l.mbs = 1, l.sp = true;
    build(&l, &t);
    assert_true(W.host_priced && W.host_sync_clip);
    l = fsdp2_one_gpu();
    build(&l, &t);
    assert_true(W.host_priced);
    assert_false(W.host_sync_clip);
    l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.tp = 2, l.dp = 1;
    build(&l, &t);
    assert_false(W.host_sync_clip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_bound_sums), cmocka_unit_test(test_moe_host_bound),
        cmocka_unit_test(test_optimizer_host),  cmocka_unit_test(test_gpu_bound),
        cmocka_unit_test(test_not_priced),      cmocka_unit_test(test_single_gpu_work),
        cmocka_unit_test(test_clip_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
