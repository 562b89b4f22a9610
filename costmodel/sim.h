/*
 * sim.h — an event-driven simulation of one training step, for ranking the last few layouts
 * more exactly than the closed form (estimate.h) can.
 *
 * Each pipeline stage has a compute stream and three communication streams (activations sent
 * forward, gradients sent backward, and the data-parallel / FSDP collectives). Forward and
 * backward chunks run in the order of Megatron-LM's 1F1B or interleaved 1F1B schedule; a chunk
 * starts when its stream is free and its input has arrived from the neighbouring stage; FSDP
 * gathers run one layer ahead of the compute that needs them; gradient buckets are reduced as
 * the last micro-batch's backward fills them; the optimizer runs when every stage's gradients
 * are reduced. The durations come from the closed form's own per-layer and per-stage costs
 * (estimate_costs.h), so the simulator and the closed form differ only in how pieces overlap.
 *
 * Usage, GSL-style: a workspace holds every buffer, so repeated runs do not allocate:
 *   sim_workspace *w = sim_alloc();
 *   sim_estimate(w, m, sys, t, l, &opts, &est, err, sizeof err);   (or sim_build + sim_run)
 *   json_t *trace = sim_trace_json(w);                              (with opts.trace)
 *   sim_free(w);
 */
#ifndef PLAN_SIM_H
#define PLAN_SIM_H

#include <jansson.h>
#include <stdbool.h>

#include "estimate.h"

/* One transformer layer, one micro-batch. */
typedef struct {
    double fwd_s;    /* forward on the compute stream, exposed TP/SP, CP and EP included */
    double bwd_s;    /* backward, recompute and its exposed communication included */
    double wgrad_s;  /* the weight-gradient part of bwd_s: a zero-bubble schedule's W op */
    double gather_s; /* FSDP all-gather of its parameters (before forward; again before
                        backward when resharded after forward) */
    double reduce_s; /* FSDP reduce-scatter of its gradients, after its backward */
    double ep_unpaired_fwd_s, ep_unpaired_bwd_s; /* added to fwd_s (bwd_s) where it runs
                                                     unpaired (sim_input ep_unpaired) */
} sim_layer;

/* A data-parallel gradient bucket: layers first..last of one virtual stage. */
typedef struct {
    int vstage;      /* virtual stage k = chunk * pp + stage */
    int first_layer; /* global layer indices; ready when first_layer's backward of the last */
    int last_layer;  /* micro-batch ends (backward runs last_layer down to first_layer) */
    double reduce_s; /* gradient all-reduce (DDP) or reduce-scatter (distributed optimizer) */
    double gather_s; /* all-gather of its updated parameters (distributed optimizer; else 0) */
    double lp_params[2]; /* its dense and expert Linear weights gathered in low precision
                            (--fp8-param-gather; estimate_costs.h) */
} sim_bucket;

/* What to simulate. Arrays are the caller's; sim_build fills one from the cost model. */
typedef struct {
    int pp, vpp, microbatches;
    layout_pp_schedule schedule;     /* 0: 1F1B, or interleaved 1F1B with vpp > 1 (schedule.h) */
    int layers;
    const sim_layer *layer;          /* [layers], model order */
    const int *vstage_layers;        /* [pp * vpp]: layers of virtual stage k, in model order */
    double head_fwd_s, head_bwd_s;   /* output layer and loss, after the last virtual stage */
    double first_root_fwd_s, first_root_bwd_s; /* the embedding's FSDP2 copies: virtual stage 0 */
    /* FSDP root unit (embedding on the first stage; final norm and output layer on the last;
     * one unit with one stage): [0] first stage, [1] last. Gathered before the first (last)
     * virtual stage's forward and, resharded, before its backward; reduce-scattered after. */
    double root_gather_s[2], root_reduce_s[2];
    double p2p_s;                    /* one send of activations (or gradients) to a neighbour */
    bool p2p_overlap;                /* sends on their own streams; else they block compute */
    bool p2p_stream;                 /* torch.distributed.pipelining's multi-stage runtime: each
                                        send and receive in its lowered place (pp_p2p_order.h),
                                        in that order on one NCCL stream per stage, after the
                                        compute issued before it; a transfer ends once both
                                        halves have started (sim.c p2p_advance) */
    bool fsdp;                       /* per-layer FSDP gathers and reduce-scatters */
    bool fsdp_reshard;               /* gather again before backward (reshard after forward) */
    bool fsdp_accumulate;            /* units stay gathered and gradients unreduced across
                                        micro-batches (torch.distributed.pipelining, sim.c) */
    bool grad_overlap;               /* reduce buckets during the last backward */
    bool param_gather_overlap;       /* gather buckets at the start, under the first forward */
    bool ep_unpaired;                /* Megatron's EP A2A overlap (combined 1F1B): a stage's
                                        first 2(pp-s-1) + (vpp-1)pp + 1 forward chunks and as
                                        many last backwards have no partner micro-batch and
                                        pay their layers' ep_unpaired_*_s (sim.c run_chunk) */
    int buckets;
    const sim_bucket *bucket;        /* [buckets], used by the two overlaps */
    const double *grad_sync_s;       /* [pp] whole-stage gradient reduction, no overlap */
    const double *param_sync_s;      /* [pp] whole-stage parameter all-gather, no overlap */
    const double *optimizer_s;       /* [pp] */
    /* torchtitan's CUDA-graphed step (cuda_graphs.h; pp 1): the host's launch of the first
     * replay before any stream has work (start_s, every stream starts there), and when the
     * host has issued the clip and the optimizer after the replays (opt_host_end_s, from the
     * step's start): the optimizer ends no earlier. 0 and 0 without graphs. */
    double start_s, opt_host_end_s;
} sim_input;

