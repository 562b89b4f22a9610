/*
 * test_memory_phases.c — the multi-GPU peak-memory terms (bench/realruns/README.md "Peak memory
 * on multi-GPU runs") against numbers worked by hand for Llama-3.1-8B cut to 8 layers
 * (bench/realruns/configs/llama-3.1-8b.json): h 4096, V 128256, f 14336, 32 heads, 8 KV heads
 * of 128, untied. V h = 525,336,576; one layer 41,943,040 (attention) + 176,160,768 (MLP) +
 * 8192 (norms) = 218,112,000 parameters; the model 2,795,573,248.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "async_tp.h"
#include "memory.h"
#include "memory_phases.h"
#include "memory_holes.h"
#include "memory_pools.h"
#include "nccl_memory.h"
#include "pp_schedule.h"

#define VH 525336576.0
#define NEAR(x, want) (fabs((x) - (want)) <= 1e-9 * fabs(want) + 1e-6)

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(model_spec *m, system_spec *sys)
{
    char err[CM_ERRLEN];
    if (model_load(REALRUNS_CONFIGS_DIR "/llama-3.1-8b.json", data_dir(), m, err, sizeof err) !=
        CM_OK)
        fail_msg("%s", err);
    m->layers = 8;
    if (system_load("h200", data_dir(), sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* bench/realruns/mgpu_fidelity.py's fsdp-nat-8bL8-ws2: FSDP2 over 2 GPUs, native, fused AdamW,
 * seq 4096, mbs 1. Run on 2026-11-27 by realrun.py before 7caf997, whose step kept its bf16 logits
 * through the backward (--hold-logits; torchtitan's trainer deletes them). */
static void fsdp_native(layout *l, training_spec *t, int dp)
{
    *t = training_default();
    t->seq_len = 4096;
    t->global_batch = dp;
    *l = layout_default(FRAMEWORK_FSDP2);
    l->dp = dp;
    l->mbs = 1;
    l->impl = IMPL_NATIVE;
    l->optimizer_impl = OPTIMIZER_IMPL_FUSED;
    t->hold_logits = true;
}

static layout titan(int tp, int pp, int dp, int cp, int ep)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.cp = cp;
    l.ep = ep;
    l.sp = tp > 1;
    l.mbs = 1;
    l.impl = IMPL_NATIVE;
    return l;
}

/* The root unit gathered: 2 bytes x (embedding V h + final norm h + head V h) =
 * 2,101,354,496 B on one stage; tp 2 splits the two tables: 2 x (V h + h) = 1,050,681,344 B. At
 * the loss peak Hugging Face has it all (loss inside the root's forward), native none. */
static void test_root_unit(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    fsdp_native(&l, &t, 2);
    assert_true(NEAR(memory_root_gathered_bytes(&m, &l, 0), 2101354496.0));
    assert_true(memory_root_at_loss_bytes(&m, &l, 0) == 0);
    l.impl = IMPL_HF;
    assert_true(NEAR(memory_root_at_loss_bytes(&m, &l, 0), 2101354496.0));
    layout tt = titan(2, 1, 1, 1, 1);
    assert_true(NEAR(memory_root_gathered_bytes(&m, &tt, 0), 1050681344.0));
}

/* Logits: the native loop holds the bf16 logits through the backward, 2 x 4096 x V =
 * 1,050,673,152 B (Hugging Face none); a pipelining loop that keeps its outputs holds the other
 * 7 micro-batches' on the last stage of pp 2: 7 x 1,050,673,152 = 7,354,712,064 B, none on
 * stage 0 (torchtitan's trainer keeps none); loss_parallel at tp 2:
 * 18 bytes x 4096 x V / 2 = 4,728,029,184 B, against 14 x 4096 x V = 7,354,712,064 B unsplit. */
static void test_logits_terms(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    fsdp_native(&l, &t, 2);
    assert_true(NEAR(memory_logits_held_bytes(&m, &t, &l), 1050673152.0));
    assert_true(NEAR(memory_logits_bytes(&m, &t, &l), 7354712064.0));
    l.impl = IMPL_HF;
    assert_true(memory_logits_held_bytes(&m, &t, &l) == 0);
    layout pp = titan(1, 2, 1, 1, 1);
    /* torchtitan's trainer keeps none (return_outputs=False); a loop of one's own that calls
     * schedule.step() with the default keeps them all (--pp-keep-outputs) */
    assert_true(memory_pp_held_outputs_bytes(&m, &t, &pp, 1, 8) == 0);
    t.pp_keep_outputs = true;
    assert_true(NEAR(memory_pp_held_outputs_bytes(&m, &t, &pp, 1, 8), 7354712064.0));
    assert_true(memory_pp_held_outputs_bytes(&m, &t, &pp, 0, 8) == 0);
    t.pp_keep_outputs = false;
    layout tp = titan(2, 1, 1, 1, 1);
    assert_true(NEAR(memory_logits_bytes(&m, &t, &tp), 4728029184.0));
}

