/*
 * bk_core.c — the backend context (devices, streams, cuBLAS handles), error names, and the
 * collective launcher shared by calibrate and measure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_internal.h"

const char *bk_cublas_error(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "unknown cuBLAS status";
    }
}

int bk_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return n;
}

int bk_ngpus(const bk_ctx *ctx) { return ctx->ngpus; }
const char *bk_device_name(const bk_ctx *ctx) { return ctx->name; }
double bk_device_memory_bytes(const bk_ctx *ctx) { return ctx->mem_bytes; }
/* FP8 tensor cores: Ada (sm_89), Hopper (sm_90) and later. */
bool bk_has_fp8(const bk_ctx *ctx) { return ctx->cc >= 89; }
/* Blockwise FP8 (VEC128_32F / BLK128x128_32F scale modes): cuBLASLt 12.9+ on sm_90 (PyTorch
 * 2.11 restricts its BlockWise1x128 / BlockWise128x128 scaled_mm to SM90 likewise). */
bool bk_has_fp8_block(const bk_ctx *ctx) { return ctx->cc == 90; }

/* Which GPUs this process drives: all local ones (or the first ngpus) alone; under MPI,
 * ngpus each (0: this node's GPUs shared evenly among its processes), the process's share of
 * its node's devices, and global indices in process order. */
static cm_status open_devices(bk_ctx *c, int ngpus, char *err, size_t errlen)
{
    int n = bk_device_count();
    if (n == 0)
        return cm_fail(err, errlen, CM_EIO,
                       "no CUDA GPU found (cudaGetDeviceCount): run plan calibrate/measure on a "
                       "machine with NVIDIA GPUs and their driver");
    BK_TRY(bk_world_init(&c->world, err, errlen));
    const bk_world *W = &c->world;
    int per = ngpus;
    if (W->procs == 1) {
        if (per <= 0 || per > n) per = n;
    } else if (per <= 0) {
        per = n / W->node_procs;
        if (per < 1)
            return cm_fail(err, errlen, CM_EINVAL,
                           "%d processes on a node with %d GPUs: start at most one process per "
                           "GPU (mpirun -np / --map-by, srun --ntasks-per-node)",
                           W->node_procs, n);
    }
    if ((W->node_proc + 1) * per > n)
        return cm_fail(err, errlen, CM_EINVAL,
                       "process %d of %d wants GPUs %d..%d of its node, which has %d: lower "
                       "--local-gpus / --gpus or start fewer processes per node",
                       W->proc, W->procs, W->node_proc * per, (W->node_proc + 1) * per - 1, n);
    /* Every process drives the same number of GPUs (global index = process * per + i). */
    double lo = per, hi = per;
    bk_world_min(&lo, 1);
    bk_world_max(&hi, 1);
    if (lo != hi)
        return cm_fail(err, errlen, CM_EINVAL,
                       "the processes drive different numbers of GPUs (%g to %g): give every "
                       "node the same GPU count per process", lo, hi);
    if (per * W->procs > BK_MAX_GPUS)
        return cm_fail(err, errlen, CM_EINVAL, "%d GPUs in the run: the backend drives at most %d",
                       per * W->procs, BK_MAX_GPUS);
    c->ngpus = per * W->procs;
    c->own_lo = W->proc * per;
    c->own_hi = c->own_lo + per;
    for (int d = c->own_lo; d < c->own_hi; d++) {
        int i = W->node_proc * per + (d - c->own_lo); /* this node's CUDA device */
        c->dev[d] = i;
        CUDA_TRY(cudaSetDevice(i));
        struct cudaDeviceProp p;
        CUDA_TRY(cudaGetDeviceProperties(&p, i));
        if (d == c->own_lo) {
            if (W->procs > 1)
                snprintf(c->name, sizeof c->name,
                         "%d x %.160s (sm_%d%d, %d SMs), %d processes on %d node%s", c->ngpus,
                         p.name, p.major, p.minor, p.multiProcessorCount, W->procs, W->nodes,
                         W->nodes > 1 ? "s" : "");
            else
                snprintf(c->name, sizeof c->name, "%d x %.160s (sm_%d%d, %d SMs)", c->ngpus,
                         p.name, p.major, p.minor, p.multiProcessorCount);
            c->sms = p.multiProcessorCount;
            c->cc = p.major * 10 + p.minor;
            c->mem_bytes = (double)p.totalGlobalMem;
        }
        CUDA_TRY(cudaStreamCreateWithFlags(&c->compute[d], cudaStreamNonBlocking));
        CUDA_TRY(cudaStreamCreateWithFlags(&c->comm[d], cudaStreamNonBlocking));
        CUBLAS_TRY(cublasCreate(&c->blas[d]));
        CUBLAS_TRY(cublasSetStream(c->blas[d], c->compute[d]));
        CUDA_TRY(cudaMalloc(&c->blas_ws[d], BK_BLAS_WORKSPACE_BYTES));
        CUBLAS_TRY(cublasSetWorkspace(c->blas[d], c->blas_ws[d], BK_BLAS_WORKSPACE_BYTES));
        CUBLAS_TRY(cublasLtCreate(&c->lt[d]));
        /* per-tensor scales of plan measure's FP8 GEMMs (their value does not change the time) */
        float scales[2 * BK_FP8_SCALE_STRIDE] = {0};
        scales[0] = scales[BK_FP8_SCALE_STRIDE] = 0.0625f;
        CUDA_TRY(cudaMalloc((void **)&c->fp8_scale[d], sizeof scales));
        CUDA_TRY(cudaMemcpy(c->fp8_scale[d], scales, sizeof scales, cudaMemcpyHostToDevice));
    }
    /* The run's device name is process 0's. */
    bk_world_bcast(c->name, sizeof c->name, 0);
    return CM_OK;
}

