/*
 * test_pools.c — the memory arena of a measured plan step (backend/bk_pools.c): its persistent
 * part, the estimate's phases it is sized by and where each region lies, without a GPU, on
 * hand-made plans whose every size can be checked by hand (the arithmetic is in the comments;
 * ALIGN rounds up to 256 bytes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bk_pools.h"

static work_plan W;

static void add(work_list *l, work_item it) { l->item[l->n++] = it; }

static work_item gemm(work_gemm_form form, double m, double n, double k, int batch,
                      bool weight_operand)
{
    work_item it = {.kind = WORK_GEMM, .component = WC_GEMM, .form = form, .m = m, .n = n,
                    .k = k, .batch = batch, .weight_operand = weight_operand};
    return it;
}

static work_item coll(work_component c, collective_op op, double bytes)
{
    work_item it = {.kind = WORK_COLL, .component = c, .op = op, .bytes = bytes};
    return it;
}

/* One data-parallel stage of 4 ranks, gradients in bf16, no FSDP (Megatron's DDP: no phase
 * split, the gradients held through the step): the persistent part grows to Adam's param, m and
 * v, the activation regions to the largest operands, which outgrow the estimate's phase so the
 * gradients overlap their end. */
static void test_ddp(void **state)
{
    (void)state;
    memset(&W, 0, sizeof W);
    W.est.memory.weights_bytes = 1000;     /* ALIGN: 1024 */
    W.est.memory.gradients_bytes = 2000;   /* 2048 */
    W.est.memory.optimizer_bytes = 3000;   /* 3072 */
    W.est.memory.activations_bytes = 100;
    W.est.memory.framework_bytes = 500;
    /* the estimate's peak: 1000 + 2000 + 3000 + 100 + 500, its training peak too */
    W.est.memory.total_bytes = 6600;
    W.est.memory.train_peak_bytes = 6600;
    W.layer_params = 100;                  /* 25 per rank of 4 */
    W.stage_optimizer_params[0] = 500;     /* Adam: an fp32 array 4 * 500 = 2000, ALIGN 2048 */
    /* x: A 2*64*16 = 2048; y: C 2*64*32 = 4096; the weight B is in the state pool */
    add(&W.layer_fwd, gemm(GEMM_FWD, 64, 32, 16, 1, true));
    /* an all-reduce of 3000 bytes: sends from x, receives into y */
    add(&W.layer_fwd, coll(WC_TP, COLL_ALL_REDUCE, 3000));
    /* a row reduction of 8 rows of 4096: a and b 2 * 32768 = 65536 bytes each, out 8 fp32 */
    work_item ew = {.kind = WORK_STREAM, .component = WC_ELEMENTWISE};
    ew.access.pattern = EW_REDUCE_ROW;
    ew.access.esize[0] = 4;
    ew.access.esize[1] = 2;
    ew.access.esize[2] = 2;
    ew.access.n[0] = 1;
    ew.access.n[1] = 8;
    ew.access.n[2] = 4096;
    add(&W.layer_bwd, ew);

    bk_pool_shape sh = {.stages = 1, .dp_group = 4, .edp_group = 1, .pp_slots = 1,
                        .ew_scratch_bytes = 512};
    bk_pools p;
    bk_pools_size(&W, &sh, &p);
    assert_int_equal(p.red_esz, 2);
    assert_int_equal(p.unit_cnt[0], 25);
    assert_int_equal(p.unit_cnt[1], 25);
    assert_int_equal(p.ecnt, 0);
    /* x: ALIGN(65536 + 256) = 65792 */
    assert_int_equal(p.x_off, 0);
    assert_int_equal(p.x_sz, 65792);
    /* y: output ALIGN(4096 + 256) = 4352, then the scratch: ALIGN(4352 + 512) = 4864 */
    assert_int_equal(p.y_off, 65792);
    assert_int_equal(p.y_ws, 4352);
    assert_int_equal(p.y_sz, 4864);
    /* z: ALIGN(65536 + 256) = 65792 */
    assert_int_equal(p.z_off, 65792 + 4864);
    assert_int_equal(p.z_sz, 65792);
    assert_int_equal(p.cp_off, 136448);
    assert_int_equal(p.cp_sz, 0);
    assert_int_equal(p.act_bytes, 136448);
    /* the estimate's phases beyond weights + optimizer (4000) less its framework (500): the
     * training peak 6600 - 500 - 4000 = 2100, no end-of-backward phase, the optimizer step
     * the gradients 2000 (no temporaries); the largest 2100, ALIGN 2304 */
    assert_true(p.phase_train_bytes == 2100);
    assert_true(p.phase_bwd_end_bytes == 0);
    assert_true(p.phase_opt_bytes == 2000);
    assert_true(p.phase_plan_bytes == 2100);
    /* persistent: weights 1024 >= one gathered unit ALIGN(25*4*2) = 256; 1024 + 3072 = 4096 <
     * Adam's three arrays 3 * 2048 = 6144, so the optimizer part grows to 6144 - 1024 = 5120 */
    assert_int_equal(p.w_bytes, 1024);
    assert_int_equal(p.o_off, 1024);
    assert_int_equal(p.o_bytes, 5120);
    assert_int_equal(p.persist_bytes, 6144);
    /* gradients 2048 >= ALIGN(100*2) = 256 and Adam's 2048 */
    assert_int_equal(p.g_bytes, 2048);
    assert_int_equal(p.comm_bytes, 0);
    assert_int_equal(p.pp_bytes, 0);
    assert_int_equal(p.p2p_sz, 0);
    /* the phase region: the forward/backward regions (136448) beat the estimate's 2304 and
     * the gradients alone; the gradients take its last 2048 bytes, over the end of z */
    assert_int_equal(p.touched_bytes, 136448);
    assert_int_equal(p.phase_bytes, 136448);
    assert_int_equal(p.pp_off, 6144);
    assert_int_equal(p.act_off, 6144);
    assert_int_equal(p.comm_off, 6144 + 136448);
    assert_int_equal(p.g_off, 6144 + 136448 - 2048);
    /* the estimate's 1024 + 3072 + 2304; the arena 6144 + 136448 */
    assert_true(p.plan_bytes == 6400);
    assert_true(p.total_bytes == 142592);
    assert_true(p.extra_bytes == 142592 - 6400);
}

