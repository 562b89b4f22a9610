/*
 * test_mcore_moe_host.c — the Megatron-Core MoE layer's host floors (costmodel/mcore_moe_host.h,
 * issue 20) against hand-worked numbers: the times from the system's constants, the two floors,
 * and the term on a real layout (Qwen3-30B-A3B on the h100 preset), with and without the
 * full-iteration CUDA graph.
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

#include <jansson.h>

#include "estimate.h"
#include "layer_recipe.h"
#include "layout_codec.h"
#include "mcore_moe_host.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void near(double a, double b)
{
    if (!(fabs(a - b) <= 1e-12 + 1e-9 * fabs(b))) fail_msg("%.12g != %.12g", a, b);
}

/* The h100 preset's constants (data/systems/h100.json, bench/mcore_moe_host_constants.py). */
static system_spec h100_host(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    s.host_mcore_moe_fwd_s = 2.66e-3, s.host_mcore_moe_fwd_ep_s = 3.40e-3;
    s.host_mcore_moe_post_sync_s = 6.0e-4, s.host_mcore_moe_post_sync_ep_s = 2.24e-3;
    s.host_mcore_moe_bwd_s = 1.61e-3, s.host_mcore_moe_bwd_ep_s = 2.26e-3;
    s.host_te_gemm_s = 1.19e-5;
    return s;
}

/* EP 16 with 8 local experts (Qwen3-30B-A3B's 128 over 16 ranks): forward 3.40 ms + 2 x 8 x
 * 11.9 us = 3.5904 ms, of it after the sync 2.24 ms + 0.1904 ms = 2.4304 ms; backward 2.26 ms
 * + 4 x 8 x 11.9 us = 2.6408 ms. EP 1 with 128 local experts: 2.66 + 256 x 0.0119 = 5.7064
 * ms, 0.6 + 3.0464 = 3.6464 ms, 1.61 + 512 x 0.0119 = 7.7028 ms. */
static void test_times(void **state)
{
    (void)state;
    system_spec s = h100_host();
    mcore_moe_host_times h = mcore_moe_host_of(&s, 16, 8);
    near(h.fwd_s, 3.5904e-3);
    near(h.post_sync_s, 2.4304e-3);
    near(h.bwd_s, 2.6408e-3);
    h = mcore_moe_host_of(&s, 1, 128);
    near(h.fwd_s, 5.7064e-3);
    near(h.post_sync_s, 3.6464e-3);
    near(h.bwd_s, 7.7028e-3);
}

/* The floors, at EP 16 / 8 local experts (above). A short layer (GPU forward 1.0 ms, 0.5 ms of
 * exposed exchange, 1.2 ms after the sync; backward 2.0 ms with 0.3 ms exposed): the host sets
 * the forward, 3.5904 - 0.5 = 3.0904 ms (the sync branch: 1.0 + 2.4304 - 1.2 = 2.2304 ms), the
 * backward 2.6408 - 0.3 = 2.3408 ms. A long one (GPU forward 10 ms, 2 ms after the sync): the
 * host is far behind the GPU overall, but after the sync it still shows: 10 + 0.4304 ms. With a
 * recompute the backward re-runs the forward's host time and its sync: short layer
 * max(2.6408 + 3.5904 - 0.3, 2.0 + 1.2304) = 5.9312 ms; long layer (backward 25 ms)
 * max(2.6408 + 3.5904 - 5, 25 + 0.4304) = 25.4304 ms. */
/* The activation's second sync (moe11, mcore_moe_host.h), hand-worked: host forward 5 ms, 1.5
 * after the dispatcher's sync, backward 3; GPU forward 4 ms with 0.5 exposed, 2 after the sync,
 * backward 6 with 0.2 exposed. One sync: x = max(0, 1.5 - 2) = 0, forward max(5 - 0.5, 4) =
 * 4.5 ms. With the second sync 0.3 ms (host) / 1.2 ms (GPU) after the first: the rest after it
 * max(0, 1.2 - 0.8) = 0.4; forward max(1.2, 0.3) + max(4.5 - 1.2 + 0.4, 5 - 0.3) - 0.5 =
 * 1.2 + 4.7 - 0.5 = 5.4 ms; the backward 3 - 0.2 = 2.8 ms either way. Zero windows give the
 * one-sync floors. */
static void test_floors_act_sync(void **state)
{
    (void)state;
    mcore_moe_host_times h = {5e-3, 1.5e-3, 3e-3};
    mcore_moe_gpu g = {4e-3, 0.5e-3, 6e-3, 0.2e-3, 2e-3, false};
    double ff, bf;
    mcore_moe_host_floors_act_sync(&h, &g, 0, 0, &ff, &bf);
    near(ff, 4.5e-3);
    near(bf, 2.8e-3);
    mcore_moe_host_floors_act_sync(&h, &g, 0.3e-3, 1.2e-3, &ff, &bf);
    near(ff, 5.4e-3);
    near(bf, 2.8e-3);
}

