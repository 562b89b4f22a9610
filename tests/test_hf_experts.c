/*
 * test_hf_experts.c — transformers' grouped_mm MoE path (costmodel/hf_experts.h): the routing
 * kernels' bytes and launches on a toy MoE layer worked by hand, their price on a toy system,
 * and the recipe's expert GEMMs priced as two grouped kernels (not one GEMM per expert) with
 * their launches for the host.
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
#include "hf_experts.h"
#include "layer_recipe.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* T = 1000 tokens, top_k 2 (S = 2000 routed copies), h 100, E 10 experts, f 50. */
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
 * Forward bytes (hf_experts.c header: transformers 5.17.0's path), T 1000, S 2000, h 100, E 10,
 * f 50:
 *   router: cast 6TE 60,000 + softmax 8TE 80,000 + topk 4TE + 12S 64,000 + renorm 12S + 8T
 *   32,000; sort 40S 80,000 (3 launches: S under one cub tile); perm // k 16S 32,000; gather
 *   4Sh + 8S 816,000; weights gather 16S 32,000; offsets 16S + 12E 32,120; sentinel 25S
 *   50,000; pre-mask 4Sh + S 802,000; up mask 8Sf + S 802,000; down mask 4Sh + S 802,000;
 *   weight product 6Sh + 4S 1,208,000; inv_perm 32S 64,000; unpermute 8Sh + 8S 1,616,000;
 *   top-k sum 4Sh + 4Th 1,200,000; cast 6Th 600,000: 8,372,120 bytes in 28 launches; and the
 *   clones of the two out-of-place masks (up 8Sf 800,000, down 4Sh 800,000; host23): 9,972,120
 *   bytes in 30 launches.
 * Backward: cast 6Th 600,000; expand 4Th + 4Sh 1,200,000; unpermute's index_put_ (zeros 4Sh
 *   800,000, sort 40S 80,000, update 12Sh + 8S 2,416,000) 3,296,000; grad * w 8Sh + 4S
 *   1,608,000; its bf16 cast 6Sh 1,200,000; grad * out 10Sh 2,000,000; its sum 4Sh + 4S
 *   808,000; down mask 4Sh + S 802,000; the weights' index_put_ (4S + 40S + 20S) 128,000;
 *   chunk cat 8Sf 800,000; up mask 8Sf + S 802,000; pre-mask 4Sh + S 802,000; the gather's
 *   index_put_ (2Th 200,000 + 80,000 + 6Sh + 8S 1,216,000) 1,496,000; router: renorm 48S
 *   96,000, topk 4TE + 12S 64,000, softmax 12TE 120,000, cast 6TE 60,000: 15,882,000 bytes in
 *   30 launches; and the three masks' clones (4Sh, 8Sf, 4Sh: 2,400,000): 18,282,000 in 33.
 * Inner launches (issued inside a dispatch another began): topk's second, the sort's 2 after
 *   its first, histc's and cumsum's second, the two clones: 7 forward; each index_put_'s sort
 *   (an iota and one cub tile): 2 x 3 = 6, and the three clones: 9 backward.
 */
