/*
 * test_torchtitan.c — issue 19: the torchtitan framework against numbers worked by hand.
 *  - each pipeline schedule's closed-form bubble fraction and the micro-batches each stage
 *    holds (pp_schedule.h), for given p, m, v and F/I/W;
 *  - the ZBVZeroBubble and DualPipeV orders (schedule.h) against pytorch's schedules.py, op by
 *    op where short, and their invariants; a ZBV step simulated on a timeline traced by hand;
 *  - the rules, each rejection with its name and message;
 *  - --emit torchtitan read back by plan check's reader into the same layout and the same
 *    estimate; the layout's JSON keeps the schedule and async TP.
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

#include "async_tp.h"
#include "check_torchtitan.h"
#include "collective.h"
#include "compute.h"
#include "emit.h"
#include "estimate.h"
#include "layer_recipe.h"
#include "layout_codec.h"
#include "memory.h"
#include "pp_schedule.h"
#include "precision.h"
#include "schedule.h"
#include "sim.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *model, const char *system, model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(system, data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout titan(int tp, int pp, int dp, int cp)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    /* eager steps, as the published runs (torchtitan 9dec370, 2024-25) and the hand-worked
     * numbers here were: torchtitan's CUDA graphs (since f84224af0) are test_cuda_graphs.c's */
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.cp = cp;
    l.sp = tp > 1;
    return l;
}

/* Bubble fractions, p = 4, m = 8: 1F1B and GPipe (p-1)/m = 3/8; Interleaved1F1B v = 2:
 * 3/16 (Megatron), 17/48 under torch's runtime; ZBV with F = I = W: 0; ZBV with F = 1, I = 2, W = 1: (p-1)(F+I-2W)/2/(F+I+W)/m =
 * 3 x 1/2 / 4 / 8 = 3/64; DualPipeV with F = I = W = 1: (p-1)(F+2I-W)/2/3/m = 3 x 2/2/3/8 = 1/8. */
static void test_bubble_fractions(void **state)
{
    (void)state;
    layout l = titan(1, 4, 1, 1);
    pp_stage_work eq = {1, 1, 1}, slow_i = {1, 2, 1};
    l.pp_schedule = PP_SCHEDULE_1F1B;
    assert_true(fabs(pp_schedule_bubble_fraction(&l, 8, &eq) - 3.0 / 8) < 1e-12);
    l.pp_schedule = PP_SCHEDULE_GPIPE;
    assert_true(fabs(pp_schedule_bubble_fraction(&l, 8, &eq) - 3.0 / 8) < 1e-12);
    l.pp_schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    l.vpp = 2;
    /* torch's runtime (torchtitan) adds the serialized warm-up, (v-1) p (p-2) chunk forwards of
     * F/v: 1 x 4 x 2 x (1/2) / 3 = 4/3 micro-batches, (3/2 + 4/3) / 8 = 17/48 (pp_schedule.h);
     * Megatron's keeps (p-1)/(v m) = 3/16, and so does torch's at p = 2 (p - 2 = 0): 1/16 */
    assert_true(fabs(pp_schedule_bubble_fraction(&l, 8, &eq) - 17.0 / 48) < 1e-12);
    layout mg = l;
    mg.framework = FRAMEWORK_MEGATRON;
    assert_true(fabs(pp_schedule_bubble_fraction(&mg, 8, &eq) - 3.0 / 16) < 1e-12);
    layout two = l;
    two.pp = 2;
    assert_true(fabs(pp_schedule_bubble_fraction(&two, 8, &eq) - 1.0 / 16) < 1e-12);
    l.pp_schedule = PP_SCHEDULE_ZBV;
    assert_true(fabs(pp_schedule_bubble_fraction(&l, 8, &eq)) < 1e-12);
    assert_true(fabs(pp_schedule_bubble_fraction(&l, 8, &slow_i) - 3.0 / 64) < 1e-12);
    l.pp_schedule = PP_SCHEDULE_DUALPIPEV;
    assert_true(fabs(pp_schedule_bubble_fraction(&l, 8, &eq) - 1.0 / 8) < 1e-12);
    /* in seconds: a 2 s micro-batch, 3/64 x 8 micro-batches = 3/8 micro-batch = 0.75 s */
    l.pp_schedule = PP_SCHEDULE_ZBV;
    assert_true(fabs(pp_schedule_bubble_s(&l, 2.0, &slow_i) - 0.75) < 1e-12);
    l.pp = 1;
    assert_true(pp_schedule_bubble_s(&l, 2.0, &slow_i) == 0);
}

/* Micro-batches of activations held, p = 4: 1F1B min(p - s, m): 4 on stage 0, 1 on stage 3;
 * GPipe all m; the V schedules p on every stage (2p chunk forwards of half a stage before the
 * first backward), min(p, m) when m is smaller, DualPipeV half a stage more; interleaved v = 2
 * on stage 0:
 * 4 (1 + 3/8) = 5.5. */
