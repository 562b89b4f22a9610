/*
 * test_bound_first.c — speed23's bound before the memory (search_options.bound_first,
 * estimate_cache_bound_first): the lower bound it prunes by is never above the step the full
 * estimate gives, over layouts sampled from the searches of several models, systems and GPU
 * counts (and never above the steps of the memory-knob tries it stands for: fewer full-
 * recompute layers, optimizer CPU offload); and a search with it keeps the very plans,
 * ranking, bests per framework and sharding that one without it does, only the counts of
 * feasible layouts moving (by at most the layouts it left unchecked).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "estimate.h"
#include "layout_codec.h"
#include "search.h"

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

typedef struct {
    const char *model, *system;
    int gpus;
    bool low_precision; /* FP8 searched too (the formats the system runs) */
} search_case;

static const search_case cases[] = {
    {"8b", "h100", 64, false},
    {"70b", "h200", 1024, true},
    {"mixtral-8x7b", "h100", 256, true},
    {"deepseek-v2-lite", "a100-80g", 64, false},
    {"qwen3-30b-a3b", "b200", 128, true},
    {"405b", "h100", 2048, false},
};

static search_options options_of(const search_case *c, const system_spec *sys, int keep)
{
    search_options o = {.gpus = c->gpus, .keep = keep, .frameworks = {true, true, true}};
    /* FP8 where the system runs it: Hopper and Blackwell (data/systems) */
    if (c->low_precision) o.precisions = (1u << PRECISION_BF16) | (1u << PRECISION_FP8);
    (void)sys;
    return o;
}

/* ---- the bound is never above the estimate ---- */

enum { SAMPLE_MAX = 400 };

typedef struct {
    unsigned long long rng;
    layout l[SAMPLE_MAX];
    int batch[SAMPLE_MAX];
    int n;
} sample;

/* every layout the search lists (each overlap variant), about one in 37 kept */
static void sample_visit(const estimate *e, void *arg)
{
    sample *s = arg;
    s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
    if ((s->rng >> 33) % 37 != 0 || s->n == SAMPLE_MAX) return;
    s->l[s->n] = e->layout;
    s->batch[s->n++] = e->training.global_batch;
}

typedef struct {
    long checked, fsdp, full_tries, offload_tries;
} bound_counts;

/* lb <= the step of l (and of the tries), up to rounding far below the search's 1e-8 margin */
static void check_step(const model_spec *m, const system_spec *sys, const training_spec *t,
                       const layout *l, double lb)
{
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(m, sys, t, l, &e, err, sizeof err) != CM_OK) return;
    if (!(lb <= e.time.step_s * (1 + 1e-12))) {
        char line[512];
        layout_short_name(l, line, sizeof line);
        fail_msg("%s on %s: bound %.17g s above the step %.17g s of %s", m->name, sys->name,
                 lb, e.time.step_s, line);
    }
}

static void check_bound_case(const search_case *c, unsigned long long seed, bound_counts *n)
{
    model_spec m = load_model(c->model);
    system_spec sys = load_system(c->system);
    training_spec t = training_default();
    sample *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->rng = seed;
    search_options o = options_of(c, &sys, 1);
    o.visit = sample_visit;
    o.visit_arg = s;
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    search_result_free(r);
    estimate_cache *cache = estimate_cache_new();
    for (int i = 0; i < s->n; i++) {
        const layout *l = &s->l[i];
        training_spec tl = t;
        tl.global_batch = s->batch[i];
        double lb = estimate_search_first_bound_s(&m, &sys, &tl, l, cache);
        if (lb < 0) continue;
        assert_true(lb > 0);
        n->checked++;
        if (l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_FSDP) n->fsdp++;
        check_step(&m, &sys, &tl, l, lb);
        if (l->framework != FRAMEWORK_MEGATRON) continue;
        layout v = *l;
        if (l->recompute == RECOMPUTE_FULL && l->recompute_layers == 0) {
            /* the layer-count tries of planner/search.c memory_knobs: 1 up to a stage's */
            int per = layout_max_stage_layers(&m, l);
            for (int k = 1; k < per; k = k < 4 ? k + 1 : 2 * k) {
                v.recompute_layers = k;
                check_step(&m, &sys, &tl, &v, lb);
                n->full_tries++;
            }
            v.recompute_layers = 0;
        }
        if (l->sharding == SHARDING_DISTOPT)
            for (int pct = 25; pct <= 100; pct += 25) {
                v.optimizer_offload_pct = pct;
                check_step(&m, &sys, &tl, &v, lb);
                n->offload_tries++;
            }
    }
    estimate_cache_free(cache);
    free(s);
}