/* The last block's backward, FSDP2 over 4 GPUs, native, seq 4096, every layer checkpointed
 * (the held-out fsdp-nat-m7b-ckpt-ws4's moment, memory_phases.h). FSDP2's buffers then: the
 * root gathered 2,101,354,496 + (2 + 2 + 4) x 218,112,000 = 1,744,896,000 (the block gathered,
 * its bf16 gradients, the next block's fp32 reduce-scatter input) + the head's bf16 gradient
 * 2 V h = 1,050,673,152 + the held bf16 logits 2 x 4096 x V = 1,050,673,152: 5,947,596,800 B.
 * The moment: fp32 params 4 P / 4 = 2,795,573,248 + Adam 5,591,146,496 + the gradients made,
 * 2,795,573,248 - (218,112,000 + root 2 V h + h = 1,050,677,248) = 1,526,784,000, + the block's
 * activations 772,276,224 and checkpoint 2 x 4096 x 4096 = 33,554,432 + the buffers:
 * 16,666,931,200 B besides the framework's. None with pipelining. */
static void test_backward_end(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    fsdp_native(&l, &t, 4);
    l.recompute = RECOMPUTE_FULL;
    assert_true(NEAR(memory_backward_end_buffer_bytes(&m, &t, &l, 218112000.0), 5947596800.0));
    memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.backward_end_bytes - mb.framework_bytes, 16633409536.0));
    assert_true(mb.total_bytes >= mb.backward_end_bytes);
    layout pp = titan(1, 2, 2, 1, 1);
    t.global_batch = 2;
    mb = memory_peak(&m, &sys, &t, &pp);
    assert_true(mb.backward_end_bytes == 0);
}

/* Phi-3-mini-4k under Hugging Face (bench/realruns/configs/phi-3-mini-4k.json: h 3072, 32 heads
 * and 32 KV heads of 96, sliding_window 2047 on every layer), seq 4096, mbs 2 (the held-out
 * fsdp-hf-phi3-ws4, bench/results/heldout2_2026-11-27). SDPA's additive copy of the explicit
 * window mask, bf16 [2, 1, 4096, 4096]: 2 x 2 x 4096 x 4096 = 67,108,864 B a layer; at seq 2048
 * 2 x 2 x 2048 x 2048 = 16,777,216 B; at seq 2047 2 x 2 x 2047^2 = 16,760,836 B (transformers
 * builds the mask once the sequence reaches the window); none at 2046 nor for the native code.
 * The fused qkv_proj's output kept by the v view: q and k parts, 2 bytes x (32 + 32) x 96 =
 * 12,288 B a token, and the attention output's contiguous copy before o_proj, 2 x 32 x 96 =
 * 6,144 B (q sliced from the fused output leaves RoPE's q and the SDPA output [b, heads, s, d]:
 * measured, bench/results/hfsav20_2026-11-29; separate projections make no copy): 18,432 B a
 * token, x 8192 tokens = 150,994,944 B a layer more. */
