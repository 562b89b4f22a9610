/*
 * test_titan_split.c — torchtitan's pipeline split (issues 19 and 21; costmodel/pp_split.c):
 * the decoder layers of each virtual stage and each rank by hand, the loop and V placements,
 * the first/last_stage_less_layers keys plan derives and emits, and `plan check` reading them
 * back. The rule is torchtitan b5bcd76 distributed/pipeline_parallel.py
 * _generate_llm_fqn_per_model_part: E = layers + a + b over S stages, E / S each and one more
 * on the first E % S, stage 0 less a, stage S-1 less b (a = b = 1 by default).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "check_torchtitan.h"
#include "emit.h"
#include "estimate.h"
#include "schedule.h"
#include "sim.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *model, const char *sys, model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout titan(int tp, int pp, int dp, int vpp, layout_pp_schedule sch)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = tp;
    l.sp = tp > 1;
    l.pp = pp;
    l.dp = dp;
    l.vpp = vpp;
    l.pp_schedule = sch;
    l.reshard_after_forward = false;
    return l;
}

static const char *broken_rule(const model_spec *m, const system_spec *s, const layout *l)
{
    training_spec t = training_default();
    t.global_batch = 256;
    layout_violation v[8];
    int n = layout_check_all(m, s, &t, l, layout_gpus(l), v, 8);
    static char rule[64];
    snprintf(rule, sizeof rule, "%s", n ? v[0].rule : "");
    return rule;
}

/* Llama 3.1 405B, 126 layers, pp 8 x 2 stages (torchtitan's Table 5 interleaved run):
 * E = 126 + 1 + 1 = 128 over 16 stages, 8 each, the ends 7: 7 / 8 x 14 / 7. Rank r holds
 * stages r and r + 8: rank 0 7 + 8 = 15, ranks 1-6 16, rank 7 8 + 7 = 15 (the 1F1B split,
 * 128 / 8 = 16 less one on each end, is the same per rank). */
static void test_405b_interleaved_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("405b", "h100", &m, &s);
    assert_int_equal(m.layers, 126);
    layout l = titan(8, 8, 8, 2, PP_SCHEDULE_INTERLEAVED_1F1B);
    for (int k = 0; k < 16; k++)
        assert_int_equal(layout_vstage_layers(&m, &l, k), k == 0 || k == 15 ? 7 : 8);
    int rank[8] = {15, 16, 16, 16, 16, 16, 16, 15};
    for (int r = 0; r < 8; r++) assert_int_equal(layout_stage_layers(&m, &l, r), rank[r]);
    assert_int_equal(layout_chunk_layers(&m, &l, 0, 1), 8); /* stage 8 */
    assert_int_equal(layout_max_stage_layers(&m, &l), 16);
    assert_true(layout_split_uneven(&m, &l));
    int a, b, S;
    assert_true(layout_titan_split_keys(&m, &l, &a, &b, &S));
    assert_int_equal(a, 1);
    assert_int_equal(b, 1);
    assert_int_equal(S, 16);
    assert_int_equal(layout_titan_layers_per_stage(&m, &l), 8); /* ceil(128 / 8) = 16 */
    assert_string_equal(broken_rule(&m, &s, &l), "");
    /* 1F1B, one stage a rank: 128 / 8 = 16, the ends 15 */
    l = titan(8, 8, 8, 1, PP_SCHEDULE_1F1B);
    for (int r = 0; r < 8; r++) assert_int_equal(layout_stage_layers(&m, &l, r), rank[r]);
}

/* Llama 3.1 8B, 32 layers, pp 4, 1F1B: E = 34, 8 a stage, the first 2 stages one more:
 * 9 - 1 / 9 / 8 / 8 - 1 = 8 / 9 / 8 / 7 (plan's Megatron default is 8 x 4). The first layer
 * of each stage: 0, 8, 17, 25. */
static void test_8b_default_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    layout l = titan(2, 4, 8, 1, PP_SCHEDULE_1F1B);
    int want[4] = {8, 9, 8, 7}, start[4] = {0, 8, 17, 25};
    for (int r = 0; r < 4; r++) {
        assert_int_equal(layout_stage_layers(&m, &l, r), want[r]);
        assert_int_equal(layout_stage_start(&m, &l, r), start[r]);
    }
    assert_int_equal(layout_titan_layers_per_stage(&m, &l), 9); /* ceil(34 / 9) = 4 */
    layout meg = l;
    meg.framework = FRAMEWORK_MEGATRON;
    for (int r = 0; r < 4; r++) assert_int_equal(layout_stage_layers(&m, &meg, r), 8);
}

