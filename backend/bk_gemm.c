/*
 * bk_gemm.c — bf16 GEMMs through cuBLAS (cublasGemmStridedBatchedEx, bf16 operands and result,
 * fp32 accumulation: CUBLAS_COMPUTE_32F), their timing and their check; and FP8 GEMMs (issue
 * 16) through cuBLASLt: e4m3 operands with one fp32 scale each (CUBLASLT_MATMUL_DESC_A/B_SCALE_
 * POINTER, device memory, as Transformer Engine's delayed scaling and torchao's tensorwise
 * scaling pass them), bf16 result, fp32 accumulation without fast accumulation (torch._scaled_mm's
 * default use_fast_accum=False), the "TN" layout Hopper's FP8 kernels require (cuBLASLt docs,
 * cublasLtMatmul FP8 requirements: A transposed, B not, i.e. both operands K-major), the same
 * heuristic as bf16 and the workspace torch offers (BK_FP8_WORKSPACE_BYTES). An FP8 GEMM is
 * checked against an fp32 product of its dequantized operands (bk_gemm_check_fp8), and every
 * timed FP8 shape on sampled rows.
 *
 * FP8 descriptors as PyTorch 2.11's at::cuda::blas::scaled_gemm (aten/src/ATen/cuda/
 * CUDABlas.cpp; read at pytorch/pytorch@bd53dc4f6053a07b3a45e33157e66389c2239429) sets them for
 * torch._scaled_mm: compute 32F, scale type 32F, TRANSA T / TRANSB N, CUBLASLT_MATMUL_DESC_
 * FAST_ACCUM 0, A/B scale modes set explicitly (get_scale_mode: SCALAR_32F tensorwise, VEC128_32F
 * / BLK128x128_32F blockwise), C and D bf16 (no bias: no epilogue), one heuristic result, no
 * alignment preferences (scaled_gemm sets none, unlike its bf16 bgemm), a 1 MiB workspace
 * (BK_FP8_WORKSPACE_BYTES), and a C pointer distinct from D (torch 2.11 passes its first operand
 * as a dummy C, beta being 0: C = A in its cuBLASLt trace, blockwise_run/call1_h100/probe; the
 * commit read above passes result_ptr, C = D, which the C = D control measured the same);
 * PLAN_LT_C_IS_D=1 restores C = D, what this backend passed before (issue 16's
 * small-shape gap, bench/results/fp8_backend_2026-11-27/blockwise_run/).
 *
 * Blockwise FP8 (DeepSeek-V3 report Sec. 3.3: 1x128 tiles for activations and gradients,
 * 128x128 blocks for weights): cuBLASLt 12.9+ on sm_90, A/B scale modes VEC128_32F and
 * BLK128x128_32F (cublasLt.h cublasLtMatmulMatrixScale_t; Transformer Engine's
 * common/gemm/cublaslt_gemm.cu sets the same for its Float8BlockScaling), scale tensors in the
 * layout bk_block_scale_floats describes; 128x128 by 128x128 is not offered (TE: "Only 1D by 1D,
 * 1D by 2D, and 2D by 1D"). Checked like FP8 against an fp32 product that applies each block's
 * scale (bkk_ref_rows_e4m3_block), with random power-of-two scales so that a scale read from
 * the wrong block shows.
 *
 * Launches go through cuBLASLt (cublasLtMatmul), autotuned once per shape and GPU: the first
 * launch of a shape times each of the heuristic's candidates (cublasLtMatmulAlgoGetHeuristic,
 * up to BK_LT_CANDIDATES, 32 MiB workspace) on the real operands and keeps the fastest, cached;
 * FP8 GEMMs take the heuristic's first choice untimed. PLAN_LT_CANDIDATES=N in the environment
 * asks the heuristic for N candidates for both (1: its first choice).
 * On H200 cublasGemmEx's default algorithm ran 8192^3 at 0.94x torch.matmul and the heuristic's
 * first choice at 0.91x (bench/BACKEND.md). cublasGemmStridedBatchedEx is the fallback when the
 * heuristic offers nothing.
 *
 * Timing: the backend's timing engine (bk_timing.h).
 *
 * Row-major forms (work.h) map onto column-major cuBLAS by computing C^T: a row-major [r,c]
 * matrix is a column-major c x r one, so C[m,n] = op(A) op(B) becomes C^T = op(B)^T op(A)^T
 * with M = n, N = m. That is what PyTorch's Linear does, so the shapes run the same kernels.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bk_timing.h"
#include "kernels.h"


/* One cublasLtMatmul of plan p: C^T = B A^T in cuBLAS's order. FP8 passes a C distinct from D
 * (the first operand, never read with beta 0) as torch's scaled_gemm does, unless
 * PLAN_LT_C_IS_D=1. */
static cublasStatus_t lt_matmul(bk_ctx *ctx, int i, const bk_lt_plan *p,
                                const cublasLtMatmulAlgo_t *algo, const void *A, const void *B,
                                void *C, cudaStream_t s)
{
    const float one = 1.0f, zero = 0.0f;
    const void *cin = p->fp8 && !ctx->lt_c_is_d ? B : C;
    return cublasLtMatmul(ctx->lt[i], p->op, &one, B, p->a, A, p->b, &zero, cin, p->c, C, p->c,
                          algo, ctx->blas_ws[i], p->ws_bytes, s);
}

