/*
 * test_recompute_modules.c — Megatron's selective recompute by module (costmodel/
 * recompute_modules.h): the activation bytes each module frees, worked by hand from
 * memory.c's per-token terms; which recipe ops re-run; the rules from Megatron-Core's
 * TransformerConfig; the flags, Bridge lines and JSON that carry the list.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emit.h"
#include "estimate.h"
#include "layer_recipe.h"
#include "layout_codec.h"
#include "memory.h"
#include "recompute_modules.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *name, model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load(name, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout selective(unsigned mods)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.recompute = RECOMPUTE_SELECTIVE;
    l.recompute_modules = mods;
    return l;
}

static double act(const model_spec *m, const layout *l, bool moe_layer)
{
    training_spec t = training_default();
    t.seq_len = 4096;
    return memory_layer_activation_bytes(m, &t, l, moe_layer);
}

/* Llama-3.1-8B, TP 1, one sequence of 4096 tokens, bf16: layernorm frees the two norm outputs
 * (2h + 2h bytes per token), mlp the SwiGLU intermediates (gate 2 + up 2 + product 2 bytes per
 * intermediate of 14336): 4096 x (4 x 4096 + 6 x 14336) = 4096 x 102400 = 419,430,400 bytes. */
static void test_dense_bytes_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", &m, &s);
    layout base = selective(0), both = selective(RECOMPUTE_MOD_LAYERNORM | RECOMPUTE_MOD_MLP);
    assert_float_equal(act(&m, &base, false) - act(&m, &both, false), 419430400.0, 1.0);
    layout ln = selective(RECOMPUTE_MOD_LAYERNORM);
    assert_float_equal(act(&m, &base, false) - act(&m, &ln, false), 4096.0 * 4 * 4096, 1.0);
    /* naming core_attn alone is Megatron's default: the same bytes as selective without a list */
    layout ca = selective(RECOMPUTE_MOD_CORE_ATTN);
    assert_float_equal(act(&m, &base, false), act(&m, &ca, false), 0.0);
}

/* Qwen3-30B-A3B: moe_act frees the routed experts' activation outputs, top_k 8 copies x 2 bytes
 * x expert_ffn 768 per token: 4096 x 12288 = 50,331,648 bytes; moe frees every routed copy and
 * the fp32 router logits (4 x 128 per token) besides: 4096 x (8 x 8708 + 512) = 287,309,824. DeepSeek-V3 (MLA, 128 heads, q/k head 192,
 * v head 128): mla_up_proj frees q, k and v, 2 x (2 x 128 x 192 + 128 x 128) = 131,072 bytes per
 * token. */
static void test_moe_and_mla_bytes_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("qwen3-30b-a3b", &m, &s);
    layout base = selective(0), ma = selective(RECOMPUTE_MOD_MOE_ACT);
    assert_float_equal(act(&m, &base, true) - act(&m, &ma, true), 50331648.0, 1.0);
    layout moe = selective(RECOMPUTE_MOD_MOE);
    double freed_moe = act(&m, &base, true) - act(&m, &moe, true);
    /* every routed copy (input 2 x 2048, SwiGLU 6 x 768, fp32 probability 4: Megatron keeps no
     * expert output, test_mcore_saved.c) and the router logits, 4096 x (8 x 8708 + 512) */
    assert_float_equal(freed_moe, 4096.0 * (8 * (2 * 2048 + 6 * 768 + 4) + 4 * 128), 1.0);
    /* the module touches MoE layers only */
    assert_float_equal(act(&m, &base, false), act(&m, &ma, false), 0.0);

    load("deepseek-v3", &m, &s);
    layout mla = selective(RECOMPUTE_MOD_MLA_UP_PROJ);
    assert_float_equal(act(&m, &base, false) - act(&m, &mla, false),
                       4096.0 * 2 * (2 * 128 * 192 + 128 * 128), 1.0);
}

static bool reruns(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return r->op[i].recompute;
    fail_msg("no op %s in the recipe", name);
    return false;
}

/* A given list replaces the default: mlp alone re-runs the MLP's GEMMs and its TP collectives,
 * not the attention core; the step gets slower by that re-run. */
