/*
 * bk_internal.h — what the backend's files share: the context, and the checking macros that
 * turn every failed CUDA, cuBLAS or NCCL call into an error message naming the call.
 */
#ifndef PLAN_BK_INTERNAL_H
#define PLAN_BK_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "backend.h"
#include "bk_pools.h"
#include "bk_world.h"
#include "kernels.h"

/* GPUs of a run, over all its processes; arrays indexed by a GPU's index in the run (its "global"
 * index: process p drives [p * per_proc, (p + 1) * per_proc)) have this size. */
#define BK_MAX_GPUS 64
#define BK_LT_CACHE 96
#define BK_LT_CANDIDATES 16 /* heuristic candidates autotuned per GEMM shape (bk_gemm.c) */

/* How a GEMM's operands are scaled: bf16 (none), e4m3 with one fp32 scale per tensor, or
 * DeepSeek-V3's blockwise e4m3 (fp32 scales per 1x128 block of A and per 128x128 block of B,
 * cuBLASLt's VEC128_32F and BLK128x128_32F; or 1x128 blocks for both, as a wgrad reads them). */
enum {
    BK_SCALE_NONE = 0,
    BK_SCALE_TENSOR,
    BK_SCALE_BLOCK_1x128_128x128,
    BK_SCALE_BLOCK_1x128_1x128
};

/* A cuBLASLt plan for one GEMM shape: descriptors and the heuristic's first algorithm. */
typedef struct {
    int form, batch;
    int fp8;                   /* BK_SCALE_*: e4m3 operands (TN), bf16 result */
    long m, n, k;
    int ok;                    /* 0: the heuristic offered nothing, use the fallback */
    size_t ws_bytes;           /* workspace the heuristic was offered and the launch passes */
    const float *scale_a, *scale_b; /* FP8: the scale pointers the descriptor holds now */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} bk_lt_plan;

struct bk_ctx {
    int ngpus;                 /* GPUs of the run, all processes */
    int own_lo, own_hi;        /* the global indices this process drives */
    bk_world world;
    int dev[BK_MAX_GPUS];      /* global index -> this node's CUDA device (owned ones only) */
    int sms;
    int cc;                    /* compute capability of the first GPU, major * 10 + minor */
    char name[256];
    double mem_bytes;
    cudaStream_t compute[BK_MAX_GPUS];
    cudaStream_t comm[BK_MAX_GPUS];
    cublasHandle_t blas[BK_MAX_GPUS];
    void *blas_ws[BK_MAX_GPUS];
    float *fp8_scale[BK_MAX_GPUS]; /* device: per-tensor scales of plan measure's FP8 GEMMs, A's
                                      at [0], B's at [BK_FP8_SCALE_STRIDE] */
    cublasLtHandle_t lt[BK_MAX_GPUS];
    bk_lt_plan lt_plan[BK_MAX_GPUS][BK_LT_CACHE];
    int lt_count[BK_MAX_GPUS];
    int lt_candidates;         /* 1..BK_LT_CANDIDATES: PLAN_LT_CANDIDATES; 0: bf16 all, fp8 1 */
    int lt_c_is_d;             /* PLAN_LT_C_IS_D=1: FP8 GEMMs pass C = D (the first FP8 backend);
                                  0: a distinct C pointer, as torch's scaled_gemm (bk_gemm.c) */
    size_t lt_fp8_ws_bytes;    /* cuBLASLt workspace of FP8 plans: BK_FP8_WORKSPACE_BYTES, or
                                  PLAN_LT_FP8_WORKSPACE_KIB (KiB, as torch's
                                  CUBLASLT_WORKSPACE_SIZE) */
    float *block_scale[BK_MAX_GPUS]; /* device: scales of plan measure's blockwise FP8 GEMMs */
    size_t block_scale_n[BK_MAX_GPUS];
    volatile uint32_t *gate;   /* mapped host memory: the host-ahead gate (bk_timing.c), made at
                                  its first use */
    /* Cached communicators over devices 0..g-1 (calibrate), index g. */
    ncclComm_t prefix[BK_MAX_GPUS + 1][BK_MAX_GPUS];
    bool prefix_ok[BK_MAX_GPUS + 1];
};

#define BK_BLAS_WORKSPACE_BYTES (32u << 20)
/* The cuBLASLt workspace torch._scaled_mm offers its FP8 GEMMs: PyTorch's CUBLASLT_WORKSPACE_SIZE
 * default, 1024 KiB (aten/src/ATen/cuda/CublasHandlePool.cpp parseCUDABlasLtWorkspaceSize,
 * pytorch/pytorch@26a39059ec580351411f180816c47e2ef5134ae1: "default size in KiB according to
 * #73328"; scaled_gemm in CUDABlas.cpp passes CublasLtWorkspace().size to the heuristic and the
 * launch), and what PyTorch 2.11 passed in the cuBLASLt trace of bench/results/
 * fp8_backend_2026-11-27/blockwise_run/call1_h100/probe/torch.log (workSpaceSizeInBytes=1048576).
 * The heuristic may pick another kernel under a smaller workspace (split-K and stream-K kernels
 * need one), so the FP8 comparison offers both callers the same. At most BK_BLAS_WORKSPACE_BYTES
 * (the allocation both share). */
#define BK_FP8_WORKSPACE_BYTES (1u << 20)
/* Floats between two scales in one allocation: each scale pointer 256-byte aligned, as separate
 * allocations (or PyTorch tensors) are; cuBLASLt refused the FP8 GEMMs with scales 4 bytes
 * apart (CUBLAS_STATUS_NOT_SUPPORTED at launch, H100, CUDA 13). */