/* One launch of a candidate algorithm. */
typedef struct {
    bk_ctx *ctx;
    int i;
    const bk_lt_plan *p;
    const cublasLtMatmulAlgo_t *algo;
    const void *A, *B;
    void *C;
} lt_launch_arg;

static cm_status lt_launch_one(void *arg, int index, char *err, size_t errlen)
{
    (void)index;
    const lt_launch_arg *a = arg;
    CUBLAS_TRY(lt_matmul(a->ctx, a->i, a->p, a->algo, a->A, a->B, a->C, a->ctx->compute[a->i]));
    return CM_OK;
}

/* Time each candidate on the operands (one warm-up, then 5 launches) and keep the fastest. */
static cm_status lt_autotune(bk_ctx *ctx, int i, bk_lt_plan *p,
                             const cublasLtMatmulHeuristicResult_t *res, int found, const void *A,
                             const void *B, void *C, char *err, size_t errlen)
{
    cudaStream_t s = ctx->compute[i];
    cudaEvent_t e0[BK_MAX_GPUS], e1[BK_MAX_GPUS];
    CUDA_TRY(cudaEventCreate(&e0[i]));
    CUDA_TRY(cudaEventCreate(&e1[i]));
    double best = INFINITY;
    p->algo = res[0].algo;
    lt_launch_arg la = {.ctx = ctx, .i = i, .p = p, .A = A, .B = B, .C = C};
    bk_timed t = {.launch = lt_launch_one, .arg = &la, .dev_lo = i, .dev_hi = i + 1,
                  .streams = ctx->compute, .start = e0, .stop = e1, .sync = BK_SYNC_NONE,
                  .launches_per_repeat = 5, .repeats = 1};
    for (int q = 0; q < found; q++) {
        if (res[q].state != CUBLAS_STATUS_SUCCESS) continue;
        /* the warm-up launch: a candidate that fails it is skipped */
        if (lt_matmul(ctx, i, p, &res[q].algo, A, B, C, s) != CUBLAS_STATUS_SUCCESS)
            continue;
        la.algo = &res[q].algo;
        bk_timed_result r;
        BK_TRY(bk_time(ctx, &t, &r, err, errlen));
        if (r.time_s < best) {
            best = r.time_s;
            p->algo = res[q].algo;
        }
    }
    cudaEventDestroy(e0[i]);
    cudaEventDestroy(e1[i]);
    return CM_OK;
}

/* The scale modes of an FP8 plan (BK_SCALE_*), set explicitly as torch's scaled_gemm does, and
 * fast accumulation off (its use_fast_accum=False; blockwise scaling refuses it there). cuBLAS's
 * A is our B (the first operand of C^T): it takes our B's mode. */
static cm_status lt_set_modes(bk_lt_plan *p, int scaling, char *err, size_t errlen)
{
    int32_t ma = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, mb = ma;
    if (scaling == BK_SCALE_BLOCK_1x128_128x128) {
        ma = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
        mb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    } else if (scaling == BK_SCALE_BLOCK_1x128_1x128) {
        ma = mb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    }
    int8_t fast = 0;
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                              sizeof fast));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma,
                                              sizeof ma));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb,
                                              sizeof mb));
    return CM_OK;
}

/* The scales of an FP8 plan (per tensor or per block): cuBLAS's A is our B. Set only when they
 * differ from what the descriptor holds: a timed loop passes the same scales every launch, and
 * a 20-30 us FP8 GEMM leaves little host time per launch (bench/results/fp8h200_2026-11-27). */
static cm_status lt_set_scales(bk_lt_plan *p, const float *scale_a, const float *scale_b,
                               char *err, size_t errlen)
{
    if (p->scale_a == scale_a && p->scale_b == scale_b) return CM_OK;
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                              &scale_b, sizeof scale_b));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                              &scale_a, sizeof scale_a));
    p->scale_a = scale_a;
    p->scale_b = scale_b;
    return CM_OK;
}

/* The cached plan of a shape (fp8: BK_SCALE_*, e4m3 operands, scales scale_a/scale_b), made,
 * autotuned and cached at its first use; *out NULL when cuBLASLt offers no algorithm (or the
 * cache is full). */
