/*
 * test_backend_work.c — the layout-to-work translation (backend/work.c), without a GPU. The
 * program is three files (test_backend_work.h): this one and main; test_backend_trace.c, the
 * measured-step trace writer; test_backend_calib.c, the calibrate sweep (backend/calib.c).
 *
 * The central check: the cost model's prediction of every work item, summed over layers and
 * micro-batches, equals estimate_layout()'s compute time (and its TP time, which the estimate
 * leaves exposed), so the backend measures exactly the work the estimate prices.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elementwise.h"
#include "fsdp_copies.h"
#include "test_backend_work.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

model_spec M;
system_spec S;

void load(const char *model, const char *sys)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, data_dir(), &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static work_plan W;

static void build(const layout *l, const training_spec *t)
{
    char err[CM_ERRLEN];
    if (work_plan_build(&M, &S, t, l, &W, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* The items' compute, with FSDP2's compute-stream copies (copy-out, reduce-scatter copy-in),
 * which bk_measure runs around the collectives rather than as items. */
static double items_compute(const work_plan *w)
{
    return w->pred_component_s[WC_GEMM] + w->pred_component_s[WC_ATTENTION] +
           w->pred_component_s[WC_ELEMENTWISE] + w->pred_copies_compute_s;
}

void near(double a, double b, double rel)
{
    if (!(fabs(a - b) <= rel * fabs(b))) fail_msg("%.12g != %.12g (rel %.3g)", a, b, rel);
}

static layout fsdp2(int dp)
{
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    l.dp = dp;
    return l;
}

layout megatron(int tp, int dp, bool sp)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.tp = tp;
    l.dp = dp;
    l.sp = sp;
    return l;
}

static void test_sums_match_estimate(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 8;
    layout cases[9];
    int n = 0;
    cases[n++] = fsdp2(4);
    cases[n++] = megatron(2, 2, true);
    cases[n++] = megatron(4, 1, false);
    cases[n] = megatron(2, 2, true), cases[n].recompute = RECOMPUTE_FULL, n++;
    cases[n] = megatron(2, 2, true), cases[n].recompute = RECOMPUTE_SELECTIVE, n++;
    cases[n] = megatron(1, 4, false), cases[n].sharding = SHARDING_DDP, n++;
    cases[n] = megatron(1, 2, false), cases[n].cp = 2, n++;
    cases[n] = fsdp2(2), cases[n].cp = 2, n++;
    cases[n++] = fsdp2(1); /* one GPU: FSDP2's copies are items (test_fsdp2_one_gpu_items) */
    for (int i = 0; i < n; i++) {
        for (int att = 0; att < 2; att++) {
            training_spec tt = t;
            tt.attention = att ? ATTENTION_UNFUSED : ATTENTION_FLASH;
            build(&cases[i], &tt);
            if (fabs(items_compute(&W) - W.est.time.compute_s) > 1e-9 * W.est.time.compute_s)
                fail_msg("case %d attention %d: items %.12g, estimate %.12g", i, att,
                         items_compute(&W), W.est.time.compute_s);
            near(W.pred_component_s[WC_TP], W.est.time.tp_s, 1e-9);
            assert_int_equal(W.layers, 32);
            assert_true(W.has_head);
        }
    }
}