static void test_hf_phi3_terms(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    if (model_load(REALRUNS_CONFIGS_DIR "/phi-3-mini-4k.json", data_dir(), &m, err, sizeof err) !=
        CM_OK)
        fail_msg("%s", err);
    if (system_load("h200", data_dir(), &sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(m.hf_fused_qkv);
    layout l;
    training_spec t;
    fsdp_native(&l, &t, 4);
    l.impl = IMPL_HF;
    l.mbs = 2;
    assert_true(NEAR(memory_hf_window_mask_bytes(&m, &t, &l), 67108864.0));
    double fused = memory_layer_activation_bytes(&m, &t, &l, 0);
    m.hf_fused_qkv = false;
    double separate = memory_layer_activation_bytes(&m, &t, &l, 0);
    assert_true(NEAR(fused - separate, 150994944.0));
    t.seq_len = 2048;
    assert_true(NEAR(memory_hf_window_mask_bytes(&m, &t, &l), 16777216.0));
    /* transformers 5.17.0 masking_utils.py _ignore_causal_mask_sdpa, line 263: the mask is
     * built once kv_length >= the window, so at seq 2047 too (2 x 2 x 2047^2 B); none at 2046 */
    t.seq_len = 2047;
    assert_true(NEAR(memory_hf_window_mask_bytes(&m, &t, &l), 16760836.0));
    t.seq_len = 2046;
    assert_true(memory_hf_window_mask_bytes(&m, &t, &l) == 0);
    t.seq_len = 4096;
    l.impl = IMPL_NATIVE;
    assert_true(memory_hf_window_mask_bytes(&m, &t, &l) == 0);
    /* Llama's config: separate q, k, v projections, no window */
    load(&m, &sys);
    assert_false(m.hf_fused_qkv);
}

/* Activations per layer, 4096 tokens. Native eager, tp 1: per token 8h (norm inputs, QKV and
 * FC1 inputs) 32768 + Q, K, V, context 2 (4096 + 1024 + 1024 + 4096) = 20480 + fp32 LSE 128 +
 * SwiGLU 8f = 114688 (silu's input and output, w3's output, the product) + repeat_kv 4 x 24 x
 * 128 = 12288 + the two norms' fp32 rstd 8 (no contiguous copy of the cuDNN context:
 * bench/results/sac20_2026-11-29, measured 178,312): 180,360 B -> 738,754,560 B.
 * torchtitan tp 2 + SP: the norm inputs and rstd (4h + 8) / 2 = 8196, the gathered QKV and FC1
 * inputs whole 4h = 16384, the rest / 2 = 147584 / 2 = 73792: 98,372 B -> 402,931,712 B.
 * torchtitan's per-op SAC, eager: per token the block input and w2's output 2 x 2h = 16384, q,
 * v, the context 2 (4096 + 1024 + 4096) = 18432, LSE 128, w1's output 2f = 28672: 63,616 B ->
 * 260,571,136 B at tp 1. At tp 2 + SP the row-parallel Linears add wo's reduce-scatter output
 * (2h, sharded) and w2's whole-sequence Partial output (2h, not sharded): 6h / 2 = 12288 +
 * 8192 + 47232 / 2 = 23616: 44,096 B -> 180,617,216 B. Compiled at tp 2 the block input only:
 * 2h / 2 = 4096 + 23616 = 27,712 B -> 113,508,352 B. */
static void test_activation_terms(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    fsdp_native(&l, &t, 2);
    assert_true(NEAR(memory_layer_activation_bytes(&m, &t, &l, 0), 738754560.0));
    layout tp = titan(2, 1, 1, 1, 1);
    assert_true(NEAR(memory_layer_activation_bytes(&m, &t, &tp, 0), 402931712.0));
    layout sac = titan(1, 1, 1, 1, 1);
    sac.recompute = tp.recompute = RECOMPUTE_SELECTIVE;
    assert_true(NEAR(memory_layer_activation_bytes(&m, &t, &sac, 0), 260571136.0));
    assert_true(NEAR(memory_layer_activation_bytes(&m, &t, &tp, 0), 180617216.0));
    tp.compile = true;
    assert_true(NEAR(memory_layer_activation_bytes(&m, &t, &tp, 0), 113508352.0));
}

/* NCCL on the h200 preset: world 880,869,376 + 452,705,212 a further group + 416,983,723 a
 * p2p peer. tp 2 x dp 2: 2 groups -> 1,786,279,800; pp 4: the pp group and 2 neighbours ->
 * 2,167,542,034; ep 4 over 4 GPUs (FSDP's group is the world): 1 group, 3 peers ->
 * 2,584,525,757; cp 2 over 2 GPUs: no group, 1 peer -> 1,297,853,099; one GPU: -1. HSDP 2 x 2
 * on 4 GPUs: the replicate and the shard group, 2 -> 1,786,279,800 (one before issue 14's
 * split: the shard group, as wide as dp, went uncounted; bench/results/mem26_2026-11-29). Two
 * further one-rank groups add 2 x 406,847,488 (framework.nccl_one_rank_group_bytes). */
static void test_nccl_terms(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout a = titan(2, 1, 2, 1, 1), b = titan(1, 4, 1, 1, 1), c = titan(1, 1, 4, 1, 4),
           d = titan(1, 1, 1, 2, 1), e = titan(1, 1, 1, 1, 1);
    assert_int_equal(nccl_memory_groups(&a), 2);
    assert_int_equal(nccl_memory_p2p_peers(&b), 2);
    assert_true(NEAR(nccl_memory_bytes(&sys, &a), 1786279800.0));
    assert_true(NEAR(nccl_memory_bytes(&sys, &b), 2167542034.0));
    assert_true(NEAR(nccl_memory_bytes(&sys, &c), 2584525757.0));
    assert_true(NEAR(nccl_memory_bytes(&sys, &d), 1297853099.0));
    assert_true(nccl_memory_bytes(&sys, &e) == -1);
    layout h = titan(1, 1, 4, 1, 1);
    h.shard_size = 2;
    assert_int_equal(nccl_memory_groups(&h), 2);
    assert_true(NEAR(nccl_memory_bytes(&sys, &h), 1786279800.0));
    /* a program's size-1 mesh dimensions (--one-rank-groups): 406,847,488 B each on h200 */
    assert_true(NEAR(nccl_memory_bytes_with(&sys, &a, 2) - nccl_memory_bytes(&sys, &a),
                     2 * 406847488.0));
    assert_true(nccl_memory_bytes_with(&sys, &e, 2) == -1);
}

/* Interleaved 1F1B, p 4, v 2, m 8: rank r holds 2 (3 - r) + 4 + 1 chunks of half a stage:
 * rank 3 2.5 micro-batches, rank 1 4.5; at m = p every forward runs first: 4. */
static void test_interleaved_in_flight(void **state)
{
    (void)state;
    layout l = titan(1, 4, 1, 1, 1);
    l.vpp = 2;
    l.pp_schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    assert_true(NEAR(pp_schedule_in_flight(&l, 8, 3), 2.5));
    assert_true(NEAR(pp_schedule_in_flight(&l, 8, 1), 4.5));
    assert_true(NEAR(pp_schedule_in_flight(&l, 4, 3), 4.0));
}

/* The V schedules put the head beside the embedding: rank r of ZBVZeroBubble holds chunks r and
 * 2 pp - 1 - r, so rank 0 holds the last chunk's final norm and output layer, V h + h =
 * 128,256 x 4,096 + 4,096 = 525,340,672 parameters more than interleaved 1F1B's rank 0, and the
 * last rank none of them (ho8-pp4-zbv-l8bL16-m8, bench/results/mgpu8_2026-11-28: rank 0 52.8 GiB
 * allocated, ranks 1-3 29-31). */
static void test_zbv_head_stage(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout in = titan(1, 4, 1, 1, 1), zb;
    in.vpp = 2;
    in.pp_schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    /* the run's equal stages (parallel_run.py), not torchtitan's default split (pp_split.c) */
    in.pp_first_layers = in.pp_last_layers = 1; /* 8 layers, 8 stages */
    zb = in;
    zb.pp_schedule = PP_SCHEDULE_ZBV;
    assert_int_equal(layout_head_stage(&in), 3);
    assert_int_equal(layout_head_stage(&zb), 0);
    double di0, ei0, dz0, ez0, di3, ei3, dz3, ez3;
    memory_stage_params(&m, &in, 0, &di0, &ei0);
    memory_stage_params(&m, &zb, 0, &dz0, &ez0);
    memory_stage_params(&m, &in, 3, &di3, &ei3);
    memory_stage_params(&m, &zb, 3, &dz3, &ez3);
    assert_true(NEAR(dz0 - di0, 525340672.0));
    assert_true(NEAR(di3 - dz3, 525340672.0));
}

/* The whole FSDP2 stage, fsdp-nat-8bL8-ws2 on h200. Loss moment: the logits' 7,354,712,064 B
 * (root resharded). Blocks' moments (memphase17, memory.c): held logits 1,050,673,152 + the
 * head's bf16 gradient 2 V h = 1,050,673,152 + the gathered root 2,101,354,496 = 4,202,700,800,
 * with, in the first block's backward, 6 x 218,112,000 (its bf16 parameters, the prefetched
 * block's, its bf16 gradients) -> 5,511,372,800; in the next block's, one layer's activations
 * (6,178,209,792 / 8 = 772,276,224) fewer and (10 + 4/2) x 218,112,000 = 2,617,344,000 (with the
 * first block's fp32 reduce-scatter input and its sharded output) -> 6,047,768,576, the larger;
 * the loss moment is larger still (measured peak 29.7 GiB = 31.89e9 B: bench/results/
 * mgpu_2026-11-27). Total: fp32 shard 4 x 1,397,786,624 = 5,591,146,496 + Adam 11,182,292,992 +
 * 8 layers' activations 6,178,209,792 + 7,354,712,064 + framework (context 648,871,936 + world
 * communicator 880,869,376 + workspaces 157,286,400 = 1,687,027,712) = 31,993,389,056 B (no
 * gradients yet: zero_grad set them to None). */
static void test_fsdp_stage_total(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    fsdp_native(&l, &t, 2);
    memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.loss_phase_bytes, 7354712064.0));
    assert_true(NEAR(mb.blocks_phase_bytes, 6081290240.0));
    assert_true(NEAR(mb.framework_bytes, 1687027712.0));
    assert_true(NEAR(mb.total_bytes, 31725215744.0));
    /* The root's reduce-scatter at the backward's end (memphase17, memory.c): weights + Adam
     * 16,773,439,488 + every block's sharded gradient (5,591,146,496 - 4 x 1,050,677,248 / 2 =
     * 3,489,792,000) + the root's fp32 input and sharded output ((4 + 4/2) x (2 V h + h =
     * 1,050,677,248) = 6,304,063,488) + the output layer's bf16 gradient 1,050,673,152 +
     * framework 1,687,027,712 = 29,304,995,840 B: below the loss moment with 8 layers. */
    assert_true(NEAR(mb.root_reduce_bytes, 29304995840.0));
}

