/*
 * test_torchtitan_emit.c — what --emit torchtitan writes so that torchtitan b5bcd76 reads the
 * plan's layout, found by bench/torchtitan_validate.py (torchtitan's own ConfigManager, tyro
 * and checks on every emitted command; bench/torchtitan_validate/README.md). Each assertion is
 * the emitted text, checkable by hand against torchtitan's config_registry.py files:
 *  - a config function's own settings that survive the overrides are overridden both ways:
 *    deepseek_v3_16b/_671b set disable_cuda_graphs=True and compile components ["loss"];
 *    llama3_405b sets compile with async TP;
 *  - a plan's low-precision format picks the shipped config that converts to it
 *    (llama3_8b_mxfp8, deepseek_v3_671b_float8), and a 405B plan in bf16 is told that
 *    llama3_405b converts to float8 rowwise;
 *  - plan check reads "--compile.components model,loss" (one comma-separated word) back;
 *  - what torchtitan's code refuses: the rule torchtitan-sp-tokens; a sequence past the
 *    shipped config's RoPE context, said in the emitted text;
 *  - the MoE dispatcher, the model config's (a comment read back; no all-gather backend).
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check_torchtitan.h"
#include "emit.h"
#include "estimate.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* The emitted command of a torchtitan layout of `model` on h100 (b200 for mxfp8), at the
 * default sequence, or at seq (> 0) with 8 sequences a step. */
