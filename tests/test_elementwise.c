/*
 * test_elementwise.c — the elementwise kernel list (costmodel/elementwise.c) against numbers
 * worked by hand from its table (bench/BACKEND.md, "Eager elementwise kernels"): bytes per
 * element of each eager kernel (bf16 2, fp32 4, read + written) times tokens x width.
 * Llama-3.1-8B: T 4096 tokens, h 4096, q 4096 (32 x 128), kv 1024 (8 x 128), f 14336, V 128256.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elementwise.h"
#include "fsdp_copies.h"

#define T 4096.0

static model_spec llama8b(void)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "8b");
    m.layers = 32;
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 14336;
    m.vocab = 128256;
    m.activation = MODEL_ACT_SWIGLU;
    m.norm = MODEL_NORM_RMS;
    return m;
}

static layout one_gpu(layout_framework fw)
{
    layout l = layout_default(fw);
    l.sharding = SHARDING_FSDP;
    return l;
}

static double named(const elementwise_kernel *k, int n, const char *name, int *count)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) {
            *count = k[i].count;
            return k[i].bytes;
        }
    fail_msg("no kernel %s", name);
    return 0;
}

/* LlamaRMSNorm: to(fp32) 6 + pow 8 + mean 4 + x*rstd 8 + to(bf16) 6 + weight*x 4 = 36 bytes
 * per element forward in 6 launches; backward 4+6+2+6+8+12+4+4+8+8+12+12+6 = 92 in 13. */
static void test_rmsnorm_bytes(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list e;
    elementwise_head(&m, &l, T, &e); /* the final norm is the head's only norm */
    double f = 0, b = 0;
    int nf = 0, nb = 0;
    for (int i = 0; i < e.n_fwd; i++)
        if (!strncmp(e.fwd[i].name, "rmsnorm.", 8)) f += e.fwd[i].bytes, nf += e.fwd[i].count;
    for (int i = 0; i < e.n_bwd; i++)
        if (!strncmp(e.bwd[i].name, "rmsnorm.", 8)) b += e.bwd[i].bytes, nb += e.bwd[i].count;
    assert_true(f == 603979776.0); /* 36 x 4096 x 4096 */
    assert_int_equal(nf, 6);
    assert_true(b == 1543503872.0); /* 92 x 4096 x 4096 */
    assert_int_equal(nb, 13);
    int c;
    assert_true(named(e.fwd, e.n_fwd, "rmsnorm.to_fp32", &c) == 6 * T * 4096); /* 100.7 MB */
    assert_true(named(e.bwd, e.n_bwd, "rmsnorm.bwd.pow1_copy", &c) == 8 * T * 4096);
}

/* torchtitan 2024's own RMSNorm (layout.rms_norm_unfused): a native eager block and the head
 * run LlamaRMSNorm's kernels (36 / 92 bytes an element, 6 / 13 launches) in place of the fused
 * F.rms_norm (4 / 6 + 4); a compiled block is Inductor's either way. */
static void test_rms_norm_unfused(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_TORCHTITAN);
    l.impl = IMPL_NATIVE;
    elementwise_list fused, unfused;
    elementwise_head(&m, &l, T, &fused);
    l.rms_norm_unfused = true;
    elementwise_head(&m, &l, T, &unfused);
    int c;
    assert_true(named(fused.fwd, fused.n_fwd, "rms_norm.fused", &c) == 4 * T * 4096);
    double f = 0;
    for (int i = 0; i < unfused.n_fwd; i++)
        if (!strncmp(unfused.fwd[i].name, "rmsnorm.", 8)) f += unfused.fwd[i].bytes;
    assert_true(f == 36 * T * 4096);
    elementwise_layer(&m, &l, T, false, &unfused);
    assert_true(named(unfused.bwd, unfused.n_bwd, "rmsnorm.bwd.pow1_copy", &c) == 8 * T * 4096);
    assert_int_equal(c, 2); /* two norms a block */
    l.compile = true;
    elementwise_list cu, cf;
    elementwise_layer(&m, &l, T, false, &cu);
    l.rms_norm_unfused = false;
    elementwise_layer(&m, &l, T, false, &cf);
    assert_true(elementwise_bytes(cu.fwd, cu.n_fwd) == elementwise_bytes(cf.fwd, cf.n_fwd));
    assert_true(elementwise_bytes(cu.bwd, cu.n_bwd) == elementwise_bytes(cf.bwd, cf.n_bwd));
}

