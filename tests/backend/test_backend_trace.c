/*
 * test_backend_trace.c — the measured-step trace writer (backend/trace.c), without a GPU; part
 * of the test_backend_work program (test_backend_work.h). A synthetic timing list must give
 * valid trace-event JSON with the step simulator's process and thread naming. Apart from the
 * work-list tests because it checks the trace's format, not the work a step holds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_backend_work.h"

/* The measured-step trace writer: valid trace-event JSON from a synthetic timing list, with the
 * step simulator's process and thread naming (a simulated trace of the same layout is the
 * reference). */
void test_trace_writer(void **state)
{
    (void)state;
    trace_list t;
    trace_init(&t, 2);
    t.gpu[0] = 0;
    t.gpu[1] = 2;
    trace_span spans[] = {
        {0, TRACE_TID_COMPUTE, 0.000, 0.010, "F0", 0, -1, -1},
        {0, TRACE_TID_COMPUTE, 0.001, 0.002, "qkv", 0, -1, 3},
        {0, TRACE_TID_SEND_FWD, 0.010, 0.011, "send F0", 0, -1, -1},
        {1, TRACE_TID_COMPUTE, 0.011, 0.021, "F0", 0, -1, -1},
        {1, TRACE_TID_SEND_BWD, 0.041, 0.042, "send B0", 0, -1, -1},
        {1, TRACE_TID_COLL, 0.050, 0.060, "RS layer 17", -1, -1, 17},
        {1, TRACE_TID_COMPUTE, 0.060, 0.061, "optimizer", -1, -1, -1},
        {1, TRACE_TID_COMPUTE, NAN, 0.061, "dropped", -1, -1, -1},  /* not finite: left out */
        {1, TRACE_TID_COMPUTE, 0.070, 0.069, "dropped", -1, -1, -1}, /* negative: left out */
    };
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++)
        assert_int_equal(trace_add(&t, &spans[i]), CM_OK);
    json_t *j = trace_json(&t);
    assert_non_null(j);
    /* through text and back: what Perfetto reads */
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_non_null(text);
    json_error_t je;
    j = json_loads(text, 0, &je);
    free(text);
    assert_non_null(j);
    json_t *ev = json_object_get(j, "traceEvents");
    assert_true(json_is_array(ev));
    assert_string_equal(json_string_value(json_object_get(j, "displayTimeUnit")), "ms");
    int x = 0, procs = 0;
    const char *thread_name[2][4] = {{0}};
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        assert_non_null(json_string_value(json_object_get(e, "name")));
        assert_true(json_is_integer(json_object_get(e, "pid")));
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        assert_true(pid == 0 || pid == 1);
        if (!strcmp(ph, "X")) {
            x++;
            assert_true(json_is_integer(json_object_get(e, "tid")));
            assert_true(json_is_number(json_object_get(e, "ts")));
            assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
            assert_true(json_is_object(json_object_get(e, "args")));
            assert_string_not_equal(json_string_value(json_object_get(e, "name")), "dropped");
        } else {
            assert_string_equal(ph, "M");
            const char *what = json_string_value(json_object_get(e, "name"));
            json_t *args = json_object_get(e, "args");
            if (!strcmp(what, "process_name")) {
                char want[16];
                snprintf(want, sizeof want, "stage %d", pid);
                assert_string_equal(json_string_value(json_object_get(args, "name")), want);
                procs++;
            }
            if (!strcmp(what, "thread_name")) {
                int tid = (int)json_integer_value(json_object_get(e, "tid"));
                thread_name[pid][tid] = json_string_value(json_object_get(args, "name"));
            }
        }
    }
    assert_int_equal(x, 7);
    assert_int_equal(procs, 2);
    /* F0 starts at 0 us and lasts 10 ms; the item nested in it carries its layer */
    json_t *f0 = NULL, *qkv = NULL;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!strcmp(nm, "F0") && json_integer_value(json_object_get(e, "pid")) == 0) f0 = e;
        if (!strcmp(nm, "qkv")) qkv = e;
    }
    assert_non_null(f0);
    assert_non_null(qkv);
    near(json_number_value(json_object_get(f0, "dur")), 10000, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(qkv, "args"), "layer")),
                     3);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(f0, "args"), "microbatch")), 0);

    /* The simulator's trace of a 2-stage pipeline names the same threads the same way. */
    load("8b", "h200-x4");
    training_spec tr = training_default();
    tr.global_batch = 4;
    layout l = megatron(1, 2, false);
    l.pp = 2;
    l.sharding = SHARDING_DDP;
    sim_workspace *ws = sim_alloc();
    char err[CM_ERRLEN];
    estimate e;
    if (estimate_layout(&M, &S, &tr, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    sim_options so = {.serialize = false, .trace = true};
    if (sim_estimate(ws, &M, &S, &tr, &l, &so, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    json_t *sj = sim_trace_json(ws);
    assert_non_null(sj);
    json_t *sev = json_object_get(sj, "traceEvents");
    int matched = 0;
    for (size_t i = 0; i < json_array_size(sev); i++) {
        json_t *se = json_array_get(sev, i);
        const char *what = json_string_value(json_object_get(se, "name"));
        if (strcmp(json_string_value(json_object_get(se, "ph")), "M")) continue;
        int pid = (int)json_integer_value(json_object_get(se, "pid"));
        json_t *args = json_object_get(se, "args");
        if (!strcmp(what, "process_name")) {
            char want[16];
            snprintf(want, sizeof want, "stage %d", pid);
            assert_string_equal(json_string_value(json_object_get(args, "name")), want);
        }
        if (!strcmp(what, "thread_name")) {
            int tid = (int)json_integer_value(json_object_get(se, "tid"));
            if (thread_name[pid][tid]) {
                assert_string_equal(thread_name[pid][tid],
                                    json_string_value(json_object_get(args, "name")));
                matched++;
            }
        }
    }
    assert_true(matched >= 3); /* compute, send activations, send gradients at least */
    json_decref(sj);
    sim_free(ws);
    json_decref(j);
    /* written to a file */
    char path[] = "/tmp/plan-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(trace_write(&t, path, err, sizeof err), CM_OK);
    j = json_load_file(path, 0, &je);
    assert_non_null(j);
    json_decref(j);
    unlink(path);
    assert_int_not_equal(trace_write(&t, "/nonexistent-dir/x.json", err, sizeof err), CM_OK);
    trace_free(&t);
}