#define BK_FP8_SCALE_STRIDE 64

const char *bk_cublas_error(cublasStatus_t s);

#define CUDA_TRY(call)                                                                         \
    do {                                                                                       \
        cudaError_t e_ = (cudaError_t)(call);                                                  \
        if (e_ != cudaSuccess)                                                                 \
            return cm_fail(err, errlen, CM_EIO, "%s failed: %s (%s:%d)", #call,                \
                           cudaGetErrorString(e_), __FILE__, __LINE__);                        \
    } while (0)

#define CUBLAS_TRY(call)                                                                       \
    do {                                                                                       \
        cublasStatus_t s_ = (call);                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                       \
            return cm_fail(err, errlen, CM_EIO, "%s failed: %s (%s:%d)", #call,                \
                           bk_cublas_error(s_), __FILE__, __LINE__);                           \
    } while (0)

#define NCCL_TRY(call)                                                                         \
    do {                                                                                       \
        ncclResult_t r_ = (call);                                                              \
        if (r_ != ncclSuccess)                                                                 \
            return cm_fail(err, errlen, CM_EIO, "%s failed: %s (%s:%d)", #call,                \
                           ncclGetErrorString(r_), __FILE__, __LINE__);                        \
    } while (0)

#define BK_TRY(call)                                                                           \
    do {                                                                                       \
        cm_status st_ = (call);                                                                \
        if (st_ != CM_OK) return st_;                                                          \
    } while (0)

/* One GEMM of the given form on ctx->blas[i] (already bound to its compute stream). */
cm_status bk_gemm_launch(bk_ctx *ctx, int i, work_gemm_form form, long m, long n, long k,
                         int batch, const void *A, const void *B, void *C, char *err,
                         size_t errlen);

/* One bf16 GEMM of the given form by cublasGemmEx with cuBLAS's default algorithm, the call
 * torch.mm makes on its default BLAS backend (at::cuda::blas::gemm): cuBLAS picks the algorithm
 * by its heuristic at a shape's first call in the process and caches it per shape (bk_loop.c
 * runs torchtitan's per-expert loop through it, so that new row counts pay for it). */
cm_status bk_gemm_launch_blas(bk_ctx *ctx, int i, work_gemm_form form, long m, long n, long k,
                              const void *A, const void *B, void *C, char *err, size_t errlen);

/* One FP8 GEMM C[m,n] = sa sb A[m,k] B[n,k]^T: e4m3 A and B, both K-major (row-major m x k and
 * n x k, whatever the form: Hopper's FP8 tensor cores take only the "TN" layout, so a framework's
 * dgrad and wgrad read the transposed FP8 copies its cast-transpose kernels wrote), per-tensor
 * fp32 scales in device memory (scale_a, scale_b), bf16 C, fp32 accumulation. */
cm_status bk_gemm_launch_fp8(bk_ctx *ctx, int i, long m, long n, long k, int batch, const void *A,
                             const void *B, const float *scale_a, const float *scale_b, void *C,
                             char *err, size_t errlen);

/* One blockwise FP8 GEMM C[m,n] = A[m,k] B[n,k]^T, both e4m3 and K-major, bf16 C: `scaling`
 * BK_SCALE_BLOCK_1x128_128x128 (A's scales per 1x128 block, B's per 128x128 block: forward and
 * dgrad of DeepSeek-V3's recipe) or BK_SCALE_BLOCK_1x128_1x128 (both per 1x128 block: wgrad).
 * Scale layouts are cuBLASLt's (bk_block_scale_floats): fp32, 16-byte aligned, device memory. */
cm_status bk_gemm_launch_fp8_block(bk_ctx *ctx, int i, int scaling, long m, long n, long k,
                                   const void *A, const void *B, const float *scale_a,
                                   const float *scale_b, void *C, char *err, size_t errlen);


/* Device scales for plan measure's blockwise GEMMs: at least n floats on GPU d (random powers
 * of two, kept and grown across calls; freed by bk_close). */
cm_status bk_block_scales(bk_ctx *ctx, int d, size_t n, float **out, char *err, size_t errlen);

/* Communicators for one group of n GPUs given by their global indices devs[0..n-1] (rank r is
 * devs[r]): comms[r] for the GPUs this process drives, NULL for the others. Every process calls
 * it for every group in the same order: process 0 makes the NCCL unique id and MPI broadcasts it;
 * the owned ranks join with ncclCommInitRank in one group call (NCCL's documented pattern for
 * one thread driving several GPUs, and for MPI programs). */
cm_status bk_comm_group(bk_ctx *c, int n, const int *devs, ncclComm_t *comms, char *err,
                        size_t errlen);

static inline bool bk_owns(const bk_ctx *c, int d) { return d >= c->own_lo && d < c->own_hi; }

/* Launch one collective on each of `g` comms (one group call); comms[i] is rank i and uses
 * send[i], recv[i] and streams[i]; a NULL comms[i] is a rank another process launches. `bytes` is nccl-tests' size (collective.h). send_recv is a
 * ring: rank i sends to i+1 and receives from i-1, as nccl-tests' sendrecv does. */
cm_status bk_coll_launch(collective_op op, int g, ncclComm_t *comms, cudaStream_t *streams,
                         void *const *send, void *const *recv, size_t bytes, bool fp32,
                         char *err, size_t errlen);

/* kernels_ew.cu's copy of an access pattern (elementwise.h). */
bkk_ew bk_ew_kernel(const ew_access *a);

#endif
