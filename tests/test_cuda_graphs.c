/*
 * test_cuda_graphs.c — torchtitan's CUDA-graphed forward + loss + backward (layout.cuda_graphs,
 * costmodel/cuda_graphs.h) against numbers worked by hand:
 *  - the default follows torchtitan (on at PP 1 and EP 1, off with PP, EP or another framework),
 *    and an explicit --cuda-graphs where torchtitan refuses it breaks a named rule;
 *  - the codec writes the resolved bool for torchtitan layouts and reads it back;
 *  - --emit torchtitan writes --training.disable_cuda_graphs where graphs are off (a PP plan) and
 *    "default" resharding where they are on; plan check reads both back into the same layout, and
 *    a command without the flag is checked as graphed (its PP and reshard-always rules apply);
 *  - pricing: the host-bound Llama-3.2-1B step at seq 64 loses its host floors (the loss head's
 *    launches x host.eager_launch_s) and gains one replay launch; the clip's host time hides
 *    behind the graph; memory keeps the gradients and adds the optimizer's temporaries on top of
 *    the captured peak.
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

#include "check.h"
#include "check_torchtitan.h"
#include "cuda_graphs.h"
#include "emit.h"
#include "estimate.h"
#include "host_dispatch.h"
#include "layer_recipe.h"
#include "layout_codec.h"
#include "estimate_internal.h"
#include "optimizer_host.h"
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

static layout titan(int tp, int pp, int dp)
{
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = tp, l.pp = pp, l.dp = dp, l.sp = tp > 1;
    return l;
}

static bool has_rule(const model_spec *m, const system_spec *s, const training_spec *t,
                     const layout *l, int gpus, const char *rule)
{
    layout_violation v[16];
    int n = layout_check_all(m, s, t, l, gpus, v, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (!strcmp(v[i].rule, rule)) return true;
    return false;
}

static void test_default_and_rules(void **state)
{
    (void)state;
    model_spec m, moe;
    system_spec s;
    load("70b", "h100", &m, &s);
    load("qwen3-30b-a3b", "h100", &moe, &s);
    training_spec t = training_default();
    layout l = titan(8, 1, 8);
    assert_true(cuda_graphs_on(&l)); /* torchtitan's default at PP 1, EP 1 */
    l = titan(8, 2, 4);
    assert_false(cuda_graphs_on(&l)); /* PP: off by default, no rule broken */
    assert_false(has_rule(&m, &s, &t, &l, 64, "cuda-graphs-no-pp"));
    l.cuda_graphs = CUDA_GRAPHS_ON;
    assert_true(has_rule(&m, &s, &t, &l, 64, "cuda-graphs-no-pp"));
    l.cuda_graphs = CUDA_GRAPHS_OFF; /* --no-cuda-graphs is valid anywhere */
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 64, NULL, 0), 0);
    /* EP: plan prices torchtitan's blocking all-to-all */
    layout e = titan(1, 1, 16);
    e.ep = 8;
    e.etp = 1;
    assert_false(cuda_graphs_on(&e));
    e.cuda_graphs = CUDA_GRAPHS_ON;
    assert_true(has_rule(&moe, &s, &t, &e, 16, "cuda-graphs-blocking-ep"));
    /* other frameworks: never by default, a rule when asked */
    layout g = layout_default(FRAMEWORK_FSDP2);
    g.dp = 8;
    assert_false(cuda_graphs_on(&g));
    g.cuda_graphs = CUDA_GRAPHS_ON;
    assert_true(has_rule(&m, &s, &t, &g, 8, "cuda-graphs-torchtitan-only"));
    layout mg = layout_default(FRAMEWORK_MEGATRON);
    mg.dp = 8;
    mg.cuda_graphs = CUDA_GRAPHS_ON;
    char err[CM_ERRLEN];
    assert_int_equal(layout_check(&m, &s, &t, &mg, 8, err, sizeof err), CM_ERULE);
    assert_non_null(strstr(err, "--cuda-graph-full-iteration")); /* names Megatron's own knob */
}