/* pp 2, 1F1B, 8 micro-batches, units not resharded (parallel_run.py, torchtitan under PP),
 * stage 0 (embedding + 4 layers: 525,336,576 + 872,448,000 = 1,397,784,576 parameters): the
 * whole stage gathered in bf16, 2,795,569,152 B, and one block's bf16 gradient, 436,224,000 B
 * (no reduce-scatter buffers before the last micro-batch): 3,231,793,152 B; and torch
 * pipelining's gradient receive buffers, one a micro-batch (memory_phases.h
 * memory_pp_recv_buffers_bytes): 8 x 4096 x 4096 x 2 = 268,435,456 B -> 3,500,228,608 B. */
static void test_pp_accumulation_buffers(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 8;
    layout l = titan(1, 2, 1, 1, 1);
    l.reshard_after_forward = false;
    memory_breakdown mb = memory_stage(&m, &sys, &t, &l, 0);
    assert_true(NEAR(mb.comm_buffer_bytes, 3231793152.0 + 268435456.0));
    /* the last stage receives activations: 8 micro-batches less the 1 it holds in flight */
    assert_true(NEAR(memory_pp_recv_buffers_bytes(&m, &t, &l, 1, 8, 1), 7 * 33554432.0));
}

/* torchtitan's experts as FSDP2 units of their own (memory_phases.h memory_experts_own_unit):
 * Mixtral-8x7B cut to 2 layers (bench/realruns/configs/mixtral-8x7b.json: h 4096, f 14336, 8
 * experts top-2, 32 heads and 8 KV heads of 128, V 32000 untied), ep 2 on 2 GPUs, seq 4096, mbs 1,
 * fused AdamW: the held-out ho-ep2-grp-mixL2 (bench/results/epstep_2026-11-27/heldout).
 * Per GPU and layer: experts E = 4 x 3 x 4096 x 14336 = 704,643,072; the block B = attention
 * 41,943,040 + norms 8192 + router 32,768 = 41,984,000; one layer 746,627,072. The blocks'
 * buffers: (2 + 4 + 2) x one layer (an experts unit and a block unit in flight, not two layers)
 * = 5,973,016,576 + the root gathered 2 x (2 V h + h) = 524,296,192: 6,497,312,768 B (two
 * layers' pairs priced 12,470,329,344). Routed copies: 8192 of them x (permuted input 2h + SwiGLU
 * 8f + the combine's fp32 4h = 139,264 B) = 1,140,850,688 B; the layer's rest (flash attention,
 * eager torch, repeat_kv): 4096 x (8h + 4 x 8 router logits + 2 x (4096 + 1024 + 1024 + 4096) +
 * 4 x 32 + 2 x 4096 + 4 x 24 x 128 = 73,888) = 302,645,248 B. The experts unit's reduce at the
 * end of the backward: fp32 shard 4 x (2 B + V h x 2 + h) / 2 + 4 x 2 E = 6,329,376,768 + Adam
 * 12,658,753,536 + the gradients made, 6,329,376,768 - 4 x ((B + 2 V h + h) / 2 + E) =
 * 2,902,540,288, + the attention activations 302,645,248 - 33,521,664 (sac20: no contiguous
 * context copy, 8,192 B a token, and the norms' rstd, 8 B) + the buffers (root 524,296,192 + 8 x
 * 746,627,072 + head gradient 2 V h + held logits 2 x 4096 x V = 7,021,600,768): 29,181,394,944 B
 * besides the framework's (measured 29,201,189,376 allocated at the peak). */
