/*
 * test_rank_order.c — Megatron's rank order as a layout knob (issue 21; layout.h rank_order,
 * costmodel/layout_place.c): the spans of the DP and PP groups under tp-cp-ep-dp-pp (the default)
 * and tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping), worked by hand on 8-GPU nodes, and what their
 * collectives then cost; the order's rules; the codec; the emitters that write it and plan check
 * reading it back; and the search, which tries the other order only where it moves a group.
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
#include "collective.h"
#include "emit.h"
#include "estimate.h"
#include "estimate_costs.h"
#include "layout_codec.h"
#include "search.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

/* 8 GPUs a node; NVLink 100 GB/s at 1 us; one 25 GB/s NIC a GPU at 5 us; no per-call cost. */
static system_spec toy_system(void)
{
    system_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "toy");
    s.peak_bf16_flops_per_s = 1e15;
    s.hbm_bytes = 80e9;
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.gemm_efficiency_max = 0.5;
    s.hbm_efficiency = 1.0;
    s.attention_efficiency = 0.5;
    s.gpus_per_node = 8;
    s.intra_bandwidth_bytes_per_s = 100e9;
    s.intra_latency_s = 1e-6;
    s.intra_busbw_efficiency = 1.0;
    s.nics_per_node = 8;
    s.nic_bandwidth_bytes_per_s = 25e9;
    s.inter_latency_s = 5e-6;
    s.inter_busbw_efficiency = 1.0;
    s.pcie_bandwidth_bytes_per_s = 25e9;
    s.host_memory_bytes = 2e12;
    s.host_adam_params_per_s = 1e9;
    return s;
}

/* TP 4, PP 2, DP 4 on 32 GPUs, four 8-GPU nodes. */
static layout example(layout_rank_order o)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 4; l.pp = 2; l.dp = 4; l.sp = true;
    l.rank_order = o;
    return l;
}

/* Default order: rank = tp + 4 dp + 16 pp. A DP group {0, 4, 8, 12} holds 2 ranks in each of
 * nodes 0 and 1; a PP pair {0, 16} is on nodes 0 and 2. Under tp-cp-ep-pp-dp: rank = tp + 4 pp
 * + 8 dp. A PP pair {0, 4} shares node 0; a DP group {0, 8, 16, 24} has one rank in each of the
 * four nodes. */
static void test_spans_by_hand(void **state)
{
    (void)state;
    system_spec s = toy_system();
    layout a = example(RANK_ORDER_DP_PP), b = example(RANK_ORDER_PP_DP);
    assert_int_equal(layout_dp_stride(&a), 4);
    assert_int_equal(layout_pp_stride(&a), 16);
    assert_int_equal(layout_dp_stride(&b), 8);
    assert_int_equal(layout_pp_stride(&b), 4);
    layout_group dpa = layout_dp_group(&s, &a), ppa = layout_pp_group(&s, &a);
    layout_group dpb = layout_dp_group(&s, &b), ppb = layout_pp_group(&s, &b);
    assert_true(dpa.spans_nodes);
    assert_int_equal(dpa.members_per_node, 2);
    assert_true(ppa.spans_nodes);
    assert_int_equal(ppa.members_per_node, 1);
    assert_true(dpb.spans_nodes);
    assert_int_equal(dpb.members_per_node, 1);
    assert_false(ppb.spans_nodes);
    assert_int_equal(ppb.members_per_node, 2);
    /* TP stays in the node either way */
    assert_false(layout_tp_group(&s, &a).spans_nodes);
    assert_false(layout_tp_group(&s, &b).spans_nodes);
    assert_true(layout_rank_order_matters(&s, &a));

    /* CP between TP and the pipeline: TP 2, CP 2, PP 2, DP 4. The gradient group is dp x cp:
     * contiguous from stride 2 by default (ranks 0, 2, ..., 14: 4 a node, 2 nodes); under
     * tp-cp-ep-pp-dp cp at stride 2 and dp at stride 8 ({0, 2, 8, 10, 16, 18, 24, 26}: 2 a
     * node, 4 nodes) */
    layout c = example(RANK_ORDER_DP_PP);
    c.tp = 2; c.cp = 2;
    layout_group g = layout_dp_group(&s, &c);
    assert_int_equal(g.size, 8);
    assert_int_equal(g.members_per_node, 4);
    c.rank_order = RANK_ORDER_PP_DP;
    g = layout_dp_group(&s, &c);
    assert_int_equal(g.size, 8);
    assert_true(g.spans_nodes);
    assert_int_equal(g.members_per_node, 2);
}