static void test_codec(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    layout l = titan(1, 1, 8), back;
    json_t *j = layout_to_json(&l);
    assert_true(json_is_true(json_object_get(j, "cuda_graphs"))); /* resolved: on */
    assert_int_equal(layout_from_json(j, "t", &back, NULL, err, sizeof err), CM_OK);
    assert_int_equal(back.cuda_graphs, CUDA_GRAPHS_AUTO); /* canonical: the default */
    assert_true(layout_equal(&l, &back));
    json_decref(j);
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    j = layout_to_json(&l);
    assert_true(json_is_false(json_object_get(j, "cuda_graphs")));
    assert_int_equal(layout_from_json(j, "t", &back, NULL, err, sizeof err), CM_OK);
    assert_int_equal(back.cuda_graphs, CUDA_GRAPHS_OFF);
    assert_false(cuda_graphs_on(&back));
    char name[256];
    layout_short_name(&back, name, sizeof name);
    assert_non_null(strstr(name, "no-graphs"));
    json_decref(j);
    /* "cuda_graphs": true on a PP layout stays explicit (and breaks cuda-graphs-no-pp) */
    l = titan(1, 2, 4);
    j = layout_to_json(&l);
    assert_true(json_is_false(json_object_get(j, "cuda_graphs")));
    json_object_set_new(j, "cuda_graphs", json_true());
    assert_int_equal(layout_from_json(j, "t", &back, NULL, err, sizeof err), CM_OK);
    assert_int_equal(back.cuda_graphs, CUDA_GRAPHS_ON);
    json_decref(j);
    /* not written for the other frameworks (their JSON is what it was) */
    layout f = layout_default(FRAMEWORK_FSDP2);
    j = layout_to_json(&f);
    assert_null(json_object_get(j, "cuda_graphs"));
    json_decref(j);
}

