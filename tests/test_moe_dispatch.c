/*
 * test_moe_dispatch.c — the MoE dispatch patterns, load factor and grouped GEMM price
 * (costmodel/moe_dispatch.h, compute.h) against hand-worked numbers on a toy system.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "compute.h"
#include "layer_recipe.h"
#include "moe_dispatch.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

/* Round numbers: 8 GPUs a node, NVLink 100 GB/s, 8 NICs of 25 GB/s a node. */
static system_spec toy_system(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "toy");
    s.peak_bf16_flops_per_s = 1e15;
    s.hbm_bytes = 80e9;
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.gemm_efficiency_max = 0.5;
    s.gemm_overhead_s = 2e-6;
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
    return s;
}

/* An MoE shape: h 1000, 64 experts top-4, or 8 groups with topk_group 2. */
static model_spec moe_model(bool node_limited)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    m.hidden = 1000;
    m.experts = 64;
    m.top_k = 4;
    if (node_limited) {
        m.router_groups = 8;
        m.router_topk_groups = 2;
    }
    return m;
}

static void test_load_factor(void **state)
{
    (void)state;
    training_spec t = training_default();
    assert_true(moe_load_factor(&t) == 1.0); /* default: force-balanced */
    t.moe_imbalance = 0;
    assert_true(moe_load_factor(&t) == 1.0); /* unset reads as balanced */
    t.moe_imbalance = 1.5;
    assert_true(moe_load_factor(&t) == 1.5); /* dropless: the busiest keeps all */
    t.moe_capacity_factor = 1.2;
    assert_true(moe_load_factor(&t) == 1.2); /* dropped above the capacity */
    t.moe_capacity_factor = 2.0;
    assert_true(moe_load_factor(&t) == 1.5);
}

/* Expected distinct nodes: nodes x (1 - C(units - units/nodes, picks) / C(units, picks)). */
static void test_nodes_per_token(void **state)
{
    (void)state;
    model_spec free = moe_model(false), lim = moe_model(true);
    assert_true(moe_nodes_per_token(&free, 1) == 1.0);
    /* 8 groups on 8 nodes, 2 groups picked: exactly 2 nodes (DeepSeek-V3's M-node bound) */
    assert_true(REL(moe_nodes_per_token(&lim, 8), 2.0) < 1e-12);
    /* 2 nodes of 4 groups: P(a node gets none) = C(4,2)/C(8,2) = 6/28 -> 2 x 22/28 */
    assert_true(REL(moe_nodes_per_token(&lim, 2), 2.0 * 22.0 / 28.0) < 1e-12);
    /* no node limit, 64 experts on 2 nodes, top-4: none = (32*31*30*29)/(64*63*62*61) */
    double none = (32.0 * 31 * 30 * 29) / (64.0 * 63 * 62 * 61);
    assert_true(REL(moe_nodes_per_token(&free, 2), 2.0 * (1 - none)) < 1e-12);
}

/* Expected distinct EP ranks a token reaches: DeepEP and HybridEP send one row per token and
 * such rank (moe_dispatch.c flex_pass_s). */
