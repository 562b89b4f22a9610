/*
 * bk_run.h — one measured plan step's state, shared by the three files that run it:
 * bk_measure.c (set-up: schedule, communicators, pools, events; the timed steps; the result and
 * release), bk_step.c (issuing the step onto the GPUs' streams: items, data-parallel traffic
 * and its overlap, FSDP2's copies, the pipeline schedule and its transfers, the optimizer) and
 * bk_instrument.c (the instrumented step's events and spans, the trace, the pipeline transfer
 * check, every item timed alone, the out-of-memory report). Sizes and offsets of the buffer
 * pools come from bk_pools.h (plain C).
 *
 * Devices: global indices 0..nd-1, stage s owning s*S .. s*S+S-1 (Megatron rank order: tp
 * innermost, then cp, dp, and pp outermost); this process drives [olo, ohi) of them. Launches go
 * to the devices in [dlo, dhi) (one stage, or all: set_stage / set_all) that this process drives.
 */
#ifndef PLAN_BK_RUN_H
#define PLAN_BK_RUN_H

#include "bk_internal.h"
#include "bk_pools.h"
#include "bk_timing.h"
#include "work_rows.h"

#define BK_MAX_SLOTS 8

/* The instances of one process group (e.g. every TP group of the run) and their communicators. */
typedef struct {
    int n;                     /* instances */
    int size;                  /* ranks per instance */
    int dev[BK_MAX_GPUS][BK_MAX_GPUS];    /* [instance][rank] -> device index */
    ncclComm_t comm[BK_MAX_GPUS][BK_MAX_GPUS];
    int rank_of[BK_MAX_GPUS]; /* device index -> rank in its instance */
} group_set;

/* CUDA events for the instrumented step, per device, reused between steps. */
typedef struct {
    cudaEvent_t *e;
    int n, created, cap;
} ev_pool;

/* A span of the instrumented step: two events of events[dev]. */
typedef struct {
    int stage, tid, dev, i0, i1;
    int wait;                  /* op spans: event after the blocking send's wait, or -1 */
    bool op;                   /* a forward/backward chunk (else an item, a send, a collective) */
    int mb, chunk, layer;
    char name[40];
} span_mark;

