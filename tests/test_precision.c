/*
 * test_precision.c — low precision as a layout dimension (issue 16, costmodel/precision.h):
 * each recipe's GEMM rate, quantize kernels and memory against hand-worked numbers, the rules
 * (which GPU and framework runs which format), and the layout codec's precision fields.
 *
 * Hand numbers use Llama-3.1-8B (h 4096, 32 heads of 128, 8 KV groups, SwiGLU ffn 14336, 32
 * layers) at seq 4096, mbs 1, tp 1: per layer the Linears are qkv 6144x4096, attn_out 4096x4096,
 * mlp_up 28672x4096, mlp_down 4096x14336, i.e. sum(in) = 26624, sum(out) = 43008 and
 * sum(out*in) = 218,103,808 parameters; and a toy GPU with round numbers.
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

#include "compute.h"
#include "layer_recipe.h"
#include "layout_codec.h"
#include "memory.h"
#include "precision.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static model_spec load_model(const char *name)
{
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load(name, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

static system_spec load_system(const char *name)
{
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load(name, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return s;
}

/* Round numbers: bf16 1 PFLOP/s, fp8 2 PFLOP/s, GEMMs at 0.5, HBM 2 TB/s at 1.0, no overhead. */
static system_spec toy(void)
{
    system_spec s = load_system("h100");
    s.peak_bf16_flops_per_s = 1e15;
    s.peak_fp8_flops_per_s = 2e15;
    s.peak_fp4_flops_per_s = 4e15;
    s.gemm_efficiency_max = 0.5;
    s.gemm_overhead_s = 0;
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.hbm_efficiency = 1.0;
    s.tdp_w = s.power_limit_w = 0; /* no power cap */
    return s;
}

static layout megatron_fp8(layout_fp8_recipe r)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = r;
    return l;
}

static double op_time(const recipe *r, const char *name, bool bwd)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return bwd ? r->op[i].bwd_s : r->op[i].fwd_s;
    fail_msg("no op %s", name);
    return 0;
}

static bool has_op(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return true;
    return false;
}

/* 8192^3 FP8 GEMM, tensorwise: 2*8192^3 = 1,099,511,627,776 FLOPs at 2e15 x 0.5 x 0.9135
 * (precision.c, measured on H100) = 1.20362e-3 s; bf16 at 1e15 x 0.5 = 2.19902e-3 s. NVFP4 at
 * 4e15: half the FP8 time. The memory term (8192^2 x (1 + 1 + 2) bytes / 2e12 = 1.3e-4 s)
 * stays below. */
static void test_gemm_rates(void **state)
{
    (void)state;
    system_spec s = toy();
    layout l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    precision_rules pr;
    precision_rules_of(&l, &pr);
    assert_true(REL(pr.gemm_efficiency_ratio, 0.9135) < 1e-12);
    double n = 8192;
    double fp8 = compute_gemm_lp_s(&s, precision_peak_flops(&s, &l), pr.gemm_efficiency_ratio,
                                   pr.operand_bytes, n, n, n);
    assert_true(REL(fp8, 1099511627776.0 / 9.135e14) < 1e-12);
    assert_true(REL(compute_gemm_s(&s, n, n, n), 1099511627776.0 / 5e14) < 1e-12);
    l.precision = PRECISION_NVFP4;
    l.fp8_recipe = FP8_RECIPE_DEFAULT;
    precision_rules_of(&l, &pr);
    double fp4 = compute_gemm_lp_s(&s, precision_peak_flops(&s, &l), pr.gemm_efficiency_ratio,
                                   pr.operand_bytes, n, n, n);
    assert_true(REL(fp4, fp8 / 2) < 1e-12);
    /* blockwise on Hopper: the main-loop scales cost 0.8265 / 0.9135 of the rate */
    l = megatron_fp8(FP8_RECIPE_BLOCKWISE);
    precision_rules_of(&l, &pr);
    double blk = compute_gemm_lp_s(&s, precision_peak_flops(&s, &l), pr.gemm_efficiency_ratio,
                                   pr.operand_bytes, n, n, n);
    assert_true(REL(blk, 1099511627776.0 / 8.265e14) < 1e-12);
}

