/*
 * test_sac_host.c — the host's cost of torchtitan's op-level selective activation checkpointing
 * in an eager block (issues 14, 19; bench/results/sac14_2026-11-28): every forward kernel of the
 * layer costs host.sac_fwd_launch_s on top of its launch in the forward, and the backward's
 * replay of the forward charges host.sac_replay_launch_s for every forward kernel, the saved
 * ones (no kernel re-run) as well as the re-run ones (host_dispatch.c costs_of, run_pass).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "host_dispatch.h"
#include "layer_recipe.h"

static model_spec M;
static system_spec S;

static void load(const char *model, const char *sys)
{
    const char *d = getenv("PLAN_DATA_DIR");
    char err[CM_ERRLEN];
    if (model_load(model, d ? d : "data", &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, d ? d : "data", &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout titan(layout_recompute rc, bool compile)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.sharding = SHARDING_FSDP;
    l.mbs = 1, l.recompute = rc, l.compile = compile;
    l.impl = IMPL_NATIVE;
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* the eager launches the host issues (cuda_graphs.h) */
    return l;
}

/* host time charged to the layer's ops in pass p */
static double pass_sum(const host_dispatch_host *h, const recipe *r, int p)
{
    double s = h->pass_s[p];
    for (int i = 0; i < r->n_ops; i++) s += h->op_s[p][i];
    return s;
}

/* Llama-3.1-8B's native block forward, as the queue counts its kernels: q, k, v (3), the
 * attention (1) and its output's copy (1), wo (1), w1 and w3 (2), w2 (1): 9; and the recipe's
 * native elementwise forward launches (elementwise.c): 2 RMSNorms, 6 RoPE kernels (q and k: to
 * fp32, the complex product, to bf16), repeat_kv's copies of k and v (2), 2 residual adds, SiLU
 * and the gate's product (2): 14. 9 + 14 = 23, asserted below; the profiler saw 26 in that block's
 * forward on the H200, 3 of them split-K reduces of the seq-64 GEMMs (bench/results/
 * sac14_2026-11-28/sac_host_tiny.json, llama-3.1-8b:64:1). Forward: 23 x 111 us = 2.553 ms more
 * than without SAC; replay: 23 x 159 us = 3.657 ms, in place of the re-run kernels' plain
 * launches without SAC. */
static void test_sac_host_charges(void **state)
{
    (void)state;
    load("8b", "h200");
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    static recipe r0, r1;
    static host_dispatch_host h0, h1;
    layout l0 = titan(RECOMPUTE_NONE, false), l1 = titan(RECOMPUTE_SELECTIVE, false);
    recipe_layer(&M, &S, &t, &l0, false, &r0, NULL);
    recipe_layer(&M, &S, &t, &l1, false, &r1, NULL);
    assert_true(host_dispatch_host_of(&S, &M, &l0, &r0, true, false, &h0));
    assert_true(host_dispatch_host_of(&S, &M, &l1, &r1, true, false, &h1));
    double kernels = (pass_sum(&h1, &r1, RECIPE_FWD) - pass_sum(&h0, &r0, RECIPE_FWD)) /
                     S.host_sac_fwd_launch_s;
    assert_true(fabs(kernels - 23) < 1e-6);
    double replay = pass_sum(&h1, &r1, RECIPE_RECOMPUTE);
    assert_true(fabs(replay - 23 * S.host_sac_replay_launch_s) < 1e-12);
    assert_true(fabs(replay - 3.657e-3) < 1e-9);
    /* the backward proper is the same */
    assert_true(fabs(pass_sum(&h1, &r1, RECIPE_BWD) - pass_sum(&h0, &r0, RECIPE_BWD)) < 1e-12);
    /* and the host floor of the step's layer grows by at least the forward's share */
    assert_true(r1.host_fwd_s - r0.host_fwd_s > 2.5e-3);
}

/* A compiled block applies the policy at trace time: no per-op charge (its measured block host
 * time is the floor; host_dispatch.c pace). A preset without the measurement: none either. */
static void test_sac_host_not_applied(void **state)
{
    (void)state;
    load("8b", "h200");
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    static recipe r0, r1;
    layout l0 = titan(RECOMPUTE_NONE, false), l1 = titan(RECOMPUTE_SELECTIVE, false);
    system_spec none = S;
    none.host_sac_fwd_launch_s = none.host_sac_replay_launch_s = 0;
    recipe_layer(&M, &none, &t, &l0, false, &r0, NULL);
    recipe_layer(&M, &none, &t, &l1, false, &r1, NULL);
    assert_true(fabs(r1.host_fwd_s - r0.host_fwd_s) < 1e-12);
    /* Megatron's selective recompute is not torch's checkpoint dispatch mode */
    layout m0 = layout_default(FRAMEWORK_MEGATRON), m1 = m0;
    m1.recompute = RECOMPUTE_SELECTIVE;
    recipe_layer(&M, &S, &t, &m0, false, &r0, NULL);
    recipe_layer(&M, &S, &t, &m1, false, &r1, NULL);
    assert_true(fabs(r1.host_fwd_s - r0.host_fwd_s) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sac_host_charges),
        cmocka_unit_test(test_sac_host_not_applied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
