/*
 * test_titan_moe.c — torchtitan's MoE routing kernels (costmodel/titan_moe.h): their bytes and
 * launches on a toy MoE layer worked by hand, with and without expert parallelism; where the
 * list applies; and the recipe of a torchtitan EP layer carrying them in place of the generic
 * permute lump; FSDP2's chunk_cat host time (fsdp_copies.h) for torchtitan's expert unit; the
 * per-expert loop's kernels and its zero fills at the measured fill rate (gpu.fill_efficiency);
 * the host time of cuBLAS's heuristic for the loop's new GEMM shapes (expert_loop_new_shape_host).
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

#include "elementwise.h"
#include "expert_loop.h"
#include "hf_experts.h"
#include "fsdp_copies.h"
#include "host_dispatch.h"
#include "layer_recipe.h"
#include "memory.h"
#include "titan_moe.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* T = 1000 tokens, top_k 2 (S = 2000 routed copies), h 100, E 10 experts (5 local at ep 2). */
static model_spec toy_moe(void)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    m.hidden = 100;
    m.experts = 10;
    m.top_k = 2;
    m.expert_ffn = 50;
    return m;
}

static const elementwise_kernel *find(const elementwise_kernel *k, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) return &k[i];
    fail_msg("no kernel %s", name);
    return NULL;
}

/*
 * Forward bytes (titan_moe.c header), T 1000, S = R = 2000, h 100, E 10, 5 local experts:
 *   router: cast 6TE 60,000, softmax 8TE 80,000, topk 4TE + 12S 64,000, renorm 12S + 16T
 *   40,000, scale 8S 16,000; two histc 2 (8S + 4E) 32,080; tokens_per_expert 12E 120; argsort
 *   40S 80,000; scores gather 16S 32,000; idx // k 16S 32,000; token gather 4Sh + 8S 816,000;
 *   EP split sums 16E 160; permute indices 8R 16,000; zero row 2h 200; vstack 4Rh 800,000;
 *   permute 4Rh + 8R 816,000; offsets 8 x 5 40; unpermute 816,000; unsort zeros 2Sh 400,000;
 *   unsort 816,000; .float() 6Sh 1,200,000; bmm 4Sh + 4S + 4Th 1,208,000; .to(bf16) 6Th
 *   600,000: 7,924,600 bytes in 31 launches.
 * Backward: cast 6Th 600,000; bmm's two products 8Th + 8Sh + 8S 2,416,000; cast 6Sh
 *   1,200,000; unsort's gather 816,000; the slice's zeros 2 (R+1) h 400,200 and copy 4Rh
 *   800,000; unpermute's gather 816,000; permute's index_put_ (zeros 400,200, sorts 40R
 *   80,000, update 6Rh + 8R 1,216,000) 1,696,200; the token gather's (zeros 2Th 200,000,
 *   80,000, 1,216,000) 1,496,000; the scores' (4S 8,000, 80,000, 12S + 8S 40,000) 128,000;
 *   router: scale 8S 16,000, renorm 48S 96,000, topk 4TE + 12S 64,000, softmax 12TE 120,000,
 *   cast 6TE 60,000: 10,724,400 bytes in 29 launches.
 */
static void test_routing_bytes(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2;
    assert_true(titan_moe_applies(&l));
    elementwise_list e;
    titan_moe_routing(&m, &l, 1000, 2000, &e);
    assert_true(e.eager && !e.alone);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 31);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 29);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 7924600.0);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 10724400.0);
    assert_true(find(e.fwd, e.n_fwd, "moe.combine.bmm")->bytes == 1208000.0);
    assert_true(find(e.bwd, e.n_bwd, "moe.bwd.permute")->bytes == 1216000.0);

    /* the busiest rank receives 1.5x the mean (R 3000): only the receiver's terms grow, permute
     * indices 8R, vstack 4Rh, permute 4Rh + 8R, unpermute 4Rh + 8R: 24 + 12h = 1,224 bytes per
     * received copy, 1000 more; the sender's gather, unsort and weighted sum stay */
    elementwise_list big;
    titan_moe_routing(&m, &l, 1000, 3000, &big);
    assert_true(elementwise_bytes(big.fwd, big.n_fwd) - 7924600.0 == 1000.0 * (24 + 1200));

    /* without EP: no split sums (2 launches, 160 bytes), the offsets over all 10 experts (80
     * bytes, not 40); one GPU prices alone */
    layout one = layout_default(FRAMEWORK_TORCHTITAN);
    titan_moe_routing(&m, &one, 1000, 2000, &e);
    assert_true(e.alone);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 29);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 7924600.0 - 160.0 - 40.0 + 80.0);

    /* not torchtitan's eager MoE code: torch.compile, TP, the FSDP2 path, Megatron */
    layout c = l;
    c.compile = true;
    assert_false(titan_moe_applies(&c));
    c = l;
    c.tp = 2;
    assert_false(titan_moe_applies(&c));
    c = layout_default(FRAMEWORK_FSDP2);
    assert_false(titan_moe_applies(&c));
    c = layout_default(FRAMEWORK_MEGATRON);
    assert_false(titan_moe_applies(&c));
}

