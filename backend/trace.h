/*
 * trace.h — a measured training step as a Chrome / Perfetto trace, in the same trace-event form
 * as the step simulator's (costmodel/sim.c, `plan simulate --trace`): one process per pipeline
 * stage named "stage s", threads per stream with the simulator's ids and names (0 compute,
 * 1 send activations (p2p), 2 send gradients (p2p), 3 data-parallel / FSDP collectives), and
 * complete ("X") events in microseconds from the step's start. A predicted and a measured step
 * therefore open side by side in Perfetto with the same tracks.
 *
 * bk_measure fills a trace_list from CUDA events recorded around every forward/backward chunk,
 * every work item inside it (nested in the chunk on the compute track), every pipeline send and
 * every data-parallel collective of one instrumented step, timestamps relative to that GPU's
 * step start. Plain C with jansson (no CUDA), so the writer is tested without a GPU.
 */
#ifndef PLAN_BACKEND_TRACE_H
#define PLAN_BACKEND_TRACE_H

#include <jansson.h>
#include <stddef.h>

#include "status.h"

/* Thread ids: the step simulator's (sim.c TID_*). */
typedef enum {
    TRACE_TID_COMPUTE = 0,
    TRACE_TID_SEND_FWD = 1,
    TRACE_TID_SEND_BWD = 2,
    TRACE_TID_COLL = 3,
    TRACE_TID_COUNT
} trace_tid;

#define TRACE_MAX_STAGES 64

typedef struct {
    int stage;           /* the process (pid) */
    trace_tid tid;
    double start_s, end_s; /* from the step's start on that stage's GPU */
    char name[40];       /* "F3", "B3 (chunk 1)", "send F3", "qkv", "RS layer 5", "optimizer" */
    int microbatch, chunk, layer; /* -1: not applicable (args left out) */
} trace_span;

typedef struct {
    trace_span *span;
    int n, cap;
    int stages;
    int gpu[TRACE_MAX_STAGES]; /* the local GPU each stage's spans were timed on; -1: unknown */
} trace_list;

void trace_init(trace_list *t, int stages);
void trace_free(trace_list *t);
/* Append a copy of s; CM_ENOMEM when the list cannot grow. */
cm_status trace_add(trace_list *t, const trace_span *s);

/* {"traceEvents": [...], "displayTimeUnit": "ms"}: process and thread names (metadata "M"
 * events, the simulator's names), then one "X" event per span with args microbatch / chunk /
 * layer where set. Spans with a non-finite or negative time are left out. NULL on allocation
 * failure. The caller owns the reference. */
json_t *trace_json(const trace_list *t);

/* trace_json written to path (compact). */
cm_status trace_write(const trace_list *t, const char *path, char *err, size_t errlen);

#endif
