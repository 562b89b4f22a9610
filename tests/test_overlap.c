/*
 * test_overlap.c — Megatron-Core's overlap knobs (issue 15): the exposed-time formulas of
 * costmodel/overlap.h against hand-worked numbers, Megatron's DDP bucket size, the NCCL tree
 * all-reduce and PAT at scale, the knobs' rules, JSON and flags, the search choosing them, and
 * the backward's asynchronous TP collectives of Megatron without userbuffers.
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
#include "compute.h"
#include "emit.h"
#include "estimate.h"
#include "layer_recipe.h"
#include "layout_codec.h"
#include "overlap.h"
#include "precision.h"
#include "search.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

static model_spec load_model(const char *name)
{
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load(name, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

static system_spec load_system(const char *name)
{
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load(name, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return s;
}

/* The pipelines by hand. Ring exchange, tp 4: GEMM 4 s, chunked 4.4 s -> chunks of 1.1 s;
 * all-gather 3 s -> 1 s per step: 1.1 + 3 x 1.1 - 4 = 0.4 (the chunking loss alone); with a
 * 6 s all-gather 2 s per step: 1.1 + 3 x 2 - 4 = 3.1. Pipeline, 4 splits: chunks 1.2 s, RS
 * 2 s -> 0.5 s each: 1.2 + 3 x 1.2 + 0.5 - 4 = 1.3. Bulk, 1.25x slower while 2 s of
 * communication run: 2 + (4 - 2/1.25) - 4 = 0.4; a 6 s collective outlasts the 5 s GEMM: 2. */
static void test_tp_overlap_formulas(void **state)
{
    (void)state;
    assert_true(REL(overlap_tp_ring_exchange_s(4, 4.4, 3, 4), 0.4) < 1e-12);
    assert_true(REL(overlap_tp_ring_exchange_s(4, 4.4, 6, 4), 3.1) < 1e-12);
    assert_true(REL(overlap_tp_pipeline_s(4, 4.8, 2, 4), 1.3) < 1e-12);
    assert_true(REL(overlap_tp_bulk_s(4, 1.25, 2), 0.4) < 1e-12);
    assert_true(REL(overlap_tp_bulk_s(4, 1.25, 6), 2.0) < 1e-12);
    /* TE's comm kernels take 16 SMs: A100 108 -> 108/92, H100 132 -> 132/116 */
    system_spec a100 = load_system("a100-80g"), h100 = load_system("h100");
    assert_true(REL(overlap_tp_sm_slowdown(&a100), 108.0 / 92.0) < 1e-12);
    assert_true(REL(overlap_tp_sm_slowdown(&h100), 132.0 / 116.0) < 1e-12);
}

/* Megatron DDP: bucket_size = max(40M, 1M x dp) parameters; one bucket without overlap.
 * Exposed: 4 buckets of 1 s in a 2 s backward: max(1, 4 - 2 x 3/4) = 2.5 s; in a 10 s one
 * only the last bucket, 1 s. */
/* Contention (overlap.h), with factors x1.107 / x1.386 (the first run's all-gather figures):
 * compute 10 ms beside a 4 ms collective: the collective takes 4 x 1.386 = 5.544 ms (it ends
 * first: 5.544 <= 11.07), the compute 10 + 5.544 x (1 - 1/1.107) = 10.5359 ms. Beside a 20 ms
 * collective the compute is slowed throughout (11.07 ms) and the collective takes
 * 20 + 11.07 x (1 - 1/1.386) = 23.0830 ms. */
static void test_contention(void **state)
{
    (void)state;
    double ce, me;
    overlap_contended(10e-3, 4e-3, 1.107, 1.386, &ce, &me);
    assert_true(fabs(me - 5.544e-3) < 1e-15);
    assert_true(fabs(ce - (10e-3 + 5.544e-3 * (1 - 1 / 1.107))) < 1e-15);
    assert_true(fabs(ce - 10.5359e-3) < 1e-7);
    overlap_contended(10e-3, 20e-3, 1.107, 1.386, &ce, &me);
    assert_true(fabs(ce - 11.07e-3) < 1e-15);
    assert_true(fabs(me - 23.0830e-3) < 1e-7);
    /* nothing beside it: unchanged */
    overlap_contended(0, 20e-3, 1.107, 1.386, &ce, &me);
    assert_true(ce == 0 && me == 20e-3);
}

static void test_dp_buckets(void **state)
{
    (void)state;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 32;
    assert_true(overlap_dp_bucket_params(&l) == 40e6);
    assert_int_equal(overlap_dp_buckets(&l, 100e6), 1); /* no --overlap-grad-reduce */
    l.overlap_grad_reduce = true;
    assert_int_equal(overlap_dp_buckets(&l, 100e6), 3);
    l.dp = 128;
    assert_true(overlap_dp_bucket_params(&l) == 128e6);
    assert_int_equal(overlap_dp_buckets(&l, 100e6), 1);
    assert_true(REL(overlap_dp_exposed_s(1, 4, 2), 2.5) < 1e-12);
    assert_true(REL(overlap_dp_exposed_s(1, 4, 10), 1.0) < 1e-12);
}