static void test_ranks_per_token(void **state)
{
    (void)state;
    model_spec free = moe_model(false), lim = moe_model(true);
    assert_true(moe_ranks_per_token(&free, 1, 1) == 1.0);
    /* 64 experts on 8 ranks (8 each), top-4: none = C(56,4)/C(64,4) */
    double none = (56.0 * 55 * 54 * 53) / (64.0 * 63 * 62 * 61);
    assert_true(REL(moe_ranks_per_token(&free, 8, 1), 8.0 * (1 - none)) < 1e-12);
    /* one expert a rank: every pick its own rank */
    assert_true(REL(moe_ranks_per_token(&free, 64, 1), 4.0) < 1e-12);
    /* expert TP 2 over 16 ranks: 8 picks of 128 experts, 8 a rank */
    none = 1;
    for (int i = 0; i < 8; i++) none *= (120.0 - i) / (128.0 - i);
    assert_true(REL(moe_ranks_per_token(&free, 16, 2), 16.0 * (1 - none)) < 1e-12);
    /* node-limited, 8 groups on 8 ranks, 2 groups picked: the 4 picks on those 2 ranks, 8
     * experts each: none = C(8,4)/C(16,4) of each */
    none = (8.0 * 7 * 6 * 5) / (16.0 * 15 * 14 * 13);
    assert_true(REL(moe_ranks_per_token(&lim, 8, 1), 2.0 * (1 - none)) < 1e-12);
    /* 16 ranks (2 a group): the picks over the 4 ranks of the 2 groups, 4 experts each */
    none = (12.0 * 11 * 10 * 9) / (16.0 * 15 * 14 * 13);
    assert_true(REL(moe_ranks_per_token(&lim, 16, 1), 4.0 * (1 - none)) < 1e-12);
}

static void test_dispatchers(void **state)
{
    (void)state;
    system_spec s = toy_system();
    model_spec m = moe_model(false);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8;
    double tokens = 4096;
    moe_dispatch_cost c;

    /* no EP: nothing moves */
    moe_dispatch_price(&m, &s, &t, &l, tokens, &c);
    assert_true(c.dispatch_s == 0 && c.combine_s == 0);

    /* alltoall: the routed copies, 4096 x 4 x 1000 x 2 bytes, over the EP group */
    l.ep = 8;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &c);
    double copies = 4096.0 * 4 * 1000 * 2;
    assert_true(c.dispatch_op == COLL_ALL_TO_ALL && c.dispatch_bytes == copies);
    assert_true(c.dispatch_s == collective_time_s(&s, COLL_ALL_TO_ALL, copies,
                                                  layout_ep_group(&s, &l)));
    /* the busiest rank at 1.5x the mean receives 1.5x and the exchange ends with it */
    t.moe_imbalance = 1.5;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &c);
    assert_true(REL(c.dispatch_bytes, 1.5 * copies) < 1e-12);
    t.moe_imbalance = 1.0;

    /* allgather: every token's hidden state gathered over ETP x EP = 8, reduce-scatter back */
    l.moe_dispatcher = MOE_DISPATCH_ALLGATHER;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &c);
    assert_true(c.dispatch_op == COLL_ALL_GATHER && c.combine_op == COLL_REDUCE_SCATTER);
    assert_true(c.dispatch_bytes == 4096.0 * 1000 * 2 * 8);

    /* deepep inside one node: one row per token and receiving rank (its own included) over
     * NVLink at 153/160 of 100 GB/s, + 1 us */
    l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &c);
    double nv = 4096.0 * moe_ranks_per_token(&m, 8, 1) * 1000 * 2;
    assert_true(nv < copies);
    assert_true(REL(c.nvlink_bytes, nv) < 1e-12);
    assert_true(REL(c.dispatch_s, 1e-6 + nv / (100e9 * 153 / 160)) < 1e-12);
    assert_int_equal(c.sms, 20);
    assert_true(c.rdma_bytes == 0);

    /* deepep over 4 nodes (ep 32): RDMA once per remote destination node, 25 GB/s per GPU at
     * DeepEP's achieved share of the NIC, 0.873125 (its EP 32 / 64 logical bandwidths 58, 57,
     * 51, 50 GB/s of a 50 GB/s NIC, times the remote share 3/4 and 7/8: (0.75 x 115 + 0.875 x
     * 101) / 200, moe_dispatch.c); NVLink 7/8 of the copies; the longer phase + the network
     * latency */
    l.dp = 32;
    l.ep = 32;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &c);
    double nodes = moe_nodes_per_token(&m, 4);
    double rdma = 4096.0 * 1000 * 2 * nodes * 3 / 4;
    nv = 4096.0 * moe_ranks_per_token(&m, 32, 1) * 1000 * 2;
    assert_true(REL(c.nvlink_bytes, nv) < 1e-12);
    assert_true(REL(c.rdma_bytes, rdma) < 1e-12);
    double t_rdma = rdma / (25e9 * 0.873125), t_nv = nv / (100e9 * 153 / 160);
    assert_true(t_rdma > t_nv); /* the RDMA phase binds here */
    assert_true(REL(c.dispatch_s, 5e-6 + fmax(t_rdma, t_nv)) < 1e-12);
    /* hybridep: the same pattern on 16 SMs */
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    moe_dispatch_cost h;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &h);
    assert_true(h.dispatch_s == c.dispatch_s);
    assert_int_equal(h.sms, 16);
    /* --moe-dispatcher-sms 32 (Megatron-Bridge's perf recipes for HybridEP): the same
     * exchange, 32 SMs held; on 132 SMs compute beside it runs 132 / 100 slower */
    l.moe_dispatcher_sms = 32;
    moe_dispatch_price(&m, &s, &t, &l, tokens, &h);
    assert_true(h.dispatch_s == c.dispatch_s);
    assert_int_equal(h.sms, 32);
    system_spec s132 = s;
    s132.sm_count = 132;
    assert_true(moe_dispatch_sm_slowdown(&s132, &h) == 132.0 / 100.0);
    l.moe_dispatcher_sms = 0;
}

