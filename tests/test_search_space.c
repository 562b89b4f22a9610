/*
 * test_search_space.c — issue 21's search space: the micro-batch sizes (every divisor of the
 * per-replica batch), --gbs-policy nearest (Calculon's largest multiple of dp), and the lower-
 * bound pruning that must leave the result exactly as a full search gives it; expert tensor
 * parallel folding (--etp-fold).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layout_codec.h"
#include "search.h"
#include "search_uneven.h"

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

/* ---- micro-batch sizes ---- */

typedef struct {
    unsigned long long mbs_mask; /* bit k: micro-batch k seen (k < 64) */
    int bad;                     /* layouts visited that break the expectation */
    int dp641, dp1282;           /* nearest: layouts seen with these data-parallel sizes */
} seen;

static void visit_fsdp2_mbs(const estimate *e, void *arg)
{
    seen *s = arg;
    if (e->layout.framework != FRAMEWORK_FSDP2 || e->layout.cp != 1) return;
    if (e->layout.mbs < 64) s->mbs_mask |= 1ull << e->layout.mbs;
    else s->bad++;
}

/* 8 GPUs, batch 96, FSDP2 without CP: dp 8, 12 sequences per replica; its divisors are 1, 2,
 * 3, 4, 6 and 12 (before issue 21 only 1, 2, 4 were tried: 8 and 16 do not divide 12). */
static void test_micro_batches_are_divisors(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    t.global_batch = 96;
    seen s = {0};
    search_options o = {.gpus = 8, .keep = 8, .frameworks = {true, false},
                        .visit = visit_fsdp2_mbs, .visit_arg = &s};
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    unsigned long long want = (1ull << 1) | (1ull << 2) | (1ull << 3) | (1ull << 4) |
                              (1ull << 6) | (1ull << 12);
    assert_int_equal(s.bad, 0);
    assert_true(s.mbs_mask == want);
    search_result_free(r);
}

/* ---- global batch policy ---- */

static void visit_nearest(const estimate *e, void *arg)
{
    seen *s = arg;
    int dp = e->layout.dp, g = e->training.global_batch;
    if (dp == 641) {
        s->dp641++;
        /* floor(2520 / 641) = 3: 1923 sequences, 3 per replica, micro-batch 1 or 3 */
        if (g != 1923 || (e->layout.mbs != 1 && e->layout.mbs != 3)) s->bad++;
    } else if (dp == 1282) {
        s->dp1282++;
        if (g != 1282 || e->layout.mbs != 1) s->bad++; /* floor(2520 / 1282) = 1 */
    } else {
        s->bad++; /* 5128 = 8 x 641 (prime): with tp <= 8, pp <= 96, dp is 641 or 1282 */
    }
}

/* Calculon's README example: 5128 A100s, batch 2520. No data-parallel size of 5128 GPUs
 * divides 2520 (each holds the prime 641, or exceeds the layers or heads without it), so the
 * exact policy finds nothing; nearest runs 3 x 641 = 1923 or 1 x 1282 sequences. */
static void test_gbs_nearest_5128(void **state)
{
    (void)state;
    model_spec m = load_model("175b");
    system_spec sys = load_system("a100-80g");
    training_spec t = training_default();
    t.seq_len = 2048;
    t.global_batch = 2520;
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    search_options o = {.gpus = 5128, .keep = 8, .frameworks = {false, true}};
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_int_equal(r->evaluated, 0);
    seen s = {0};
    o.gbs_nearest = true;
    o.visit = visit_nearest;
    o.visit_arg = &s;
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_int_equal(s.bad, 0);
    assert_true(s.dp641 > 0);
    assert_true(s.dp1282 > 0);
    /* without the visitor, the kept plans carry the batch they run */
    o.visit = NULL;
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(r->count > 0);
    for (int i = 0; i < r->count; i++) {
        int dp = r->ranked[i].layout.dp;
        assert_int_equal(r->ranked[i].training.global_batch, (2520 / dp) * dp);
    }
    search_result_free(r);
}

/* ---- pruning keeps the result ---- */

static void assert_same_estimate(const estimate *a, const estimate *b)
{
    assert_true(layout_equal(&a->layout, &b->layout));
    assert_true(a->time.step_s == b->time.step_s);
    assert_true(a->memory.total_bytes == b->memory.total_bytes);
    assert_int_equal(a->feasible, b->feasible);
}