static void test_routing_bytes(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_FSDP2);
    assert_true(hf_experts_applies(&l));
    elementwise_list e;
    hf_experts_routing(&m, &l, 1000, &e);
    assert_true(e.eager && e.alone);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 30);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 33);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 9972120.0);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 18282000.0);
    int inner_f = 0, inner_b = 0;
    for (int i = 0; i < e.n_fwd; i++) inner_f += e.fwd[i].inner;
    for (int i = 0; i < e.n_bwd; i++) inner_b += e.bwd[i].inner;
    assert_int_equal(inner_f, 7);
    assert_int_equal(inner_b, 9);
    assert_true(find(e.fwd, e.n_fwd, "moe.mask.up.clone")->bytes == 800000.0);
    assert_int_equal(find(e.bwd, e.n_bwd, "moe.bwd.premask.clone")->inner, 1);
    assert_int_equal(find(e.fwd, e.n_fwd, "moe.sort")->inner, 2);
    assert_int_equal(find(e.bwd, e.n_bwd, "moe.bwd.gather.sort")->inner, 2);
    assert_int_equal(find(e.bwd, e.n_bwd, "moe.bwd.gather")->inner, 0);
    assert_true(find(e.fwd, e.n_fwd, "moe.unpermute")->bytes == 1616000.0);
    assert_true(find(e.bwd, e.n_bwd, "moe.bwd.gather")->bytes == 1216000.0);

    /* priced by bytes: HBM 2e12 B/s at the one-GPU eager efficiency 0.5 (the clones at the
     * streaming efficiency, 0.5 here too), 1 us between kernels: forward 9,972,120 / 1e12 s +
     * 30 us */
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.eager_elementwise_efficiency = 0.5;
    s.eager_elementwise_efficiency_alone = 0.5;
    s.eager_kernel_gap_s = 1e-6;
    s.hbm_efficiency = 0.5;
    double t = elementwise_pass_s(&s, &e, e.fwd, e.n_fwd);
    assert_true(fabs(t - (9.97212e-6 + 30e-6)) < 1e-12);

    /* not HF's eager code: torch.compile, the native model, expert parallelism */
    layout c = l;
    c.compile = true;
    assert_false(hf_experts_applies(&c));
    c = l;
    c.impl = IMPL_NATIVE;
    assert_false(hf_experts_applies(&c));
    c = l;
    c.ep = 2;
    assert_false(hf_experts_applies(&c));
}

/*
 * GPT-OSS's expert biases (model_spec.expert_bias; hf_experts.c hf_experts_bias), GPT-OSS-20B's
 * MoE block (h 2880, E 32, top_k 4, f 2880: 2f 5760) over T 8192 tokens (S 32,768):
 *   forward: the two gathers write S x 2f and S x h bf16 plus 8 bytes an index:
 *   2 x 32768 x 5760 + 8 x 32768 = 377,749,504 and 2 x 32768 x 2880 + 262,144 = 189,005,824;
 *   the in-place adds 6 S 2f = 1,132,462,080 and 6 S h = 566,231,040.
 *   backward: each gather's index_put_ over E = 32 rows, S updates: update 3 S w 2 + 8 S:
 *   1,132,724,224 (up) and 566,493,184 (down); an EW_INDEX_ACCUM of the longest run
 *   u + sqrt(2 u (1 - k/E) ln E), u = 1024: 1024 + sqrt(2048 x 0.875 x ln 32 = 6210.6) =
 *   1102.8 -> 1103 steps, 32 rows of 5760.
 *   price (gpu.index_accum_step_s 0.922 us, gpu.index_accum_bytes_per_s 3.98e12, gap 1 us):
 *   warps 32 x 45 = 1440, a step 0.922e-6 + 1440 x 768 / 3.98e12 = 1.19987e-6 s, x 1103 =
 *   1.323456e-3 s, over its bytes at 4.8e12 x 0.62 (0.3806 ms): 1.324456 ms with the gap
 *   (measured 1.28 ms at this shape, 1.35 inside transformers' GptOssMLP: bench/results/
 *   refit23_2026-11-29). Without the two fields: its bytes, 0.3806 + 0.001 ms, as before.
 */