typedef struct {
    bool serialize; /* no overlap anywhere: sends, gathers and reductions block the compute
                       stream (the closed form's picture with every overlap off) */
    bool trace;     /* record events for sim_trace_json */
} sim_options;

typedef enum { SIM_FORWARD = 0, SIM_BACKWARD = 1 } sim_pass;

/* One forward or backward chunk as it ran on a stage's compute stream. */
typedef struct {
    int stage, chunk, vstage, microbatch;
    sim_pass pass;
    double ready_s; /* its input (activations or gradients) was there */
    double start_s, end_s;
} sim_op;

typedef struct {
    double busy_s;        /* compute stream busy (ops and blocking sends) */
    double compute_end_s; /* its last forward/backward (and blocking send) ends */
    double grads_ready_s; /* its gradients are reduced */
    double end_s;         /* its step ends (optimizer, parameter gather) */
} sim_stage_stats;

/* Bounds on the work of one run (issue 18: `--gbs 100000000` once re-ranked plans of 50 M chunks
 * for minutes, and a trace of a million events took gigabytes). A run over SIM_MAX_CHUNKS
 * (stages x virtual chunks x micro-batches; a fifth of a second on one core, so a re-ranked
 * search of 35 plans stays within seconds; far above a real step: 4096 micro-batches of 16
 * stages x 3 chunks) is refused with an error naming the limit, and the
 * search then ranks that plan by its closed-form time, as for any plan the simulator cannot
 * time. A traced run records at most SIM_MAX_TRACE_EVENTS events (about 27 MB of JSON); past
 * that sim_run fails, saying so, and no trace is kept. */
#define SIM_MAX_CHUNKS 200000L
#define SIM_MAX_TRACE_EVENTS 200000

typedef struct sim_workspace sim_workspace;

sim_workspace *sim_alloc(void);
void sim_free(sim_workspace *w);

/* Fill the workspace's own input from the cost model (estimate_stage_costs); sim_input_of
 * returns it, to run or to inspect. */
cm_status sim_build(sim_workspace *w, const model_spec *m, const system_spec *sys,
                    const training_spec *t, const layout *l, char *err, size_t errlen);
const sim_input *sim_input_of(const sim_workspace *w);

/* Simulate one step of in (any input, e.g. sim_input_of(w)). */
cm_status sim_run(sim_workspace *w, const sim_input *in, const sim_options *o,
                  time_simulated *out, char *err, size_t errlen);

/* sim_build + sim_run for a layout, into e->time_sim (e->simulated set on success). e is an
 * estimate_layout() result for the same layout, or any estimate to annotate. */
cm_status sim_estimate(sim_workspace *w, const model_spec *m, const system_spec *sys,
                       const training_spec *t, const layout *l, const sim_options *o,
                       estimate *e, char *err, size_t errlen);

/* The last run's forward/backward chunks (schedule order per stage, stage after stage) and
 * per-stage figures. */
int sim_op_count(const sim_workspace *w);
const sim_op *sim_ops(const sim_workspace *w);
const sim_stage_stats *sim_stages(const sim_workspace *w); /* [pp] */

/* The last run (with o->trace) as a Chrome / Perfetto trace: {"traceEvents": [...]}, one
 * process per stage, one thread per stream, complete ("X") events in microseconds. NULL when
 * no trace was recorded or on allocation failure. The caller owns the reference. */
json_t *sim_trace_json(const sim_workspace *w);
int sim_trace_events(const sim_workspace *w);

#endif
