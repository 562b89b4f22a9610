/*
 * bk_coll.c — NCCL collective microbenchmarks, nccl-tests style: one thread drives the group's
 * GPUs (nccl-tests' -g mode; under MPI each process its own, nccl-tests' MPI mode), out-of-place bf16 buffers, warm-up, then repeats of back-to-back
 * launches timed with CUDA events on every GPU; a repeat's time is the slowest GPU's, the
 * reported time the median repeat. algbw = size / time; busbw = algbw * bus_factor(n) with the
 * factor from the cost model's collective table, so the definitions exist once. The timing loop
 * is the backend's timing engine (bk_timing.h).
 *
 * Check: every rank's send buffer holds an integer pattern (1..4, rank-dependent), so the exact
 * result of each operation is known; a kernel counts the elements that differ.
 */
#include <math.h>
#include <stdlib.h>

#include "bk_timing.h"
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

/* One timed collective: its buffers, and what the check of its result found. */
typedef struct {
    bk_ctx *c;
    collective_op op;
    int g, own_lo, own_hi;     /* this process's ranks of the group: [own_lo, own_hi) */
    size_t bytes, count, nr;
    void *send[BK_MAX_GPUS], *recv[BK_MAX_GPUS];
    unsigned long long *bad[BK_MAX_GPUS];
    unsigned long long wrong;
} coll_run;

static cm_status coll_launch_one(void *arg, int index, char *err, size_t errlen)
{
    (void)index;
    coll_run *r = arg;
    return bk_coll_launch(r->op, r->g, r->c->prefix[r->g], r->c->comm, r->send, r->recv,
                          r->bytes, false, err, errlen);
}

/* The result of the warm-up launches (out of place: every launch writes the same) against the
 * pattern's exact values, summed over the processes. */
static cm_status coll_check(void *arg, char *err, size_t errlen)
{
    coll_run *r = arg;
    bk_ctx *c = r->c;
    r->wrong = 0;
    for (int i = r->own_lo; i < r->own_hi; i++) {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        CUDA_TRY(bkk_check(r->recv[i], r->nr, (int)r->op, i, r->g, r->count / r->g, r->bad[i],
                           c->comm[i]));
    }
    for (int i = r->own_lo; i < r->own_hi; i++) {
        unsigned long long b = 0;
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        /* the streams are non-blocking: a plain cudaMemcpy would not wait for the checker */
        CUDA_TRY(cudaStreamSynchronize(c->comm[i]));
        CUDA_TRY(cudaMemcpy(&b, r->bad[i], sizeof b, cudaMemcpyDeviceToHost));
        r->wrong += b;
    }
    double wr = (double)r->wrong;
    bk_world_sum(&wr, 1);
    r->wrong = (unsigned long long)wr;
    return CM_OK;
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
    cudaEvent_t e0[BK_MAX_GPUS], e1[BK_MAX_GPUS];
    /* This process's ranks of the group (all of them in one process). */
    int own_lo = c->own_lo, own_hi = c->own_hi < g ? c->own_hi : g;
    coll_run R = {.c = c, .op = op, .g = g, .own_lo = own_lo, .own_hi = own_hi, .bytes = bytes,
                  .count = count, .nr = nr};
#define OWN for (int i = own_lo; i < own_hi; i++)
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        CUDA_TRY(cudaMalloc(&R.send[i], ns * 2));
        CUDA_TRY(cudaMalloc(&R.recv[i], nr * 2));
        CUDA_TRY(cudaMalloc((void **)&R.bad[i], sizeof(unsigned long long)));
        CUDA_TRY(cudaMemsetAsync(R.bad[i], 0, sizeof(unsigned long long), c->comm[i]));
        CUDA_TRY(bkk_fill_pattern_bf16(R.send[i], ns, 0, i, c->comm[i]));
        CUDA_TRY(bkk_fill_bf16(R.recv[i], nr, 99u + i, 300.0f, 400.0f, c->comm[i])); /* poison */
        CUDA_TRY(cudaEventCreate(&e0[i]));
        CUDA_TRY(cudaEventCreate(&e1[i]));
    }
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        CUDA_TRY(cudaStreamSynchronize(c->comm[i]));
    }
    bk_world_barrier();
    /* Warm-up, the check of its result, then repeats on the communication streams: one timed
     * launch sizes them to min_repeat_s (20..100 launches); the streams idle and the processes
     * at a barrier before each. At least 20 launches a repeat, as nccl-tests times (-n 20,
     * src/common.cu `iters = 20`): a repeat pays a start cost once (about 97 us measured on
     * 4 x H100, bench/results/mgpu_2026-11-27 section 1), which over 3..5 launches of a large
     * all-to-all was 3-4% of the time nccl-tests reports; over 20 it is under 1%. */
    bk_timed t = {.launch = coll_launch_one, .after_warmup = coll_check, .arg = &R,
                  .dev_lo = own_lo, .dev_hi = own_hi, .streams = c->comm, .start = e0,
                  .stop = e1, .sync = BK_SYNC_STREAMS, .across_processes = true,
                  .warmup = tm->warmup > 0 ? tm->warmup : 1, .probe_launches = 1,
                  .launches_per_repeat = 0, .min_launches = 20, .max_launches = 100,
                  .unsized_launches = 100, .min_repeat_s = tm->min_repeat_s, .warmup_s = 0,
                  .repeats = tm->repeats};
    bk_timed_result res;
    cm_status st = bk_time(c, &t, &res, err, errlen);
    if (st != CM_OK) {
        OWN {
            cudaSetDevice(c->dev[i]);
            cudaEventDestroy(e0[i]);
            cudaEventDestroy(e1[i]);
            cudaFree(R.send[i]);
            cudaFree(R.recv[i]);
            cudaFree(R.bad[i]);
        }
        return st;
    }
    out->time_s = res.time_s;
    out->spread = res.spread;
    out->bytes = (double)bytes;
    out->algbw_bytes_per_s = bytes / out->time_s;
    out->busbw_bytes_per_s = out->algbw_bytes_per_s * collective_get(op)->bus_factor(g);
    out->wrong = R.wrong;
    OWN {
        CUDA_TRY(cudaSetDevice(c->dev[i]));
        cudaEventDestroy(e0[i]);
        cudaEventDestroy(e1[i]);
        CUDA_TRY(cudaFree(R.send[i]));
        CUDA_TRY(cudaFree(R.recv[i]));
        CUDA_TRY(cudaFree(R.bad[i]));
    }
#undef OWN
    return CM_OK;
}
