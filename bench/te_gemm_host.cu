/*
 * te_gemm_host.cu — the host (CPU) time of one GEMM issued the way Transformer Engine issues
 * each expert's GEMM of a GroupedLinear (issue 20, bench/README.md "Megatron-Core MoE host
 * cost"). TE's general_grouped_gemm (transformer_engine/pytorch/cpp_extensions/gemm.py at
 * d0067d0) calls te_general_grouped_gemm -> multi_stream_cublas_gemm
 * (transformer_engine/common/gemm/cublaslt_gemm.cu at d0067d0, lines 970-1023), which loops
 * over the local experts on the host: per GEMM one cublas_gemm (same file, 315-800): four
 * cublasLtMatrixLayoutCreate, cublasLtMatmulDescCreate and its attributes, a
 * cublasLtMatmulPreferenceCreate, cublasLtMatmulAlgoGetHeuristic (no cache in TE), cublasLtMatmul
 * on compute stream i % num_streams, and the destroys; around the loop an event record/wait per
 * stream. This program repeats that sequence on tiny bf16 shapes (the GPU never the bottleneck)
 * and prints the host time per GEMM, per grouped call of N GEMMs on 4 streams, and, for
 * comparison, a bare cublasLtMatmul with a descriptor and algorithm reused.
 * Build: nvcc -O2 -o te_gemm_host te_gemm_host.cu -lcublasLt. Run: ./te_gemm_host [m n k].
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
#define CB(x) do { cublasStatus_t s = (x); if (s != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d cublas %d\n", __FILE__, __LINE__, (int)s); exit(1);} } while (0)

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Ctx {
    cublasLtHandle_t h;
    void *A, *B, *D, *ws;
    size_t ws_bytes;
    int m, n, k;
};

/* One GEMM as TE's cublas_gemm issues it (TN layout, bf16 in/out, fp32 compute). */
static void te_like_gemm(Ctx &c, cudaStream_t st)
{
    cublasLtMatrixLayout_t Ad, Bd, Cd, Dd;
    cublasLtMatmulDesc_t op;
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatrixLayoutCreate(&Ad, CUDA_R_16BF, c.k, c.m, c.k));
    CB(cublasLtMatrixLayoutCreate(&Bd, CUDA_R_16BF, c.k, c.n, c.k));
    CB(cublasLtMatrixLayoutCreate(&Dd, CUDA_R_16BF, c.m, c.n, c.m));
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    int8_t fast = 0;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CB(cublasLtMatrixLayoutCreate(&Cd, CUDA_R_16BF, c.m, c.n, c.m));
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &c.ws_bytes, sizeof c.ws_bytes));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(c.h, op, Ad, Bd, Cd, Dd, pref, 1, &res, &found));
    if (!found) { fprintf(stderr, "no algorithm\n"); exit(1); }
    float alpha = 1.f, beta = 0.f;
    CB(cublasLtMatmul(c.h, op, &alpha, c.A, Ad, c.B, Bd, &beta, c.D, Cd, c.D, Dd, &res.algo,
                      c.ws, c.ws_bytes, st));
    CB(cublasLtMatmulPreferenceDestroy(pref));
    CB(cublasLtMatrixLayoutDestroy(Dd));
    CB(cublasLtMatrixLayoutDestroy(Cd));
    CB(cublasLtMatrixLayoutDestroy(Bd));
    CB(cublasLtMatrixLayoutDestroy(Ad));
    CB(cublasLtMatmulDescDestroy(op));
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    Ctx c;
    c.m = argc > 1 ? atoi(argv[1]) : 128;
    c.n = argc > 2 ? atoi(argv[2]) : 128;
    c.k = argc > 3 ? atoi(argv[3]) : 128;
    c.ws_bytes = 32u << 20; /* TE's Hopper workspace: 32 MiB + 256 */
    CB(cublasLtCreate(&c.h));
    CK(cudaMalloc(&c.A, (size_t)c.m * c.k * 2));
    CK(cudaMalloc(&c.B, (size_t)c.n * c.k * 2));
    CK(cudaMalloc(&c.D, (size_t)c.m * c.n * 2));
    CK(cudaMalloc(&c.ws, c.ws_bytes));
    CK(cudaMemset(c.A, 0, (size_t)c.m * c.k * 2));
    CK(cudaMemset(c.B, 0, (size_t)c.n * c.k * 2));
    cudaStream_t main_st, cs[4];
    cudaEvent_t ev[5];
    CK(cudaStreamCreateWithFlags(&main_st, cudaStreamNonBlocking));
    for (int s = 0; s < 4; s++) CK(cudaStreamCreateWithFlags(&cs[s], cudaStreamNonBlocking));
    for (int s = 0; s < 5; s++) CK(cudaEventCreateWithFlags(&ev[s], cudaEventDisableTiming));
    const int reps = 400;
    for (int i = 0; i < 50; i++) te_like_gemm(c, main_st); /* warm-up: heuristics, modules */
    CK(cudaStreamSynchronize(main_st));
    /* 1. TE-like GEMM, one stream: host time per call (20 runs of 400 calls, median) */
    std::vector<double> per;
    cudaEvent_t g0, g1;
    CK(cudaEventCreate(&g0));
    CK(cudaEventCreate(&g1));
    float gpu_ms = 0;
    for (int r = 0; r < 20; r++) {
        CK(cudaEventRecord(g0, main_st));
        double t0 = now_s();
        for (int i = 0; i < reps; i++) te_like_gemm(c, main_st);
        double t1 = now_s();
        CK(cudaEventRecord(g1, main_st));
        CK(cudaEventSynchronize(g1));
        CK(cudaEventElapsedTime(&gpu_ms, g0, g1));
        per.push_back((t1 - t0) / reps);
    }
    printf("te_like_gemm_host_us %.3f  (m n k %d %d %d; GPU span per call %.3f us)\n",
           median(per) * 1e6, c.m, c.n, c.k, gpu_ms * 1e3 / reps);
    /* 2. a grouped call of N GEMMs on 4 compute streams, as multi_stream_cublas_gemm */
    int ns[] = {1, 4, 8, 16, 32, 64, 128};
    for (int ni = 0; ni < 7; ni++) {
        int N = ns[ni];
        std::vector<double> v;
        for (int r = 0; r < 20; r++) {
            double t0 = now_s();
            for (int it = 0; it < 10; it++) {
                int used = std::min(4, N);
                CK(cudaEventRecord(ev[4], main_st));
                for (int s = 0; s < used; s++) CK(cudaStreamWaitEvent(cs[s], ev[4], 0));
                for (int i = 0; i < N; i++) te_like_gemm(c, cs[i % 4]);
                for (int s = 0; s < used; s++) CK(cudaEventRecord(ev[s], cs[s]));
                for (int s = 0; s < used; s++) CK(cudaStreamWaitEvent(main_st, ev[s], 0));
            }
            double t1 = now_s();
            CK(cudaStreamSynchronize(main_st));
            v.push_back((t1 - t0) / 10);
        }
        printf("grouped_call_host_us N %d %.3f  per_gemm %.3f\n", N, median(v) * 1e6,
               median(v) * 1e6 / N);
    }
    /* 3. bare cublasLtMatmul, descriptors and algorithm reused (the floor of any cuBLASLt call) */
    {
        cublasLtMatrixLayout_t Ad, Bd, Dd;
        cublasLtMatmulDesc_t op;
        cublasLtMatmulPreference_t pref;
        CB(cublasLtMatrixLayoutCreate(&Ad, CUDA_R_16BF, c.k, c.m, c.k));
        CB(cublasLtMatrixLayoutCreate(&Bd, CUDA_R_16BF, c.k, c.n, c.k));
        CB(cublasLtMatrixLayoutCreate(&Dd, CUDA_R_16BF, c.m, c.n, c.m));
        CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        CB(cublasLtMatmulPreferenceCreate(&pref));
        CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &c.ws_bytes, sizeof c.ws_bytes));
        cublasLtMatmulHeuristicResult_t res;
        int found = 0;
        CB(cublasLtMatmulAlgoGetHeuristic(c.h, op, Ad, Bd, Dd, Dd, pref, 1, &res, &found));
        float alpha = 1.f, beta = 0.f;
        std::vector<double> v;
        for (int r = 0; r < 20; r++) {
            double t0 = now_s();
            for (int i = 0; i < reps; i++)
                CB(cublasLtMatmul(c.h, op, &alpha, c.A, Ad, c.B, Bd, &beta, c.D, Dd, c.D, Dd,
                                  &res.algo, c.ws, c.ws_bytes, main_st));
            double t1 = now_s();
            CK(cudaStreamSynchronize(main_st));
            v.push_back((t1 - t0) / reps);
        }
        printf("bare_matmul_host_us %.3f\n", median(v) * 1e6);
    }
    return 0;
}
