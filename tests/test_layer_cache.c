/*
 * test_layer_cache.c — what the search's layer-cost cache (costmodel/estimate_search.c)
 * assumes, checked: a layer recipe built under one recompute setting and re-set for another
 * (recipe_set_recompute) prices exactly as one built for it (the cache re-prices held and
 * stored recipes that way), and the cached search form gives the figures estimate_layout gives
 * for layouts met in an order that evicts their recipes from the entries and finds them again
 * in the store (more than eight keys apart, each recompute setting in turn); and the premises of
 * the lower bound a Megatron-FSDP layout takes from its DDP form and of the twins whose memory
 * bounds a layout's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "estimate.h"
#include "estimate_internal.h"
#include "layer_recipe.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *model, model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static layout megatron(int tp, int cp, int ep, int mbs)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = tp;
    l.sp = tp > 1;
    l.cp = cp;
    l.ep = ep;
    l.mbs = mbs;
    l.pp = 4;
    l.dp = 256 / (tp * cp * 4);
    return l;
}

/* recipe_layer(rc_a) + recipe_set_recompute(rc_b) prices as recipe_layer(rc_b), for every pair
 * of settings, dense and MoE layers, Megatron (TE) and the PyTorch paths. */
static void check_reset(const model_spec *m, const system_spec *s, layout l, bool moe)
{
    static recipe a, b;
    training_spec t = training_default();
    for (int ra = 0; ra < 3; ra++)
        for (int rb = 0; rb < 3; rb++) {
            layout la = l, lb = l;
            la.recompute = (layout_recompute)ra;
            lb.recompute = (layout_recompute)rb;
            recipe_layer(m, s, &t, &la, moe, &a, NULL);
            recipe_set_recompute(s, m, &lb, &a, moe, true);
            recipe_layer(m, s, &t, &lb, moe, &b, NULL);
            recipe_time ta, tb;
            memset(&ta, 0, sizeof ta);
            memset(&tb, 0, sizeof tb);
            recipe_price(&a, &ta);
            recipe_price(&b, &tb);
            assert_int_equal(a.n_ops, b.n_ops);
            assert_memory_equal(&ta, &tb, sizeof ta);
            assert_true(a.host_fwd_s == b.host_fwd_s && a.host_bwd_s == b.host_bwd_s);
        }
}

static void test_recompute_reset(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("deepseek-v3", &m, &s);
    check_reset(&m, &s, megatron(4, 2, 8, 1), true);
    check_reset(&m, &s, megatron(4, 2, 8, 1), false);
    check_reset(&m, &s, megatron(1, 1, 32, 2), true);
    load("8b", &m, &s);
    check_reset(&m, &s, megatron(2, 1, 1, 2), false);
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.dp = 8;
    f.mbs = 2;
    check_reset(&m, &s, f, false);
    layout tt = layout_default(FRAMEWORK_TORCHTITAN);
    tt.tp = 2;
    tt.sp = true;
    tt.dp = 4;
    check_reset(&m, &s, tt, false);
}

/* The _priced forms (layer_recipe.h) give the recipe the plain ones give and, into price,
 * exactly recipe_price of it: built, built for FSDP from its DDP form, and re-set for another
 * recompute setting; Megatron MoE layers (whose host pacing prices them on the way:
 * mcore_moe_host_pace_priced) and dense ones. */