static void test_in_flight(void **state)
{
    (void)state;
    layout l = titan(1, 4, 1, 1);
    l.pp_schedule = PP_SCHEDULE_1F1B;
    assert_true(pp_schedule_in_flight(&l, 8, 0) == 4 && pp_schedule_in_flight(&l, 8, 3) == 1);
    l.pp_schedule = PP_SCHEDULE_GPIPE;
    assert_true(pp_schedule_in_flight(&l, 8, 0) == 8 && pp_schedule_in_flight(&l, 8, 3) == 8);
    l.pp_schedule = PP_SCHEDULE_ZBV;
    l.vpp = 2;
    assert_true(pp_schedule_in_flight(&l, 8, 0) == 4 && pp_schedule_in_flight(&l, 8, 3) == 4);
    assert_true(pp_schedule_in_flight(&l, 2, 1) == 2);
    l.pp_schedule = PP_SCHEDULE_DUALPIPEV; /* and the overlapped pair's extra chunk */
    assert_true(pp_schedule_in_flight(&l, 8, 2) == 4.5);
    l.pp_schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    assert_true(fabs(pp_schedule_in_flight(&l, 8, 0) - 5.5) < 1e-12);
    /* memory.c uses the same count: the last stage of a GPipe pipeline holds 8 micro-batches'
     * activations where 1F1B's holds 1 */
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    training_spec t = training_default();
    layout g = titan(1, 4, 16, 1);
    g.pp_schedule = PP_SCHEDULE_GPIPE;
    g.reshard_after_forward = false;
    layout o = g;
    o.pp_schedule = PP_SCHEDULE_1F1B;
    memory_breakdown mg = memory_stage(&m, &s, &t, &g, 1), mo = memory_stage(&m, &s, &t, &o, 1);
    double per_micro = memory_layer_activation_bytes(&m, &t, &o, 0) * layout_stage_layers(&m, &o, 1);
    int micro = layout_microbatches(&g, &t); /* 1024 / 16 = 64 */
    assert_int_equal(micro, 64);
    /* stage 1 of 4 under 1F1B holds 3; GPipe 64 */
    assert_true(fabs(mg.activations_bytes - mo.activations_bytes - 61 * per_micro) <
                1e-6 * mg.activations_bytes);
}

/* The closed form's in-flight micro-batches are what the orders hold: counted op by op from
 * schedule.h's orders (a forward holds its chunk's share until its backward or W), equal to
 * pp_schedule_in_flight() on every stage for 1F1B, GPipe and the V schedules, and on the first
 * stage (the one the memory model sizes for) for Interleaved1F1B. */
static void test_in_flight_from_orders(void **state)
{
    (void)state;
    const layout_pp_schedule kinds[] = {PP_SCHEDULE_1F1B, PP_SCHEDULE_GPIPE,
                                        PP_SCHEDULE_INTERLEAVED_1F1B, PP_SCHEDULE_ZBV,
                                        PP_SCHEDULE_DUALPIPEV};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int p = 2; p <= 8; p *= 2)
            for (int m = 2 * p; m <= 4 * p; m *= 2) {
                layout l = titan(1, p, 1, 1);
                l.pp_schedule = kinds[k];
                l.vpp = kinds[k] == PP_SCHEDULE_1F1B || kinds[k] == PP_SCHEDULE_GPIPE ? 1 : 2;
                for (int s = 0; s < p; s++) {
                    if (kinds[k] == PP_SCHEDULE_INTERLEAVED_1F1B && s > 0) continue;
                    double got = schedule_peak_in_flight(kinds[k], p, l.vpp, m, s);
                    double want = pp_schedule_in_flight(&l, m, s);
                    if (fabs(got - want) > 1e-12)
                        fail_msg("%s p %d m %d stage %d: the order holds %.3f, the closed form "
                                 "says %.3f",
                                 layout_pp_schedule_name(kinds[k]), p, m, s, got, want);
                }
            }
}

/* ScheduleZBVZeroBubble._calculate_single_rank_operations, p = 2, m = 4, rank 0: 3 forwards
 * of chunk 0 (2(p - r) - 1), then p - r = 2 rounds of F, I, W of chunk 1. */
static void test_zbv_order(void **state)
{
    (void)state;
    schedule_op ops[64];
    int n = schedule_pipeline_kind(PP_SCHEDULE_ZBV, 2, 2, 4, 0, ops);
    assert_int_equal(n, 24); /* F, I, W of 2 chunks x 4 micro-batches */
    const struct { int mb, chunk; bool bwd; int part; } want[] = {
        {0, 0, false, 0}, {1, 0, false, 0}, {2, 0, false, 0},
        {0, 1, false, 0}, {0, 1, true, SCHEDULE_INPUT}, {0, 1, true, SCHEDULE_WEIGHT},
        {1, 1, false, 0}, {1, 1, true, SCHEDULE_INPUT}, {1, 1, true, SCHEDULE_WEIGHT},
        {3, 0, false, 0}, {0, 0, true, SCHEDULE_INPUT}, {0, 0, true, SCHEDULE_WEIGHT},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (ops[i].microbatch != want[i].mb || ops[i].chunk != want[i].chunk ||
            ops[i].backward != want[i].bwd || ops[i].part != want[i].part)
            fail_msg("op %zu: got mb %d chunk %d bwd %d part %d", i, ops[i].microbatch,
                     ops[i].chunk, ops[i].backward, ops[i].part);
    }
    /* every rank and schedule: each (chunk, micro-batch) forward once, its backward whole once
     * or as I then W, never a W before its I */
    layout_pp_schedule kinds[] = {PP_SCHEDULE_ZBV, PP_SCHEDULE_DUALPIPEV};
    for (int k = 0; k < 2; k++)
        for (int p = 2; p <= 8; p *= 2)
            for (int m = 2 * p; m <= 4 * p; m += p)
                for (int r = 0; r < p; r++) {
                    static schedule_op o[3 * 2 * 64];
                    int c = schedule_pipeline_kind(kinds[k], p, 2, m, r, o);
                    int f[2][64] = {{0}}, in[2][64] = {{0}}, w[2][64] = {{0}};
                    for (int i = 0; i < c; i++) {
                        int ch = o[i].chunk, mb = o[i].microbatch;
                        if (!o[i].backward) f[ch][mb]++;
                        else if (o[i].part == SCHEDULE_FULL) in[ch][mb]++, w[ch][mb]++;
                        else if (o[i].part == SCHEDULE_INPUT) in[ch][mb]++;
                        else {
                            assert_int_equal(in[ch][mb], 1);
                            w[ch][mb]++;
                        }
                    }
                    for (int ch = 0; ch < 2; ch++)
                        for (int mb = 0; mb < m; mb++)
                            if (f[ch][mb] != 1 || in[ch][mb] != 1 || w[ch][mb] != 1)
                                fail_msg("%s p %d m %d rank %d: chunk %d mb %d ran %d/%d/%d",
                                         layout_pp_schedule_name(kinds[k]), p, m, r, ch, mb,
                                         f[ch][mb], in[ch][mb], w[ch][mb]);
                }
    /* DualPipeV needs m >= 2p (schedules.py) */
    assert_int_equal(schedule_pipeline_kind(PP_SCHEDULE_DUALPIPEV, 4, 2, 6, 0, ops), -1);
    assert_int_equal(schedule_pipeline_kind(PP_SCHEDULE_ZBV, 4, 1, 8, 0, ops), -1);
    /* the V: rank s holds virtual stages s and 2p-1-s */
    assert_int_equal(schedule_vstage(PP_SCHEDULE_ZBV, 4, 1, 1), 6);
    assert_int_equal(schedule_stage_of(PP_SCHEDULE_ZBV, 4, 6), 1);
}

