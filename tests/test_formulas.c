/*
 * test_formulas.c — each cost-model formula against a hand-worked number, with its source.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collective.h"
#include "elementwise.h"
#include "estimate.h"
#include "estimate_internal.h"
#include "estimate_costs.h"
#include "flops.h"
#include "memory.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

/* GPT-3 175B as in Narayanan et al. 2021 Table 1 (h 12288, 96 heads, 96 layers, V 51200). */
static model_spec gpt(int layers, int hidden, int heads, long vocab, int seq)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "gpt");
    m.layers = layers;
    m.hidden = hidden;
    m.heads = m.kv_heads = heads;
    m.head_dim = hidden / heads;
    m.ffn = 4L * hidden;
    m.vocab = vocab;
    m.max_positions = seq;
    m.tied_embeddings = true;
    m.learned_positions = true;
    m.activation = MODEL_ACT_GELU;
    m.norm = MODEL_NORM_LAYER;
    m.qkv_bias = m.out_bias = true;
    m.dropout = true;
    return m;
}

/* A system with round numbers so times can be worked by hand. */
static system_spec toy_system(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "toy");
    s.peak_bf16_flops_per_s = 1e15;
    s.hbm_bytes = 80e9;
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.gemm_efficiency_max = 0.5;
    s.hbm_efficiency = 1.0;
    s.attention_efficiency = 0.5;
    s.gpus_per_node = 8;
    s.intra_bandwidth_bytes_per_s = 100e9;
    s.intra_latency_s = 1e-6;
    s.intra_busbw_efficiency = 1.0;
    s.nics_per_node = 8;
    s.nic_bandwidth_bytes_per_s = 25e9;
    s.inter_latency_s = 5e-6;
    s.inter_busbw_efficiency = 1.0;
    s.pcie_bandwidth_bytes_per_s = 25e9;
    s.host_memory_bytes = 2e12;
    s.host_adam_params_per_s = 1e9;
    return s;
}

/* Narayanan et al. 2021, eq. (3) counts hardware FLOPs with full recompute, no causal saving:
 * our generic count must reproduce it exactly; without recompute it is Korthikanti's 72 B L s
 * h^2 (1 + s/6h + V/12hL). */
static void test_flops_match_published_definitions(void **state)
{
    (void)state;
    model_spec m = gpt(96, 12288, 96, 51200, 2048);
    training_spec t = training_default();
    t.seq_len = 2048;
    t.global_batch = 1536;
    t.causal = false;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.recompute = RECOMPUTE_FULL;
    double eq3 = flops_narayanan_eq3(1536, 2048, 96, 12288, 51200);
    assert_true(REL(flops_hardware_per_step(&m, &t, &l), eq3) < 1e-12);
    double k72 = flops_korthikanti_model(1536, 2048, 96, 12288, 51200);
    assert_true(REL(flops_model_per_step(&m, &t), k72) < 1e-12);
    /* Hand number: eq.(3) for B=1, s=2048, l=96, h=12288, V=51200:
     * 96*2048*96*12288^2 = 2.84997e15, times (1 + 2048/73728 + 51200/18874368) = 1.030491,
     * gives 2.93683e15 (to 6 figures). */
    assert_true(REL(flops_narayanan_eq3(1, 2048, 96, 12288, 51200), 2.93683e15) < 1e-5);
    /* Causal halving removes half the attention core (scores and over-values, 2*s*s*d per
     * head each): 3 passes x 96 layers x 0.5 x 2 x B x s x s x heads x (d_qk + d_v). */
    training_spec tc = t;
    tc.causal = true;
    double diff = flops_model_per_step(&m, &t) - flops_model_per_step(&m, &tc);
    double core = 3.0 * 96 * 0.5 * (2.0 * 1536 * 2048.0 * 2048 * 96 * (128 + 128));
    assert_true(REL(diff, core) < 1e-12);
}