/* The collectives the order moves, on the toy system (collective.c's formulas):
 * - DP reduce-scatter of 1 GB over 4 ranks. Default, 2 a node on 2 nodes: the ring crosses the
 *   network at the node boundaries, alpha = (4 - 2) x 1 us + (2 - 1) x 5 us = 7 us, two NICs a
 *   node's share: busbw 2 x 25 = 50 GB/s; 7 us + 0.75 GB / 50 GB/s = 15.007 ms. pp-dp, one a
 *   node: 25 GB/s, and PAT's log2(4) = 2 network steps (10 us) beat the ring's 3 (15 us):
 *   10 us + 0.75 GB / 25 GB/s = 30.010 ms.
 * - PP send of 100 MB. Default, across nodes: 5 us + 0.1 GB / 25 GB/s = 4.005 ms; pp-dp, over
 *   NVLink: 1 us + 0.1 GB / 100 GB/s = 1.001 ms. */
static void test_collective_times(void **state)
{
    (void)state;
    system_spec s = toy_system();
    layout a = example(RANK_ORDER_DP_PP), b = example(RANK_ORDER_PP_DP);
    assert_true(REL(collective_time_s(&s, COLL_REDUCE_SCATTER, 1e9, layout_dp_group(&s, &a)),
                    0.015007) < 1e-12);
    assert_true(REL(collective_time_s(&s, COLL_REDUCE_SCATTER, 1e9, layout_dp_group(&s, &b)),
                    0.030010) < 1e-12);
    assert_true(REL(collective_time_s(&s, COLL_SEND_RECV, 1e8, layout_pp_group(&s, &a)),
                    0.004005) < 1e-12);
    assert_true(REL(collective_time_s(&s, COLL_SEND_RECV, 1e8, layout_pp_group(&s, &b)),
                    0.001001) < 1e-12);
    /* the distributed optimizer's sync of 250 M dense parameters (fp32 gradients: 1 GB
     * reduce-scattered; bf16 parameters: 0.5 GB all-gathered, 7 us + 0.375 GB / 50 GB/s =
     * 7.507 ms, or 10 us + 0.375 GB / 25 GB/s = 15.010 ms) */
    training_spec t = training_default();
    double gather_a, gather_b;
    double grad_a = estimate_dp_sync_s(&s, &t, &a, 2.5e8, 0, 0, 0, &gather_a);
    double grad_b = estimate_dp_sync_s(&s, &t, &b, 2.5e8, 0, 0, 0, &gather_b);
    assert_true(REL(grad_a, 0.015007) < 1e-12);
    assert_true(REL(grad_b, 0.030010) < 1e-12);
    assert_true(REL(gather_a, 0.007507) < 1e-12);
    assert_true(REL(gather_b, 0.015010) < 1e-12);
}

/* Where the order changes nothing the search leaves it: TP 8 (a node) with PP 2 and DP 4 puts
 * one rank of every DP and PP group in a node under either order; pp 1 or dp 1 has nothing to
 * swap. */
static void test_matters(void **state)
{
    (void)state;
    system_spec s = toy_system();
    layout l = example(RANK_ORDER_DP_PP);
    l.tp = 8;
    assert_false(layout_rank_order_matters(&s, &l));
    layout o;
    assert_false(layout_rank_order_alternative(&s, &l, &o));
    l = example(RANK_ORDER_DP_PP);
    l.pp = 1; l.dp = 8;
    assert_false(layout_rank_order_matters(&s, &l));
    l = example(RANK_ORDER_DP_PP);
    l.dp = 1;
    assert_false(layout_rank_order_matters(&s, &l));
    l = example(RANK_ORDER_DP_PP);
    assert_true(layout_rank_order_alternative(&s, &l, &o));
    assert_int_equal(o.rank_order, RANK_ORDER_PP_DP);
}

/* The rules: Megatron only; not with Megatron-FSDP (Megatron-Bridge config.py); with pp > 1
 * the expert and dense DP sizes equal (parallel_state.py: ep*etp = tp*cp). */
static void test_rules(void **state)
{
    (void)state;
    model_spec m;
    system_spec s = toy_system();
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    layout l = example(RANK_ORDER_PP_DP);
    assert_int_equal(layout_check(&m, &s, &t, &l, 32, err, sizeof err), CM_OK);
    layout_violation v[8];
    l.sharding = SHARDING_FSDP;
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 32, v, 8), 1);
    assert_string_equal(v[0].rule, "rank-order-not-with-megatron-fsdp");
    l = example(RANK_ORDER_PP_DP);
    l.tp = 2; l.cp = 2; /* a dense model's expert generator: ep 1, etp = tp = 2 != tp*cp = 4 */
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 32, v, 8), 1);
    assert_string_equal(v[0].rule, "rank-order-expert-dp");
    l.pp = 1; l.dp = 8; /* the assertion holds for pp 1 */
    assert_int_equal(layout_check_all(&m, &s, &t, &l, 32, v, 8), 0);
    l = example(RANK_ORDER_PP_DP);
    l.framework = FRAMEWORK_TORCHTITAN;
    l.sharding = SHARDING_FSDP;
    int n = layout_check_all(&m, &s, &t, &l, 32, v, 8);
    bool seen = false;
    for (int i = 0; i < n && i < 8; i++) seen |= !strcmp(v[i].rule, "rank-order-megatron-only");
    assert_true(seen);
}