static void test_shapes_8b(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 4;
    layout l = megatron(4, 1, true);
    build(&l, &t);
    /* QKV: (4096 + 2*1024)/4 outputs from 4096 inputs, 4096 tokens; MLP up: 2*14336/4 */
    const work_item *qkv = NULL, *up = NULL, *qk = NULL;
    int gathers = 0;
    for (int i = 0; i < W.layer_fwd.n; i++) {
        const work_item *it = &W.layer_fwd.item[i];
        if (!strcmp(it->name, "qkv")) qkv = it;
        if (!strcmp(it->name, "mlp_up")) up = it;
        if (!strcmp(it->name, "attn.qk")) qk = it;
        if (it->kind == WORK_COLL && it->op == COLL_ALL_GATHER) gathers++;
    }
    assert_non_null(qkv);
    assert_non_null(up);
    assert_non_null(qk);
    assert_true(qkv->m == 4096 && qkv->n == 1536 && qkv->k == 4096 && qkv->form == GEMM_FWD);
    assert_true(up->n == 7168 && up->k == 4096);
    /* attention: 32/4 heads per rank, causal half of the keys, head dim 128 */
    assert_true(qk->batch == 8 && qk->m == 4096 && qk->n == 2048 && qk->k == 128);
    assert_int_equal(gathers, 2); /* SP: all-gather before QKV and before MLP up */
    /* every forward GEMM has a dgrad and a wgrad of the same FLOPs in backward */
    double ff = 0, bf = 0;
    for (int i = 0; i < W.layer_fwd.n; i++)
        if (W.layer_fwd.item[i].component == WC_GEMM) ff += W.layer_fwd.item[i].flops;
    for (int i = 0; i < W.layer_bwd.n; i++)
        if (W.layer_bwd.item[i].component == WC_GEMM) bf += W.layer_bwd.item[i].flops;
    near(bf, 2 * ff, 1e-12);
}

static void test_dp_traffic(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 4;
    layout l = fsdp2(4);
    build(&l, &t);
    assert_true(W.fsdp && W.dp_active);
    near(W.gather_bytes, 2 * W.layer_params, 1e-12);
    near(W.reduce_bytes, 4 * W.layer_params, 1e-12); /* FSDP2 reduces in fp32 */
    assert_int_equal(W.reduce_op, COLL_REDUCE_SCATTER);
    assert_true(W.gather_in_bwd);
    near(W.optimizer_params, 8030261248.0 / 4, 1e-12);
    assert_int_equal(W.microbatches, 1);

    l = megatron(1, 4, false);
    l.sharding = SHARDING_DDP;
    build(&l, &t);
    assert_int_equal(W.reduce_op, COLL_ALL_REDUCE);
    assert_true(W.gather_bytes == 0 && !W.fsdp);
    near(W.optimizer_params, 8030261248.0, 1e-12);

    l = megatron(2, 2, true);
    build(&l, &t);
    assert_int_equal(W.reduce_op, COLL_REDUCE_SCATTER);
    assert_int_equal(W.gather_op, COLL_ALL_GATHER);
    assert_false(W.gather_each_micro);
    assert_true(W.optimizer_bf16_copy);
}

/* Every elementwise item of an FSDP2 plan carries its list entry's kernel (pattern, operands,
 * bytes), as many times as the list launches it, so the backend runs what the estimate prices;
 * and FSDP2's copies are predicted from fsdp_copies.h: for Llama-3.1-8B on 4 GPUs (one
 * micro-batch, 32 layers and the root unit, each gathered twice) 152,574,963,712 bytes in 535
 * launches at the eager rate (test_elementwise.c test_fsdp2_copies), of which the copy-outs and
 * chunk_cats (112,423,657,472 bytes, 99 launches) are compute-stream time. */
static void test_fsdp2_items_and_copies(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 4;
    layout l = fsdp2(4);
    build(&l, &t);
    elementwise_list el;
    elementwise_layer(&M, &l, W.tokens, false, &el);
    const work_list *lists[2] = {&W.layer_fwd, &W.layer_bwd};
    const elementwise_kernel *ks[2] = {el.fwd, el.bwd};
    int ns[2] = {el.n_fwd, el.n_bwd};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < ns[p]; i++) {
            const elementwise_kernel *k = &ks[p][i];
            int found = 0;
            for (int j = 0; j < lists[p]->n; j++) {
                const work_item *it = &lists[p]->item[j];
                if (it->kind != WORK_STREAM || strcmp(it->name, k->name)) continue;
                found++;
                if (memcmp(&it->access, &k->access, sizeof it->access) || it->bytes != k->bytes)
                    fail_msg("%s: item's kernel differs from the list's", k->name);
                assert_int_equal(it->component, WC_ELEMENTWISE);
            }
            if (found != k->count) fail_msg("%s: %d items, %d launches", k->name, found, k->count);
        }
    double rate = S.hbm_bandwidth_bytes_per_s * S.eager_elementwise_efficiency;
    near(W.pred_component_s[WC_FRAMEWORK], 152574963712.0 / rate + 535 * S.eager_kernel_gap_s,
         1e-12);
    near(W.pred_copies_compute_s, 112423657472.0 / rate + 99 * S.eager_kernel_gap_s, 1e-12);
    assert_true(fsdp_copies_apply(&l));
    /* Megatron runs none */
    layout mg = megatron(2, 2, true);
    build(&mg, &t);
    assert_true(W.pred_component_s[WC_FRAMEWORK] == 0 && W.pred_copies_compute_s == 0);
}