static void test_gpt_oss_bias(void **state)
{
    (void)state;
    model_spec m;
    memset(&m, 0, sizeof m);
    m.hidden = 2880;
    m.experts = 32;
    m.top_k = 4;
    m.expert_ffn = 2880;
    layout l = layout_default(FRAMEWORK_FSDP2);
    elementwise_list e;
    hf_experts_routing(&m, &l, 8192, &e);
    int nf = e.n_fwd, nb = e.n_bwd;
    m.expert_bias = true;
    hf_experts_routing(&m, &l, 8192, &e);
    assert_int_equal(e.n_fwd, nf + 4);
    assert_int_equal(e.n_bwd, nb + 6);
    assert_true(find(e.fwd, e.n_fwd, "moe.bias.gather.up")->bytes == 377749504.0);
    assert_true(find(e.fwd, e.n_fwd, "moe.bias.gather.down")->bytes == 189005824.0);
    assert_true(find(e.fwd, e.n_fwd, "moe.bias.add.up")->bytes == 1132462080.0);
    assert_true(find(e.fwd, e.n_fwd, "moe.bias.add.down")->bytes == 566231040.0);
    const elementwise_kernel *up = find(e.bwd, e.n_bwd, "moe.bwd.bias.up");
    assert_true(up->bytes == 1132724224.0);
    assert_true(find(e.bwd, e.n_bwd, "moe.bwd.bias.down")->bytes == 566493184.0);
    assert_int_equal(up->access.pattern, EW_INDEX_ACCUM);
    assert_int_equal(up->access.n[0], 1103);
    assert_int_equal(up->access.n[1], 32);
    assert_int_equal(up->access.n[2], 5760);
    assert_int_equal(ew_operand_elems(&up->access, 0), 32 * 5760);
    assert_int_equal(ew_operand_elems(&up->access, 1), 1103L * 32 * 5760);
    assert_true(fabs(moe_longest_run(32768, 32, 4) - 1102.81) < 0.01);
    /* the other index backward kernels keep their access */
    assert_int_equal(find(e.bwd, e.n_bwd, "moe.bwd.gather")->access.pattern, EW_VECTORIZED);

    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_elementwise_efficiency_alone = 0.62;
    s.eager_kernel_gap_s = 1e-6;
    double bytes_s = 1132724224.0 / (4.8e12 * 0.62) + 1e-6;
    assert_true(fabs(elementwise_kernel_s(&s, &e, up) - bytes_s) < 1e-12);
    s.index_accum_step_s = 0.922e-6;
    s.index_accum_bytes_per_s = 3.98e12;
    assert_true(fabs(elementwise_kernel_s(&s, &e, up) - 1.324456e-3) < 1e-8);
    /* a run no longer than the bytes take: the bytes (the hidden-state gather's k = 4) */
    elementwise_kernel k4 = *up;
    k4.access.n[0] = 4;
    assert_true(fabs(elementwise_kernel_s(&s, &e, &k4) - bytes_s) < 1e-12);
}

static const recipe_op *op_named(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    return NULL;
}

/* Qwen3-30B-A3B's config and the system preset `sys` from the data directory */
static void load_qwen3_moe(model_spec *m, system_spec *s, const char *sys)
{
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* Qwen3-30B-A3B on one H100 under FSDP2: HF runs its 128 experts as two torch._grouped_mm
 * calls, which pay the GEMM fixed cost once each; the per-expert form (the native model here)
 * pays it 128 times: the forward differs by 2 x 127 x gemm_overhead_s, forward + backward by
 * 6 x 127 x it. The host issues 4 grouped-GEMM launches forward (8 backward); the routing
 * kernels replace the generic permute lumps. */
/* The masked_fills run PyTorch's offset kernel (a [S, 1] mask broadcast along each row of w):
 * toy S 2000, h 100, 2f 100; the mask spans S elements, the output S w (hf_experts.c
 * moe_mask_add). The other routing kernels stay contiguous. */
static void test_mask_access(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_FSDP2);
    elementwise_list e;
    hf_experts_routing(&m, &l, 1000, &e);
    const char *fwd[] = {"moe.premask", "moe.mask.up", "moe.mask.down"};
    const char *bwd[] = {"moe.bwd.premask", "moe.bwd.mask.up", "moe.bwd.mask.down"};
    for (int i = 0; i < 6; i++) {
        const elementwise_kernel *k =
            i < 3 ? find(e.fwd, e.n_fwd, fwd[i]) : find(e.bwd, e.n_bwd, bwd[i - 3]);
        assert_non_null(k);
        assert_int_equal(k->access.pattern, EW_OFFSETS);
        assert_int_equal(ew_operand_elems(&k->access, 2), 2000);
        assert_int_equal(ew_operand_elems(&k->access, 0), 2000 * 100);
        assert_true(k->bytes == 4.0 * ew_elements(&k->access) + 2000);
    }
    assert_int_equal(find(e.fwd, e.n_fwd, "moe.gather")->access.pattern, EW_VECTORIZED);
}