/* One Llama-3.1-8B layer: forward 84Th + 20T(q+kv) + 10Tf = 1409286144 + 419430400 +
 * 587202560 = 2415919104 bytes in 26 launches (2 x 6 norm, 2 x 5 RoPE, 2 residual adds, silu,
 * mul); backward 214Th + 34T(q+kv) + 18Tf = 3590324224 + 713031680 + 1056964608 = 5360320512
 * bytes in 54 launches (2 x 13 norm, 2 x 10 RoPE, 5 gradient adds, 2 muls, silu_backward). */
static void test_llama8b_layer(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list e;
    elementwise_layer(&m, &l, T, false, &e);
    assert_true(e.eager);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 2415919104.0);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 26);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 5360320512.0);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 54);
    /* RoPE on q: q*cos and rot*sin 4 bytes per element each, 33.5 MB of q */
    int c;
    assert_true(named(e.fwd, e.n_fwd, "rope.q.mul", &c) == 4 * T * 4096);
    assert_int_equal(c, 2);
    assert_true(named(e.bwd, e.n_bwd, "grad.add", &c) == 6 * T * 4096);
    assert_int_equal(c, 5);

    /* Time at the h200 rate: bytes / (4.8e12 x 0.51) + 1.5 us per launch. */
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    s.hbm_efficiency = 0.9;
    double t = elementwise_pass_s(&s, &e, e.fwd, e.n_fwd);
    assert_true(fabs(t - (2415919104.0 / 2.448e12 + 26 * 1.5e-6)) < 1e-12); /* 1.0259 ms */
}

/* Sequence parallelism (and tensor parallelism) over 2 GPUs halves every kernel's bytes:
 * norms and residuals run over T/2 tokens, RoPE and SwiGLU over q/2, kv/2 and f/2. */
static void test_sharding_halves(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    l.tp = 2;
    l.sp = true;
    elementwise_list e;
    elementwise_layer(&m, &l, T, false, &e);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 2415919104.0 / 2);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 5360320512.0 / 2);
}

/* Loss head: logits.float() 6 + log_softmax 8 bytes per logit forward, zeros 4 +
 * log_softmax backward 12 + to(bf16) 6 backward, plus the final norm (36, 92 per element):
 * forward 14 x 4096 x 128256 + 603979776 = 7958691840, backward 22 x 4096 x 128256 +
 * 1543503872 = 13100908544. */
static void test_loss_head(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list e;
    elementwise_head(&m, &l, T, &e);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 7958691840.0);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 13100908544.0);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 8);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 16);
}

/* torchtitan's loss_parallel (TP 2, vocab shard 64,128, 4096 tokens: e = 262,668,288 logits a
 * rank): .float() 6, amax 4, x - max 8, exp 8, sum 4, x - lse 8 bytes a logit forward (38 e =
 * 9,981,394,944), zeros 4, exp 8, add 12, broadcast mul 8, bf16 cast 6 backward (38 e), 11
 * launches, against 14 e / 22 e of the fused kernels. On H100 figures (3.35 TB/s,
 * gpu.loss_parallel_efficiency 0.80, gap 1.5 us) the forward's 38 e take 9,981,394,944 /
 * 2.68e12 + 6 x 1.5 us = 3.7334011 ms; without the figure they fall back to the eager rate
 * (0.51: 5.8511978 ms). The fused list of TP 1 keeps the eager rate either way. */
static void test_loss_parallel(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_TORCHTITAN);
    l.tp = 2, l.sp = true;
    elementwise_list e;
    elementwise_head(&m, &l, T, &e);
    double lf = 0, lb = 0;
    int nf = 0, nb = 0;
    for (int i = 0; i < e.n_fwd; i++)
        if (!strncmp(e.fwd[i].name, "lossp.", 6)) lf += e.fwd[i].bytes, nf += e.fwd[i].count;
    for (int i = 0; i < e.n_bwd; i++)
        if (!strncmp(e.bwd[i].name, "lossp.", 6)) lb += e.bwd[i].bytes, nb += e.bwd[i].count;
    assert_true(lf == 38.0 * 4096 * 64128 && lb == lf);
    assert_int_equal(nf, 6);
    assert_int_equal(nb, 5);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 3.35e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    s.loss_parallel_efficiency = 0.80;
    double t = 0;
    for (int i = 0; i < e.n_fwd; i++)
        if (!strncmp(e.fwd[i].name, "lossp.", 6)) t += elementwise_kernel_s(&s, &e, &e.fwd[i]);
    if (fabs(t - 3.7334011e-3) > 1e-9) fail_msg("loss_parallel forward %.8g s, by hand 3.73343 ms", t);
    s.loss_parallel_efficiency = 0;
    t = 0;
    for (int i = 0; i < e.n_fwd; i++)
        if (!strncmp(e.fwd[i].name, "lossp.", 6)) t += elementwise_kernel_s(&s, &e, &e.fwd[i]);
    if (fabs(t - 5.8511978e-3) > 1e-9) fail_msg("eager fallback %.8g s, by hand 5.85120 ms", t);
    l.tp = 1, l.sp = false;
    elementwise_head(&m, &l, T, &e);
    for (int i = 0; i < e.n_fwd; i++) assert_true(strncmp(e.fwd[i].name, "lossp.", 6) != 0);
}

