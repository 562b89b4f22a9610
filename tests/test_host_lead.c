/*
 * test_host_lead.c — the host's lead over the GPU carried across a micro-batch (estimate.c
 * stage_layers_cost, recipe_price's host_lead_* / host_exposed_bwd_s): the GPU work the host
 * queued ahead during the forward and the loss head hides the backward's host excess (FSDP2's
 * chunk_cat), up to that lead, on a single stage; FSDP2's chunk_cat host time at its two
 * measured rates (fsdp_copies.h); and the host-paced share of a step (host_paced.h) that plan
 * estimate prints, hand-checked on a host-bound layout and zero on GPU-bound ones.
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

#include "estimate_internal.h"
#include "fsdp_copies.h"
#include "host_paced.h"
#include "layer_recipe.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static model_spec M;
static system_spec S;

static void load(void)
{
    char err[CM_ERRLEN];
    if (model_load("1b", data_dir(), &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static training_spec train(void)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    return t;
}

/* recipe_price: a floor below the GPU time leaves a lead of the difference; above it, the
 * forward takes the host's time (no lead) and the backward grows by the excess. */
static void test_price_fields(void **state)
{
    (void)state;
    load();
    training_spec t = train();
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.mbs = 1;
    static recipe r;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    r.host_fwd_s = r.host_bwd_s = 0;
    recipe_time g;
    recipe_price(&r, &g); /* GPU only */
    assert_true(g.host_lead_fwd_s == 0 && g.host_lead_bwd_s == 0 && g.host_exposed_bwd_s == 0);
    double gb = g.bwd_s + g.recompute_s;
    r.host_fwd_s = g.fwd_s / 2;
    r.host_bwd_s = gb + 5e-3;
    recipe_time x;
    recipe_price(&r, &x);
    assert_true(fabs(x.host_lead_fwd_s - g.fwd_s / 2) < 1e-15);
    assert_true(x.fwd_s == g.fwd_s);
    assert_true(fabs(x.host_exposed_bwd_s - 5e-3) < 1e-15);
    assert_true(fabs(x.bwd_s - (g.bwd_s + 5e-3)) < 1e-15);
    assert_true(x.host_lead_bwd_s == 0);
    r.host_fwd_s = 2 * g.fwd_s;
    r.host_bwd_s = gb / 4;
    recipe_price(&r, &x);
    assert_true(x.host_lead_fwd_s == 0 && x.fwd_s == 2 * g.fwd_s);
    assert_true(fabs(x.host_lead_bwd_s - 0.75 * gb) < 1e-15);
    assert_true(x.host_exposed_bwd_s == 0 && x.bwd_s == g.bwd_s);
}

/* 16 layers of 10 ms forward and 20 ms backward, the host 3 ms behind the GPU in each forward
 * and 2 ms over it in each backward (DDP: no FSDP terms): the forward's lead, 16 x 3 = 48 ms,
 * covers the backward's 16 x 2 = 32 ms, so the layers take 16 x 30 - 32 = 448 ms; on a
 * pipeline stage (pp 2: 8 layers, the backward waits for the next stage) 8 x 30 = 240 ms. */
static void test_lead_hides_backward_excess(void **state)
{
    (void)state;
    load();
    training_spec t = train();
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.mbs = 1;
    l.sharding = SHARDING_DDP;
    layer_kinds k;
    memset(&k, 0, sizeof k);
    k.dense.fwd_s = 10e-3;
    k.dense.bwd_s = 20e-3;
    k.dense.host_lead_fwd_s = 3e-3;
    k.dense.host_exposed_bwd_s = 2e-3;
    k.moe = k.dense_bf16 = k.moe_bf16 = k.dense;
    assert_true(fabs(estimate_stage_layers_total(&M, &S, &t, &l, 0, &k) - 0.448) < 1e-12);
    l.pp = 2;
    assert_true(fabs(estimate_stage_layers_total(&M, &S, &t, &l, 0, &k) - 0.240) < 1e-12);
    /* no lead of their own: the loss head's (its GPU time over its few launches' host time,
     * priced) hides up to all 32 ms */
    l.pp = 1;
    k.dense.host_lead_fwd_s = 0;
    k.moe = k.dense_bf16 = k.moe_bf16 = k.dense;
    static recipe h;
    recipe_head(&M, &S, &t, &l, &h, NULL);
    recipe_time hx;
    recipe_price(&h, &hx);
    double head_lead = hx.host_lead_fwd_s + hx.host_lead_bwd_s;
    assert_true(head_lead > 1e-3); /* the 1b preset's head at seq 4096: milliseconds */
    double want = 0.480 - fmin(head_lead, 0.032);
    assert_true(fabs(estimate_stage_layers_total(&M, &S, &t, &l, 0, &k) - want) < 1e-12);
}

/* fsdp_copies.h: 6.87 ns a block up to the knee (208,157 blocks), 13.2 ns past it (the H100
 * preset): 100,000 blocks (51,200,000 parameters, fp32 output 204.8 MB) 0.687 ms; 1,000,000
 * blocks (512,000,000 parameters) 208,157 x 6.87 + 791,843 x 13.2 ns = 1.43003859 + 10.4523276
 * = 11.88236619 ms; without the large rate 6.87 ms. */
static void test_chunk_cat_two_rates(void **state)
{
    (void)state;
    load();
    assert_true(fabs(fsdp_rs_copy_in_host_s(&S, 51200000.0, 1) - 0.687e-3) < 1e-15);
    assert_true(fabs(fsdp_rs_copy_in_host_s(&S, 512000000.0, 1) - 11.88236619e-3) < 1e-14);
    system_spec one = S;
    one.host_chunk_cat_block_large_s = 0;
    assert_true(fabs(fsdp_rs_copy_in_host_s(&one, 512000000.0, 1) - 6.87e-3) < 1e-15);
}

