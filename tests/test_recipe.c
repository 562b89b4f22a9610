/*
 * test_recipe.c — the layer recipe (costmodel/layer_recipe.h) is the one list the estimate, the
 * simulator and the backend see.
 *
 * For several layouts (FSDP2 dense, Megatron TP+PP+SP, CP ring and Ulysses with recompute,
 * unfused attention, Mixtral with EP, DeepSeek-V2-Lite with MLA, shared experts, dense-first
 * layers and EP):
 *  - the backend's work items of a dense layer, an MoE layer and the head (backend/work.c) are
 *    the recipe's items, one for one: names, count, order and predicted times;
 *  - every op's items add up to the op's priced forward and backward times;
 *  - the priced recipe is exactly the estimate's per-layer and head costs (estimate_stage_costs)
 *    and the simulator's per-layer inputs (sim_build).
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

#include "dtensor_ops.h"
#include "dtensor_step_host.h"
#include "estimate_costs.h"
#include "host_dispatch.h"
#include "compute.h"
#include "layer_recipe.h"
#include "sim.h"
#include "work.h"

#include "recipe_fixture.h"

static work_plan W;
static recipe_items I;

/* The backend's lists are the recipe's items: forward; recomputed forward, then backward. */
static void same_items(const recipe_items *items, const work_list *F, const work_list *B,
                       const char *what)
{
    static const recipe_phase order[3] = {RECIPE_FWD, RECIPE_RECOMPUTE, RECIPE_BWD};
    int nf = 0, nb = 0;
    assert_false(items->overflow);
    for (int o = 0; o < 3; o++)
        for (int i = 0; i < items->n; i++) {
            const recipe_item *it = &items->item[i];
            if (it->phase != order[o]) continue;
            const work_list *w = order[o] == RECIPE_FWD ? F : B;
            int *k = order[o] == RECIPE_FWD ? &nf : &nb;
            if (*k >= w->n) fail_msg("%s: backend has fewer items than the recipe", what);
            const work_item *x = &w->item[(*k)++];
            if (strcmp(x->name, it->name))
                fail_msg("%s: item %d is '%s' in the backend, '%s' in the recipe", what, *k - 1,
                         x->name, it->name);
            assert_true(x->pred_s == it->pred_s);
        }
    if (nf != F->n || nb != B->n)
        fail_msg("%s: backend %d+%d items, recipe %d+%d", what, F->n, B->n, nf, nb);
}

/* Each op's items add up to its priced times (FSDP transfers have none; FSDP2's copies have
 * items on one GPU only, where the backend runs them as items: recipe_fsdp.c
 * rb_fsdp_copies; on several GPUs it runs them around the collectives). */
static void items_add_up(const recipe *r, const recipe_items *items, bool one_gpu,
                         const char *what)
{
    for (int j = 0; j < r->n_ops; j++) {
        const recipe_op *o = &r->op[j];
        double f = 0, b = 0, re = 0;
        int n = 0;
        for (int i = 0; i < items->n; i++) {
            const recipe_item *it = &items->item[i];
            if (it->op != j) continue;
            n++;
            if (it->phase == RECIPE_FWD) f += it->pred_s;
            else if (it->phase == RECIPE_BWD) b += it->pred_s;
            else re += it->pred_s;
        }
        if (o->kind >= RECIPE_FSDP_GATHER || (o->kind == RECIPE_FSDP_COPY && !one_gpu)) {
            assert_int_equal(n, 0);
            continue;
        }
        if (o->kind == RECIPE_FSDP_COPY && o->fwd_s + o->bwd_s > 0 && n == 0)
            fail_msg("%s: FSDP2's %s has no items on one GPU", what, o->name);
        char nm[96];
        snprintf(nm, sizeof nm, "%s op %s fwd", what, o->name);
        near(f, o->fwd_s, nm);
        snprintf(nm, sizeof nm, "%s op %s bwd", what, o->name);
        near(b, o->bwd_s, nm);
        snprintf(nm, sizeof nm, "%s op %s recompute", what, o->name);
        near(re, recipe_op_recompute_s(o), nm);
        assert_true(n > 0 || (o->fwd_s == 0 && o->bwd_s == 0));
    }
}

static void same_costs(const recipe_time *x, const estimate_layer_costs *c)
{
    assert_true(x->fwd_s == c->fwd_s && x->bwd_s == c->bwd_s && x->recompute_s == c->recompute_s);
    assert_true(x->tp_s == c->tp_s && x->cp_s == c->cp_s && x->ep_s == c->ep_s);
    assert_true(x->fwd_comm_s == c->fwd_comm_s && x->bwd_comm_s == c->bwd_comm_s);
    assert_true(x->gather_s == c->gather_s && x->reduce_s == c->reduce_s);
}