static cm_status lt_plan_get(bk_ctx *ctx, int i, work_gemm_form form, long m, long n, long k,
                             int batch, cublasOperation_t ta, cublasOperation_t tb, int lda,
                             int ldb, int fp8, const float *scale_a, const float *scale_b,
                             const void *A, const void *B, void *C, bk_lt_plan **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    for (int j = 0; j < ctx->lt_count[i]; j++) {
        bk_lt_plan *p = &ctx->lt_plan[i][j];
        if (p->form == (int)form && p->fp8 == fp8 && p->m == m && p->n == n && p->k == k &&
            p->batch == batch) {
            *out = p->ok ? p : NULL;
            return CM_OK;
        }
    }
    if (ctx->lt_count[i] >= BK_LT_CACHE) return CM_OK; /* full: use the fallback */
    bk_lt_plan *p = &ctx->lt_plan[i][ctx->lt_count[i]];
    memset(p, 0, sizeof *p);
    CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (fp8) BK_TRY(lt_set_modes(p, fp8, err, errlen));
    if (fp8) BK_TRY(lt_set_scales(p, scale_a, scale_b, err, errlen));
    /* column-major operands of C^T[n,m] = op(first)[n,k] op(second)[k,m] */
    uint64_t ar = ta == CUBLAS_OP_N ? (uint64_t)n : (uint64_t)k, ac = ta == CUBLAS_OP_N ? k : n;
    uint64_t br = tb == CUBLAS_OP_N ? (uint64_t)k : (uint64_t)m, bc = tb == CUBLAS_OP_N ? m : k;
    cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->a, in, ar, ac, lda));
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->b, in, br, bc, ldb));
    CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, n, m, n));
    if (batch > 1) {
        int32_t bcount = batch;
        int64_t sa = (int64_t)n * k, sb = (int64_t)m * k, sc = (int64_t)m * n;
        cublasLtMatrixLayout_t lay[3] = {p->a, p->b, p->c};
        int64_t strides[3] = {sa, sb, sc};
        for (int q = 0; q < 3; q++) {
            CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(lay[q], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &bcount, sizeof bcount));
            CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(
                lay[q], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[q],
                sizeof strides[q]));
        }
    }
    cublasLtMatmulPreference_t pref;
    CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    /* FP8: torch._scaled_mm's 1 MiB (BK_FP8_WORKSPACE_BYTES, bk_internal.h); bf16: 32 MiB */
    size_t ws = fp8 ? ctx->lt_fp8_ws_bytes : BK_BLAS_WORKSPACE_BYTES;
    p->ws_bytes = ws;
    CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res[BK_LT_CANDIDATES];
    int found = 0;
    /* FP8: the heuristic's first choice (torch._scaled_mm's): on H100 the autotuned choice ran
     * at a median 1.00x torch but down to 0.77x on large shapes, the first choice at 1.02x, min
     * 0.94x (bench/BACKEND.md, FP8 section): a burst of 5 launches per candidate misjudges the
     * sustained rate of FP8 kernels */
    int want = ctx->lt_candidates ? ctx->lt_candidates : fp8 ? 1 : BK_LT_CANDIDATES;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(ctx->lt[i], p->op, p->a, p->b, p->c, p->c,
                                                       pref, want, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    p->form = (int)form;
    p->fp8 = fp8;
    p->m = m;
    p->n = n;
    p->k = k;
    p->batch = batch;
    ctx->lt_count[i]++;
    if (hs != CUBLAS_STATUS_SUCCESS || found < 1) return CM_OK; /* remembered: fallback */
    if (found > 1) BK_TRY(lt_autotune(ctx, i, p, res, found, A, B, C, err, errlen));
    else p->algo = res[0].algo; /* the heuristic's choice, as torch._scaled_mm takes it */
    p->ok = 1;
    *out = p;
    return CM_OK;
}

/* A form's cuBLAS operations and leading dimensions: of the first (B) and second (A) operand
 * in cuBLAS's order. */
static cm_status form_ops(work_gemm_form form, long m, long n, long k, cublasOperation_t *ta,
                          cublasOperation_t *tb, int *lda, int *ldb, char *err, size_t errlen)
{
    switch (form) {
    case GEMM_FWD: *ta = CUBLAS_OP_T; *tb = CUBLAS_OP_N; *lda = (int)k; *ldb = (int)k; break;
    case GEMM_DGRAD: *ta = CUBLAS_OP_N; *tb = CUBLAS_OP_N; *lda = (int)n; *ldb = (int)k; break;
    case GEMM_WGRAD: *ta = CUBLAS_OP_N; *tb = CUBLAS_OP_T; *lda = (int)n; *ldb = (int)m; break;
    default: return cm_fail(err, errlen, CM_EINVAL, "unknown GEMM form %d", (int)form);
    }
    return CM_OK;
}

