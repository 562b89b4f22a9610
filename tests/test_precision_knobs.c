/*
 * test_precision_knobs.c — the Megatron low-precision knobs of issue 16 beyond the format
 * itself (costmodel/precision.h): --fp8-param-gather (FP8 parameters, FP8 all-gather), the bf16
 * first/last layers (--first-last-layers-bf16), their rules, and what plan emits for them.
 *
 * Hand numbers use Llama-3.1-8B at tp 1: 32 layers of Linears qkv 6144x4096, attn_out
 * 4096x4096, mlp_up 28672x4096, mlp_down 4096x14336 = 218,103,808 Linear parameters per layer,
 * 6,979,321,856 in all (test_precision.c has the same sums).
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

#include "emit.h"
#include "estimate.h"
#include "estimate_costs.h"
#include "layout_codec.h"
#include "layer_recipe.h"
#include "memory.h"
#include "memory_params.h"
#include "moe_dispatch.h"
#include "precision.h"
#include "recompute_modules.h"
#include "search_layouts.h"
#include "search_torchtitan.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))
#define LIN_LAYER 218103808.0
#define LIN_ALL (32 * LIN_LAYER)

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

static layout megatron_fp8(layout_fp8_recipe r)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = r;
    return l;
}

/* Memory with --fp8-param-gather, 8B, one stage, distributed optimizer, delayed scaling: the
 * bf16 weight of every Linear becomes the FP8 parameter (2 -> 1 byte) and TE keeps only the
 * transpose beside it (2 -> 1 byte): 2 bytes less per Linear parameter, 13,958,643,712 bytes;
 * the optimizer (fp32 master, m, v) and the gradients stay. MXFP8: the MXFP8 parameter (rowwise
 * and columnwise) replaces the bf16 weight and the copies: 2 bytes less per parameter too. */
static void test_param_gather_memory(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = megatron_fp8(FP8_RECIPE_DELAYED);
    layout pg = l;
    pg.fp8_param_gather = true;
    memory_breakdown a = memory_stage(&m, &s, &t, &l, 0);
    memory_breakdown b = memory_stage(&m, &s, &t, &pg, 0);
    assert_true(REL(a.weights_bytes - b.weights_bytes, 2.0 * LIN_ALL) < 1e-12);
    assert_true(a.optimizer_bytes == b.optimizer_bytes);
    assert_true(a.gradients_bytes == b.gradients_bytes);
    double lpd, lpe;
    memory_stage_lp_params(&m, &pg, 0, &lpd, &lpe);
    assert_true(REL(lpd, LIN_ALL) < 1e-12);
    assert_true(lpe == 0);
    memory_stage_lp_params(&m, &l, 0, &lpd, &lpe); /* without the knob: none */
    assert_true(lpd == 0);
    system_spec b200 = load_system("b200");
    layout mx = layout_default(FRAMEWORK_MEGATRON);
    mx.dp = 8;
    mx.precision = PRECISION_MXFP8;
    layout mxpg = mx;
    mxpg.fp8_param_gather = true;
    a = memory_stage(&m, &b200, &t, &mx, 0);
    b = memory_stage(&m, &b200, &t, &mxpg, 0);
    assert_true(REL(a.weights_bytes - b.weights_bytes, 2.0 * LIN_ALL) < 1e-12);
}

/* A stage's FP8 parameters are its low-precision layers' (memory_stage_lp_params, which adds
 * each kind's split once per layer without calling it per layer): 8B with the first and last
 * layer in bf16 holds 30 x LIN_LAYER on one stage; on 4 stages (8, 8, 8, 8 layers) the first
 * and last hold 7 x LIN_LAYER, the middle ones 8. DeepSeek-V3 (3 dense layers, then MoE),
 * pp 4 and 8, bf16 first 2 and last 1: each stage's figure is the per-layer sum of
 * memory_layer_lp_params_split over its low-precision layers, bit for bit, and
 * memory_lp_layers_from counts those layers of each kind (stage 0 of pp 8: layers 2..7 of
 * 0..7 are low precision, 1 dense (layer 2) and 5 MoE). */