static void check(const layout *l, const training_spec *t, const char *what)
{
    char err[CM_ERRLEN];
    if (work_plan_build(&M, &S, t, l, &W, err, sizeof err) != CM_OK)
        fail_msg("%s: %s", what, err);
    estimate_costs c;
    assert_int_equal(estimate_stage_costs(&M, &S, t, l, &c, NULL, err, sizeof err), CM_OK);
    sim_workspace *ws = sim_alloc();
    assert_non_null(ws);
    assert_int_equal(sim_build(ws, &M, &S, t, l, err, sizeof err), CM_OK);
    const sim_input *in = sim_input_of(ws);
    bool fsdp = l->sharding == SHARDING_FSDP;
    bool one_gpu = layout_gpus(l) == 1;

    recipe r;
    recipe_time x;
    for (int moe = 0; moe < (model_is_moe(&M) ? 2 : 1); moe++) {
        recipe_layer(&M, &S, t, l, moe, &r, &I);
        same_items(&I, moe ? &W.moe_fwd : &W.layer_fwd, moe ? &W.moe_bwd : &W.layer_bwd, what);
        items_add_up(&r, &I, one_gpu, what);
        recipe_price(&r, &x);
        same_costs(&x, moe ? &c.moe : &c.dense);
        /* the ops alone (the estimate's path) price the same */
        recipe r2;
        recipe_time x2;
        recipe_layer(&M, &S, t, l, moe, &r2, NULL);
        recipe_price(&r2, &x2);
        assert_memory_equal(&x, &x2, sizeof x);
        /* the simulator's layers of this kind */
        int i = moe ? M.layers - 1 : 0;
        if (moe == 0 && c.first_moe_layer == 0) continue; /* no dense layer */
        assert_true(in->layer[i].fwd_s == x.fwd_s + x.fwd_comm_s);
        assert_true(in->layer[i].bwd_s == x.bwd_s + x.recompute_s + x.bwd_comm_s);
        assert_true(in->layer[i].gather_s == (fsdp ? x.gather_s : 0));
        assert_true(in->layer[i].reduce_s == (fsdp ? x.reduce_s : 0));
        if (moe) assert_int_equal(W.local_experts, r.local_experts);
    }
    recipe_head(&M, &S, t, l, &r, &I);
    same_items(&I, &W.head_fwd, &W.head_bwd, what);
    items_add_up(&r, &I, one_gpu, what);
    recipe_price(&r, &x);
    assert_true(x.fwd_s == c.head_fwd_s && x.bwd_s == c.head_bwd_s);
    assert_true(in->head_fwd_s == c.head_fwd_s && in->head_bwd_s == c.head_bwd_s);
    sim_free(ws);
}


static void test_dense(void **state)
{
    (void)state;
    load("8b", "h100");
    training_spec t = training_default();
    t.global_batch = 16;
    layout l = fsdp2(8);
    check(&l, &t, "8b fsdp2");
    l.recompute = RECOMPUTE_FULL;
    l.reshard_after_forward = false;
    check(&l, &t, "8b fsdp2 full recompute, no reshard");
    l = fsdp2(4), l.cp = 2, l.recompute = RECOMPUTE_FULL;
    check(&l, &t, "8b fsdp2 cp2 (Ulysses) full recompute");
    l = megatron(2, 2, 2, true);
    check(&l, &t, "8b megatron tp2 pp2 sp");
    l = megatron(2, 1, 2, false), l.cp = 2, l.recompute = RECOMPUTE_SELECTIVE;
    check(&l, &t, "8b megatron tp2 cp2 selective");
    training_spec tu = t;
    tu.attention = ATTENTION_UNFUSED;
    check(&l, &tu, "8b megatron tp2 cp2 selective unfused");
    l = megatron(2, 1, 4, true), l.sharding = SHARDING_FSDP, l.recompute = RECOMPUTE_FULL;
    check(&l, &t, "8b megatron-fsdp tp2 full recompute");
    /* one GPU: FSDP2's unshard, chunk_cat and one-rank copy are the backend's items */
    l = fsdp2(1);
    check(&l, &t, "8b fsdp2 one GPU");
    l.recompute = RECOMPUTE_FULL;
    check(&l, &t, "8b fsdp2 one GPU full recompute");
    l.reshard_after_forward = false;
    check(&l, &t, "8b fsdp2 one GPU full recompute, no reshard");
}

/* Full recompute under FSDP2 is torch's non-reentrant checkpoint, which stops once the layer's
 * last saved tensors (the down projection's inputs) are re-created: the down GEMM and the
 * residual add after it are not re-run. Megatron's CheckpointFunction re-runs all of it. The
 * recompute time is then the forward's kernels less exactly those two pieces; FSDP2's copy-out
 * is not re-run either (the pre-backward hook unshards the unit, the recomputed forward's
 * _pre_forward returns at once: torch/distributed/fsdp/_fully_shard/_fsdp_state.py at pytorch
 * 01c9f4fc; bkmeas24: before, the copy-out was counted in the recompute too). */
static void test_recompute_early_stop(void **state)
{
    (void)state;
    load("8b", "h100");
    training_spec t = training_default();
    t.global_batch = 16;
    static recipe r;
    layout l = fsdp2(8);
    l.recompute = RECOMPUTE_FULL;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    const recipe_op *down = op_named(&r, "mlp_down"), *up = op_named(&r, "mlp_up");
    const recipe_op *res = op_named(&r, "residual.add");
    assert_false(down->recompute);
    assert_true(up->recompute);
    assert_int_equal(res->launches, 2);
    assert_int_equal(res->recompute_launches, 1);
    near(recipe_op_recompute_s(res), res->fwd_s / 2, "fsdp2 residual add re-run once");
    double fwd_compute = 0;
    for (int i = 0; i < r.n_ops; i++)
        if (r.op[i].phase == RECIPE_FWD && r.op[i].kind < RECIPE_FSDP_COPY)
            fwd_compute += r.op[i].fwd_s;
    assert_false(op_named(&r, "fsdp.copy_out")->recompute);
    recipe_time x;
    recipe_price(&r, &x);
    near(x.recompute_s, fwd_compute - down->fwd_s - res->fwd_s / 2, "fsdp2 early-stopped recompute");

    l = megatron(2, 1, 4, true), l.recompute = RECOMPUTE_FULL;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    assert_true(op_named(&r, "mlp_down")->recompute);
    for (int i = 0; i < r.n_ops; i++)
        if (r.op[i].kind == RECIPE_ELEMENTWISE && r.op[i].phase == RECIPE_FWD)
            assert_int_equal(r.op[i].recompute_launches, r.op[i].launches);
}

