/*
 * test_offload.c — Megatron CPU offload (costmodel/offload.h, issue 21), by hand:
 * the optimizer step with a fraction on the host, the GPU memory it frees, the host link by
 * system (PCIe Gen5 x16 on DGX H100: 55e9 B/s per GPU and direction; NVLink-C2C on GB200:
 * 200e9), and the activation offload's rules and memory.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "estimate.h"
#include "offload.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static system_spec load_system(const char *name)
{
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load(name, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return s;
}

/* 1e9 parameters, half on the host, GPU Adam 0.4 s for all of them, on DGX H100 (PCIe 55e9
 * B/s, CPU Adam 1.65e9 params/s per GPU): D2H = H2D = 4 B x 0.5e9 / 55e9 = 0.036364 s; CPU
 * Adam 0.5e9 / 1.65e9 = 0.30303 s; step = max(0.2, 0.036364) + max(0.30303, 0.036364) =
 * 0.50303 s. All of it on the host: max(0, 0.072727) + max(0.60606, 0.072727) = 0.67879 s. */
static void test_optimizer_step_by_hand(void **state)
{
    (void)state;
    system_spec h100 = load_system("h100");
    assert_true(h100.pcie_bandwidth_bytes_per_s == 55e9);
    assert_true(h100.host_adam_params_per_s == 1.65e9);
    assert_true(fabs(offload_optimizer_step_s(&h100, 1e9, 0.4, 0.5) - 0.503030) < 1e-5);
    assert_true(fabs(offload_optimizer_step_s(&h100, 1e9, 0.4, 1.0) - 0.678788) < 1e-5);
    /* host memory per node: 8 GPUs x 16 B x 0.5e9 = 64e9 B */
    assert_true(offload_optimizer_host_bytes(&h100, 1e9, 0.5) == 64e9);
    /* GB200's NVLink-C2C (200e9 B/s): the copies take 4 x 0.5e9 / 200e9 = 0.01 s; with the
     * CPU Adam out of the way (a huge rate) the step is max(0.2, 0.01) + 0.01 = 0.21 s */
    system_spec gb = load_system("gb200-nvl72");
    assert_true(gb.pcie_bandwidth_bytes_per_s == 200e9);
    gb.host_adam_params_per_s = 1e13;
    assert_true(fabs(offload_optimizer_step_s(&gb, 1e9, 0.4, 0.5) - 0.21) < 1e-4);
}

/* Llama-3.1-70B, TP 8, PP 1, DP 8, distributed optimizer on 64 H100: the optimizer state is
 * 12 B x 70.55e9 / 64 params = 13.2e9 B (12.3 GiB); --optimizer-offload-fraction 0.5 keeps
 * half on the GPU, and the step is the formula above with this rank's 1.10e9 parameters. */
static void test_optimizer_offload_estimate(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load("70b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8;
    l.dp = 8;
    l.sp = true;
    l.sharding = SHARDING_DISTOPT;
    estimate e0, e1;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e0, err, sizeof err), CM_OK);
    l.optimizer_offload_pct = 50;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_OK);
    double local = e0.memory.optimizer_bytes / 12.0;
    assert_true(fabs(local - model_params_total(&m) / 64) < 0.01 * local);
    assert_true(fabs(e1.memory.optimizer_bytes - 0.5 * e0.memory.optimizer_bytes) < 1);
    assert_true(fabs((e0.memory.total_bytes - e1.memory.total_bytes) -
                     0.5 * e0.memory.optimizer_bytes) < 1);
    double link = 4 * 0.5 * local / 55e9, cpu = 0.5 * local / 1.65e9;
    double want = fmax(0.5 * e0.time.optimizer_s, link) + fmax(cpu, link);
    assert_true(fabs(e1.time.optimizer_s - want) < 1e-9 * want);
    /* the rules: distributed optimizer only */
    l.sharding = SHARDING_DDP;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_ERULE);
}

/* Activation offload: Megatron's rules (pp 1, no recompute), and all layers but one leave
 * the GPU: Llama-3.1-8B (32 layers) at TP 8 keeps 1/32 of its decoder activations (Transformer
 * Engine's schedule releases each offloaded layer before a later layer's forward: peak
 * (L - N) layers, cpu_offload.py's DefaultOffloadSynchronizer). */