static const recipe_op *op_named(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    return NULL;
}

/* Qwen3-30B-A3B, torchtitan EP 2 on two H100s at seq 4096: the layer carries the routing list
 * (the permute over the 4096 x 8 copies it receives at load 1) instead of the lumped permute,
 * each entry one op priced as elementwise.c prices an eager kernel; the moe.* ops add up to the
 * list's passes. */
static void test_recipe_carries_list(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2, l.mbs = 1, l.impl = IMPL_NATIVE;
    l.sharding = SHARDING_FSDP;
    static recipe r;
    recipe_layer(&m, &s, &t, &l, true, &r, NULL);
    assert_null(op_named(&r, "moe.permute.bwd"));
    const recipe_op *p = op_named(&r, "moe.permute");
    assert_non_null(p);
    assert_int_equal(p->launches, 1);
    elementwise_list e;
    titan_moe_routing(&m, &l, 4096, 4096.0 * 8, &e);
    const elementwise_kernel *k = find(e.fwd, e.n_fwd, "moe.permute");
    assert_true(k->bytes == 4.0 * 32768 * 2048 + 8.0 * 32768);
    assert_true(fabs(p->fwd_s - elementwise_kernel_s(&s, &e, k)) < 1e-15);
    double fwd = 0, bwd = 0;
    for (int i = 0; i < r.n_ops; i++)
        if (!strncmp(r.op[i].name, "moe.", 4)) fwd += r.op[i].fwd_s, bwd += r.op[i].bwd_s;
    assert_true(fabs(fwd - elementwise_pass_s(&s, &e, e.fwd, e.n_fwd)) < 1e-12);
    assert_true(fabs(bwd - elementwise_pass_s(&s, &e, e.bwd, e.n_bwd)) < 1e-12);
}

/* FSDP2's reduce-scatter copy-in: torch._chunk_cat builds one int64 per 2 KiB of the fp32 output
 * chunk on the host. 1,000,000 parameters over 2 ranks: n = 500,000, 2,000,000 bytes, 977
 * blocks (976.56 rounded up). Qwen3-30B-A3B under torchtitan EP 2 on 2 GPUs: the experts' unit
 * (64 local experts x 3 x 2048 x 768 = 301,989,888 parameters) on its one-rank expert-data mesh
 * is 1,207,959,552 bytes, 589,824 blocks; at the preset's 5.6 ns per block 3.3030144 ms, plus the
 * block unit's over 2 ranks. With every launch at 1 s of host time the backward is host-paced,
 * and the host's chunk_cat time adds to it one for one. */
static void test_chunk_cat_host(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.host_chunk_cat_block_s = 5.6e-9;
    assert_true(fabs(fsdp_rs_copy_in_host_s(&s, 1e6, 2) - 977 * 5.6e-9) < 1e-18);
    assert_true(fabs(fsdp_rs_copy_in_host_s(&s, 301989888.0, 1) - 3.3030144e-3) < 1e-15);
    s.host_chunk_cat_block_s = 0;
    assert_true(fsdp_rs_copy_in_host_s(&s, 1e6, 2) == 0);

    model_spec m;
    system_spec h;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &h, err, sizeof err) != CM_OK) fail_msg("%s", err);
    /* the H100 preset's measured two rates (fsdp_copies.h): 6.87 ns a block up to 208,157
     * blocks, 13.2 ns past them: the experts' 589,824 blocks take 208,157 x 6.87 ns + 381,667 x
     * 13.2 ns = 1.43003859 + 5.0380044 = 6.46804299 ms */
    assert_true(h.host_chunk_cat_block_s == 6.87e-9);
    assert_true(h.host_chunk_cat_block_large_s == 1.32e-8);
    assert_true(h.host_chunk_cat_knee_blocks == 208157);
    assert_true(fabs(fsdp_rs_copy_in_host_s(&h, 301989888.0, 1) - 6.46804299e-3) < 1e-14);
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 2;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2, l.mbs = 1, l.impl = IMPL_NATIVE;
    l.sharding = SHARDING_FSDP;
    double pd, pe;
    memory_layer_params_split(&m, &l, true, &pd, &pe);
    assert_true(pe == 301989888.0);
    static recipe r;
    recipe_layer(&m, &h, &t, &l, true, &r, NULL);
    double want = 6.46804299e-3 + fsdp_rs_copy_in_host_s(&h, pd, 2);
    assert_true(fabs(r.host_rs_copy_in_s - want) < 1e-12);
    h.host_eager_launch_s = 1.0;
    recipe_layer(&m, &h, &t, &l, true, &r, NULL);
    double with = r.host_bwd_s;
    h.host_chunk_cat_block_s = 0;
    h.host_chunk_cat_block_large_s = 0;
    recipe_layer(&m, &h, &t, &l, true, &r, NULL);
    assert_true(fabs((with - r.host_bwd_s) - want) < 1e-9);
}