static void test_titan_expert_units(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    model_spec m;
    system_spec sys;
    if (model_load(REALRUNS_CONFIGS_DIR "/mixtral-8x7b.json", data_dir(), &m, err, sizeof err) !=
        CM_OK)
        fail_msg("%s", err);
    m.layers = 2;
    if (system_load("h100", data_dir(), &sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    t.hold_logits = true; /* parallel_run.py's step keeps its logits through the backward */
    layout l = titan(1, 1, 2, 1, 2);
    l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    assert_true(memory_experts_own_unit(&l, 2));
    assert_true(NEAR(memory_layer_routed_activation_bytes(&m, &t, &l), 1140850688.0));
    assert_true(NEAR(memory_layer_activation_bytes(&m, &t, &l, 1), 1409974272.0));
    memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.comm_buffer_bytes, 6497312768.0));
    assert_true(NEAR(mb.backward_end_bytes - mb.framework_bytes, 29181394944.0));
    assert_true(NEAR(mb.total_bytes, mb.backward_end_bytes));
    /* a grouped MoE padding by index_copy (--moe-pad-index-copy): autograd keeps the unpadded
     * rows too, 2h = 8,192 B a copy more: 4,096 x 2 copies x (139,264 + 8,192) = 1,207,959,552 */
    training_spec tp = t;
    tp.moe_pad_index_copy = true;
    assert_true(NEAR(memory_layer_routed_activation_bytes(&m, &tp, &l), 1207959552.0));
    /* no expert units without ep, nor outside torchtitan */
    layout one = titan(1, 1, 2, 1, 1);
    assert_false(memory_experts_own_unit(&one, 2));
    assert_false(memory_experts_own_unit(&l, 0));
}