static void check_priced(const model_spec *m, const system_spec *s, layout l, bool moe)
{
    static recipe a, b, base;
    training_spec t = training_default();
    for (int rc = 0; rc < 3; rc++) {
        layout lr = l;
        lr.recompute = (layout_recompute)rc;
        recipe_time pa, pb;
        memset(&pa, 0, sizeof pa);
        memset(&pb, 0, sizeof pb);
        recipe_layer(m, s, &t, &lr, moe, &a, NULL);
        recipe_price(&a, &pa);
        recipe_layer_priced(m, s, &t, &lr, moe, &b, &pb);
        assert_int_equal(a.n_ops, b.n_ops);
        assert_memory_equal(&pa, &pb, sizeof pa);
        assert_true(a.host_fwd_s == b.host_fwd_s && a.host_bwd_s == b.host_bwd_s);
        if (moe) assert_true(b.host_fwd_s > 0); /* paced */
        /* another setting's recipe re-set for this one */
        layout lo = l;
        lo.recompute = (layout_recompute)((rc + 1) % 3);
        recipe_layer(m, s, &t, &lo, moe, &b, NULL);
        memset(&pb, 0, sizeof pb);
        recipe_set_recompute_priced(s, m, &lr, &b, moe, &pb);
        assert_memory_equal(&pa, &pb, sizeof pa);
        /* Megatron-FSDP from its DDP form */
        layout lf = lr, ld = lr;
        lf.sharding = SHARDING_FSDP;
        ld.sharding = SHARDING_DDP;
        recipe_layer(m, s, &t, &ld, moe, &base, NULL);
        recipe_layer_fsdp_from(m, s, &t, &lf, moe, &base, &a);
        memset(&pa, 0, sizeof pa);
        recipe_price(&a, &pa);
        memset(&pb, 0, sizeof pb);
        recipe_layer_fsdp_from_priced(m, s, &t, &lf, moe, &base, &b, &pb);
        assert_int_equal(a.n_ops, b.n_ops);
        assert_memory_equal(&pa, &pb, sizeof pa);
    }
}

static void test_priced_forms(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("deepseek-v3", &m, &s);
    /* Megatron-Core's MoE host costs are set for H100, so the MoE layers below take the
     * paced path the search prices once (their floors come out at or above the GPU's times) */
    assert_true(s.host_mcore_moe_fwd_s > 0);
    check_priced(&m, &s, megatron(4, 2, 8, 1), true);
    check_priced(&m, &s, megatron(1, 1, 32, 2), true);
    check_priced(&m, &s, megatron(2, 1, 256, 1), true);
    check_priced(&m, &s, megatron(4, 2, 8, 1), false);
    load("8b", &m, &s);
    check_priced(&m, &s, megatron(2, 1, 1, 2), false);
}

/* 24 keys (tp x cp x mbs), each under the three recompute settings in turn and under the
 * three shardings: the cached form's figures are estimate_layout's. */
static void test_search_form_matches(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("deepseek-v3", &m, &s);
    training_spec t = training_default();
    estimate_cache *c = estimate_cache_new_for(1 << 20);
    assert_non_null(c);
    int tps[] = {1, 2, 4, 8}, cps[] = {1, 2}, mbss[] = {1, 2, 4};
    long compared = 0, timed = 0;
    for (int rc = 0; rc < 3; rc++)
        for (int sh = 0; sh < 3; sh++)
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 2; b++)
                    for (int k = 0; k < 3; k++) {
                        layout l = megatron(tps[a], cps[b], 8, mbss[k]);
                        l.recompute = (layout_recompute)rc;
                        l.sharding = (layout_sharding)sh;
                        estimate got, want;
                        estimate_outcome how;
                        char err[CM_ERRLEN];
                        if (estimate_layout(&m, &s, &t, &l, &want, err, sizeof err) != CM_OK)
                            continue;
                        assert_int_equal(
                            estimate_layout_search(&m, &s, &t, &l, 1, &got, c, 0, &how), CM_OK);
                        compared++;
                        assert_true(got.memory.need_bytes == want.memory.need_bytes);
                        if (how != ESTIMATE_TIMED) continue;
                        timed++;
                        assert_true(got.time.step_s == want.time.step_s);
                    }
    long builds, hits;
    estimate_cache_counts(c, &builds, &hits);
    estimate_cache_free(c);
    assert_true(compared >= 150 && timed >= 40);
    /* each recipe built once (24 keys, a dense and an MoE kind each) and found in the store
     * under the next recompute setting, 24 keys later (the entries hold 8): without the store
     * every setting builds its keys again */
    assert_true(builds <= 2 * 24);
}

/* speed12: the cache's shortcuts for the precisions a default search lists beside each layout
 * (bf16, FP8, and FP8 with --fp8-param-gather under the distributed optimizer and
 * Megatron-FSDP, in turn): a layout's costs from its own precision's last-hit slot, FP8 with
 * the parameter gather on the recipes of FP8 without it (Megatron without FSDP reads the knob
 * in no recipe), and DeepSeek-V3's MTP modules' layer in the loss head taken from the entry
 * (head_cost): the figures estimate_layout gives, memory and step time. */