/* The item of list w named `name` (the n-th of that name, from 0), or NULL. */
static const work_item *item_named(const work_list *w, const char *name, int nth)
{
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->item[i].name, name) && nth-- == 0) return &w->item[i];
    return NULL;
}

static void unit_copy(const work_item *it, double bytes, ew_pattern pat, int eo, int ea)
{
    assert_non_null(it);
    assert_true(it->kind == WORK_STREAM && it->param_operands && it->component == WC_FRAMEWORK);
    near(it->bytes, bytes, 1e-12);
    assert_int_equal(it->access.pattern, pat);
    assert_int_equal(it->access.esize[0], eo);
    assert_int_equal(it->access.esize[1], ea);
}

/* issue 14 (bkmeas24): on one GPU FSDP2 runs no collective; per unit it casts each fp32
 * parameter to bf16 (6 bytes a parameter) and copies it into the unsharded parameter (4) at each
 * unshard (forward, and backward when resharded), chunk_cats the bf16 gradients to fp32 (6) and
 * copies them into the fp32 shard (the one-rank reduce-scatter, 8) (fsdp_copies.h). The recipe
 * prices them and the backend runs them as the lists' items, from the weights into the
 * gradients. Llama-3.1-8B, one micro-batch: a layer unit is p = 218,112,000 parameters, the root
 * unit (embedding, output layer, final norm) r = 2 x 128,256 x 4,096 + 4,096 = 1,050,677,248;
 * compute-stream time (2 x 10 + 8) bytes x (32 p + r) at the streaming rate, plus 33 chunk_cats
 * of 6 (32 p + r) bytes at the eager rate and a launch gap each. */
static void test_fsdp2_one_gpu_items(void **state)
{
    (void)state;
    load("8b", "h200");
    training_spec t = training_default();
    t.global_batch = 1;
    layout l = fsdp2(1);
    build(&l, &t);
    double p = 218112000.0, r = 1050677248.0;
    near(W.layer_params, p, 1e-12);
    near(W.root_params, r, 1e-12);
    assert_true(W.fsdp2_copy_items && W.dp_active && W.gather_in_bwd);
    unit_copy(item_named(&W.layer_fwd, "fsdp.unshard.cast", 0), 6 * p, EW_VECTORIZED, 2, 4);
    unit_copy(item_named(&W.layer_fwd, "fsdp.unshard.copy", 0), 4 * p, EW_VECTORIZED, 2, 2);
    unit_copy(item_named(&W.layer_bwd, "fsdp.unshard.cast", 0), 6 * p, EW_VECTORIZED, 2, 4);
    unit_copy(item_named(&W.layer_bwd, "fsdp.unshard.copy", 0), 4 * p, EW_VECTORIZED, 2, 2);
    unit_copy(item_named(&W.layer_bwd, "fsdp.rs_copy_in", 0), 6 * p, EW_CHUNK_CAT, 4, 2);
    unit_copy(item_named(&W.layer_bwd, "fsdp.rs_one_rank", 0), 8 * p, EW_VECTORIZED, 4, 4);
    unit_copy(item_named(&W.head_fwd, "fsdp.unshard.cast", 0), 6 * r, EW_VECTORIZED, 2, 4);
    unit_copy(item_named(&W.head_bwd, "fsdp.rs_one_rank", 0), 8 * r, EW_VECTORIZED, 4, 4);
    assert_null(item_named(&W.layer_fwd, "fsdp.unshard.cast", 1));
    assert_null(item_named(&W.layer_fwd, "fsdp.rs_copy_in", 0));
    double stream = S.hbm_bandwidth_bytes_per_s * S.hbm_efficiency;
    double eager = S.hbm_bandwidth_bytes_per_s * S.eager_elementwise_efficiency;
    double u = 32 * p + r;
    near(W.pred_copies_compute_s, 28 * u / stream + 6 * u / eager + 33 * S.eager_kernel_gap_s,
         1e-12);
    near(W.pred_component_s[WC_FRAMEWORK], W.pred_copies_compute_s, 1e-12);
    /* without resharding the backward unshards nothing */
    l.reshard_after_forward = false;
    build(&l, &t);
    assert_null(item_named(&W.layer_bwd, "fsdp.unshard.cast", 0));
    near(W.pred_copies_compute_s, 18 * u / stream + 6 * u / eager + 33 * S.eager_kernel_gap_s,
         1e-12);
    /* several GPUs: the copies run around the collectives, not as items */
    l = fsdp2(4);
    t.global_batch = 4;
    load("8b", "h200-x4");
    build(&l, &t);
    assert_false(W.fsdp2_copy_items);
    assert_null(item_named(&W.layer_fwd, "fsdp.unshard.cast", 0));
    assert_null(item_named(&W.layer_bwd, "fsdp.rs_one_rank", 0));
}

