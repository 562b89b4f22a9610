/*
 * test_report_points.c — `plan report` searches each point of a model's GPU-count sweep for
 * only what its sections read there (report_analysis.c, point_need): between the user's counts
 * the best plan of each framework and the one plan recommends, past them the memory classes
 * alone (with as few layouts timed as plan's own search times); a model that fits at none of
 * the user's counts has its points searched again whole. Each point is checked here against a
 * whole search of its own (the options `plan --model M --gpus N` uses, and a visitor that
 * sorts every layout into the report's memory classes): the same layouts evaluated, the same
 * classes fit, and where the point is read for plans, the same plans at the same rates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile.h"
#include "report.h"
#include "report_analysis.h"
#include "report_classes.h"
#include "search.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

static void classes_of(const estimate *e, void *arg)
{
    if (e->feasible) ((bool *)arg)[report_class_of(&e->layout)] = true;
}

/* The visitor needs no step time: the search times what plan's own times (search.h). */
static double no_bound(const layout *l, void *arg)
{
    (void)l, (void)arg;
    return 0;
}

/* How much of a point the check compares: its memory classes and layouts always; its plans
 * where plans is set. */
static void check_point(const report_model_result *mr, const report_point *p,
                        const system_spec *s, search_result *sr, bool plans)
{
    bool fits[REPORT_NCLASSES] = {false};
    search_options o = {.gpus = p->gpus, .keep = SEARCH_SIMULATE_DEFAULT,
                        .frameworks = {true, true}, .simulate = SEARCH_SIMULATE_DEFAULT,
                        .visit = classes_of, .visit_arg = fits, .visit_bound = no_bound,
                        .visit_fit = classes_of};
    training_spec t = training_default();
    char err[CM_ERRLEN];
    if (search_run(&mr->m, s, &t, &o, sr, err, sizeof err) != CM_OK) fail_msg("%s", err);
    print_message("  %s at %d GPUs: %ld layouts%s\n", mr->m.name, p->gpus, sr->evaluated,
                  plans ? ", plans compared" : "");
    assert_int_equal(p->evaluated, sr->evaluated);
    for (int k = 0; k < REPORT_NCLASSES; k++) assert_int_equal(p->fits[k], fits[k]);
    /* whether a plan fits: the sections' report_best_of reads that at every point (speed16:
     * the classes-only points time only their first, search.h fits_only) */
    assert_int_equal(report_best_of(p) != NULL, sr->count > 0);
    if (!plans) return;
    assert_int_equal(p->rec_fw, sr->count > 0 ? (int)sr->ranked[0].layout.framework : -1);
    for (int fw = 0; fw < 2; fw++) {
        assert_int_equal(p->has_best[fw], sr->has_best[fw]);
        if (!sr->has_best[fw]) continue;
        /* what the line charts plot of it, to the bit */
        assert_memory_equal(&p->best[fw].tokens_per_s, &sr->best[fw].tokens_per_s,
                            sizeof(double));
        assert_memory_equal(&p->best[fw].mfu, &sr->best[fw].mfu, sizeof(double));
        assert_int_equal(p->best[fw].simulated, sr->best[fw].simulated);
    }
}

static report *build(const char *name, const int *gpus, int ng, system_spec *s)
{
    static model_spec m;
    char err[CM_ERRLEN];
    if (model_load(name, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (profile_load_system("h100", data_dir(), s, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    report_options o = {.sys = s, .system_name = "h100", .training = training_default(),
                        .models = &m, .nmodels = 1, .gpus = gpus, .ngpus = ng};
    report *r = NULL;
    if (report_build(&o, &r, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return r;
}

/* Llama-3.1-70B at 4 and 16 GPUs: it fits at both, so 8 is read for plans (the line charts
 * between), and 1, 2 and 32 (the sweep goes on until every memory class fits: 32 here) for
 * their memory classes alone. */
static void test_between_and_past(void **state)
{
    (void)state;
    system_spec s;
    int gpus[] = {4, 16};
    report *r = build("70b", gpus, 2, &s);
    const report_model_result *mr = &r->models[0];
    print_message("  sweep to %d GPUs (%d points)\n", mr->cap, mr->npts);
    assert_int_equal(mr->cap, 32); /* the sweep went past 16 */
    search_result *sr = search_result_new();
    assert_non_null(sr);
    for (int k = 0; k < mr->npts; k++) {
        const report_point *p = &mr->pts[k];
        check_point(mr, p, &s, sr, p->gpus >= 4 && p->gpus <= 16);
    }
    search_result_free(sr);
    report_free(r);
}

/* Llama-3.1-405B at 8 GPUs fits nowhere there: the guide shows it where it does fit, from the
 * points past 8, which must then hold what whole searches find (they are searched again). */
static void test_fits_at_none(void **state)
{
    (void)state;
    system_spec s;
    int gpus[] = {8};
    report *r = build("405b", gpus, 1, &s);
    const report_model_result *mr = &r->models[0];
    assert_null(report_best_of(report_find_point(mr, 8)));
    const estimate *e = report_primary_plan(r, mr);
    assert_non_null(e);
    assert_true(e->gpus > 8);
    search_result *sr = search_result_new();
    assert_non_null(sr);
    for (int k = 0; k < mr->npts; k++)
        if (mr->pts[k].gpus >= e->gpus && mr->pts[k].gpus <= 4 * e->gpus)
            check_point(mr, &mr->pts[k], &s, sr, true);
    search_result_free(sr);
    report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_between_and_past),
        cmocka_unit_test(test_fits_at_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
