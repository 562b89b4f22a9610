/*
 * test_uneven_pp.c — uneven first/last pipeline stages (issue 21): the split by hand, its rules,
 * what it buys (the last stage carries the head: fewer layers there balance the pipeline), the
 * Megatron flag and torchtitan's "less layers" that state exactly the costed split, plan check
 * reading torchtitan's own default split back, and the JSON round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "check_torchtitan.h"
#include "emit.h"
#include "estimate.h"
#include "layout_codec.h"
#include "memory.h"
#include "pp_layout_parse.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout pp4(layout_framework fw, int first, int last)
{
    layout l = layout_default(fw);
    l.tp = 2;
    l.sp = true;
    l.pp = 4;
    l.dp = 8;
    l.pp_first_layers = first;
    l.pp_last_layers = last;
    return l;
}

/* 32 layers, pp 4, first 7 and last 7: 7 / 9 / 9 / 7, starting at 0, 7, 16, 25; first 8 alone:
 * 8 then 24 over three stages. */
static void test_split_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    layout l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    int want[4] = {7, 9, 9, 7}, start[4] = {0, 7, 16, 25};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(layout_stage_layers(&m, &l, i), want[i]);
        assert_int_equal(layout_stage_start(&m, &l, i), start[i]);
    }
    assert_int_equal(layout_max_stage_layers(&m, &l), 9);
    assert_true(layout_split_uneven(&m, &l));
    l = pp4(FRAMEWORK_MEGATRON, 5, 0);
    assert_int_equal(layout_stage_layers(&m, &l, 0), 5);
    for (int i = 1; i < 4; i++) assert_int_equal(layout_stage_layers(&m, &l, i), 9);
    l = pp4(FRAMEWORK_MEGATRON, 0, 0);
    assert_false(layout_split_uneven(&m, &l));
}

/* layout_stage_start and layout_max_stage_layers are closed forms (the search asks them per
 * layout): each must equal the stage-by-stage sum and maximum of layout_stage_layers, for every
 * pp 2..8 and first/last split of 0..12 layers (valid or not: they are arithmetic), and for
 * the start of stage pp (the sum of them all). */
static void test_closed_forms_match_the_sums(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    long checked = 0;
    for (int pp = 2; pp <= 8; pp++)
        for (int first = 0; first <= 12; first++)
            for (int last = 0; last <= 12; last++) {
                layout l = pp4(FRAMEWORK_MEGATRON, first, last);
                l.pp = pp;
                int sum = 0, most = 0;
                for (int st = 0; st <= pp; st++) {
                    assert_int_equal(layout_stage_start(&m, &l, st), sum);
                    if (st < pp) {
                        int n = layout_stage_layers(&m, &l, st);
                        sum += n;
                        if (n > most) most = n;
                    }
                    checked++;
                }
                assert_int_equal(layout_max_stage_layers(&m, &l), most);
            }
    assert_int_equal(checked, (3 + 4 + 5 + 6 + 7 + 8 + 9) * 13 * 13); /* pp + 1 stages asked */
}

static const char *broken_rule(const layout *l)
{
    model_spec m;
    system_spec s;
    load(&m, &s);
    training_spec t = training_default();
    layout_violation v[8];
    int n = layout_check_all(&m, &s, &t, l, layout_gpus(l), v, 8);
    static char rule[64];
    snprintf(rule, sizeof rule, "%s", n ? v[0].rule : "");
    return rule;
}

static void test_rules(void **state)
{
    (void)state;
    layout l = pp4(FRAMEWORK_MEGATRON, 6, 7); /* 19 left for 2 stages */
    assert_string_equal(broken_rule(&l), "uneven-pp-divides");
    /* virtual stages with an uneven split: Megatron writes it as a layout string (each rank's
     * layers over its chunks); under torchtitan the fields are the first and last virtual
     * stage's (pp_split.c), and 7 on each end of 8 stages of 32 layers leave the middle 3 each,
     * which its less_layers keywords cannot make (test_titan_split.c has the rest) */
    l = pp4(FRAMEWORK_TORCHTITAN, 7, 7);
    l.vpp = 2;
    assert_string_equal(broken_rule(&l), "torchtitan-uneven-less");
    l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    l.vpp = 2;
    assert_string_equal(broken_rule(&l), "");
    /* 8 chunks per rank: the middle stages' 9 layers fill them, the ends need 7 (the chunk with
     * the embedding / loss may hold no decoder layer); first 6 leaves one chunk empty */
    l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    l.vpp = 8;
    assert_string_equal(broken_rule(&l), "");
    l = pp4(FRAMEWORK_MEGATRON, 6, 8); /* 6 / 9 / 9 / 8 */
    l.vpp = 8;
    assert_string_equal(broken_rule(&l), "uneven-vpp-chunks");
    l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    assert_string_equal(broken_rule(&l), "");
    /* torchtitan states fewer layers on the ends only: 11 / 7 / 7 / 7 is not expressible */
    l = pp4(FRAMEWORK_TORCHTITAN, 11, 7);
    assert_string_equal(broken_rule(&l), "torchtitan-uneven-less");
}