/* FSDP2 over 2 ranks, 2 pipeline stages, gradients reduced in fp32: the training peak sets
 * the phase region; in it the pipeline's buffers, the activation regions, the communication
 * buffers one after the other (the root unit's copy-out in y), the gradients at the end apart
 * from them. */
static void test_fsdp2_pipeline(void **state)
{
    (void)state;
    memset(&W, 0, sizeof W);
    W.fsdp = true;
    W.dp_active = true;
    W.reduce_fp32 = true;
    W.est.memory.weights_bytes = 4096;
    W.est.memory.gradients_bytes = 4096;
    W.est.memory.optimizer_bytes = 8192;
    W.est.memory.activations_bytes = 65536;
    W.est.memory.comm_buffer_bytes = 1000;
    W.est.memory.framework_bytes = 1000;
    W.est.memory.optimizer_temp_bytes = 4096;
    /* the training peak without the gradients (zero_grad set them to None): 4096 + 8192 +
     * 65536 + 1000 + 1000; the optimizer step 4096 + 4096 + 8192 + 4096 + 1000; the end of the
     * backward 30000 (made up: only its difference matters) */
    W.est.memory.train_peak_bytes = 79824;
    W.est.memory.optimizer_step_bytes = 21480;
    W.est.memory.backward_end_bytes = 30000;
    W.est.memory.total_bytes = 79824;
    W.layer_params = 1000;                    /* 500 per rank */
    W.stage_root_params[0] = 3000;            /* 1500 per rank */
    W.stage_root_params[1] = 5000;            /* 2500 per rank */
    W.stage_optimizer_params[0] = 1000;
    W.stage_optimizer_params[1] = 2000;       /* Adam: an fp32 array 4 * 2000 = 8000, ALIGN 8192 */
    W.p2p_bytes = 1001;                       /* whole bf16 elements: 1000 */
    /* a weight gradient: A 2*10*30*2 = 1200 in x, B 2*20*30*2 = 2400 in z, C in the grads */
    add(&W.layer_bwd, gemm(GEMM_WGRAD, 10, 20, 30, 2, false));

    bk_pool_shape sh = {.stages = 2, .dp_group = 2, .edp_group = 1, .pp_slots = 1,
                        .fsdp2_copies = true, .ew_scratch_bytes = 1000};
    bk_pools p;
    bk_pools_size(&W, &sh, &p);
    assert_int_equal(p.red_esz, 4);
    assert_int_equal(p.unit_cnt[0], 500);
    assert_int_equal(bk_pools_root_count(&W, 2, 0), 1500);
    assert_int_equal(bk_pools_root_count(&W, 2, 1), 2500);
    assert_int_equal(bk_pools_root_count(&W, 1, 1), 5000);
    /* x: ALIGN(1200 + 256) = 1536 */
    assert_int_equal(p.x_sz, 1536);
    /* y: the root's copy-out, 2500 * 2 ranks * 2 bytes = 10000: ALIGN(10256) = 10496, then
     * the scratch: ALIGN(10496 + 1000) = 11520 */
    assert_int_equal(p.y_off, 1536);
    assert_int_equal(p.y_ws, 10496);
    assert_int_equal(p.y_sz, 11520);
    /* z: ALIGN(2400 + 256) = 2816 */
    assert_int_equal(p.z_off, 1536 + 11520);
    assert_int_equal(p.z_sz, 2816);
    assert_int_equal(p.act_bytes, 1536 + 11520 + 2816);
    /* persistent: 4096 + 8192 = 12288 < Adam's 3 * 8192, the optimizer part grown to 20480;
     * gradients 4096 = ALIGN(500 * 2 * 4) < Adam's 8192 */
    assert_int_equal(p.w_bytes, 4096);
    assert_int_equal(p.o_bytes, 20480);
    assert_int_equal(p.persist_bytes, 24576);
    assert_int_equal(p.g_bytes, 8192);
    /* communication: root ALIGN(2500*2*2) = 10240; gathered units ALIGN(500*2*2) = 2048;
     * unsharded gradients ALIGN(2*1000 + 256) = 2304; reductions ALIGN(500*2*4) = 4096;
     * copy-in ALIGN(2500 * 2) = 5120 */
    assert_int_equal(p.root_off, 0);
    assert_int_equal(p.root_sz, 10240);
    assert_int_equal(p.gbuf_sz, 2048);
    assert_int_equal(p.gbuf_off[0], 10240);
    assert_int_equal(p.gbuf_off[1], 12288);
    assert_int_equal(p.ggrad_sz, 2304);
    assert_int_equal(p.ggrad_off[0], 14336);
    assert_int_equal(p.ggrad_off[1], 16640);
    assert_int_equal(p.rbuf_sz, 4096);
    assert_int_equal(p.rbuf_off[0], 18944);
    assert_int_equal(p.rbuf_off[1], 23040);
    assert_int_equal(p.cin_off, 27136);
    assert_int_equal(p.cin_sz, 5120);
    assert_int_equal(p.comm_bytes, 32256);
    /* pipeline: a send buffer and one receive slot per direction of ALIGN(1000) = 1024 */
    assert_int_equal(p.p2p_sz, 1000);
    assert_int_equal(p.p2p_slot, 1024);
    assert_int_equal(p.pp_bytes, 4 * 1024);
    /* phases beyond 4096 + 8192 less the framework's 1000: training peak 79824 - 13288 =
     * 66536, end of backward 30000 - 13288 = 16712, optimizer step 21480 - 13288 = 8192 (the
     * gradients and foreach's temporaries); the largest 66536, ALIGN 66560 */
    assert_true(p.phase_train_bytes == 66536);
    assert_true(p.phase_bwd_end_bytes == 16712);
    assert_true(p.phase_opt_bytes == 8192);
    assert_true(p.phase_plan_bytes == 66536);
    /* the forward/backward regions 4096 + 15872 + 32256 = 52224 and the gradients 8192 fit
     * apart in the estimate's 66560 */
    assert_int_equal(p.touched_bytes, 52224);
    assert_int_equal(p.phase_bytes, 66560);
    assert_int_equal(p.pp_off, 24576);
    assert_int_equal(p.act_off, 24576 + 4096);
    assert_int_equal(p.comm_off, 24576 + 4096 + 15872);
    assert_int_equal(p.g_off, 24576 + 66560 - 8192);
    assert_true(p.comm_off + p.comm_bytes <= p.g_off);
    /* the estimate's 4096 + 8192 + 66560; the arena 24576 + 66560: Adam's arrays beyond */
    assert_true(p.plan_bytes == 78848);
    assert_true(p.total_bytes == 91136);
    assert_true(p.extra_bytes == 91136 - 78848);
    /* the root's fp32 gradients in unit-buffer pieces of 500 * 2 * 4 = 4000 bytes: stage 0
     * 1500 * 2 * 4 = 12000 (3), stage 1 20000 (5) */
    assert_int_equal(bk_pools_root_pieces(&W, &p, 2, 0), 3);
    assert_int_equal(bk_pools_root_pieces(&W, &p, 2, 1), 5);
}