static void test_stage_lp_params(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    layout l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    l.fp8_param_gather = true;
    l.bf16_layers_start = l.bf16_layers_end = 1;
    double lpd, lpe;
    memory_stage_lp_params(&m, &l, 0, &lpd, &lpe);
    assert_true(REL(lpd, 30 * LIN_LAYER) < 1e-12);
    l.pp = 4;
    static const double layers[4] = {7, 8, 8, 7};
    for (int s = 0; s < 4; s++) {
        memory_stage_lp_params(&m, &l, s, &lpd, &lpe);
        assert_true(REL(lpd, layers[s] * LIN_LAYER) < 1e-12);
        assert_true(lpe == 0);
    }
    model_spec d = load_model("deepseek-v3");
    layout ld = megatron_fp8(FP8_RECIPE_TENSORWISE);
    ld.fp8_param_gather = true;
    ld.tp = 2;
    ld.ep = 8;
    ld.bf16_layers_start = 2;
    ld.bf16_layers_end = 1;
    static const int pps[2] = {4, 8};
    for (int k = 0; k < 2; k++) {
        ld.pp = pps[k];
        for (int s = 0; s < ld.pp; s++) {
            double want_d = 0, want_e = 0;
            int start = layout_stage_start(&d, &ld, s), n = layout_stage_layers(&d, &ld, s);
            int n_dense = 0, n_moe = 0;
            for (int i = start; i < start + n; i++) {
                if (precision_layer_bf16(&d, &ld, i)) continue;
                int moe = memory_layer_is_moe(&d, i);
                n_moe += moe;
                n_dense += !moe;
                double x, y;
                memory_layer_lp_params_split(&d, &ld, moe, &x, &y);
                want_d += x;
                want_e += y;
            }
            memory_stage_lp_params(&d, &ld, s, &lpd, &lpe);
            assert_true(lpd == want_d && lpe == want_e);
            assert_true(lpd > 0);
            int lo, split, hi; /* the same layers, counted in closed form */
            memory_lp_layers_from(&d, &ld, start, n, &lo, &split, &hi);
            assert_int_equal(split - lo, n_dense);
            assert_int_equal(hi - split, n_moe);
        }
    }
}

/* The distributed optimizer's parameter all-gather with FP8 parameters: 2 bytes per parameter
 * but 1 per Linear weight, i.e. 2 pd - LIN_ALL bytes: the same collective as a bf16 gather of
 * pd - LIN_ALL / 2 parameters. MXFP8 gathers bf16 (Megatron's shared gradient buffer): no
 * change. The gradient reduce-scatter never changes. */
static void test_param_gather_bytes(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    layout pg = l;
    pg.fp8_param_gather = true;
    double pd, pe, lpd, lpe;
    memory_stage_params(&m, &pg, 0, &pd, &pe);
    memory_stage_lp_params(&m, &pg, 0, &lpd, &lpe);
    double g_pg, g_bf16;
    double r_pg = estimate_dp_sync_s(&s, &t, &pg, pd, pe, lpd, lpe, &g_pg);
    double r_bf16 = estimate_dp_sync_s(&s, &t, &l, pd - LIN_ALL / 2, pe, 0, 0, &g_bf16);
    assert_true(REL(g_pg, g_bf16) < 1e-12);
    double g_plain;
    double r_plain = estimate_dp_sync_s(&s, &t, &l, pd, pe, 0, 0, &g_plain);
    assert_true(r_pg == r_plain);
    assert_true(g_pg < g_plain);
    (void)r_bf16;
    layout mx = pg;
    mx.precision = PRECISION_MXFP8;
    mx.fp8_recipe = FP8_RECIPE_DEFAULT;
    assert_true(precision_param_gather_bytes(&mx) == 2.0);
    assert_true(REL(precision_param_bytes(&mx), 1.0 + 1.0 / 32) < 1e-12);
    assert_true(precision_param_gather_bytes(&pg) == 1.0);
    /* the whole step: the tensorwise plan with the knob gathers less and holds less */
    estimate e0, e1;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &e0, err, sizeof err), CM_OK);
    assert_int_equal(estimate_layout(&m, &s, &t, &pg, &e1, err, sizeof err), CM_OK);
    assert_true(e1.time.dp_s < e0.time.dp_s);
    assert_true(e1.memory.total_bytes < e0.memory.total_bytes);
}