/* Expert TP 2 (tp 2, SP, ep 8 on 16 GPUs; Megatron token_dispatcher.py): this rank routes its
 * SP shard, 4096 / 2 tokens. alltoall: the all-to-all of 2048 x 4 x 1000 x 2 = 16,384,000
 * bytes over EP, then the all-gather of what it received over the ETP pair (gathered
 * 2 x 16,384,000 = 32,768,000 bytes) and the reduce-scatter before the combine. flex
 * (DeepEP): one exchange over ETP x EP = 16 ranks (2 nodes) with 2 x 4 copies of each token:
 * 32,768,000 bytes, 7/8 of them over NVLink. The MoE layer has no TP block of its own (no
 * shared experts): its tokens move only through the dispatcher. */
static void test_expert_tp(void **state)
{
    (void)state;
    system_spec s = toy_system();
    model_spec m = moe_model(false);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2;
    l.sp = true;
    l.dp = 8;
    l.ep = 8;
    moe_dispatch_cost c;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
    assert_true(c.dispatch_bytes == 16384000.0);
    assert_true(c.etp_bytes == 32768000.0);
    layout_group pair = layout_group_place(&s, 2, 1);
    assert_true(c.etp_gather_s == collective_time_s(&s, COLL_ALL_GATHER, 32768000.0, pair));
    assert_true(c.etp_scatter_s ==
                collective_time_s(&s, COLL_REDUCE_SCATTER, 32768000.0, pair));
    /* in the layer: both ops, their backwards swapped, and no tp.mlp */
    m.layers = 2;
    m.heads = 8;
    m.kv_heads = 8;
    m.head_dim = 125;
    m.expert_ffn = 500;
    m.vocab = 1000;
    t.seq_len = 4096;
    recipe r;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    int seen = 0;
    for (int i = 0; i < r.n_ops; i++) {
        if (!strcmp(r.op[i].name, "ep.etp_gather")) {
            assert_true(r.op[i].fwd_s == c.etp_gather_s && r.op[i].bwd_s == c.etp_scatter_s);
            seen++;
        }
        if (!strcmp(r.op[i].name, "ep.etp_scatter")) {
            assert_true(r.op[i].fwd_s == c.etp_scatter_s && r.op[i].bwd_s == c.etp_gather_s);
            seen++;
        }
        assert_true(strcmp(r.op[i].name, "tp.mlp") != 0);
    }
    assert_int_equal(seen, 2);
    /* flex: etp x top_k copies over the 16-rank ETP x EP group; over NVLink a row per token
     * and receiving rank of that group */
    l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
    assert_true(c.dispatch_bytes == 32768000.0);
    /* this rank routes its SP shard, 2048 tokens */
    assert_true(REL(c.nvlink_bytes, 2048.0 * moe_ranks_per_token(&m, 16, 2) * 1000 * 2) < 1e-12);
    assert_true(c.etp_bytes == 0);
}