/* Issue 19: torchtitan's SP collectives' rearranging copies (elementwise.c sp_funcol_copies),
 * Llama-3.1-8B at TP 4, 49,152 tokens a GPU (batch 6 x seq 8192, bench/tp_chunk_cat.py's
 * shape): each copy reads and writes the gathered [b, s, h] bf16 tensor, 4 x 49152 x 4096 =
 * 805,306,368 bytes; two forward and two backward for the reduce-scatters always, as many for
 * the all-gathers at batch > 1 (a view at batch 1). Compiled, each at the streaming rate:
 * 805306368 / (3.35e12 x 0.91) = 264.16 us (measured 262-264 us, triton_poi_fused_cat_*);
 * eager, the scatter's vectorized cat the same plus the 1.5 us gap, the gather's strided cat at
 * 0.357 of peak: 805306368 / (3.35e12 x 0.357) + 1.5 us = 674.86 us (measured 673.8 us). Float8
 * tensorwise gathers its forward inputs in 1 byte: that copy is half. */
static void test_sp_funcol_copies(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_TORCHTITAN);
    l.tp = 4, l.sp = true, l.mbs = 6, l.compile = true;
    double tokens = 49152, one = 4.0 * tokens * 4096;
    assert_true(one == 805306368.0);
    elementwise_list e;
    elementwise_layer(&m, &l, tokens, false, &e);
    int c;
    assert_true(named(e.fwd, e.n_fwd, "sp.rs_chunk_cat", &c) == one && c == 2);
    assert_true(named(e.bwd, e.n_bwd, "sp.rs_chunk_cat.bwd", &c) == one && c == 2);
    assert_true(named(e.fwd, e.n_fwd, "sp.ag_chunk_cat", &c) == one && c == 2);
    assert_true(named(e.bwd, e.n_bwd, "sp.ag_chunk_cat.bwd", &c) == one && c == 2);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 3.35e12;
    s.hbm_efficiency = 0.91;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    s.strided_cat_efficiency = 0.357;
    const elementwise_kernel *ag = NULL, *rs = NULL;
    for (int i = 0; i < e.n_fwd; i++) {
        if (!strcmp(e.fwd[i].name, "sp.ag_chunk_cat")) ag = &e.fwd[i];
        if (!strcmp(e.fwd[i].name, "sp.rs_chunk_cat")) rs = &e.fwd[i];
    }
    assert_non_null(ag);
    assert_non_null(rs);
    if (fabs(elementwise_kernel_s(&s, &e, ag) - 264.1648e-6) > 1e-9)
        fail_msg("compiled gather copy %.8g s, by hand 264.165 us", elementwise_kernel_s(&s, &e, ag));
    /* eager: the same kernels in the eager list, priced apart */
    elementwise_list ee = e;
    ee.eager = true;
    if (fabs(elementwise_kernel_s(&s, &ee, ag) - 674.8612e-6) > 1e-9)
        fail_msg("eager gather copy %.8g s, by hand 674.861 us", elementwise_kernel_s(&s, &ee, ag));
    if (fabs(elementwise_kernel_s(&s, &ee, rs) - 265.6648e-6) > 1e-9)
        fail_msg("eager scatter copy %.8g s, by hand 265.665 us", elementwise_kernel_s(&s, &ee, rs));
    /* batch 1: the gather is a view, the scatter still copies */
    l.mbs = 1;
    elementwise_layer(&m, &l, 8192, false, &e);
    for (int i = 0; i < e.n_fwd; i++) assert_true(strcmp(e.fwd[i].name, "sp.ag_chunk_cat") != 0);
    assert_true(named(e.fwd, e.n_fwd, "sp.rs_chunk_cat", &c) == 4.0 * 8192 * 4096 && c == 2);
    /* float8 tensorwise: the forward gather's copy moves 1-byte elements */
    l.mbs = 6, l.precision = PRECISION_FP8, l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    elementwise_layer(&m, &l, tokens, false, &e);
    assert_true(named(e.fwd, e.n_fwd, "sp.ag_chunk_cat", &c) == one / 2);
    assert_true(named(e.bwd, e.n_bwd, "sp.ag_chunk_cat.bwd", &c) == one);
    /* no copies without TP, nor under Megatron (Transformer Engine gathers along dim 0) */
    l.tp = 1, l.sp = false;
    elementwise_layer(&m, &l, tokens, false, &e);
    for (int i = 0; i < e.n_fwd; i++) assert_true(strncmp(e.fwd[i].name, "sp.", 3) != 0);
    layout mg = one_gpu(FRAMEWORK_MEGATRON);
    mg.tp = 4, mg.sp = true, mg.mbs = 6;
    elementwise_layer(&m, &mg, tokens, false, &e);
    for (int i = 0; i < e.n_fwd; i++) assert_true(strncmp(e.fwd[i].name, "sp.", 3) != 0);
}