/* ZBVZeroBubble puts stages r and 2p-1-r on rank r. 32 layers, pp 4: E = 34 over 8 stages,
 * 4 each, the first 2 one more: 4 / 5 / 4 / 4 / 4 / 4 / 4 / 3; ranks 4 + 3 = 7, 5 + 4 = 9,
 * 4 + 4 = 8, 4 + 4 = 8. With 36 layers (E = 38, the first 6 stages one more): 4 / 5 x 5 / 4 /
 * 3, ranks 7, 9, 10, 10: the fullest middle rank is 2, not 1. */
static void test_zbv_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    layout l = titan(2, 4, 8, 2, PP_SCHEDULE_ZBV);
    int v8[8] = {4, 5, 4, 4, 4, 4, 4, 3}, r8[4] = {7, 9, 8, 8};
    for (int k = 0; k < 8; k++) assert_int_equal(layout_vstage_layers(&m, &l, k), v8[k]);
    for (int r = 0; r < 4; r++) assert_int_equal(layout_stage_layers(&m, &l, r), r8[r]);
    assert_int_equal(layout_chunk_layers(&m, &l, 1, 1), 4); /* stage 6 */
    assert_int_equal(layout_busiest_middle_stage(&m, &l), 1);
    assert_int_equal(layout_titan_layers_per_stage(&m, &l), 0); /* ceil(34/5) = 7, none gives 8 */
    assert_string_equal(broken_rule(&m, &s, &l), ""); /* 2 a rank is the V's default */
    m.layers = 36;
    int r9[4] = {7, 9, 10, 10};
    for (int r = 0; r < 4; r++) assert_int_equal(layout_stage_layers(&m, &l, r), r9[r]);
    assert_int_equal(layout_busiest_middle_stage(&m, &l), 2);
    assert_int_equal(layout_max_stage_layers(&m, &l), 10);
}

/* Every split torchtitan's rule makes with an end stage holding a decoder layer, for 8..40
 * layers, 2..16 stages and less 0..3 on each end, is what plan's fields (the first and last
 * stage's count) give, and plan derives keys that make it again. */
static void test_fields_make_every_titan_split(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    long checked = 0;
    for (int L = 8; L <= 40; L++)
        for (int S = 2; S <= 16; S++)
            for (int a = 0; a <= 3; a++)
                for (int b = 0; b <= 3; b++) {
                    int e = L + a + b;
                    if (S > e || a > e / S || b > e / S) continue; /* torchtitan refuses */
                    int first = layout_titan_generate(L, S, a, b, 0);
                    int last = layout_titan_generate(L, S, a, b, S - 1);
                    if (first < 1 || last < 1) continue;
                    bool ok = true;
                    for (int k = 0; k < S; k++) ok = ok && layout_titan_generate(L, S, a, b, k) >= 1;
                    if (!ok) continue;
                    m.layers = L;
                    layout l = titan(1, S, 1, 1, PP_SCHEDULE_1F1B);
                    l.pp_first_layers = first;
                    l.pp_last_layers = last;
                    for (int k = 0; k < S; k++)
                        assert_int_equal(layout_vstage_layers(&m, &l, k),
                                         layout_titan_generate(L, S, a, b, k));
                    int ka, kb, kS;
                    assert_true(layout_titan_split_keys(&m, &l, &ka, &kb, &kS));
                    for (int k = 0; k < S; k++)
                        assert_int_equal(layout_titan_generate(L, S, ka, kb, k),
                                         layout_titan_generate(L, S, a, b, k));
                    checked++;
                }
    print_message("  %ld splits checked\n", checked);
    assert_int_equal(checked, 4623);
}

/* torchtitan's rule cannot give an end stage more than one layer above the fullest middle
 * stage, nor the last more than the emptiest one; and a stage count only the schedule's
 * default or some layers_per_stage reaches. */