/* HybridEP with measured rates (node.hybridep_algbw): the received rows over the rate at the
 * group's EP size, linear between the measured sizes, the nearest outside them; the combine its
 * own rate; DeepEP keeps the link's share. */
static void test_hybridep_algbw(void **state)
{
    (void)state;
    system_spec s = toy_system();
    s.gpus_per_node = 64;
    s.hybridep_algbw.n = 2;
    s.hybridep_algbw.ep[0] = 8;
    s.hybridep_algbw.ep[1] = 32;
    s.hybridep_algbw.dispatch_bytes_per_s[0] = 60e9;
    s.hybridep_algbw.dispatch_bytes_per_s[1] = 40e9;
    s.hybridep_algbw.combine_bytes_per_s[0] = 50e9;
    s.hybridep_algbw.combine_bytes_per_s[1] = 30e9;
    model_spec m = moe_model(false);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    int eps[] = {4, 8, 16, 32, 64};
    double disp[] = {60e9, 60e9, 60e9 - 20e9 / 3, 40e9, 40e9};
    double comb[] = {50e9, 50e9, 50e9 - 20e9 / 3, 30e9, 30e9};
    for (int i = 0; i < 5; i++) {
        l.dp = l.ep = eps[i];
        moe_dispatch_cost c;
        moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
        double nv = 4096.0 * moe_ranks_per_token(&m, eps[i], 1) * 1000 * 2;
        double lat = collective_latency_s(&s, layout_ep_group(&s, &l));
        assert_true(REL(c.dispatch_s, lat + nv / disp[i]) < 1e-12);
        assert_true(REL(c.combine_s, lat + nv / comb[i]) < 1e-12);
        l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
        moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
        assert_true(REL(c.dispatch_s, lat + nv / (100e9 * 153 / 160)) < 1e-12);
        l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    }
}

/* HybridEP across nodes with measured rates (network.hybridep_rdma_algbw): every token's copy
 * to each node it reaches, its own node's included, over the rate at the EP size. EP 16 on
 * nodes of 8: 64 experts top-4, 32 a node; P(a node gets none) = C(32,4)/C(64,4) = 35960/635376
 * = 0.0565964, so 2 x 0.9434036 = 1.8868072 nodes a token; 4096 x 1.8868072 x 1000 x 2 =
 * 15.456724 MB over 72 GB/s = 214.677 us (dispatch), over 63 GB/s = 245.345 us (combine).
 * Inside one node (EP 8) the table is not used; DeepEP never uses it. */
static void test_hybridep_rdma_algbw(void **state)
{
    (void)state;
    system_spec s = toy_system();
    s.hybridep_rdma_algbw.n = 1;
    s.hybridep_rdma_algbw.ep[0] = 16;
    s.hybridep_rdma_algbw.dispatch_bytes_per_s[0] = 72e9;
    s.hybridep_rdma_algbw.combine_bytes_per_s[0] = 63e9;
    model_spec m = moe_model(false);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    l.dp = l.ep = 16;
    assert_true(REL(moe_nodes_per_token(&m, 2), 2 * (1 - 35960.0 / 635376)) < 1e-12);
    moe_dispatch_cost c, d;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
    double lat = collective_latency_s(&s, layout_ep_group(&s, &l));
    assert_true(fabs(c.dispatch_s - lat - 214.677e-6) < 1e-9);
    assert_true(fabs(c.combine_s - lat - 245.345e-6) < 1e-9);
    /* the bytes that leave the node are unchanged: half of the logical copies */
    assert_true(REL(c.rdma_bytes, 4096 * 1.8868072 * 1000 * 2 / 2) < 1e-6);
    /* without the table: the two-phase bound, here the RDMA phase: 7.728362 MB over 25 GB/s x
     * DeepEP's 0.873125 = 354.05 us (the NVLink phase: 4096 x 3.7204 rows x 2000 B over 95.6
     * GB/s = 318.7 us) */
    s.hybridep_rdma_algbw.n = 0;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &d);
    assert_true(fabs(d.dispatch_s - lat - 354.05e-6) < 0.01e-6 && d.rdma_bytes == c.rdma_bytes);
    /* DeepEP ignores it */
    s.hybridep_rdma_algbw.n = 1;
    l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
    assert_true(c.dispatch_s == d.dispatch_s);
    /* inside one node: the NVLink path */
    l.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    l.dp = l.ep = 8;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &c);
    s.hybridep_rdma_algbw.n = 0;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &d);
    assert_true(c.dispatch_s == d.dispatch_s && c.combine_s == d.combine_s);
}

