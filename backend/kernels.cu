/*
 * kernels.cu — the CUDA kernels the backend needs besides cuBLAS and NCCL: random fill (never
 * zero: zeros run faster than real data and hide unwritten outputs, METHOD.md), the collective
 * test pattern and its checker, a fused Adam update, a naive fp32 reference GEMM for checking
 * cuBLAS on small shapes, and a bf16-to-fp32 cast; for the FP8 GEMMs an e4m3 fill, a dequantizing
 * cast and a reference of sampled output rows. The eager PyTorch kernels of the elementwise
 * work and of FSDP2's copies are in kernels_ew.cu.
 *
 * Exposed to the C side as extern "C" functions that return the cudaError_t of the launch.
 */
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels.h"

static __device__ __forceinline__ uint32_t hash32(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static unsigned grid_for(size_t n, unsigned block)
{
    size_t g = (n + block - 1) / block;
    if (g > 65535u * 8u) g = 65535u * 8u; /* grid-stride loops cover the rest */
    if (g == 0) g = 1;
    return (unsigned)g;
}

/* Uniform in [lo, hi] excluding a small band around zero (|x| >= 1/64 of the range). */
__global__ void fill_bf16_kernel(__nv_bfloat16 *p, size_t n, uint32_t seed, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = hash32(((uint64_t)seed << 40) ^ i);
        float u = (h >> 8) * (1.0f / 16777216.0f);
        float x = lo + (hi - lo) * u;
        float eps = (hi - lo) / 64.0f;
        if (fabsf(x) < eps) x = x < 0 ? -eps : eps;
        /* Keep each byte a number when read as e4m3 too (plan measure's FP8 GEMMs read their
         * operands from these pools): e4m3's only NaNs are 0x7f and 0xff, which only the low
         * byte can hold for |x| < 2; moving such a value by one ulp keeps it random. */
        __nv_bfloat16_raw r = __float2bfloat16(x);
        if ((r.x & 0x7f) == 0x7f) r.x ^= 1;
        p[i] = r;
    }
}

/* Random e4m3 values, uniform in [-amp, amp] before rounding, never zero (|x| >= amp / 64). */
__global__ void fill_e4m3_kernel(__nv_fp8_e4m3 *p, size_t n, uint32_t seed, float amp)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = hash32(((uint64_t)seed << 40) ^ i);
        float u = (h >> 8) * (1.0f / 16777216.0f);
        float x = amp * (2.0f * u - 1.0f);
        float eps = amp / 64.0f;
        if (fabsf(x) < eps) x = x < 0 ? -eps : eps;
        p[i] = __nv_fp8_e4m3(x);
    }
}

extern "C" int bkk_fill_e4m3(void *p, size_t n, uint32_t seed, float amp, void *stream)
{
    fill_e4m3_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(
        (__nv_fp8_e4m3 *)p, n, seed, amp);
    return (int)cudaGetLastError();
}

/* Dequantize: out = bf16(in * scale). Exact when scale is a power of two: an e4m3 value times
 * one has 4 significant bits and an exponent inside bf16's range. */
__global__ void e4m3_to_bf16_kernel(const __nv_fp8_e4m3 *in, __nv_bfloat16 *out, size_t n,
                                    float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2bfloat16(float(in[i]) * scale);
}

extern "C" int bkk_e4m3_to_bf16(const void *in, void *out, size_t n, float scale, void *stream)
{
    e4m3_to_bf16_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(
        (const __nv_fp8_e4m3 *)in, (__nv_bfloat16 *)out, n, scale);
    return (int)cudaGetLastError();
}

/* Rows `rows[0..nrows-1]` of the FP8 forward product, in fp32 from the e4m3 operands:
 * C[r, j] = scale * sum_q A[r, q] B[j, q] (A m x k, B n x k, row-major). out is nrows x n. */
__global__ void ref_rows_e4m3_kernel(int n, int k, const __nv_fp8_e4m3 *A,
                                     const __nv_fp8_e4m3 *B, const int *rows, int nrows,
                                     float scale, float *out)
{
    size_t total = (size_t)nrows * n;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int r = rows[idx / n], j = (int)(idx % n);
        const __nv_fp8_e4m3 *a = A + (size_t)r * k, *b = B + (size_t)j * k;
        float s = 0;
        for (int q = 0; q < k; q++) s += float(a[q]) * float(b[q]);
        out[idx] = s * scale;
    }
}