/* An MoE layer under the distributed optimizer (not FSDP): expert weights over an expert-dp
 * group of 3; Megatron's ring attention with its own send and receive buffers. */
static void test_moe_ring(void **state)
{
    (void)state;
    memset(&W, 0, sizeof W);
    W.moe = true;
    W.est.memory.weights_bytes = 100;   /* ALIGN: 256 */
    W.est.memory.gradients_bytes = 100; /* 256 */
    W.est.memory.total_bytes = 200;     /* no optimizer states, framework or activations */
    W.est.memory.train_peak_bytes = 200;
    W.layer_params = 100;               /* dense unit: 50 per rank of 2 */
    W.moe_dense_params = 60;            /* MoE unit: 30 per rank */
    W.moe_expert_params = 90;           /* experts: 30 per expert-dp rank of 3 */
    /* the ring's exchange: 1000 bytes, from x into y when run in the compute stream */
    work_item ring = coll(WC_CP, COLL_SEND_RECV, 1000);
    add(&W.layer_fwd, ring);
    assert_true(bk_ring_exchange(&ring));
    work_item ag = coll(WC_CP, COLL_ALL_GATHER, 1000);
    assert_false(bk_ring_exchange(&ag));

    bk_pool_shape sh = {.stages = 1, .dp_group = 2, .edp_group = 3, .pp_slots = 1,
                        .cp_overlap = true};
    bk_pools p;
    bk_pools_size(&W, &sh, &p);
    assert_int_equal(p.unit_cnt[0], 50);
    assert_int_equal(p.unit_cnt[1], 30);
    assert_int_equal(p.ecnt, 30);
    /* weights: a gathered unit and its experts, ALIGN(50*2*2 + 30*3*2 = 380) = 512; gradients
     * ALIGN((50*2 + 30*3) * 2 = 380) = 512 */
    assert_int_equal(p.w_bytes, 512);
    assert_int_equal(p.g_bytes, 512);
    assert_int_equal(p.o_bytes, 0);
    assert_int_equal(p.persist_bytes, 512);
    /* x, y: ALIGN(1256) = 1280; z: 256; the ring: 2 * 1280 */
    assert_int_equal(p.x_sz, 1280);
    assert_int_equal(p.y_sz, 1280);
    assert_int_equal(p.z_off, 2560);
    assert_int_equal(p.z_sz, 256);
    assert_int_equal(p.cp_off, 2816);
    assert_int_equal(p.cp_sz, 2560);
    assert_int_equal(p.act_bytes, 5376);
    assert_int_equal(p.comm_bytes, 0);
    /* phases beyond the weights (100): training peak and optimizer step the gradients, 100 */
    assert_true(p.phase_train_bytes == 100);
    assert_true(p.phase_opt_bytes == 100);
    /* the phase region: the activation regions 5376, the gradients over their last 512 */
    assert_int_equal(p.phase_bytes, 5376);
    assert_int_equal(p.g_off, 512 + 5376 - 512);
    /* the estimate's 256 + 0 + ALIGN(100); the arena 512 + 5376 */
    assert_true(p.plan_bytes == 512);
    assert_true(p.total_bytes == 5888);
    /* without the overlap the exchange runs in the compute stream: no buffers of its own */
    sh.cp_overlap = false;
    bk_pools_size(&W, &sh, &p);
    assert_int_equal(p.cp_sz, 0);
    assert_int_equal(p.act_bytes, 2816);
    assert_true(p.total_bytes == 512 + 2816);
}