static void test_floors(void **state)
{
    (void)state;
    system_spec s = h100_host();
    mcore_moe_host_times h = mcore_moe_host_of(&s, 16, 8);
    double ff, bf;
    mcore_moe_gpu g = {1.0e-3, 0.5e-3, 2.0e-3, 0.3e-3, 1.2e-3, false};
    mcore_moe_host_floors(&h, &g, &ff, &bf);
    near(ff, 3.0904e-3);
    near(bf, 2.3408e-3);
    g.recompute = true;
    mcore_moe_host_floors(&h, &g, &ff, &bf);
    near(bf, 5.9312e-3);
    mcore_moe_gpu l = {10e-3, 0, 20e-3, 5e-3, 2e-3, false};
    mcore_moe_host_floors(&h, &l, &ff, &bf);
    near(ff, 10.4304e-3);
    near(bf, 0); /* the exposed exchange alone outlasts the host's backward */
    l.recompute = true, l.bwd_s = 25e-3;
    mcore_moe_host_floors(&h, &l, &ff, &bf);
    near(bf, 25.4304e-3);
}

/* Qwen3-30B-A3B on the h100 preset, Megatron EP 8 inside one node, MBS 1, seq 4096: 16 local
 * experts, forward host 3.40 + 2 x 16 x 0.0119 = 3.7808 ms, backward 2.26 + 4 x 16 x 0.0119 =
 * 3.0216 ms; the recipe's floors are the formula's over the recipe's own GPU sums, and the
 * forward's binds (this layer's GPU forward is shorter). Under the full-iteration CUDA graph,
 * and for a dense layer, no host term. */
static void test_layout(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    near(s.host_te_gemm_s, 1.19e-5); /* the preset holds the measured constants */
    near(s.host_mcore_moe_post_sync_ep_s, 2.24e-3);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.ep = 8, l.dp = 8, l.mbs = 1;
    static recipe r;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_int_equal(r.local_experts, 16);
    mcore_moe_host_times h = mcore_moe_host_of(&s, 8, 16);
    near(h.fwd_s, 3.7808e-3);
    near(h.bwd_s, 3.0216e-3);
    /* the attention block beside it (bench/mcore_layer_host_constants.py): 0.777 / 0.371 ms,
     * and Qwen3's q/k norms 0.230 / 0.456 ms: 4.7878 / 3.8486 ms (moe7, on purpose) */
    near(s.host_mcore_attn_fwd_s, 7.77e-4);
    near(s.host_mcore_qk_norm_bwd_s, 4.56e-4);
    mcore_moe_host_times moe_only = h;
    mcore_moe_host_add_attention(&s, &m, &h);
    near(h.fwd_s, 4.7878e-3);
    near(h.bwd_s, 3.8486e-3);
    near(h.post_sync_s, moe_only.post_sync_s); /* issued after the MoE block's post-sync part */
    /* the GPU's own sums: the recipe priced without its floors */
    recipe bare = r;
    bare.host_fwd_s = bare.host_bwd_s = 0;
    recipe_time g, with;
    recipe_price(&bare, &g);
    recipe_price(&r, &with);
    double ff, bf;
    mcore_moe_gpu all_hidden = {g.fwd_s, g.fwd_comm_s, g.bwd_s + g.recompute_s, g.bwd_comm_s, 0,
                                false}; /* nothing after the sync: the whole post-sync host */
    mcore_moe_host_floors(&h, &all_hidden, &ff, &bf);
    assert_true(r.host_fwd_s >= h.fwd_s - g.fwd_comm_s - 1e-15);
    assert_true(r.host_fwd_s <= ff + 1e-15); /* the post-sync GPU work hides some of the host */
    assert_true(g.fwd_s < r.host_fwd_s); /* the host sets this forward's pace */
    near(with.fwd_s, r.host_fwd_s);
    near(r.host_bwd_s, fmax(0, h.bwd_s - g.bwd_comm_s));
    /* full recompute re-runs the layer's forward, its host time and sync, in the backward */
    l.recompute = RECOMPUTE_FULL;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    bare = r;
    bare.host_fwd_s = bare.host_bwd_s = 0;
    recipe_price(&bare, &g);
    assert_true(r.host_bwd_s >= h.bwd_s + h.fwd_s - g.bwd_comm_s - 1e-15);
    l.recompute = RECOMPUTE_NONE;
    /* the attention block replayed from a CUDA graph (--cuda-graph-attn): the MoE block's
     * host time alone, a smaller floor */
    l.cuda_graph_attn = true;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    bare = r;
    bare.host_fwd_s = bare.host_bwd_s = 0;
    recipe_price(&bare, &g);
    near(r.host_bwd_s, fmax(0, moe_only.bwd_s - g.bwd_comm_s));
    assert_true(r.host_fwd_s < with.fwd_s);
    l.cuda_graph_attn = false;
    /* the full-iteration graph replays the step: no host term */
    l.cuda_graph_full_iteration = true;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_true(r.host_fwd_s == 0 && r.host_bwd_s == 0);
    /* a dense layer of the same layout: none either */
    l.cuda_graph_full_iteration = false;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(r.host_fwd_s == 0 && r.host_bwd_s == 0);
}

