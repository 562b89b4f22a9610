/*
 * test_memory_verdict.c — speed24's memory stopped at the first candidate stage over the
 * device by more than a given excess (memory_memo.h verdict_only and stop_over_bytes,
 * estimate_cache_unfit_stop_over): over layouts sampled from the searches of several models,
 * systems and GPU counts, and several such excesses, the stopped breakdown gives the whole
 * breakdown's verdict, a stopped one belongs to a layout whose whole breakdown is over by more
 * than the excess and needs no more than the whole says, and one that was not stopped is the
 * whole one; and a search with it keeps the very plans, counts, ranking, bests per framework
 * and sharding and closest to fitting per framework that one without it does.
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
#include "memory_memo.h"
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
    {"deepseek-v3", "h100", 1024, true},
};

static search_options options_of(const search_case *c, int keep)
{
    search_options o = {.gpus = c->gpus, .keep = keep, .frameworks = {true, true, true}};
    if (c->low_precision) o.precisions = (1u << PRECISION_BF16) | (1u << PRECISION_FP8);
    return o;
}

/* ---- the stopped breakdown's verdict is the whole one's ---- */

enum { SAMPLE_MAX = 600 };

typedef struct {
    unsigned long long rng;
    layout l[SAMPLE_MAX];
    int batch[SAMPLE_MAX];
    int n;
} sample;

/* every layout the search lists (each overlap variant), about one in 29 kept */
static void sample_visit(const estimate *e, void *arg)
{
    sample *s = arg;
    s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
    if ((s->rng >> 33) % 29 != 0 || s->n == SAMPLE_MAX) return;
    s->l[s->n] = e->layout;
    s->batch[s->n++] = e->training.global_batch;
}

typedef struct {
    long checked, unfit, stopped;
} verdict_counts;

static void check_verdict_case(const search_case *c, unsigned long long seed, verdict_counts *n)
{
    model_spec m = load_model(c->model);
    system_spec sys = load_system(c->system);
    training_spec t = training_default();
    sample *s = calloc(1, sizeof *s);
    memory_memo *memo = calloc(1, sizeof *memo);
    assert_non_null(s);
    assert_non_null(memo);
    s->rng = seed;
    search_options o = options_of(c, 1);
    o.visit = sample_visit;
    o.visit_arg = s;
    search_result *r = search_result_new();
    char err[CM_ERRLEN];
    assert_int_equal(search_run(&m, &sys, &t, &o, r, err, sizeof err), CM_OK);
    search_result_free(r);
    memory_memo_init(memo, &m);
    for (int i = 0; i < s->n; i++) {
        const layout *l = &s->l[i];
        training_spec tl = t;
        tl.global_batch = s->batch[i];
        memory_breakdown whole = memory_peak(&m, &sys, &tl, l);
        memo->verdict_only = true;
        memo->partial = false;
        /* the excess of a closest to fitting: none, a few GiB, or the layout's own less a
         * little (where it does not fit: the tightest that can stop it) */
        double over = whole.need_bytes - whole.capacity_bytes;
        double stops[3] = {0, 4.0 * (1 << 30), over > 0 ? over * (1 - 1e-6) : 0};
        memo->stop_over_bytes = stops[i % 3];
        memory_breakdown v = memory_peak_memo(&m, memo, &sys, &tl, l);
        memo->verdict_only = false;
        n->checked++;
        n->unfit += !memory_fits(&whole);
        char line[512];
        layout_short_name(l, line, sizeof line);
        if (memory_fits(&v) != memory_fits(&whole))
            fail_msg("%s on %s, %s: stopped need %.17g, whole need %.17g, capacity %.17g",
                     m.name, sys.name, line, v.need_bytes, whole.need_bytes,
                     whole.capacity_bytes);
        if (memo->partial) {
            n->stopped++;
            assert_true(l->pp > 1); /* a later stage was left unmade */
            assert_false(memory_fits(&whole));
            /* over by more than the excess given, as the whole is (search.c fold_closest) */
            assert_true(v.need_bytes - v.capacity_bytes > memo->stop_over_bytes);
            assert_true(whole.need_bytes - whole.capacity_bytes > memo->stop_over_bytes);
            assert_true(v.need_bytes <= whole.need_bytes);
        } else {
            /* not stopped: the whole breakdown (the memo's figures are the same doubles) */
            assert_true(v.need_bytes == whole.need_bytes);
            assert_true(v.total_bytes == whole.total_bytes);
            assert_int_equal(v.stage, whole.stage);
        }
    }
    free(memo);
    free(s);
}