/* bf16 first/last layers: 8B, tensorwise, 1 + 2 of 32 layers in bf16 on one stage. Each such
 * layer costs what the layer of the bf16 layout costs; the stage is 29 fp8 layers + 3 bf16
 * layers + the head. Memory: those 3 layers keep no FP8 copies: 3 x 218,103,808 x 2 bytes
 * less than the all-FP8 plan. */
static void test_bf16_layers(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    layout f = l;
    f.bf16_layers_start = 1;
    f.bf16_layers_end = 2;
    layout b = layout_default(FRAMEWORK_MEGATRON);
    b.dp = 8;
    assert_true(precision_layer_bf16(&m, &f, 0));
    assert_false(precision_layer_bf16(&m, &f, 1));
    assert_false(precision_layer_bf16(&m, &f, 29));
    assert_true(precision_layer_bf16(&m, &f, 30));
    assert_true(precision_layer_bf16(&m, &f, 31));
    assert_false(precision_layer_bf16(&m, &b, 0)); /* a bf16 plan has nothing to keep */
    char err[CM_ERRLEN];
    estimate_costs cf, cb;
    estimate_stage st;
    assert_int_equal(estimate_stage_costs(&m, &s, &t, &f, &cf, &st, err, sizeof err), CM_OK);
    assert_int_equal(estimate_stage_costs(&m, &s, &t, &b, &cb, NULL, err, sizeof err), CM_OK);
    assert_true(REL(cf.dense_bf16.fwd_s, cb.dense.fwd_s) < 1e-12);
    assert_true(REL(cf.dense_bf16.bwd_s, cb.dense.bwd_s) < 1e-12);
    assert_true(cf.dense.fwd_s < cf.dense_bf16.fwd_s); /* fp8 is faster */
    assert_true(estimate_costs_layer(&cf, 0) == &cf.dense_bf16);
    assert_true(estimate_costs_layer(&cf, 1) == &cf.dense);
    assert_true(estimate_costs_layer(&cf, 30) == &cf.dense_bf16);
    double want = 29 * cf.dense.fwd_s + 3 * cf.dense_bf16.fwd_s + cf.head_fwd_s;
    assert_true(REL(st.fwd_s, want) < 1e-12);
    memory_breakdown ml = memory_stage(&m, &s, &t, &l, 0);
    memory_breakdown mf = memory_stage(&m, &s, &t, &f, 0);
    assert_true(REL(ml.weights_bytes - mf.weights_bytes, 3 * LIN_LAYER * 2.0) < 1e-12);
    /* and the estimate's step lies between all-fp8 and all-bf16 */
    estimate ef, el, eb;
    assert_int_equal(estimate_layout(&m, &s, &t, &f, &ef, err, sizeof err), CM_OK);
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &el, err, sizeof err), CM_OK);
    assert_int_equal(estimate_layout(&m, &s, &t, &b, &eb, err, sizeof err), CM_OK);
    assert_true(el.time.step_s < ef.time.step_s && ef.time.step_s < eb.time.step_s);
}

/* The rules, each with the fix in its message. */
static void test_rules(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    char err[CM_ERRLEN];
    layout l = megatron_fp8(FP8_RECIPE_DELAYED);
    l.bf16_layers_start = 1; /* Megatron: not with delayed scaling */
    assert_int_not_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "delayed"));
    l.fp8_recipe = FP8_RECIPE_TENSORWISE;
    assert_int_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_OK);
    l.pp = 2;
    l.dp = 4;
    l.bf16_layers_end = 17; /* at most 32 / 2 */
    assert_int_not_equal(layout_check(&m, &s, &t, &l, 0, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "16"));
    layout d = layout_default(FRAMEWORK_MEGATRON);
    d.dp = 8;
    d.fp8_param_gather = true; /* bf16 plan */
    assert_int_not_equal(layout_check(&m, &s, &t, &d, 0, err, sizeof err), CM_OK);
    d = megatron_fp8(FP8_RECIPE_DELAYED);
    d.sharding = SHARDING_DDP;
    d.fp8_param_gather = true; /* Megatron: distributed optimizer or FSDP only */
    assert_int_not_equal(layout_check(&m, &s, &t, &d, 0, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "distributed optimizer"));
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.dp = 8;
    f.precision = PRECISION_FP8;
    f.bf16_layers_start = 1;
    assert_int_not_equal(layout_check(&m, &s, &t, &f, 0, err, sizeof err), CM_OK);
}

