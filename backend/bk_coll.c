/*
 * bk_coll.c — NCCL collective microbenchmarks, nccl-tests style: one thread drives the group's
 * GPUs (nccl-tests' -g mode; under MPI each process its own, nccl-tests' MPI mode), out-of-place bf16 buffers, warm-up, then repeats of back-to-back
 * launches timed with CUDA events on every GPU; a repeat's time is the slowest GPU's, the
 * reported time the median repeat. algbw = size / time; busbw = algbw * bus_factor(n) with the
 * factor from the cost model's collective table, so the definitions exist once.
 *
 * Check: every rank's send buffer holds an integer pattern (1..4, rank-dependent), so the exact
 * result of each operation is known; a kernel counts the elements that differ.
 */
#include <math.h>
#include <stdlib.h>

#include "bk_internal.h"
#include "kernels.h"

static cm_status prefix_comms(bk_ctx *c, int g, char *err, size_t errlen)
{
    if (c->prefix_ok[g]) return CM_OK;
    int devs[BK_MAX_GPUS];
    for (int i = 0; i < g; i++) devs[i] = i;
    BK_TRY(bk_comm_group(c, g, devs, c->prefix[g], err, errlen));
    c->prefix_ok[g] = true;
    return CM_OK;
}

/* Elements each rank sends and receives for nccl-tests size `count` (elements). */
static void sizes(collective_op op, size_t count, int g, size_t *send, size_t *recv)
{
    size_t chunk = count / g;
    switch (op) {
    case COLL_ALL_GATHER: *send = chunk; *recv = chunk * g; break;
    case COLL_REDUCE_SCATTER: *send = chunk * g; *recv = chunk; break;
    case COLL_ALL_TO_ALL: *send = *recv = chunk * g; break;
    default: *send = *recv = count; break;
    }
}

cm_status bk_coll_time(bk_ctx *c, collective_op op, int g, size_t bytes, const bk_timing *tm,
                       bk_coll_result *out, char *err, size_t errlen)
{
    if (g < 2 || g > c->ngpus)
        return cm_fail(err, errlen, CM_EINVAL, "group size %d: this machine has %d GPUs", g,
                       c->ngpus);
    size_t count = bytes / 2;
    count -= count % g; /* whole chunks per rank */
    if (count == 0) count = g;
    bytes = count * 2;
    BK_TRY(prefix_comms(c, g, err, errlen));
    size_t ns, nr;
    sizes(op, count, g, &ns, &nr);
    void *send[BK_MAX_GPUS], *recv[BK_MAX_GPUS];
    unsigned long long *bad[BK_MAX_GPUS];
    cudaEvent_t e0[BK_MAX_GPUS], e1[BK_MAX_GPUS];
    /* This process's ranks of the group (all of them in one process). */
    int own_lo = c->own_lo, own_hi = c->own_hi < g ? c->own_hi : g;
#define OWN for (int i = own_lo; i < own_hi; i++)
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        CUDA_TRY(cudaMalloc(&send[i], ns * 2));
        CUDA_TRY(cudaMalloc(&recv[i], nr * 2));
        CUDA_TRY(cudaMalloc((void **)&bad[i], sizeof(unsigned long long)));
        CUDA_TRY(cudaMemsetAsync(bad[i], 0, sizeof(unsigned long long), c->comm[i]));
        CUDA_TRY(bkk_fill_pattern_bf16(send[i], ns, 0, i, c->comm[i]));
        CUDA_TRY(bkk_fill_bf16(recv[i], nr, 99u + i, 300.0f, 400.0f, c->comm[i])); /* poison */
        CUDA_TRY(cudaEventCreate(&e0[i]));
        CUDA_TRY(cudaEventCreate(&e1[i]));
    }
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        CUDA_TRY(cudaStreamSynchronize(c->comm[i]));
    }
    bk_world_barrier();
#define LAUNCH() BK_TRY(bk_coll_launch(op, g, c->prefix[g], c->comm, send, recv, bytes, false, err, errlen))
    for (int j = 0; j < (tm->warmup > 0 ? tm->warmup : 1); j++) LAUNCH();
    /* Check the result of the warm-up launches (out of place: every launch writes the same). */
    unsigned long long wrong = 0;
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        CUDA_TRY(bkk_check(recv[i], nr, (int)op, i, g, count / g, bad[i], c->comm[i]));
    }
    OWN {
        unsigned long long b = 0;
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        /* the streams are non-blocking: a plain cudaMemcpy would not wait for the checker */
        CUDA_TRY(cudaStreamSynchronize(c->comm[i]));
        CUDA_TRY(cudaMemcpy(&b, bad[i], sizeof b, cudaMemcpyDeviceToHost));
        wrong += b;
    }
    {
        double wr = (double)wrong;
        bk_world_sum(&wr, 1);
        wrong = (unsigned long long)wr;
    }
    /* Launches per repeat: enough for min_repeat_s, from one timed launch. */
    int iters = 1;
    double t[64];
    int reps = tm->repeats > 64 ? 64 : (tm->repeats < 1 ? 1 : tm->repeats);
    for (int r = -1; r < reps; r++) {
        OWN {
            CUDA_TRY(cudaSetDevice(c->dev[i]));
            CUDA_TRY(cudaStreamSynchronize(c->comm[i]));
        }
        bk_world_barrier(); /* the processes start a repeat together */
        OWN {
            CUDA_TRY(cudaSetDevice(c->dev[i]));
            CUDA_TRY(cudaEventRecord(e0[i], c->comm[i]));
        }
        for (int j = 0; j < iters; j++) LAUNCH();
        OWN {
            CUDA_TRY(cudaSetDevice(c->dev[i]));
            CUDA_TRY(cudaEventRecord(e1[i], c->comm[i]));
        }
        double worst = 0;
        OWN {
            float ms;
            CUDA_TRY(cudaSetDevice(c->dev[i]));
            CUDA_TRY(cudaEventSynchronize(e1[i]));
            CUDA_TRY(cudaEventElapsedTime(&ms, e0[i], e1[i]));
            if (ms * 1e-3 > worst) worst = ms * 1e-3;
        }
        bk_world_max(&worst, 1); /* the slowest GPU of any process */
        if (r < 0) {
            double one = worst / iters;
            iters = one > 0 ? (int)ceil(tm->min_repeat_s / one) : 100;
            if (iters < 5) iters = 5;
            if (iters > 100) iters = 100;
        } else {
            t[r] = worst / iters;
        }
    }
#undef LAUNCH
    double lo = t[0], hi = t[0];
    for (int r = 1; r < reps; r++) {
        if (t[r] < lo) lo = t[r];
        if (t[r] > hi) hi = t[r];
    }
    out->time_s = bk_median(t, reps);
    out->spread = out->time_s > 0 ? (hi - lo) / out->time_s : 0;
    out->bytes = (double)bytes;
    out->algbw_bytes_per_s = bytes / out->time_s;
    out->busbw_bytes_per_s = out->algbw_bytes_per_s * collective_get(op)->bus_factor(g);
    out->wrong = wrong;
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        cudaEventDestroy(e0[i]);
        cudaEventDestroy(e1[i]);
        CUDA_TRY(cudaFree(send[i]));
        CUDA_TRY(cudaFree(recv[i]));
        CUDA_TRY(cudaFree(bad[i]));
    }
#undef OWN
    return CM_OK;
}
