/*
 * test_backend_fp8.c — which GEMMs plan measure runs in FP8 (issue 16): the layer recipe's
 * low-precision Linears (QKV, attention out, MLP up/down in fprop, dgrad and wgrad) become FP8
 * work items; the attention core, the output layer and the MoE router stay bf16; the recipe's
 * quantize kernels are work items of the bytes precision.c prices (hand-worked below); a bf16
 * layout has no FP8 item and no quantize kernel; the pools size FP8 operands at their padded
 * dimensions. No GPU needed.
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