static void test_rules(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    layout l = titan(2, 4, 8, 2, PP_SCHEDULE_INTERLEAVED_1F1B);
    l.pp_first_layers = l.pp_last_layers = 7; /* 18 left over 6 stages, 3 each */
    assert_string_equal(broken_rule(&m, &s, &l), "torchtitan-uneven-less");
    l.pp_first_layers = l.pp_last_layers = 3; /* 3 / 5 / 5 / 4 x 4 / 3: less 2 and 1 */
    assert_string_equal(broken_rule(&m, &s, &l), "");
    l.pp_first_layers = 0;
    l.pp_last_layers = 0;
    l.vpp = 4; /* E = 34 over 16: k = 3 gives 12 stages, k = 2 gives 17 */
    assert_string_equal(broken_rule(&m, &s, &l), "torchtitan-stages-unreachable");
    l.pp_first_layers = l.pp_last_layers = 2; /* the even split: less 0, k = 2 */
    assert_string_equal(broken_rule(&m, &s, &l), "");
    assert_int_equal(layout_titan_layers_per_stage(&m, &l), 2);
}

static char *emit_text(const model_spec *m, const system_spec *s, const training_spec *t,
                       const layout *l, const char *ref)
{
    estimate e;
    char err[CM_ERRLEN], *text = NULL;
    if (estimate_layout(m, s, t, l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = ref};
    if (emit_render(EMIT_TORCHTITAN, &e, m, s, &ctx, &text, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    return text;
}

static check_config read_back(const model_spec *m, const char *text)
{
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    assert_int_equal(check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err),
                     CM_OK);
    check_torchtitan_resolve(m, &cfg, 0, &rep);
    return cfg;
}

/* The 405B interleaved layout emits layers_per_stage 8 and less 1 / 1 (torchtitan's default,
 * stated) and reads back as the default split on 2 stages a rank; 8B pp 4 x 2 with 3 / 3 on the
 * ends emits less 2 / 1 and no layers_per_stage (none gives 8 stages from E = 35; the schedule's
 * default 2 a rank does) and reads back 3 / 3. */
static void test_emit_and_check_round_trip(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("405b", "h100", &m, &s);
    training_spec t = training_default();
    t.seq_len = 8192;
    t.global_batch = 256;
    layout l = titan(8, 8, 8, 2, PP_SCHEDULE_INTERLEAVED_1F1B);
    l.mbs = 2;
    l.recompute = RECOMPUTE_FULL;
    char *text = emit_text(&m, &s, &t, &l, "405b");
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_schedule Interleaved1F1B"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_layers_per_stage 8"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_first_stage_less_layers 1"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_last_stage_less_layers 1"));
    assert_non_null(strstr(text, "over 16 stages): 7/8/8/8/8/8/8/8/8/8/8/8/8/8/8/7"));
    check_config cfg = read_back(&m, text);
    assert_int_equal(cfg.layout.pp, 8);
    assert_int_equal(cfg.layout.vpp, 2);
    assert_int_equal(cfg.layout.pp_first_layers, 0);
    assert_int_equal(cfg.layout.pp_last_layers, 0);
    for (int r = 0; r < 8; r++)
        assert_int_equal(layout_stage_layers(&m, &cfg.layout, r), layout_stage_layers(&m, &l, r));
    free(text);

    load("8b", "h100", &m, &s);
    t = training_default();
    l = titan(2, 4, 8, 2, PP_SCHEDULE_INTERLEAVED_1F1B);
    l.pp_first_layers = l.pp_last_layers = 3;
    text = emit_text(&m, &s, &t, &l, "8b");
    assert_null(strstr(text, "pipeline_parallel_layers_per_stage"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_first_stage_less_layers 2"));
    assert_non_null(strstr(text, "--parallelism.pipeline_parallel_last_stage_less_layers 1"));
    cfg = read_back(&m, text);
    assert_int_equal(cfg.layout.vpp, 2);
    assert_int_equal(cfg.layout.pp_first_layers, 3);
    assert_int_equal(cfg.layout.pp_last_layers, 3);
    for (int k = 0; k < 8; k++)
        assert_int_equal(layout_vstage_layers(&m, &cfg.layout, k), layout_vstage_layers(&m, &l, k));
    free(text);
}

/* The simulator runs the split the estimate prices: 405B pp 8 x 2 interleaved, each rank's
 * virtual stages' layers sum to its stage's, and the step runs (the V too). */
static void test_simulated(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("405b", "h100", &m, &s);
    training_spec t = training_default();
    t.seq_len = 8192;
    t.global_batch = 256;
    layout_pp_schedule sch[2] = {PP_SCHEDULE_INTERLEAVED_1F1B, PP_SCHEDULE_ZBV};
    for (int i = 0; i < 2; i++) {
        layout l = titan(8, 8, 8, 2, sch[i]);
        l.mbs = 2;
        l.recompute = RECOMPUTE_FULL;
        estimate e;
        char err[CM_ERRLEN];
        assert_int_equal(estimate_layout(&m, &s, &t, &l, &e, err, sizeof err), CM_OK);
        sim_workspace *w = sim_alloc();
        assert_non_null(w);
        sim_options o = {.serialize = false, .trace = false};
        assert_int_equal(sim_estimate(w, &m, &s, &t, &l, &o, &e, err, sizeof err), CM_OK);
        const sim_input *in = sim_input_of(w);
        for (int r = 0; r < 8; r++) {
            int sum = 0;
            for (int k = 0; k < 16; k++)
                if (schedule_stage_of(sch[i], 8, k) == r) sum += in->vstage_layers[k];
            assert_int_equal(sum, layout_stage_layers(&m, &l, r));
        }
        print_message("  %s: closed form %.2f s, simulated %.2f s\n",
                      layout_pp_schedule_name(sch[i]), e.time.step_s, e.time_sim.step_s);
        assert_true(e.time_sim.step_s > 0.8 * e.time.step_s &&
                    e.time_sim.step_s < 1.3 * e.time.step_s);
        sim_free(w);
    }
}

/* torch's interleaved 1F1B (the order the simulator runs, schedule.h) needs the micro-batch
 * count divisible by its rounds, max(1, m / pp), not by pp as Megatron's does: pp 4, dp 2,
 * mbs 2: gbs 40 is 10 micro-batches in 2 rounds of 5 (runs), gbs 12 is 3 in one round (runs),
 * gbs 36 is 9 in 2 rounds (refused); Megatron refuses 10 on pp 4. Found by cfg21. */
static void test_interleaved_rounds(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    layout l = titan(1, 4, 2, 2, PP_SCHEDULE_INTERLEAVED_1F1B);
    l.mbs = 2;
    training_spec t = training_default();
    layout_violation v[8];
    t.global_batch = 40;
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 8, v, 8), 0);
    t.global_batch = 12;
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 8, v, 8), 0);
    t.global_batch = 36;
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 8, v, 8), 1);
    assert_string_equal(v[0].rule, "vpp-microbatches");
    assert_non_null(strstr(v[0].message, "rounds"));
    /* and the simulator runs the 10 micro-batches in torch's order */
    t.global_batch = 40;
    estimate e;
    char err[CM_ERRLEN];
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    if (estimate_layout(&m, &s, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    sim_workspace *w = sim_alloc();
    assert_non_null(w);
    sim_options o = {.serialize = false, .trace = false};
    if (sim_estimate(w, &m, &s, &t, &l, &o, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    sim_free(w);
    /* 2 rounds of 5 leave a longer fill than 10 / pp's closed form prices: not shorter */
    assert_true(e.time_sim.step_s >= e.time.step_s * 0.99);
    layout meg = layout_default(FRAMEWORK_MEGATRON);
    meg.pp = 4;
    meg.dp = 2;
    meg.vpp = 2;
    meg.mbs = 2;
    int k = layout_check_all(&m, &s, &t, &meg, 8, v, 8);
    bool refused = false;
    for (int j = 0; j < k && j < 8; j++) refused |= !strcmp(v[j].rule, "vpp-microbatches");
    assert_true(refused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_405b_interleaved_by_hand),
        cmocka_unit_test(test_8b_default_by_hand),
        cmocka_unit_test(test_zbv_by_hand),
        cmocka_unit_test(test_fields_make_every_titan_split),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_interleaved_rounds),
        cmocka_unit_test(test_emit_and_check_round_trip),
        cmocka_unit_test(test_simulated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