typedef struct {
    bk_ctx *c;
    const work_plan *w;
    int nd;                    /* devices used (global indices 0..nd-1) */
    int olo, ohi;              /* the used devices this process drives: [olo, ohi) */
    int S, P;                  /* devices per stage, stages run */
    int dlo, dhi;              /* the devices launches go to now: one stage, or all */
    group_set grp[GROUP_COUNT];
    /* the arena per device (bk_pools.h), and where its regions start: weights and optimizer
     * states, activation regions, communication buffers, pipeline buffers, gradients */
    char *arena[BK_MAX_GPUS];
    char *state[BK_MAX_GPUS], *act[BK_MAX_GPUS], *commbuf[BK_MAX_GPUS], *ppbuf[BK_MAX_GPUS];
    char *grads[BK_MAX_GPUS];
    bk_pools pools;
    bool fsdp2_copies;         /* run FSDP2's copy-in / copy-out kernels */
    bool fsdp2_acc;            /* torch pipelining's FSDP2 units: gathered once, gradients summed
                                  in fp32 over the micro-batches, reduced once (fsdp_copies.h) */
    cudaEvent_t ev_used[BK_MAX_GPUS][2], ev_gath[BK_MAX_GPUS][2], ev_rdone[BK_MAX_GPUS][2];
    cudaEvent_t ev_bw[BK_MAX_GPUS], ev_join[BK_MAX_GPUS], ev_root[BK_MAX_GPUS];
    cudaEvent_t ev_rfree[BK_MAX_GPUS]; /* FSDP2: the compute stream is done with the root unit */
    /* a step's (or a timed repeat's) start and end on the compute streams, recorded by the
     * timing engine (bk_timing.h); the instrumented step's spans are timed from e0 */
    cudaEvent_t e0[BK_MAX_GPUS], e1[BK_MAX_GPUS];
    /* pipeline */
    ncclComm_t ppc[2][BK_MAX_GPUS][BK_MAX_GPUS]; /* [direction][column][stage] */
    bool ppc_made;
    cudaStream_t ps[2][BK_MAX_GPUS];             /* p2p stream per direction */
    int nslots;                /* receive buffers per direction */
    cudaEvent_t ev_recv[2][BK_MAX_GPUS][BK_MAX_SLOTS], ev_cons[2][BK_MAX_GPUS][BK_MAX_SLOTS];
    cudaEvent_t ev_sent[2][BK_MAX_GPUS], ev_done[BK_MAX_GPUS], ev_pjoin[2][BK_MAX_GPUS];
    work_pp_op *sched;         /* [P][per] */
    work_pp_issue *order;
    int per, norder;
    int made[BK_MAX_GPUS][2], used[BK_MAX_GPUS][2]; /* transfers into stage s, per direction */
    /* instrumentation */
    bool inst, inst_items;
    /* Megatron's ring attention (context parallel): Transformer Engine exchanges the next K/V
     * chunk on its own stream while the current attention block computes
     * (transformer_engine/pytorch/attention: AttnFuncWithCPAndKVP2P, send/recv on a separate
     * stream, waited before the block that needs it); the backend runs the layer's ring
     * exchanges on cps beside the attention core and joins before the next item. */
    bool cp_overlap;
    cudaStream_t cps[BK_MAX_GPUS];
    cudaEvent_t ev_cp0[BK_MAX_GPUS], ev_cp1[BK_MAX_GPUS];
    ev_pool events[BK_MAX_GPUS];
    span_mark *marks;
    int nmarks, capmarks;
    /* host pacing (bk_step.c bk_pace): on for this step, and the host clock (CLOCK_MONOTONIC,
     * s) the issue has reached by the cost model's account */
    bool pace;
    double pace_t;
    /* torchtitan's per-expert loop under --moe-new-counts (bk_loop.c, work_plan.loop_new_share):
     * each (layer, micro-batch) pass's row counts, drawn in its forward (work_rows.h), read by
     * its recompute and backward; the GEMM shapes the loop has issued (cuBLAS's own cache
     * is per shape); the host time of the loop's cuBLAS calls in paced steps */
    work_rows rows;
    int *loop_rows;            /* [layer][micro-batch][local expert]; NULL: no new counts */
    int loop_layers, loop_mbs;
    unsigned long long *loop_shapes; /* open addressing, 0 = empty */
    int loop_shape_cap, loop_shape_n;
    double *loop_new_s, *loop_seen_s;
    int loop_new_n, loop_seen_n, loop_sample_cap;
} bk_run;

static inline int stage_of(const bk_run *x, int d) { return d / x->S; }
/* The GPU a stage's spans are timed on: its first. */
static inline int trace_dev(const bk_run *x, int s) { return s * x->S; }

static inline void set_stage(bk_run *x, int s)
{
    x->dlo = s * x->S;
    x->dhi = x->dlo + x->S;
}

static inline void set_all(bk_run *x)
{
    x->dlo = 0;
    x->dhi = x->nd;
}

/* Elements per DP rank of stage s's root unit; the pieces FSDP reduces its gradients in. */
static inline size_t root_cnt(const bk_run *x, int s)
{
    return bk_pools_root_count(x->w, x->grp[GROUP_DP].size, s);
}

static inline int root_pieces(const bk_run *x, int s)
{
    return bk_pools_root_pieces(x->w, &x->pools, x->grp[GROUP_DP].size, s);
}

/* A ring exchange that runs on the ring streams beside the attention core. */
static inline bool ring_item(const bk_run *x, const work_item *it)
{
    return x->cp_overlap && bk_ring_exchange(it);
}