/*
 * A ZBV step on 2 ranks, 4 micro-batches, every chunk's F, I and W 1 s, free sends. Traced by
 * hand from the orders above (virtual stages 0 and 3 on rank 0, 1 and 2 on rank 1): rank 0
 * runs F0 m0-m2 [0,3], waits for stage 2's F m0 (rank 1 runs F0' m0 [1,2], F1' m0 [2,3]), then
 * F1 m0 [3,4], I1 m0 [4,5], W1 m0 [5,6] ...; rank 1's last op, W0' m3, ends at 25 s, rank 0's
 * at 24 s. Each rank is busy 24 s (8 F + 8 I + 8 W): step 25 s, bubble 1 s. Under 1F1B the same
 * work (F 2 s, B 4 s per micro-batch per stage) takes (m + p - 1) x 6 = 30 s.
 */
static void test_zbv_simulated(void **state)
{
    (void)state;
    sim_layer layer[4];
    int vs[4] = {1, 1, 1, 1};
    double zero[2] = {0, 0};
    for (int i = 0; i < 4; i++) layer[i] = (sim_layer){.fwd_s = 1, .bwd_s = 2, .wgrad_s = 1};
    sim_input in = {.pp = 2, .vpp = 2, .microbatches = 4, .schedule = PP_SCHEDULE_ZBV,
                    .layers = 4, .layer = layer, .vstage_layers = vs, .p2p_overlap = true,
                    .grad_sync_s = zero, .param_sync_s = zero, .optimizer_s = zero};
    sim_workspace *w = sim_alloc();
    time_simulated r;
    char err[CM_ERRLEN];
    if (sim_run(w, &in, NULL, &r, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(fabs(r.step_s - 25.0) < 1e-9);
    assert_true(fabs(r.compute_busy_s - 24.0) < 1e-9);
    assert_true(fabs(r.bubble_s - 1.0) < 1e-9);
    assert_int_equal(sim_op_count(w), 48);
    /* 1F1B, one stage of 2 layers per rank */
    int vs1[2] = {2, 2};
    sim_input in1 = in;
    in1.vpp = 1;
    in1.schedule = PP_SCHEDULE_1F1B;
    in1.vstage_layers = vs1;
    if (sim_run(w, &in1, NULL, &r, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(fabs(r.step_s - 30.0) < 1e-9);
    /* DualPipeV runs too, ending between the two */
    in.schedule = PP_SCHEDULE_DUALPIPEV;
    if (sim_run(w, &in, NULL, &r, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_true(r.step_s >= 24.0 && r.step_s <= 30.0);
    sim_free(w);
}

/* The search's lower bound (estimate_search.c) must never exceed a layout's own step: a V
 * schedule's bubble can be below (pp-1)/vpp stages (ZB-H2 hides it in weight-gradient work),
 * so a ZBV or DualPipeV layout asked to beat a threshold just above its own step is timed, not
 * pruned. The bound once counted (pp-1)/vpp first stages for every schedule; at these shapes
 * the head on the last stage happened to keep that old bound below the step, so this guards
 * the property rather than reproducing a past miss. */
static void test_bound_v_schedules(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    training_spec t = training_default();
    t.seq_len = 4096;
    static const layout_pp_schedule v[2] = {PP_SCHEDULE_ZBV, PP_SCHEDULE_DUALPIPEV};
    for (int i = 0; i < 2; i++) {
        t.global_batch = i ? 8 : 4; /* DualPipeV needs 2 pp micro-batches */
        layout l = titan(1, 4, 1, 1);
        l.vpp = 2;
        l.mbs = 1;
        l.pp_schedule = v[i];
        estimate e;
        char err[CM_ERRLEN];
        assert_int_equal(estimate_layout(&m, &s, &t, &l, &e, err, sizeof err), CM_OK);
        assert_true(e.feasible);
        estimate_outcome how;
        estimate o;
        assert_int_equal(estimate_layout_search(&m, &s, &t, &l, 1, &o, NULL,
                                                e.time.step_s * (1 + 1e-9), &how),
                         CM_OK);
        if (how != ESTIMATE_TIMED)
            fail_msg("%s pruned above its own step (%.6g s)", i ? "DualPipeV" : "ZBV",
                     e.time.step_s);
        assert_true(fabs(o.time.step_s - e.time.step_s) < 1e-9 * e.time.step_s);
    }
}

typedef struct {
    const char *rule, *text;
    layout l;
    const model_spec *model;
} rule_case;

/* Each rule: rejected with its name and a message naming the fix. */
static void test_rules(void **state)
{
    (void)state;
    model_spec m, moe, tied;
    system_spec s;
    load("8b", "h100", &m, &s);
    load("mixtral-8x7b", "h100", &moe, &s);
    load("1b", "h100", &tied, &s); /* Llama-3.2-1B: tie_word_embeddings true */
    training_spec t = training_default();
    layout_violation v[8];
    rule_case cases[9];
    int n = 0;
    layout l = titan(2, 2, 16, 1);
    l.pp_schedule = PP_SCHEDULE_ZBV; /* vpp 1 */
    cases[n++] = (rule_case){"pp-schedule-stages", "exactly 2 stages", l, &m};
    l.vpp = 2;
    l.compile = true;
    cases[n++] = (rule_case){"pp-schedule-no-compile", "torch.compile", l, &m};
    l = titan(1, 8, 8, 1); /* 1024 / 8 = 128 micro-batches >= 16: fine; gbs 64: 8 < 16 */
    l.pp_schedule = PP_SCHEDULE_DUALPIPEV;
    l.vpp = 2;
    cases[n++] = (rule_case){"dualpipev-microbatches", "at least as many", l, &m};
    l = titan(2, 1, 32, 1);
    l.async_tp = true; /* not compiled */
    cases[n++] = (rule_case){"async-tp-needs-compile", "--compile", l, &m};
    l = titan(3, 1, 1, 1); /* 32 heads, 8 KV groups */
    cases[n++] = (rule_case){"tp-divides-heads", "KV groups (8)", l, &m};
    l = layout_default(FRAMEWORK_MEGATRON);
    l.pp = 2;
    l.dp = 32;
    l.pp_schedule = PP_SCHEDULE_GPIPE;
    cases[n++] = (rule_case){"pp-schedule-framework", "torchtitan", l, &m};
    l = titan(1, 1, 64, 1);
    l.sharding = SHARDING_DISTOPT;
    cases[n++] = (rule_case){"torchtitan-shards-with-fsdp", "FSDP2", l, &m};
    l = titan(2, 1, 32, 1);
    l.ep = 8;
    l.etp = 2;
    cases[n++] = (rule_case){"torchtitan-expert-tp", "--etp 1", l, &moe};
    l = titan(1, 2, 32, 1); /* the embedding on stage 0, the tied output on stage 1 */
    cases[n++] = (rule_case){"torchtitan-tied-no-pp", "tie_word_embeddings false", l, &tied};
    for (int i = 0; i < n; i++) {
        training_spec ti = t;
        if (!strcmp(cases[i].rule, "dualpipev-microbatches")) ti.global_batch = 64;
        int k = layout_check_all(cases[i].model, &s, &ti, &cases[i].l, 0, v, 8);
        bool found = false;
        for (int j = 0; j < k && j < 8; j++)
            if (!strcmp(v[j].rule, cases[i].rule)) {
                found = true;
                if (!strstr(v[j].message, cases[i].text))
                    fail_msg("%s: message '%s' lacks '%s'", cases[i].rule, v[j].message,
                             cases[i].text);
            }
        if (!found) fail_msg("rule %s not reported (%d others)", cases[i].rule, k);
    }
    /* valid: FSDP2 CPU offload with full checkpointing (the old rule was Megatron-FSDP's) */
    l = titan(1, 1, 64, 1);
    l.offload = true;
    l.recompute = RECOMPUTE_FULL;
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 64, v, 8), 0);
    /* valid: the tied model without pipelining */
    l = titan(2, 1, 32, 1);
    assert_int_equal(layout_check_all(&tied, &s, &t, &l, 64, v, 8), 0);
    /* valid: ZBV, 2 stages per rank, uncompiled; DualPipeV with 128 micro-batches */
    l = titan(2, 2, 16, 1);
    l.vpp = 2;
    l.pp_schedule = PP_SCHEDULE_ZBV;
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 64, v, 8), 0);
}

/* --emit torchtitan, read back by plan check's reader: the same layout, the same estimate. */
static void round_trip_on(const char *model, const char *sys, layout l, const training_spec *t)
{
    model_spec m;
    system_spec s;
    load(model, sys, &m, &s);
    estimate e, e2;
    char err[CM_ERRLEN];
    if (estimate_layout(&m, &s, t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    char *text = NULL;
    emit_context ctx = {.model_ref = model};
    if (emit_render(EMIT_TORCHTITAN, &e, &m, &s, &ctx, &text, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_true(check_is_torchtitan(text, strlen(text)));
    check_config cfg;
    check_report rep;
    if (check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("%s\n%s", err, text);
    model_spec m2;
    char name[128];
    if (check_load_model(cfg.model, data_dir(), &m2, name, sizeof name, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_int_equal(check_torchtitan_resolve(&m2, &cfg, 0, &rep), layout_gpus(&l));
    assert_int_equal(check_layout(&m2, &s, &cfg, 0, &rep, err, sizeof err), layout_gpus(&l));
    if (rep.nviolations) fail_msg("%s: %s\n%s", rep.violations[0].rule, rep.violations[0].message, text);
    if (!layout_equal(&cfg.layout, &l)) {
        char a[256], b[256];
        layout_short_name(&l, a, sizeof a);
        layout_short_name(&cfg.layout, b, sizeof b);
        fail_msg("wrote %s, read %s\n%s", a, b, text);
    }
    assert_int_equal(cfg.training.seq_len, t->seq_len);
    assert_int_equal(cfg.training.global_batch, t->global_batch);
    if (estimate_layout(&m2, &s, &cfg.training, &cfg.layout, &e2, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    assert_true(e2.time.step_s == e.time.step_s);
    assert_true(e2.memory.total_bytes == e.memory.total_bytes);
    free(text);
}

static void round_trip(const char *model, layout l, const training_spec *t)
{
    round_trip_on(model, "h100", l, t);
}

static void test_emit_round_trip(void **state)
{
    (void)state;
    training_spec t = training_default();
    /* HSDP in 8-rank groups, TP 2 with SP, Interleaved1F1B, selective SAC, compiled, async TP */
    layout l = titan(2, 2, 16, 1);
    l.vpp = 2;
    l.pp_schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    l.shard_size = 8;
    l.reshard_after_forward = false;
    l.recompute = RECOMPUTE_SELECTIVE;
    l.compile = l.async_tp = true;
    round_trip("8b", l, &t);
    /* ZBV on 4 stages, full checkpointing, resharded after forward */
    l = titan(1, 4, 16, 1);
    l.vpp = 2;
    l.pp_schedule = PP_SCHEDULE_ZBV;
    l.recompute = RECOMPUTE_FULL;
    round_trip("8b", l, &t);
    /* no pipeline, CP 2, CPU offload; another sequence and batch */
    training_spec t2 = t;
    t2.seq_len = 8192;
    t2.global_batch = 256;
    l = titan(1, 1, 32, 2);
    l.offload = true;
    l.mbs = 2;
    round_trip("8b", l, &t2);
    /* the same with torch's ring rotating K/V by all-to-all (a comment line, read back) */
    l.cp_rotate_alltoall = true;
    round_trip("8b", l, &t2);
    /* MoE: EP 8 borrowing from FSDP, experts whole */
    l = titan(1, 1, 64, 1);
    l.ep = 8;
    l.compile = true;
    round_trip("mixtral-8x7b", l, &t);
    /* 36 GPUs on 8-GPU nodes: torchrun runs 6 processes on each of 6 nodes, not 8 on 5 (40,
     * which plan check read back as DP 40; found by fuzz_trainer_yaml) */
    training_spec t3 = t;
    t3.seq_len = 2048;
    t3.global_batch = 288;
    l = titan(1, 1, 36, 1);
    l.mbs = 8;
    l.recompute = RECOMPUTE_SELECTIVE;
    round_trip("mixtral-8x7b", l, &t3);
    /* compiled blocks with the loss left eager: --compile.components model, read back */
    l = titan(1, 1, 32, 1);
    l.compile = l.loss_eager = true;
    round_trip("8b", l, &t);
    /* the low-precision converters, each said in a comment line the reader takes back:
     * float8 rowwise (the converter to add to llama3_8b), MXFP8 through llama3_8b_mxfp8 and
     * through the converter to add (70B), NVFP4 (the converter to add; cfg21: read back as
     * bf16 before, a step priced 44% slower than the plan that wrote it) */
    l = titan(1, 1, 8, 1);
    l.compile = true;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_ROWWISE;
    round_trip("8b", l, &t);
    l.fp8_recipe = FP8_RECIPE_DEFAULT;
    l.precision = PRECISION_MXFP8;
    round_trip_on("8b", "b200", l, &t);
    l.precision = PRECISION_NVFP4;
    round_trip_on("8b", "b200", l, &t);
    l = titan(8, 1, 8, 1);
    l.compile = true;
    l.precision = PRECISION_MXFP8;
    round_trip_on("70b", "b200", l, &t);
}

/* torchtitan's compiled loss (layout.h loss_eager, layout_loss_compiled). Llama-3.1-8B,
 * vocab 128256, seq 4096, mbs 2, tp 1: 8192 tokens x 128256 = 1,050,673,152 logits.
 * Memory (memory_logits_bytes): eager 14 bytes a logit (bf16 logits kept + log_softmax's fp32
 * output + two fp32 gradients) = 14,709,424,128 B; compiled 4 (bf16 logits + bf16 gradient) =
 * 4,202,692,608 B. Traffic (elementwise_head, after the final norm): compiled 2 bytes a logit
 * forward and 4 backward; eager 6 + 8 forward, 4 + 12 + 6 backward. At tp 2 the loss is priced
 * eager whatever compile says (the vocab-parallel loss is not modelled compiled). */
static void test_compiled_loss(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    training_spec t = training_default();
    layout l = titan(1, 1, 8, 1);
    l.mbs = 2;
    l.compile = true;
    const double e = 8192.0 * 128256.0;
    assert_true(layout_loss_compiled(&l));
    assert_true(fabs(memory_logits_bytes(&m, &t, &l) - 4.0 * e) < 1.0);
    elementwise_list ew;
    elementwise_head(&m, &l, 8192.0, &ew);
    const char *last_f = ew.fwd[ew.n_fwd - 1].name, *last_b = ew.bwd[ew.n_bwd - 1].name;
    assert_string_equal(last_f, "loss.compiled");
    assert_string_equal(last_b, "loss.compiled.bwd");
    assert_true(fabs(ew.fwd[ew.n_fwd - 1].bytes - 2.0 * e) < 1.0);
    assert_true(fabs(ew.bwd[ew.n_bwd - 1].bytes - 4.0 * e) < 1.0);
    l.loss_eager = true;
    assert_false(layout_loss_compiled(&l));
    /* eager: torchtitan's trainer deletes its logits before the backward (trainer.py:795 at
     * b5bcd76), so 12 bytes a logit at the loss's peak; 14 with a loop that keeps them */
    assert_true(fabs(memory_logits_bytes(&m, &t, &l) - 12.0 * e) < 1.0);
    t.hold_logits = true;
    assert_true(fabs(memory_logits_bytes(&m, &t, &l) - 14.0 * e) < 1.0);
    t.hold_logits = false;
    elementwise_head(&m, &l, 8192.0, &ew);
    double fwd_loss = 0, bwd_loss = 0;
    for (int i = 0; i < ew.n_fwd; i++)
        if (!strncmp(ew.fwd[i].name, "loss", 4)) fwd_loss += ew.fwd[i].bytes;
    for (int i = 0; i < ew.n_bwd; i++)
        if (!strncmp(ew.bwd[i].name, "loss", 4)) bwd_loss += ew.bwd[i].bytes;
    assert_true(fabs(fwd_loss - 14.0 * e) < 1.0);
    assert_true(fabs(bwd_loss - 22.0 * e) < 1.0);
    /* the compiled loss makes the step shorter and the peak lower, same layout otherwise */
    estimate eager, fused;
    char err[CM_ERRLEN];
    l.dp = 8;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &eager, err, sizeof err), CM_OK);
    l.loss_eager = false;
    assert_int_equal(estimate_layout(&m, &s, &t, &l, &fused, err, sizeof err), CM_OK);
    assert_true(fused.time.step_s < eager.time.step_s);
    assert_true(fused.memory.total_bytes < eager.memory.total_bytes);
    /* without compile, or at tp 2, the loss is eager */
    l.compile = false;
    assert_false(layout_loss_compiled(&l));
    l = titan(2, 1, 4, 1);
    l.compile = true;
    assert_false(layout_loss_compiled(&l));
    /* loss_eager without compile is refused, with the fix */
    l = titan(1, 1, 8, 1);
    l.loss_eager = true;
    cm_status st = layout_check(&m, &s, &t, &l, 8, err, sizeof err);
    assert_int_not_equal(st, CM_OK);
    assert_non_null(strstr(err, "--compile-components says"));
}

/* A command line with inconsistent degrees: the violations, named. */
static void test_check_reads_violations(void **state)
{
    (void)state;
    const char *text =
        "# model: 8b\n"
        "torchrun --nproc-per-node 8 --nnodes 2 -m torchtitan.train --module llama3 --config "
        "llama3_8b \\\n  --parallelism.data_parallel_shard_degree 3 \\\n"
        "  --parallelism.tensor_parallel_degree 2 --parallelism.pipeline_parallel_degree 2 \\\n"
        "  --parallelism.pipeline_parallel_schedule ZBVZeroBubble --compile.enable \\\n"
        "  --training.num_tokens_per_microbatch_per_dp_rank 5000 "
        "--training.max_context_length 4096 activation-checkpoint:full\n";
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    assert_int_equal(check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err), CM_OK);
    assert_int_equal(cfg.num_gpus, 16);
    assert_int_equal(cfg.layout.recompute, RECOMPUTE_FULL);
    assert_int_equal(cfg.layout.pp_schedule, PP_SCHEDULE_ZBV);
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    check_torchtitan_resolve(&m, &cfg, 0, &rep);
    check_layout(&m, &s, &cfg, 0, &rep, err, sizeof err);
    const char *want[] = {"torchtitan-tokens-per-sequence", "torchtitan-dp-degrees",
                          "pp-schedule-no-compile"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        bool found = false;
        for (int j = 0; j < rep.nviolations && j < CHECK_MAX_VIOLATIONS; j++)
            found |= !strcmp(rep.violations[j].rule, want[i]);
        if (!found) fail_msg("rule %s not reported", want[i]);
    }
    /* a trainer YAML that mentions the flags in a comment stays a YAML */
    const char *yaml = "# converted from --parallelism.tensor_parallel_degree 2\ntrainer:\n"
                       "  strategy: fsdp2\n";
    assert_false(check_is_torchtitan(yaml, strlen(yaml)));
    /* malformed: one line */
    const char *bad = "torchrun -m torchtitan.train --parallelism.tensor_parallel_degree two\n";
    assert_int_equal(check_read_torchtitan(bad, strlen(bad), &cfg, &rep, err, sizeof err),
                     CM_EPARSE);
    assert_non_null(strstr(err, "tensor_parallel_degree needs an integer"));
}

/* The layout's JSON: pp_schedule and async_tp written when set, read back; absent otherwise. */
static void test_json(void **state)
{
    (void)state;
    layout l = titan(2, 2, 16, 1);
    l.vpp = 2;
    l.pp_schedule = PP_SCHEDULE_DUALPIPEV;
    l.async_tp = true;
    l.compile = true;
    json_t *j = layout_to_json(&l);
    assert_string_equal(json_string_value(json_object_get(j, "framework")), "torchtitan");
    assert_string_equal(json_string_value(json_object_get(j, "pp_schedule")), "DualPipeV");
    assert_true(json_is_true(json_object_get(j, "async_tp")));
    layout back;
    char err[CM_ERRLEN];
    assert_int_equal(layout_from_json(j, "t", &back, NULL, err, sizeof err), CM_OK);
    assert_true(layout_equal(&l, &back));
    json_decref(j);
    layout d = layout_default(FRAMEWORK_MEGATRON);
    j = layout_to_json(&d);
    assert_null(json_object_get(j, "pp_schedule"));
    assert_null(json_object_get(j, "async_tp"));
    json_decref(j);
}

/* torchtitan's selective AC (activation_checkpoint.py): per token of Llama-3.1-8B (h 4096, 32
 * heads of 128, 8 KV groups, ffn 14336), saved are x and the MLP output 2 x 2h = 16384, q
 * 2 x 4096 = 8192, v 2 x 1024 = 2048, the attention output 8192 and its lse 4 x 32 = 128, w1's
 * output 2 x 14336 = 28672: 63616 bytes, x 4096 tokens = 260,571,136 bytes per layer. The
 * recomputed ops: the output and down projections and the forward elementwise kernels, not the
 * attention core. */
static void test_selective_ac(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    training_spec t = training_default();
    layout l = titan(1, 1, 8, 1);
    l.recompute = RECOMPUTE_SELECTIVE;
    assert_true(memory_layer_activation_bytes(&m, &t, &l, 0) == 4096.0 * 63616);
    /* TP 2 with SP: all of it split in two, plus what the row-parallel Linears keep under
     * DTensor: wo's reduce-scatter output (2h / 2 = 4096) and w2's whole-sequence Partial
     * output (2h = 8192): 31808 + 12288 = 44096 bytes a token (measured 5-8% of the peak
     * missing without them: bench/results/sactp16_2026-11-28 item 4) */
    layout l2 = titan(2, 1, 4, 1);
    l2.recompute = RECOMPUTE_SELECTIVE;
    assert_true(memory_layer_activation_bytes(&m, &t, &l2, 0) == 4096.0 * 44096);
    recipe r;
    recipe_layer(&m, &s, &t, &l, false, &r, NULL);
    int gemms = 0;
    for (int i = 0; i < r.n_ops; i++) {
        const recipe_op *o = &r.op[i];
        if (o->kind == RECIPE_ATTENTION) assert_false(o->recompute);
        if (o->kind == RECIPE_ELEMENTWISE && o->phase == RECIPE_FWD) assert_true(o->recompute);
        if (o->kind == RECIPE_GEMM && o->recompute) {
            gemms++;
            assert_true(!strcmp(o->name, "attn_out") || !strcmp(o->name, "mlp_down"));
        }
    }
    assert_int_equal(gemms, 2);
}

/*
 * Published torchtitan runs (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md,
 * torchtitan 9dec370, Dec 2024; H100 96 GB HBM2e at a 500 W power limit, 400 Gb/s per GPU;
 * TPS/GPU at step 90). The h100 preset is the 700 W SXM5 80 GB part, so absolute rates are not
 * comparable (printed, not asserted); what the knobs buy is: torch.compile on the 8B FSDP run
 * (Table 1: 5,762 -> 6,667, x1.157) within 10%, and async TP on the 70B FSDP 32 x TP 8 run
 * (Table 4: 829 -> 876, x1.057) as async_tp.h prices it, within the tolerance below.
 */
static double tps_per_gpu(const char *model, int gpus, layout l, int seq, int gbs)
{
    model_spec m;
    system_spec s;
    load(model, "h100", &m, &s);
    training_spec t = training_default();
    t.seq_len = seq;
    t.global_batch = gbs;
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(&m, &s, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return e.tokens_per_s / gpus;
}

static void test_published_knobs(void **state)
{
    (void)state;
    /* Table 1: Llama 3.1 8B, 8 GPUs FSDP, local batch 2, global 16, seq 8192, selective AC */
    layout l = titan(1, 1, 8, 1);
    l.mbs = 2;
    l.recompute = RECOMPUTE_SELECTIVE;
    double eager = tps_per_gpu("8b", 8, l, 8192, 16);
    l.compile = true;
    double compiled = tps_per_gpu("8b", 8, l, 8192, 16);
    print_message("  8B FSDP 8: eager %.0f (published 5762, %+.0f%%), compiled %.0f (6667, "
                  "%+.0f%%); compile x%.3f (published x%.3f)\n",
                  eager, 100 * (eager / 5762 - 1), compiled, 100 * (compiled / 6667 - 1),
                  compiled / eager, 6667.0 / 5762);
    assert_true(fabs((compiled / eager) / (6667.0 / 5762) - 1) < 0.10);
    /* Table 4: Llama 3.1 70B, 256 GPUs FSDP 32 x TP 8, local batch 16, global 512, full AC,
     * compile, float8 */
    l = titan(8, 1, 32, 1);
    l.mbs = 16;
    l.recompute = RECOMPUTE_FULL;
    l.compile = true;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE; /* the 2024 runs' float8; torchtitan now: rowwise */
    double base = tps_per_gpu("70b", 256, l, 8192, 512);
    l.async_tp = true;
    double async = tps_per_gpu("70b", 256, l, 8192, 512);
    print_message("  70B FSDP 32 x TP 8: %.0f (published 829, %+.0f%%), async TP %.0f (876, "
                  "%+.0f%%); async TP x%.3f (published x%.3f)\n",
                  base, 100 * (base / 829 - 1), async, 100 * (async / 876 - 1), async / base,
                  876.0 / 829);
    /* Tolerance on the ratio, two terms. (1) The machine: the model's baseline runs faster
     * than the published 500 W HBM2e parts (printed above); the seconds async TP saves are
     * NVLink and GEMM-chunk time, the rest of the step is not, so the same saving on the
     * published step length gives a smaller ratio: that difference, computed here. (2) The
     * reading: one TPS figure per row (step 90); the same 8B FSDP job reads 5,762 on 8 GPUs
     * and 5,605 on 128 (Tables 1 and 3), 2.7% apart. The old pricing (TE userbuffers'
     * exposed time for every collective, bf16 gathers) gave x1.276, 21% over. */
    double tokens = 512.0 * 8192 / 256; /* per GPU per step */
    double saved_s = tokens / base - tokens / async, pub_base_s = tokens / 829;
    double on_published = 1 + saved_s / (pub_base_s - saved_s);
    double machine = (async / base) / on_published - 1, reading = 1 - 5605.0 / 5762;
    print_message("  async TP's %.2f s saved on the published step: x%.3f; tolerance %.1f%% + "
                  "%.1f%%\n",
                  saved_s, on_published, 100 * machine, 100 * reading);
    assert_true(async > base);
    assert_true(fabs((async / base) / (876.0 / 829) - 1) < machine + reading);
}

/*
 * async_tp.h by hand (h100 preset, TP 8 inside a node, fp8 tensorwise: 1-byte gathers).
 * elems chosen so that the gather's 7 pulls take 8 ms at the group's bus bandwidth (the
 * reduce-scatter's, bf16, 16 ms), latency set to 0. Forward gather beside a 6 ms GEMM run as
 * 8 chunks of 1 ms: 1 + 7 x max(1, 8/7) = 9 ms, 3 exposed. Forward reduce-scatter beside a
 * 20 ms GEMM run as 8 chunks of 3 ms: 3 + 7 x max(3, 16/7) = 24 ms, 4 exposed, plus the
 * reduction of the stacked partials (reads 2 elems bytes, writes 2 elems / 8). Backward: the
 * gather beside the 6/8 ms dgrad, 3 exposed, plus the whole NCCL reduce-scatter (not fused).
 */
static void test_async_tp_block(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("70b", "h100", &m, &s);
    s.intra_latency_s = 0;
    layout l = titan(8, 1, 32, 1);
    l.compile = l.async_tp = true;
    l.precision = PRECISION_FP8;
    l.fp8_recipe = FP8_RECIPE_TENSORWISE; /* torchao's Float8 TP styles: tensorwise only */
    assert_true(async_tp_applies(&l));
    assert_true(async_tp_gather_elem_bytes(&l) == 1.0);
    layout_group g = layout_tp_group(&s, &l);
    assert_false(g.spans_nodes);
    double elems = 8e-3 * collective_busbw_bytes_per_s(&s, g) * 8 / 7;
    async_tp_gemms gm = {6e-3, 8e-3, 20e-3, 24e-3, 6e-3, 8e-3};
    async_tp_exposed e = async_tp_block(&s, &l, g, elems, &gm);
    double reduce = compute_stream_s(&s, 2 * elems * (1 + 1.0 / 8));
    assert_float_equal(e.fwd_leave_s, 4e-3 + reduce, 1e-9);
    assert_float_equal(e.fwd_s, 3e-3 + 4e-3 + reduce, 1e-9);
    assert_float_equal(e.bwd_s,
                       3e-3 + collective_time_s(&s, COLL_REDUCE_SCATTER, 2 * elems, g), 1e-9);
    /* the workspace: the reduce-scatter's two chunks of 8192 x 16 / 8 rows x 8192, bf16 */
    training_spec t = training_default();
    t.seq_len = 8192;
    l.mbs = 16;
    assert_float_equal(async_tp_workspace_bytes(&m, &t, &l), 2.0 * 16384 * 8192 * 2, 0);
    /* bf16 gathers elsewhere: another fp8 recipe (torchtitan's rowwise TP is plain DTensor),
     * Megatron, bf16 */
    l.fp8_recipe = FP8_RECIPE_BLOCKWISE;
    assert_true(async_tp_gather_elem_bytes(&l) == 2.0);
    l.fp8_recipe = FP8_RECIPE_DEFAULT; /* torchtitan's default float8 now: rowwise, bf16 TP */
    assert_int_equal(precision_fp8_recipe(&l), FP8_RECIPE_ROWWISE);
    assert_true(async_tp_gather_elem_bytes(&l) == 2.0);
    l.framework = FRAMEWORK_MEGATRON;
    assert_true(async_tp_gather_elem_bytes(&l) == 2.0);
    assert_false(async_tp_applies(&l));
    assert_float_equal(async_tp_workspace_bytes(&m, &t, &l), 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bubble_fractions),   cmocka_unit_test(test_in_flight),
        cmocka_unit_test(test_zbv_order),          cmocka_unit_test(test_zbv_simulated),
        cmocka_unit_test(test_rules),              cmocka_unit_test(test_emit_round_trip),
        cmocka_unit_test(test_check_reads_violations), cmocka_unit_test(test_json),
        cmocka_unit_test(test_selective_ac),       cmocka_unit_test(test_published_knobs),
        cmocka_unit_test(test_in_flight_from_orders), cmocka_unit_test(test_async_tp_block),
        cmocka_unit_test(test_bound_v_schedules), cmocka_unit_test(test_compiled_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