/* At a thousand ranks, one per node, the ring's 2(n-1) network hops make a small all-reduce
 * latency-bound; NCCL's tree (tuning.cc) pays 2 log2(nodes) hops at 0.92 of the bandwidth and
 * half the algorithm bandwidth. Large messages stay on the ring. PAT does the same for
 * all-gather / reduce-scatter: log2(n) hops. */
static void test_collectives_at_scale(void **state)
{
    (void)state;
    system_spec s = load_system("h100");
    layout_group g = layout_group_place(&s, 1024, 8); /* one per node */
    assert_true(g.spans_nodes);
    assert_int_equal(g.members_per_node, 1);
    double bw = collective_busbw_bytes_per_s(&s, g), bytes = 4e6;
    double ring = s.call_latency_s + 2.0 * 1023 * s.inter_latency_s + bytes * 2.0 * 1023 / 1024 / bw;
    double tree = s.call_latency_s + 2.0 * 10 * s.inter_latency_s + bytes * 2.0 / (0.92 * bw);
    assert_true(tree < ring);
    assert_true(REL(collective_time_s(&s, COLL_ALL_REDUCE, bytes, g), tree) < 1e-12);
    double big = 4e10;
    double ring_big = s.call_latency_s + 2.0 * 1023 * s.inter_latency_s +
                      big * 2.0 * 1023 / 1024 / bw;
    assert_true(REL(collective_time_s(&s, COLL_ALL_REDUCE, big, g), ring_big) < 1e-12);
    double pat = s.call_latency_s + 10 * s.inter_latency_s + bytes * 1023.0 / 1024 / bw;
    assert_true(REL(collective_time_s(&s, COLL_REDUCE_SCATTER, bytes, g), pat) < 1e-12);
    /* 1024 ranks, 8 per node (128 nodes): of the ring's 1023 steps, 127 cross the network and
     * 896 stay on NVLink (NCCL tuning.cc) */
    layout_group full = layout_group_place(&s, 1024, 1);
    assert_int_equal(full.members_per_node, 8);
    double bw8 = collective_busbw_bytes_per_s(&s, full);
    double ring8 = s.call_latency_s + 896 * s.intra_latency_s + 127 * s.inter_latency_s +
                   bytes * 1023.0 / 1024 / bw8;
    assert_true(REL(collective_time_s(&s, COLL_ALL_GATHER, bytes, full), ring8) < 1e-12);
}

/* Megatron's rules (arguments.py) and the knobs in the layout's JSON and the emitted flags. */
static void test_knob_rules_json_flags(void **state)
{
    (void)state;
    model_spec m = load_model("70b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    assert_false(l.tp_comm_overlap || l.overlap_grad_reduce || l.overlap_param_gather);
    l.tp = 8; l.pp = 4; l.dp = 8;
    l.tp_comm_overlap = true;
    char err[CM_ERRLEN];
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "sequence parallel"));
    l.sp = true;
    l.overlap_param_gather = true;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "--overlap-grad-reduce"));
    l.overlap_grad_reduce = true;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_OK);
    layout ddp = l;
    ddp.sharding = SHARDING_DDP;
    assert_int_equal(layout_check(&m, &s, &t, &ddp, 0, err, sizeof err), CM_ERULE);

    json_t *j = layout_to_json(&l);
    assert_true(json_is_true(json_object_get(j, "tp_comm_overlap")));
    assert_true(json_is_true(json_object_get(j, "overlap_grad_reduce")));
    assert_true(json_is_true(json_object_get(j, "overlap_param_gather")));
    layout back;
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_true(layout_equal(&back, &l));
    json_decref(j);

    estimate e;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = "70b"};
    char *text = NULL;
    assert_int_equal(emit_megatron_args(&e, &m, &s, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "--tp-comm-overlap"));
    assert_non_null(strstr(text, "--overlap-grad-reduce"));
    assert_non_null(strstr(text, "--overlap-param-gather"));
    free(text);
    assert_int_equal(emit_bridge(&e, &m, &s, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "cfg.model.tp_comm_overlap = True"));
    free(text);
}

/* TP 8 with SP inside a node: the userbuffer overlap hides most of the exposed TP time (the
 * all-gather behind the QKV / FC1 GEMMs, the reduce-scatter behind the projections), and the
 * DP overlap hides most of the gradient reduce-scatter. */
static void test_overlap_hides_time(void **state)
{
    (void)state;
    model_spec m = load_model("70b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8; l.pp = 4; l.dp = 8; l.sp = true;
    char err[CM_ERRLEN];
    estimate off, on;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &off, err, sizeof err), CM_OK);
    l.tp_comm_overlap = true;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &on, err, sizeof err), CM_OK);
    assert_true(on.time.tp_s < 0.5 * off.time.tp_s);
    assert_true(on.time.tp_s > 0);
    assert_true(on.time.compute_s == off.time.compute_s);
    /* the userbuffers: 10 x (4096 x 1) x 8192 x 2 bytes = 640 MiB */
    assert_true(REL(on.memory.total_bytes - off.memory.total_bytes, 10.0 * 4096 * 8192 * 2) <
                1e-9);
    l.overlap_grad_reduce = l.overlap_param_gather = true;
    estimate dp;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &dp, err, sizeof err), CM_OK);
    assert_true(dp.time.dp_s < on.time.dp_s);
}