/* torch pipelining's step() merging the kept outputs (memory_phases.h
 * memory_pp_merged_outputs_bytes): Llama-3.1-8B cut to 16 layers, pp 4, 1F1B with 16
 * micro-batches of seq 4096, outputs kept (pp4-1f1b-8bL16-m16-tl, bench/results/
 * pp_timeline_2026-11-27). Last stage: 4 layers x 218,112,000 + head V h + final norm h =
 * 1,397,788,672 parameters, dp 1: fp32 params, grads, Adam m and v 16 x = 22,364,618,752 B; a
 * micro-batch's bf16 logits 2 x 4096 x 128256 = 1,050,673,152 B, the 16 chunks and their
 * concatenation 32 x = 33,621,540,864 B: 55,986,159,616 B besides the framework's (measured
 * 56.60e9 allocated on rank 3). With 8 micro-batches the moment is 22,364,618,752 +
 * 16,810,770,432 = 39,175,389,184 B and the loss's moment is the peak. */
static void test_pp_merged_outputs(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    m.layers = 16;
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 16;
    t.pp_keep_outputs = true;
    layout l = titan(1, 4, 1, 1, 1);
    l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    l.pp_first_layers = l.pp_last_layers = 4; /* the run's equal stages (parallel_run.py) */
    assert_true(NEAR(memory_pp_merged_outputs_bytes(&m, &t, &l, 3, 16), 33621540864.0));
    assert_true(memory_pp_merged_outputs_bytes(&m, &t, &l, 2, 16) == 0);
    memory_breakdown mb = memory_stage(&m, &sys, &t, &l, 3);
    assert_true(NEAR(mb.total_bytes - mb.framework_bytes, 55986159616.0));
    t.global_batch = 8;
    mb = memory_stage(&m, &sys, &t, &l, 3);
    assert_true(mb.total_bytes - mb.framework_bytes > 39175389184.0 * (1 + 1e-6));
    t.pp_keep_outputs = false; /* torchtitan's trainer: return_outputs=False */
    assert_true(memory_pp_merged_outputs_bytes(&m, &t, &l, 3, 16) == 0);
}

/* The reduce-scatter input FSDP2 kept across steps under torch before pytorch#144535
 * (memory_phases.h memory_pp_held_rs_input_bytes): Llama-3.1-8B cut to 16 layers, torchtitan
 * FSDP 2 x PP 4 (1F1B), 8 micro-batches of seq 4096. The stage's last block, unsharded, fp32:
 * 4 x 218,112,000 = 872,448,000 B more reserved on every stage (the parameters of a block:
 * attention 4096 x (4096 + 2 x 1024 + 4096), MLP 3 x 4096 x 14336, two norms 4096 each);
 * Interleaved1F1B with two local stages: two roots, 1,744,896,000 B; none with one micro-batch
 * (no accumulation: torch reduces in that backward) nor without the flag. */