/* Quantize kernels of one 8B layer, delayed scaling (TE cast-transpose, 4 bytes per element of
 * X, W forward and dY backward), T = 4096 tokens:
 *   forward  4 T sum(in) + 4 sum(out*in) = 4*4096*26624 + 4*218103808 = 1,308,622,848 bytes
 *   backward 4 T sum(out) = 4*4096*43008 = 704,643,072 bytes
 * at 2e12 B/s: 6.54311424e-4 s and 3.52321536e-4 s. Tensorwise under FSDP2 on one data-parallel
 * shard (torchao: amax pass + cast, the backward casts again; no float8 all-gather there):
 * forward 5 T sum(in) + 5 sum(out*in) = 1,635,778,560; backward 5 T sum(in) + 5 sum(out*in) +
 * 8 T sum(out) = 1,635,778,560 + 1,409,286,144, at the eager elementwise rate (torchao's casts
 * under Inductor, recipe_builder.c: 2e12 x 0.5 here). On 8 shards the float8 all-gather casts
 * each weight on its shard (precision.c torchao_fsdp_float8_gather): the weight terms / 8,
 * forward 545,259,520 + 136,314,880 = 681,574,400, backward (gathered again, reshard after
 * forward) 545,259,520 + 136,314,880 + 1,409,286,144 = 2,090,860,544.
 * Rowwise under torchtitan (torchao axiswise, each operand cast once per GEMM that reads it,
 * 5 bytes each time): forward as tensorwise, backward 5 T sum(in) + 5 sum(out*in) +
 * 10 T sum(out) = 1,635,778,560 + 1,761,607,680. Under Megatron (TE current scaling: amax
 * pass + cast-transpose, 6 bytes, streaming at 2e12): forward 6 T sum(in) + 6 sum(out*in) =
 * 1,962,934,272; backward 6 T sum(out) = 1,056,964,608. */
static void test_quantize_kernels(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = toy();
    training_spec t = training_default();
    recipe r;
    layout l = megatron_fp8(FP8_RECIPE_DELAYED);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 1308622848.0 / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 704643072.0 / 2e12) < 1e-12);
    l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 1962934272.0 / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 1056964608.0 / 2e12) < 1e-12);
    l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 1;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    s.eager_elementwise_efficiency = 0.5;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 1635778560.0 / 1e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), (1635778560.0 + 1409286144.0) / 1e12) <
                1e-12);
    precision_rules pr;
    precision_rules_of(&l, &pr);
    assert_true(pr.gather_bytes == 2.0); /* one shard: no float8 all-gather */
    l.dp = 8;
    assert_true(l.reshard_after_forward && l.sharding == SHARDING_FSDP);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 681574400.0 / 1e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 2090860544.0 / 1e12) < 1e-12);
    precision_rules_of(&l, &pr);
    assert_true(pr.gather_bytes == 1.0);
    l.framework = FRAMEWORK_TORCHTITAN;
    l.fp8_recipe = FP8_RECIPE_DEFAULT; /* torchtitan's: rowwise */
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 1635778560.0 / 1e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), (1635778560.0 + 1761607680.0) / 1e12) <
                1e-12);
    /* rowwise is torchao's: Transformer Engine refuses it */
    layout mr = megatron_fp8(FP8_RECIPE_ROWWISE);
    char err[CM_ERRLEN];
    assert_int_not_equal(precision_check(&s, &mr, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "rowwise scaling is torchao's"));
    /* bf16: no quantize ops, and the output layer stays bf16 under fp8 */
    layout b = layout_default(FRAMEWORK_MEGATRON);
    recipe_layer(&m, &s, &t, &b, false, &r, NULL);
    assert_false(has_op(&r, "lp.quantize"));
    recipe head_bf16, head_fp8;
    recipe_head(&m, &s, &t, &b, &head_bf16, NULL);
    recipe_head(&m, &s, &t, &l, &head_fp8, NULL);
    assert_true(op_time(&head_bf16, "lm_head", false) == op_time(&head_fp8, "lm_head", false));
}

