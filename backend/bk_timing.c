/*
 * bk_timing.c — the one timing engine (bk_timing.h): warm-up, probe, repeats timed with CUDA
 * events on every timed GPU, slowest GPU, median and spread; and the default timing options.
 */
#include <math.h>
#include <time.h>

#include "bk_timing.h"

/* The longest a gate holds a stream: the host issues a repeat's <= a few hundred launches in
 * milliseconds; a launch queue filled before the last launch would block the host behind the
 * gate, and the timeout ends that wait (reported as an error). */
#define BK_GATE_TIMEOUT_S 2.0

static double host_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bk_timing bk_timing_default(void)
{
    bk_timing t = {.warmup = 3, .repeats = 7, .min_repeat_s = 2e-3, .warmup_s = 0,
                   .host_ahead = false};
    return t;
}

double bk_median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n is a handful of repeats */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    if (n <= 0) return 0;
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One repeat of n launches (indices first, first + 1, ...): seconds per launch, slowest GPU,
 * and the host's seconds issuing one. */
static cm_status repeat(bk_ctx *c, const bk_timed *t, int n, int first, double *per_launch_s,
                        double *host_s, char *err, size_t errlen)
{
    if (t->host_ahead && !c->gate) {
        void *g = NULL;
        CUDA_TRY(cudaHostAlloc(&g, 2 * sizeof(uint32_t),
                               cudaHostAllocMapped | cudaHostAllocPortable));
        c->gate = g;
    }
    if (t->host_ahead) {
        c->gate[0] = c->gate[1] = 0;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        for (int d = t->dev_lo; d < t->dev_hi; d++) {
            CUDA_TRY(cudaSetDevice(c->dev[d]));
            CUDA_TRY(bkk_gate(c->gate, BK_GATE_TIMEOUT_S, t->streams[d]));
        }
    }
    if (t->sync != BK_SYNC_NONE) {
        for (int d = t->dev_lo; d < t->dev_hi; d++) {
            CUDA_TRY(cudaSetDevice(c->dev[d]));
            if (t->sync == BK_SYNC_DEVICES)
                CUDA_TRY(cudaDeviceSynchronize());
            else
                CUDA_TRY(cudaStreamSynchronize(t->streams[d]));
        }
    }
    if (t->across_processes) bk_world_barrier(); /* the processes start a repeat together */
    for (int d = t->dev_lo; d < t->dev_hi; d++) {
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaEventRecord(t->start[d], t->streams[d]));
    }
    double h0 = host_now_s();
    for (int j = 0; j < n; j++) BK_TRY(t->launch(t->arg, first + j, err, errlen));
    *host_s = (host_now_s() - h0) / n;
    for (int d = t->dev_lo; d < t->dev_hi; d++) {
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaEventRecord(t->stop[d], t->streams[d]));
    }
    if (t->host_ahead) {
        __atomic_store_n(&c->gate[0], 1u, __ATOMIC_SEQ_CST); /* every launch is issued: go */
    }
    double worst = 0;
    for (int d = t->dev_lo; d < t->dev_hi; d++) {
        float ms;
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaEventSynchronize(t->stop[d]));
        CUDA_TRY(cudaEventElapsedTime(&ms, t->start[d], t->stop[d]));
        if (ms * 1e-3 > worst) worst = ms * 1e-3;
    }
    if (t->host_ahead && c->gate[1])
        return cm_fail(err, errlen, CM_EIO,
                       "host-ahead timing: the gate held the GPU %.0f s before the host had "
                       "issued the repeat's %d launches (launch queue full?)",
                       BK_GATE_TIMEOUT_S, n);
    if (t->across_processes) bk_world_max(&worst, 1); /* the slowest GPU of any process */
    *per_launch_s = worst / n;
    return CM_OK;
}

cm_status bk_time(bk_ctx *c, const bk_timed *t, bk_timed_result *out, char *err, size_t errlen)
{
    for (int j = 0; j < t->warmup; j++) BK_TRY(t->launch(t->arg, j, err, errlen));
    if (t->after_warmup) BK_TRY(t->after_warmup(t->arg, err, errlen));
    int iters = t->launches_per_repeat > 0 ? t->launches_per_repeat : 1;
    if (t->probe_launches > 0) {
        double one, host;
        BK_TRY(repeat(c, t, t->probe_launches, 0, &one, &host, err, errlen));
        if (t->launches_per_repeat <= 0) {
            iters = one > 0 ? (int)ceil(t->min_repeat_s / one) : t->unsized_launches;
            if (iters < t->min_launches) iters = t->min_launches;
            if (iters > t->max_launches) iters = t->max_launches;
        }
        if (t->warmup_s > 0 && one > 0)
            for (int j = 0; j < (int)(t->warmup_s / one); j++)
                BK_TRY(t->launch(t->arg, j, err, errlen));
    }
    double v[BK_TIMING_MAX_REPEATS], h[BK_TIMING_MAX_REPEATS];
    int reps = t->repeats > BK_TIMING_MAX_REPEATS ? BK_TIMING_MAX_REPEATS
                                                  : (t->repeats < 1 ? 1 : t->repeats);
    for (int r = 0; r < reps; r++) BK_TRY(repeat(c, t, iters, r, &v[r], &h[r], err, errlen));
    double lo = v[0], hi = v[0];
    for (int r = 1; r < reps; r++) {
        if (v[r] < lo) lo = v[r];
        if (v[r] > hi) hi = v[r];
    }
    out->time_s = bk_median(v, reps);
    out->spread = out->time_s > 0 ? (hi - lo) / out->time_s : 0;
    out->min_s = lo;
    out->max_s = hi;
    out->launches_per_repeat = iters;
    out->repeats = reps;
    out->host_s = bk_median(h, reps);
    return CM_OK;
}