/* JSON round trip, the default left out; the short name; equality. */
static void test_codec(void **state)
{
    (void)state;
    layout a = example(RANK_ORDER_DP_PP), b = example(RANK_ORDER_PP_DP);
    json_t *j = layout_to_json(&a);
    assert_null(json_object_get(j, "rank_order"));
    json_decref(j);
    j = layout_to_json(&b);
    assert_string_equal(json_string_value(json_object_get(j, "rank_order")), "tp-cp-ep-pp-dp");
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    json_error_t je;
    j = json_loads(text, 0, &je);
    free(text);
    layout back;
    char err[CM_ERRLEN];
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    json_decref(j);
    assert_int_equal(back.rank_order, RANK_ORDER_PP_DP);
    assert_true(layout_equal(&back, &b));
    assert_false(layout_equal(&a, &b));
    char name[256];
    layout_short_name(&b, name, sizeof name);
    assert_non_null(strstr(name, " pp-dp"));
    layout_short_name(&a, name, sizeof name);
    assert_null(strstr(name, "pp-dp"));
    /* a bad value names the key */
    j = json_pack("{s:s, s:s}", "framework", "megatron", "rank_order", "dp-tp");
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "rank_order"));
    json_decref(j);
    layout_rank_order o;
    assert_true(layout_parse_rank_order("pp-dp", &o) && o == RANK_ORDER_PP_DP);
    assert_true(layout_parse_rank_order("TP-CP-EP-DP-PP", &o) && o == RANK_ORDER_DP_PP);
}

typedef struct {
    model_spec m;
    system_spec sys;
    estimate e;
} planned;