/* The same 8B layer on a Blackwell GPU (the toy system named B200): Transformer Engine's
 * per-tensor FP8 writes no transpose there (precision.c, prec7), one byte less per element of
 * X, W and dY: delayed 3 T sum(in) + 3 sum(out*in) = 3*4096*26624 + 3*218103808 = 981,467,136
 * forward, 3 T sum(out) = 528,482,304 backward; Megatron's tensorwise (amax 2 + cast 3)
 * 5 x the same = 1,635,778,560 and 880,803,840. MXFP8 keeps both copies (4 + 2/32, unchanged). */
static void test_quantize_kernels_blackwell(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = toy();
    snprintf(s.gpu_name, sizeof s.gpu_name, "B200-toy");
    training_spec t = training_default();
    static recipe r;
    layout l = megatron_fp8(FP8_RECIPE_DELAYED);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 981467136.0 / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 528482304.0 / 2e12) < 1e-12);
    l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 1635778560.0 / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 880803840.0 / 2e12) < 1e-12);
    l.precision = PRECISION_MXFP8;
    l.fp8_recipe = FP8_RECIPE_DEFAULT;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    double e = 4.0 + 2.0 / 32;
    assert_true(REL(op_time(&r, "lp.quantize", false),
                    e * (4096.0 * 26624 + 218103808.0) / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), e * 4096.0 * 43008 / 2e12) < 1e-12);
}

/* Transformer Engine 2.9's scale swizzles (precision.c "Scale swizzles"), one 8B layer at T = 4096
 * on the toy Blackwell, swizzles at 1e12 B/s with a 1 us floor. MXFP8 scales are elements / 32
 * bytes, read and written: a kernel of E elements takes max(1e-6, E / 16e12) s. Every operand
 * here has at least 4096 x 4096 = 16,777,216 elements (1.048576e-6 s), so the floor never binds:
 *   forward  (X, W of 4 Linears)  (T sum(in) + sum(out*in)) / 16e12
 *            = (109,051,904 + 218,103,808) / 16e12 = 2.0447232e-5 s
 *   backward (dY twice, W, X)     (2 T sum(out) + sum(out*in) + T sum(in)) / 16e12
 *            = (352,321,536 + 327,155,712) / 16e12 = 4.2467328e-5 s
 * on top of test_quantize_kernels_blackwell's MXFP8 bytes. With a 1 ms floor every kernel takes
 * it: 8 forward, 16 backward. NVFP4 scales are elements / 16 (twice the time), per-tensor FP8
 * has none, and a system without the profile fields pays none. */
static void test_scale_swizzle(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = toy();
    snprintf(s.gpu_name, sizeof s.gpu_name, "B200-toy");
    training_spec t = training_default();
    static recipe r;
    layout l = megatron_fp8(FP8_RECIPE_DEFAULT);
    l.precision = PRECISION_MXFP8;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    double qf = op_time(&r, "lp.quantize", false), qb = op_time(&r, "lp.quantize_bwd", true);
    s.scale_swizzle_kernel_s = 1e-6;
    s.scale_swizzle_bytes_per_s = 1e12;
    assert_true(REL(precision_scale_swizzle_s(&s, &l, 4096.0 * 4096), 1.048576e-6) < 1e-12);
    assert_true(REL(precision_scale_swizzle_s(&s, &l, 1024.0), 1e-6) < 1e-12);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), qf + 2.0447232e-5) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), qb + 4.2467328e-5) < 1e-12);
    s.scale_swizzle_kernel_s = 1e-3;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), qf + 8e-3) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), qb + 16e-3) < 1e-12);
    l.precision = PRECISION_NVFP4;
    s.scale_swizzle_kernel_s = 0;
    assert_true(REL(precision_scale_swizzle_s(&s, &l, 4096.0 * 4096), 2 * 1.048576e-6) < 1e-12);
    l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    assert_true(precision_scale_swizzle_s(&s, &l, 4096.0 * 4096) == 0);
    l.precision = PRECISION_MXFP8;
    l.fp8_recipe = FP8_RECIPE_DEFAULT;
    s.scale_swizzle_bytes_per_s = 0;
    assert_true(precision_scale_swizzle_s(&s, &l, 4096.0 * 4096) == 0);
}