/*
 * host_paced.h on a host-bound layout: Llama-3.2-1B under FSDP2 on one H100, seq 128, one
 * sequence. A decoder layer's forward issues 53 launches at the preset's 40.5 us
 * (host.eager_launch_s): its kernels and FSDP2's unshard at world size 1 (one bf16 cast and one
 * copy per each of 9 tensors; no copy-in or collective at one rank, fsdp_copies.h: 55 launches
 * before host23), 2.1465 ms against 0.3111 ms of GPU work (0.312 with the eager kernels at
 * gpu.eager_elementwise_efficiency_alone 0.59, before refit23's 0.62; 0.256 ms before host23; the
 * unshard's 10 bytes a parameter at the streaming rate now: 60.82 M x 10 B at 3.35e12 x 0.91,
 * 0.1995 ms of it), so the 16 layers' forward is host-paced by 16 x (2.1465 - 0.3111) = 29.37 ms
 * (31.54 ms before host23); the loss
 * head's 10 launches (0.405 ms) are under its 0.935 ms of GPU time (GPU-paced). The backward:
 * the layers' host excess less the lead the head's GPU work gives the host (test above). And
 * the figures add up to the step plan estimate prints: GPU-only + host-paced = step.
 */
static void test_host_paced_share(void **state)
{
    (void)state;
    load();
    training_spec t = train();
    t.seq_len = 128;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.mbs = 1;
    static recipe r, h;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    recipe_time x, hx;
    recipe_price(&r, &x);
    double c = S.host_eager_launch_s, n = r.host_fwd_s / c;
    assert_true(fabs(c - 40.5e-6) < 1e-12);
    assert_true(fabs(n - 53) < 1e-9);          /* whole launches: 53 x 40.5 us = 2.1465 ms */
    assert_true(x.gpu_fwd_s < 0.35e-3 && x.fwd_s == r.host_fwd_s); /* host-bound forward */
    recipe_head(&M, &S, &t, &l, &h, NULL);
    recipe_price(&h, &hx);
    assert_true(fabs(h.host_fwd_s - 10 * c) < 1e-15 && hx.fwd_s == hx.gpu_fwd_s);
    estimate e;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&M, &S, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(e.microbatches, 1);
    host_paced p;
    host_paced_of(&M, &S, &e, &p);
    assert_true(p.priced && host_paced_shown(&p));
    double want_fwd = M.layers * (n * c - x.gpu_fwd_s); /* 29.37 ms */
    assert_true(fabs(p.host_paced_fwd_s - want_fwd) < 1e-12);
    assert_true(fabs(want_fwd - 29.366e-3) < 0.01e-3);
    double head_lead = hx.host_lead_fwd_s + hx.host_lead_bwd_s;
    double excess = M.layers * (r.host_bwd_s - (x.gpu_bwd_s + x.recompute_s));
    assert_true(fabs(p.host_paced_bwd_s - (excess - fmin(head_lead, excess))) < 1e-12);
    /* consistent with the printed step */
    assert_true(p.step_s == e.time.step_s);
    assert_true(fabs(p.gpu_only_step_s + p.host_paced_s - e.time.step_s) < 1e-15);
    assert_true(fabs(p.fraction - p.host_paced_s / e.time.step_s) < 1e-15);
    assert_true(p.fraction > 0.5 && p.fraction < 1);
    /* the passes' share is all of it but the gathers the instant host's shorter forward no
     * longer hides (FSDP's exposed time grows on the GPU-only step) */
    system_spec g = host_paced_host_scaled(&S, 0);
    estimate e0;
    assert_int_equal(estimate_layout(&M, &g, &t, &l, &e0, err, sizeof err), CM_OK);
    double more_comm = e0.time.comm_exposed_s - e.time.comm_exposed_s;
    assert_true(more_comm >= 0);
    assert_true(fabs(p.host_paced_fwd_s + p.host_paced_bwd_s + p.host_paced_optimizer_s -
                     more_comm - p.host_paced_s) < 1e-12);
    /* a host 1.5x slower: the layers' host-bound forward alone takes 16 x 0.5 x 2.2275 ms more */
    assert_true(p.slow_host_step_s - e.time.step_s > M.layers * 0.5 * n * c - 1e-12);

    /* GPU-bound: Megatron (TE's kernels, no eager floor) and the same FSDP2 model at seq 4096
     * and micro-batch 4, where every pass's GPU time is over its host time: nothing */
    layout lm = layout_default(FRAMEWORK_MEGATRON);
    t.seq_len = 4096;
    assert_int_equal(estimate_layout(&M, &S, &t, &lm, &e, err, sizeof err), CM_OK);
    host_paced_of(&M, &S, &e, &p);
    assert_true(p.priced && p.host_paced_s == 0 && p.gpu_only_step_s == e.time.step_s);
    assert_true(p.host_paced_fwd_s == 0 && p.host_paced_bwd_s == 0 && !host_paced_shown(&p));
    assert_true(p.slow_host_step_s == e.time.step_s);
    t.global_batch = 4;
    l.mbs = 4;
    assert_int_equal(estimate_layout(&M, &S, &t, &l, &e, err, sizeof err), CM_OK);
    host_paced_of(&M, &S, &e, &p);
    assert_true(p.priced && p.host_paced_s == 0 && p.gpu_only_step_s == e.time.step_s);
    assert_true(!host_paced_shown(&p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_price_fields),
        cmocka_unit_test(test_lead_hides_backward_excess),
        cmocka_unit_test(test_chunk_cat_two_rates),
        cmocka_unit_test(test_host_paced_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