/* Korthikanti et al. 2022, Table 2: activation bytes per layer. */
static void test_activations_korthikanti_table2(void **state)
{
    (void)state;
    model_spec m = gpt(96, 12288, 96, 51200, 2048);
    training_spec t = training_default();
    t.seq_len = 2048;
    t.attention = ATTENTION_UNFUSED;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    double s = 2048, b = 1, h = 12288, a = 96;
    double sbh = s * b * h;
    /* no parallelism: sbh (34 + 5as/h) */
    assert_true(REL(memory_layer_activation_bytes(&m, &t, &l, 0), sbh * (34 + 5 * a * s / h)) <
                1e-12);
    /* TP 8, no SP: sbh (10 + 24/t + 5as/(ht)) */
    l.tp = 8;
    assert_true(REL(memory_layer_activation_bytes(&m, &t, &l, 0),
                    sbh * (10 + 24.0 / 8 + 5 * a * s / (h * 8))) < 1e-12);
    /* TP 8 + SP: sbh (34/t + 5as/(ht)) */
    l.sp = true;
    assert_true(REL(memory_layer_activation_bytes(&m, &t, &l, 0),
                    sbh * (34.0 / 8 + 5 * a * s / (h * 8))) < 1e-12);
    /* + selective recompute: sbh 34/t */
    l.recompute = RECOMPUTE_SELECTIVE;
    assert_true(REL(memory_layer_activation_bytes(&m, &t, &l, 0), sbh * 34.0 / 8) < 1e-12);
    /* full recompute keeps the layer input: 2sbh/t with SP */
    assert_true(REL(memory_layer_checkpoint_bytes(&m, &t, &l), 2 * sbh / 8) < 1e-12);
    /* pipeline: first stage holds p micro-batches, x (1 + (p-1)/(p v)) interleaved */
    l.pp = 8;
    l.vpp = 3;
    assert_true(REL(memory_in_flight(&l, 64, 0), 8 * (1 + 7.0 / 24)) < 1e-12);
    /* the last rank holds its (v - 1) p warm-up chunks and one more: 17 chunks of 1/3 stage
     * (was 1.0, the 1F1B figure; schedule_peak_in_flight of the interleaved order agrees) */
    assert_true(REL(memory_in_flight(&l, 64, 7), 17.0 / 3) < 1e-12);
    assert_true(memory_in_flight(&l, 2, 0) < 3.0); /* never more than m micro-batches */
}

/* Bytes per parameter: DDP 2+4+12 = 18; distributed optimizer 6 + 12/d (Megatron-LM
 * dist_optimizer docs); Megatron-FSDP everything / d. */
static void test_states_bytes_per_param(void **state)
{
    (void)state;
    model_spec m = gpt(24, 2048, 16, 51200, 2048);
    system_spec sys = toy_system();
    training_spec t = training_default();
    t.seq_len = 2048;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8;
    double p = model_params_total(&m);
    l.sharding = SHARDING_DDP;
    memory_breakdown r = memory_stage(&m, &sys, &t, &l, 0);
    assert_true(REL(r.weights_bytes + r.gradients_bytes + r.optimizer_bytes, 18 * p) < 1e-12);
    l.sharding = SHARDING_DISTOPT;
    r = memory_stage(&m, &sys, &t, &l, 0);
    assert_true(REL(r.weights_bytes + r.gradients_bytes + r.optimizer_bytes, (6 + 12.0 / 8) * p) <
                1e-12);
    l.sharding = SHARDING_FSDP;
    r = memory_stage(&m, &sys, &t, &l, 0);
    assert_true(REL(r.weights_bytes + r.gradients_bytes + r.optimizer_bytes, 18 * p / 8) < 1e-12);
}

/* nccl-tests doc/PERFORMANCE.md bus factors. */
static void test_bus_factors(void **state)
{
    (void)state;
    assert_true(collective_get(COLL_ALL_REDUCE)->bus_factor(8) == 1.75);
    assert_true(collective_get(COLL_ALL_GATHER)->bus_factor(8) == 0.875);
    assert_true(collective_get(COLL_REDUCE_SCATTER)->bus_factor(4) == 0.75);
    assert_true(collective_get(COLL_ALL_TO_ALL)->bus_factor(2) == 0.5);
    assert_true(collective_get(COLL_SEND_RECV)->bus_factor(2) == 1.0);
    assert_ptr_equal(collective_find("all_gather"), collective_get(COLL_ALL_GATHER));
}