/* Megatron with TE quantizes a Linear's SP input before gathering it (recipe_tp.c, TE linear.py
 * _linear_forward): 8B at TP 2 with SP, 4096 tokens, FP8: the forward's two gathers (attention,
 * MLP) move 4096 x 4096 x 1 byte = 16,777,216 each, MXFP8 x (1 + 1/32) = 17,301,504; a bf16
 * plan gathers 33,554,432. Backward (Megatron without userbuffers, since bw13: recipe_tp.c
 * tp_nccl_block): the row-parallel Linear's output gradient is gathered quantized, FP8 its
 * rowwise copy (16,777,216), MXFP8 both copies (2 x 17,301,504 = 34,603,008: TE base.py
 * grad_output_preprocess with the quantizer, usage rowwise and columnwise), bf16 33,554,432;
 * the column-parallel Linear's input for its wgrad (tp.sp_gather_wgrad) as the forward's. */
static void test_tp_gather_quantized(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = toy();
    training_spec t = training_default();
    static recipe r;
    static recipe_items it;
    const double want[3][2] = {{16777216.0, 16777216.0}, {17301504.0, 34603008.0},
                               {33554432.0, 33554432.0}};
    const layout_precision p[3] = {PRECISION_FP8, PRECISION_MXFP8, PRECISION_BF16};
    for (int k = 0; k < 3; k++) {
        layout l = layout_default(FRAMEWORK_MEGATRON);
        l.tp = 2, l.dp = 4, l.sp = true, l.tp_comm_overlap = false;
        l.precision = p[k];
        l.fp8_recipe = p[k] == PRECISION_FP8 ? FP8_RECIPE_TENSORWISE : FP8_RECIPE_DEFAULT;
        recipe_layer(&m, &s, &t, &l, false, &r, &it);
        int n[2] = {0, 0}, nw = 0;
        for (int i = 0; i < it.n; i++) {
            if (!strcmp(it.item[i].name, "tp.sp_gather_wgrad")) {
                assert_true(it.item[i].phase == RECIPE_BWD && it.item[i].bytes == want[k][0]);
                nw++;
            }
            if (strcmp(it.item[i].name, "tp.sp_gather")) continue;
            int bwd = it.item[i].phase == RECIPE_BWD;
            if (it.item[i].phase == RECIPE_RECOMPUTE) continue;
            assert_true(it.item[i].bytes == want[k][bwd]);
            n[bwd]++;
        }
        assert_int_equal(n[0], 2);
        assert_int_equal(n[1], 2);
        assert_int_equal(nw, 2);
    }
}

/* Transformer Engine's NVFP4 under Megatron's SP (precision.c "NVFP4 under SP", nvfp14): the 8B
 * layer at T = 4096, TP 2, on the toy Blackwell (HBM 2e12 B/s). The Linears at TP 2: qkv
 * 3072 x 4096, attn_out 4096 x 2048, mlp_up 14336 x 4096, mlp_down 4096 x 7168; NVFP4 moves
 * e = 2 + 0.5 + 0.5 + 2/16 = 5.125 bytes per element of X, W and dY. TE casts the column-parallel
 * inputs (qkv, mlp_up: 4096 wide) and the row-parallel output gradients (attn_out, mlp_down:
 * 4096 wide) on their sequence shard, T / 2 rows:
 *   forward  e (T (2048 + 2048 + 2048 + 7168) + sum(out*in) / 2)
 *            = 5.125 (54,525,952 + 109,051,904) = 838,336,512 bytes
 *   backward e T (3072 + 2048 + 14336 + 2048) = 5.125 x 88,080,384 = 451,411,968 bytes
 * plus, without userbuffers, the reorder of the four gathered columnwise copies (qkv and mlp_up
 * inputs, attn_out and mlp_down output gradients, T x 4096 each), read and written at
 * 0.5 + 1/16: 1.125 x 4 x 4096 x 4096 = 75,497,472 bytes, 526,909,440 in all. Before nvfp14
 * the full rows were cast (forward 5.125 (T 17408 + 109,051,904) = 924,319,744, backward
 * 5.125 T 25600 = 537,395,200) and no reorder was charged. */