/* Under DTensor TP (torchtitan, tp > 1) every DTensor dispatch of the layer costs the host the
 * measured per-dispatch time of a real TP layer, dt = host.eager_dtensor_*_s + *_rank_s x tp
 * (bench/results/tphost_2026-11-27; before issue 19's change: the toy chain's ratio x c);
 * FSDP2's own launches (copy-in, gather, copy-outs) and the local-tensor ops stay plain (c). At
 * seq 64 each kernel's GPU time is below the host's per-launch cost, so the host paces the whole
 * pass: the forward's pacing grows by (dt - c) per DTensor dispatch, a whole number of them (the
 * 11 FSDP2 launches add nothing). The same layout at tp 1 (plain tensors) keeps the plain cost. */
static void test_dtensor_host_cost(void **state)
{
    (void)state;
    load("8b", "h100");
    assert_true(S.host_dtensor_fwd_s > 0 && S.host_dtensor_bwd_s > 0);
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.tp = 2, l.sp = true, l.mbs = 1;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double dt_fwd = r.host_fwd_s, dt_bwd = r.host_bwd_s;
    system_spec plain = S;
    plain.host_dtensor_fwd_ratio = plain.host_dtensor_bwd_ratio = 0; /* not measured: c */
    plain.host_dtensor_fwd_s = plain.host_dtensor_bwd_s = 0;
    recipe_layer(&M, &plain, &t, &l, false, &r, NULL);
    double c = S.host_eager_launch_s;
    double d_fwd = S.host_dtensor_fwd_s + 2 * S.host_dtensor_fwd_rank_s;
    double d_bwd = S.host_dtensor_bwd_s + 2 * S.host_dtensor_bwd_rank_s;
    double launches = (dt_fwd - r.host_fwd_s) / (d_fwd - c);
    /* seq 64: the host sets the pace, so the difference is dt - c per DTensor dispatch.
     * Forward (issue 24, dtensor_ops.c): the 7 Linear modules' mm (q, k, v, o, gate, up, down)
     * and the 2 fused rms_norm launches run on DTensors (9); each Linear adds t, view and
     * _unsafe_view (21), Colwise q, k, v, gate, up a to_local each (5), Rowwise o and down
     * from_local + reduce-scatter + to_local (6), each norm from_local + all-gather (4): 45.
     * The attention core, RoPE, SwiGLU and the residual adds run on local tensors. */
    if (fabs(launches - 45) > 1e-6) fail_msg("DTensor forward: %.9g extra launches' cost", launches);
    /* Backward: 14 mm's (dgrad, wgrad) + 4 rms_norm backward launches (18); per Linear 5
     * (view, t before each mm, view, t: 35) and the hooks again (11 + 4): 68. */
    double blaunches = (dt_bwd - r.host_bwd_s) / (d_bwd - c);
    if (fabs(blaunches - 68) > 1e-6)
        fail_msg("DTensor backward: %.9g extra launches' cost", blaunches);
    recipe_op rowwise = {.kind = RECIPE_GEMM, .name = "mlp_down"};
    near(dtensor_linear_dispatches(&rowwise, 1, false), 6, "rowwise forward dispatches");
    near(dtensor_linear_dispatches(&rowwise, 1, true), 8, "rowwise backward dispatches");
    rowwise.name = "qkv";
    near(dtensor_linear_dispatches(&rowwise, 3, false), 12, "colwise q, k, v forward");
    /* the loss head under loss_parallel: every launch a DTensor op, plus lm_head's 3 + 1 and
     * the 2 head hooks; and (issue 19, on purpose since the outer host work is priced) the
     * loss's 64.9 plain launches (dtensor_step_host.c); the pre-forward's 4 DTensor dispatches
     * and 45.1 plain launches as serial host time beside the floor */
    recipe_head(&M, &S, &t, &l, &r, NULL);
    double hf = r.host_fwd_s, lf, lb, lr;
    host_dispatch_launches(&r, &l, &lf, &lb, &lr);
    near(hf, (lf + 4 + 2) * d_fwd + 64.9 * c, "head forward");
    near(r.host_serial_fwd_s, 4 * d_fwd + 45.1 * c, "pre-forward");
    l.tp = 1, l.sp = false;
    double a, b;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    a = r.host_fwd_s;
    recipe_layer(&M, &plain, &t, &l, false, &r, NULL);
    b = r.host_fwd_s;
    near(a, b, "tp 1: plain tensors");
}

/* Issue 19: the host work of a DTensor TP step outside its layers (dtensor_step_host.c), by hand
 * for Llama-3.1-8B (32 layers, vocab 128256, hidden 4096, untied) on the H100 preset at TP 2,
 * FSDP2 over dp 1:
 *   forward, per micro-batch: 4 x 120.6 us (embedding's RowwiseParallel) + (45.1 + 64.9) x
 *     40.5 us (root pre-forward, loss_parallel's launches) = 0.4824 + 4.455 = 4.9374 ms, of
 *     which the pre-forward (0.4824 + 1.82655 ms) is serial host time and the loss in the
 *     head's forward floor;
 *   backward tail: 64.9 x 92.7 us = 6.01623 ms, plus chunk_cat over the root's gradients per
 *     rank: (2 x 128256 x 4096 + 4096) / 2 = 525,338,624 fp32 = 1,026,052 blocks of 2 KiB x
 *     5.6 ns = 5.7459 ms: 11.7621 ms;
 *   optimizer: 32 x 9 + 3 = 291 tensors x 46.9 us = 13.6479 ms, added to the optimizer step.
 * The tail is serial host time too (recipe_price adds both whole).
 * At TP 1 (no DTensors) and under Megatron none of it. */