/* cub's radix sort (hf_experts.c moe_sort_kernels): one single-tile kernel up to 256 x 19 =
 * 4864 items; above, a histogram, a scan and a pass per 8 key bits, each after a memset:
 * argsort of 32,768 int64 ids (64 bits, 8 passes) 2 (2 + 8) = 20 kernels, as the H100 traces of
 * bench/results/epstep_2026-11-27 show (10 cub radix + 10 memsets); 15 bits: 2 passes, 8. At
 * Qwen3-30B-A3B's EP 2 sizes (T 4096, S = R = 32,768) the torchtitan list then issues forward 31
 * - 2 + (1 + 20) = 50 launches (the argsort's iota and kernels in place of 2) and backward 29 +
 * 3 x (14 - 4) = 59 (each index backward: zeros, remainder, mul, div_, arange, 8 sort kernels,
 * the update = 14 in place of 4); the bytes stay those of the formulas (40 B per sorted index). */
static void test_sort_launches(void **state)
{
    (void)state;
    assert_int_equal(moe_sort_kernels(512, 64), 1);
    assert_int_equal(moe_sort_kernels(4864, 64), 1);
    assert_int_equal(moe_sort_kernels(32768, 64), 20);
    assert_int_equal(moe_sort_kernels(32768, 15), 8);
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2;
    elementwise_list e;
    titan_moe_routing(&m, &l, 4096, 32768, &e);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 50);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 59);
    const elementwise_kernel *a = find(e.fwd, e.n_fwd, "moe.argsort");
    assert_int_equal(a->count, 21);
    assert_true(fabs(a->bytes * a->count - 40.0 * 32768) < 1e-6);
    const elementwise_kernel *g = find(e.bwd, e.n_bwd, "moe.bwd.gather.sort");
    assert_int_equal(g->count, 12); /* 4 index kernels + 8 sort kernels (4096 rows: 12 bits) */
    assert_true(fabs(g->bytes * g->count - 40.0 * 32768) < 1e-6);
}

/* torchtitan's per-expert loop (expert_loop.c), toy layer: h 100, f 50, SwiGLU, 10 experts at
 * EP 2 (5 local), 2000 received rows. W = 5 x 100 x 50 x 2 = 50,000 bytes per stacked weight;
 * per weight (3): 5 zero fills of W, 5 slice copies of 4 h f = 20,000 bytes, 4 adds of 3W =
 * 150,000; backward 15 + 15 + 12 + 1 (split's cat, 4Rh = 800,000) = 43 launches, 15 x 50,000 +
 * 15 x 20,000 + 12 x 150,000 + 800,000 = 3,650,000 bytes; forward the cat, 800,000. Priced as
 * streams (hbm_efficiency). In the recipe (Qwen3-30B-A3B, EP 2, 64 local experts): the experts
 * op issues 3 x 64 launches (192 forward, 384 backward) where the grouped path issues 6, the
 * SwiGLU kernels one per expert, and only torchtitan's eager code takes the flag. */