static void test_activation_offload(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8;
    l.sp = true;
    estimate e0, e1;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e0, err, sizeof err), CM_OK);
    l.activation_offload = true;
    assert_int_equal(offload_activation_layers(&m, &l), 31);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_OK);
    double dec0 = e0.memory.activations_bytes - e0.memory.logits_bytes;
    double dec1 = e1.memory.activations_bytes - e1.memory.logits_bytes;
    /* 1/32 kept */
    assert_true(fabs(dec1 - dec0 * 1.0 / 32) < 1e-6 * dec0);
    assert_true(e1.time.step_s >= e0.time.step_s); /* the copies never make it faster */
    /* the host holds the other 31/32: the offloaded bytes the GPU no longer does */
    assert_true(fabs(e1.memory.host_activation_bytes - dec0 * 31.0 / 32) < 1e-6 * dec0);
    assert_true(e1.feasible);
    /* ... for every GPU of the node at once: 8 x that against the DGX's 2048 GiB. Llama-3.1-70B
     * under Megatron-FSDP on 64 GPUs, seq 8192: one sequence per micro-batch parks 163 GiB per
     * GPU on the host (1308 per node, fits), two park 327 (2615 per node: does not). */
    model_spec big;
    if (model_load("70b", data_dir(), &big, err, sizeof err) != CM_OK) fail_msg("%s", err);
    layout f = layout_default(FRAMEWORK_MEGATRON);
    f.sharding = SHARDING_FSDP;
    f.dp = 64;
    f.activation_offload = true;
    training_spec tf = training_default();
    tf.seq_len = 8192;
    tf.global_batch = 512;
    for (int mbs = 1; mbs <= 2; mbs++) {
        f.mbs = mbs;
        assert_int_equal(estimate_layout(&big, &sys, &tf, &f, &e1, err, sizeof err), CM_OK);
        double node = sys.gpus_per_node * e1.memory.host_activation_bytes;
        assert_true(e1.memory.total_bytes < e1.memory.capacity_bytes); /* the GPU is not it */
        assert_int_equal(node <= sys.host_memory_bytes, mbs == 1);
        assert_int_equal(e1.feasible, mbs == 1);
    }
    assert_non_null(strstr(e1.infeasible_reason, "host memory per node"));
    l.pp = 2;
    l.dp = 1;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_ERULE);
}

/* Transformer Engine's copy schedule by hand (offload.h). Four layers of 1 s forward and
 * backward, the first two offloaded, each copy 3 s (3 bytes over a 1 B/s link):
 * forward: L0 [0,1], L1 [1,2]; copy0 [1,4], copy1 [4,7]; L2 waits for copy0 -> [4,5], L3 for
 * copy1 -> [7,8]: 8 s for 4 s of compute, 4 s of waits. Backward: L3 [0,1]; at L2's start the
 * reload of layer 1 is queued [1,4]; L2 [1,2]; at L1's start layer 0's [4,7]; L1 waits for
 * its own -> [4,5]; L0 for its own -> [7,8]: 4 s again. A link 6x faster (copies 0.5 s) hides
 * every copy behind a layer; offloading 3 of 4 (TE's most) leaves no layer between a copy and
 * its deadline: each of L1..L3 waits a whole copy (0.5 s) in the forward. */
static void test_activation_offload_schedule(void **state)
{
    (void)state;
    system_spec sys = {0};
    sys.pcie_bandwidth_bytes_per_s = 1;
    double one[4] = {1, 1, 1, 1}, three[4] = {3, 3, 3, 3}, half[4] = {3, 3, 3, 3};
    offload_activation_pass p = {.n = 4, .n_off = 2, .fwd_s = one, .bwd_s = one, .bytes = three};
    double fw, bw;
    offload_activation_wait_s(&sys, &p, &fw, &bw);
    assert_true(fabs(fw - 4) < 1e-12);
    assert_true(fabs(bw - 4) < 1e-12);
    sys.pcie_bandwidth_bytes_per_s = 6; /* 0.5 s a copy */
    p.bytes = half;
    offload_activation_wait_s(&sys, &p, &fw, &bw);
    assert_true(fw == 0 && bw == 0);
    p.n_off = 3; /* L1 waits copy0 [1,1.5]; L2 copy1 [2.5,3]; L3 copy2 [4,4.5] */
    offload_activation_wait_s(&sys, &p, &fw, &bw);
    assert_true(fabs(fw - 1.5) < 1e-12);
    assert_true(fabs(bw - 1.5) < 1e-12);
    p.n_off = 9; /* clamped to n - 1 */
    double fw9, bw9;
    offload_activation_wait_s(&sys, &p, &fw9, &bw9);
    assert_true(fw9 == fw && bw9 == bw);
}

/* --activation-offload-layers N: the first N of Llama-3.1-8B's 32 layers leave the GPU, so it
 * keeps 32 - N layers' activations; N must be below 32 and needs the offload. */
static void test_activation_offload_layers(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8;
    l.sp = true;
    estimate e0, e1;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e0, err, sizeof err), CM_OK);
    l.activation_offload = true;
    l.activation_offload_layers = 20;
    assert_int_equal(offload_activation_layers(&m, &l), 20);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_OK);
    double dec0 = e0.memory.activations_bytes - e0.memory.logits_bytes;
    double dec1 = e1.memory.activations_bytes - e1.memory.logits_bytes;
    assert_true(fabs(dec1 - dec0 * 12.0 / 32) < 1e-6 * dec0);
    assert_true(fabs(e1.memory.host_activation_bytes - dec0 * 20.0 / 32) < 1e-6 * dec0);
    l.activation_offload_layers = 31; /* the most: the default's count */
    assert_int_equal(offload_activation_layers(&m, &l), 31);
    l.activation_offload_layers = 32;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "below the model's 32 decoder layers"));
    l.activation_offload = false;
    l.activation_offload_layers = 4;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e1, err, sizeof err), CM_ERULE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimizer_step_by_hand),
        cmocka_unit_test(test_optimizer_offload_estimate),
        cmocka_unit_test(test_activation_offload),
        cmocka_unit_test(test_activation_offload_schedule),
        cmocka_unit_test(test_activation_offload_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