/* One grouped kernel: each group's roofline, one fixed cost (2 us here). */
static void test_grouped_gemm(void **state)
{
    (void)state;
    system_spec s = toy_system();
    /* 16 x 2048 x 1536: math 2*16*2048*1536 / 5e14 = 0.2013 us; bytes 2*(16*1536 + 1536*2048
     * + 16*2048) = 6.406 MB / 2e12 = 3.203 us: memory-bound */
    double one = 2.0 * (16.0 * 1536 + 1536.0 * 2048 + 16.0 * 2048) / 2e12;
    assert_true(REL(compute_gemm_s(&s, 16, 2048, 1536), one + 2e-6) < 1e-12);
    assert_true(REL(compute_grouped_gemm_s(&s, 8, 16, 2048, 1536), 8 * one + 2e-6) < 1e-12);
    assert_true(compute_grouped_gemm_s(&s, 0, 16, 2048, 1536) == 0);
}

/* A recipe of one GEMM (forward 10 s, backward 20 s) and one EP exchange of x s each way. */
static recipe one_gemm_one_ep(double x, recipe_overlap ov)
{
    recipe r;
    memset(&r, 0, sizeof r);
    r.n_ops = 2;
    r.op[0] = (recipe_op){.name = "gemm", .kind = RECIPE_GEMM, .phase = RECIPE_FWD,
                          .fwd_s = 10, .bwd_s = 20, .fwd_bwd_s = 30};
    r.op[1] = (recipe_op){.name = "ep", .kind = RECIPE_EP, .phase = RECIPE_FWD,
                          .overlap = ov, .fwd_s = x, .bwd_s = x};
    return r;
}

/* The compute beside an overlapped exchange: SMs / (SMs - held) for DeepEP (20 of the H100's
 * 132: 132 / 112), its own pace kept; NCCL's all-to-all as measured (overlap.h: x1.213 and
 * x1.522, bench/results/contention_2026-11-27). */
static void test_sm_slowdown(void **state)
{
    (void)state;
    system_spec s = toy_system();
    s.sm_count = 132;
    moe_dispatch_cost c;
    memset(&c, 0, sizeof c);
    c.sms = 20;
    assert_true(moe_dispatch_sm_slowdown(&s, &c) == 132.0 / 112.0);
    assert_true(moe_dispatch_comm_slowdown(&c) == 1.0);
    c.sms = 0;
    assert_true(moe_dispatch_sm_slowdown(&s, &c) == 1.213);
    assert_true(moe_dispatch_comm_slowdown(&c) == 1.522);
}

/* A layer of an attention GEMM (forward 10 s, backward 20 s), an expert GEMM (6, 12), a
 * dispatch of d s and a combine of d s each way, paired across micro-batches under Megatron's
 * EP A2A overlap with the compute slowed 1.25x beside an exchange. */