static void test_search_form_precisions(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("deepseek-v3", &m, &s);
    training_spec t = training_default();
    estimate_cache *c = estimate_cache_new_for(1 << 20);
    assert_non_null(c);
    int tps[] = {1, 2, 4, 8}, mbss[] = {1, 2};
    long compared = 0, timed = 0, pg_timed = 0;
    for (int rc = 0; rc < 3; rc++)
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 2; k++)
                for (int sh = 0; sh < 3; sh++)
                    for (int p = 0; p < 3; p++) {
                        layout l = megatron(tps[a], 1, 8, mbss[k]);
                        l.recompute = (layout_recompute)rc;
                        l.sharding = (layout_sharding)sh;
                        if (p > 0) l.precision = PRECISION_FP8;
                        if (p == 2) {
                            if (l.sharding == SHARDING_DDP) continue;
                            l.fp8_param_gather = true;
                        }
                        estimate got, want;
                        estimate_outcome how;
                        char err[CM_ERRLEN];
                        if (estimate_layout(&m, &s, &t, &l, &want, err, sizeof err) != CM_OK)
                            continue;
                        assert_int_equal(
                            estimate_layout_search(&m, &s, &t, &l, 1, &got, c, 0, &how), CM_OK);
                        compared++;
                        assert_true(got.memory.need_bytes == want.memory.need_bytes);
                        if (how != ESTIMATE_TIMED) continue;
                        timed++;
                        pg_timed += p == 2;
                        assert_true(got.time.step_s == want.time.step_s);
                    }
    long builds, hits;
    estimate_cache_counts(c, &builds, &hits);
    estimate_cache_free(c);
    assert_true(compared >= 150 && timed >= 30 && pg_timed >= 10);
    /* at most 8 keys a precision (tp x mbs), a dense and an MoE kind each, bf16 and FP8: 28
     * built when written (the FP8 parameter gather's layouts build none of their own) */
    assert_true(builds <= 2 * 8 * 2);
}

/* The search's lower bound on a Megatron-FSDP layout (estimate_search.c
 * fsdp_layers_lower_bound), checked on its premises: the FSDP layer has its DDP form's GPU
 * forward sum, recompute and exposed TP/CP/EP times, and at least its backward sum (more by
 * the unfused gradient copy of grad_accum.h since prec7); its fwd_s and bwd_s are at least those
 * sums; and
 * the first stage's decoder layers priced with the DDP form's GPU sums (less the 1e-9 margin)
 * come to at most that stage priced with the FSDP layer's own costs. Dense and MoE models,
 * each recompute setting, TP overlap on and off. */
static void check_fsdp_bound(const model_spec *m, const system_spec *s, layout l, long *n)
{
    training_spec t = training_default();
    l.sharding = SHARDING_FSDP;
    l.overlap_grad_reduce = l.overlap_param_gather = true;
    char err[CM_ERRLEN];
    if (layout_check(m, s, &t, &l, 0, err, sizeof err) != CM_OK) return;
    layout ld = l;
    ld.sharding = SHARDING_DDP;
    ld.overlap_grad_reduce = ld.overlap_param_gather = false;
    layer_kinds kf, kd;
    estimate_layer_times(m, s, &t, &l, &kf);
    estimate_layer_times(m, s, &t, &ld, &kd);
    layer_time *f[2] = {&kf.dense, &kf.moe}, *d[2] = {&kd.dense, &kd.moe};
    for (int i = 0; i < 2; i++) {
        assert_true(f[i]->gpu_fwd_s == d[i]->gpu_fwd_s);
        assert_true(f[i]->gpu_bwd_s >= d[i]->gpu_bwd_s);
        assert_true(f[i]->recompute_s == d[i]->recompute_s);
        assert_true(f[i]->tp_s == d[i]->tp_s && f[i]->cp_s == d[i]->cp_s &&
                    f[i]->ep_s == d[i]->ep_s);
        assert_true(f[i]->fwd_s >= f[i]->gpu_fwd_s && f[i]->bwd_s >= f[i]->gpu_bwd_s);
        assert_true(f[i]->gather_s > 0 && d[i]->gather_s == 0);
        d[i]->fwd_s = d[i]->gpu_fwd_s;
        d[i]->bwd_s = d[i]->gpu_bwd_s;
    }
    kd.dense_bf16 = kd.dense;
    kd.moe_bf16 = kd.moe;
    double lb = estimate_stage_layers_total(m, s, &t, &l, 0, &kd) * (1 - 1e-9);
    double real = estimate_stage_layers_total(m, s, &t, &l, 0, &kf);
    assert_true(lb > 0 && lb <= real);
    (*n)++;
}