/* The offset-path kernels of the HF MoE block at the offset path's rate (elementwise.c,
 * gpu.score_offsets_efficiency; their accesses from hf_experts.c): the
 * forward pre-mask of the toy (802,000 bytes) at 4.8e12 B/s x 0.354 = 1.6992e12 B/s plus a
 * 1.5 us gap, 0.4720 + 1.5 = 1.9720 us on one GPU (before: the alone rate 0.59, 2.8320e12 B/s,
 * 0.2832 + 1.5 us); beside NCCL (not alone) x 0.51 / 0.59. A vectorized routing kernel (the
 * gather, 816,000 bytes) keeps the blended rate, and so does a mask on a preset without the
 * offset figure. */
static void test_mask_offsets_rate(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_FSDP2);
    elementwise_list e;
    hf_experts_routing(&m, &l, 1000, &e);
    assert_true(e.alone);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_elementwise_efficiency_alone = 0.59;
    s.eager_kernel_gap_s = 1.5e-6;
    s.score_offsets_efficiency = 0.354;
    const elementwise_kernel *mask = find(e.fwd, e.n_fwd, "moe.premask");
    double t = elementwise_kernel_s(&s, &e, mask);
    assert_true(fabs(t - (802000.0 / 1.6992e12 + 1.5e-6)) < 1e-15);
    assert_true(fabs(t - 1.9720e-6) < 1e-9);
    double g = elementwise_kernel_s(&s, &e, find(e.fwd, e.n_fwd, "moe.gather"));
    assert_true(fabs(g - (816000.0 / 2.832e12 + 1.5e-6)) < 1e-15);
    e.alone = false;
    t = elementwise_kernel_s(&s, &e, mask);
    assert_true(fabs(t - (802000.0 / (4.8e12 * 0.354 * 0.51 / 0.59) + 1.5e-6)) < 1e-15);
    e.alone = true;
    s.score_offsets_efficiency = 0;
    t = elementwise_kernel_s(&s, &e, mask);
    assert_true(fabs(t - (802000.0 / 2.832e12 + 1.5e-6)) < 1e-15);
    /* the routing weights' product (1,208,000 bytes) and its backward: a [S, 1] fp32 operand */
    s.score_offsets_efficiency = 0.354;
    const elementwise_kernel *w = find(e.fwd, e.n_fwd, "moe.weight_mul");
    assert_int_equal(w->access.pattern, EW_OFFSETS);
    assert_true(w->access.esize[0] == 4 && w->access.esize[2] == 4 && w->access.stride[2][2] == 0);
    assert_true(fabs(elementwise_kernel_s(&s, &e, w) - (1208000.0 / 1.6992e12 + 1.5e-6)) < 1e-15);
    assert_int_equal(find(e.bwd, e.n_bwd, "moe.bwd.weight_mul")->access.pattern, EW_OFFSETS);
    /* the experts' SwiGLU in a layer's list: the halves of gate_up (row stride 2f = 100) */
    elementwise_list x;
    m.heads = m.kv_heads = 4, m.head_dim = 25; /* the layer's attention kernels need its heads */
    elementwise_layer(&m, &l, 1000, true, &x);
    const elementwise_kernel *a = find(x.fwd, x.n_fwd, "experts.act");
    assert_int_equal(a->access.pattern, EW_OFFSETS);
    assert_true(a->access.n[1] == 2000 && a->access.n[2] == 50 && a->access.stride[1][1] == 100);
    assert_true(a->access.stride[0][1] == 50);
    const char *half[] = {"experts.mul", "experts.bwd.mul", "experts.bwd.act"};
    for (int i = 0; i < 3; i++) {
        const elementwise_kernel *k = i ? find(x.bwd, x.n_bwd, half[i]) : find(x.fwd, x.n_fwd, half[i]);
        assert_int_equal(k->access.pattern, EW_OFFSETS);
        assert_true(k->access.stride[2][1] == 100 && k->access.stride[1][1] == 50);
    }
    /* 2000 x 50 x 4 bytes = 400,000 at the offset rate */
    assert_true(fabs(elementwise_kernel_s(&s, &x, a) - (400000.0 / 1.6992e12 + 1.5e-6)) < 1e-15);
    /* the dense MLP's and the shared experts' SwiGLU stay vectorized */
    m.ffn = 64;
    elementwise_layer(&m, &l, 1000, false, &x);
    assert_int_equal(find(x.fwd, x.n_fwd, "mlp.act")->access.pattern, EW_VECTORIZED);
}