static void test_nvfp4_sp_shard(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = toy();
    snprintf(s.gpu_name, sizeof s.gpu_name, "B200-toy");
    training_spec t = training_default();
    static recipe r;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2, l.dp = 4, l.sp = true, l.tp_comm_overlap = false;
    l.precision = PRECISION_NVFP4;
    assert_true(REL(precision_sp_shard_frac(&l), 0.5) < 1e-15);
    assert_true(REL(precision_sp_gather_fixup_bytes(&l), 1.125) < 1e-15);
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 838336512.0 / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 526909440.0 / 2e12) < 1e-12);
    l.tp_comm_overlap = true; /* userbuffers: the shard casts stay, no reorder priced */
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(REL(op_time(&r, "lp.quantize", false), 838336512.0 / 2e12) < 1e-12);
    assert_true(REL(op_time(&r, "lp.quantize_bwd", true), 451411968.0 / 2e12) < 1e-12);
    l.precision = PRECISION_MXFP8; /* other recipes: not priced, the full rows as before */
    assert_true(precision_sp_shard_frac(&l) == 1.0 && precision_sp_gather_fixup_bytes(&l) == 0);
    l.precision = PRECISION_NVFP4, l.sp = false, l.tp_comm_overlap = false;
    assert_true(precision_sp_shard_frac(&l) == 1.0 && precision_sp_gather_fixup_bytes(&l) == 0);
    l.sp = true, l.tp = 1;
    assert_true(precision_sp_shard_frac(&l) == 1.0 && precision_sp_gather_fixup_bytes(&l) == 0);
}

/* Memory of 8B on one stage (tp 1, pp 1, distributed optimizer), delayed scaling: TE keeps the
 * FP8 weight and its transpose beside the bf16 weight, 2 bytes per Linear parameter,
 * 32 x 218,103,808 x 2 = 13,958,643,712 bytes, plus the amax history 3 x 1024 x 4 bytes for
 * each of 4 Linears in 32 layers = 1,572,864 bytes. Activations per layer: the QKV and FC1
 * inputs (h each) and the FC2 input (ffn) saved at 1 byte instead of 2, the projection's own
 * FP8 copy of the attention output (32 x 128) added: T x (-4096 - 4096 - 14336 + 4096) =
 * 4096 x -18432 = -75,497,472 bytes. */
static void test_memory_delayed(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout b = layout_default(FRAMEWORK_MEGATRON);
    b.dp = 8;
    layout l = megatron_fp8(FP8_RECIPE_DELAYED);
    memory_breakdown mb = memory_stage(&m, &s, &t, &b, 0);
    memory_breakdown ml = memory_stage(&m, &s, &t, &l, 0);
    assert_true(REL(ml.weights_bytes - mb.weights_bytes, 13958643712.0 + 1572864.0) < 1e-12);
    assert_true(ml.optimizer_bytes == mb.optimizer_bytes);
    assert_true(ml.gradients_bytes == mb.gradients_bytes);
    double act_b = memory_layer_activation_bytes(&m, &t, &b, 0);
    double act_l = memory_layer_activation_bytes(&m, &t, &l, 0);
    assert_true(REL(act_l - act_b, -75497472.0) < 1e-12);
}

/* FSDP2 with torchao tensorwise: the bf16 input is saved (no activation change), no weight
 * copy, and the Linear weights are all-gathered in FP8: the two gathered units in flight
 * (current + prefetch) hold 1 byte less per Linear parameter, 2 x 218,103,808 bytes. */