/* The emitted command of l, and plan check's reading of it (violations into rep). */
static char *emit_and_read(const model_spec *m, const system_spec *s, const training_spec *t,
                           const layout *l, check_config *cfg, check_report *rep)
{
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(m, s, t, l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    char *text = NULL;
    emit_context ctx = {.model_ref = m->name};
    if (emit_render(EMIT_TORCHTITAN, &e, m, s, &ctx, &text, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (check_read_torchtitan(text, strlen(text), cfg, rep, err, sizeof err) != CM_OK)
        fail_msg("%s\n%s", err, text);
    check_torchtitan_resolve(m, cfg, 0, rep);
    if (check_layout(m, s, cfg, 0, rep, err, sizeof err) != layout_gpus(l))
        fail_msg("%s\n%s", err, text);
    return text;
}

static void same_layout(const layout *read, const layout *wrote, const char *text)
{
    if (layout_equal(read, wrote)) return;
    char a[256], b[256];
    layout_short_name(wrote, a, sizeof a);
    layout_short_name(read, b, sizeof b);
    fail_msg("wrote %s, read %s\n%s", a, b, text);
}

static void test_emit_and_check(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    training_spec t = training_default();
    check_config cfg;
    check_report rep;
    /* a PP plan: graphs off, said; read back off, no rule broken */
    layout l = titan(2, 2, 2);
    l.pp_schedule = PP_SCHEDULE_1F1B; /* as plan check reads torchtitan's default back */
    t.global_batch = 16;
    char *text = emit_and_read(&m, &s, &t, &l, &cfg, &rep);
    assert_non_null(strstr(text, "--training.disable_cuda_graphs"));
    assert_int_equal(cfg.layout.cuda_graphs, CUDA_GRAPHS_OFF);
    same_layout(&cfg.layout, &l, text);
    assert_int_equal(rep.nviolations, 0);
    /* the same text without the flag runs graphs in torchtitan: refused with PP */
    static const char flag[] = " \\\n  --training.disable_cuda_graphs";
    const char *cut = strstr(text, flag);
    assert_non_null(cut);
    size_t at = (size_t)(cut - text), len = sizeof flag - 1, tlen = strlen(text);
    /* the text without the flag, by indices (GCC's -Warray-bounds misreads the pointer form) */
    for (size_t k = at; k + len <= tlen; k++) text[k] = text[k + len];
    char err[CM_ERRLEN];
    assert_int_equal(check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err), CM_OK);
    check_torchtitan_resolve(&m, &cfg, 0, &rep);
    assert_int_equal(cfg.layout.cuda_graphs, CUDA_GRAPHS_ON);
    layout_violation v[8];
    int n = layout_check_all(&m, &s, &cfg.training, &cfg.layout, 8, v, 8);
    bool pp_rule = false;
    for (int i = 0; i < n && i < 8; i++) pp_rule |= !strcmp(v[i].rule, "cuda-graphs-no-pp");
    assert_true(pp_rule);
    assert_string_equal(check_torchtitan_fix("cuda-graphs-no-pp"), "--training.disable_cuda_graphs");
    free(text);
    /* a graphed FSDP plan (PP 1): graphs said on (deepseek_v3_16b/_671b set
     * disable_cuda_graphs=True themselves: bench/torchtitan_validate/README.md), resharding
     * "default"; read back the same */
    l = titan(1, 1, 8);
    t.global_batch = 8;
    text = emit_and_read(&m, &s, &t, &l, &cfg, &rep);
    assert_null(strstr(text, "--training.disable_cuda_graphs"));
    assert_non_null(strstr(text, "--training.no-disable_cuda_graphs"));
    assert_non_null(strstr(text, "--parallelism.fsdp_reshard_after_forward default"));
    assert_true(cuda_graphs_on(&cfg.layout));
    assert_true(cfg.layout.reshard_after_forward);
    same_layout(&cfg.layout, &l, text);
    assert_int_equal(rep.nviolations, 0);
    /* "always" there fails at capture: checked */
    char *d = strstr(text, "after_forward default");
    memcpy(d + strlen("after_forward "), "always ", 7); /* as long as "default" */
    assert_int_equal(check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err), CM_OK);
    check_torchtitan_resolve(&m, &cfg, 0, &rep);
    assert_int_equal(rep.nviolations, 1);
    assert_string_equal(rep.violations[0].rule, "cuda-graphs-reshard-always");
    free(text);
}

/*
 * Pricing, Llama-3.2-1B on one H100 at seq 64, mbs 1 (every kernel shorter than the host's
 * 40.5 us per launch: the host paces every eager pass).
 *  - The loss head's recipe: eager, its forward pace is its launches x host.eager_launch_s
 *    (host_dispatch.c, the head's plain floor); graphed, no pace at all.
 *  - The step: graphed = the same step priced without any host floor (host.eager_launch_s 0,
 *    the optimizer's host constants 0) + one replay launch, host.cuda_graph_replay_s = 1.12 ms.
 *  - The optimizer: eager, its host floor, 146 parameter tensors (16 layers x 9 + embedding +
 *    final norm; tied head) x host.clip_tensor_s 22.1 us + 2 x ceil(1.2358e9 / 20,971,520) = 118
 *    launches x 14.2 us = 3.2266 + 1.6756 = 4.9022 ms (fused AdamW: the clip's part only,
 *    optimizer_host.h); graphed, that hides behind the graph and the GPU's time is left.
 */
static void test_host_bound_pricing(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("1b", "h100", &m, &s);
    assert_true(s.host_eager_launch_s > 0 && s.host_cuda_graph_replay_s == 1.12e-3);
    training_spec t = training_default();
    t.seq_len = 64;
    t.global_batch = 1;
    layout l = titan(1, 1, 1);
    layout eager = l;
    eager.cuda_graphs = CUDA_GRAPHS_OFF;
    assert_true(cuda_graphs_on(&l));
    static recipe r;
    recipe_head(&m, &s, &t, &eager, &r, NULL);
    double lf, lb, lr;
    host_dispatch_launches(&r, &eager, &lf, &lb, &lr);
    assert_true(lf > 0);
    assert_true(fabs(r.host_fwd_s - lf * s.host_eager_launch_s) < 1e-12);
    recipe_head(&m, &s, &t, &l, &r, NULL);
    assert_true(r.host_fwd_s == 0 && r.host_bwd_s == 0);

    estimate ee, eg, en;
    char err[CM_ERRLEN];
    if (estimate_layout(&m, &s, &t, &eager, &ee, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (estimate_layout(&m, &s, &t, &l, &eg, err, sizeof err) != CM_OK) fail_msg("%s", err);
    system_spec nohost = s;
    nohost.host_eager_launch_s = 0;
    nohost.host_clip_tensor_s = nohost.host_adamw_foreach_tensor_s = 0;
    nohost.host_multi_tensor_launch_s = 0;
    if (estimate_layout(&m, &nohost, &t, &eager, &en, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    print_message("  1B seq 64: eager %.2f ms, graphed %.2f ms, no host floor %.2f ms\n",
                  1e3 * ee.time.step_s, 1e3 * eg.time.step_s, 1e3 * en.time.step_s);
    assert_true(fabs(eg.time.compute_s - (en.time.compute_s + 1.12e-3)) < 1e-12);
    assert_true(ee.time.compute_s > 2 * eg.time.compute_s); /* the host floors were most of it */
    /* the optimizer: the clip's host floor eager, the GPU's time graphed */
    double tensors = 16 * 9 + 2, launches = 2 * ceil(1235814400.0 / 20971520.0);
    assert_true(tensors == optimizer_host_tensors(&m, &eager, 0));
    double host_opt = tensors * s.host_clip_tensor_s + launches * s.host_multi_tensor_launch_s;
    print_message("  optimizer host %.6g s (%g tensors, %g launches)\n", host_opt, tensors, launches);
    assert_true(fabs(host_opt - 4.9022e-3) < 1e-6);
    assert_true(fabs(ee.time.optimizer_s - fmax(host_opt, en.time.optimizer_s)) < 1e-12);
    assert_true(fabs(eg.time.optimizer_s -
                     fmax(en.time.optimizer_s, host_opt + 1.12e-3 - eg.time.compute_s -
                                                   eg.time.comm_exposed_s)) < 1e-12);
}

/*
 * Memory, Llama-3.2-1B on one H100 at seq 4096, mbs 2 (the loss's buffers set the peak):
 * graphed = eager + the fp32 gradients (kept: zero_grad(set_to_none=False)) + the root kept
 * gathered by "default" resharding (tied embedding: 2 x (V h + h) bytes); with foreach AdamW its
 * temporaries (4 bytes a parameter, impl.h) come on top of the graph pool's captured peak.
 */
static void test_memory(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("1b", "h100", &m, &s);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 2;
    layout l = titan(1, 1, 1), eager;
    l.mbs = 2;
    eager = l;
    eager.cuda_graphs = CUDA_GRAPHS_OFF;
    memory_breakdown me = memory_peak(&m, &s, &t, &eager), mg = memory_peak(&m, &s, &t, &l);
    assert_true(m.tied_embeddings);
    double root = 2.0 * ((double)m.vocab * m.hidden + m.hidden);
    assert_true(me.loss_phase_bytes > me.blocks_phase_bytes);
    assert_true(fabs(mg.total_bytes - (me.total_bytes + me.gradients_bytes + root)) < 1);
    assert_true(fabs(me.gradients_bytes - 4.0 * 1235814400.0) < 1);
    l.optimizer_impl = eager.optimizer_impl = OPTIMIZER_IMPL_FOREACH;
    memory_breakdown fe = memory_peak(&m, &s, &t, &eager), fg = memory_peak(&m, &s, &t, &l);
    assert_true(fabs(fg.optimizer_temp_bytes - 4.0 * 1235814400.0) < 1);
    assert_true(fabs(fg.total_bytes - (mg.total_bytes + fg.optimizer_temp_bytes)) < 1);
    assert_true(fabs(fe.total_bytes - me.total_bytes) < 1); /* eager: the loss peak stays */
}

/*
 * The step simulator charges what the closed form charges a graphed step (estimate.c,
 * cuda_graphs.h; before tt12 it charged neither): the first replay's launch r before the GPU has
 * work, and the optimizer not before the host has issued the m replays, the clip and AdamW (at
 * H = m r + their host time). Both then give graphed = max(bare + r, H), bare being the same
 * plan priced the same way on a system whose host costs nothing (r and the optimizer's host
 * constants 0: no graph charge at all). (The two differ from each other by FSDP2's overlap,
 * which the simulator runs layer by layer.) Llama-3.2-1B on one H100, seq 64 and 4096, one and
 * four micro-batches (GPU-bound: the launch alone shows), and the same on a host whose clip takes
 * 2 ms a tensor instead of 22.1 us (host-bound: H sets the step).
 */
static void test_simulator_agrees(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("1b", "h100", &m, &s);
    system_spec bare_sys = s;
    bare_sys.host_eager_launch_s = bare_sys.host_cuda_graph_replay_s = 0;
    bare_sys.host_clip_tensor_s = bare_sys.host_adamw_foreach_tensor_s = 0;
    bare_sys.host_multi_tensor_launch_s = 0;
    system_spec slow_host = s;
    slow_host.host_clip_tensor_s = 2e-3;
    sim_workspace *w = sim_alloc();
    assert_non_null(w);
    static const struct { int seq, gbs; } cases[] = {{64, 1}, {64, 4}, {4096, 1}, {4096, 4}};
    bool host_bound_seen = false, gpu_bound_seen = false;
    for (size_t k = 0; k < 2 * sizeof cases / sizeof cases[0]; k++) {
        size_t i = k / 2;
        const system_spec *sys = k % 2 ? &slow_host : &s;
        training_spec t = training_default();
        t.seq_len = cases[i].seq;
        t.global_batch = cases[i].gbs;
        layout l = titan(1, 1, 1);
        l.mbs = 1;
        assert_true(cuda_graphs_on(&l));
        char err[CM_ERRLEN];
        estimate g, b;
        if (estimate_layout(&m, sys, &t, &l, &g, err, sizeof err) != CM_OK) fail_msg("%s", err);
        if (estimate_layout(&m, &bare_sys, &t, &l, &b, err, sizeof err) != CM_OK)
            fail_msg("%s", err);
        sim_options o = {.serialize = false, .trace = false};
        if (sim_estimate(w, &m, sys, &t, &l, &o, &g, err, sizeof err) != CM_OK) fail_msg("%s", err);
        if (sim_estimate(w, &m, &bare_sys, &t, &l, &o, &b, err, sizeof err) != CM_OK)
            fail_msg("%s", err);
        double local, r = sys->host_cuda_graph_replay_s;
        estimate_optimizer_local_s(&m, sys, &l, 0, &local);
        double h = cuda_graphs_host_issue_s(sys, &m, &l, local, cases[i].gbs);
        assert_true(h > cases[i].gbs * r);
        double want_cf = fmax(b.time.step_s + r, h), want_sim = fmax(b.time_sim.step_s + r, h);
        print_message("  seq %d x %d: closed form %.4f ms (bare %.4f), simulated %.4f ms (bare "
                      "%.4f), host issue %.4f ms\n",
                      cases[i].seq, cases[i].gbs, 1e3 * g.time.step_s, 1e3 * b.time.step_s,
                      1e3 * g.time_sim.step_s, 1e3 * b.time_sim.step_s, 1e3 * h);
        assert_true(fabs(g.time.step_s - want_cf) <= 1e-9 * want_cf);
        assert_true(fabs(g.time_sim.step_s - want_sim) <= 1e-9 * want_sim);
        assert_true(fabs(g.time_sim.bubble_s) <= 1e-12); /* the launch is no bubble */
        host_bound_seen |= h > b.time_sim.step_s + r;
        gpu_bound_seen |= h < b.time_sim.step_s;
    }
    assert_true(host_bound_seen && gpu_bound_seen);
    sim_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_and_rules),
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_emit_and_check),
        cmocka_unit_test(test_host_bound_pricing),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_simulator_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