/* Megatron-LM flags and the Bridge fields, and the JSON keys (only when set). */
static void test_emit(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    l.fp8_param_gather = true;
    l.bf16_layers_start = 1;
    l.bf16_layers_end = 2;
    estimate e;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = "8b"};
    char *text = NULL;
    assert_int_equal(emit_megatron_args(&e, &m, &s, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "--fp8-param-gather"));
    assert_non_null(strstr(text, "--first-last-layers-bf16"));
    assert_non_null(strstr(text, "--num-layers-at-start-in-bf16 1"));
    assert_non_null(strstr(text, "--num-layers-at-end-in-bf16 2"));
    free(text);
    assert_int_equal(emit_bridge(&e, &m, &s, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "cfg.mixed_precision.fp8_param_gather = True"));
    assert_non_null(strstr(text, "cfg.mixed_precision.first_last_layers_bf16 = True"));
    assert_non_null(strstr(text, "cfg.mixed_precision.num_layers_at_end_in_bf16 = 2"));
    free(text);
    json_t *j = layout_to_json(&l);
    assert_true(json_is_true(json_object_get(j, "fp8_param_gather")));
    assert_int_equal(json_integer_value(json_object_get(j, "bf16_layers_end")), 2);
    layout back;
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_true(layout_equal(&back, &l));
    json_decref(j);
    layout plain = megatron_fp8(FP8_RECIPE_TENSORWISE);
    j = layout_to_json(&plain);
    assert_null(json_object_get(j, "fp8_param_gather"));
    assert_null(json_object_get(j, "bf16_layers_start"));
    json_decref(j);
    assert_int_equal(estimate_layout(&m, &s, &t, &plain, &e, err, sizeof err), CM_OK);
    assert_int_equal(emit_megatron_args(&e, &m, &s, &ctx, &text, err, sizeof err), CM_OK);
    assert_null(strstr(text, "--fp8-param-gather"));
    assert_null(strstr(text, "--first-last-layers-bf16"));
    free(text);
    char name[200];
    layout_short_name(&l, name, sizeof name);
    assert_non_null(strstr(name, "fp8-tensorwise+pg bf16-1/2"));
}

/* FP8 dispatch, DeepSeek-V3 (h 7168, top-8) at EP 8 inside one H100 node, mbs 1, seq 4096,
 * DeepEP: this rank's 4096 tokens x 8 copies x 7168 = 234,881,024 elements; dispatched in e4m3
 * with an fp32 scale per 128: x 1.03125 = 242,221,056 bytes (bf16: 469,762,048). Over NVLink
 * a row per token and receiving rank (moe_ranks_per_token: node-limited routing, its 4 groups
 * on 4 of the 8 ranks, 32 experts each), at the same 1.03125 bytes an element. The combine
 * stays bf16. In the layer the dispatch op's backward is
 * the combine's pattern (bf16) and the combine's backward the dispatch's (FP8). */