/* The last stage runs the head (hidden x vocab GEMMs, 4096 x 128256 for Llama-3.1-8B: about
 * three decoder layers of GEMM work) and the loss: with the even 8/8/8/8 split it sets the pace.
 * 7/9/9/7 moves two layers into the middle: the step is faster. */
static void test_uneven_is_faster(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    training_spec t = training_default();
    estimate even, uneven;
    char err[CM_ERRLEN];
    layout l = pp4(FRAMEWORK_MEGATRON, 0, 0);
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &even, err, sizeof err), CM_OK);
    l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &uneven, err, sizeof err), CM_OK);
    assert_true(uneven.time.step_s < 0.97 * even.time.step_s);
}

static char *emit(emit_format fmt, const layout *l)
{
    model_spec m;
    system_spec s;
    load(&m, &s);
    training_spec t = training_default();
    estimate e;
    char err[CM_ERRLEN], *text = NULL;
    if (estimate_layout(&m, &s, &t, l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = "8b"};
    if (emit_render(fmt, &e, &m, &s, &ctx, &text, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return text;
}

static void test_megatron_flag(void **state)
{
    (void)state;
    layout l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    char *text = emit(EMIT_MEGATRON_ARGS, &l);
    assert_non_null(strstr(text, "--pipeline-model-parallel-layout 'Et*7|t*9|t*9|t*7,L'"));
    free(text);
}

/* With two virtual stages each rank's layers go to its two chunks, schedule order chunk 0 of
 * ranks 0..3 then chunk 1: rank 0's 7 as 3 + 4 (the short chunk holds the embedding), ranks 1
 * and 2 as 4 + 5, the last rank's 7 as 4 + 3 (the short chunk holds the loss); no
 * --num-layers-per-virtual-pipeline-stage beside it (Megatron-LM arguments.py allows one of
 * the two). The YAML's first/last-stage counts cannot state 7 over 2 chunks
 * (transformer_config.py wants them divisible by vpp): it carries the layout string. */
static void test_megatron_flag_virtual_stages(void **state)
{
    (void)state;
    layout l = pp4(FRAMEWORK_MEGATRON, 7, 7);
    l.vpp = 2;
    char *text = emit(EMIT_MEGATRON_ARGS, &l);
    assert_non_null(
        strstr(text, "--pipeline-model-parallel-layout 'Et*3|t*4|t*4|t*4|t*4|t*5|t*5|t*3,L'"));
    assert_null(strstr(text, "--num-layers-per-virtual-pipeline-stage"));
    free(text);
    model_spec m;
    system_spec s;
    load(&m, &s);
    estimate e;
    char err[CM_ERRLEN];
    training_spec t = training_default();
    if (estimate_layout(&m, &s, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = "8b"};
    char *yaml = NULL;
    assert_int_equal(emit_render(EMIT_YAML, &e, &m, &s, &ctx, &yaml, err, sizeof err), CM_OK);
    assert_non_null(
        strstr(yaml, "pipeline_model_parallel_layout: \"Et*3|t*4|t*4|t*4|t*4|t*5|t*5|t*3,L\""));
    assert_null(strstr(yaml, "num_layers_in_first_pipeline_stage"));
    /* plan check reads it back: the same virtual stages and first / last stage */
    check_config cfg;
    check_report rep;
    if (check_read_yaml(yaml, strlen(yaml), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.layout.vpp, 2);
    assert_int_equal(cfg.layout.pp_first_layers, 7);
    assert_int_equal(cfg.layout.pp_last_layers, 7);
    free(yaml);
}

/* Megatron's layout strings as NVIDIA's recipes write them, read back into layers per rank:
 * DeepSeek-V3's "Et|(tt|)*30mL" over pp 8 is 32 virtual stages (vpp 4), rank 0 holding stages
 * 0, 8, 16, 24 = 1 + 2 + 2 + 2 = 7 layers, rank 7 stages 7, 15, 23, 31 = 2 + 2 + 2 + 0 = 6, the
 * others 8; Llama-3-70B's FP8 recipe "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL" over pp 8 is vpp 5 with
 * the 3-layer chunk on rank 3 (stage 35) and 1 on rank 7: 10 10 10 11 10 10 10 9. */
static void test_layout_string_read_back(void **state)
{
    (void)state;
    int ranks[8], vpp = 0;
    char err[200];
    assert_int_equal(pp_layout_parse("Et|(tt|)*30mL", 8, ranks, 8, &vpp, err, sizeof err), 0);
    assert_int_equal(vpp, 4);
    const int ds[8] = {7, 8, 8, 8, 8, 8, 8, 6};
    for (int r = 0; r < 8; r++) assert_int_equal(ranks[r], ds[r]);
    assert_int_equal(
        pp_layout_parse("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL", 8, ranks, 8, &vpp, err, sizeof err), 0);
    assert_int_equal(vpp, 5);
    const int l70[8] = {10, 10, 10, 11, 10, 10, 10, 9};
    for (int r = 0; r < 8; r++) assert_int_equal(ranks[r], l70[r]);
    /* bad strings: one line each */
    assert_int_equal(pp_layout_parse("Et|tx|tL", 3, ranks, 8, &vpp, err, sizeof err), -1);
    assert_non_null(strstr(err, "'x'"));
    assert_int_equal(pp_layout_parse("E(tt|*2L", 2, ranks, 8, &vpp, err, sizeof err), -1);
    assert_int_equal(pp_layout_parse("Et|t|tL", 2, ranks, 8, &vpp, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not divide"));
}

/* 9 a stage, 2 less on each end: (32 + 2 + 2) / 4 = 9, the ends 7; read back the same. */
static void test_torchtitan_round_trip(void **state)
{
    (void)state;
    layout l = pp4(FRAMEWORK_TORCHTITAN, 7, 7);
    char *text = emit(EMIT_TORCHTITAN, &l);
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_layers_per_stage 9"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_first_stage_less_layers 2"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_last_stage_less_layers 2"));
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    assert_int_equal(check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err),
                     CM_OK);
    model_spec m;
    system_spec s;
    load(&m, &s);
    check_torchtitan_resolve(&m, &cfg, 0, &rep);
    assert_int_equal(cfg.layout.pp_first_layers, 7);
    assert_int_equal(cfg.layout.pp_last_layers, 7);
    free(text);
}

/* torchtitan's defaults (1 less on each end) on 30 layers and pp 4: (30 + 2) / 4 = 8, the ends 7:
 * plan check models that split as 7 / 8 / 8 / 7, plan's default torchtitan split (0 / 0). */
static void test_torchtitan_default_split(void **state)
{
    (void)state;
    const char *text =
        "# model: 8b\n"
        "torchrun --nproc-per-node 8 --nnodes 8 -m torchtitan.train --module llama3 --config "
        "llama3_8b --parallelism.tensor_parallel_degree 2 --parallelism.pipeline_parallel_degree "
        "4 --parallelism.data_parallel_shard_degree 8 --training.max_context_length 4096\n";
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    assert_int_equal(check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err),
                     CM_OK);
    model_spec m;
    system_spec s;
    load(&m, &s);
    m.layers = 30;
    check_torchtitan_resolve(&m, &cfg, 0, &rep);
    assert_int_equal(cfg.layout.pp_first_layers, 0);
    assert_int_equal(cfg.layout.pp_last_layers, 0);
    int want[4] = {7, 8, 8, 7};
    for (int i = 0; i < 4; i++) assert_int_equal(layout_stage_layers(&m, &cfg.layout, i), want[i]);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    layout l = pp4(FRAMEWORK_MEGATRON, 7, 7), back;
    json_t *j = layout_to_json(&l);
    assert_int_equal(json_integer_value(json_object_get(j, "pp_first_layers")), 7);
    char err[CM_ERRLEN];
    assert_int_equal(layout_from_json(j, "t", &back, NULL, err, sizeof err), CM_OK);
    assert_true(layout_equal(&l, &back));
    json_decref(j);
    l = pp4(FRAMEWORK_MEGATRON, 0, 0); /* even: the keys are left out */
    j = layout_to_json(&l);
    assert_null(json_object_get(j, "pp_first_layers"));
    json_decref(j);
}

/* A layout without a pipeline has one stage: memory_peak once priced a "stage 1" too, whose
 * layers (all past the model's last) counted as bf16 layers under FP8 and came out fullest
 * (8B on 64 GPUs, DP 64, mbs 4, Megatron-FSDP, fp8 with fp8 parameters: "stage 1"). */
static void test_single_stage(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load(&m, &s);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 64;
    l.mbs = 4;
    l.sharding = SHARDING_FSDP;
    l.precision = PRECISION_FP8;
    l.fp8_param_gather = true;
    estimate e;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(e.memory.stage, 0);
    memory_breakdown s0 = memory_stage(&m, &s, &t, &l, 0);
    assert_true(e.memory.total_bytes == s0.total_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_by_hand),
        cmocka_unit_test(test_closed_forms_match_the_sums),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_uneven_is_faster),
        cmocka_unit_test(test_megatron_flag),
        cmocka_unit_test(test_megatron_flag_virtual_stages),
        cmocka_unit_test(test_layout_string_read_back),
        cmocka_unit_test(test_torchtitan_round_trip),
        cmocka_unit_test(test_torchtitan_default_split),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_single_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
