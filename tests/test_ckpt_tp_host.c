/*
 * test_ckpt_tp_host.c — what a checkpointed DTensor TP block's recompute issues on the host where
 * torch's non-reentrant checkpoint stops early (issues 14, 19; bench/results/tpck27_2026-11-29).
 * The stop is raised while autograd packs the saved inputs of the block's last GEMM (w2, the
 * recipe's mlp_down), which it does before the GEMM runs; by then w2's RowwiseParallel input
 * hook (DTensor.from_local) and its Linear's decomposition up to the mm (t, view) have run: 3
 * DTensor dispatches the recompute issues for an op it does not re-run (counted on a real TP 2
 * block: 7 t and 7 view but 6 mm and 6 _unsafe_view on DTensors in the recompute,
 * counts-llama-3.1-8b-L8.json). Each is priced at the DTensor forward dispatch time,
 * host.eager_dtensor_fwd_s + host.eager_dtensor_fwd_rank_s x tp (96.9 us + 0 on the h200
 * preset): 3 x 96.9 = 290.7 us per block.
 * And torch.utils.checkpoint's own saved-tensor hooks (pack in the forward; the recompute's pack
 * and the unpack in the backward), timed in the same TP 2 steps: 32 tensors a Llama block (256
 * pack calls in 8 blocks, x2b/hooks-llama-3.1-8b-L8.json; host_dispatch.c ckpt_saved_tensors
 * counts 7 mm x 2 + 2 RMSNorms x 3 + the attention's 7 + RoPE's 2 + SiLU's 1 + the gate's 2), at
 * host.ckpt_fwd_saved_tensor_s 8.18 us and host.ckpt_bwd_saved_tensor_s 26.3 us: 261.8 us more
 * forward and 841.6 us more backward host time per block.
 * And autograd's DTensor detach of each saved input it unpacks under those hooks (18 a Llama block
 * at host.ckpt_dtensor_detach_s 9.66 us, bench/results/tpck27b_2026-11-29): 173.88 us more.
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

static model_spec M;
static system_spec S;

static void load(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    char err[CM_ERRLEN];
    if (model_load("8b", d ? d : "data", &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", d ? d : "data", &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout titan_tp(int tp, layout_recompute rc)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.sharding = SHARDING_FSDP;
    l.tp = tp, l.sp = tp > 1;
    l.mbs = 1, l.recompute = rc;
    l.impl = IMPL_NATIVE;
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    return l;
}

static int op_index(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return i;
    fail_msg("no op %s", name);
    return -1;
}

/* the recompute's host charge of w2 (mlp_down) */
static double w2_recompute_s(int tp, layout_recompute rc)
{
    training_spec t = training_default();
    t.seq_len = 256;
    t.global_batch = 1;
    static recipe r;
    static host_dispatch_host h;
    layout l = titan_tp(tp, rc);
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    assert_true(host_dispatch_host_of(&S, &M, &l, &r, true, false, &h));
    int i = op_index(&r, "mlp_down");
    assert_false(r.op[i].recompute); /* the GEMM itself is not re-run */
    return h.op_s[RECIPE_RECOMPUTE][i];
}

static void test_stop_dispatches(void **state)
{
    (void)state;
    load();
    assert_true(fabs(S.host_dtensor_fwd_s - 96.9e-6) < 1e-12);
    assert_true(fabs(S.host_dtensor_fwd_rank_s) < 1e-12);
    assert_true(fabs(w2_recompute_s(2, RECOMPUTE_FULL) - 290.7e-6) < 1e-12);
}

/* Without DTensor (TP 1) the hook and the decomposition's t and view are plain views with no
 * launch: nothing is charged; without recompute there is no recompute pass. */
static void test_no_dtensor_no_charge(void **state)
{
    (void)state;
    load();
    assert_true(fabs(w2_recompute_s(1, RECOMPUTE_FULL)) < 1e-15);
    assert_true(fabs(w2_recompute_s(2, RECOMPUTE_NONE)) < 1e-15);
}

/* the layer's host charges with the preset as is, and with the hooks' times (detach false) or
 * the unpack's DTensor detach time (detach true) at 0 */
static void charges(layout_recompute rc, bool detach, double *fwd_s, double *recompute_s)
{
    training_spec t = training_default();
    t.seq_len = 256;
    t.global_batch = 1;
    static recipe r;
    static host_dispatch_host h1, h0;
    layout l = titan_tp(2, rc);
    system_spec s0 = S;
    if (detach) s0.host_ckpt_dtensor_detach_s = 0;
    else s0.host_ckpt_fwd_saved_tensor_s = s0.host_ckpt_bwd_saved_tensor_s = 0;
    recipe_layer(&M, &S, &t, &l, false, &r, NULL);
    assert_true(host_dispatch_host_of(&S, &M, &l, &r, true, false, &h1));
    assert_true(host_dispatch_host_of(&s0, &M, &l, &r, true, false, &h0));
    *fwd_s = h1.pass_s[RECIPE_FWD] - h0.pass_s[RECIPE_FWD];
    *recompute_s = h1.pass_s[RECIPE_RECOMPUTE] - h0.pass_s[RECIPE_RECOMPUTE];
}