static void test_stopped_verdict(void **state)
{
    (void)state;
    verdict_counts n = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_verdict_case(&cases[i], 0x9e3779b97f4a7c15ull * (i + 3), &n);
    print_message("  %ld layouts, %ld do not fit, %ld of them stopped at a stage\n", n.checked,
                  n.unfit, n.stopped);
    /* enough of each kind that the comparison means something */
    assert_true(n.checked > 1500);
    assert_true(n.stopped > 200);
    assert_true(n.unfit > n.stopped); /* some that do not fit ran to their last stage */
}

/* ---- the same plans with and without it ---- */

static void assert_same_estimate(const estimate *a, const estimate *b)
{
    assert_true(layout_equal(&a->layout, &b->layout));
    assert_true(a->time.step_s == b->time.step_s);
    assert_true(a->memory.total_bytes == b->memory.total_bytes);
    assert_true(a->memory.need_bytes == b->memory.need_bytes);
    assert_int_equal(a->feasible, b->feasible);
    assert_int_equal(a->simulated, b->simulated);
    if (a->simulated) assert_true(a->time_sim.step_s == b->time_sim.step_s);
    assert_int_equal(a->training.global_batch, b->training.global_batch);
}

static void check_same_plans(const search_case *c, int keep, bool nearest, int simulate)
{
    model_spec m = load_model(c->model);
    system_spec sys = load_system(c->system);
    training_spec t = training_default();
    search_result *a = search_result_new(), *b = search_result_new();
    char err[CM_ERRLEN];
    search_options o = options_of(c, keep);
    o.gbs_nearest = nearest;
    o.simulate = simulate;
    o.bound_first = true; /* as plan searches */
    assert_int_equal(search_run(&m, &sys, &t, &o, a, err, sizeof err), CM_OK);
    o.unfit_memory_whole = true;
    assert_int_equal(search_run(&m, &sys, &t, &o, b, err, sizeof err), CM_OK);
    assert_int_equal(a->evaluated, b->evaluated);
    assert_int_equal(a->feasible, b->feasible);
    assert_int_equal(a->unchecked, b->unchecked);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->simulated, b->simulated);
    for (int i = 0; i < a->count; i++) assert_same_estimate(&a->ranked[i], &b->ranked[i]);
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        assert_int_equal(a->has_best[fw], b->has_best[fw]);
        if (a->has_best[fw]) assert_same_estimate(&a->best[fw], &b->best[fw]);
        /* the closest to fitting too (shown where a framework has no plan, output.c) */
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

static void test_same_plans(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_same_plans(&cases[i], 32, false, 0);
        check_same_plans(&cases[i], 1, false, 0); /* one plan kept: the tightest threshold */
    }
    /* the batch Calculon's way (plans ranked per sequence), and the simulator's re-ranking */
    check_same_plans(&cases[1], 32, true, 0);
    check_same_plans(&cases[2], 32, false, SEARCH_SIMULATE_DEFAULT);
}

int main(void)
{
    /* one thread: the feasible count of a search that bounds before the memory depends on
     * when each worker's threshold tightens (speed23), so only one thread's compare exactly */
    setenv("PLAN_THREADS", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stopped_verdict),
        cmocka_unit_test(test_same_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
