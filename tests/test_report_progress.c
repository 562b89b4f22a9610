/*
 * test_report_progress.c — `plan report`'s progress count (issue 23): the total its callback
 * sees first is every search the build plans, counted by hand here; it only shrinks (a GPU-count
 * sweep that ends early), the count done never passes it, and the last call has done == total ==
 * the searches the build ran. Once the count overshot its total (79/73: the torchtitan searches
 * at the user's GPU counts were run but not counted).
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

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

typedef struct {
    int calls;
    long first_total, last_done, last_total;
    long max_over;          /* the most done ever exceeded total by (0: never) */
    int total_rose, done_fell;
} progress_log;

static void record(long done, long total, void *arg)
{
    progress_log *p = arg;
    if (p->calls == 0) p->first_total = total;
    else {
        p->total_rose += total > p->last_total;
        p->done_fell += done < p->last_done;
    }
    if (done - total > p->max_over) p->max_over = done - total;
    p->last_done = done;
    p->last_total = total;
    p->calls++;
}

static report_options options(const model_spec *m, int nm, const system_spec *s,
                              const int *gpus, int ng)
{
    return (report_options){.sys = s, .system_name = "h100", .training = training_default(),
                            .models = m, .nmodels = nm, .gpus = gpus, .ngpus = ng};
}

/* The planned count, by hand: the sweep is the 13 powers of two 1 .. 4096 plus any count asked
 * that is not one; one torchtitan search per count asked; 11 dense sizes per count asked. */
static void test_planned_by_hand(void **state)
{
    (void)state;
    model_spec m[2];
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("3b", data_dir(), &m[0], err, sizeof err) != CM_OK) fail_msg("%s", err);
    m[1] = m[0];
    if (profile_load_system("h100", data_dir(), &s, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    int g8[] = {8};
    report_options o = options(m, 1, &s, g8, 1);
    assert_int_equal(report_planned_searches(&o), 13 + 1 + 11);
    /* duplicates of a count or of a model are searched once */
    int g_dup[] = {64, 8, 64};
    o = options(m, 2, &s, g_dup, 3);
    assert_int_equal(report_planned_searches(&o), (13 + 2) + 11 * 2);
    /* a count that is not a power of two joins the sweep; one past 4096 extends it */
    int g_odd[] = {24, 6000};
    o = options(m, 1, &s, g_odd, 2);
    assert_int_equal(report_planned_searches(&o), (13 + 2 + 2) + 11 * 2);
    /* options report_build refuses */
    o = options(m, 0, &s, g8, 1);
    assert_int_equal(report_planned_searches(&o), 0);
}

/* A real build: the callback's first total is the planned count, done never passes total, and
 * the last call has done == total == the searches run. */
static void build_and_check(const char *const *names, int nm, const int *gpus, int ng)
{
    model_spec m[4];
    system_spec s;
    char err[CM_ERRLEN];
    for (int i = 0; i < nm; i++)
        if (model_load(names[i], data_dir(), &m[i], err, sizeof err) != CM_OK)
            fail_msg("%s", err);
    if (profile_load_system("h100", data_dir(), &s, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    report_options o = options(m, nm, &s, gpus, ng);
    progress_log log = {0};
    o.progress = record;
    o.progress_arg = &log;
    report *r = NULL;
    if (report_build(&o, &r, err, sizeof err) != CM_OK) fail_msg("%s", err);
    report_stats st = report_get_stats(r);
    report_free(r);
    assert_true(log.calls > 0);
    assert_int_equal(log.first_total, report_planned_searches(&o));
    assert_int_equal(log.max_over, 0);
    assert_int_equal(log.total_rose, 0);
    assert_int_equal(log.done_fell, 0);
    assert_int_equal(log.last_done, log.last_total);
    assert_int_equal(log.last_done, st.searches);
    assert_true(st.searches <= log.first_total);
}

static void test_build_small(void **state)
{
    (void)state;
    static const char *const names[] = {"3b"};
    int gpus[] = {8};
    build_and_check(names, 1, gpus, 1);
}

/* two models, one MoE (its sweep runs further), two counts */
static void test_build_two_models(void **state)
{
    (void)state;
    static const char *const names[] = {"3b", "mixtral-8x7b"};
    int gpus[] = {16, 8};
    build_and_check(names, 2, gpus, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planned_by_hand),
        cmocka_unit_test(test_build_small),
        cmocka_unit_test(test_build_two_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