static void test_fsdp_bound_from_ddp(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    const char *models[] = {"deepseek-v3", "mixtral-8x7b", "70b"};
    int tps[] = {1, 2, 4, 8}, cps[] = {1, 2}, eps[] = {1, 8}, mbss[] = {1, 2};
    long n = 0;
    for (int mi = 0; mi < 3; mi++) {
        load(models[mi], &m, &s);
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 2; b++)
                for (int e = 0; e < 2; e++)
                    for (int k = 0; k < 2; k++)
                        for (int rc = 0; rc < 3; rc++)
                            for (int ov = 0; ov < 2; ov++) {
                                if (!model_is_moe(&m) && eps[e] > 1) continue;
                                if (ov && tps[a] == 1) continue;
                                layout l = megatron(tps[a], cps[b], eps[e], mbss[k]);
                                l.recompute = (layout_recompute)rc;
                                l.tp_comm_overlap = ov;
                                check_fsdp_bound(&m, &s, l, &n);
                            }
    }
    assert_true(n >= 200);
}

/* The search's twin rules (estimate_search.c twin_fits): under Megatron the distributed
 * optimizer's memory is at most DDP's, selective recompute of core attention alone (bf16)
 * at most no recompute's, and FP8 with --fp8-param-gather at most FP8 without it (speed12),
 * stage peak and need alike, over dense and MoE models, pipeline and
 * not, flash and unfused attention, with TP overlap's userbuffers on and off. */
static void test_twin_memory_order(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    const char *models[] = {"deepseek-v3", "mixtral-8x7b", "70b"};
    int tps[] = {1, 2, 8}, cps[] = {1, 2}, eps[] = {1, 8}, pps[] = {1, 4};
    long n = 0;
    for (int mi = 0; mi < 3; mi++) {
        load(models[mi], &m, &s);
        for (int at = 0; at < 2; at++) {
            training_spec t = training_default();
            if (at) t.attention = ATTENTION_UNFUSED;
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 2; b++)
                    for (int e = 0; e < 2; e++)
                        for (int p = 0; p < 2; p++)
                            for (int ov = 0; ov < 2; ov++) {
                                if ((!model_is_moe(&m) && eps[e] > 1) || (ov && tps[a] == 1))
                                    continue;
                                layout l = megatron(tps[a], cps[b], eps[e], 1);
                                l.pp = pps[p];
                                l.dp = 256 / (l.tp * l.cp * l.pp);
                                l.tp_comm_overlap = ov;
                                char err[CM_ERRLEN];
                                if (layout_check(&m, &s, &t, &l, 0, err, sizeof err) != CM_OK)
                                    continue;
                                for (int rc = 0; rc < 3; rc++) { /* DISTOPT <= DDP */
                                    layout d = l, o = l;
                                    d.recompute = o.recompute = (layout_recompute)rc;
                                    o.sharding = SHARDING_DISTOPT;
                                    memory_breakdown md = memory_peak(&m, &s, &t, &d);
                                    memory_breakdown mo = memory_peak(&m, &s, &t, &o);
                                    assert_true(mo.need_bytes <= md.need_bytes);
                                    assert_true(mo.total_bytes <= md.total_bytes);
                                    n++;
                                }
                                for (int sh = 0; sh < 3; sh++) { /* SELECTIVE <= NONE */
                                    layout none = l, sel = l;
                                    none.sharding = sel.sharding = (layout_sharding)sh;
                                    sel.recompute = RECOMPUTE_SELECTIVE;
                                    memory_breakdown mn = memory_peak(&m, &s, &t, &none);
                                    memory_breakdown ms = memory_peak(&m, &s, &t, &sel);
                                    assert_true(ms.need_bytes <= mn.need_bytes);
                                    assert_true(ms.total_bytes <= mn.total_bytes);
                                    /* unfused attention: selective saves the softmax term */
                                    if (at) assert_true(ms.total_bytes < mn.total_bytes);
                                    n++;
                                }
                                /* FP8 with --fp8-param-gather <= FP8 without (speed12), under
                                 * the distributed optimizer and Megatron-FSDP, each recompute
                                 * setting, with and without bf16 first/last layers */
                                for (int sh = 1; sh < 3; sh++)
                                    for (int rc = 0; rc < 3; rc++)
                                        for (int bf = 0; bf < 2; bf++) {
                                            layout no = l;
                                            no.sharding = (layout_sharding)sh;
                                            no.recompute = (layout_recompute)rc;
                                            no.precision = PRECISION_FP8;
                                            no.bf16_layers_start = no.bf16_layers_end = bf;
                                            layout pg = no;
                                            pg.fp8_param_gather = true;
                                            if (layout_check(&m, &s, &t, &pg, 0, err,
                                                             sizeof err) != CM_OK)
                                                continue;
                                            memory_breakdown mn = memory_peak(&m, &s, &t, &no);
                                            memory_breakdown mp = memory_peak(&m, &s, &t, &pg);
                                            assert_true(mp.need_bytes <= mn.need_bytes);
                                            assert_true(mp.total_bytes <= mn.total_bytes);
                                            assert_true(mp.weights_bytes < mn.weights_bytes);
                                            n++;
                                        }
                            }
        }
    }
    assert_true(n >= 600);
}