static void test_memory_fsdp2_float8_all_gather(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout b = layout_default(FRAMEWORK_FSDP2);
    b.dp = 8;
    layout l = b;
    l.precision = PRECISION_FP8; /* default recipe under fsdp2: tensorwise */
    assert_int_equal(precision_fp8_recipe(&l), FP8_RECIPE_TENSORWISE);
    memory_breakdown mb = memory_stage(&m, &s, &t, &b, 0);
    memory_breakdown ml = memory_stage(&m, &s, &t, &l, 0);
    assert_true(REL(ml.comm_buffer_bytes - mb.comm_buffer_bytes, -436207616.0) < 1e-12);
    assert_true(ml.weights_bytes == mb.weights_bytes);
    assert_true(memory_layer_activation_bytes(&m, &t, &l, 0) ==
                memory_layer_activation_bytes(&m, &t, &b, 0));
}

/* Which GPU and framework runs which format. */
static void test_rules(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    system_spec h100 = load_system("h100"), b200 = load_system("b200");
    system_spec a100 = load_system("a100-80g");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    assert_int_equal(precision_check(&a100, &l, err, sizeof err), CM_OK);
    l.precision = PRECISION_FP8;
    assert_int_equal(precision_check(&h100, &l, err, sizeof err), CM_OK);
    assert_int_not_equal(precision_check(&a100, &l, err, sizeof err), CM_OK);
    l.precision = PRECISION_NVFP4;
    assert_int_not_equal(precision_check(&h100, &l, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "Blackwell"));
    assert_int_equal(precision_check(&b200, &l, err, sizeof err), CM_OK);
    l.precision = PRECISION_MXFP8;
    assert_int_equal(precision_check(&b200, &l, err, sizeof err), CM_OK);
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE; /* a recipe only fp8 takes */
    assert_int_not_equal(precision_check(&b200, &l, err, sizeof err), CM_OK);
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.precision = PRECISION_FP8;
    f.fp8_recipe = FP8_RECIPE_DELAYED; /* torchao has no delayed scaling */
    assert_int_not_equal(precision_check(&h100, &f, err, sizeof err), CM_OK);
    f.precision = PRECISION_NVFP4;
    f.fp8_recipe = FP8_RECIPE_DEFAULT;
    assert_int_not_equal(precision_check(&b200, &f, err, sizeof err), CM_OK);
    /* the recipe the frameworks default to */
    layout d = megatron_fp8(FP8_RECIPE_DEFAULT);
    assert_int_equal(precision_fp8_recipe(&d), FP8_RECIPE_DELAYED);
    assert_string_equal(precision_label(&d), "fp8-delayed");
}

/* The codec: bf16 layouts write no precision keys (their JSON is what it was); fp8 layouts
 * write both and read back equal; the short name carries the format. */
static void test_codec(void **state)
{
    (void)state;
    layout b = layout_default(FRAMEWORK_MEGATRON);
    json_t *j = layout_to_json(&b);
    assert_null(json_object_get(j, "precision"));
    assert_null(json_object_get(j, "fp8_recipe"));
    json_decref(j);
    layout l = megatron_fp8(FP8_RECIPE_BLOCKWISE);
    j = layout_to_json(&l);
    assert_string_equal(json_string_value(json_object_get(j, "precision")), "fp8");
    assert_string_equal(json_string_value(json_object_get(j, "fp8_recipe")), "blockwise");
    layout back;
    char err[CM_ERRLEN];
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_true(layout_equal(&back, &l));
    assert_false(layout_equal(&back, &b));
    json_decref(j);
    char name[200];
    layout_short_name(&l, name, sizeof name);
    assert_non_null(strstr(name, " fp8-blockwise"));
    l.fp8_recipe = FP8_RECIPE_DEFAULT;
    j = layout_to_json(&l); /* the resolved recipe is written */
    assert_string_equal(json_string_value(json_object_get(j, "fp8_recipe")), "delayed");
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_int_equal(back.fp8_recipe, FP8_RECIPE_DEFAULT); /* canonical: the default */
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_rates),
        cmocka_unit_test(test_quantize_kernels),
        cmocka_unit_test(test_quantize_kernels_blackwell),
        cmocka_unit_test(test_scale_swizzle),
        cmocka_unit_test(test_tp_gather_quantized),
        cmocka_unit_test(test_nvfp4_sp_shard),
        cmocka_unit_test(test_memory_delayed),
        cmocka_unit_test(test_memory_fsdp2_float8_all_gather),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