static void test_expert_loop(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    m.activation = MODEL_ACT_SWIGLU;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2;
    training_spec t = training_default();
    assert_false(expert_loop_applies(&t, &l));
    t.moe_expert_loop = true;
    assert_true(expert_loop_applies(&t, &l));
    elementwise_list e;
    expert_loop_kernels(&m, &l, 5, 2000, &e);
    assert_false(e.eager);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 1);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 43);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 800000.0);
    double bb = 0;
    for (int i = 0; i < e.n_bwd; i++) bb += e.bwd[i].bytes * e.bwd[i].count;
    assert_true(bb == 3650000.0);
    assert_int_equal(find(e.bwd, e.n_bwd, "moe.loop.bwd.select.accumulate")->count, 12);
    layout c = layout_default(FRAMEWORK_MEGATRON);
    assert_false(expert_loop_applies(&t, &c));

    model_spec q;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &q, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec tq = training_default();
    tq.seq_len = 4096;
    tq.global_batch = 2;
    layout lq = layout_default(FRAMEWORK_TORCHTITAN);
    lq.ep = 2, lq.dp = 2, lq.mbs = 1, lq.impl = IMPL_NATIVE;
    lq.sharding = SHARDING_FSDP;
    static recipe r;
    recipe_layer(&q, &s, &tq, &lq, true, &r, NULL);
    assert_int_equal(op_named(&r, "experts")->launches, 6);
    assert_int_equal(op_named(&r, "experts.act")->launches, 1);
    assert_null(op_named(&r, "moe.loop.bwd.select.zeros"));
    double grouped_bwd = op_named(&r, "experts")->bwd_s;
    tq.moe_expert_loop = true;
    recipe_layer(&q, &s, &tq, &lq, true, &r, NULL);
    assert_int_equal(op_named(&r, "experts")->launches, 192);
    assert_int_equal(op_named(&r, "experts.act")->launches, 64);
    const recipe_op *z = op_named(&r, "moe.loop.bwd.select.zeros");
    assert_non_null(z);
    assert_int_equal(z->launches, 192);
    /* 192 fills of the 64 x 2048 x 768 bf16 weight (201,326,592 bytes) at the HBM stream rate */
    assert_true(fabs(z->bwd_s - 192 * 201326592.0 /
                                    (s.hbm_bandwidth_bytes_per_s * s.hbm_efficiency)) < 1e-9);
    assert_true(op_named(&r, "experts")->bwd_s > grouped_bwd); /* 64 small GEMMs, a cost each */
}

/* The loop's zero fills are write-only streams (a FillFunctor with no input operand): on H200
 * they ran at 3.39 TB/s (gpu.fill_efficiency 0.706 of 4.8 TB/s), where the in-place adds beside
 * them ran at 4.40 TB/s, hbm_efficiency's c = a + b (bench/results/moe25_2026-11-29, the
 * profiled EP 2 loop step of Qwen3-235B-A22B's layer: 384 fills of 805,306,368 B at 237.5 us
 * median, 378 adds of 3 x that at 549.0 us). Qwen3-30B-A3B at EP 2 on h200: 192 fills of the
 * 64 x 2048 x 768 bf16 weight, 201,326,592 B each: 192 x 201,326,592 / (4.8e12 x 0.706) =
 * 11.407 ms; the 189 adds of 3 x 201,326,592 B at 4.8e12 x 0.90: 26.424 ms. A system without a
 * fill rate (h100) prices the fills at hbm_efficiency as before. */
static void test_expert_loop_fill_rate(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    m.activation = MODEL_ACT_SWIGLU;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2;
    elementwise_list e;
    expert_loop_kernels(&m, &l, 5, 2000, &e);
    const elementwise_kernel *z = find(e.bwd, e.n_bwd, "moe.loop.bwd.select.zeros");
    assert_int_equal(z->access.pattern, EW_VECTORIZED); /* written, nothing read */
    assert_int_equal(z->access.esize[0], 2);
    assert_int_equal(z->access.esize[1], 0);
    assert_int_equal(z->access.esize[2], 0);

    model_spec q;
    system_spec s, h;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &q, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &h, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(s.fill_efficiency == 0.706);
    assert_true(h.fill_efficiency == 0);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    t.moe_expert_loop = true;
    layout lq = layout_default(FRAMEWORK_TORCHTITAN);
    lq.ep = 2, lq.dp = 2, lq.mbs = 1, lq.impl = IMPL_NATIVE;
    lq.sharding = SHARDING_FSDP;
    static recipe r;
    recipe_layer(&q, &s, &t, &lq, true, &r, NULL);
    double W = 64.0 * 2048 * 768 * 2;
    assert_true(fabs(op_named(&r, "moe.loop.bwd.select.zeros")->bwd_s - 11.4066e-3) < 1e-6);
    assert_true(fabs(op_named(&r, "moe.loop.bwd.select.zeros")->bwd_s -
                     192 * W / (4.8e12 * 0.706)) < 1e-12);
    assert_true(fabs(op_named(&r, "moe.loop.bwd.select.accumulate")->bwd_s - 26.424e-3) < 1e-6);
    recipe_layer(&q, &h, &t, &lq, true, &r, NULL);
    assert_true(fabs(op_named(&r, "moe.loop.bwd.select.zeros")->bwd_s -
                     192 * W / (h.hbm_bandwidth_bytes_per_s * h.hbm_efficiency)) < 1e-12);
}