/* The pipeline's send buffer of direction dir, and its receive slots. */
static inline char *send_buf(const bk_run *x, int dir, int d)
{
    return x->ppbuf[d] + (size_t)dir * x->pools.p2p_slot;
}
static inline char *recv_buf(const bk_run *x, int dir, int d, int slot)
{
    return x->ppbuf[d] + (size_t)(2 + dir * x->nslots + slot) * x->pools.p2p_slot;
}

/* The devices launches go to now that this process drives. */
#define EACH_DEV                                                                               \
    for (int d = x->dlo > x->olo ? x->dlo : x->olo; d < (x->dhi < x->ohi ? x->dhi : x->ohi); d++)
/* Every used device this process drives. */
#define OWNED for (int d = x->olo; d < x->ohi; d++)
#define DEV(call)                                                                              \
    EACH_DEV                                                                                   \
    {                                                                                          \
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));                                                 \
        CUDA_TRY(call);                                                                        \
    }

/* ---- bk_loop.c: torchtitan's per-expert loop at changing row counts ------------------------ */

/* The count table and the shape set, where the plan issues new row counts. */
cm_status bk_loop_setup(bk_run *x, char *err, size_t errlen);
void bk_loop_free(bk_run *x);
/* The counts of layer gl's pass of micro-batch mb: drawn (forward: new ones in paced steps,
 * else every expert at the balanced count) or read back (recompute, backward); NULL without a
 * table (the looped items then run at the balanced count as before). */
const int *bk_loop_draw(bk_run *x, int gl, int mb);
const int *bk_loop_rows(const bk_run *x, int gl, int mb);
/* A looped item's GEMMs on device d at the counts rows[]: each expert's slice of the operands
 * that carry the rows placed one after another; a shape the loop has not issued before adds
 * its cuBLAS call's host time to the paced issue point (the model's pace covers the rest). */
cm_status bk_loop_launch(bk_run *x, int d, bool first_dev, const work_item *it, const int *rows,
                         const char *A, const char *B, char *C, char *err, size_t errlen);
/* The loop's cuBLAS call host times in paced steps, for the report: at new shapes their count,
 * median and mean (a tail of slow heuristics makes the mean what a host-bound step pays), at
 * seen shapes their count and median. */
void bk_loop_stats(const bk_run *x, int *n_new, double *new_s, double *new_mean_s, int *n_seen,
                   double *seen_s, long *exhausted);

/* ---- bk_step.c: issuing ---------------------------------------------------------------------- */

/* One step: every stage's chunks in the host's issue order (with the data-parallel traffic, the
 * pipeline transfers and their events), then the optimizer. The compute streams' e0 must have
 * been recorded just before (the timing engine's start): the other streams start from it. */
cm_status bk_step_issue(bk_run *x, char *err, size_t errlen);

/* What plan measure times alone, on every used device's compute stream. */
typedef enum {
    ISO_ITEM, ISO_GATHER, ISO_REDUCE, ISO_ADAM, ISO_COPY_IN, ISO_COPY_OUT, ISO_COPY_REDUCE, ISO_P2P,
    ISO_ACC_CAST, ISO_ACC_ADD
} iso_kind;

/* One launch of it: item it (head: of the output layer), a layer unit's gather or reduction
 * (kind 0 dense, 1 MoE), the optimizer, FSDP2's copies of a unit (kind 2: stage 0's root unit),
 * one pipeline transfer. */
cm_status bk_step_alone(bk_run *x, iso_kind k, const work_item *it, bool head, int kind,
                        char *err, size_t errlen);

/* A pointer to `need` bytes inside [base, base+size), placed by `slot` (wraps around). */
char *bk_carve(char *base, size_t size, size_t need, size_t slot);

/* One collective over every instance of group G whose devices are in [dlo, dhi), on the given
 * streams (per device), with send/recv arrays indexed by device; nothing for a group of one. */
cm_status bk_group_coll(bk_run *x, work_group G, collective_op op, size_t bytes, bool fp32,
                        cudaStream_t *streams, void **send, void **recv, char *err,
                        size_t errlen);

/* ---- bk_dp.c: data-parallel unit traffic and FSDP2's copies ------------------------------- */