static void test_dtensor_step_host(void **state)
{
    (void)state;
    load("8b", "h100");
    assert_int_equal(M.layers, 32);
    assert_false(M.tied_embeddings);
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.tp = 2, l.sp = true, l.mbs = 1, l.dp = 1;
    near(dtensor_step_host_pre_s(40.5e-6, 120.6e-6), 4 * 120.6e-6 + 45.1 * 40.5e-6, "pre-forward");
    near(dtensor_step_host_loss_s(40.5e-6), 64.9 * 40.5e-6, "loss");
    near(dtensor_step_host_pre_s(40.5e-6, 120.6e-6) + dtensor_step_host_loss_s(40.5e-6), 4.9374e-3,
         "outer forward");
    near(dtensor_step_host_tail_s(&S, &M, &l, 92.7e-6),
         64.9 * 92.7e-6 + 6.87e-9 * 208157 + 13.2e-9 * (1026052 - 208157), "backward tail");
    near(dtensor_step_host_optimizer_s(&S, &M, &l, 0), 291 * 46.9e-6, "optimizer host");
    double with = estimate_optimizer_s(&M, &S, &l, 0);
    system_spec no = S;
    no.host_dtensor_optim_tensor_s = 0;
    near(with - estimate_optimizer_s(&M, &no, &l, 0), 291 * 46.9e-6, "in the optimizer step");
    /* the pre-forward and the tail add whole to the head's passes, even where its GPU work
     * (seq 4096: the output layer's GEMMs) is longer than its host floor */
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    static recipe r;
    recipe_head(&M, &S, &t, &l, &r, NULL);
    near(r.host_serial_fwd_s, 4 * 120.6e-6 + 45.1 * 40.5e-6, "head: pre-forward");
    /* the root unit's chunk_cat: 208157 blocks at 6.87 ns, the rest at 13.2 ns (h100.json) */
    near(r.host_serial_bwd_s, 64.9 * 92.7e-6 + 6.87e-9 * 208157 + 13.2e-9 * (1026052 - 208157),
         "head: tail");
    recipe_time a, b;
    recipe_price(&r, &a);
    double sf = r.host_serial_fwd_s, sb = r.host_serial_bwd_s;
    r.host_serial_fwd_s = r.host_serial_bwd_s = 0;
    recipe_price(&r, &b);
    near(a.fwd_s - b.fwd_s, sf, "serial forward added whole");
    near(a.bwd_s - b.bwd_s, sb, "serial backward added whole");
    l.tp = 1, l.sp = false;
    near(dtensor_step_host_optimizer_s(&S, &M, &l, 0), 0, "tp 1: plain tensors");
    layout mg = megatron(2, 1, 1, true);
    near(dtensor_step_host_optimizer_s(&S, &M, &mg, 0), 0, "megatron");
}

/* Issue 19: the DTensor dispatch's host time grows with the TP group (measured at TP 2 and 4 on
 * real layers, bench/results/tphost_2026-11-27/layer_cost.txt: dt = 87.2 + 16.7 x tp us
 * forward, 61.3 + 15.7 x tp us backward on the H100 x4 hosts). By hand at TP 2: forward
 * 87.2 + 33.4 = 120.6 us, backward 61.3 + 31.4 = 92.7 us per dispatch; a Llama-3.1-8B layer's
 * forward at seq 64 (host-bound) then carries 45 x 120.6 us = 5.43 ms of DTensor dispatch and
 * its 27 plain launches 27 x 40.5 us = 1.09 ms (25 kernels of the layer and the two
 * reduce-scatters' torch.cat copies, elementwise.c sp_funcol_copies). From TP 2 to TP 4 the forward's host pace grows
 * by 45 x 2 x 16.7 us = 1.50 ms and the backward's by 68 x 2 x 15.7 us = 2.14 ms less what
 * FSDP2's chunk_cat saves on half the layer's parameters (0.60 ms; below), within the shorter
 * GEMM kernels' last-launch tail (under 0.05 ms). */
