/*
 * trace.c — the measured step's trace writer (see trace.h). The process, thread and event naming
 * follows sim.c's sim_trace_json() exactly, so the two files differ only in their numbers.
 */
#include "trace.h"
#include "whole_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The simulator's thread names (sim.c tid_names). */
static const char *const tid_names[TRACE_TID_COUNT] = {
    "compute", "send activations (p2p)", "send gradients (p2p)",
    "data-parallel / FSDP collectives"};

void trace_init(trace_list *t, int stages)
{
    memset(t, 0, sizeof *t);
    t->stages = stages < 1 ? 1 : (stages > TRACE_MAX_STAGES ? TRACE_MAX_STAGES : stages);
    for (int i = 0; i < TRACE_MAX_STAGES; i++) t->gpu[i] = -1;
}

void trace_free(trace_list *t)
{
    free(t->span);
    t->span = NULL;
    t->n = t->cap = 0;
}

cm_status trace_add(trace_list *t, const trace_span *s)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 1024;
        trace_span *p = realloc(t->span, sizeof *p * (size_t)cap);
        if (!p) return CM_ENOMEM;
        t->span = p;
        t->cap = cap;
    }
    t->span[t->n++] = *s;
    return CM_OK;
}

static json_t *meta(const char *what, int pid, int tid, const char *key, json_t *value)
{
    json_t *o = json_pack("{s:s, s:s, s:i}", "name", what, "ph", "M", "pid", pid);
    if (!o) {
        json_decref(value);
        return NULL;
    }
    if (tid >= 0) json_object_set_new(o, "tid", json_integer(tid));
    json_object_set_new(o, "args", json_pack("{s:o}", key, value));
    return o;
}

static int append(json_t *a, json_t *o)
{
    return o ? json_array_append_new(a, o) : -1;
}

json_t *trace_json(const trace_list *t)
{
    json_t *events = json_array();
    if (!events) return NULL;
    unsigned used[TRACE_MAX_STAGES] = {0};
    for (int i = 0; i < t->n; i++) {
        const trace_span *s = &t->span[i];
        if (s->stage >= 0 && s->stage < t->stages && s->tid >= 0 && s->tid < TRACE_TID_COUNT)
            used[s->stage] |= 1u << s->tid;
    }
    int bad = 0;
    for (int s = 0; s < t->stages; s++) {
        char name[48];
        snprintf(name, sizeof name, "stage %d", s);
        bad |= append(events, meta("process_name", s, -1, "name", json_string(name)));
        bad |= append(events, meta("process_sort_index", s, -1, "sort_index", json_integer(s)));
        if (t->gpu[s] >= 0) {
            snprintf(name, sizeof name, "measured on GPU %d", t->gpu[s]);
            bad |= append(events, meta("process_labels", s, -1, "labels", json_string(name)));
        }
        for (int tid = 0; tid < TRACE_TID_COUNT; tid++) {
            if (!(used[s] & (1u << tid))) continue;
            bad |= append(events,
                          meta("thread_name", s, tid, "name", json_string(tid_names[tid])));
            bad |= append(events,
                          meta("thread_sort_index", s, tid, "sort_index", json_integer(tid)));
        }
    }
    for (int i = 0; i < t->n && !bad; i++) {
        const trace_span *s = &t->span[i];
        if (!isfinite(s->start_s) || !isfinite(s->end_s) || s->start_s < 0 ||
            s->end_s < s->start_s || s->stage < 0 || s->stage >= t->stages || s->tid < 0 ||
            s->tid >= TRACE_TID_COUNT)
            continue;
        json_t *x = json_pack("{s:s, s:s, s:f, s:f, s:i, s:i}", "name", s->name, "ph", "X", "ts",
                              s->start_s * 1e6, "dur", (s->end_s - s->start_s) * 1e6, "pid",
                              s->stage, "tid", (int)s->tid);
        if (!x) {
            bad = 1;
            break;
        }
        json_t *args = json_object();
        if (s->microbatch >= 0) json_object_set_new(args, "microbatch", json_integer(s->microbatch));
        if (s->chunk >= 0) json_object_set_new(args, "chunk", json_integer(s->chunk));
        if (s->layer >= 0) json_object_set_new(args, "layer", json_integer(s->layer));
        json_object_set_new(x, "args", args);
        bad |= append(events, x);
    }
    if (bad) {
        json_decref(events);
        return NULL;
    }
    json_t *o = json_object();
    if (!o) {
        json_decref(events);
        return NULL;
    }
    json_object_set_new(o, "traceEvents", events);
    json_object_set_new(o, "displayTimeUnit", json_string("ms"));
    return o;
}

cm_status trace_write(const trace_list *t, const char *path, char *err, size_t errlen)
{
    json_t *j = trace_json(t);
    if (!j) return cm_fail(err, errlen, CM_ENOMEM, "out of memory writing the trace");
    /* written whole: a failed write leaves no partial file (whole_file.h) */
    char why[CM_ERRLEN];
    cm_status st = whole_file_json(j, path, JSON_COMPACT | JSON_REAL_PRECISION(15), why, sizeof why);
    json_decref(j);
    if (st != CM_OK) return cm_fail(err, errlen, st, "cannot write the trace: %s", why);
    return CM_OK;
}