cm_status bk_open(bk_ctx **out, int ngpus, char *err, size_t errlen)
{
    /* NVLink multicast (NVLS) stays off: it can take shared hosts' GPUs out of service. */
    if (!getenv("NCCL_NVLS_ENABLE")) setenv("NCCL_NVLS_ENABLE", "0", 1);
    bk_ctx *c = calloc(1, sizeof *c);
    if (!c) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    c->lt_candidates = 0; /* bk_gemm.c's defaults */
    const char *lc = getenv("PLAN_LT_CANDIDATES");
    if (lc && *lc) {
        char *end;
        long v = strtol(lc, &end, 10);
        if (*end || v < 1 || v > BK_LT_CANDIDATES) {
            free(c);
            return cm_fail(err, errlen, CM_EINVAL,
                           "PLAN_LT_CANDIDATES must be an integer from 1 to %d (cuBLASLt "
                           "heuristic candidates timed per GEMM shape), not '%.40s'",
                           BK_LT_CANDIDATES, lc);
        }
        c->lt_candidates = (int)v;
    }
    /* FP8 GEMMs pass a C distinct from D as torch's scaled_gemm does; PLAN_LT_C_IS_D=1 passes
     * C = D as the first FP8 backend did (bk_gemm.c; the comparison in bench/fp8_backend.py) */
    const char *cd = getenv("PLAN_LT_C_IS_D");
    c->lt_c_is_d = cd && !strcmp(cd, "1");
    /* FP8 plans offer cuBLASLt torch._scaled_mm's workspace (BK_FP8_WORKSPACE_BYTES);
     * PLAN_LT_FP8_WORKSPACE_KIB=N offers N KiB (32768: the bf16 plans' 32 MiB, the first FP8
     * backend's) */
    c->lt_fp8_ws_bytes = BK_FP8_WORKSPACE_BYTES;
    const char *wk = getenv("PLAN_LT_FP8_WORKSPACE_KIB");
    if (wk && *wk) {
        char *end;
        long v = strtol(wk, &end, 10);
        if (*end || v < 0 || v > (long)(BK_BLAS_WORKSPACE_BYTES >> 10)) {
            free(c);
            return cm_fail(err, errlen, CM_EINVAL,
                           "PLAN_LT_FP8_WORKSPACE_KIB must be an integer from 0 to %u (KiB of "
                           "cuBLASLt workspace for FP8 GEMMs), not '%.40s'",
                           BK_BLAS_WORKSPACE_BYTES >> 10, wk);
        }
        c->lt_fp8_ws_bytes = (size_t)v << 10;
    }
    cm_status st = open_devices(c, ngpus, err, errlen);
    if (st != CM_OK) {
        bk_close(c);
        return st;
    }
    *out = c;
    return CM_OK;
}