static void test_dtensor_host_per_rank(void **state)
{
    (void)state;
    load("8b", "h100");
    near(S.host_dtensor_fwd_s + 2 * S.host_dtensor_fwd_rank_s, 120.6e-6, "TP 2 forward dispatch");
    near(S.host_dtensor_bwd_s + 2 * S.host_dtensor_bwd_rank_s, 92.7e-6, "TP 2 backward dispatch");
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.tp = 2, l.sp = true, l.mbs = 1;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double f2 = r.host_fwd_s, b2 = r.host_bwd_s, rs2 = r.host_rs_copy_in_s;
    /* 45 x 120.6 us + 27 x 40.5 us + the last kernel's GPU tail (microseconds at seq 64) */
    if (fabs(f2 - (45 * 120.6e-6 + 27 * 40.5e-6)) > 0.05e-3)
        fail_msg("TP 2 forward host pace %.6g s, by hand 6.52 ms", f2);
    l.tp = 4;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    if (fabs(r.host_fwd_s - f2 - 45 * 2 * 16.7e-6) > 0.05e-3)
        fail_msg("TP 4 - TP 2 forward: %.6g s, by hand 1.50 ms", r.host_fwd_s - f2);
    /* the backward's plain part shrinks too: FSDP2's chunk_cat host time before the layer's
     * reduce-scatter, the layer's 218,103,808 Linear parameters / tp + its two norms' 8,192
     * (replicated) x 4 B in 2 KiB blocks: 213,008 blocks at TP 2, 208,157 of them at 6.87 ns
     * and 4,851 past the knee at 13.2 ns (1.43003859 + 0.0640332 = 1.49407179 ms), 106,512 at
     * TP 4, all at 6.87 ns (0.73173744 ms) */
    if (fabs(rs2 - 1.49407179e-3) > 1e-12) fail_msg("TP 2 chunk_cat host %.9g s", rs2);
    if (fabs(r.host_rs_copy_in_s - 0.73173744e-3) > 1e-12)
        fail_msg("TP 4 chunk_cat host %.6g s", r.host_rs_copy_in_s);
    if (fabs(r.host_bwd_s - b2 - (68 * 2 * 15.7e-6 - (rs2 - r.host_rs_copy_in_s))) > 0.05e-3)
        fail_msg("TP 4 - TP 2 backward: %.6g s, by hand 2.14 - 0.60 = 1.54 ms", r.host_bwd_s - b2);
}

/* Issue 19: torchtitan's Float8 TP (float8 tensorwise, TP with SP) casts a block's input on its
 * sequence shard before the float8 all-gather, and every TP Linear's backward transposes the
 * float8 input it saved instead of casting the bf16 one again (recipe_builder.c
 * rb_float8_tp_shard_cast). By hand, Llama-3.1-8B at TP 4, 4,096 tokens, torchao tensorwise
 * (X 5 / 5, W 5 / 5, dY 8 bytes an element, precision.c): forward X of qkv and mlp_up over
 * 1,024 rows (5 x 1024 x 4096 each), of attn_out and mlp_down over all 4,096 (5 x 4096 x 1024,
 * 5 x 4096 x 3584), W 5 x (1536 + 1024 + 7168 + 3584) x 4096: 408,944,640 bytes (534,773,760
 * with the casts after the gather); backward X 2 x 4096 x (4096 + 1024 + 4096 + 3584) +
 * W 272,629,760 + dY 8 x 4096 x (1536 + 4096 + 7168 + 4096) = 931,135,488. The lp.quantize
 * ops carry them at the eager elementwise rate (quant_eager). The rowwise recipe keeps its
 * casts after the gather: X over 4,096 rows, 5 bytes each way. */
static void test_float8_tp_shard_cast(void **state)
{
    (void)state;
    load("8b", "h100");
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.tp = 4, l.sp = true, l.mbs = 1, l.compile = true;
    l.precision = PRECISION_FP8, l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double bw = S.hbm_bandwidth_bytes_per_s * S.eager_elementwise_efficiency;
    near(op_named(&r, "lp.quantize")->fwd_s * bw, 408944640.0, "float8 TP forward cast bytes");
    near(op_named(&r, "lp.quantize_bwd")->bwd_s * bw, 931135488.0, "float8 TP backward bytes");
    l.fp8_recipe = FP8_RECIPE_ROWWISE;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    /* rowwise: X 5 + 5 over 4096 rows, W 5 + 5, dY 5 + 5 (precision.c) */
    double x = 4096.0 * (4096 + 1024 + 4096 + 3584), w = 4096.0 * (1536 + 1024 + 7168 + 3584),
           dy = 4096.0 * (1536 + 4096 + 7168 + 4096);
    near(op_named(&r, "lp.quantize")->fwd_s * bw, 5 * x + 5 * w, "rowwise forward bytes");
    near(op_named(&r, "lp.quantize_bwd")->bwd_s * bw, 5 * x + 5 * w + 10 * dy,
         "rowwise backward bytes");
}

/* Issues 14 / 19: FSDP2 sharding over 2 ranks beside DTensor TP 2 issues a layer more slowly on
 * the H100 hosts (host.eager_fsdp_tp_fwd_scale 1.51, _bwd_scale 1.29, measured by
 * bench/results/mgpu9_2026-11-28). By hand, Llama-3.1-8B at seq 64 (host-bound): the forward
 * at dp 1 is 45 x 120.6 us + 27 x 40.5 us = 6.5205 ms (27 plain launches: the layer's 25 and
 * the reduce-scatters' two torch.cat copies); at dp 2 every launch and dispatch of it costs
 * 1.51x: 9.8460 ms. The backward's launches and dispatches grow by 1.29x; chunk_cat's
 * host time before the reduce-scatter (its own measured rate) does not. dp 1 and the H200
 * preset (no figure) keep the unscaled pace. */