static char *emit_seq(const char *model, layout l, int seq)
{
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    const char *sys = l.precision == PRECISION_MXFP8 ? "b200" : "h100";
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    if (seq > 0) {
        t.seq_len = seq;
        t.global_batch = 8;
    }
    estimate e;
    if (estimate_layout(&m, &s, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    char *text = NULL;
    emit_context ctx = {.model_ref = model};
    if (emit_render(EMIT_TORCHTITAN, &e, &m, &s, &ctx, &text, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    return text;
}

static char *emit(const char *model, layout l) { return emit_seq(model, l, 0); }

static layout titan(int tp, int pp, int dp, int ep)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.ep = ep;
    l.sp = tp > 1;
    l.cuda_graphs = pp == 1 && ep == 1 ? CUDA_GRAPHS_ON : CUDA_GRAPHS_OFF;
    return l;
}

/* (a NULL text reads as empty: GCC's -Wformat-overflow in the ASan build sees that emit's
 * result may be NULL where it is printed) */
static void has(const char *text, const char *s)
{
    const char *t = text ? text : "";
    if (!strstr(t, s)) fail_msg("missing \"%s\" in\n%s", s, t);
}

static void lacks(const char *text, const char *s)
{
    const char *t = text ? text : "";
    if (strstr(t, s)) fail_msg("unexpected \"%s\" in\n%s", s, t);
}

/* deepseek_v3_16b sets disable_cuda_graphs=True: a plan with graphs writes the negation;
 * without compile, async TP is said off (405B's config turns it on) */
static void test_graphs_and_async_tp_both_ways(void **state)
{
    (void)state;
    char *t = emit("deepseek-v2-lite", titan(1, 1, 8, 1));
    has(t, "--config deepseek_v3_16b");
    has(t, "--training.no-disable_cuda_graphs");
    has(t, "--compile.no-enable \\\n  --compile.no-enable_async_tensor_parallel");
    free(t);
    layout l = titan(1, 1, 8, 1);
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    t = emit("8b", l);
    has(t, "--training.disable_cuda_graphs");
    lacks(t, "no-disable_cuda_graphs");
    free(t);
}

/* compile writes what it compiles: deepseek's configs set components ["loss"] */
static void test_compile_components_always(void **state)
{
    (void)state;
    layout l = titan(1, 8, 32, 32);
    l.compile = true;
    l.recompute = RECOMPUTE_FULL;
    char *t = emit("deepseek-v3", l);
    has(t, "--compile.enable \\\n  --compile.no-enable_async_tensor_parallel \\\n"
           "  --compile.components model,loss");
    /* plan check reads the comma-separated list back: the loss compiled */
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    assert_int_equal(check_read_torchtitan(t, strlen(t), &cfg, &rep, err, sizeof err), CM_OK);
    assert_true(cfg.layout.compile);
    assert_false(cfg.layout.loss_eager);
    free(t);
    l = titan(1, 1, 8, 1);
    l.compile = true;
    l.loss_eager = true;
    t = emit("8b", l);
    has(t, "--compile.components model \\\n");
    assert_int_equal(check_read_torchtitan(t, strlen(t), &cfg, &rep, err, sizeof err), CM_OK);
    assert_true(cfg.layout.loss_eager);
    free(t);
}

/* the shipped config that converts to the plan's format */
static void test_precision_configs(void **state)
{
    (void)state;
    layout l = titan(1, 8, 32, 32);
    l.compile = true;
    l.recompute = RECOMPUTE_FULL;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_ROWWISE;
    char *t = emit("deepseek-v3", l);
    has(t, "--config deepseek_v3_671b_float8");
    has(t, "# float8 (fp8-rowwise): in the config function deepseek_v3_671b_float8");
    free(t);
    l = titan(1, 1, 8, 1);
    l.compile = true;
    l.precision = PRECISION_MXFP8;
    t = emit("8b", l);
    has(t, "--config llama3_8b_mxfp8");
    has(t, "# mxfp8: in the config function llama3_8b_mxfp8");
    free(t);
    /* no shipped config converts 8B to float8: the converter to add, by its b5bcd76 names */
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_ROWWISE;
    t = emit("8b", l);
    has(t, "--config llama3_8b \\\n");
    has(t, "model_registry(..., converters=[Float8LinearConverter.Config(");
    has(t, "filter_fqns=[\"lm_head\"]");
    free(t);
}

/* llama3_405b converts to float8 rowwise itself: a bf16 405B plan is told so; a rowwise one
 * is its config as shipped */
static void test_405b(void **state)
{
    (void)state;
    layout l = titan(8, 8, 8, 1);
    l.recompute = RECOMPUTE_FULL;
    char *t = emit("405b", l);
    has(t, "# NO torchtitan config ships for bf16 Llama 3.1 405B: llama3_405b converts every "
           "Linear but lm_head\n# to float8 rowwise");
    has(t, "--compile.no-enable_async_tensor_parallel");
    free(t);
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_ROWWISE;
    t = emit("405b", l);
    lacks(t, "NO torchtitan config");
    has(t, "# float8 (fp8-rowwise): in the config function llama3_405b");
    free(t);
}

/* Does layout l (with t) break the named rule (among its first 8 violations)? */
static bool violates(const char *model, layout l, training_spec t, const char *rule)
{
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    layout_violation v[8];
    int n = layout_check_all(&m, &s, &t, &l, layout_gpus(&l), v, 8);
    for (int i = 0; i < n && i < 8; i++)
        if (!strcmp(v[i].rule, rule)) return true;
    return false;
}

/* What torchtitan's own code refuses (bench/torchtitan_validate/README.md, "edges"): a
 * micro-batch's tokens not divisible by tp (SP) x 2 cp (trainer.py Trainer.__init__). */
static void test_rules_torchtitan_refuses(void **state)
{
    (void)state;
    training_spec t = training_default();
    t.global_batch = 64;
    t.seq_len = 4100; /* 4100 = 8 x 512 + 4 */
    layout l = titan(8, 1, 1, 1);
    assert_true(violates("8b", l, t, "torchtitan-sp-tokens"));
    l.sp = false; /* without SP the divisor is 1 (trainer.py: tp only with SP) */
    assert_false(violates("8b", l, t, "torchtitan-sp-tokens"));
    l.sp = true;
    l.mbs = 2; /* 8200 = 8 x 1025 */
    assert_false(violates("8b", l, t, "torchtitan-sp-tokens"));
    /* CP 2 at TP 1: 2 x cp = 4 divides 4100 */
    l = titan(1, 1, 4, 1);
    l.cp = 2;
    assert_false(violates("8b", l, t, "torchtitan-sp-tokens"));
}

/* A sequence past the shipped config's RoPE context (models/common/decoder.py
 * update_from_config refuses it): no rule (an older torchtitan or the user's own config takes
 * it, and the published long-context rows are priced), the emitted text says it. Llama 3.1
 * 131072, Qwen3-30B-A3B 40960, deepseek_v3's flavours 4096 x 4 = 16384. */
static void test_rope_context_said(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        int seq;
        const char *said; /* NULL: nothing said */
    } rows[] = {
        {"8b", 131072, NULL},
        {"8b", 262144, "# NO torchtitan config ships for sequence 262144: llama3_8b builds RoPE "
                       "for 131072 positions"},
        {"deepseek-v2-lite", 16384, NULL},
        {"deepseek-v2-lite", 32768, "deepseek_v3_16b builds RoPE for 16384 positions"},
        {"qwen3-30b-a3b", 32768, NULL},
        {"qwen3-30b-a3b", 65536, "qwen3_30b_a3b builds RoPE for 40960 positions"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        layout l = titan(1, 1, 8, 1);
        l.recompute = RECOMPUTE_FULL;
        l.cp = 8; /* the sequence fits a GPU only split */
        l.dp = 1;
        l.cuda_graphs = CUDA_GRAPHS_OFF;
        char *t = emit_seq(rows[i].model, l, rows[i].seq);
        if (rows[i].said) has(t, rows[i].said);
        else lacks(t, "NO torchtitan config");
        free(t);
    }
}

/* The MoE dispatcher is torchtitan's model config (model_registry(..., moe_comm_backend=...),
 * models/common/config_utils.py build_token_dispatcher_config at b5bcd76): a DeepEP or
 * HybridEP plan says so in a comment that plan check reads back (cfg21: the command ran
 * all-to-all and check read it so, Qwen3-30B-A3B EP 8: 78.1 s priced, 81.5 s read back);
 * all-gather is no torchtitan backend: a rule. */
static void test_moe_dispatcher(void **state)
{
    (void)state;
    layout_moe_dispatcher d[2] = {MOE_DISPATCH_DEEPEP, MOE_DISPATCH_HYBRIDEP};
    const char *said[2] = {"# MoE dispatcher (deepep): in the config function, model_registry("
                           "..., moe_comm_backend=\"deepep\")",
                           "moe_comm_backend=\"hybridep\")"};
    for (int i = 0; i < 2; i++) {
        layout l = titan(1, 1, 8, 8);
        l.moe_dispatcher = d[i];
        char *t = emit("qwen3-30b-a3b", l);
        has(t, said[i]);
        check_config cfg;
        check_report rep;
        char err[CM_ERRLEN];
        assert_int_equal(check_read_torchtitan(t, strlen(t), &cfg, &rep, err, sizeof err), CM_OK);
        assert_int_equal(cfg.layout.moe_dispatcher, d[i]);
        free(t);
    }
    layout l = titan(1, 1, 8, 8);
    char *t = emit("qwen3-30b-a3b", l); /* all-to-all: torchtitan's standard backend */
    lacks(t, "MoE dispatcher");
    free(t);
    l.moe_dispatcher = MOE_DISPATCH_ALLGATHER;
    assert_true(violates("qwen3-30b-a3b", l, training_default(),
                         "torchtitan-no-allgather-dispatch"));
    l.ep = 1; /* no expert parallelism: the local dispatch, whatever the name */
    assert_false(violates("qwen3-30b-a3b", l, training_default(),
                          "torchtitan-no-allgather-dispatch"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graphs_and_async_tp_both_ways),
        cmocka_unit_test(test_compile_components_always),
        cmocka_unit_test(test_precision_configs),
        cmocka_unit_test(test_405b),
        cmocka_unit_test(test_rules_torchtitan_refuses),
        cmocka_unit_test(test_rope_context_said),
        cmocka_unit_test(test_moe_dispatcher),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