/* cuBLAS's heuristic for the loop's new GEMM shapes (expert_loop_new_shape_host): a row count
 * new to the process makes 2 of an expert's 3 forward GEMMs new shapes (x @ w1, h @ w2; x @ w3
 * repeats x @ w1's) and 4 of its 6 backward ones (w2's dgrad and wgrad, then the first of w3's
 * and w1's pairs). Qwen3-30B-A3B at EP 2 on h200 (64 local experts), half the counts new: 32
 * experts x 2 = 64 forward queries over the experts op's 192 launches (c / 3 each, c =
 * host.gemm_new_shape_s) and 32 x 4 = 128 backward over 384 launches (c / 3 each); the host's
 * issue time of the experts op grows by exactly 64 c and 128 c. A gated-less model: every GEMM
 * of a new count is new (c x share per launch); a system without the figure (h100): none. */
static void test_expert_loop_new_shapes(void **state)
{
    (void)state;
    model_spec q;
    system_spec s, h;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &q, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &h, err, sizeof err) != CM_OK) fail_msg("%s", err);
    double c = s.host_gemm_new_shape_s;
    assert_true(c > 0);
    assert_true(h.host_gemm_new_shape_s == 0);
    double f, b;
    expert_loop_new_shape_host(&q, &s, 0.5, &f, &b);
    assert_true(fabs(f - c / 3) < 1e-15 && fabs(b - c / 3) < 1e-15);
    expert_loop_new_shape_host(&q, &h, 0.5, &f, &b);
    assert_true(f == 0 && b == 0);
    expert_loop_new_shape_host(&q, &s, 0, &f, &b);
    assert_true(f == 0 && b == 0);
    model_spec g = toy_moe();
    g.activation = MODEL_ACT_GELU;
    expert_loop_new_shape_host(&g, &s, 0.25, &f, &b);
    assert_true(fabs(f - c / 4) < 1e-15 && fabs(b - c / 4) < 1e-15);

    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    t.moe_expert_loop = true;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.ep = 2, l.dp = 2, l.mbs = 1, l.impl = IMPL_NATIVE;
    l.sharding = SHARDING_FSDP;
    static recipe r0, r1;
    static host_dispatch_host h0, h1;
    recipe_layer(&q, &s, &t, &l, true, &r0, NULL);
    t.moe_new_count_share = 0.5;
    recipe_layer(&q, &s, &t, &l, true, &r1, NULL);
    int ex = -1;
    for (int i = 0; i < r1.n_ops; i++)
        if (!strcmp(r1.op[i].name, "experts")) ex = i;
    assert_true(ex >= 0 && !strcmp(r0.op[ex].name, "experts"));
    assert_true(r0.op[ex].host_extra_fwd_s == 0 && r0.op[ex].host_extra_bwd_s == 0);
    assert_true(fabs(r1.op[ex].host_extra_fwd_s - c / 3) < 1e-15);
    assert_true(host_dispatch_host_of(&s, &q, &l, &r0, true, true, &h0));
    assert_true(host_dispatch_host_of(&s, &q, &l, &r1, true, true, &h1));
    assert_true(fabs(h1.op_s[RECIPE_FWD][ex] - h0.op_s[RECIPE_FWD][ex] - 64 * c) < 1e-12);
    assert_true(fabs(h1.op_s[RECIPE_BWD][ex] - h0.op_s[RECIPE_BWD][ex] - 128 * c) < 1e-12);
    assert_true(r1.host_fwd_s > r0.host_fwd_s && r1.host_bwd_s > r0.host_bwd_s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routing_bytes),
        cmocka_unit_test(test_recipe_carries_list),
        cmocka_unit_test(test_chunk_cat_host),
        cmocka_unit_test(test_sort_launches),
        cmocka_unit_test(test_expert_loop),
        cmocka_unit_test(test_expert_loop_fill_rate),
        cmocka_unit_test(test_expert_loop_new_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