void bk_close(bk_ctx *c)
{
    if (!c) return;
    for (int g = 0; g <= BK_MAX_GPUS; g++)
        if (c->prefix_ok[g])
            for (int i = 0; i < g; i++)
                if (c->prefix[g][i]) ncclCommDestroy(c->prefix[g][i]);
    for (int d = c->own_lo; d < c->own_hi; d++) {
        cudaSetDevice(c->dev[d]);
        for (int j = 0; j < c->lt_count[d]; j++) {
            bk_lt_plan *p = &c->lt_plan[d][j];
            cublasLtMatrixLayoutDestroy(p->a);
            cublasLtMatrixLayoutDestroy(p->b);
            cublasLtMatrixLayoutDestroy(p->c);
            cublasLtMatmulDescDestroy(p->op);
        }
        if (c->lt[d]) cublasLtDestroy(c->lt[d]);
        if (c->blas[d]) cublasDestroy(c->blas[d]);
        if (c->blas_ws[d]) cudaFree(c->blas_ws[d]);
        if (c->fp8_scale[d]) cudaFree(c->fp8_scale[d]);
        if (c->block_scale[d]) cudaFree(c->block_scale[d]);
        if (c->compute[d]) cudaStreamDestroy(c->compute[d]);
        if (c->comm[d]) cudaStreamDestroy(c->comm[d]);
    }
    if (c->gate) cudaFreeHost((void *)c->gate);
    free(c);
}

bool bk_is_root(const bk_ctx *ctx) { return ctx->world.proc == 0; }
int bk_processes(const bk_ctx *ctx) { return ctx->world.procs; }
int bk_process(const bk_ctx *ctx) { return ctx->world.proc; }

cm_status bk_comm_group(bk_ctx *c, int n, const int *devs, ncclComm_t *comms, char *err,
                        size_t errlen)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (c->world.proc == 0) NCCL_TRY(ncclGetUniqueId(&id));
    bk_world_bcast(&id, sizeof id, 0);
    bool any = false;
    for (int r = 0; r < n; r++) {
        comms[r] = NULL;
        any = any || bk_owns(c, devs[r]);
    }
    if (!any) return CM_OK;
    NCCL_TRY(ncclGroupStart());
    for (int r = 0; r < n; r++) {
        if (!bk_owns(c, devs[r])) continue;
        cudaError_t e = cudaSetDevice(c->dev[devs[r]]);
        ncclResult_t nr = e == cudaSuccess ? ncclCommInitRank(&comms[r], n, id, r) : ncclSuccess;
        if (e != cudaSuccess || nr != ncclSuccess) {
            ncclGroupEnd();
            return cm_fail(err, errlen, CM_EIO, "%s failed: %s",
                           e != cudaSuccess ? "cudaSetDevice" : "ncclCommInitRank",
                           e != cudaSuccess ? cudaGetErrorString(e) : ncclGetErrorString(nr));
        }
    }
    NCCL_TRY(ncclGroupEnd());
    return CM_OK;
}

cm_status bk_coll_launch(collective_op op, int g, ncclComm_t *comms, cudaStream_t *streams,
                         void *const *send, void *const *recv, size_t bytes, bool fp32,
                         char *err, size_t errlen)
{
    size_t esz = fp32 ? 4 : 2;
    ncclDataType_t dt = fp32 ? ncclFloat32 : ncclBfloat16;
    size_t count = bytes / esz;   /* elements in the full buffer */
    size_t chunk = count / g;     /* elements per rank */
    NCCL_TRY(ncclGroupStart());
    for (int i = 0; i < g; i++) {
        if (!comms[i]) continue; /* another process's rank */
        switch (op) {
        case COLL_ALL_REDUCE:
            NCCL_TRY(ncclAllReduce(send[i], recv[i], count, dt, ncclSum, comms[i], streams[i]));
            break;
        case COLL_ALL_GATHER:
            NCCL_TRY(ncclAllGather(send[i], recv[i], chunk, dt, comms[i], streams[i]));
            break;
        case COLL_REDUCE_SCATTER:
            NCCL_TRY(ncclReduceScatter(send[i], recv[i], chunk, dt, ncclSum, comms[i],
                                       streams[i]));
            break;
        case COLL_ALL_TO_ALL:
            /* nccl-tests' alltoall: grouped send/recv of one chunk to and from every peer. */
            for (int p = 0; p < g; p++) {
                NCCL_TRY(ncclSend((char *)send[i] + p * chunk * esz, chunk, dt, p, comms[i],
                                  streams[i]));
                NCCL_TRY(ncclRecv((char *)recv[i] + p * chunk * esz, chunk, dt, p, comms[i],
                                  streams[i]));
            }
            break;
        case COLL_SEND_RECV:
            NCCL_TRY(ncclSend(send[i], count, dt, (i + 1) % g, comms[i], streams[i]));
            NCCL_TRY(ncclRecv(recv[i], count, dt, (i + g - 1) % g, comms[i], streams[i]));
            break;
        default:
            ncclGroupEnd();
            return cm_fail(err, errlen, CM_EINVAL, "unknown collective %d", (int)op);
        }
    }
    NCCL_TRY(ncclGroupEnd());
    return CM_OK;
}