/* Layer unit j's (index within the stage; kind 0 dense, 1 MoE) parameter gather and gradient
 * reduction on streams. */
cm_status bk_dp_gather(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                       size_t errlen);
cm_status bk_dp_reduce(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                       size_t errlen);
/* FSDP2's all-gather copy-in of cnt elements per rank (the fp32 shard at src_slot into this
 * rank's slot of the buffer at dst_off), of layer unit j, its copy-out (root: the stage's root
 * unit), its reduce-scatter copy-in. */
cm_status bk_copy_in(bk_run *x, size_t cnt, size_t src_slot, size_t dst_off,
                     cudaStream_t *streams, char *err, size_t errlen);
cm_status bk_fsdp2_copy_in(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                           size_t errlen);
cm_status bk_fsdp2_copy_out(bk_run *x, int j, int kind, bool root, cudaStream_t *streams,
                            char *err, size_t errlen);
cm_status bk_fsdp2_rs_copy_in(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                              size_t errlen);
/* Under fsdp2_acc: a unit's unsharded bf16 gradient (src_off in the communication buffer, cnt
 * elements per rank) cast into its fp32 accumulator (acc_slot in the gradient region) in the
 * first micro-batch's backward (acc_cast), added into it in each later one (acc_add). */
cm_status bk_fsdp2_grad_acc(bk_run *x, size_t cnt, bool first, size_t src_off, size_t acc_slot,
                            cudaStream_t *streams, char *err, size_t errlen);
/* The current stage's root unit: its gather (under FSDP2 with the copy-in first), its
 * gradients' reduction in unit-sized pieces. */
cm_status bk_root_gather(bk_run *x, cudaStream_t *streams, char *err, size_t errlen);
cm_status bk_root_reduce(bk_run *x, cudaStream_t *streams, char *err, size_t errlen);

/* ---- bk_instrument.c: instrumentation -------------------------------------------------------- */

/* Record a pooled event on stream st of device d; *idx is its index in events[d] (-1 for another
 * process's GPU). */
cm_status bk_mark(bk_run *x, int d, cudaStream_t st, int *idx, char *err, size_t errlen);

/* Begin / end a span on stage s's trace device, stream streams[that device] (when instrumenting;
 * else nothing). */
cm_status bk_span_begin(bk_run *x, int s, cudaStream_t *streams, int *i0, char *err,
                        size_t errlen);
cm_status bk_span_end(bk_run *x, int s, cudaStream_t *streams, int i0, int tid, const char *name,
                      int mb, int chunk, int layer, bool op, char *err, size_t errlen);

/* The instrumented step's spans: per-stage busy time, bubble, blocked sends; the trace. */
cm_status bk_read_spans(bk_run *x, bk_measure_result *out, trace_list *trace, char *err,
                        size_t errlen);

/* Received activations and gradients equal what was sent (the instrumented step's slots). */
cm_status bk_pp_check(bk_run *x, bk_measure_result *out, char *err, size_t errlen);

/* Every distinct item, the data-parallel traffic of a unit, FSDP2's copies, a pipeline transfer
 * and the optimizer timed alone; their times times their counts per step into the result's
 * components. */
cm_status bk_time_items(bk_run *x, const bk_timing *tm, bk_measure_result *out, char *err,
                        size_t errlen);

/* The out-of-memory report: the pools exceed the free memory (freemin, after base was taken);
 * a pool's cudaMalloc of `bytes` failed on GPU d; another process's did. Each returns
 * CM_ENOMEM with err naming the plan and the shortfall. */
cm_status bk_oom_pools(const bk_run *x, const char *plan_name, double freemin, double base,
                       char *err, size_t errlen);
cm_status bk_oom_malloc(const bk_run *x, const char *plan_name, size_t bytes, const char *what,
                        int d, cudaError_t e, char *err, size_t errlen);
cm_status bk_oom_elsewhere(const char *plan_name, char *err, size_t errlen);

#endif