static void test_reruns(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", &m, &s);
    training_spec t = training_default();
    layout l = selective(RECOMPUTE_MOD_MLP);
    l.tp = 2;
    l.sp = true;
    l.dp = 4;
    static recipe r;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    assert_true(reruns(&r, "mlp_up"));
    assert_true(reruns(&r, "mlp_down"));
    assert_true(reruns(&r, "tp.mlp"));
    assert_false(reruns(&r, "qkv"));
    layout d = l;
    d.recompute_modules = 0;
    recipe_layer(&m, &s, &t, &d, false, &r, NULL);
    assert_false(reruns(&r, "mlp_up"));
    estimate a, b;
    char err[CM_ERRLEN];
    if (estimate_layout(&m, &s, &t, &l, &a, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (estimate_layout(&m, &s, &t, &d, &b, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(a.time.compute_s > b.time.compute_s);
    assert_true(a.memory.activations_bytes < b.memory.activations_bytes);
    assert_true(a.hardware_flops_per_step > b.hardware_flops_per_step);
}

static const char *broken_rule(const char *model, layout l, training_spec t)
{
    model_spec m;
    system_spec s;
    load(model, &m, &s);
    layout_violation v[8];
    int n = layout_check_all(&m, &s, &t, &l, layout_gpus(&l), v, 8);
    static char rule[64];
    snprintf(rule, sizeof rule, "%s", n ? v[0].rule : "");
    return rule;
}

static void test_rules(void **state)
{
    (void)state;
    training_spec t = training_default();
    assert_string_equal(broken_rule("8b", selective(RECOMPUTE_MOD_MOE_ACT), t),
                        "recompute-modules-need-moe");
    assert_string_equal(broken_rule("8b", selective(RECOMPUTE_MOD_MLA_UP_PROJ), t),
                        "recompute-mla-up-proj-needs-mla");
    layout full = selective(RECOMPUTE_MOD_MLP);
    full.recompute = RECOMPUTE_FULL;
    assert_string_equal(broken_rule("8b", full, t), "recompute-modules-need-selective");
    layout ok = selective(RECOMPUTE_MOD_LAYERNORM | RECOMPUTE_MOD_MLP);
    assert_string_equal(broken_rule("8b", ok, t), "");
    /* transformer_config.py: moe recompute and the EP A2A overlap exclude each other; delayed
     * FP8 scaling cannot re-make moe_act / layernorm */
    layout moe = selective(RECOMPUTE_MOD_MOE);
    moe.ep = 8;
    moe.dp = 8;
    training_spec ov = t;
    ov.moe_ep_overlap = true;
    assert_string_equal(broken_rule("qwen3-30b-a3b", moe, ov), "recompute-moe-not-with-ep-overlap");
    layout fp8 = selective(RECOMPUTE_MOD_LAYERNORM);
    fp8.precision = PRECISION_FP8;
    fp8.fp8_recipe = FP8_RECIPE_DELAYED;
    assert_string_equal(broken_rule("8b", fp8, t), "recompute-modules-fp8-delayed");
}

/* Megatron-LM's argparse takes the list as separate words (nargs "+", argument_utils.py);
 * Bridge as a Python list; the JSON layout as Megatron's names joined by commas, read back. */
static void test_emit_and_json(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("deepseek-v3", &m, &s);
    training_spec t = training_default();
    layout l = selective(RECOMPUTE_MOD_MLA_UP_PROJ | RECOMPUTE_MOD_MLP);
    l.tp = 2;
    l.sp = true;
    l.pp = 8;
    l.ep = 64;
    l.etp = 1;
    l.dp = 64;
    l.pp_first_layers = 7;
    l.pp_last_layers = 6;
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(&m, &s, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = "deepseek-v3"};
    char *text = NULL;
    if (emit_render(EMIT_MEGATRON_ARGS, &e, &m, &s, &ctx, &text, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_non_null(strstr(text, "--recompute-granularity selective"));
    assert_non_null(strstr(text, "--recompute-modules mla_up_proj mlp \\"));
    free(text);
    if (emit_render(EMIT_BRIDGE, &e, &m, &s, &ctx, &text, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_non_null(strstr(text, "cfg.model.recompute_modules = [\"mla_up_proj\", \"mlp\"]"));
    free(text);

    json_t *j = layout_to_json(&l);
    assert_string_equal(json_string_value(json_object_get(j, "recompute_modules")),
                        "mla_up_proj,mlp");
    layout back;
    if (layout_from_json(j, "layout", &back, NULL, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_int_equal(back.recompute_modules, l.recompute_modules);
    assert_true(layout_equal(&back, &l));
    json_decref(j);
    /* without a list the key is not written: older readers see the layout they knew */
    layout plain = selective(0);
    j = layout_to_json(&plain);
    assert_null(json_object_get(j, "recompute_modules"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_bytes_by_hand),
        cmocka_unit_test(test_moe_and_mla_bytes_by_hand),
        cmocka_unit_test(test_reruns),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_emit_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