static void test_fsdp_tp_host_scale(void **state)
{
    (void)state;
    load("8b", "h100");
    near(S.host_fsdp_tp_fwd_scale, 1.51, "forward scale");
    near(S.host_fsdp_tp_bwd_scale, 1.29, "backward scale");
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 2;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.tp = 2, l.sp = true, l.mbs = 1, l.dp = 1;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    if (fabs(r.host_fwd_s - 6.5205e-3) > 0.05e-3) fail_msg("dp 1 forward %.6g s", r.host_fwd_s);
    l.dp = 2;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double f = r.host_fwd_s, b = r.host_bwd_s, rs = r.host_rs_copy_in_s;
    if (fabs(f - 1.51 * 6.5205e-3) > 0.05e-3) fail_msg("dp 2 forward %.6g s, by hand 9.85 ms", f);
    system_spec no = S;
    no.host_fsdp_tp_fwd_scale = no.host_fsdp_tp_bwd_scale = 0;
    recipe_layer(&M, &no, &t, &l, false, &r, NULL);
    if (fabs(r.host_fwd_s - 6.5205e-3) > 0.05e-3) fail_msg("unscaled dp 2 forward %.6g", r.host_fwd_s);
    near(r.host_rs_copy_in_s, rs, "chunk_cat host unchanged");
    if (fabs((b - rs) - 1.29 * (r.host_bwd_s - rs)) > 0.05e-3)
        fail_msg("dp 2 backward %.6g s vs 1.29 x %.6g s", b, r.host_bwd_s);
    load("8b", "h200");
    near(S.host_fsdp_tp_fwd_scale, 0, "h200: not measured");
}

/* Issue 20 / 24: torchtitan's expert parallelism copies the all-to-all's split sizes to the
 * host after the router (host_dispatch.c q_sync). In a forward the host paces (seq 64), the
 * host then waits for the router GEMM it has just issued: the layer's forward grows by exactly
 * that GEMM's GPU time over the same recipe paced without the sync (moe false: Qwen3-MoE has
 * no shared experts, so FSDP2's copy-outs count the same 3 + 6 tensors either way). */
static void test_ep_split_sync(void **state)
{
    (void)state;
    load("qwen3-30b-a3b", "h100");
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 2;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.ep = 2, l.mbs = 1;
    recipe_layer(&M, &S, &t, &l, true, &r, NULL);
    double synced = r.host_fwd_s, router_s = -1;
    for (int i = 0; i < r.n_ops; i++)
        if (!strcmp(r.op[i].name, "router")) router_s = r.op[i].fwd_s;
    assert_true(router_s > 0);
    host_dispatch_pace(&S, &M, &l, &r, true, false);
    near(synced - r.host_fwd_s, router_s, "split-size sync: the router's GPU time");
    /* torchtitan's experts are three grouped GEMMs (w1, w3, w2), each torch._grouped_mm call
     * two kernels (prepare_grouped_gemm_data + CUTLASS; 6 forward and 12 backward launches in
     * the H100 traces of bench/results/epstep_2026-11-27, epstep branch: was 3 and 6): with 1 s
     * of host time per launch every launch is host-paced, and against the same layer under the
     * FSDP2 path (one GEMM launch for the experts op, no EP) the torchtitan EP layer issues 5
     * more forward launches (+ the sync, which waits for the router's GPU time) and 10 more
     * backward ones. */
    system_spec slow = S;
    slow.host_eager_launch_s = 1.0;
    slow.host_chunk_cat_block_s = 0; /* launches only: FSDP2's chunk_cat host time apart */
    slow.host_chunk_cat_block_large_s = 0;
    recipe_layer(&M, &slow, &t, &l, true, &r, NULL);
    double tf = r.host_fwd_s, tb = r.host_bwd_s;
    for (int i = 0; i < r.n_ops; i++)
        if (!strcmp(r.op[i].name, "router")) router_s = r.op[i].fwd_s;
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.sharding = SHARDING_FSDP;
    f.mbs = 1, f.impl = IMPL_NATIVE;
    recipe_layer(&M, &slow, &t, &f, true, &r, NULL);
    /* and its routing kernels (titan_moe.h): 31 forward and 29 backward launches in place of
     * the FSDP2 path's one moe.permute lump each way */
    near(tf - r.host_fwd_s, 5 + 30 + router_s, "torchtitan experts: 5 + 30 more forward launches");
    near(tb - r.host_bwd_s, 10 + 28, "torchtitan experts: 10 + 28 more backward launches");
}

/* PyTorch's ring attention (torchtitan CP): the layer's attention call costs the host the
 * measured call + step x cp (h200 preset: forward 1.04 + 0.24 x 4 = 2.00 ms, backward 1.52 +
 * 0.37 x 4 = 3.00 ms at CP 4, bench/results/cp_ring_host_2026-11-27), which replaces the plain
 * launch cost of the SDPA op (1 forward, 4 backward launches) and of the ring's merge kernels
 * (cp_ring_torch.c at CP 4, s = 3 steps: forward cp + 4s + 1 = 17, backward 7 + 5s + 2cp = 30).
 * At seq 64 the host paces every launch, so against the same preset without the ring's figures
 * the forward grows by 2.00 ms - 18 c and the backward by 3.00 ms - 34 c (c: the plain host time
 * per launch), up to the GPU time of the tiny merge kernels that no longer hide behind their own
 * launches. */