static recipe paired_layer(double d)
{
    recipe r;
    memset(&r, 0, sizeof r);
    r.n_ops = 4;
    r.ep_overlap_slowdown = 1.25;
    r.op[0] = (recipe_op){.name = "attn", .kind = RECIPE_GEMM, .phase = RECIPE_FWD,
                          .fwd_s = 10, .bwd_s = 20, .fwd_bwd_s = 30,
                          .block = RECIPE_BLOCK_ATTENTION};
    r.op[1] = (recipe_op){.name = "dispatch", .kind = RECIPE_EP, .phase = RECIPE_FWD,
                          .overlap = RECIPE_OVERLAP_MICROBATCH, .fwd_s = d, .bwd_s = d,
                          .block = RECIPE_BLOCK_MLP, .ep_part = RECIPE_EP_DISPATCH};
    r.op[2] = (recipe_op){.name = "experts", .kind = RECIPE_GEMM, .phase = RECIPE_FWD,
                          .fwd_s = 6, .bwd_s = 12, .fwd_bwd_s = 18, .block = RECIPE_BLOCK_MLP};
    r.op[3] = (recipe_op){.name = "combine", .kind = RECIPE_EP, .phase = RECIPE_FWD,
                          .overlap = RECIPE_OVERLAP_MICROBATCH, .fwd_s = d, .bwd_s = d,
                          .block = RECIPE_BLOCK_MLP, .ep_part = RECIPE_EP_COMBINE};
    return r;
}

/* Overlap: without it the exchange is all exposed. With Megatron's EP A2A overlap the three
 * phases of the merged schedule (recipe_price.c) are: combine's backward beside the attention
 * forward (10), both dispatches beside the experts' backward and forward (12 + 6), the
 * combine's forward beside the attention backward (20); a phase lasts max(exchange, compute x
 * 1.25) when the exchange outlasts the slowed compute, else compute + exchange x (1 - 1/1.25).
 * The shared experts hide it behind their own time in the same pass. */
static void test_ep_overlap_price(void **state)
{
    (void)state;
    recipe_time x;
    recipe r = one_gemm_one_ep(4, RECIPE_OVERLAP_NONE);
    recipe_price(&r, &x);
    assert_true(x.ep_s == 8 && x.fwd_comm_s == 4 && x.bwd_comm_s == 4);
    /* d = 4: phases 10 + 0.8, 18 + 1.6, 20 + 0.8: 0.8 + 0.8 exposed each way */
    r = paired_layer(4);
    recipe_price(&r, &x);
    assert_true(fabs(x.fwd_comm_s - 1.6) < 1e-12 && fabs(x.bwd_comm_s - 1.6) < 1e-12);
    assert_true(fabs(x.ep_s - 3.2) < 1e-12);
    assert_true(x.fwd_s == 16 && x.bwd_s == 32); /* compute unchanged */
    /* d = 25: phases 25 (>= 12.5), 50 (>= 22.5), 25 (>= 25): the backward gets 25 - 10 and
     * half of 50 - 18, the forward 25 - 20 and the other half */
    r = paired_layer(25);
    recipe_price(&r, &x);
    assert_true(fabs(x.fwd_comm_s - 21) < 1e-12 && fabs(x.bwd_comm_s - 31) < 1e-12);
    assert_true(fabs(x.ep_s - 52) < 1e-12);
    r = one_gemm_one_ep(4, RECIPE_OVERLAP_SHARED);
    r.shared_fwd_s = 3;
    r.shared_bwd_s = 6;
    recipe_price(&r, &x);
    assert_true(x.fwd_comm_s == 1 && x.bwd_comm_s == 0 && x.ep_s == 1);
    assert_true(x.fwd_s == 10 && x.bwd_s == 20); /* compute unchanged */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_factor),
        cmocka_unit_test(test_nodes_per_token),
        cmocka_unit_test(test_ranks_per_token),
        cmocka_unit_test(test_hybridep_algbw),
        cmocka_unit_test(test_hybridep_rdma_algbw),
        cmocka_unit_test(test_dispatchers),
        cmocka_unit_test(test_grouped_gemm),
        cmocka_unit_test(test_sm_slowdown),
        cmocka_unit_test(test_ep_overlap_price),
        cmocka_unit_test(test_expert_tp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