static void check_prune_of(const char *model, const char *system, int gpus, int simulate,
                           bool torchtitan, int keep, long *pruned)
{
    model_spec m = load_model(model);
    system_spec sys = load_system(system);
    training_spec t = training_default();
    search_result *a = search_result_new(), *b = search_result_new();
    char err[CM_ERRLEN];
    search_options o = {.gpus = gpus, .keep = keep, .frameworks = {true, true, torchtitan},
                        .simulate = simulate};
    assert_int_equal(search_run(&m, &sys, &t, &o, a, err, sizeof err), CM_OK);
    o.no_prune = true;
    assert_int_equal(search_run(&m, &sys, &t, &o, b, err, sizeof err), CM_OK);
    assert_int_equal(b->stats.layouts[STAT_BOUND], 0);
    *pruned += a->stats.layouts[STAT_BOUND];
    assert_int_equal(a->evaluated, b->evaluated);
    assert_int_equal(a->feasible, b->feasible);
    assert_int_equal(a->count, b->count);
    for (int i = 0; i < a->count; i++) assert_same_estimate(&a->ranked[i], &b->ranked[i]);
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        assert_int_equal(a->has_best[fw], b->has_best[fw]);
        if (a->has_best[fw]) assert_same_estimate(&a->best[fw], &b->best[fw]);
        assert_int_equal(a->has_closest[fw], b->has_closest[fw]);
        if (a->has_closest[fw]) assert_same_estimate(&a->closest[fw], &b->closest[fw]);
        for (int sh = 0; sh < 3; sh++) {
            assert_int_equal(a->has_best_sharding[fw][sh], b->has_best_sharding[fw][sh]);
            if (a->has_best_sharding[fw][sh])
                assert_same_estimate(&a->best_sharding[fw][sh], &b->best_sharding[fw][sh]);
        }
    }
    search_result_free(a);
    search_result_free(b);
}

static void check_prune(const char *model, const char *system, int gpus, int simulate,
                        long *pruned)
{
    check_prune_of(model, system, gpus, simulate, false, 32, pruned);
}

static void test_prune_keeps_result(void **state)
{
    (void)state;
    long pruned = 0;
    /* torchtitan too: its pipelines that keep their FSDP units gathered charge the exposed
     * FSDP time once a step, which the bound counted once per micro-batch (speed7: 70B on 64
     * GPUs lost plans of 56.7-59.2 s to it, HSDP over 2-8 GPUs with pp 2-8) */
    check_prune_of("70b", "h100", 64, 0, true, 64, &pruned);
    check_prune("8b", "h100", 64, 0, &pruned);
    check_prune("70b", "h100", 1024, SEARCH_SIMULATE_DEFAULT, &pruned);
    check_prune("mixtral-8x7b", "h200", 256, 0, &pruned);
    check_prune("deepseek-v2-lite", "a100-80g", 64, 0, &pruned);
    assert_true(pruned > 1000); /* the bound did skip layouts, so the comparison means something */
}

/* ---- a visitor that names the times it needs is pruned under, and sees the same ---- */

/* What plan report's visitor collects: layouts seen, those that fit per framework, and the
 * best Megatron plan without EP (which needs step times). */
typedef struct {
    long seen, fit[LAYOUT_NFRAMEWORKS], untimed;
    bool has_noep;
    estimate noep;
} vis_counts;

static void vis_see(const estimate *e, void *arg)
{
    vis_counts *v = arg;
    v->seen++;
    if (!e->feasible) return;
    v->fit[e->layout.framework]++;
    if (e->layout.framework == FRAMEWORK_MEGATRON && e->layout.ep == 1 &&
        (!v->has_noep || search_better(e, &v->noep))) {
        v->noep = *e;
        v->has_noep = true;
    }
}

static void vis_fit(const estimate *e, void *arg)
{
    vis_counts *v = arg;
    assert_true(e->feasible);
    v->seen++;
    v->untimed++;
    v->fit[e->layout.framework]++;
}

static double vis_bound(const layout *l, void *arg)
{
    const vis_counts *v = arg;
    if (l->framework != FRAMEWORK_MEGATRON || l->ep != 1) return 0;
    if (!v->has_noep) return -1;
    return v->noep.time.step_s / v->noep.training.global_batch;
}