static void test_cp_ring_host(void **state)
{
    (void)state;
    load("8b", "h200");
    near(S.host_cp_ring_fwd_call_s + 4 * S.host_cp_ring_fwd_step_s, 2.00e-3, "ring forward at CP 4");
    near(S.host_cp_ring_bwd_call_s + 4 * S.host_cp_ring_bwd_step_s, 3.00e-3, "ring backward at CP 4");
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    static recipe r;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* eager: the host floors under test (cuda_graphs.h) */
    l.sharding = SHARDING_FSDP;
    l.cp = 4, l.mbs = 1;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double ring_f = r.host_fwd_s, ring_b = r.host_bwd_s;
    system_spec none = S;
    none.host_cp_ring_fwd_call_s = none.host_cp_ring_fwd_step_s = 0;
    none.host_cp_ring_bwd_call_s = none.host_cp_ring_bwd_step_s = 0;
    recipe_layer(&M, &none, &t, &l, false, &r, NULL);
    double c = S.host_eager_launch_s;
    double df = ring_f - r.host_fwd_s, db = ring_b - r.host_bwd_s;
    if (fabs(df - (2.00e-3 - 18 * c)) > 2e-5)
        fail_msg("ring forward host: %.6g s more, expected %.6g", df, 2.00e-3 - 18 * c);
    if (fabs(db - (3.00e-3 - 34 * c)) > 2e-5)
        fail_msg("ring backward host: %.6g s more, expected %.6g", db, 3.00e-3 - 34 * c);
    /* CP 1 and Megatron's ring (TE, not PyTorch's): no ring host time */
    l.cp = 1;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    double a = r.host_fwd_s;
    recipe_layer(&M, &none, &t, &l, false, &r, NULL);
    near(a, r.host_fwd_s, "cp 1: no ring");
}

static void test_moe(void **state)
{
    (void)state;
    training_spec t = training_default();
    t.global_batch = 16;
    load("mixtral-8x7b", "h100");
    layout l = megatron(2, 2, 2, true);
    l.ep = 2;
    check(&l, &t, "mixtral tp2 pp2 ep2");
    l.recompute = RECOMPUTE_FULL;
    check(&l, &t, "mixtral tp2 pp2 ep2 full recompute");
    load("deepseek-v2-lite", "h100");
    assert_true(M.mla && M.shared_experts > 0 && M.dense_first > 0);
    l = megatron(1, 1, 8, false);
    l.ep = 4;
    check(&l, &t, "deepseek-v2-lite ep4");
    l = megatron(2, 1, 4, true), l.ep = 2, l.cp = 2, l.recompute = RECOMPUTE_FULL;
    check(&l, &t, "deepseek-v2-lite tp2 cp2 ep2 full recompute");
    l = fsdp2(8);
    check(&l, &t, "deepseek-v2-lite fsdp2");
    l = fsdp2(1);
    check(&l, &t, "deepseek-v2-lite fsdp2 one GPU");
    /* issue 20: every dispatcher, and an imbalanced router with and without dropping */
    for (int d = MOE_DISPATCH_ALLTOALL; d <= MOE_DISPATCH_HYBRIDEP; d++) {
        l = megatron(2, 1, 4, true), l.ep = 4, l.moe_dispatcher = (layout_moe_dispatcher)d;
        check(&l, &t, layout_moe_dispatcher_name(l.moe_dispatcher));
    }
    training_spec ti = t;
    ti.moe_imbalance = 1.4;
    check(&l, &ti, "deepseek-v2-lite tp2 ep4 imbalance 1.4");
    ti.moe_capacity_factor = 1.25;
    check(&l, &ti, "deepseek-v2-lite tp2 ep4 imbalance 1.4 capacity 1.25");
    training_spec to = t;
    to.moe_shared_overlap = true;
    l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    check(&l, &to, "deepseek-v2-lite tp2 ep4 shared-expert overlap");
    to.moe_shared_overlap = false;
    to.moe_ep_overlap = true;
    check(&l, &to, "deepseek-v2-lite tp2 ep4 ep overlap");
}

/* Low precision (issue 16): the quantize ops and low-precision GEMM times are in the one list
 * too, so the backend's items, the estimate and the simulator still agree. */
static void test_low_precision(void **state)
{
    (void)state;
    training_spec t = training_default();
    t.global_batch = 16;
    load("8b", "h100");
    layout l = megatron(2, 2, 2, true);
    l.precision = PRECISION_FP8;
    check(&l, &t, "8b megatron tp2 pp2 sp fp8 delayed");
    l = fsdp2(8), l.precision = PRECISION_FP8, l.recompute = RECOMPUTE_FULL;
    check(&l, &t, "8b fsdp2 fp8 tensorwise full recompute");
    load("mixtral-8x7b", "h100");
    l = megatron(2, 2, 2, true), l.ep = 2, l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    check(&l, &t, "mixtral tp2 pp2 ep2 fp8 blockwise");
    load("deepseek-v2-lite", "b200");
    l = megatron(1, 1, 8, false), l.ep = 4, l.precision = PRECISION_NVFP4;
    check(&l, &t, "deepseek-v2-lite ep4 nvfp4");
}

/* recipe_layer_fsdp_from (the search's layer cache): a Megatron-FSDP layer is its DDP form's
 * ops, priced under any recompute setting, with the unfused gradient copy (grad_accum.h: plan
 * emits Megatron-FSDP with --no-gradient-accumulation-fusion; added in prec7) and the unit's
 * gather and reduce-scatter after them: the same ops, in the same order, and the same priced
 * times as recipe_layer gives. */