static void test_fp8_dispatch(void **state)
{
    (void)state;
    model_spec m = load_model("deepseek-v3");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8;
    l.ep = 8;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    l.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    layout f = l;
    f.moe_fp8_dispatch = true;
    moe_dispatch_cost a, b;
    moe_dispatch_price(&m, &s, &t, &l, 4096, &a);
    moe_dispatch_price(&m, &s, &t, &f, 4096, &b);
    assert_true(REL(a.dispatch_bytes, 469762048.0) < 1e-12);
    assert_true(REL(b.dispatch_bytes, 242221056.0) < 1e-12);
    assert_true(REL(b.combine_bytes, 469762048.0) < 1e-12);
    double none = 1;
    for (int i = 0; i < 8; i++) none *= (96.0 - i) / (128.0 - i);
    assert_true(REL(moe_ranks_per_token(&m, 8, 1), 4.0 * (1 - none)) < 1e-12);
    assert_true(REL(b.nvlink_bytes, 4096.0 * 4.0 * (1 - none) * 7168 * 1.03125) < 1e-12);
    assert_true(b.combine_s == a.combine_s);
    double lat = collective_latency_s(&s, layout_ep_group(&s, &l));
    assert_true(REL((b.dispatch_s - lat) / (a.dispatch_s - lat), 1.03125 / 2.0) < 1e-12);
    recipe r;
    recipe_layer(&m, &s, &t, &f, true, &r, NULL);
    bool seen = false;
    for (int i = 0; i < r.n_ops; i++) {
        if (!strcmp(r.op[i].name, "ep.dispatch")) {
            assert_true(r.op[i].fwd_s == b.dispatch_s && r.op[i].bwd_s == b.combine_s);
            seen = true;
        }
        if (!strcmp(r.op[i].name, "ep.combine"))
            assert_true(r.op[i].fwd_s == b.combine_s && r.op[i].bwd_s == b.dispatch_s);
    }
    assert_true(seen);
    /* memory: Transformer Engine's GroupedLinear keeps the experts' input quantized whichever
     * way it arrived (grouped_linear.py: split_quantize, saved for the backward), so FP8
     * dispatch saves no activation memory over the bf16 all-to-all under an FP8 recipe: both
     * keep 4096 x 8 x 7168 x 1.03125 bytes of blockwise FP8 per MoE layer, where a bf16 copy
     * would have been 227,540,992 bytes more (the test's figure before the experts' inputs
     * were priced quantized) */
    double ma = memory_layer_activation_bytes(&m, &t, &l, 1);
    double mf = memory_layer_activation_bytes(&m, &t, &f, 1);
    assert_true(fabs(ma - mf) < 1e-9 * ma);
    layout lb = l; /* bf16: the permuted input in bf16, 2 bytes */
    lb.precision = PRECISION_BF16;
    lb.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    double mb = memory_layer_activation_bytes(&m, &t, &lb, 1);
    /* bf16 - fp8: the routed copies' FC1 and FC2 inputs, 4096 x 8 x (2 - 1.03125) x (7168 +
     * 2048) = 292,552,704, less the projection's quantized copy of the attention output FP8
     * adds, 4096 x 1.03125 x 128 x 128 = 69,206,016: 223,346,688 */
    assert_true(REL(mb - ma, 223346688.0) < 1e-9);
    /* rules: DeepEP only, with EP; a bf16 plan has none */
    char err[CM_ERRLEN];
    assert_int_equal(layout_check(&m, &s, &t, &f, 0, err, sizeof err), CM_OK);
    f.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    assert_int_not_equal(layout_check(&m, &s, &t, &f, 0, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "deepep"));
    f.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    f.precision = PRECISION_BF16;
    f.fp8_recipe = FP8_RECIPE_DEFAULT;
    assert_int_not_equal(layout_check(&m, &s, &t, &f, 0, err, sizeof err), CM_OK);
    assert_true(moe_dispatch_elem_bytes(&f) == 2.0);
}

/* The low-precision GEMM efficiency by GPU: measured on Hopper (0.9135 per-tensor, 0.8265
 * blockwise), the ml-engineering MAMF ratios on Blackwell (B200 0.763 / 0.776 = 0.98325 per
 * tensor), 1 elsewhere (MI300X: the system's own peak ratio). On Blackwell the block-scaled
 * kernels take Transformer Engine's B300 rates over the per-tensor one (precision.c; changed on
 * purpose in prec7, before: every recipe the per-tensor ratio): MXFP8 and FP8 blockwise (run as
 * MXFP8) x 6.812 / 7.161, NVFP4 on Blackwell Ultra 6.812 / 3.764 x the FP8 rate, i.e. GB300
 * 0.745 / 0.786 x 1.80978 x 5e15 / 1.5e16 = 0.57179 of its FP4 peak; NVFP4 on B200 keeps
 * 0.98325 (no figure). On B200 the 8B layer's mlp_up
 * forward (4096 x 28672 x 4096, compute-bound) in fp8 takes (2.25e15 / 4.5e15) / 0.98325 =
 * 0.50852 of its bf16 time, fixed kernel cost aside. */
