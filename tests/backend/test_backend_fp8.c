/*
 * test_backend_fp8.c — which GEMMs plan measure runs in FP8 (issue 16): the layer recipe's
 * low-precision Linears (QKV, attention out, MLP up/down in fprop, dgrad and wgrad) become FP8
 * work items; the attention core, the output layer and the MoE router stay bf16; the recipe's
 * quantize kernels are work items of the bytes precision.c prices (hand-worked below); a bf16
 * layout has no FP8 item and no quantize kernel; the pools size FP8 operands at their padded
 * dimensions; with --fp8-recipe blockwise the same items run blockwise (scale layouts, the
 * calibrate op). No GPU needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bk_pools.h"
#include "calib.h"
#include "precision.h"
#include "test_backend_work.h"

static work_plan W8;

static const work_item *find(const work_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->item[i].name, name)) return &l->item[i];
    fail_msg("no work item '%s'", name);
    return NULL;
}

static int count_fp8(const work_list *l)
{
    int n = 0;
    for (int i = 0; i < l->n; i++) n += l->item[i].kind == WORK_GEMM && l->item[i].fp8;
    return n;
}

void test_fp8_work(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    load("8b", "h100");
    training_spec t = training_default();
    t.global_batch = 8;
    layout l = megatron(2, 4, true);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_DELAYED;
    assert_int_equal(work_plan_build(&M, &S, &t, &l, &W8, err, sizeof err), CM_OK);
    const char *lin[] = {"qkv", "attn_out", "mlp_up", "mlp_down"};
    for (int i = 0; i < 4; i++) {
        char nm[40];
        assert_true(find(&W8.layer_fwd, lin[i])->fp8);
        snprintf(nm, sizeof nm, "%s.dgrad", lin[i]);
        assert_true(find(&W8.layer_bwd, nm)->fp8);
        snprintf(nm, sizeof nm, "%s.wgrad", lin[i]);
        assert_true(find(&W8.layer_bwd, nm)->fp8);
    }
    /* exactly those 4 forward and 8 backward GEMMs: the attention core stays bf16 */
    assert_int_equal(count_fp8(&W8.layer_fwd), 4);
    assert_int_equal(count_fp8(&W8.layer_bwd), 8);
    assert_false(find(&W8.layer_fwd, "attn.qk")->fp8);
    assert_false(find(&W8.layer_bwd, "attn.bwd.dv")->fp8);
    assert_false(find(&W8.head_fwd, "lm_head")->fp8);
    assert_int_equal(count_fp8(&W8.head_bwd), 0);
    /* Delayed scaling's fused cast-transpose (precision.c): 4 bytes per element of X and W
     * forward, of dY backward. Llama-3.1-8B at TP 2, 4096 tokens (SP gathers them):
     * X: 4096 x (4096 + 2048 + 4096 + 7168) = 71303168; W: 3072x4096 + 4096x2048 +
     * 14336x4096 + 4096x7168 = 109051904; dY: 4096 x (3072 + 4096 + 14336 + 4096) = 104857600. */
    const work_item *q = find(&W8.layer_fwd, "lp.quantize");
    assert_int_equal(q->kind, WORK_STREAM);
    near(q->bytes, 4.0 * (71303168.0 + 109051904.0), 1e-12);
    near(find(&W8.layer_bwd, "lp.quantize_bwd")->bytes, 4.0 * 104857600.0, 1e-12);

    /* bf16 first/last layers cannot be run from the one layer list: refused by name */
    layout f = l;
    f.fp8_recipe = FP8_RECIPE_TENSORWISE;
    f.bf16_layers_start = 1;
    assert_int_equal(work_plan_build(&M, &S, &t, &f, &W8, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "--bf16-first-layers"));

    /* the same layout in bf16: no FP8 GEMM, no quantize kernel */
    l.precision = PRECISION_BF16;
    l.fp8_recipe = FP8_RECIPE_DEFAULT;
    assert_int_equal(work_plan_build(&M, &S, &t, &l, &W8, err, sizeof err), CM_OK);
    assert_int_equal(count_fp8(&W8.layer_fwd) + count_fp8(&W8.layer_bwd), 0);
    for (int i = 0; i < W8.layer_fwd.n; i++)
        assert_null(strstr(W8.layer_fwd.item[i].name, "lp."));

    /* MoE (Mixtral's shape, 8 layers): grouped experts in FP8, the router in bf16 */
    char path[512];
    const char *dd = getenv("PLAN_DATA_DIR");
    snprintf(path, sizeof path, "%s/../tests/models/mixtral-8x7b-8l.json", dd ? dd : "data");
    assert_int_equal(model_load(path, dd ? dd : "data", &M, err, sizeof err), CM_OK);
    layout e = megatron(1, 8, false);
    e.ep = 8;
    e.precision = PRECISION_FP8;
    e.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_int_equal(work_plan_build(&M, &S, &t, &e, &W8, err, sizeof err), CM_OK);
    assert_true(find(&W8.moe_fwd, "experts_up")->fp8);
    assert_true(find(&W8.moe_bwd, "experts_down.wgrad")->fp8);
    assert_false(find(&W8.moe_fwd, "router")->fp8);

    /* The pools hold an FP8 item's operands at their padded sizes (multiples of 16): e4m3 A
     * 112 x 1008 and B 4096 x 1008, bf16 C 112 x 4096, two batches; the bf16 item as before. */
    work_item it = {.kind = WORK_GEMM, .fp8 = true, .m = 100, .n = 4096, .k = 1000, .batch = 2};
    assert_int_equal(bk_fp8_dim(100), 112);
    assert_int_equal(bk_fp8_dim(4096), 4096);
    assert_int_equal(bk_gemm_a_bytes(&it), 112 * 1008 * 2);
    assert_int_equal(bk_gemm_b_bytes(&it), 4096 * 1008 * 2);
    assert_int_equal(bk_gemm_c_bytes(&it), 2 * 112 * 4096 * 2);
    it.fp8 = false;
    assert_int_equal(bk_gemm_a_bytes(&it), 2 * 100 * 1000 * 2);
    assert_int_equal(bk_gemm_c_bytes(&it), 2 * 100 * 4096 * 2);
}