static layout titan(int tp, int pp, int dp, int cp)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.cp = cp;
    l.sp = tp > 1;
    return l;
}

/* issue 19: torchtitan layouts become work lists. TP 2 with SP on 4 GPUs (FSDP2 over the other
 * 2): the recipe's sums (items' compute = the estimate's compute, TP = its TP), DTensor's SP
 * all-gather before QKV and MLP up and reduce-scatter after the projections, FSDP2's fp32
 * reduce-scatter and copies every micro-batch. PP 2 x FSDP2 2: units gathered in the first
 * micro-batch and reduced after the last (pipelining keeps them across micro-batches), 1F1B and
 * Interleaved1F1B run, GPipe and the V schedules refused with the reason. */
static void test_torchtitan_work(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 8;
    layout l = titan(2, 1, 2, 1);
    l.compile = true;
    build(&l, &t);
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
    near(W.pred_component_s[WC_TP], W.est.time.tp_s, 1e-9);
    int ag = 0, rs = 0;
    for (int i = 0; i < W.layer_fwd.n; i++) {
        const work_item *it = &W.layer_fwd.item[i];
        if (it->kind != WORK_COLL) continue;
        if (!strcmp(it->name, "tp.sp_gather")) ag++;
        if (!strcmp(it->name, "tp.sp_reduce_scatter")) rs++;
    }
    assert_int_equal(ag, 2);
    assert_int_equal(rs, 2);
    assert_true(W.fsdp && W.dp_active && W.reduce_fp32);
    near(W.reduce_bytes, 4 * W.layer_params, 1e-12);
    assert_true(W.gather_each_micro && W.reduce_each_micro);
    assert_false(W.optimizer_bf16_copy); /* torch's AdamW keeps no bf16 copy beside fp32 */
    assert_true(W.pred_component_s[WC_FRAMEWORK] > 0); /* FSDP2 copies are run */

    l = titan(1, 2, 2, 1);
    l.reshard_after_forward = false;
    build(&l, &t);
    assert_false(W.gather_each_micro);
    assert_false(W.reduce_each_micro);
    assert_int_equal(W.microbatches, 4);
    l.vpp = 2;
    l.pp_schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    build(&l, &t);
    assert_int_equal(W.vpp, 2);
    l.pp_schedule = PP_SCHEDULE_ZBV;
    assert_int_not_equal(work_plan_build(&M, &S, &t, &l, &W, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "ZBVZeroBubble is estimated and simulated only"));
    l.vpp = 1;
    l.pp_schedule = PP_SCHEDULE_GPIPE;
    assert_int_not_equal(work_plan_build(&M, &S, &t, &l, &W, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "GPipe"));
}