/* Alpha-beta by hand. In a node (100 GB/s, 1 us): all-reduce of 1 GB over 8 GPUs =
 * 14 steps x 1 us + 1e9 x 1.75 / 1e11 = 0.017514 s. Across 8 nodes, one GPU per node
 * (8 NICs x 25 GB/s / 8 GPUs = 25 GB/s each, 5 us): 14 x 5 us + 1.75e9 / 25e9 = 0.07007 s.
 * Two GPUs per node: twice the NIC share, 0.035 + 70 us = 0.03507 s. */
static void test_collective_times(void **state)
{
    (void)state;
    system_spec s = toy_system();
    layout_group in = layout_group_place(&s, 8, 1);
    assert_false(in.spans_nodes);
    assert_true(REL(collective_time_s(&s, COLL_ALL_REDUCE, 1e9, in), 0.017514) < 1e-12);
    layout_group across = layout_group_place(&s, 8, 8);
    assert_true(across.spans_nodes);
    assert_int_equal(across.members_per_node, 1);
    assert_true(REL(collective_time_s(&s, COLL_ALL_REDUCE, 1e9, across), 0.07007) < 1e-12);
    layout_group two = layout_group_place(&s, 8, 4);
    assert_int_equal(two.members_per_node, 2);
    assert_true(REL(collective_time_s(&s, COLL_ALL_REDUCE, 1e9, two), 0.03507) < 1e-12);
    /* a point-to-point message across nodes: 5 us + 1e8 / 25e9 = 0.004005 s */
    layout_group pp = layout_group_place(&s, 2, 8);
    assert_true(REL(collective_time_s(&s, COLL_SEND_RECV, 1e8, pp), 0.004005) < 1e-12);
    /* the per-call cost is paid once per collective, whatever the size */
    system_spec s2 = s;
    s2.call_latency_s = 18e-6;
    assert_true(REL(collective_time_s(&s2, COLL_ALL_REDUCE, 1e9, in), 0.017514 + 18e-6) < 1e-12);
    /* a group of one costs nothing */
    assert_true(collective_time_s(&s, COLL_ALL_REDUCE, 1e9, layout_group_place(&s, 1, 1)) == 0);
}

/* Megatron rank order: tp innermost, then cp, dp, pp (DESIGN.md). */
static void test_placement(void **state)
{
    (void)state;
    system_spec s = toy_system();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8; l.dp = 4; l.pp = 2;
    assert_false(layout_tp_group(&s, &l).spans_nodes);
    assert_true(layout_dp_group(&s, &l).spans_nodes);
    assert_int_equal(layout_dp_group(&s, &l).members_per_node, 1);
    l.tp = 2;
    assert_int_equal(layout_dp_group(&s, &l).members_per_node, 4);
}

/* Narayanan et al. 2021 Sec. 2.2: bubble = (p-1)/v micro-batch times, i.e. a fraction
 * (p-1)/(v m) of the ideal time, for equal stages (test_sim checks the simulator on those).
 * Here the loss head makes the last stage the slowest, and the fill and drain run through the
 * other stages (estimate.c estimate_worst_stage): (p-1)/v of their micro-batch time, the first
 * and middle stages' alike here (8 layers each, the embedding's lookup on the first), below
 * the slowest stage's. */
