/*
 * sim_internal.h — the step simulator's workspace and trace events, shared by sim.c (which
 * builds and runs a step) and sim_trace.c (which writes the recorded step as a Chrome /
 * Perfetto trace). Private to costmodel/sim*.c.
 */
#ifndef PLAN_SIM_INTERNAL_H
#define PLAN_SIM_INTERNAL_H

#include <stdbool.h>

#include "estimate_costs.h"
#include "pp_p2p_order.h"
#include "schedule.h"
#include "sim.h"

/* Streams of a stage: the trace's thread ids. */
enum { TID_COMPUTE = 0, TID_SEND_FWD = 1, TID_SEND_BWD = 2, TID_COLL = 3, TID_COUNT = 4 };

/* What a trace event was; its name is made when the trace is written. */
enum {
    EV_FWD, EV_BWD, EV_BWD_INPUT, EV_BWD_WEIGHT, EV_SEND_FWD, EV_SEND_BWD, EV_AG_LAYER, EV_RS_LAYER, EV_RS_BUCKET,
    EV_AR_BUCKET, EV_AG_BUCKET, EV_RS_GRADS, EV_AR_GRADS, EV_AG_PARAMS, EV_OPTIMIZER,
};

typedef struct {
    double start_s, end_s;
    int stage, index, microbatch, chunk;
    unsigned char tid, kind;
} trace_event;

typedef schedule_op sched_op;

/* Grow *p (a pointer to an array) to hold n elements of size sz; false when out of memory. */
bool sim_reserve(void *pp, int *cap, int n, size_t sz);

typedef struct {
    double compute_free, send_free[2], coll_free;
    double busy;
    int next, nops;
    int p2p_pos, p2p_n; /* p2p_stream: its next SEND/RECV, and how many */
    int fwd_done, bwd_done; /* forwards and backwards (full or I) run so far */
    int unpaired;       /* ep_unpaired: its first and last this many run unpaired */
    double p2p_free;    /* p2p_stream: its NCCL stream is free */
    bool queued;
    unsigned tids_used;
} stage_state;

struct sim_workspace {
    /* the input sim_build makes */
    sim_input in;
    sim_layer *layer;
    int *vstage_layers;
    sim_bucket *bucket;
    double *grad_sync, *param_sync, *optimizer;
    estimate_stage *stage_costs;
    int layer_cap, vs_cap, bucket_cap, grad_cap, param_cap, opt_cap, costs_cap;
    /* run state */
    const sim_input *run_in;
    sched_op *sched;
    sim_op *ops;
    double *arr_f, *arr_b;       /* [vstage * m + mb]: input there; < 0 not yet */
    int *vfirst;                 /* first layer of each virtual stage */
    double *vfwd, *vbwd;         /* summed chunk durations (with the head on the last, the
                                    embedding's FSDP2 copies on the first) */
    double *vwgrad;              /* the weight-gradient part of vbwd (zero-bubble W ops) */
    double *vunp;                /* [2 * vstage]: its layers' ep_unpaired_{fwd,bwd}_s summed */
    double *param_ready;         /* [layer]: its parameters are gathered (first forward) */
    int *bucket_at;              /* [layer]: the bucket made ready by this layer's backward */
    int *bucket_num;             /* [bucket]: its number within its stage (trace names) */
    int *stage_count;            /* [pp] scratch */
    int *op_off;                 /* [pp] where stage s's ops start in ops[] (compact) */
    stage_state *st;
    pp_p2p_op *p2p;              /* p2p_stream: [pp * pp_p2p_max_ops] lowered SEND/RECV */
    double *half;                /* p2p_stream: [4][vstages * m] when each half of a transfer
                                    was issued ((backward * 2 + send)); < 0 not yet */
    int p2p_cap, half_cap;
    sim_stage_stats *stats;
    int *queue;                  /* [pp] ring of stages whose next chunk can run */
    int sched_cap, ops_cap, arrf_cap, arrb_cap, vfirst_cap, vfwd_cap, vbwd_cap, vw_cap, pr_cap, ba_cap,
        bn_cap, sc_cap, st_cap, stats_cap, queue_cap, off_cap, unp_cap;
    int per_stage, nops, pp;
    /* trace */
    bool tracing, traced;
    trace_event *ev;
    int nev, ev_cap;
    bool ev_failed;
    bool ev_over; /* stopped at SIM_MAX_TRACE_EVENTS */
};

#endif