/* Megatron without userbuffers (bw13, recipe_tp.c tp_nccl_block): 70B on H100, TP 8 with SP,
 * bf16. The MLP block's forward keeps its all-gather + reduce-scatter; its backward exposes the
 * row-parallel fc2's output-gradient all-gather, then the fc1 input's all-gather beside fc1's
 * dgrad GEMM (tokens x 2 ffn/8 -> hidden) and the dgrad's reduce-scatter beside fc1's wgrad GEMM
 * (hidden x 2 ffn/8 over the tokens), each pair at the measured NCCL contention (x1.176 GEMM,
 * x1.363 collective): exposed = max(GEMM', collective') - GEMM. Both collectives are far
 * shorter than their GEMMs here, so the backward is the all-gather plus the GEMMs' slowdowns. */
static void test_tp_nccl_backward(void **state)
{
    (void)state;
    model_spec m = load_model("70b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8; l.pp = 4; l.dp = 8; l.sp = true;
    recipe r;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    double tokens = r.tokens, h = m.hidden, n1 = 2.0 * m.ffn / 8;
    layout_group g = layout_tp_group(&s, &l);
    double bytes = tokens * h * 2.0;
    double ag = collective_time_s(&s, COLL_ALL_GATHER, bytes, g);
    double rs = collective_time_s(&s, COLL_REDUCE_SCATTER, bytes, g);
    double dgrad = compute_gemm_s(&s, tokens, h, n1), wgrad = compute_gemm_s(&s, h, n1, tokens);
    double ge, ce, exposed = ag;
    overlap_contended(dgrad, ag, 1.176, 1.363, &ge, &ce);
    assert_true(ce < ge); /* hidden: only the GEMM's slowdown is left */
    exposed += fmax(ge, ce) - dgrad;
    overlap_contended(wgrad, rs, 1.176, 1.363, &ge, &ce);
    exposed += fmax(ge, ce) - wgrad;
    int seen = 0;
    for (int i = 0; i < r.n_ops; i++) {
        if (strcmp(r.op[i].name, "tp.mlp")) continue;
        seen++;
        assert_true(REL(r.op[i].fwd_s, ag + rs) < 1e-12);
        assert_true(REL(r.op[i].leave_fwd_s, rs) < 1e-12);
        assert_true(REL(r.op[i].bwd_s, exposed) < 1e-12);
        assert_true(r.op[i].bwd_s < ag + rs); /* was ag + rs, all exposed, before bw13 */
    }
    assert_int_equal(seen, 1);
    /* the output gradient's gather in TE's formats (precision.h): bf16 plans and other
     * frameworks 0 (bf16), per-tensor FP8 its rowwise byte, MXFP8 / NVFP4 both copies */
    assert_true(precision_tp_grad_gather_bytes(&l) == 0);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_true(precision_tp_grad_gather_bytes(&l) == 1.0);
    l.precision = PRECISION_MXFP8;
    assert_true(precision_tp_grad_gather_bytes(&l) == 2.0 * (1.0 + 1.0 / 32));
    l.precision = PRECISION_NVFP4;
    assert_true(precision_tp_grad_gather_bytes(&l) == 2.0 * (0.5 + 1.0 / 16));
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.precision = PRECISION_FP8;
    assert_true(precision_tp_grad_gather_bytes(&f) == 0);
}

/* The search picks the knobs (the fastest variant of each layout) and --no-overlap keeps
 * them off. */
static void test_search_chooses_knobs(void **state)
{
    (void)state;
    model_spec m = load_model("70b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    search_options o = {.gpus = 256, .keep = 8, .frameworks = {false, true}};
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &s, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(r->count > 0);
    const layout *best = &r->ranked[0].layout;
    assert_true(best->overlap_grad_reduce);
    if (best->tp > 1 && best->sp) assert_true(best->tp_comm_overlap);
    double with = r->ranked[0].time.step_s;
    o.no_overlap = true;
    assert_int_equal(search_run(&m, &s, &t, &o, r, err, sizeof err), CM_OK);
    for (int i = 0; i < r->count; i++) {
        const layout *x = &r->ranked[i].layout;
        assert_false(x->tp_comm_overlap || x->overlap_grad_reduce || x->overlap_param_gather);
    }
    assert_true(r->ranked[0].time.step_s > with);
    search_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_overlap_formulas),
        cmocka_unit_test(test_contention),
        cmocka_unit_test(test_dp_buckets),
        cmocka_unit_test(test_collectives_at_scale),
        cmocka_unit_test(test_knob_rules_json_flags),
        cmocka_unit_test(test_overlap_hides_time),
        cmocka_unit_test(test_tp_nccl_backward),
        cmocka_unit_test(test_search_chooses_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