/* FSDP2 on one GPU (the real runs of bench/results/measmem7_2026-11-28): the optimizer step
 * with foreach's temporaries is the largest phase; the activations the estimate holds at its
 * training peak share the phase region with the gradients, which never meet the regions the
 * forward and backward touch. */
static void test_optimizer_phase(void **state)
{
    (void)state;
    memset(&W, 0, sizeof W);
    W.fsdp = true;
    W.dp_active = true;
    W.reduce_fp32 = true;
    W.est.memory.weights_bytes = 4000;        /* fp32 shard, ALIGN 4096 */
    W.est.memory.gradients_bytes = 4000;      /* 4096 */
    W.est.memory.optimizer_bytes = 8000;      /* 8192 */
    W.est.memory.activations_bytes = 3000;
    W.est.memory.framework_bytes = 1000;
    W.est.memory.optimizer_temp_bytes = 6000;
    /* training peak 4000 + 8000 + 3000 + 1000; optimizer step 4000 + 4000 + 8000 + 6000 +
     * 1000; the estimate's peak the larger */
    W.est.memory.train_peak_bytes = 16000;
    W.est.memory.optimizer_step_bytes = 23000;
    W.est.memory.total_bytes = 23000;
    W.layer_params = 100;
    W.stage_optimizer_params[0] = 1000;       /* Adam: 4000 bytes an array, ALIGN 4096 */
    /* x: A 2*16*16 = 512, ALIGN(768); y: C 512, ALIGN(768); z: the weight is gathered, 256 */
    add(&W.layer_fwd, gemm(GEMM_FWD, 16, 16, 16, 1, true));

    bk_pool_shape sh = {.stages = 1, .dp_group = 1, .edp_group = 1, .pp_slots = 1,
                        .fsdp2_copies = true};
    bk_pools p;
    bk_pools_size(&W, &sh, &p);
    /* phases beyond 4000 + 8000, less 1000: training 16000 - 13000 = 3000, optimizer step
     * 23000 - 13000 = 10000 (gradients 4000 + temporaries 6000), ALIGN 10240 */
    assert_true(p.phase_train_bytes == 3000);
    assert_true(p.phase_bwd_end_bytes == 0);
    assert_true(p.phase_opt_bytes == 10000);
    assert_true(p.phase_plan_bytes == 10000);
    /* persistent 4096 + 8192 = 12288 = Adam's 3 * 4096: no growth */
    assert_int_equal(p.persist_bytes, 12288);
    assert_int_equal(p.o_bytes, 8192);
    /* gradients 4096 >= ALIGN(100 * 4) = 512 and Adam's 4096 */
    assert_int_equal(p.g_bytes, 4096);
    /* activation regions 768 + 768 + 256 = 1792; communication buffers: no root, gathered
     * units ALIGN(100*2) = 256 twice, unsharded gradients ALIGN(2*100 + 256) = 512 twice,
     * reductions ALIGN(100*4) = 512 twice, copy-in ALIGN(100*2) = 256: 2816 */
    assert_int_equal(p.act_bytes, 1792);
    assert_int_equal(p.comm_bytes, 2816);
    assert_int_equal(p.touched_bytes, 4608);
    /* the region is the optimizer phase's 10240; gradients at 12288 + 10240 - 4096 = 18432,
     * after the communication buffers' end 12288 + 1792 + 2816 = 16896 */
    assert_int_equal(p.phase_bytes, 10240);
    assert_int_equal(p.act_off, 12288);
    assert_int_equal(p.comm_off, 14080);
    assert_int_equal(p.g_off, 18432);
    /* nothing beyond the estimate: 4096 + 8192 + 10240 */
    assert_true(p.plan_bytes == 22528);
    assert_true(p.total_bytes == 22528);
    assert_true(p.extra_bytes == 0);
    /* fused AdamW: no temporaries; the optimizer phase 4000 falls below the training peak's
     * 3000 + the regions' needs: the region holds the touched 4608 and the gradients 4096
     * together only where the estimate leaves room, so it is the touched 4608 (ALIGN 4608)
     * with the gradients over its last 4096 */
    W.est.memory.optimizer_temp_bytes = 0;
    W.est.memory.optimizer_step_bytes = 17000;
    W.est.memory.total_bytes = 17000;
    bk_pools_size(&W, &sh, &p);
    assert_true(p.phase_opt_bytes == 4000);
    assert_true(p.phase_plan_bytes == 4000);
    assert_int_equal(p.phase_bytes, 4608);
    assert_int_equal(p.g_off, 12288 + 4608 - 4096);
    assert_true(p.total_bytes == 12288 + 4608);
}