static void test_pipeline_bubble(void **state)
{
    (void)state;
    model_spec m = gpt(32, 4096, 32, 51200, 2048);
    system_spec s = toy_system();
    training_spec t = training_default();
    t.seq_len = 2048;
    t.global_batch = 64;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.pp = 4; l.dp = 2; l.vpp = 2;
    estimate e;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &e, err, sizeof err), CM_OK);
    int micro = 64 / 2;
    assert_int_equal(e.microbatches, micro);
    layer_kinds k;
    estimate_layer_times(&m, &s, &t, &l, &k);
    stage_time first = estimate_stage_cost(&m, &s, &t, &l, 0, &k, NULL);
    stage_time mid = estimate_stage_cost(&m, &s, &t, &l, 1, &k, NULL);
    stage_time worst = estimate_worst_stage(&m, &s, &t, &l, NULL, NULL);
    double fill = fmax(estimate_stage_total(&first), estimate_stage_total(&mid));
    assert_true(fill < e.time.microbatch_s);
    assert_true(REL(worst.fill_s, fill) < 1e-12);
    assert_true(REL(e.time.bubble_s, 3.0 / 2.0 * fill) < 1e-12);
    assert_true(e.time.bubble_s < 3.0 / 2.0 * e.time.microbatch_s);
}

/* Megatron's fused cross entropy in Transformer Engine's kernel (layout.h te_cross_entropy; TE
 * transformer_engine/pytorch/triton/cross_entropy.py): the bf16 logits are kept and their
 * gradient written into them, so the loss holds 2 bytes a logit instead of the vocab-parallel
 * loss's fp32 4 (Korthikanti Sec. 4.3), its largest block is the bf16 logits, and the loss
 * moves 2 bytes a logit forward (the online softmax's read) and 4 backward (read, write back)
 * instead of 10 and 10. Megatron only. */
static void test_te_cross_entropy(void **state)
{
    (void)state;
    model_spec m = gpt(32, 4096, 32, 51200, 2048);
    system_spec s = toy_system();
    training_spec t = training_default();
    t.seq_len = 2048;
    t.global_batch = 8;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2; l.dp = 4; l.mbs = 1;
    double logits = 2048.0 * 51200 / 2; /* tokens x vocab / tp */
    assert_true(REL(memory_logits_bytes(&m, &t, &l), 4 * logits) < 1e-12);
    assert_true(REL(memory_largest_block_bytes(&m, &t, &l), 4 * logits) < 1e-12);
    elementwise_list e;
    elementwise_head(&m, &l, 2048, &e);
    assert_true(REL(elementwise_bytes(e.fwd, e.n_fwd) + elementwise_bytes(e.bwd, e.n_bwd),
                    20 * logits) < 1e-12);
    l.te_cross_entropy = true;
    assert_true(REL(memory_logits_bytes(&m, &t, &l), 2 * logits) < 1e-12);
    assert_true(REL(memory_largest_block_bytes(&m, &t, &l), 2 * logits) < 1e-12);
    elementwise_head(&m, &l, 2048, &e);
    assert_true(REL(elementwise_bytes(e.fwd, e.n_fwd), 2 * logits) < 1e-12);
    assert_true(REL(elementwise_bytes(e.bwd, e.n_bwd), 4 * logits) < 1e-12);
    char err[CM_ERRLEN];
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_OK);
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.dp = 8; f.te_cross_entropy = true;
    assert_int_equal(layout_check(&m, &s, &t, &f, 0, err, sizeof err), CM_ERULE);
    if (!strstr(err, "--te-cross-entropy")) fail_msg("%s", err);
}

static void test_layout_rules(void **state)
{
    (void)state;
    model_spec m = gpt(32, 4096, 32, 51200, 2048);
    system_spec s = toy_system();
    training_spec t = training_default();
    char err[CM_ERRLEN];
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 3;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "must divide the attention heads"));
    l = layout_default(FRAMEWORK_FSDP2);
    l.pp = 2;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "no TP/PP/EP"));
    /* issue 19: the pipeline-1/no-recompute limit is Megatron-FSDP's; PyTorch FSDP2's CPU
     * offload composes with activation checkpointing (behaviour changed on purpose) */
    l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_FSDP;
    l.offload = true;
    l.recompute = RECOMPUTE_FULL;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "CPU offload"));
    l.framework = FRAMEWORK_FSDP2;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_OK);
    l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 4;
    assert_int_equal(layout_check(&m, &s, &t, &l, 8, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "does not equal --gpus 8"));
    l.ep = 2;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "needs an MoE model"));
    /* EP is carved out of dp: an 8-expert model on dp 4 allows ep 4, not ep 8 */
    model_spec moe = m;
    moe.experts = 8; moe.top_k = 2; moe.expert_ffn = 14336;
    l.ep = 4;
    assert_int_equal(layout_check(&moe, &s, &t, &l, 4, err, sizeof err), CM_OK);
    l.ep = 8;
    assert_int_equal(layout_check(&moe, &s, &t, &l, 4, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "carved out of the data-parallel ranks"));
}