/* The flex dispatchers' second sync (moe11): Qwen3-30B-A3B at EP 8 with HybridEP (or DeepEP)
 * syncs inside the dispatch and again when the experts read the received counts, after the
 * exchange: the forward is at least the exchange plus the whole layer's host time,
 * ep.dispatch + 4.7878 ms - the exposed exchange (mcore_moe_host_floors_act_sync with the
 * host's window 0, the GPU's the exchange), above the all-to-all dispatcher's single sync.
 * With the EP A2A overlap the exchange hides behind the paired micro-batch: one sync. */
static void test_flex_second_sync(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.ep = 8, l.dp = 8, l.mbs = 1;
    static recipe r;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    double a2a_fwd = r.host_fwd_s;
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    double dispatch = -1;
    for (int i = 0; i < r.n_ops; i++)
        if (!strcmp(r.op[i].name, "ep.dispatch")) dispatch = r.op[i].fwd_s;
    assert_true(dispatch > 0);
    recipe bare = r;
    bare.host_fwd_s = bare.host_bwd_s = 0;
    recipe_time g;
    recipe_price(&bare, &g);
    assert_true(r.host_fwd_s >= dispatch + 4.7878e-3 - g.fwd_comm_s - 1e-12);
    assert_true(r.host_fwd_s > a2a_fwd);
    t.moe_ep_overlap = true;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    bare = r;
    bare.host_fwd_s = bare.host_bwd_s = 0;
    recipe_price(&bare, &g);
    assert_true(r.host_fwd_s < dispatch + 4.7878e-3 - g.fwd_comm_s);
}

/* --cuda-graph-attn is Megatron's: another framework is refused with the rule's name; under
 * Megatron the knob round-trips through the layout JSON (written only when on). */
static void test_graph_attn_knob(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.dp = 8, l.mbs = 1;
    l.cuda_graph_attn = true;
    assert_int_equal(layout_check(&m, &s, &t, &l, 8, err, sizeof err), CM_ERULE);
    if (!strstr(err, "--cuda-graph-attn is Megatron")) fail_msg("%s", err);
    /* --moe-dispatcher-sms needs Megatron's flex dispatcher */
    layout ms = layout_default(FRAMEWORK_MEGATRON);
    ms.dp = 8, ms.ep = 8, ms.mbs = 1;
    ms.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    ms.moe_dispatcher_sms = 32;
    assert_int_equal(layout_check(&m, &s, &t, &ms, 8, err, sizeof err), CM_ERULE);
    if (!strstr(err, "--moe-dispatcher-sms N is")) fail_msg("%s", err);
    ms.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    assert_int_equal(layout_check(&m, &s, &t, &ms, 8, err, sizeof err), CM_OK);
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    json_t *j = layout_json_set(json_object(), &mg, NULL);
    assert_null(json_object_get(j, "cuda_graph_attn"));
    json_decref(j);
    mg.cuda_graph_attn = true;
    j = layout_json_set(json_object(), &mg, NULL);
    assert_true(json_is_true(json_object_get(j, "cuda_graph_attn")) ||
                json_integer_value(json_object_get(j, "cuda_graph_attn")) == 1);
    json_decref(j);
}

/* The EP A2A overlap's unpaired steps (moe12): a layer's ep_unpaired_s is its whole exchange
 * less what the pairing exposes; without pipelining Megatron runs the first forward and the
 * last backward alone (combined_1f1b_schedule_for_no_pipelining), so the step's exposed EP is
 * micro x the paired figure + one unpaired figure per layer: two estimates at M and 2M
 * micro-batches differ by M paired micro-batches exactly, 2 e(M) - e(2M) = the 48 layers'
 * unpaired figure. Without the overlap the term is 0. */
static void test_ep_unpaired(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.ep = 8, l.dp = 8, l.mbs = 1;
    static recipe r;
    recipe_time p;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    recipe_price(&r, &p);
    assert_true(p.ep_unpaired_s == 0);
    t.moe_ep_overlap = true;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    recipe_price(&r, &p);
    double raw = 0;
    for (int i = 0; i < r.n_ops; i++)
        if (r.op[i].kind == RECIPE_EP) raw += r.op[i].fwd_s + r.op[i].bwd_s;
    assert_true(p.ep_unpaired_s > 0);
    near(p.ep_unpaired_s, raw - p.ep_s);
    estimate e1, e2;
    if (estimate_layout(&m, &s, &t, &l, &e1, err, sizeof err) != CM_OK) fail_msg("%s", err);
    t.global_batch = 128;
    if (estimate_layout(&m, &s, &t, &l, &e2, err, sizeof err) != CM_OK) fail_msg("%s", err);
    near(2 * e1.time.ep_s - e2.time.ep_s, m.layers * p.ep_unpaired_s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_floors),
        cmocka_unit_test(test_floors_act_sync),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_flex_second_sync),
        cmocka_unit_test(test_graph_attn_knob),
        cmocka_unit_test(test_ep_unpaired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