extern "C" int bkk_ref_rows_e4m3(int n, int k, const void *A, const void *B, const int *rows,
                                 int nrows, float scale, float *out, void *stream)
{
    size_t total = (size_t)nrows * n;
    ref_rows_e4m3_kernel<<<grid_for(total, 128), 128, 0, (cudaStream_t)stream>>>(
        n, k, (const __nv_fp8_e4m3 *)A, (const __nv_fp8_e4m3 *)B, rows, nrows, scale, out);
    return (int)cudaGetLastError();
}

/* Random powers of two 2^-2 .. 2^2 (block scales: products with e4m3 values stay exact). */
__global__ void fill_pow2_kernel(float *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = ldexpf(1.0f, (int)(hash32(((uint64_t)seed << 40) ^ i) % 5u) - 2);
}

extern "C" int bkk_fill_pow2(float *p, size_t n, uint32_t seed, void *stream)
{
    fill_pow2_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(p, n, seed);
    return (int)cudaGetLastError();
}

/* Rows of the blockwise FP8 forward product in fp32: each 128-long stretch of k summed, then
 * times A's 1x128 scale of (row, block) and B's scale of (column, block) (layouts: kernels.h). */
__global__ void ref_rows_e4m3_block_kernel(int m, int n, int k, const __nv_fp8_e4m3 *A,
                                           const __nv_fp8_e4m3 *B, const int *rows, int nrows,
                                           const float *sa, const float *sb, int b_blk,
                                           float *out)
{
    size_t total = (size_t)nrows * n;
    int kb_n = (k + 127) / 128;
    size_t lda_s = (size_t)(m + 3) / 4 * 4;
    size_t ldb_s = b_blk ? (size_t)(kb_n + 3) / 4 * 4 : (size_t)(n + 3) / 4 * 4;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int r = rows[idx / n], j = (int)(idx % n);
        const __nv_fp8_e4m3 *a = A + (size_t)r * k, *b = B + (size_t)j * k;
        float s = 0;
        for (int kb = 0; kb < kb_n; kb++) {
            float part = 0;
            int hi = (kb + 1) * 128 < k ? (kb + 1) * 128 : k;
            for (int q = kb * 128; q < hi; q++) part += float(a[q]) * float(b[q]);
            float scb = b_blk ? sb[(size_t)(j / 128) * ldb_s + kb] : sb[(size_t)kb * ldb_s + j];
            s += part * sa[(size_t)kb * lda_s + r] * scb;
        }
        out[idx] = s;
    }
}

extern "C" int bkk_ref_rows_e4m3_block(int m, int n, int k, const void *A, const void *B,
                                       const int *rows, int nrows, const float *sa,
                                       const float *sb, int b_blk, float *out, void *stream)
{
    size_t total = (size_t)nrows * n;
    ref_rows_e4m3_block_kernel<<<grid_for(total, 128), 128, 0, (cudaStream_t)stream>>>(
        m, n, k, (const __nv_fp8_e4m3 *)A, (const __nv_fp8_e4m3 *)B, rows, nrows, sa, sb, b_blk,
        out);
    return (int)cudaGetLastError();
}

extern "C" int bkk_fill_bf16(void *p, size_t n, uint32_t seed, float lo, float hi, void *stream)
{
    fill_bf16_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(
        (__nv_bfloat16 *)p, n, seed, lo, hi);
    return (int)cudaGetLastError();
}

/* Collective test pattern: small integers 1..4 so that sums over up to 64 ranks are exact in
 * bf16 (integers up to 256 are). */
static __device__ __forceinline__ float pattern(int rank, size_t i)
{
    return (float)(1 + (hash32(((uint64_t)(rank + 1) << 44) ^ i) >> 7) % 4);
}

__global__ void pattern_kernel(__nv_bfloat16 *p, size_t n, size_t offset, int rank)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(pattern(rank, offset + i));
}

extern "C" int bkk_fill_pattern_bf16(void *p, size_t n, size_t offset, int rank, void *stream)
{
    pattern_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((__nv_bfloat16 *)p, n,
                                                                        offset, rank);
    return (int)cudaGetLastError();
}

/* Expected output element i of rank `rank` in a group of g, for op (BKK_OP_*), with cnt the
 * per-rank chunk in elements. The send buffers hold pattern(r, i) at index i. */
static __device__ float expected(int op, int rank, int g, size_t cnt, size_t i)
{
    switch (op) {
    case BKK_OP_ALL_REDUCE: {
        float s = 0;
        for (int r = 0; r < g; r++) s += pattern(r, i);
        return s;
    }
    case BKK_OP_ALL_GATHER: return pattern((int)(i / cnt), i % cnt);
    case BKK_OP_REDUCE_SCATTER: {
        float s = 0;
        for (int r = 0; r < g; r++) s += pattern(r, (size_t)rank * cnt + i);
        return s;
    }
    case BKK_OP_ALL_TO_ALL: return pattern((int)(i / cnt), (size_t)rank * cnt + i % cnt);
    case BKK_OP_SEND_RECV: return pattern((rank + g - 1) % g, i);
    }
    return -1;
}