/* Megatron keeps Transformer Engine's fused lump: norms 2 x 4h, residual adds 12h, SwiGLU 6f,
 * RoPE 4(q+kv) per token = 188416 x 4096 = 771751936 bytes forward, twice that backward; the
 * loss 10 bytes per logit each way, at hbm_efficiency with no launch gap. */
static void test_megatron_fused(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    elementwise_list e;
    elementwise_layer(&m, &l, T, false, &e);
    assert_false(e.eager);
    assert_int_equal(e.n_fwd, 1);
    assert_int_equal(e.n_bwd, 1);
    assert_true(e.fwd[0].bytes == 771751936.0);
    assert_true(e.bwd[0].bytes == 2 * 771751936.0);
    elementwise_head(&m, &l, T, &e);
    assert_true(e.fwd[0].bytes == 10 * T * 128256 && e.bwd[0].bytes == 10 * T * 128256);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.hbm_efficiency = 0.9;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    assert_true(fabs(elementwise_kernel_s(&s, &e, &e.fwd[0]) - 10 * T * 128256 / 4.32e12) < 1e-15);
}

/* The unique bytes an access moves: the iteration's elements times the element sizes of the
 * operands that are not broadcast (a zero stride over a dimension of more than one element);
 * a reduction's output and a cat's two inputs' output halves as the header comment counts them. */
static double derived_bytes(const ew_access *a)
{
    double e = ew_elements(a), b = 0;
    for (int k = 0; k < 3; k++) {
        if (!a->esize[k]) continue;
        if (k == 0 && (a->pattern == EW_REDUCE_ROW || a->pattern == EW_REDUCE_COL)) continue;
        bool bcast = false;
        if (a->pattern == EW_OFFSETS || a->pattern == EW_VECTORIZED || a->pattern == EW_UNROLLED)
            for (int i = 0; i < 3; i++)
                if (a->n[i] > 1 && a->stride[k][i] == 0) bcast = true;
        if (!bcast) b += a->esize[k] * (k == 0 && a->pattern == EW_CAT ? 2 : 1);
    }
    return e * b;
}

static const elementwise_kernel *find(const elementwise_list *e, const char *name)
{
    for (int i = 0; i < e->n_fwd; i++)
        if (!strcmp(e->fwd[i].name, name)) return &e->fwd[i];
    for (int i = 0; i < e->n_bwd; i++)
        if (!strcmp(e->bwd[i].name, name)) return &e->bwd[i];
    fail_msg("no kernel %s", name);
    return NULL;
}

/* Every kernel's access pattern moves the bytes the list prices, and the pattern is the
 * kernel PyTorch runs for the op (the profiled kernel names, bench/BACKEND.md): weight * x
 * broadcasts [h] over the T rows (elementwise_kernel<128, 4>), x * rstd [T, 1] over h
 * (<128, 2>, fp32), x.to(fp32) casts (unrolled, LoadWithCast), mean(-1) reduces rows, sum_to
 * [h] reduces columns, cat is CatArrayBatchedCopy, RoPE's cos is [s, d] over 32 heads, the
 * SwiGLU product is vectorized, log_softmax is cunn_SoftMaxForward. */