static void test_recipe_grouped(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load_qwen3_moe(&m, &s, "h100");
    training_spec t = training_default();
    layout hf = layout_default(FRAMEWORK_FSDP2), nat = hf;
    nat.impl = IMPL_NATIVE;
    static recipe rh, rn;
    recipe_layer(&m, &s, &t, &hf, true, &rh, NULL);
    recipe_layer(&m, &s, &t, &nat, true, &rn, NULL);
    const recipe_op *eh = op_named(&rh, "experts"), *en = op_named(&rn, "experts");
    assert_non_null(eh);
    assert_non_null(en);
    double c = s.gemm_overhead_s;
    assert_true(c > 0);
    assert_true(fabs((en->fwd_s - eh->fwd_s) - 2 * 127 * c) < 1e-12);
    assert_true(fabs((en->fwd_bwd_s - eh->fwd_bwd_s) - 6 * 127 * c) < 1e-12);
    assert_int_equal(eh->launches, 4);
    assert_int_equal(en->launches, 1);
    assert_non_null(op_named(&rh, "moe.unpermute"));
    assert_null(op_named(&rh, "moe.permute.bwd"));
    assert_null(op_named(&rn, "moe.unpermute"));
    assert_non_null(op_named(&rn, "moe.permute.bwd"));
}

/* The host's price of the inner launches (host_dispatch.c): Qwen3-30B-A3B at seq 64, mbs 1 on
 * one GPU (S = 512 routed copies: every sort one cub tile), every launch at 1 s of host time so
 * that each pass is the host's. The routing path has 7 inner launches forward and 9 backward
 * (test_routing_bytes: 5 and 6 before host23's masked_fill clones, one inner launch each); at
 * host.eager_inner_launch_s 0.25 s each costs 0.75 s less than at the eager rate: the forward's
 * host floor moves by 5.25 s, the backward's by 6.75 s; at 0 (a
 * preset without the figure) they cost the eager rate. */
static void test_inner_launch_host(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load_qwen3_moe(&m, &s, "h100");
    assert_true(s.host_eager_inner_launch_s == 0);
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.mbs = 1;
    s.host_eager_launch_s = 1.0;
    static recipe r0, r1;
    recipe_layer(&m, &s, &t, &l, true, &r0, NULL);
    s.host_eager_inner_launch_s = 0.25;
    recipe_layer(&m, &s, &t, &l, true, &r1, NULL);
    assert_true(fabs((r0.host_fwd_s - r1.host_fwd_s) - 5.25) < 1e-9);
    assert_true(fabs((r0.host_bwd_s - r1.host_bwd_s) - 6.75) < 1e-9);
    /* the H200 preset carries the measured figure (data/systems/h200.json) */
    model_spec m2;
    system_spec h;
    load_qwen3_moe(&m2, &h, "h200");
    assert_true(h.host_eager_inner_launch_s == 5.85e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routing_bytes),
        cmocka_unit_test(test_gpt_oss_bias),
        cmocka_unit_test(test_mask_access),
        cmocka_unit_test(test_mask_offsets_rate),
        cmocka_unit_test(test_recipe_grouped),
        cmocka_unit_test(test_inner_launch_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