static void check_visitor_prune(const char *model, const char *system, int gpus)
{
    model_spec m = load_model(model);
    system_spec sys = load_system(system);
    training_spec t = training_default();
    search_result *a = search_result_new(), *b = search_result_new();
    char err[CM_ERRLEN];
    vis_counts va = {0}, vb = {0};
    /* one plan kept: the bound is tight, so most Megatron plans without EP would go untimed
     * but for the visitor's own bound */
    search_options o = {.gpus = gpus, .keep = 1, .frameworks = {true, true},
                        .visit = vis_see, .visit_arg = &va, .visit_bound = vis_bound,
                        .visit_fit = vis_fit};
    assert_int_equal(search_run(&m, &sys, &t, &o, a, err, sizeof err), CM_OK);
    o.visit_arg = &vb;
    o.visit_bound = NULL; /* every layout that fits timed, as before visit_bound */
    o.visit_fit = NULL;
    assert_int_equal(search_run(&m, &sys, &t, &o, b, err, sizeof err), CM_OK);
    assert_true(va.untimed > 100); /* layouts were skipped untimed */
    assert_int_equal(vb.untimed, 0);
    assert_int_equal(va.seen, vb.seen);
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) assert_int_equal(va.fit[fw], vb.fit[fw]);
    assert_int_equal(va.has_noep, vb.has_noep);
    if (va.has_noep) assert_same_estimate(&va.noep, &vb.noep);
    assert_int_equal(a->evaluated, b->evaluated);
    assert_int_equal(a->feasible, b->feasible);
    assert_int_equal(a->count, b->count);
    for (int i = 0; i < a->count; i++) assert_same_estimate(&a->ranked[i], &b->ranked[i]);
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        assert_int_equal(a->has_best[fw], b->has_best[fw]);
        if (a->has_best[fw]) assert_same_estimate(&a->best[fw], &b->best[fw]);
        assert_int_equal(a->has_closest[fw], b->has_closest[fw]);
        if (a->has_closest[fw]) assert_same_estimate(&a->closest[fw], &b->closest[fw]);
    }
    search_result_free(a);
    search_result_free(b);
}

/* plan report's searches (search.h visit_bound): the same plans and the same visits with the
 * visitor's bound as with every fitting layout timed */
static void test_visitor_prune_keeps_result(void **state)
{
    (void)state;
    check_visitor_prune("8b", "h100", 64);
    check_visitor_prune("mixtral-8x7b", "h100", 64);
    check_visitor_prune("deepseek-v2-lite", "a100-80g", 64);
}

/* ---- uneven pipelines, issue 21 ---- */

typedef struct {
    int uneven, uneven_7_7; /* layouts with an uneven first/last stage; of them 7 / 9 / 9 / 7 */
} uneven_seen;

static void visit_uneven(const estimate *e, void *arg)
{
    uneven_seen *s = arg;
    const layout *l = &e->layout;
    if (!l->pp_first_layers && !l->pp_last_layers) return;
    s->uneven++;
    if (l->pp == 4 && l->pp_first_layers == 7 && l->pp_last_layers == 7) s->uneven_7_7++;
}

/* Llama-3.1-8B (32 layers) on 64 GPUs: pipeline layouts get their uneven variant; at PP 4 the
 * head is 2.4 layers of GEMM work (search_uneven.c), so s = 4 splits as 2 + 2: 7 / 9 / 9 / 7. */
static void test_uneven_variants_searched(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    uneven_seen s = {0, 0};
    search_options o = {.gpus = 64, .keep = 8, .frameworks = {false, true},
                        .visit = visit_uneven, .visit_arg = &s};
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(s.uneven > 0);
    assert_true(s.uneven_7_7 > 0);
    search_result_free(r);
}

/* Llama-3.1-405B (126 layers) on 1024 GPUs: pp 8 cannot interleave the even split (126 % 8),
 * so the search tries Megatron's account-for-embedding-and-loss split, 128 / 8 = 16 units a
 * rank: 15 / 16 x 6 / 15 with 2, 4, 8 or 16 virtual stages (NVIDIA's recipe: pp 8 x vpp 8). */
typedef struct {
    int pp8_vpp8_15_15, pp8_vpp1_even;
} account_seen;

static void visit_account(const estimate *e, void *arg)
{
    account_seen *s = arg;
    const layout *l = &e->layout;
    if (l->framework != FRAMEWORK_MEGATRON || l->pp != 8) return;
    if (l->vpp == 8 && l->pp_first_layers == 15 && l->pp_last_layers == 15) s->pp8_vpp8_15_15++;
    if (l->vpp == 1 && !l->pp_first_layers && !l->pp_last_layers) s->pp8_vpp1_even++;
}