static void test_access_patterns(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list lay, head;
    elementwise_layer(&m, &l, T, false, &lay);
    elementwise_head(&m, &l, T, &head);
    const elementwise_list *lists[2] = {&lay, &head};
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < lists[j]->n_fwd; i++)
            if (derived_bytes(&lists[j]->fwd[i].access) != lists[j]->fwd[i].bytes)
                fail_msg("%s: access moves %.0f bytes, priced %.0f", lists[j]->fwd[i].name,
                         derived_bytes(&lists[j]->fwd[i].access), lists[j]->fwd[i].bytes);
        for (int i = 0; i < lists[j]->n_bwd; i++)
            if (derived_bytes(&lists[j]->bwd[i].access) != lists[j]->bwd[i].bytes)
                fail_msg("%s: access moves %.0f bytes, priced %.0f", lists[j]->bwd[i].name,
                         derived_bytes(&lists[j]->bwd[i].access), lists[j]->bwd[i].bytes);
    }
    const ew_access *a = &find(&lay, "rmsnorm.mul_weight")->access;
    assert_int_equal(a->pattern, EW_OFFSETS);
    assert_true(a->n[1] == 4096 && a->n[2] == 4096 && a->stride[2][1] == 0 && a->stride[2][2] == 1);
    a = &find(&lay, "rmsnorm.mul_rstd")->access;
    assert_int_equal(a->pattern, EW_OFFSETS);
    assert_true(a->esize[0] == 4 && a->stride[2][1] == 1 && a->stride[2][2] == 0);
    assert_int_equal(find(&lay, "rmsnorm.to_fp32")->access.pattern, EW_UNROLLED);
    assert_int_equal(find(&lay, "rmsnorm.to_bf16")->access.pattern, EW_VECTORIZED);
    assert_int_equal(find(&lay, "rmsnorm.mean")->access.pattern, EW_REDUCE_ROW);
    assert_int_equal(find(&lay, "rmsnorm.bwd.sum_weight")->access.pattern, EW_REDUCE_COL);
    assert_int_equal(find(&lay, "rope.q.cat")->access.pattern, EW_CAT);
    assert_int_equal(find(&lay, "rope.q.bwd.add")->access.pattern, EW_VECTORIZED);
    assert_int_equal(find(&lay, "rope.q.bwd.add_mixed")->access.pattern, EW_OFFSETS);
    a = &find(&lay, "rope.q.mul")->access; /* [s, heads, d] = 4096 x 32 x 128, cos over heads */
    assert_true(a->n[0] == 4096 && a->n[1] == 32 && a->n[2] == 128);
    assert_true(a->stride[2][0] == 128 && a->stride[2][1] == 0 && a->stride[1][0] == 4096);
    assert_int_equal(find(&lay, "mlp.mul")->access.pattern, EW_VECTORIZED);
    assert_int_equal(find(&head, "loss.log_softmax")->access.pattern, EW_SOFTMAX_FWD);
    assert_int_equal(find(&head, "loss.bwd.log_softmax")->access.pattern, EW_SOFTMAX_BWD);
    /* operand spans: the q slice -x2 reads spans 4096 x 32 rows of 128 */
    a = &find(&lay, "rope.q.neg")->access;
    assert_int_equal(ew_operand_elems(a, 1), 1 + (4096L * 32 - 1) * 128 + 63);
    assert_int_equal(ew_operand_elems(a, 0), 4096L * 32 * 64);
}

/* FSDP2's copies of one Llama-3.1-8B layer unit over 4 ranks: p = 218,112,000 parameters, n =
 * 54,528,000 per rank = 833 chunks of 65536 -> 3 foreach launches; copy-in 6n = 327,168,000 and
 * 4n = 218,112,000 bytes, copy-out 4 x 4n = 872,448,000, reduce-scatter copy-in 6 x 4n =
 * 1,308,672,000. The root unit (2 x 525,336,576 + 4096 = 1,050,677,248 parameters): n =
 * 262,669,312 = 4009 chunks -> 13 launches. A step (32 layers and the root, each gathered twice,
 * reduced once) = the profile's 218 + 218 foreach, 66 copy-out and 33 chunk_cat launches and
 * 24.09 + 16.06 + 64.24 + 48.18 = 152.57 GB: 0.06313 s at the eager rate. */