static void test_blackwell_ratio(void **state)
{
    (void)state;
    system_spec h100 = load_system("h100"), b200 = load_system("b200");
    system_spec gb300 = load_system("gb300-nvl72"), mi300x = load_system("mi300x");
    layout l = megatron_fp8(FP8_RECIPE_TENSORWISE);
    assert_true(REL(precision_gemm_ratio(&h100, &l), 0.9135) < 1e-12);
    assert_true(REL(precision_gemm_ratio(&b200, &l), 0.763 / 0.776) < 1e-12);
    assert_true(REL(precision_gemm_ratio(&gb300, &l), 0.745 / 0.786) < 1e-12);
    assert_true(precision_gemm_ratio(&mi300x, &l) == 1.0);
    assert_non_null(strstr(precision_gemm_ratio_source(&mi300x), "ASSUMPTION"));
    layout blk = megatron_fp8(FP8_RECIPE_BLOCKWISE);
    assert_true(REL(precision_gemm_ratio(&h100, &blk), 0.8265) < 1e-12);
    assert_true(REL(precision_gemm_ratio(&b200, &blk), 0.763 / 0.776 * 6.812 / 7.161) < 1e-12);
    layout mx = layout_default(FRAMEWORK_MEGATRON);
    mx.dp = 8;
    mx.precision = PRECISION_MXFP8;
    assert_true(REL(precision_gemm_ratio(&b200, &mx), 0.763 / 0.776 * 6.812 / 7.161) < 1e-12);
    assert_true(REL(precision_gemm_ratio(&b200, &mx), 0.935328) < 1e-6);
    layout fp4 = mx;
    fp4.precision = PRECISION_NVFP4;
    assert_true(REL(precision_gemm_ratio(&gb300, &fp4), 0.57179) < 1e-5);
    assert_true(REL(precision_gemm_ratio(&b200, &fp4), 0.763 / 0.776) < 1e-12);
    assert_true(REL(precision_gemm_ratio(&h100, &fp4), 0.9135) < 1e-12); /* Hopper: table */
    model_spec m = load_model("8b");
    training_spec t = training_default();
    layout b = layout_default(FRAMEWORK_MEGATRON);
    b.dp = 8;
    recipe rl, rb;
    recipe_layer(&m, &b200, &t, &l, false, &rl, NULL);
    recipe_layer(&m, &b200, &t, &b, false, &rb, NULL);
    double fl = -1, fb = -1;
    for (int i = 0; i < rl.n_ops; i++)
        if (!strcmp(rl.op[i].name, "mlp_up")) fl = rl.op[i].fwd_s;
    for (int i = 0; i < rb.n_ops; i++)
        if (!strcmp(rb.op[i].name, "mlp_up")) fb = rb.op[i].fwd_s;
    double o = b200.gemm_overhead_s;
    assert_true(REL((fl - o) / (fb - o), 0.5 / (0.763 / 0.776)) < 1e-9);
}

/* Megatron's precision-aware optimizer with bf16 state (layout.h optimizer_bf16_states):
 * Llama-3.1-8B (8,030,261,248 parameters) on 8 GPUs, distributed optimizer, gradients reduced
 * in fp32 by default: the main gradients go from 4 to 2 bytes a parameter (16,060,522,496 B
 * less) and the sharded Adam state from 12 to 8 bytes (4 x 8.03e9 / 8 = 4,015,130,624 B less). */
static void test_bf16_optimizer_states(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8;
    layout b = l;
    b.optimizer_bf16_states = true;
    estimate ea, eb;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &ea, err, sizeof err), CM_OK);
    assert_int_equal(estimate_layout(&m, &s, &t, &b, &eb, err, sizeof err), CM_OK);
    assert_true(REL(ea.memory.gradients_bytes - eb.memory.gradients_bytes, 16060522496.0) < 1e-9);
    assert_true(REL(ea.memory.optimizer_bytes - eb.memory.optimizer_bytes, 4015130624.0) < 1e-9);
    assert_true(eb.time.optimizer_s < ea.time.optimizer_s); /* 20 bytes a parameter, not 30 */
    /* the flags Megatron-LM takes, the Bridge lines, the JSON key read back */
    emit_context ctx = {.model_ref = "8b"};
    char *text = NULL;
    assert_int_equal(emit_render(EMIT_MEGATRON_ARGS, &eb, &m, &s, &ctx, &text, err, sizeof err),
                     CM_OK);
    assert_non_null(strstr(text, "--use-precision-aware-optimizer \\\n--main-grads-dtype bf16 "
                                 "\\\n--exp-avg-dtype bf16 \\\n--exp-avg-sq-dtype bf16"));
    free(text);
    assert_int_equal(emit_render(EMIT_BRIDGE, &eb, &m, &s, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "cfg.optimizer.exp_avg_sq_dtype = torch.bfloat16"));
    free(text);
    json_t *j = layout_to_json(&b);
    assert_true(json_is_true(json_object_get(j, "optimizer_bf16_states")));
    layout back;
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_true(back.optimizer_bf16_states);
    json_decref(j);
    /* DDP has no precision-aware optimizer (megatron/core/optimizer/__init__.py) */
    b.sharding = SHARDING_DDP;
    assert_int_equal(layout_check(&m, &s, &t, &b, 0, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "distributed optimizer"));
}