static void test_bound_below_estimate(void **state)
{
    (void)state;
    bound_counts n = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_bound_case(&cases[i], 0x9e3779b97f4a7c15ull * (i + 1), &n);
    print_message("  %ld layouts (%ld Megatron-FSDP), %ld recompute tries, %ld offload tries\n",
                  n.checked, n.fsdp, n.full_tries, n.offload_tries);
    /* enough of each kind that the comparison means something */
    assert_true(n.checked > 1000);
    assert_true(n.fsdp > 50);
    assert_true(n.full_tries > 100);
    assert_true(n.offload_tries > 100);
}

/* ---- the same plans with and without it ---- */

static void assert_same_estimate(const estimate *a, const estimate *b)
{
    assert_true(layout_equal(&a->layout, &b->layout));
    assert_true(a->time.step_s == b->time.step_s);
    assert_true(a->memory.total_bytes == b->memory.total_bytes);
    assert_int_equal(a->feasible, b->feasible);
    assert_int_equal(a->simulated, b->simulated);
    if (a->simulated) assert_true(a->time_sim.step_s == b->time_sim.step_s);
    assert_int_equal(a->training.global_batch, b->training.global_batch);
}

static long check_same_plans(const search_case *c, int keep, bool nearest, int simulate)
{
    model_spec m = load_model(c->model);
    system_spec sys = load_system(c->system);
    training_spec t = training_default();
    search_result *a = search_result_new(), *b = search_result_new();
    char err[CM_ERRLEN];
    search_options o = options_of(c, &sys, keep);
    o.gbs_nearest = nearest;
    o.simulate = simulate;
    o.bound_first = true;
    assert_int_equal(search_run(&m, &sys, &t, &o, a, err, sizeof err), CM_OK);
    o.bound_first = false;
    assert_int_equal(search_run(&m, &sys, &t, &o, b, err, sizeof err), CM_OK);
    assert_int_equal(b->unchecked, 0);
    assert_int_equal(a->evaluated, b->evaluated);
    /* only the layouts left unchecked can be missing from the feasible count */
    assert_true(a->feasible <= b->feasible);
    assert_true(b->feasible <= a->feasible + a->unchecked);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->simulated, b->simulated);
    for (int i = 0; i < a->count; i++) assert_same_estimate(&a->ranked[i], &b->ranked[i]);
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        assert_int_equal(a->has_best[fw], b->has_best[fw]);
        if (a->has_best[fw]) assert_same_estimate(&a->best[fw], &b->best[fw]);
        /* the closest to fitting is shown only where a framework has no plan (output.c) */
        if (!a->has_best[fw]) {
            assert_int_equal(a->has_closest[fw], b->has_closest[fw]);
            if (a->has_closest[fw]) assert_same_estimate(&a->closest[fw], &b->closest[fw]);
        }
        for (int sh = 0; sh < 3; sh++) {
            assert_int_equal(a->has_best_sharding[fw][sh], b->has_best_sharding[fw][sh]);
            if (a->has_best_sharding[fw][sh])
                assert_same_estimate(&a->best_sharding[fw][sh], &b->best_sharding[fw][sh]);
        }
    }
    long unchecked = a->unchecked;
    search_result_free(a);
    search_result_free(b);
    return unchecked;
}

static void test_same_plans(void **state)
{
    (void)state;
    long unchecked = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unchecked += check_same_plans(&cases[i], 32, false, 0);
        /* one plan kept: the tightest threshold */
        unchecked += check_same_plans(&cases[i], 1, false, 0);
    }
    /* the batch Calculon's way (plans ranked per sequence), and the simulator's re-ranking */
    unchecked += check_same_plans(&cases[1], 32, true, 0);
    unchecked += check_same_plans(&cases[2], 32, false, SEARCH_SIMULATE_DEFAULT);
    print_message("  %ld layouts left unchecked for memory\n", unchecked);
    assert_true(unchecked > 10000); /* the bound did skip layouts' memory */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_below_estimate),
        cmocka_unit_test(test_same_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