static void test_fsdp2_copies(void **state)
{
    (void)state;
    fsdp_copies c;
    fsdp_copies_unit(218112000.0, 4, &c);
    assert_int_equal(c.cast_in.count, 3);
    assert_int_equal(c.slot_in.count, 3);
    assert_true(c.cast_in.bytes * 3 == 327168000.0 && c.slot_in.bytes * 3 == 218112000.0);
    assert_true(c.copy_out.bytes == 872448000.0 && c.copy_out.count == 1);
    assert_true(c.rs_cast.bytes == 1308672000.0 && c.rs_cast.count == 1);
    assert_int_equal(c.cast_in.access.pattern, EW_FOREACH_COPY);
    assert_true(c.cast_in.access.esize[0] == 2 && c.cast_in.access.esize[1] == 4);
    assert_int_equal(c.copy_out.access.pattern, EW_SPLIT_COPY);
    assert_true(c.copy_out.access.n[1] == 4 && c.copy_out.access.n[2] == 54528000);
    assert_int_equal(c.rs_cast.access.pattern, EW_CHUNK_CAT);
    assert_true(c.rs_cast.access.esize[0] == 4 && c.rs_cast.access.esize[1] == 2);
    fsdp_copies r;
    fsdp_copies_unit(1050677248.0, 4, &r);
    assert_int_equal(r.cast_in.count, 13);
    double gathers = 2;
    double in = gathers * (32 * 6 * 54528000.0 + 6 * 262669312.0);
    double slot = gathers * (32 * 4 * 54528000.0 + 4 * 262669312.0);
    double out = gathers * 4 * 4 * (32 * 54528000.0 + 262669312.0);
    double rs = 6 * (32 * 218112000.0 + 1050677248.0);
    assert_true(in == 24090783744.0 && slot == 16060522496.0);
    assert_true(out == 64242089984.0 && rs == 48181567488.0);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    double t = 32 * (gathers * (fsdp_copy_in_s(&s, &c) + fsdp_copy_out_s(&s, &c)) +
                     fsdp_rs_copy_in_s(&s, &c)) +
               gathers * (fsdp_copy_in_s(&s, &r) + fsdp_copy_out_s(&s, &r)) +
               fsdp_rs_copy_in_s(&s, &r);
    double want = (in + slot + out + rs) / 2.448e12 + (218 + 218 + 66 + 33) * 1.5e-6;
    assert_true(fabs(t - want) < 1e-12);
    assert_true(fabs(want - 0.0631289) < 1e-6);
}

/* One GPU (fsdp_copies.h fsdp_copies_of): FSDP2's unshard skips the all-gather and fills the
 * unsharded bf16 parameters from the fp32 shards on the compute stream, a cast (read 4, write 2
 * bytes) and a copy (read 2, write 2) a parameter. One Llama-3.1-8B layer (218,112,000
 * parameters) on one GPU: no copy-in; the copy-out 10 x 218,112,000 = 2.18112 GB at the
 * streaming rate 4.8e12 x 0.90 = 4.32e12 B/s, 0.504889 ms (before: no unshard, the copy-in's
 * 10 bytes a parameter at the eager rate and the copy-out's 4, 0.891 + 0.356 ms). On four GPUs,
 * and for fsdp_copies_unit's one-rank list (the backend's, torch pipelining's), both stay as
 * test_fsdp2_copies and test_fsdp2_pipelined have them. */
static void test_fsdp2_one_rank(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.hbm_efficiency = 0.90;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    fsdp_copies c;
    fsdp_copies_of(&l, 218112000.0, &c);
    assert_true(c.one_gpu);
    assert_true(fsdp_copy_in_s(&s, &c) == 0);
    double out = fsdp_copy_out_s(&s, &c);
    assert_true(fabs(out - 2181120000.0 / 4.32e12) < 1e-12);
    assert_true(fabs(out - 0.000504889) < 1e-9);
    /* the one-rank reduce-scatter's copy (fsdp_copies.h): 8 x 218,112,000 B at 4.32e12 B/s */
    double rs = fsdp_rs_one_rank_s(&s, &c);
    assert_true(fabs(rs - 1744896000.0 / 4.32e12) < 1e-12);
    assert_true(fabs(rs - 0.000403911) < 1e-9);
    l.dp = 4;
    fsdp_copies_of(&l, 4 * 218112000.0, &c);
    assert_false(c.one_gpu);
    assert_true(fabs(fsdp_copy_out_s(&s, &c) - (4 * 872448000.0 / 2.448e12 + 1.5e-6)) < 1e-12);
    assert_true(fsdp_copy_in_s(&s, &c) > 0);
    assert_true(fsdp_rs_one_rank_s(&s, &c) == 0);
    fsdp_copies_unit(218112000.0, 1, &c);
    assert_false(c.one_gpu);
    assert_true(fabs(fsdp_copy_out_s(&s, &c) - (872448000.0 / 2.448e12 + 1.5e-6)) < 1e-12);
}