static void test_pp_held_rs_input(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    m.layers = 16;
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 16; /* dp 2 x 8 micro-batches of 1 */
    layout l = titan(1, 4, 2, 1, 1);
    l.sharding = SHARDING_FSDP;
    l.reshard_after_forward = false;
    for (int vpp = 1; vpp <= 2; vpp++) {
        l.vpp = vpp;
        l.pp_schedule = vpp > 1 ? PP_SCHEDULE_INTERLEAVED_1F1B : PP_SCHEDULE_1F1B;
        for (int stage = 0; stage < 4; stage++) {
            t.pp_fsdp_rs_held = false;
            memory_breakdown a = memory_stage(&m, &sys, &t, &l, stage);
            t.pp_fsdp_rs_held = true;
            memory_breakdown b = memory_stage(&m, &sys, &t, &l, stage);
            assert_true(NEAR(b.reserved_bytes - a.reserved_bytes, vpp * 872448000.0));
            assert_true(NEAR(b.total_bytes - a.total_bytes, vpp * 872448000.0));
        }
    }
    l.vpp = 1;
    l.pp_schedule = PP_SCHEDULE_1F1B;
    assert_true(NEAR(memory_pp_held_rs_input_bytes(&t, &l, 8, 218112000.0), 872448000.0));
    assert_true(memory_pp_held_rs_input_bytes(&t, &l, 1, 218112000.0) == 0);
    t.pp_fsdp_rs_held = false;
    assert_true(memory_pp_held_rs_input_bytes(&t, &l, 8, 218112000.0) == 0);
}

/* FSDP2's side-stream pools (memory_pools.h), torchtitan's eager layout at Table 1's per-GPU
 * shape (local batch 2 x seq 8192, per-op SAC):
 *  - world size 1, as measured (bench/results/tt12_2026-11-28): nothing to gather; the
 *    reduce-scatter pool holds the fp32 gradients, 4 x 2,795,573,248 = 11,182,292,992 B, which
 *    is exactly what the run's reduce-scatter stream had allocated after its last step (its
 *    segment 11,198,791,680 B), on top of the allocated peak;
 *  - FSDP 8: the root gathered 2,101,354,496 B + one block 2 x 218,112,000 = 2,537,578,496 B of
 *    all-gather pool, and the sharded gradients 4 x 2,795,573,248 / 8 = 1,397,786,624 B;
 *  - under CUDA graphs the gradients stay allocated (zero_grad(set_to_none=False)): the
 *    all-gather pool only.
 * With expandable segments (torchtitan's; memory_holes.h) the loss's moment adds the holes the
 * loss's backward cannot use: the bf16 logits 16,384 x 2 x 128,256 = 4,202,692,608 B, the root's
 * gathered 2,101,354,496 B and a block's 436,224,000 B: 6,740,271,104 B (6.28 GiB; the trace of
 * this layout, bench/results/ttmem21_2026-11-29: 3.91 + 1.97 + 0.42 GiB free at the peak); with
 * torch's default allocator (--no-expandable-segments) none. */
static void test_side_pools(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    training_spec t = training_default();
    t.seq_len = 8192;
    double ag, rs;
    layout l = titan(1, 1, 1, 1, 1);
    l.mbs = 2;
    l.recompute = RECOMPUTE_SELECTIVE;
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    t.global_batch = 2;
    memory_fsdp2_side_pools(&m, &l, 0, 2795573248.0, 218112000.0, false, &ag, &rs);
    assert_true(ag == 0 && NEAR(rs, 11182292992.0));
    const double holes = 6740271104.0;
    assert_true(NEAR(memory_loss_holes_bytes(&m, &t, &l, 0, 218112000.0, false, 8405385216.0),
                     holes));
    memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
    assert_true(mb.loss_phase_bytes > mb.blocks_phase_bytes); /* the loss's moment is the peak */
    assert_true(NEAR(mb.reserved_bytes, mb.train_peak_bytes - mb.framework_bytes + rs + holes));
    t.no_expandable_segments = true;
    mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.reserved_bytes, mb.train_peak_bytes - mb.framework_bytes + rs));
    l.dp = 8;
    t.global_batch = 16;
    memory_fsdp2_side_pools(&m, &l, 0, 2795573248.0 / 8, 218112000.0, false, &ag, &rs);
    assert_true(NEAR(ag, 2537578496.0) && NEAR(rs, 1397786624.0));
    mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.reserved_bytes, mb.train_peak_bytes - mb.framework_bytes + ag + rs));
    t.no_expandable_segments = false;
    mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.reserved_bytes,
                     mb.train_peak_bytes - mb.framework_bytes + ag + rs + holes));
    l.cuda_graphs = CUDA_GRAPHS_ON;
    l.reshard_after_forward = true;
    mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.reserved_bytes, mb.total_bytes - mb.framework_bytes + ag));
    /* Megatron keeps its own buffers: reserved is the allocated peak */
    layout meg = layout_default(FRAMEWORK_MEGATRON);
    meg.dp = 8;
    meg.mbs = 2;
    mb = memory_peak(&m, &sys, &t, &meg);
    assert_true(NEAR(mb.reserved_bytes, mb.total_bytes - mb.framework_bytes));
}