static void test_account_split_searched(void **state)
{
    (void)state;
    model_spec m = load_model("405b");
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    t.seq_len = 8192;
    t.global_batch = 512;
    account_seen s = {0, 0};
    search_options o = {.gpus = 1024, .keep = 8, .frameworks = {false, true},
                        .visit = visit_account, .visit_arg = &s};
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(s.pp8_vpp8_15_15 > 0);
    assert_true(s.pp8_vpp1_even > 0);
    search_result_free(r);
    /* the helper itself: 61 layers (DeepSeek-V3) on pp 9: 63 / 9 = 7 units a rank, vpp 7 */
    model_spec ds = load_model("deepseek-v3");
    int out[8], have[1] = {1};
    assert_int_equal(search_uneven_account_vpps(&ds, 9, have, 1, out, 8), 1);
    assert_int_equal(out[0], 7);
    assert_int_equal(search_uneven_account_vpps(&ds, 8, have, 1, out, 8), 0); /* 63 % 8 */
}


/* ---- expert tensor parallel folding ---- */

typedef struct {
    unsigned etp_mask;  /* bit e: a Megatron layout with tp 8, ep > 1 and expert TP e seen */
    long plain;         /* visits of layouts whose expert TP is tp or 1 */
    long all;
} etp_seen;

static void visit_etp(const estimate *e, void *arg)
{
    etp_seen *s = arg;
    const layout *l = &e->layout;
    s->all++;
    if (layout_etp(l) == l->tp || layout_etp(l) == 1) s->plain++;
    if (l->framework == FRAMEWORK_MEGATRON && l->tp == 8 && l->ep > 1 && layout_etp(l) < 32)
        s->etp_mask |= 1u << layout_etp(l);
}

/* Mixtral-8x7B (8 experts, 8 KV heads) on 64 H100 under Megatron: with tp 8 and ep > 1 the
 * expert TP is 8 or 1 without folding, and every divisor of 8 (1, 2, 4, 8) with it; folding
 * only adds layouts: the others are visited exactly as before, and the best step is no slower. */
static void test_etp_fold(void **state)
{
    (void)state;
    model_spec m = load_model("mixtral-8x7b");
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    etp_seen off = {0, 0, 0}, on = {0, 0, 0};
    search_options o = {.gpus = 64, .keep = 8, .frameworks = {false, true},
                        .visit = visit_etp, .visit_arg = &off};
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(r->count > 0);
    double best_off = r->ranked[0].time.step_s;
    o.visit_arg = &on;
    o.etp_fold = true;
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_int_equal(off.etp_mask, (1u << 1) | (1u << 8));
    assert_int_equal(on.etp_mask, (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8));
    assert_int_equal(off.plain, off.all);
    assert_int_equal(on.plain, off.all);
    assert_true(on.all > off.all);
    assert_true(r->ranked[0].time.step_s <= best_off);
    search_result_free(r);
}

/* Megatron activation offload of the fewest layers that fit (--activation-offload-layers):
 * Llama-3.1-70B on 64 GB200 at seq 8192, batch 256, FP8 tensorwise: the best plan is Bridge's
 * recipe shape (TP 1, PP 1, Megatron-FSDP, micro-batch 2; v0.4.2
 * LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2 offloads 40 of 80 layers) with some but not all
 * layers offloaded, and one layer fewer would not fit. */
static void test_partial_activation_offload(void **state)
{
    (void)state;
    model_spec m = load_model("70b");
    system_spec sys = load_system("gb200-nvl72");
    training_spec t = training_default();
    t.seq_len = 8192;
    t.global_batch = 256;
    search_options o = {.gpus = 64, .keep = 8, .frameworks = {false, true},
                        .precisions = 1u << PRECISION_FP8, .fp8_recipe = FP8_RECIPE_TENSORWISE};
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    assert_true(r->count > 0);
    const estimate *b = &r->ranked[0];
    assert_true(b->layout.activation_offload);
    int n = b->layout.activation_offload_layers;
    assert_true(n > 0 && n < m.layers - 1);
    assert_true(b->feasible);
    layout fewer = b->layout;
    fewer.activation_offload_layers = n - 1;
    estimate e;
    assert_int_equal(estimate_layout(&m, &sys, &t, &fewer, &e, err, sizeof err), CM_OK);
    assert_false(e.feasible);
    search_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_micro_batches_are_divisors),
        cmocka_unit_test(test_gbs_nearest_5128),
        cmocka_unit_test(test_prune_keeps_result),
        cmocka_unit_test(test_visitor_prune_keeps_result),
        cmocka_unit_test(test_uneven_variants_searched),
        cmocka_unit_test(test_account_split_searched),
        cmocka_unit_test(test_etp_fold),
        cmocka_unit_test(test_partial_activation_offload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
