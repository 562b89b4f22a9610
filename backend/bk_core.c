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

bk_timing bk_timing_default(void)
{
    bk_timing t = {.warmup = 3, .repeats = 7, .min_repeat_s = 2e-3, .warmup_s = 0};
    return t;
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

static cm_status open_devices(bk_ctx *c, int ngpus, char *err, size_t errlen)
{
    int n = bk_device_count();
    if (n == 0)
        return cm_fail(err, errlen, CM_EIO,
                       "no CUDA GPU found (cudaGetDeviceCount): run plan calibrate/measure on a "
                       "machine with NVIDIA GPUs and their driver");
    if (ngpus <= 0 || ngpus > n) ngpus = n;
    if (ngpus > BK_MAX_GPUS) ngpus = BK_MAX_GPUS;
    c->ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        c->dev[i] = i;
        CUDA_TRY(cudaSetDevice(i));
        struct cudaDeviceProp p;
        CUDA_TRY(cudaGetDeviceProperties(&p, i));
        if (i == 0) {
            snprintf(c->name, sizeof c->name, "%d x %.160s (sm_%d%d, %d SMs)", ngpus, p.name, p.major,
                     p.minor, p.multiProcessorCount);
            c->sms = p.multiProcessorCount;
            c->mem_bytes = (double)p.totalGlobalMem;
        }
        CUDA_TRY(cudaStreamCreateWithFlags(&c->compute[i], cudaStreamNonBlocking));
        CUDA_TRY(cudaStreamCreateWithFlags(&c->comm[i], cudaStreamNonBlocking));
        CUBLAS_TRY(cublasCreate(&c->blas[i]));
        CUBLAS_TRY(cublasSetStream(c->blas[i], c->compute[i]));
        CUDA_TRY(cudaMalloc(&c->blas_ws[i], BK_BLAS_WORKSPACE_BYTES));
        CUBLAS_TRY(cublasSetWorkspace(c->blas[i], c->blas_ws[i], BK_BLAS_WORKSPACE_BYTES));
        CUBLAS_TRY(cublasLtCreate(&c->lt[i]));
    }
    return CM_OK;
}

cm_status bk_open(bk_ctx **out, int ngpus, char *err, size_t errlen)
{
    /* NVLink multicast (NVLS) stays off: it can take shared hosts' GPUs out of service. */
    if (!getenv("NCCL_NVLS_ENABLE")) setenv("NCCL_NVLS_ENABLE", "0", 1);
    bk_ctx *c = calloc(1, sizeof *c);
    if (!c) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
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
            for (int i = 0; i < g; i++) ncclCommDestroy(c->prefix[g][i]);
    for (int i = 0; i < c->ngpus; i++) {
        cudaSetDevice(c->dev[i]);
        for (int j = 0; j < c->lt_count[i]; j++) {
            bk_lt_plan *p = &c->lt_plan[i][j];
            cublasLtMatrixLayoutDestroy(p->a);
            cublasLtMatrixLayoutDestroy(p->b);
            cublasLtMatrixLayoutDestroy(p->c);
            cublasLtMatmulDescDestroy(p->op);
        }
        if (c->lt[i]) cublasLtDestroy(c->lt[i]);
        if (c->blas[i]) cublasDestroy(c->blas[i]);
        if (c->blas_ws[i]) cudaFree(c->blas_ws[i]);
        if (c->compute[i]) cudaStreamDestroy(c->compute[i]);
        if (c->comm[i]) cudaStreamDestroy(c->comm[i]);
    }
    free(c);
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
