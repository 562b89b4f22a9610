/*
 * sim_trace.c — the simulated step (sim.c, recorded with sim_options.trace) as a Chrome /
 * Perfetto trace: one process per stage, one thread per stream, complete events.
 */
#include <math.h>
#include <stdio.h>

#include "sim_internal.h"

/* ---- trace ---- */

static const char *const tid_names[TID_COUNT] = {
    "compute", "send activations (p2p)", "send gradients (p2p)", "data-parallel / FSDP collectives"};

static void event_name(const sim_workspace *w, const trace_event *e, char *buf, size_t len)
{
    char chunk[24] = "";
    if (e->chunk >= 0) snprintf(chunk, sizeof chunk, " (chunk %d)", e->chunk);
    switch (e->kind) {
    case EV_FWD: snprintf(buf, len, "F%d%s", e->microbatch, chunk); break;
    case EV_BWD: snprintf(buf, len, "B%d%s", e->microbatch, chunk); break;
    case EV_BWD_INPUT: snprintf(buf, len, "I%d%s", e->microbatch, chunk); break;
    case EV_BWD_WEIGHT: snprintf(buf, len, "W%d%s", e->microbatch, chunk); break;
    case EV_SEND_FWD: snprintf(buf, len, "send F%d%s", e->microbatch, chunk); break;
    case EV_SEND_BWD: snprintf(buf, len, "send B%d%s", e->microbatch, chunk); break;
    case EV_AG_LAYER: snprintf(buf, len, "AG layer %d", e->index); break;
    case EV_RS_LAYER: snprintf(buf, len, "RS layer %d", e->index); break;
    case EV_RS_BUCKET: snprintf(buf, len, "RS bucket %d", e->index); break;
    case EV_AR_BUCKET: snprintf(buf, len, "AR bucket %d", e->index); break;
    case EV_AG_BUCKET: snprintf(buf, len, "AG bucket %d", e->index); break;
    case EV_RS_GRADS: snprintf(buf, len, "RS gradients"); break;
    case EV_AR_GRADS: snprintf(buf, len, "AR gradients"); break;
    case EV_AG_PARAMS: snprintf(buf, len, "AG parameters"); break;
    default: snprintf(buf, len, "optimizer"); break;
    }
    (void)w;
}

static json_t *meta(const char *what, int pid, int tid, const char *key, json_t *value)
{
    json_t *o = json_pack("{s:s, s:s, s:i}", "name", what, "ph", "M", "pid", pid);
    if (!o) return NULL;
    if (tid >= 0) json_object_set_new(o, "tid", json_integer(tid));
    json_object_set_new(o, "args", json_pack("{s:o}", key, value));
    return o;
}

json_t *sim_trace_json(const sim_workspace *w)
{
    if (!w->traced) return NULL;
    json_t *events = json_array();
    if (!events) return NULL;
    for (int s = 0; s < w->pp; s++) {
        char name[48];
        snprintf(name, sizeof name, "stage %d", s);
        json_array_append_new(events, meta("process_name", s, -1, "name", json_string(name)));
        json_array_append_new(events,
                              meta("process_sort_index", s, -1, "sort_index", json_integer(s)));
        for (int tid = 0; tid < TID_COUNT; tid++) {
            if (!(w->st[s].tids_used & (1u << tid))) continue;
            json_array_append_new(events, meta("thread_name", s, tid, "name",
                                               json_string(tid_names[tid])));
            json_array_append_new(
                events, meta("thread_sort_index", s, tid, "sort_index", json_integer(tid)));
        }
    }
    for (int i = 0; i < w->nev; i++) {
        const trace_event *e = &w->ev[i];
        if (!isfinite(e->start_s) || !isfinite(e->end_s)) continue;
        char name[64];
        event_name(w, e, name, sizeof name);
        json_t *x = json_pack("{s:s, s:s, s:f, s:f, s:i, s:i}", "name", name, "ph", "X", "ts",
                              e->start_s * 1e6, "dur", (e->end_s - e->start_s) * 1e6, "pid",
                              e->stage, "tid", (int)e->tid);
        if (!x) {
            json_decref(events);
            return NULL;
        }
        json_t *args = json_object();
        if (e->microbatch >= 0) json_object_set_new(args, "microbatch", json_integer(e->microbatch));
        if (e->chunk >= 0) json_object_set_new(args, "chunk", json_integer(e->chunk));
        if (e->index >= 0)
            json_object_set_new(args, e->kind == EV_AG_LAYER || e->kind == EV_RS_LAYER ? "layer"
                                                                                       : "bucket",
                                json_integer(e->index));
        json_object_set_new(x, "args", args);
        json_array_append_new(events, x);
    }
    json_t *o = json_object();
    json_object_set_new(o, "traceEvents", events);
    json_object_set_new(o, "displayTimeUnit", json_string("ms"));
    return o;
}