/* issue 14: torch FSDP2 + AdamW. The optimizer step holds params, grads, m and v (16 bytes per
 * parameter) plus foreach's sqrt list (4); fused allocates nothing more. Its time streams the
 * implementation's bytes (foreach 80 + clip 12, fused 28 + 12: impl.h). */
static void test_fsdp2_optimizer_impls(void **state)
{
    (void)state;
    model_spec m = gpt(24, 2048, 16, 51200, 2048);
    system_spec sys = toy_system();
    training_spec t = training_default();
    t.seq_len = 2048;
    t.global_batch = 1;
    layout l = layout_default(FRAMEWORK_FSDP2);
    double p = model_params_total(&m);
    memory_breakdown fe = memory_stage(&m, &sys, &t, &l, 0);
    assert_true(REL(fe.optimizer_temp_bytes, 4 * p) < 1e-12);
    assert_true(REL(fe.optimizer_step_bytes - fe.framework_bytes, 20 * p) < 1e-12);
    assert_true(fe.total_bytes >= fe.optimizer_step_bytes);
    l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    memory_breakdown fu = memory_stage(&m, &sys, &t, &l, 0);
    assert_true(fu.optimizer_temp_bytes == 0);
    assert_true(REL(fu.optimizer_step_bytes - fu.framework_bytes, 16 * p) < 1e-12);
    double s_fused = estimate_optimizer_s(&m, &sys, &l, 0);
    l.optimizer_impl = OPTIMIZER_IMPL_FOREACH;
    double s_foreach = estimate_optimizer_s(&m, &sys, &l, 0);
    assert_true(REL(s_foreach / s_fused, 92.0 / 40.0) < 1e-12);
}

/* Megatron's optimizer step (estimate_optimizer.c): per parameter it updates, the gradient
 * norm's read (4), the fused Adam (28) and the master -> bf16 parameter copy (6): 38 bytes; and
 * zero_grad_buffer's 4 bytes for every parameter of the stage, sharded or not. 24-layer GPT of
 * hidden 2048 on the toy GPU (2e12 B/s, efficiency 1): DDP 42 p / 2e12; the distributed
 * optimizer over DP 4, (38 p / 4 + 4 p) / 2e12, 13.5 / 42 of it. */
static void test_megatron_optimizer_bytes(void **state)
{
    (void)state;
    model_spec m = gpt(24, 2048, 16, 51200, 2048);
    system_spec sys = toy_system();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = l.pp = l.cp = 1, l.dp = 1, l.sharding = SHARDING_DDP;
    double p = model_params_total(&m);
    assert_true(REL(estimate_optimizer_s(&m, &sys, &l, 0), 42.0 * p / 2e12) < 1e-12);
    l.dp = 4, l.sharding = SHARDING_DISTOPT;
    assert_true(REL(estimate_optimizer_s(&m, &sys, &l, 0), 13.5 * p / 2e12) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_match_published_definitions),
        cmocka_unit_test(test_activations_korthikanti_table2),
        cmocka_unit_test(test_states_bytes_per_param),
        cmocka_unit_test(test_bus_factors),
        cmocka_unit_test(test_collective_times),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_pipeline_bubble),
        cmocka_unit_test(test_te_cross_entropy),
        cmocka_unit_test(test_layout_rules),
        cmocka_unit_test(test_fsdp2_optimizer_impls),
        cmocka_unit_test(test_megatron_optimizer_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