/* --fp8-recipe blockwise (DeepSeek-V3's 1x128 / 128x128 scales): the same FP8 items, each marked
 * blockwise, which bk_step.c runs 1x128 by 128x128 (fprop, dgrad: B is the weight) or 1x128 by
 * 1x128 (wgrad); per-tensor recipes mark none. The calibrate op and the scale tensor sizes in
 * cuBLASLt's layouts (Transformer Engine's Float8BlockQuantizer::get_scale_shape). */
void test_fp8_blockwise_work(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    load("8b", "h100");
    training_spec t = training_default();
    t.global_batch = 8;
    layout l = megatron(2, 4, true);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    assert_int_equal(work_plan_build(&M, &S, &t, &l, &W8, err, sizeof err), CM_OK);
    int blk = 0;
    for (int i = 0; i < W8.layer_fwd.n; i++) {
        const work_item *it = &W8.layer_fwd.item[i];
        assert_true(it->fp8_block == (it->kind == WORK_GEMM && it->fp8));
        blk += it->fp8_block;
    }
    for (int i = 0; i < W8.layer_bwd.n; i++) {
        const work_item *it = &W8.layer_bwd.item[i];
        assert_true(it->fp8_block == (it->kind == WORK_GEMM && it->fp8));
        blk += it->fp8_block;
    }
    assert_int_equal(blk, 4 + 8); /* QKV, attention out, MLP up, down: fprop, dgrad, wgrad */
    assert_true(find(&W8.layer_bwd, "mlp_down.wgrad")->fp8_block);
    assert_int_equal(find(&W8.layer_bwd, "mlp_down.wgrad")->form, GEMM_WGRAD);
    assert_false(find(&W8.head_fwd, "lm_head")->fp8_block);
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_int_equal(work_plan_build(&M, &S, &t, &l, &W8, err, sizeof err), CM_OK);
    assert_false(find(&W8.layer_fwd, "qkv")->fp8_block);
    assert_true(find(&W8.layer_fwd, "qkv")->fp8);

    unsigned mask;
    assert_int_equal(calib_parse_ops("gemm_fp8_blockwise", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_GEMM_FP8_BLOCK);
    assert_int_equal(calib_parse_ops("gemm-fp8-blockwise,gemm_fp8", &mask, err, sizeof err),
                     CM_OK);
    assert_int_equal(mask, CALIB_GEMM_FP8_BLOCK | CALIB_GEMM_FP8);
    assert_int_equal(CALIB_ALL & CALIB_GEMM_FP8_BLOCK, CALIB_GEMM_FP8_BLOCK);
    assert_int_equal(CALIB_GEMM_FP8_BLOCK & CALIB_GEMM_FP8, 0u);
    for (int op = 0; op < COLL_COUNT; op++)
        assert_int_equal(CALIB_COLL(op) & CALIB_GEMM_FP8_BLOCK, 0u);
    assert_int_equal(calib_parse_ops("collectives", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask & CALIB_GEMM_FP8_BLOCK, 0u);

    /* 1x128 scales of A 4096 x 3584: 28 blocks along k, each a column of 4096 rows;
     * of 101 x 1000: 8 blocks, rows rounded up to 104. 128x128 of B 1536 x 4096: 12 block rows
     * of 32 blocks; of 4096 x 1792: 32 rows of 14 blocks padded to 16; of 130 x 200: 2 x 4. */
    assert_int_equal(bk_block_scale_floats(false, 4096, 3584), 28 * 4096);
    assert_int_equal(bk_block_scale_floats(false, 101, 1000), 8 * 104);
    assert_int_equal(bk_block_scale_floats(true, 1536, 4096), 12 * 32);
    assert_int_equal(bk_block_scale_floats(true, 4096, 1792), 32 * 16);
    assert_int_equal(bk_block_scale_floats(true, 130, 200), 2 * 4);
}