/* speed26: torchtitan's layouts are listed under each pipeline schedule, which no layer or
 * loss-head recipe reads (the cache's key leaves it out, estimate_search.c cache_key): the
 * cached form's figures under every schedule are estimate_layout's, and each key's recipes
 * are built once for all schedules (6 keys, tp x mbs, a dense model: at most 6 builds, where a
 * key that holds the schedule builds them again for each schedule that runs). */
static void test_schedule_shares_recipes(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", &m, &s);
    training_spec t = training_default();
    estimate_cache *c = estimate_cache_new_for(1 << 20);
    assert_non_null(c);
    int tps[] = {1, 2, 4}, mbss[] = {1, 2};
    long compared = 0, timed = 0;
    int schedules_timed = 0;
    for (int sch = 0; sch < PP_SCHEDULE_COUNT; sch++) {
        long timed_before = timed;
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 2; k++) {
                layout l = layout_default(FRAMEWORK_TORCHTITAN);
                l.tp = tps[a];
                l.pp = 4;
                l.dp = 8;
                l.mbs = mbss[k];
                l.pp_schedule = (layout_pp_schedule)sch;
                l.vpp = sch == PP_SCHEDULE_INTERLEAVED_1F1B || sch == PP_SCHEDULE_ZBV ||
                                sch == PP_SCHEDULE_DUALPIPEV
                            ? 2
                            : 1;
                estimate got, want;
                estimate_outcome how;
                char err[CM_ERRLEN];
                if (estimate_layout(&m, &s, &t, &l, &want, err, sizeof err) != CM_OK) continue;
                assert_int_equal(estimate_layout_search(&m, &s, &t, &l, 1, &got, c, 0, &how),
                                 CM_OK);
                compared++;
                assert_true(got.memory.need_bytes == want.memory.need_bytes);
                if (how != ESTIMATE_TIMED) continue;
                timed++;
                assert_true(got.time.step_s == want.time.step_s);
            }
        schedules_timed += timed > timed_before;
    }
    long builds, hits;
    estimate_cache_counts(c, &builds, &hits);
    estimate_cache_free(c);
    assert_true(compared >= 12 && schedules_timed >= 3);
    assert_true(builds <= 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recompute_reset),
        cmocka_unit_test(test_search_form_matches),
        cmocka_unit_test(test_search_form_precisions),
        cmocka_unit_test(test_priced_forms),
        cmocka_unit_test(test_fsdp_bound_from_ddp),
        cmocka_unit_test(test_twin_memory_order),
        cmocka_unit_test(test_schedule_shares_recipes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