static void test_rejects_and_slices(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    training_spec t = training_default();
    load("mixtral-8x7b", "h200-x4");
    layout l = megatron(2, 4, true);
    l.ep = 2;
    l.etp = 1;
    assert_int_not_equal(work_plan_build(&M, &S, &t, &l, &W, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "expert tensor parallel"));

    bool whole;
    layout big = megatron(8, 1, true);
    assert_int_equal(work_local_dp(&big, 4, &whole, err, sizeof err), 0);
    assert_non_null(strstr(err, "tp*cp = 8"));
    layout wide = fsdp2(8);
    assert_int_equal(work_local_dp(&wide, 4, &whole, err, sizeof err), 4);
    assert_false(whole);
    layout fits = megatron(2, 2, true);
    assert_int_equal(work_local_dp(&fits, 4, &whole, err, sizeof err), 2);
    assert_true(whole);
    fits.pp = 2;
    /* tp 2 x pp 2 fits 4 GPUs: both stages run, one of the two dp ranks */
    assert_int_equal(work_local_dp(&fits, 4, &whole, err, sizeof err), 1);
    assert_int_equal(work_local_pp(&fits, 4), 2);
    assert_false(whole);
    fits.dp = 1;
    work_local_dp(&fits, 4, &whole, err, sizeof err);
    assert_true(whole);
    fits.pp = 4; /* 8 GPUs: stage 0 alone */
    assert_int_equal(work_local_pp(&fits, 4), 1);
    assert_int_equal(work_local_dp(&fits, 4, &whole, err, sizeof err), 1);
    assert_false(whole);
    /* Megatron order: tp innermost, then cp, then dp */
    layout o = megatron(2, 2, true);
    o.cp = 2;
    assert_int_equal(work_rank(&o, 1, 0, 0), 1);
    assert_int_equal(work_rank(&o, 0, 1, 0), 2);
    assert_int_equal(work_rank(&o, 0, 0, 1), 4);
}


/* Pipeline stage split: layout_stage_layers per stage, the slowest stage reported, the items
 * of that stage summing to the estimate's compute, TP and PP terms. */
static void test_pp_stages(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 16;
    layout l = megatron(2, 1, true);
    l.pp = 2;
    build(&l, &t);
    assert_int_equal(W.pp, 2);
    assert_int_equal(W.stage_layers[0], 16);
    assert_int_equal(W.stage_layers[1], 16);
    assert_int_equal(W.stage, 1); /* the last stage has the output layer: the slowest */
    assert_true(W.has_head);
    assert_int_equal(W.microbatches, 16);
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
    near(W.pred_component_s[WC_TP], W.est.time.tp_s, 1e-9);
    near(W.pred_component_s[WC_PP], W.est.time.pp_s, 1e-12);
    near(W.p2p_bytes, 4096.0 * 4096 * 2 / 2, 1e-12); /* each TP rank sends its 1/tp slice */
    near(W.est.time.pp_s, 16 * 2 * W.p2p_pred_s, 1e-12);
    assert_int_equal(work_chunk_first_layer(&W, 1, 0), 16);
    /* uneven: 32 layers over 3 stages: the extra layers go to stages 1 and 2 */
    l = megatron(1, 1, false);
    l.pp = 3;
    t.global_batch = 6;
    build(&l, &t);
    assert_int_equal(W.stage_layers[0], 10);
    assert_int_equal(W.stage_layers[1], 11);
    assert_int_equal(W.stage_layers[2], 11);
    assert_int_equal(work_chunk_first_layer(&W, 2, 0), 21);
    assert_int_equal(work_chunk_layer_count(&W, 1, 0), 11);
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
    /* interleaved: 32 layers, pp 2 x vpp 4: virtual stage k = c*pp + s holds 4 layers */
    l = megatron(1, 2, false);
    l.pp = 2;
    l.vpp = 4;
    t.global_batch = 8;
    build(&l, &t);
    assert_int_equal(W.chunk_layers, 4);
    assert_int_equal(work_chunk_first_layer(&W, 1, 2), (2 * 2 + 1) * 4);
    assert_int_equal(work_chunk_layer_count(&W, 0, 3), 4);
    near(W.est.time.pp_s, W.microbatches * 2 * 4 * W.p2p_pred_s, 1e-12);
}