static void hook_charges(layout_recompute rc, double *fwd_s, double *recompute_s)
{
    charges(rc, false, fwd_s, recompute_s);
}

static void test_saved_tensor_hooks(void **state)
{
    (void)state;
    load();
    assert_true(fabs(S.host_ckpt_fwd_saved_tensor_s - 8.18e-6) < 1e-15);
    assert_true(fabs(S.host_ckpt_bwd_saved_tensor_s - 2.63e-5) < 1e-15);
    double f, b;
    hook_charges(RECOMPUTE_FULL, &f, &b);
    assert_true(fabs(f - 261.76e-6) < 1e-12);
    assert_true(fabs(b - 841.6e-6) < 1e-12);
    /* op-level SAC has its own measured replay charge (test_sac_host.c); no recompute, no hooks */
    hook_charges(RECOMPUTE_SELECTIVE, &f, &b);
    assert_true(fabs(f) < 1e-15 && fabs(b) < 1e-15);
    hook_charges(RECOMPUTE_NONE, &f, &b);
    assert_true(fabs(f) < 1e-15 && fabs(b) < 1e-15);
}

/* The unpack's DTensor detach of each saved input of the block's DTensor ops (tpck27b): 7 Linears
 * x 2 (input, weight) + 2 RMSNorms x 2 (input, weight; rstd, an output, is detached without hooks
 * too) = 18 a Llama block, at host.ckpt_dtensor_detach_s 9.66 us: 173.88 us of the backward, none
 * in the forward, none under op SAC or without recompute. */
static void test_unpack_detach(void **state)
{
    (void)state;
    load();
    assert_true(fabs(S.host_ckpt_dtensor_detach_s - 9.66e-6) < 1e-15);
    double f, b;
    charges(RECOMPUTE_FULL, true, &f, &b);
    assert_true(fabs(f) < 1e-15);
    assert_true(fabs(b - 18 * 9.66e-6) < 1e-12);
    charges(RECOMPUTE_SELECTIVE, true, &f, &b);
    assert_true(fabs(f) < 1e-15 && fabs(b) < 1e-15);
    charges(RECOMPUTE_NONE, true, &f, &b);
    assert_true(fabs(f) < 1e-15 && fabs(b) < 1e-15);
}

/* the forward's hook charge and the backward's detach charge of a TP 2 block of m under lay */
static void model_charges(const model_spec *m, layout lay, double *hooks_fwd_s, double *detach_s)
{
    training_spec t = training_default();
    t.seq_len = 256;
    t.global_batch = 1;
    static recipe r;
    static host_dispatch_host h1, h0, hd;
    system_spec s0 = S, sd = S;
    s0.host_ckpt_fwd_saved_tensor_s = s0.host_ckpt_bwd_saved_tensor_s = 0;
    sd.host_ckpt_dtensor_detach_s = 0;
    recipe_layer(m, &S, &t, &lay, false, &r, NULL);
    assert_true(host_dispatch_host_of(&S, m, &lay, &r, true, false, &h1));
    assert_true(host_dispatch_host_of(&s0, m, &lay, &r, true, false, &h0));
    assert_true(host_dispatch_host_of(&sd, m, &lay, &r, true, false, &hd));
    *hooks_fwd_s = h1.pass_s[RECIPE_FWD] - h0.pass_s[RECIPE_FWD];
    *detach_s = h1.pass_s[RECIPE_RECOMPUTE] - hd.pass_s[RECIPE_RECOMPUTE];
}

/* Saved tensors by derivatives.yaml beyond the fused Llama block: torchtitan 2024's unfused
 * RMSNorm (LlamaRMSNorm's eager ops: pow 1, rsqrt's result 1, x * rstd 2, weight * x 2 = 6 a norm,
 * 5 of them inputs) gives a Llama-3.1-8B block 7 x 2 + 2 x 6 + 12 = 38 saved tensors (310.84 us of
 * forward hooks; it counted 18 a norm, 62, before) and 7 x 2 + 2 x 5 = 24 unpack detaches (231.84
 * us); Qwen3-8B's native q/k norms are two more _fused_rms_norm: 32 + 6 = 38 (310.84 us). */
static void test_norm_saved_tensors(void **state)
{
    (void)state;
    load();
    double f, d;
    layout l = titan_tp(2, RECOMPUTE_FULL);
    l.rms_norm_unfused = true;
    model_charges(&M, l, &f, &d);
    assert_true(fabs(f - 38 * 8.18e-6) < 1e-12);
    assert_true(fabs(d - 24 * 9.66e-6) < 1e-12);
    static model_spec q;
    char err[CM_ERRLEN];
    const char *dd = getenv("PLAN_DATA_DIR") ? getenv("PLAN_DATA_DIR") : "data";
    char path[1024];
    snprintf(path, sizeof path, "%s/../tests/data/hf/qwen3-8b.json", dd);
    if (model_load(path, dd, &q, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(q.qk_norm);
    model_charges(&q, titan_tp(2, RECOMPUTE_FULL), &f, &d);
    assert_true(fabs(f - 38 * 8.18e-6) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_dispatches),
        cmocka_unit_test(test_no_dtensor_no_charge),
        cmocka_unit_test(test_saved_tensor_hooks),
        cmocka_unit_test(test_unpack_detach),
        cmocka_unit_test(test_norm_saved_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