/* ttmem22: async TP's symmetric-memory workspace occupies the device (total_bytes) but lies
 * outside torch's caching allocator (CUDASymmetricMemoryAllocator::alloc, cuMemCreate), so
 * the reserved figure does not hold it: Table 4's layout, TP 8 x FSDP 32, full recompute,
 * local batch 16 x 8192, with and without async TP */
static void test_async_tp_workspace_unreserved(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    training_spec t = training_default();
    t.seq_len = 8192;
    t.global_batch = 512;
    layout l = titan(8, 1, 32, 1, 1);
    l.mbs = 16;
    l.recompute = RECOMPUTE_FULL;
    l.compile = true;
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    memory_breakdown sync = memory_peak(&m, &sys, &t, &l);
    l.async_tp = true;
    double ws = async_tp_workspace_bytes(&m, &t, &l);
    assert_true(NEAR(ws, 2.0 * (16 * 8192 / 8) * 4096 * 2)); /* two (tokens/tp) x h bf16 chunks */
    memory_breakdown async = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(async.total_bytes - sync.total_bytes, ws));
    assert_true(NEAR(async.reserved_bytes, sync.reserved_bytes));
}

/* FSDP2's units in flight are neighbours (memory.c stage_figures.bwd_params): GLM-4.5 cut to 4
 * layers (bench/realruns/configs/glm-4.5.json: h 5120, 96 heads and 8 KV heads of 128 with q/k/v
 * bias and q/k norms, 3 dense layers of f 12288, then one MoE layer of 160 experts of 1536 and
 * a shared expert; V 151552 untied), one H200, HF eager, seq 4096, mbs 1 (held-out
 * ho20-glm45-L4-s4k-b1, bench/results/ho20_2026-11-29). A dense layer: attention 62,914,560 x 2
 * + 10,485,760 + bias 14,336 + q/k norms 256 + norms 10,240 = 136,339,712, MLP 188,743,680:
 * D = 325,083,392. The MoE layer: 136,339,712 + experts 3,774,873,600 + shared 23,592,960 +
 * router 819,200 + its 160 score-correction biases (a buffer in transformers, counted here):
 * M = 3,935,625,632 (the run's 6,462,773,248 parameters = 3 D + M - 160 + 2 V h + h).
 * The backward meets M first, beside D: the units' buffers are (2 + 4 + 2) x (M + D) + the
 * root's 2 x (2 V h + h) = 37,189,467,392 B, not 8 x 2 M (66.1e9). The blocks' moments then stay
 * under the optimizer step, the peak: 20 x 6,462,773,408 = 129,255,468,160 B besides the
 * framework's (measured 129,324,480,512 allocated). */
static void test_dense_first_neighbours(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    model_spec m;
    system_spec sys;
    if (model_load(REALRUNS_CONFIGS_DIR "/glm-4.5.json", data_dir(), &m, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    m.layers = 4;
    if (system_load("h200", data_dir(), &sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 1;
    l.mbs = 1;
    memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
    assert_true(NEAR(mb.comm_buffer_bytes, 37189467392.0));
    assert_true(NEAR(mb.total_bytes, mb.optimizer_step_bytes));
    assert_true(NEAR(mb.total_bytes - mb.framework_bytes, 129255468160.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_unit),         cmocka_unit_test(test_logits_terms),
        cmocka_unit_test(test_activation_terms),  cmocka_unit_test(test_nccl_terms),
        cmocka_unit_test(test_interleaved_in_flight), cmocka_unit_test(test_fsdp_stage_total),
        cmocka_unit_test(test_pp_accumulation_buffers), cmocka_unit_test(test_hf_phi3_terms),
        cmocka_unit_test(test_backward_end),      cmocka_unit_test(test_titan_expert_units),
        cmocka_unit_test(test_pp_merged_outputs), cmocka_unit_test(test_zbv_head_stage),
        cmocka_unit_test(test_side_pools),        cmocka_unit_test(test_dense_first_neighbours),
        cmocka_unit_test(test_async_tp_workspace_unreserved),
        cmocka_unit_test(test_pp_held_rs_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