/* 1F1B order: the same as the step simulator's, per stage; warm-up p-s-1 forwards. */
static void test_pp_schedule(void **state)
{
    (void)state;
    work_pp_op o[256];
    int n = work_pp_schedule(4, 1, 8, 0, o);
    assert_int_equal(n, 16);
    /* stage 0 of 4: F0 F1 F2 (warm-up), F3 B0 F4 B1 ... F7 B4, B5 B6 B7 */
    for (int i = 0; i < 3; i++) assert_true(!o[i].backward && o[i].microbatch == i);
    assert_true(!o[3].backward && o[3].microbatch == 3 && o[4].backward && o[4].microbatch == 0);
    assert_true(o[13].backward && o[13].microbatch == 5 && o[15].microbatch == 7);
    n = work_pp_schedule(4, 1, 8, 3, o); /* the last stage: no warm-up */
    assert_true(!o[0].backward && o[1].backward && o[1].microbatch == 0);

    int cases[][3] = {{2, 1, 8}, {4, 1, 8}, {4, 1, 2}, {3, 1, 5}, {2, 2, 4}, {4, 2, 8}, {2, 4, 6},
                      {1, 1, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], v = cases[c][1], m = cases[c][2];
        load("8b", "h200-x4");
        training_spec t = training_default();
        t.global_batch = m;
        layout l = megatron(1, 1, false);
        l.pp = p;
        l.vpp = v;
        sim_workspace *ws = sim_alloc();
        char err[CM_ERRLEN];
        estimate e;
        if (estimate_layout(&M, &S, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
        sim_options so = {.serialize = false, .trace = false};
        if (sim_estimate(ws, &M, &S, &t, &l, &so, &e, err, sizeof err) != CM_OK)
            fail_msg("%s", err);
        const sim_op *ops = sim_ops(ws);
        int k = 0;
        for (int s = 0; s < p; s++) {
            n = work_pp_schedule(p, v, m, s, o);
            assert_int_equal(n, 2 * m * v);
            for (int i = 0; i < n; i++, k++) {
                if (ops[k].stage != s || ops[k].microbatch != o[i].microbatch ||
                    ops[k].chunk != o[i].chunk ||
                    (ops[k].pass == SIM_BACKWARD) != o[i].backward)
                    fail_msg("p%d v%d m%d stage %d op %d: sim mb %d chunk %d %s, work mb %d "
                             "chunk %d %s",
                             p, v, m, s, i, ops[k].microbatch, ops[k].chunk,
                             ops[k].pass ? "B" : "F", o[i].microbatch, o[i].chunk,
                             o[i].backward ? "B" : "F");
            }
        }
        assert_int_equal(k, sim_op_count(ws));
        sim_free(ws);
    }
}

/* The host's issue order: every op once, each stage's in schedule order, an op's input issued
 * before it, transfers consumed in the order they were sent, and no deadlock with the slots
 * work_pp_slots picks (and a deadlock with fewer, where fewer cannot work). */
static void test_pp_issue_order(void **state)
{
    (void)state;
    int cases[][3] = {{2, 1, 8}, {4, 1, 8}, {4, 1, 2}, {3, 1, 5}, {2, 2, 4},
                      {4, 2, 8}, {2, 4, 6}, {1, 1, 4}, {4, 1, 64}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], v = cases[c][1], m = cases[c][2];
        int per = 2 * m * v, total = per * p;
        int slots = work_pp_slots(p, v, m);
        assert_true(slots >= 1 && slots <= m * v);
        work_pp_issue *o = malloc(sizeof *o * (size_t)total);
        work_pp_op *sched = malloc(sizeof *sched * (size_t)total);
        if (slots > 1) assert_int_equal(work_pp_issue_order(p, v, m, slots - 1, o), -1);
        assert_int_equal(work_pp_issue_order(p, v, m, slots, o), total);
        for (int s = 0; s < p; s++) work_pp_schedule(p, v, m, s, sched + s * per);
        int next[8] = {0};
        /* sent[(stage * 2 + dir) * per + mb * v + chunk]: that transfer was issued */
        char *sent = calloc((size_t)p * 2 * per, 1);
        for (int i = 0; i < total; i++) {
            int s = o[i].stage;
            assert_int_equal(o[i].index, next[s]);
            next[s]++;
            const work_pp_op *op = &sched[s * per + o[i].index];
            work_pp_link k = work_pp_links(p, v, s, op);
            if (k.from_stage >= 0) {
                int ch = op->chunk + (k.dir == 0 ? (s == 0 ? -1 : 0) : (s == p - 1 ? 1 : 0));
                if (!sent[(s * 2 + k.dir) * per + op->microbatch * v + ch])
                    fail_msg("p%d v%d m%d: stage %d op %d issued before its input", p, v, m, s,
                             o[i].index);
            }
            if (k.to_stage >= 0)
                sent[(k.to_stage * 2 + k.dir) * per + op->microbatch * v + op->chunk] = 1;
        }
        for (int s = 0; s < p; s++) assert_int_equal(next[s], per);
        /* 1F1B needs no more buffers than micro-batches in flight */
        if (v == 1) assert_true(slots <= p);
        free(sent);
        free(o);
        free(sched);
    }
    /* links: forward to the next stage, backward to the previous; interleaved wraps */
    work_pp_op f = {3, 0, false, SCHEDULE_FULL}, b = {3, 1, true, SCHEDULE_FULL};
    work_pp_link k = work_pp_links(4, 2, 3, &f);
    assert_true(k.from_stage == 2 && k.to_stage == 0 && k.dir == 0);
    k = work_pp_links(4, 2, 0, &b);
    assert_true(k.from_stage == 1 && k.to_stage == 3 && k.dir == 1);
    k = work_pp_links(4, 1, 3, &f);
    assert_true(k.from_stage == 2 && k.to_stage == -1);
}

/* MoE: router, EP all-to-alls, grouped expert GEMMs at the cost model's rows per expert
 * (tokens*top_k*ep*etp/(experts*tp)), shared experts; sums equal the estimate. */
static void test_moe_work(void **state)
{
    (void)state;
    load("mixtral-8x7b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 8;
    layout l = megatron(1, 4, false);
    l.ep = 4;
    build(&l, &t);
    assert_true(W.moe);
    assert_int_equal(W.moe_layers, 32);
    assert_int_equal(W.local_experts, 2);
    near(W.expert_rows, 4096.0 * 2 * 4 / 8, 1e-12); /* 4096 */
    const work_item *up = NULL, *disp = NULL, *router = NULL;
    for (int i = 0; i < W.moe_fwd.n; i++) {
        const work_item *it = &W.moe_fwd.item[i];
        if (!strcmp(it->name, "experts_up")) up = it;
        if (!strcmp(it->name, "ep.dispatch")) disp = it;
        if (!strcmp(it->name, "router")) router = it;
    }
    assert_non_null(up);
    assert_non_null(disp);
    assert_non_null(router);
    assert_true(up->m == 4096 && up->n == 2 * 14336 && up->k == 4096 && up->batch == 2);
    assert_true(up->weight_operand);
    assert_true(router->n == 8 && router->k == 4096);
    assert_int_equal(disp->group, GROUP_EP);
    near(disp->bytes, 4096.0 * 2 * 4096 * 2, 1e-12); /* top_k copies of the tokens, bf16 */
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
    near(W.pred_component_s[WC_EP], W.est.time.ep_s, 1e-9);
    assert_int_equal(W.group_size[GROUP_EDP], 1); /* ep 4 of dp 4: experts not replicated */

    /* TP 2 x EP 2 (etp = tp): rows = 4096*2*2*2/(8*2) = 2048; SP shards the router's tokens */
    l = megatron(2, 2, true);
    l.ep = 2;
    build(&l, &t);
    near(W.expert_rows, 2048, 1e-12);
    assert_int_equal(W.local_experts, 4);
    for (int i = 0; i < W.moe_fwd.n; i++)
        if (!strcmp(W.moe_fwd.item[i].name, "router")) assert_true(W.moe_fwd.item[i].m == 2048);
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
    near(W.pred_component_s[WC_EP], W.est.time.ep_s, 1e-9);
    near(W.pred_component_s[WC_TP], W.est.time.tp_s, 1e-9);

    /* Qwen3-30B-A3B: 128 experts, top 8, EP 4: rows = 4096*8*4/128 = 1024 */
    load("qwen3-30b-a3b", "h200-x4");
    l = megatron(1, 4, false);
    l.ep = 4;
    l.recompute = RECOMPUTE_FULL;
    build(&l, &t);
    near(W.expert_rows, 1024, 1e-12);
    assert_int_equal(W.local_experts, 32);
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
    near(W.pred_component_s[WC_EP], W.est.time.ep_s, 1e-9); /* recompute repeats them */

    /* DeepSeek-style dense-first layers stay dense: a config with dense_first 1 */
    load("mixtral-8x7b", "h200-x4");
    M.dense_first = 1;
    l = megatron(1, 4, false);
    l.ep = 2;
    build(&l, &t);
    assert_int_equal(W.moe_layers, 31);
    assert_int_equal(W.first_moe_layer, 1);
    near(items_compute(&W), W.est.time.compute_s, 1e-9);
}

static const work_item *item(const work_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->item[i].name, name)) return &l->item[i];
    fail_msg("no work item '%s'", name);
    return NULL;
}