static void same_fsdp(const layout *fsdp, const training_spec *t, bool moe, const char *what)
{
    static recipe fresh, base, derived;
    /* zeroed, so the ops' padding compares equal (memcmp below) */
    memset(&fresh, 0, sizeof fresh), memset(&base, 0, sizeof base);
    memset(&derived, 0, sizeof derived);
    recipe_layer(&M, &S, t, fsdp, moe, &fresh, NULL);
    layout d = *fsdp;
    d.sharding = SHARDING_DDP;
    d.dp = 1; /* the DDP form of another data-parallel size and recompute setting */
    d.recompute = fsdp->recompute == RECOMPUTE_FULL ? RECOMPUTE_NONE : RECOMPUTE_FULL;
    recipe_layer(&M, &S, t, &d, moe, &base, NULL);
    recipe_layer_fsdp_from(&M, &S, t, fsdp, moe, &base, &derived);
    assert_int_equal(derived.n_ops, fresh.n_ops);
    /* Megatron: the gradient copy, the gather and the reduce-scatter */
    assert_int_equal(fresh.n_ops, base.n_ops + 3);
    assert_string_equal(fresh.op[base.n_ops].name, "grad_accum");
    for (int i = 0; i < fresh.n_ops; i++)
        if (memcmp(&derived.op[i], &fresh.op[i], sizeof fresh.op[i]))
            fail_msg("%s: op %d (%s) differs", what, i, fresh.op[i].name);
    recipe_time a, b;
    recipe_price(&fresh, &a);
    recipe_price(&derived, &b);
    if (memcmp(&a, &b, sizeof a)) fail_msg("%s: priced times differ", what);
}

/* Hugging Face's explicit sliding-window mask (window < seq) runs SDPA's masked cuDNN kernel,
 * which computes every block of the s x s scores: its measured rates (the system's "window"
 * points) divide half the full-sequence FLOPs, 2 x tokens x seq x heads x 2d, whatever the
 * window. Llama-3.1-8B given a window of 2047 or 1024 at seq 4096 (micro-batch 1, one GPU):
 * the same attention time, that FLOP count over the table's rate at (head dim 128, 32 rows,
 * seq 4096). Counting the window's own scores instead (1535.5 or 896 keys per query, not
 * 2048) priced Phi-3 at seq 4096 25% short (bench/results/sgpu_2026-11-27/phases.json). */
/* On one GPU FSDP2's all-gather copy-in casts each fp32 parameter to bf16 with its own launch
 * (kernels-h100.json: 22 bfloat16_copy per Llama-3.2-1B layer where the model's RMSNorm casts
 * are 4); on several GPUs a foreach copy does it (fsdp_copies.h). At seq 64 the host paces, so
 * one GPU's forward gathers the 9 tensors of a Llama layer (q, k, v, o, two norms, gate, up,
 * down) with 9 casts and 9 copies and no copy-in or collective launch (FSDP2's one-rank unshard,
 * fsdp_copies.h: 146 + 146 launches in the pre-forwards of bench/results/host23_2026-11-29's
 * profiled Llama-3.2-1B step, 16 x 9 + 2 tensors), 7 launches more than the same layout on 2
 * GPUs (the copy-in and the all-gather, 2, and 9 copy-outs); the backward's regather (reshard
 * after forward) likewise: 9 + 9 = 18 launches on one GPU against 11 on two (the rest of the
 * backward differs between 1 and 2 GPUs: reduce-scatter copy-in). Before host23 the one-GPU
 * gather counted the two multi-rank launches too (9 more, 20). */
static void test_single_gpu_cast_launches(void **state)
{
    (void)state;
    load("1b", "h100");
    training_spec t = training_default();
    t.seq_len = 64;
    static recipe r;
    double c = S.host_eager_launch_s, f[2], regather[2];
    for (int k = 0; k < 2; k++) {
        layout l = fsdp2(k + 1);
        t.global_batch = k + 1;
        recipe_layer(&M, &S, &t, &l, false, &r, NULL);
        f[k] = r.host_fwd_s, regather[k] = r.host_bwd_s;
        l.reshard_after_forward = false;
        recipe_layer(&M, &S, &t, &l, false, &r, NULL);
        regather[k] -= r.host_bwd_s;
    }
    near(f[0] - f[1], 7 * c, "one GPU: 9 casts, no copy-in or all-gather launch");
    near(regather[0], 18 * c, "one GPU: the backward's regather, 18 launches");
    near(regather[1], 11 * c, "two GPUs: the backward's regather, 11 launches");
}

static void test_fsdp_from_ddp(void **state)
{
    (void)state;
    training_spec t = training_default();
    t.global_batch = 64;
    load("deepseek-v2-lite", "h100");
    layout l = megatron(2, 1, 8, true);
    l.sharding = SHARDING_FSDP, l.ep = 4, l.etp = 1;
    same_fsdp(&l, &t, true, "deepseek-v2-lite tp2 ep4 etp1 fsdp moe");
    same_fsdp(&l, &t, false, "deepseek-v2-lite tp2 fsdp dense");
    l.recompute = RECOMPUTE_SELECTIVE, l.cp = 2;
    same_fsdp(&l, &t, true, "deepseek-v2-lite tp2 cp2 fsdp selective");
    load("8b", "h100");
    l = megatron(4, 2, 4, true);
    l.sharding = SHARDING_FSDP, l.recompute = RECOMPUTE_FULL;
    same_fsdp(&l, &t, false, "8b tp4 pp2 fsdp full recompute");
    l.precision = PRECISION_FP8, l.fp8_param_gather = true;
    same_fsdp(&l, &t, false, "8b tp4 fsdp fp8 param gather");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_recompute_early_stop),
        cmocka_unit_test(test_dtensor_host_cost),
        cmocka_unit_test(test_dtensor_step_host),
        cmocka_unit_test(test_dtensor_host_per_rank),
        cmocka_unit_test(test_fsdp_tp_host_scale),
        cmocka_unit_test(test_float8_tp_shard_cast),
        cmocka_unit_test(test_ep_split_sync),
        cmocka_unit_test(test_cp_ring_host),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_low_precision),
        cmocka_unit_test(test_fsdp_from_ddp),
        cmocka_unit_test(test_single_gpu_cast_launches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