/* A contiguous copy item of n elements (bytes per element: out eo, in ea) over a unit's
 * parameters (work_item.param_operands: FSDP2's one-GPU copies). */
static work_item unit_copy(double n, int eo, int ea)
{
    work_item it = {.kind = WORK_STREAM, .component = WC_FRAMEWORK, .param_operands = true,
                    .bytes = (eo + ea) * n};
    it.access.pattern = EW_VECTORIZED;
    it.access.esize[0] = eo;
    it.access.esize[1] = ea;
    it.access.n[0] = it.access.n[1] = 1;
    it.access.n[2] = (long)n;
    it.access.stride[0][2] = it.access.stride[1][2] = 1;
    return it;
}

/* issue 14 (bkmeas24): FSDP2 on one GPU, its copies as items whose operands are a unit's
 * parameters: they read the weights and write the gradients, so they size those two regions and
 * not the activation regions, and the communication buffers have no copy-in buffer. The plan of
 * test_optimizer_phase with a layer's one-rank reduce-scatter copy (1500 fp32 elements: 6000
 * bytes each side) and the root's unshard cast (3500 elements: reads 14000 fp32 bytes, writes
 * 7000 bf16). */
static void test_one_gpu_copies(void **state)
{
    (void)state;
    memset(&W, 0, sizeof W);
    W.fsdp = true;
    W.dp_active = true;
    W.fsdp2_copy_items = true;
    W.reduce_fp32 = true;
    W.est.memory.weights_bytes = 4000;
    W.est.memory.gradients_bytes = 4000;
    W.est.memory.optimizer_bytes = 8000;
    W.est.memory.activations_bytes = 3000;
    W.est.memory.framework_bytes = 1000;
    W.est.memory.optimizer_temp_bytes = 6000;
    W.est.memory.train_peak_bytes = 16000;
    W.est.memory.optimizer_step_bytes = 23000;
    W.est.memory.total_bytes = 23000;
    W.layer_params = 100;
    W.stage_optimizer_params[0] = 1000;
    add(&W.layer_fwd, gemm(GEMM_FWD, 16, 16, 16, 1, true));
    add(&W.layer_bwd, unit_copy(1500, 4, 4));
    add(&W.head_fwd, unit_copy(3500, 2, 4));
    bk_pool_shape sh = {.stages = 1, .dp_group = 1, .edp_group = 1, .pp_slots = 1};
    bk_pools p;
    bk_pools_size(&W, &sh, &p);
    /* activation regions as without the copies: 768 + 768 + 256 */
    assert_int_equal(p.act_bytes, 1792);
    /* communication buffers without the copy-in's: 2816 - 256 */
    assert_int_equal(p.comm_bytes, 2560);
    /* the gradients hold the largest output, ALIGN(7000) = 7168 > 4096 */
    assert_int_equal(p.g_bytes, 7168);
    /* the persistent part the largest input, ALIGN(14000) = 14080 > 12288: the optimizer
     * states' part grows, 14080 - 4096 */
    assert_int_equal(p.persist_bytes, 14080);
    assert_int_equal(p.o_bytes, 9984);
    /* the phase region is still the optimizer phase's 10240; the gradients at its end */
    assert_int_equal(p.phase_bytes, 10240);
    assert_int_equal(p.g_off, 14080 + 10240 - 7168);
    assert_true(p.extra_bytes == 14080 - 12288);
    bk_pools_whole_shape(&W, &sh);
    assert_false(sh.fsdp2_copies);
}

/* Operand sizes of GEMM items (bf16, batched). */
static void test_gemm_bytes(void **state)
{
    (void)state;
    work_item it = gemm(GEMM_WGRAD, 3, 5, 7, 2, false);
    assert_int_equal(bk_gemm_a_bytes(&it), 2 * 3 * 7 * 2);
    assert_int_equal(bk_gemm_b_bytes(&it), 2 * 5 * 7 * 2);
    assert_int_equal(bk_gemm_c_bytes(&it), 2 * 3 * 5 * 2);
    assert_true(bk_item_weight_grad(&it));
    it.component = WC_ATTENTION; /* attention's dK / dV are WGRAD forms but not weights */
    assert_false(bk_item_weight_grad(&it));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddp),
        cmocka_unit_test(test_fsdp2_pipeline),
        cmocka_unit_test(test_moe_ring),
        cmocka_unit_test(test_optimizer_phase),
        cmocka_unit_test(test_gemm_bytes),
        cmocka_unit_test(test_one_gpu_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