/* MLA (DeepSeek-V2-Lite: h 2048, 16 heads, no query compression, KV latent 512, qk 128+64,
 * v 128): the projections at the paper's shapes, the attention core with 192-wide queries and
 * keys and 128-wide values, and the items summing to the estimate's compute. */
static void test_mla_work(void **state)
{
    (void)state;
    load("deepseek-v2-lite", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 8;
    for (int tp = 1; tp <= 2; tp++) {
        layout l = megatron(tp, 4 / tp, tp > 1);
        l.ep = 4 / tp;
        l.etp = tp;
        build(&l, &t);
        const work_list *F = &W.layer_fwd;
        assert_true(item(F, "q")->n == 16.0 * 192 / tp && item(F, "q")->k == 2048);
        assert_true(item(F, "kv_down")->n == 512 + 64 && item(F, "kv_down")->k == 2048);
        assert_true(item(F, "kv_up")->n == 16.0 * (128 + 128) / tp && item(F, "kv_up")->k == 512);
        assert_true(item(F, "attn.qk")->k == 192 && item(F, "attn.qk")->batch == 16 / tp);
        assert_true(item(F, "attn.pv")->n == 128);
        assert_true(item(F, "attn_out")->n == 2048 && item(F, "attn_out")->k == 16.0 * 128 / tp);
        assert_true(item(&W.layer_bwd, "attn.bwd.dq")->n == 192);
        assert_true(item(&W.layer_bwd, "attn.bwd.dv")->n == 128);
        near(items_compute(&W), W.est.time.compute_s, 1e-9);
        assert_int_equal(W.moe_layers, 26);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums_match_estimate), cmocka_unit_test(test_shapes_8b),
        cmocka_unit_test(test_dp_traffic),          cmocka_unit_test(test_torchtitan_work), cmocka_unit_test(test_rejects_and_slices),
        cmocka_unit_test(test_calib_ops),           cmocka_unit_test(test_calib_sweep),
        cmocka_unit_test(test_csv_schema),          cmocka_unit_test(test_pp_stages),
        cmocka_unit_test(test_pp_schedule),         cmocka_unit_test(test_pp_issue_order),
        cmocka_unit_test(test_moe_work),            cmocka_unit_test(test_trace_writer),
        cmocka_unit_test(test_mla_work),            cmocka_unit_test(test_fsdp2_items_and_copies),
        cmocka_unit_test(test_fsdp2_one_gpu_items),
        cmocka_unit_test(test_fp8_work),            cmocka_unit_test(test_fp8_blockwise_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