/* torch pipelining (fsdp_copies.h): one Llama-3.1-8B layer (218,112,000 parameters) on a
 * one-rank FSDP mesh, 8 micro-batches: the copy-out once per step (4 bytes a parameter), and
 * per step one fp32 cast (6), seven fp32 += bf16 adds (10 each) and one fp32 chunk_cat (8):
 * (6 + 70 + 8) x 218,112,000 = 18.32 GB at 4.8e12 x 0.51 = 2.448e12 B/s, 7.484 ms a step plus a
 * launch gap each (9 x 1.5 us), 0.937 ms a micro-batch; the copy-out 0.8724 GB, 0.356 ms +
 * 1.5 us a step, 0.0447 ms a micro-batch. */
static void test_fsdp2_pipelined(void **state)
{
    (void)state;
    fsdp_copies c;
    fsdp_copies_unit(218112000.0, 1, &c);
    assert_true(c.acc_cast.bytes == 6 * 218112000.0 && c.acc_add.bytes == 10 * 218112000.0);
    assert_true(c.rs_copy.bytes == 8 * 218112000.0);
    assert_int_equal(c.acc_add.access.pattern, EW_UNROLLED);
    assert_true(c.acc_add.access.esize[0] == 4 && c.acc_add.access.esize[2] == 2);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    double grad = fsdp_pipelined_grad_s(&s, &c, 8);
    double want = (84 * 218112000.0 / 2.448e12 + 9 * 1.5e-6) / 8;
    assert_true(fabs(grad - want) < 1e-12);
    assert_true(fabs(grad - 0.000937) < 1e-6);
    double out = fsdp_pipelined_copy_out_s(&s, &c, 8);
    assert_true(fabs(out - (872448000.0 / 2.448e12 + 1.5e-6) / 8) < 1e-12);
    /* a torchtitan pipeline layout runs this way, a data-parallel FSDP2 one does not */
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.sharding = SHARDING_FSDP;
    assert_false(fsdp_pipelined(&l));
    l.pp = 4;
    assert_true(fsdp_pipelined(&l));
}

/* Issue 14: the loss's log_softmax over fp32 rows of the vocabulary (softmax_rows.h). H200
 * figures (4.8 TB/s, eager alone 0.59, gap 1.5 us, 132 SMs, L2 50 MiB, softmax_rows 0.851).
 * Gemma-2-27B's 256,000 vocabulary at 8192 tokens (e = 2,097,152,000 logits): the forward's
 * 1024-thread blocks, two an SM, hold 264 rows x 1,024,000 bytes > L2, so it moves 16 bytes a
 * logit: 33,554,432,000 / (4.8e12 x 0.851) + 1.5 us = 8.2160 ms (measured in the real steps of
 * bench/results/ho21_2026-11-29/prof: 8.07 and 8.65 ms; priced before at 8 bytes and 0.59:
 * 5.92 ms); the backward the same 16 bytes (measured 8.26, 8.30 ms; before 8.89 ms). Phi-3's
 * 32,064 at 8192 tokens (e = 262,668,288): the forward's 264 rows x 128,256 bytes fit L2 and
 * keep 8 bytes at the eager rate (2,101,346,304 / 2.832e12 + 1.5 us = 0.74351 ms, measured
 * 0.839); the backward's 512-thread blocks, four an SM, hold 528 rows (67.7 MB) and move 16
 * (4,202,692,608 / 4.0848e12 + 1.5 us = 1.03035 ms, measured 1.096). */