static void plan_example(planned *p, layout_rank_order o, layout_sharding sh)
{
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &p->m, err, sizeof err) != CM_OK ||
        system_load("h100", data_dir(), &p->sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = training_default();
    layout l = example(o);
    l.sharding = sh;
    if (estimate_layout(&p->m, &p->sys, &t, &l, &p->e, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
}

static __attribute__((noinline)) char *render(const planned *p, emit_format f, cm_status want)
{
    emit_context ctx = {.model_ref = "8b"};
    char *text = NULL, err[CM_ERRLEN] = "";
    cm_status st = emit_render(f, &p->e, &p->m, &p->sys, &ctx, &text, err, sizeof err);
    if (st != want) fail_msg("emit %d: status %d (%s)", (int)f, st, err);
    return text;
}

/* The YAML read back by plan check: the layout it finds and the broken rules. */
static void check_text(const planned *p, const char *yaml, layout *out, check_report *rep)
{
    check_config cfg;
    char err[CM_ERRLEN];
    if (check_read_yaml(yaml, strlen(yaml), &cfg, rep, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (check_layout(&p->m, &p->sys, &cfg, 0, rep, err, sizeof err) <= 0) fail_msg("%s", err);
    *out = cfg.layout;
}

static void test_emit_and_check(void **state)
{
    (void)state;
    planned *p = malloc(sizeof *p);
    assert_non_null(p);
    plan_example(p, RANK_ORDER_PP_DP, SHARDING_DISTOPT);
    char *args = render(p, EMIT_MEGATRON_ARGS, CM_OK);
    assert_non_null(strstr(args, "--use-tp-pp-dp-mapping"));
    free(args);
    char *bridge = render(p, EMIT_BRIDGE, CM_OK);
    assert_non_null(strstr(bridge, "cfg.dist.use_tp_pp_dp_mapping = True\n"));
    free(bridge);
    char *yaml = render(p, EMIT_YAML, CM_OK);
    assert_non_null(strstr(yaml, "      use_tp_pp_dp_mapping: true\n"));
    /* named as outside SkyRL's schema */
    assert_non_null(strstr(yaml, "megatron_config.{use_tp_pp_dp_mapping }"));
    layout back;
    check_report rep;
    check_text(p, yaml, &back, &rep);
    assert_int_equal(rep.nviolations, 0);
    assert_int_equal(back.rank_order, RANK_ORDER_PP_DP);
    assert_int_equal(back.dp, 4);
    free(yaml);

    /* the default order writes none of them, and reads back as the default */
    plan_example(p, RANK_ORDER_DP_PP, SHARDING_FSDP);
    args = render(p, EMIT_MEGATRON_ARGS, CM_OK);
    assert_null(strstr(args, "tp-pp-dp"));
    free(args);
    yaml = render(p, EMIT_YAML, CM_OK);
    assert_null(strstr(yaml, "use_tp_pp_dp_mapping"));
    check_text(p, yaml, &back, &rep);
    assert_int_equal(back.rank_order, RANK_ORDER_DP_PP);
    assert_int_equal(rep.nviolations, 0);
    /* Megatron-FSDP with the mapping: plan check names the rule */
    const char *at = strstr(yaml, "      use_megatron_fsdp: true\n");
    assert_non_null(at);
    size_t cut = (size_t)(at - yaml) + strlen("      use_megatron_fsdp: true\n");
    char *bad = malloc(strlen(yaml) + 64);
    assert_non_null(bad);
    snprintf(bad, strlen(yaml) + 64, "%.*s      use_tp_pp_dp_mapping: true\n%s", (int)cut, yaml,
             yaml + cut);
    check_text(p, bad, &back, &rep);
    bool seen = false;
    for (int i = 0; i < rep.nviolations && i < CHECK_MAX_VIOLATIONS; i++)
        seen |= !strcmp(rep.violations[i].rule, "rank-order-not-with-megatron-fsdp");
    assert_true(seen);
    free(bad);
    free(yaml);
    free(p);
}

/* The search, Megatron only, re-ranked by the simulator as plan does. 30B on 64 H100s: the
 * best plan is TP 2 PP 2 DP 16 with interleaved stages under tp-cp-ep-pp-dp (its PP sends stay
 * in the node; its DP groups, 2 a node instead of 4, are hidden behind the backward); the best
 * plan of the default order is slower. */
static void test_search_alternative_wins(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    if (model_load("30b", data_dir(), &m, err, sizeof err) != CM_OK ||
        system_load("h100", data_dir(), &sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = training_default();
    search_options o = {.gpus = 64, .keep = 32, .frameworks = {false, true}, .simulate = 32};
    search_result *r = search_result_new();
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(r->count > 0);
    const estimate *best = &r->ranked[0];
    assert_int_equal(best->layout.rank_order, RANK_ORDER_PP_DP);
    assert_int_equal(best->layout.pp, 2);
    assert_true(best->layout.tp * best->layout.pp <= 8); /* the pipeline inside a node */
    const estimate *dflt = NULL;
    for (int i = 0; i < r->count && !dflt; i++)
        if (r->ranked[i].layout.rank_order == RANK_ORDER_DP_PP) dflt = &r->ranked[i];
    assert_non_null(dflt);
    assert_true(best->time_sim.step_s < dflt->time_sim.step_s);
    /* the same layout in the default order, simulated, is slower too */
    layout same = best->layout;
    same.rank_order = RANK_ORDER_DP_PP;
    estimate e;
    assert_int_equal(estimate_layout(&m, &sys, &best->training, &same, &e, err, sizeof err),
                     CM_OK);
    assert_true(e.time.step_s > best->time.step_s);
    assert_true(r->stats.knob[KNOB_RANK_ORDER][STAT_LISTED] > 0);
    search_result_free(r);
}

/* Every layout the search lists under tp-cp-ep-pp-dp is one where the order moves a group:
 * pp > 1, dp > 1, TP x CP below the node (at a node or more each DP and PP rank is alone in
 * its node under either order), Megatron, no FSDP. */
typedef struct {
    long alt, bad;
} alt_seen;

static void visit_alt(const estimate *e, void *arg)
{
    alt_seen *s = arg;
    const layout *l = &e->layout;
    if (l->rank_order != RANK_ORDER_PP_DP) return;
    s->alt++;
    if (l->pp < 2 || l->dp < 2 || l->tp * l->cp >= 8 || l->framework != FRAMEWORK_MEGATRON ||
        l->sharding == SHARDING_FSDP)
        s->bad++;
}

static void test_search_not_tried(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &m, err, sizeof err) != CM_OK ||
        system_load("h100", data_dir(), &sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = training_default();
    /* one node: no group leaves it, the order is never tried */
    alt_seen s = {0};
    search_options o = {.gpus = 8, .keep = 8, .frameworks = {true, true, true},
                        .visit = visit_alt, .visit_arg = &s};
    search_result *r = search_result_new();
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_int_equal(s.alt, 0);
    assert_int_equal(r->stats.knob[KNOB_RANK_ORDER][STAT_LISTED], 0);
    search_result_free(r);
    /* four nodes: tried, only where it moves a group */
    s = (alt_seen){0};
    o.gpus = 32;
    r = search_result_new();
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(s.alt > 0);
    assert_int_equal(s.bad, 0);
    search_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spans_by_hand),
        cmocka_unit_test(test_collective_times),
        cmocka_unit_test(test_matters),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_emit_and_check),
        cmocka_unit_test(test_search_alternative_wins),
        cmocka_unit_test(test_search_not_tried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
