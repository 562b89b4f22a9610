/*
 * bk_timing.h — the backend's one timing engine, shared by the GEMM timings (bk_gemm.c), the
 * collective timings (bk_coll.c), plan measure's steps and its items timed alone (bk_measure.c,
 * bk_instrument.c), the way nccl-tests keeps one timing loop for every collective.
 *
 * What it does, in order: `warmup` untimed launches; an optional hook (the collectives check
 * their result there); a probe (an untimed repeat of probe_launches launches, timed like a
 * repeat) that sizes the repeats to last min_repeat_s each, unless launches_per_repeat is fixed;
 * for GEMMs, warm-up launches lasting warmup_s more; then `repeats` timed repeats. A repeat:
 * optionally the devices (or the timed streams) idle and every process at a barrier, a CUDA
 * event on each timed GPU's stream, the repeat's launches, a second event; its time is the
 * slowest GPU's (of every process when across_processes), divided by the launches. The result
 * is the median repeat and the spread (max - min) / median.
 *
 * host_ahead: a repeat's launches reach the GPU only once the host has issued all of them (a
 * one-thread gate kernel ahead of the start event spins on a flag in mapped host memory that the
 * host sets after the stop event), so the repeat times the GPU running them back to back, as in
 * a step where the host runs ahead of the GPU. Without it a repeat starts its clock when the
 * idle GPU reaches the start event, and any launch the host issues later than the GPU finishes
 * the one before leaves the GPU waiting inside the timed span. The host's issue time per
 * launch is reported either way (host_s).
 */
#ifndef PLAN_BK_TIMING_H
#define PLAN_BK_TIMING_H

#include "bk_internal.h"

/* The most timed repeats (a bk_timing's repeats is clamped to 1..BK_TIMING_MAX_REPEATS). */
#define BK_TIMING_MAX_REPEATS 64

/* Issue one launch. index counts launches: the warm-up's and the probe's from 0, repeat r's
 * from r (a GEMM rotates its operand copies by it). */
typedef cm_status (*bk_launch_fn)(void *arg, int index, char *err, size_t errlen);
typedef cm_status (*bk_hook_fn)(void *arg, char *err, size_t errlen);

/* Before each repeat (and the probe). */
typedef enum {
    BK_SYNC_NONE,              /* nothing: the previous repeat's last event was waited for */
    BK_SYNC_STREAMS,           /* the timed streams idle */
    BK_SYNC_DEVICES            /* the timed devices idle (cudaDeviceSynchronize) */
} bk_sync;

typedef struct {
    /* what runs */
    bk_launch_fn launch;
    bk_hook_fn after_warmup;   /* NULL: none */
    void *arg;
    /* where it is timed: devices [dev_lo, dev_hi) (global indices this process drives), events
     * start[d] and stop[d] (created by the caller, who reads them afterwards if it likes)
     * recorded on streams[d] */
    int dev_lo, dev_hi;
    cudaStream_t *streams;
    cudaEvent_t *start, *stop;
    bk_sync sync;
    bool across_processes;     /* a barrier before each repeat; the slowest GPU of any process */
    /* how much runs */
    int warmup;                /* untimed launches */
    int probe_launches;        /* launches of the untimed probe repeat (0: none) */
    int launches_per_repeat;   /* fixed; 0: sized by the probe to last min_repeat_s */
    int min_launches, max_launches; /* the sized count's bounds */
    int unsized_launches;      /* the sized count when the probe took no time */
    double min_repeat_s;
    double warmup_s;           /* after the probe, warm-up launches lasting this long (0: none) */
    int repeats;               /* clamped to 1..BK_TIMING_MAX_REPEATS */
    bool host_ahead;           /* hold the timed streams (a gate kernel before the start event)
                                  until the host has issued the repeat's every launch */
} bk_timed;

typedef struct {
    double time_s;             /* median repeat, per launch */
    double spread;             /* (max - min) / median, 0 when the median is 0 */
    double min_s, max_s;
    int launches_per_repeat;
    int repeats;
    double host_s;             /* host seconds issuing one launch, median repeat */
} bk_timed_result;

cm_status bk_time(bk_ctx *ctx, const bk_timed *t, bk_timed_result *out, char *err,
                  size_t errlen);

/* Median of n doubles (sorts in place). */
double bk_median(double *v, int n);

#endif