static void test_loss_softmax_rows(void **state)
{
    (void)state;
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_elementwise_efficiency_alone = 0.59;
    s.eager_kernel_gap_s = 1.5e-6;
    s.sm_count = 132;
    s.l2_bytes = 52428800;
    s.softmax_rows_efficiency = 0.851;
    struct { double vocab, fwd_s, bwd_s; } c[] = {{256000, 8.2160e-3, 8.2160e-3},
                                                  {32064, 0.74351e-3, 1.03035e-3}};
    for (int i = 0; i < 2; i++) {
        model_spec m = llama8b();
        m.vocab = (long)c[i].vocab;
        layout l = one_gpu(FRAMEWORK_FSDP2);
        elementwise_list e;
        elementwise_head(&m, &l, 8192, &e);
        double f = -1, b = -1;
        for (int j = 0; j < e.n_fwd; j++)
            if (!strcmp(e.fwd[j].name, "loss.log_softmax")) f = elementwise_kernel_s(&s, &e, &e.fwd[j]);
        for (int j = 0; j < e.n_bwd; j++)
            if (!strcmp(e.bwd[j].name, "loss.bwd.log_softmax"))
                b = elementwise_kernel_s(&s, &e, &e.bwd[j]);
        if (fabs(f - c[i].fwd_s) > 1e-4 * c[i].fwd_s || fabs(b - c[i].bwd_s) > 1e-4 * c[i].bwd_s)
            fail_msg("vocab %.0f: log_softmax %.6g / %.6g s, by hand %.6g / %.6g", c[i].vocab, f, b,
                     c[i].fwd_s, c[i].bwd_s);
    }
    /* beside NCCL (4 GPUs) the same 8.2160 ms: these kernels ran at their one-GPU rate in the
     * 4-GPU FSDP2 step (2.016 / 2.143 ms there, 2.019 / 2.127 alone: softmax_rows.c); the other
     * eager kernels take the step's rate */
    model_spec m = llama8b();
    m.vocab = 256000;
    layout l4 = one_gpu(FRAMEWORK_FSDP2);
    l4.dp = 4;
    elementwise_list e;
    elementwise_head(&m, &l4, 8192, &e);
    assert_false(e.alone);
    for (int j = 0; j < e.n_fwd; j++)
        if (!strcmp(e.fwd[j].name, "loss.log_softmax"))
            assert_true(fabs(elementwise_kernel_s(&s, &e, &e.fwd[j]) - 8.2160e-3) < 1e-6);
    /* without the L2 size the list's bytes at the eager rate stand */
    s.l2_bytes = 0;
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_head(&m, &l, 8192, &e);
    for (int j = 0; j < e.n_fwd; j++)
        if (!strcmp(e.fwd[j].name, "loss.log_softmax"))
            assert_true(fabs(elementwise_kernel_s(&s, &e, &e.fwd[j]) - 5.9253e-3) < 1e-6);
}

/* ERNIE-4.5 under transformers rotates q and k in fp32 with interleaved halves
 * (costmodel/hf_ernie_rope.h): 52 bytes an element forward and 60 backward against Llama's 20
 * and 34, in 8 and 13 launches per tensor against 5 and 10. ERNIE-4.5-0.3B's attention (q 16 x
 * 128 = 2048, k 2 x 128 = 256) over T tokens: forward + 32 x T x 2304 = 301989888 bytes and 6
 * launches more than the same layer as Llama's, backward + 26 x T x 2304 = 245366784 and 6. */
static void test_ernie_fp32_rope(void **state)
{
    (void)state;
    model_spec m = llama8b();
    m.hidden = 1024, m.heads = 16, m.kv_heads = 2, m.ffn = 3072, m.vocab = 103424;
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list llama, ernie;
    elementwise_layer(&m, &l, T, false, &llama);
    snprintf(m.hf_model_type, sizeof m.hf_model_type, "ernie4_5");
    elementwise_layer(&m, &l, T, false, &ernie);
    assert_true(elementwise_bytes(ernie.fwd, ernie.n_fwd) -
                    elementwise_bytes(llama.fwd, llama.n_fwd) == 301989888.0);
    assert_true(elementwise_bytes(ernie.bwd, ernie.n_bwd) -
                    elementwise_bytes(llama.bwd, llama.n_bwd) == 245366784.0);
    assert_int_equal(elementwise_launches(ernie.fwd, ernie.n_fwd) -
                         elementwise_launches(llama.fwd, llama.n_fwd), 6);
    assert_int_equal(elementwise_launches(ernie.bwd, ernie.n_bwd) -
                         elementwise_launches(llama.bwd, llama.n_bwd), 6);
    int c; /* q.float() * cos and rot.float() * sin: fp32, 8 bytes an element each */
    assert_true(named(ernie.fwd, ernie.n_fwd, "rope.ernie.q.mul", &c) == 8 * T * 2048);
    assert_int_equal(c, 2);
    for (int i = 0; i < ernie.n_fwd; i++) assert_true(strcmp(ernie.fwd[i].name, "rope.q.mul"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm_bytes),   cmocka_unit_test(test_rms_norm_unfused),
        cmocka_unit_test(test_llama8b_layer),
        cmocka_unit_test(test_sharding_halves), cmocka_unit_test(test_loss_head),
        cmocka_unit_test(test_megatron_fused),  cmocka_unit_test(test_access_patterns),
        cmocka_unit_test(test_fsdp2_pipelined),
        cmocka_unit_test(test_fsdp2_one_rank),
        cmocka_unit_test(test_fsdp2_copies),
        cmocka_unit_test(test_loss_parallel),
        cmocka_unit_test(test_sp_funcol_copies),
        cmocka_unit_test(test_loss_softmax_rows),
        cmocka_unit_test(test_ernie_fp32_rope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