__global__ void check_kernel(const __nv_bfloat16 *p, size_t n, int op, int rank, int g, size_t cnt,
                             unsigned long long *bad)
{
    unsigned long long local = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (__bfloat162float(p[i]) != expected(op, rank, g, cnt, i)) local++;
    if (local) atomicAdd(bad, local);
}

extern "C" int bkk_check(const void *p, size_t n, int op, int rank, int g, size_t cnt,
                         unsigned long long *dev_bad, void *stream)
{
    check_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(
        (const __nv_bfloat16 *)p, n, op, rank, g, cnt, dev_bad);
    return (int)cudaGetLastError();
}

/* Fused Adam(W): p, g, m, v fp32 (read 16 B, write 12 B per parameter), optional bf16 model copy
 * (2 B): the ~30 bytes per parameter the cost model streams. The states start as random bits
 * of a bf16 fill, so v may be negative: |v| keeps the update finite without changing the bytes. */
__global__ void adam_kernel(float *p, const float *g, float *m, float *v, __nv_bfloat16 *out,
                            size_t n, float lr, float b1, float b2, float eps, float wd)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        float pi = p[i];
        pi -= lr * (mi / (sqrtf(fabsf(vi)) + eps) + wd * pi);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        if (out) out[i] = __float2bfloat16(pi);
    }
}

extern "C" int bkk_adam(float *p, const float *g, float *m, float *v, void *bf16_out, size_t n,
                        int sms, void *stream)
{
    if (n == 0) return 0;
    unsigned grid = (unsigned)(sms > 0 ? sms * 8 : 1024);
    size_t need = (n + 255) / 256;
    if (need < grid) grid = (unsigned)need;
    adam_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(p, g, m, v, (__nv_bfloat16 *)bf16_out, n,
                                                        1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f);
    return (int)cudaGetLastError();
}

/* Naive reference of the three GEMM forms (row-major, see work.h), fp32 accumulate and
 * output, one thread per output element. For small check shapes only. */
__global__ void ref_gemm_kernel(int form, int m, int n, int k, int batch,
                                const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C)
{
    size_t total = (size_t)m * n * batch;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int b = (int)(idx / ((size_t)m * n));
        int i = (int)((idx / n) % m), j = (int)(idx % n);
        const __nv_bfloat16 *a = A + (size_t)b * m * k, *bb = B + (size_t)b * n * k;
        float s = 0;
        for (int q = 0; q < k; q++) {
            float x, y;
            if (form == 0) { x = __bfloat162float(a[(size_t)i * k + q]); y = __bfloat162float(bb[(size_t)j * k + q]); }
            else if (form == 1) { x = __bfloat162float(a[(size_t)i * k + q]); y = __bfloat162float(bb[(size_t)q * n + j]); }
            else { x = __bfloat162float(a[(size_t)q * m + i]); y = __bfloat162float(bb[(size_t)q * n + j]); }
            s += x * y;
        }
        C[idx] = s;
    }
}

extern "C" int bkk_ref_gemm(int form, int m, int n, int k, int batch, const void *A, const void *B,
                            float *C, void *stream)
{
    size_t total = (size_t)m * n * batch;
    ref_gemm_kernel<<<grid_for(total, 128), 128, 0, (cudaStream_t)stream>>>(
        form, m, n, k, batch, (const __nv_bfloat16 *)A, (const __nv_bfloat16 *)B, C);
    return (int)cudaGetLastError();
}

__global__ void bf16_to_f32_kernel(const __nv_bfloat16 *in, float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = __bfloat162float(in[i]);
}

extern "C" int bkk_bf16_to_f32(const void *in, float *out, size_t n, void *stream)
{
    bf16_to_f32_kernel<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(
        (const __nv_bfloat16 *)in, out, n);
    return (int)cudaGetLastError();
}

/* The host-ahead gate (bk_timing.c): one thread spins until the host sets gate[0] (mapped host
 * memory) or timeout_ns pass on the GPU's global timer; a timeout is marked in gate[1]. */
__global__ void gate_kernel(volatile uint32_t *gate, unsigned long long timeout_ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (gate[0] == 0) {
        __nanosleep(500);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > timeout_ns) {
            gate[1] = 1;
            break;
        }
    }
}

extern "C" int bkk_gate(volatile uint32_t *gate, double timeout_s, void *stream)
{
    gate_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(gate, (unsigned long long)(timeout_s * 1e9));
    return (int)cudaGetLastError();
}