cm_status bk_gemm_launch_blas(bk_ctx *ctx, int i, work_gemm_form form, long m, long n, long k,
                              const void *A, const void *B, void *C, char *err, size_t errlen)
{
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    int lda = 0, ldb = 0;
    BK_TRY(form_ops(form, m, n, k, &ta, &tb, &lda, &ldb, err, errlen));
    CUBLAS_TRY(cublasGemmEx(ctx->blas[i], ta, tb, (int)n, (int)m, (int)k, &one, B, CUDA_R_16BF,
                            lda, A, CUDA_R_16BF, ldb, &zero, C, CUDA_R_16BF, (int)n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return CM_OK;
}

cm_status bk_gemm_launch(bk_ctx *ctx, int i, work_gemm_form form, long m, long n, long k,
                         int batch, const void *A, const void *B, void *C, char *err,
                         size_t errlen)
{
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    int lda = 0, ldb = 0; /* of the first (B) and second (A) operand in cuBLAS order */
    BK_TRY(form_ops(form, m, n, k, &ta, &tb, &lda, &ldb, err, errlen));
    long long sa = (long long)n * k, sb = (long long)m * k, sc = (long long)m * n;
    bk_lt_plan *p;
    BK_TRY(lt_plan_get(ctx, i, form, m, n, k, batch, ta, tb, lda, ldb, 0, NULL, NULL, A, B, C,
                       &p, err, errlen));
    if (p) {
        CUBLAS_TRY(lt_matmul(ctx, i, p, &p->algo, A, B, C, ctx->compute[i]));
        return CM_OK;
    }
    CUBLAS_TRY(cublasGemmStridedBatchedEx(ctx->blas[i], ta, tb, (int)n, (int)m, (int)k, &one, B,
                                          CUDA_R_16BF, lda, sa, A, CUDA_R_16BF, ldb, sb, &zero, C,
                                          CUDA_R_16BF, (int)n, sc, batch, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
    return CM_OK;
}

/* Any FP8 GEMM (scaling BK_SCALE_*): every form is the forward (TN) layout on K-major operands
 * (bk_internal.h). */
static cm_status launch_scaled(bk_ctx *ctx, int i, int scaling, long m, long n, long k, int batch,
                               const void *A, const void *B, const float *scale_a,
                               const float *scale_b, void *C, char *err, size_t errlen)
{
    bk_lt_plan *p;
    BK_TRY(lt_plan_get(ctx, i, GEMM_FWD, m, n, k, batch, CUBLAS_OP_T, CUBLAS_OP_N, (int)k, (int)k,
                       scaling, scale_a, scale_b, A, B, C, &p, err, errlen));
    if (!p && scaling != BK_SCALE_TENSOR)
        return cm_fail(err, errlen, CM_EINVAL,
                       "cuBLASLt offers no blockwise FP8 (1x128 x %s scales) algorithm for the "
                       "GEMM m=%ld n=%ld k=%ld on this GPU: it needs Hopper (sm_90) and cuBLAS "
                       "12.9 or later",
                       scaling == BK_SCALE_BLOCK_1x128_128x128 ? "128x128" : "1x128", m, n, k);
    if (!p)
        return cm_fail(err, errlen, CM_EINVAL,
                       "cuBLASLt offers no FP8 (e4m3) algorithm for the GEMM m=%ld n=%ld k=%ld "
                       "batch %d on this GPU: FP8 GEMMs need Hopper or newer and m, n, k "
                       "multiples of 16 (frameworks pad such operands)",
                       m, n, k, batch);
    BK_TRY(lt_set_scales(p, scale_a, scale_b, err, errlen));
    CUBLAS_TRY(lt_matmul(ctx, i, p, &p->algo, A, B, C, ctx->compute[i]));
    return CM_OK;
}

cm_status bk_gemm_launch_fp8(bk_ctx *ctx, int i, long m, long n, long k, int batch, const void *A,
                             const void *B, const float *scale_a, const float *scale_b, void *C,
                             char *err, size_t errlen)
{
    return launch_scaled(ctx, i, BK_SCALE_TENSOR, m, n, k, batch, A, B, scale_a, scale_b, C, err,
                         errlen);
}

cm_status bk_gemm_launch_fp8_block(bk_ctx *ctx, int i, int scaling, long m, long n, long k,
                                   const void *A, const void *B, const float *scale_a,
                                   const float *scale_b, void *C, char *err, size_t errlen)
{
    return launch_scaled(ctx, i, scaling, m, n, k, 1, A, B, scale_a, scale_b, C, err, errlen);
}


static size_t elems(long a, long b, int batch) { return (size_t)a * (size_t)b * (size_t)batch; }

/* ||C - R|| / ||R|| (Frobenius) of two device fp32 arrays of n elements; a NaN anywhere (or an
 * all-zero reference) gives infinity, which fails every check. */
static cm_status rel_error_dev(const float *Cf, const float *R, size_t n, double *rel, char *err,
                               size_t errlen)
{
    float *hc = malloc(4 * n), *hr = malloc(4 * n);
    if (!hc || !hr) {
        free(hc);
        free(hr);
        return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    }
    cudaError_t e1 = cudaMemcpy(hc, Cf, 4 * n, cudaMemcpyDeviceToHost);
    cudaError_t e2 = cudaMemcpy(hr, R, 4 * n, cudaMemcpyDeviceToHost);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)hc[i] - hr[i];
        num += d * d;
        den += (double)hr[i] * hr[i];
    }
    free(hc);
    free(hr);
    CUDA_TRY(e1);
    CUDA_TRY(e2);
    *rel = den > 0 ? sqrt(num / den) : INFINITY;
    if (isnan(*rel)) *rel = INFINITY;
    return CM_OK;
}

cm_status bk_gemm_check(bk_ctx *ctx, int dev, work_gemm_form form, long m, long n, long k,
                        int batch, double *rel_err, char *err, size_t errlen)
{
    CUDA_TRY(cudaSetDevice(ctx->dev[dev]));
    size_t na = elems(m, k, batch), nb = elems(n, k, batch), nc = elems(m, n, batch);
    void *A = NULL, *B = NULL, *C = NULL;
    float *R = NULL, *Cf = NULL;
    CUDA_TRY(cudaMalloc(&A, 2 * na));
    CUDA_TRY(cudaMalloc(&B, 2 * nb));
    CUDA_TRY(cudaMalloc(&C, 2 * nc));
    CUDA_TRY(cudaMalloc((void **)&R, 4 * nc));
    CUDA_TRY(cudaMalloc((void **)&Cf, 4 * nc));
    cudaStream_t s = ctx->compute[dev];
    static uint32_t seed = 1234;
    CUDA_TRY(bkk_fill_bf16(A, na, seed++, -1.0f, 1.0f, s));
    CUDA_TRY(bkk_fill_bf16(B, nb, seed++, -1.0f, 1.0f, s));
    CUDA_TRY(bkk_fill_bf16(C, nc, seed++, 100.0f, 200.0f, s)); /* poison: every element must be written */
    BK_TRY(bk_gemm_launch(ctx, dev, form, m, n, k, batch, A, B, C, err, errlen));
    CUDA_TRY(bkk_ref_gemm((int)form, (int)m, (int)n, (int)k, batch, A, B, R, s));
    CUDA_TRY(bkk_bf16_to_f32(C, Cf, nc, s));
    CUDA_TRY(cudaStreamSynchronize(s));
    BK_TRY(rel_error_dev(Cf, R, nc, rel_err, err, errlen));
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    cudaFree(R);
    cudaFree(Cf);
    return CM_OK;
}

cm_status bk_gemm_check_fp8(bk_ctx *ctx, int dev, long m, long n, long k, int batch,
                            double *rel_err, char *err, size_t errlen)
{
    CUDA_TRY(cudaSetDevice(ctx->dev[dev]));
    size_t na = elems(m, k, batch), nb = elems(n, k, batch), nc = elems(m, n, batch);
    void *A8 = NULL, *B8 = NULL, *Ad = NULL, *Bd = NULL, *C = NULL;
    float *R = NULL, *Cf = NULL, *sc = NULL;
    CUDA_TRY(cudaMalloc(&A8, na));
    CUDA_TRY(cudaMalloc(&B8, nb));
    CUDA_TRY(cudaMalloc(&Ad, 2 * na));
    CUDA_TRY(cudaMalloc(&Bd, 2 * nb));
    CUDA_TRY(cudaMalloc(&C, 2 * nc));
    CUDA_TRY(cudaMalloc((void **)&R, 4 * nc));
    CUDA_TRY(cudaMalloc((void **)&Cf, 4 * nc));
    /* powers of two: the dequantized operands are exact in bf16, so the reference is the exact
     * product of what the FP8 GEMM multiplied, and what remains is the GEMM's own error */
    float scales[2 * BK_FP8_SCALE_STRIDE] = {0};
    scales[0] = 0.5f;
    scales[BK_FP8_SCALE_STRIDE] = 0.25f;
    CUDA_TRY(cudaMalloc((void **)&sc, sizeof scales));
    CUDA_TRY(cudaMemcpy(sc, scales, sizeof scales, cudaMemcpyHostToDevice));
    cudaStream_t s = ctx->compute[dev];
    static uint32_t seed = 4321;
    CUDA_TRY(bkk_fill_e4m3(A8, na, seed++, 448.0f, s)); /* e4m3's range, as amax scaling uses it */
    CUDA_TRY(bkk_fill_e4m3(B8, nb, seed++, 448.0f, s));
    CUDA_TRY(bkk_fill_bf16(C, nc, seed++, 100.0f, 200.0f, s)); /* poison */
    BK_TRY(bk_gemm_launch_fp8(ctx, dev, m, n, k, batch, A8, B8, sc, sc + BK_FP8_SCALE_STRIDE, C,
                              err, errlen));
    CUDA_TRY(bkk_e4m3_to_bf16(A8, Ad, na, scales[0], s));
    CUDA_TRY(bkk_e4m3_to_bf16(B8, Bd, nb, scales[BK_FP8_SCALE_STRIDE], s));
    CUDA_TRY(bkk_ref_gemm((int)GEMM_FWD, (int)m, (int)n, (int)k, batch, Ad, Bd, R, s));
    CUDA_TRY(bkk_bf16_to_f32(C, Cf, nc, s));
    CUDA_TRY(cudaStreamSynchronize(s));
    BK_TRY(rel_error_dev(Cf, R, nc, rel_err, err, errlen));
    void *bufs[] = {A8, B8, Ad, Bd, C, R, Cf, sc};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) CUDA_TRY(cudaFree(bufs[i]));
    return CM_OK;
}

/* One GEMM of a timed shape: operand copy `index % nsets` of buf. */
typedef struct {
    bk_ctx *ctx;
    int dev, batch, nsets;
    work_gemm_form form;
    int fp8;             /* BK_SCALE_*: e4m3 operands (1 byte); per tensor: scales[0] and
                            scales[BK_FP8_SCALE_STRIDE]; blockwise: bsa (A's) and bsb (B's) */
    const float *scales;
    float *bsa, *bsb;
    long m, n, k;
    char *buf;
    size_t set, na, nb;  /* bytes of a copy; elements of A and B */
} gemm_launch_arg;

/* Where copy `copy`'s operands are: A, B, C. */
static char *gemm_operand(const gemm_launch_arg *g, int copy, int which)
{
    size_t esz = g->fp8 ? 1 : 2;
    char *base = g->buf + (size_t)copy * g->set;
    return base + (which == 0 ? 0 : which == 1 ? esz * g->na : esz * (g->na + g->nb));
}

static cm_status gemm_launch_one(void *arg, int index, char *err, size_t errlen)
{
    const gemm_launch_arg *g = arg;
    int c = index % g->nsets;
    if (g->fp8 == BK_SCALE_BLOCK_1x128_128x128 || g->fp8 == BK_SCALE_BLOCK_1x128_1x128)
        return bk_gemm_launch_fp8_block(g->ctx, g->dev, g->fp8, g->m, g->n, g->k,
                                        gemm_operand(g, c, 0), gemm_operand(g, c, 1), g->bsa,
                                        g->bsb, gemm_operand(g, c, 2), err, errlen);
    if (g->fp8)
        return bk_gemm_launch_fp8(g->ctx, g->dev, g->m, g->n, g->k, g->batch,
                                  gemm_operand(g, c, 0), gemm_operand(g, c, 1), g->scales,
                                  g->scales + BK_FP8_SCALE_STRIDE, gemm_operand(g, c, 2), err,
                                  errlen);
    return bk_gemm_launch(g->ctx, g->dev, g->form, g->m, g->n, g->k, g->batch,
                          gemm_operand(g, c, 0), gemm_operand(g, c, 1), gemm_operand(g, c, 2), err,
                          errlen);
}

#define BK_FP8_CHECK_ROWS 16

/* The FP8 GEMM of copy 0 checked where it was timed: BK_FP8_CHECK_ROWS output rows spread over
 * m (of the first batch) against an fp32 product of the same e4m3 operands and scales, output
 * poisoned first. */
static cm_status gemm_check_rows_fp8(const gemm_launch_arg *g, double *rel, char *err,
                                     size_t errlen)
{
    bk_ctx *ctx = g->ctx;
    cudaStream_t s = ctx->compute[g->dev];
    int rows[BK_FP8_CHECK_ROWS], nr = g->m < BK_FP8_CHECK_ROWS ? (int)g->m : BK_FP8_CHECK_ROWS;
    for (int q = 0; q < nr; q++) rows[q] = nr > 1 ? (int)((g->m - 1) * q / (nr - 1)) : 0;
    size_t nout = (size_t)nr * (size_t)g->n;
    int *drows = NULL;
    float *R = NULL, *Cf = NULL, hs[2 * BK_FP8_SCALE_STRIDE];
    CUDA_TRY(cudaMalloc((void **)&drows, sizeof rows));
    CUDA_TRY(cudaMalloc((void **)&R, 4 * nout));
    CUDA_TRY(cudaMalloc((void **)&Cf, 4 * nout));
    CUDA_TRY(cudaMemcpy(drows, rows, sizeof rows, cudaMemcpyHostToDevice));
    char *C = gemm_operand(g, 0, 2);
    CUDA_TRY(bkk_fill_bf16(C, elems(g->m, g->n, g->batch), 99u, 100.0f, 200.0f, s)); /* poison */
    BK_TRY(gemm_launch_one((void *)g, 0, err, errlen));
    if (g->fp8 == BK_SCALE_TENSOR) {
        CUDA_TRY(cudaMemcpy(hs, g->scales, sizeof hs, cudaMemcpyDeviceToHost));
        CUDA_TRY(bkk_ref_rows_e4m3((int)g->n, (int)g->k, gemm_operand(g, 0, 0),
                                   gemm_operand(g, 0, 1), drows, nr,
                                   hs[0] * hs[BK_FP8_SCALE_STRIDE], R, s));
    } else {
        bool blk = g->fp8 == BK_SCALE_BLOCK_1x128_128x128;
        CUDA_TRY(bkk_ref_rows_e4m3_block((int)g->m, (int)g->n, (int)g->k, gemm_operand(g, 0, 0),
                                         gemm_operand(g, 0, 1), drows, nr, g->bsa, g->bsb, blk,
                                         R, s));
    }
    for (int q = 0; q < nr; q++)
        CUDA_TRY(bkk_bf16_to_f32(C + 2 * (size_t)rows[q] * g->n, Cf + (size_t)q * g->n,
                                 (size_t)g->n, s));
    CUDA_TRY(cudaStreamSynchronize(s));
    BK_TRY(rel_error_dev(Cf, R, nout, rel, err, errlen));
    CUDA_TRY(cudaFree(drows));
    CUDA_TRY(cudaFree(R));
    CUDA_TRY(cudaFree(Cf));
    return CM_OK;
}

/* Time the GEMM over the operand copies in ga->buf: warm-up; 3 launches size the repeats to
 * min_repeat_s (1..200 launches); warm-up lasting warmup_s; the repeats, each launch on the next
 * copy. The events are the caller's to destroy. */
static cm_status gemm_time_copies(gemm_launch_arg *ga, const bk_timing *tm, cudaEvent_t *e0,
                                  cudaEvent_t *e1, bk_gemm_result *out, char *err, size_t errlen)
{
    bk_ctx *ctx = ga->ctx;
    int dev = ga->dev;
    if (ga->bsa) { /* block scales: random powers of two */
        CUDA_TRY(bkk_fill_pow2(ga->bsa, bk_block_scale_floats(false, ga->m, ga->k), 31u,
                               ctx->compute[dev]));
        CUDA_TRY(bkk_fill_pow2(ga->bsb,
                               bk_block_scale_floats(ga->fp8 == BK_SCALE_BLOCK_1x128_128x128,
                                                     ga->n, ga->k),
                               37u, ctx->compute[dev]));
    }
    if (ga->fp8) /* e4m3's range, as amax scaling fills it */
        CUDA_TRY(bkk_fill_e4m3(ga->buf, ga->set * ga->nsets, 777u + (uint32_t)ga->m, 448.0f,
                               ctx->compute[dev]));
    else
        CUDA_TRY(bkk_fill_bf16(ga->buf, ga->set * ga->nsets / 2, 777u + (uint32_t)ga->m, -1.0f,
                               1.0f, ctx->compute[dev]));
    CUDA_TRY(cudaEventCreate(&e0[dev]));
    CUDA_TRY(cudaEventCreate(&e1[dev]));
    bk_timed t = {.launch = gemm_launch_one, .arg = ga, .dev_lo = dev, .dev_hi = dev + 1,
                  .streams = ctx->compute, .start = e0, .stop = e1, .sync = BK_SYNC_NONE,
                  .across_processes = false, .warmup = tm->warmup, .probe_launches = 3,
                  .launches_per_repeat = 0, .min_launches = 1, .max_launches = 200,
                  .unsized_launches = 100, .min_repeat_s = tm->min_repeat_s,
                  .warmup_s = tm->warmup_s, .repeats = tm->repeats,
                  .host_ahead = tm->host_ahead};
    bk_timed_result r;
    BK_TRY(bk_time(ctx, &t, &r, err, errlen));
    out->time_s = r.time_s;
    out->spread = r.spread;
    out->host_s = r.host_s;
    out->flops_per_s = 2.0 * ga->m * ga->n * ga->k * ga->batch / out->time_s;
    out->check_error = 0;
    if (ga->fp8) BK_TRY(gemm_check_rows_fp8(ga, &out->check_error, err, errlen));
    return CM_OK;
}

static cm_status gemm_time(bk_ctx *ctx, int dev, work_gemm_form form, int fp8, long m, long n,
                           long k, int batch, const bk_timing *tm, bk_gemm_result *out, char *err,
                           size_t errlen)
{
    if (fp8 == BK_SCALE_BLOCK_1x128_128x128 || fp8 == BK_SCALE_BLOCK_1x128_1x128) {
        if (batch != 1)
            return cm_fail(err, errlen, CM_EINVAL, "blockwise FP8 GEMMs are timed at batch 1");
    }
    CUDA_TRY(cudaSetDevice(ctx->dev[dev]));
    size_t na = elems(m, k, batch), nb = elems(n, k, batch), nc = elems(m, n, batch);
    /* FP8: e4m3 A and B, bf16 C; copies 256-byte aligned (cuBLASLt wants 16) */
    size_t set = fp8 ? (na + nb + 2 * nc + 255) / 256 * 256 : 2 * (na + nb + nc);
    /* Rotate among copies covering 256 MiB, several times an H100/H200 L2 (50-60 MB). */
    int nsets = (int)((256u << 20) / set) + 1;
    if (nsets > 8) nsets = 8;
    char *buf = NULL;
    CUDA_TRY(cudaMalloc((void **)&buf, set * nsets));
    gemm_launch_arg ga = {.ctx = ctx, .dev = dev, .batch = batch, .nsets = nsets, .form = form,
                          .fp8 = fp8, .scales = ctx->fp8_scale[dev], .m = m, .n = n, .k = k,
                          .buf = buf, .set = set, .na = na, .nb = nb};
    float *bscales = NULL;
    if (fp8 == BK_SCALE_BLOCK_1x128_128x128 || fp8 == BK_SCALE_BLOCK_1x128_1x128) {
        /* A's and B's scale tensors, each 256-byte aligned */
        size_t sa = (bk_block_scale_floats(false, m, k) + 63) / 64 * 64;
        size_t sb = bk_block_scale_floats(fp8 == BK_SCALE_BLOCK_1x128_128x128, n, k);
        cudaError_t e = cudaMalloc((void **)&bscales, 4 * (sa + sb));
        if (e != cudaSuccess) {
            cudaFree(buf);
            CUDA_TRY(e);
        }
        ga.bsa = bscales;
        ga.bsb = bscales + sa;
    }
    cudaEvent_t e0[BK_MAX_GPUS] = {0}, e1[BK_MAX_GPUS] = {0};
    cm_status st = gemm_time_copies(&ga, tm, e0, e1, out, err, errlen);
    if (e0[dev]) cudaEventDestroy(e0[dev]);
    if (e1[dev]) cudaEventDestroy(e1[dev]);
    if (bscales) cudaFree(bscales);
    if (st != CM_OK) {
        cudaFree(buf);
        return st;
    }
    CUDA_TRY(cudaFree(buf));
    return CM_OK;
}

cm_status bk_gemm_time(bk_ctx *ctx, int dev, work_gemm_form form, long m, long n, long k,
                       int batch, const bk_timing *tm, bk_gemm_result *out, char *err,
                       size_t errlen)
{
    return gemm_time(ctx, dev, form, 0, m, n, k, batch, tm, out, err, errlen);
}

cm_status bk_gemm_time_fp8(bk_ctx *ctx, int dev, long m, long n, long k, int batch,
                           const bk_timing *tm, bk_gemm_result *out, char *err, size_t errlen)
{
    return gemm_time(ctx, dev, GEMM_FWD, BK_SCALE_TENSOR, m, n, k, batch, tm, out, err, errlen);
}

cm_status bk_gemm_time_fp8_block(bk_ctx *ctx, int dev, bool b_128x128, long m, long n, long k,
                                 const bk_timing *tm, bk_gemm_result *out, char *err,
                                 size_t errlen)
{
    return gemm_time(ctx, dev, GEMM_FWD,
                     b_128x128 ? BK_SCALE_BLOCK_1x128_128x128 : BK_SCALE_BLOCK_1x128_1x128, m, n,
                     k, 1, tm, out, err, errlen);
}

cm_status bk_gemm_check_fp8_block(bk_ctx *ctx, int dev, bool b_128x128, long m, long n, long k,
                                  double *rel_err, char *err, size_t errlen)
{
    /* one timed-path launch on a single copy, every output row checked */
    CUDA_TRY(cudaSetDevice(ctx->dev[dev]));
    int scaling = b_128x128 ? BK_SCALE_BLOCK_1x128_128x128 : BK_SCALE_BLOCK_1x128_1x128;
    size_t na = elems(m, k, 1), nb = elems(n, k, 1), nc = elems(m, n, 1);
    size_t set = (na + nb + 2 * nc + 255) / 256 * 256;
    size_t sa = (bk_block_scale_floats(false, m, k) + 63) / 64 * 64;
    size_t sb = bk_block_scale_floats(b_128x128, n, k);
    char *buf = NULL;
    float *sc = NULL, *R = NULL, *Cf = NULL;
    int *drows = NULL;
    CUDA_TRY(cudaMalloc((void **)&buf, set));
    CUDA_TRY(cudaMalloc((void **)&sc, 4 * (sa + sb)));
    CUDA_TRY(cudaMalloc((void **)&R, 4 * nc));
    CUDA_TRY(cudaMalloc((void **)&Cf, 4 * nc));
    CUDA_TRY(cudaMalloc((void **)&drows, sizeof(int) * (size_t)m));
    int *rows = malloc(sizeof(int) * (size_t)m);
    if (!rows) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    for (long r = 0; r < m; r++) rows[r] = (int)r;
    cudaError_t ce = cudaMemcpy(drows, rows, sizeof(int) * (size_t)m, cudaMemcpyHostToDevice);
    free(rows);
    CUDA_TRY(ce);
    gemm_launch_arg ga = {.ctx = ctx, .dev = dev, .batch = 1, .nsets = 1, .form = GEMM_FWD,
                          .fp8 = scaling, .m = m, .n = n, .k = k, .buf = buf, .set = set,
                          .na = na, .nb = nb, .bsa = sc, .bsb = sc + sa};
    cudaStream_t s = ctx->compute[dev];
    static uint32_t seed = 5678;
    CUDA_TRY(bkk_fill_e4m3(buf, na + nb, seed++, 448.0f, s));
    CUDA_TRY(bkk_fill_pow2(ga.bsa, bk_block_scale_floats(false, m, k), seed++, s));
    CUDA_TRY(bkk_fill_pow2(ga.bsb, sb, seed++, s));
    char *C = gemm_operand(&ga, 0, 2);
    CUDA_TRY(bkk_fill_bf16(C, nc, seed++, 100.0f, 200.0f, s)); /* poison */
    BK_TRY(gemm_launch_one(&ga, 0, err, errlen));
    CUDA_TRY(bkk_ref_rows_e4m3_block((int)m, (int)n, (int)k, buf, gemm_operand(&ga, 0, 1), drows,
                                     (int)m, ga.bsa, ga.bsb, b_128x128, R, s));
    CUDA_TRY(bkk_bf16_to_f32(C, Cf, nc, s));
    CUDA_TRY(cudaStreamSynchronize(s));
    BK_TRY(rel_error_dev(Cf, R, nc, rel_err, err, errlen));
    void *bufs[] = {buf, sc, R, Cf, drows};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) CUDA_TRY(cudaFree(bufs[i]));
    return CM_OK;
}

cm_status bk_block_scales(bk_ctx *ctx, int d, size_t n, float **out, char *err, size_t errlen)
{
    if (ctx->block_scale_n[d] < n) {
        if (ctx->block_scale[d]) CUDA_TRY(cudaFree(ctx->block_scale[d]));
        ctx->block_scale[d] = NULL;
        ctx->block_scale_n[d] = 0;
        CUDA_TRY(cudaMalloc((void **)&ctx->block_scale[d], 4 * n));
        CUDA_TRY(bkk_fill_pow2(ctx->block_scale[d], n, 41u, ctx->compute[d]));
        ctx->block_scale_n[d] = n;
    }
    *out = ctx->block_scale[d];
    return CM_OK;
}