/* layout_check in its two halves (layout.h, speed12: the search checks the precision-blind
 * rules once per layout and the precision rules per precision): over the layouts the three
 * searches list for a dense and an MoE model, on Hopper and Blackwell, each with every format,
 * FP8 recipe, the parameter gather and the FP8 dispatch on and off, and Megatron's moe_act and
 * layernorm recompute modules (the one rule that reads the FP8 recipe elsewhere), layout_check
 * passes exactly when both halves do. */
typedef struct {
    const model_spec *m;
    const system_spec *sys;
    training_spec t;
    long checked, ok, conflict;
} halves_walk;

static void halves_visit(void *arg, const layout *l0)
{
    halves_walk *w = arg;
    for (int mods = 0; mods < 2; mods++)
        for (int p = 0; p < PRECISION_COUNT; p++)
            for (int r = 0; r < 5; r++)
                for (int x = 0; x < 4; x++) {
                    layout l = *l0;
                    if (mods) {
                        l.recompute = RECOMPUTE_SELECTIVE;
                        l.recompute_modules = RECOMPUTE_MOD_MOE_ACT | RECOMPUTE_MOD_LAYERNORM;
                    }
                    l.precision = (layout_precision)p;
                    l.fp8_recipe = (layout_fp8_recipe)r; /* default, delayed ... rowwise */
                    l.fp8_param_gather = x & 1;
                    l.moe_fp8_dispatch = x >> 1;
                    bool whole = layout_check(w->m, w->sys, &w->t, &l, 0, NULL, 0) == CM_OK;
                    layout b = precision_bf16_layout(&l);
                    bool halves = layout_check_base(w->m, &w->t, &b) == CM_OK &&
                                  layout_check_precision(w->m, w->sys, &l) == CM_OK;
                    assert_true(whole == halves);
                    w->checked++;
                    w->ok += whole;
                    w->conflict += mods && p == PRECISION_FP8 &&
                                   precision_fp8_recipe_resolved(&l) == FP8_RECIPE_DELAYED &&
                                   layout_check_base(w->m, &w->t, &b) == CM_OK && !whole;
                }
}

static void test_check_halves(void **state)
{
    (void)state;
    const char *models[] = {"mixtral-8x7b", "8b"}, *systems[] = {"h100", "b200"};
    long conflict = 0;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            model_spec m = load_model(models[i]);
            system_spec sys = load_system(systems[k]);
            halves_walk w = {.m = &m, .sys = &sys, .t = training_default()};
            search_options o = {.gpus = 16, .keep = 8, .frameworks = {true, true, true}};
            search_megatron_layouts(&m, &sys, &w.t, &o, halves_visit, &w);
            search_fsdp2_layouts(&m, &sys, &w.t, &o, halves_visit, &w);
            search_torchtitan_layouts(&m, &sys, &w.t, &o, halves_visit, &w);
            assert_true(w.checked > 10000 && w.ok > 0 && w.ok < w.checked);
            conflict += w.conflict;
        }
    assert_true(conflict > 0); /* the FP8-delayed recompute rule decided some */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_gather_memory),
        cmocka_unit_test(test_param_gather_bytes),
        cmocka_unit_test(test_stage_lp_params),
        cmocka_unit_test(test_bf16_layers),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_check_halves),
        cmocka_unit_test(test_emit),
        cmocka_unit_test(test_fp8_dispatch),
        cmocka_unit_test(test_blackwell_ratio),
        cmocka_unit_test(test_bf16_optimizer_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
