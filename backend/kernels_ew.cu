/*
 * kernels_ew.cu — the eager PyTorch kernels of the backend's elementwise work and of FSDP2's
 * copies (costmodel/elementwise.h's access patterns), each written the way PyTorch's kernel of
 * its pattern is, and bkk_ew_launch, which picks and launches one (kernels.h). It exists apart
 * from kernels.cu (fill, collective pattern and check, Adam, reference GEMM) because these
 * kernels are one family: PyTorch's launch shapes and index arithmetic, one launcher.
 *
 * Exposed to the C side as extern "C" functions that return the cudaError_t of the launch.
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "kernels_cast.cuh"

/* ==== Eager PyTorch kernels (costmodel/elementwise.h patterns) ===============================
 *
 * Each pattern is written the way PyTorch's kernel for it is (aten/src/ATen/native/cuda), so
 * that a plan step here runs at the framework's kernel efficiency rather than at an ideal
 * copy's: launch shapes, per-thread work, vector widths and per-element index arithmetic follow
 * CUDALoops.cuh (vectorized_elementwise_kernel, unrolled_elementwise_kernel, elementwise_kernel
 * + OffsetCalculator / IntDivider), Reduce.cuh (ReduceConfig's block shapes), SoftMax.cu
 * (cunn_SoftMaxForward / Backward), Shape.cu (CatArrayBatchedCopy), MultiTensorApply.cuh and
 * TensorShape.cu (split_with_sizes_copy_out_contiguous_no_cast_kernel, chunk_cat_cuda_kernel).
 * The values are real (tests/backend/test_backend_gpu.c checks every kernel of a layer's list
 * against a CPU reference). */


/* memory::aligned_vector */
template <typename T, int N> struct alignas(sizeof(T) * N) avec {
    T v[N];
};

/* The op of an elementwise kernel with NIN inputs. */
template <int NIN> static __device__ __forceinline__ float ew_op(float a, float b)
{
    return NIN == 2 ? a * b : (NIN == 1 ? a : 0.0f);
}

/* -- vectorized_elementwise_kernel: 128 threads, VEC elements per thread through aligned
 * vectors of every operand; the last block's remainder element by element. */
template <typename To, typename Ta, typename Tb, int NIN, int VEC>
__global__ void __launch_bounds__(128)
    ew_vectorized_kernel(To *__restrict__ out, const Ta *__restrict__ a, const Tb *__restrict__ b,
                         long long n)
{
    long long i0 = ((long long)blockIdx.x * 128 + threadIdx.x) * VEC;
    if (i0 + VEC <= n) {
        avec<Ta, VEC> va;
        avec<Tb, VEC> vb;
        avec<To, VEC> vo;
        if (NIN >= 1) va = *reinterpret_cast<const avec<Ta, VEC> *>(a + i0);
        if (NIN >= 2) vb = *reinterpret_cast<const avec<Tb, VEC> *>(b + i0);
#pragma unroll
        for (int j = 0; j < VEC; j++)
            vo.v[j] = fromf<To>(ew_op<NIN>(NIN >= 1 ? tof(va.v[j]) : 0.0f,
                                           NIN >= 2 ? tof(vb.v[j]) : 0.0f));
        *reinterpret_cast<avec<To, VEC> *>(out + i0) = vo;
    } else {
        for (long long i = i0; i < n; i++)
            out[i] = fromf<To>(
                ew_op<NIN>(NIN >= 1 ? tof(a[i]) : 0.0f, NIN >= 2 ? tof(b[i]) : 0.0f));
    }
}

/* -- unrolled_elementwise_kernel with LoadWithCast / StoreWithCast: 128 threads x 4 elements,
 * element j of a thread at tid + 128 j; every load and store through a runtime dtype switch
 * (c10::fetch_and_cast / cast_and_store). */
static __device__ __forceinline__ float load_cast(const char *p, int esize, long long i)
{
    switch (esize) {
    case 2: return __bfloat162float(reinterpret_cast<const bf16 *>(p)[i]);
    case 4: return reinterpret_cast<const float *>(p)[i];
    }
    return 0.0f;
}

static __device__ __forceinline__ void store_cast(char *p, int esize, long long i, float v)
{
    switch (esize) {
    case 2: reinterpret_cast<bf16 *>(p)[i] = __float2bfloat16(v); break;
    case 4: reinterpret_cast<float *>(p)[i] = v; break;
    }
}

__global__ void __launch_bounds__(128)
    ew_unrolled_kernel(char *out, const char *a, const char *b, int eo, int ea, int eb, int nin,
                       long long n)
{
    long long base = (long long)blockIdx.x * 512;
    long long remaining = n - base;
    float xa[4], xb[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        long long k = threadIdx.x + 128 * j;
        if (k < remaining) {
            xa[j] = nin >= 1 ? load_cast(a, ea, base + k) : 0.0f;
            xb[j] = nin >= 2 ? load_cast(b, eb, base + k) : 0.0f;
        }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        long long k = threadIdx.x + 128 * j;
        if (k < remaining)
            store_cast(out, eo, base + k, nin == 2 ? xa[j] * xb[j] : (nin == 1 ? xa[j] : 0.0f));
    }
}

/* -- elementwise_kernel<128, VT> with OffsetCalculator: per element, the linear index is split
 * into the (coalesced) dimensions, innermost first, by IntDivider's multiply-high division, and
 * each operand's byte offset accumulated; scalar loads and stores. */
struct int_divider {
    unsigned divisor, m1, shift;
};

static int_divider make_divider(unsigned d)
{
    int_divider r;
    r.divisor = d;
    unsigned s = 0;
    while (s < 32 && (1ull << s) < d) s++;
    r.shift = s;
    r.m1 = (unsigned)(((1ull << 32) * ((1ull << s) - d)) / d + 1);
    return r;
}

static __device__ __forceinline__ void divmod(const int_divider &d, unsigned n, unsigned &q,
                                              unsigned &r)
{
    unsigned t = __umulhi(n, d.m1);
    q = (t + n) >> d.shift;
    r = n - q * d.divisor;
}

struct offset_calc {
    int dims;
    int_divider size[3];   /* innermost first */
    unsigned stride[3][3]; /* [dim][operand], bytes */
};

template <int VT, typename To, typename Ta, typename Tb, int NIN>
__global__ void __launch_bounds__(128, 4)
    ew_offsets_kernel(int N, offset_calc oc, char *out, const char *a, const char *b)
{
    int idx = 128 * VT * blockIdx.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < VT; i++) {
        if (idx < N) {
            unsigned off[3] = {0, 0, 0}, lin = (unsigned)idx;
#pragma unroll
            for (int d = 0; d < 3; d++) {
                if (d == oc.dims) break;
                unsigned q, r;
                divmod(oc.size[d], lin, q, r);
                lin = q;
#pragma unroll
                for (int k = 0; k < 3; k++) off[k] += r * oc.stride[d][k];
            }
            float x = NIN >= 1 ? tof(*reinterpret_cast<const Ta *>(a + off[1])) : 0.0f;
            float y = NIN >= 2 ? tof(*reinterpret_cast<const Tb *>(b + off[2])) : 0.0f;
            *reinterpret_cast<To *>(out + off[0]) = fromf<To>(ew_op<NIN>(x, y));
            idx += 128;
        }
    }
}

/* -- CatArrayBatchedCopy: 512 threads, a grid row per input (2 x SMs blocks each), grid-stride
 * over the input's elements in its logical order; the output and (non-contiguous) input offsets
 * from the index by division per dimension (CatArrIndexToOffset); 2-byte opaque copies. */
struct cat_meta {
    unsigned n[3];
    unsigned ost[3], ist[2][3]; /* element strides: output, inputs */
};

template <typename T>
__global__ void __launch_bounds__(512) ew_cat_kernel(T *out, const T *a, const T *b, cat_meta m)
{
    int k = blockIdx.y;
    const T *in = k ? b : a;
    unsigned total = m.n[0] * m.n[1] * m.n[2];
    unsigned base = k * m.n[2] * m.ost[2];
    for (unsigned t = blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += gridDim.x * blockDim.x) {
        unsigned lin = t, oo = 0, io = 0;
#pragma unroll
        for (int d = 2; d >= 1; d--) {
            unsigned next = lin / m.n[d];
            unsigned cur = lin - next * m.n[d];
            oo += cur * m.ost[d];
            io += cur * m.ist[k][d];
            lin = next;
        }
        oo += lin * m.ost[0];
        io += lin * m.ist[k][0];
        out[base + oo] = in[io];
    }
}

/* -- reduce_kernel over the contiguous last dimension: ReduceConfig gives a (32, 16) block, a
 * warp per output row, 4-wide vector loads (input_vec_size 4) and 4 accumulators (vt0). */
template <typename To, typename Ti>
__global__ void __launch_bounds__(512)
    ew_reduce_row_kernel(To *out, const Ti *__restrict__ in, unsigned rows, unsigned w)
{
    unsigned row = blockIdx.x * 16 + threadIdx.y;
    if (row >= rows) return;
    const Ti *r = in + (size_t)row * w;
    float acc[4] = {0, 0, 0, 0};
    unsigned i = threadIdx.x * 4;
    if ((w & 3) == 0 && reinterpret_cast<uintptr_t>(in) % (4 * sizeof(Ti)) == 0) {
        for (; i < w; i += 128) {
            avec<Ti, 4> v = *reinterpret_cast<const avec<Ti, 4> *>(r + i);
#pragma unroll
            for (int j = 0; j < 4; j++) acc[j] += tof(v.v[j]);
        }
    } else {
        for (unsigned e = threadIdx.x; e < w; e += 32) acc[0] += tof(r[e]);
    }
    float s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) out[row] = fromf<To>(s);
}

/* -- reduce_kernel over rows, [rows, w] -> [w]: a (32, 4) block (128 threads, output_vec_size
 * 4: each thread 4 adjacent columns), block.y and the grid's y split the rows; the y-blocks of a
 * column group meet in a global staging buffer, and the last to arrive (a semaphore, zeroed by a
 * memset per launch as PyTorch does) sums it. */
static void col_grid(long long rows, long long w, int sms, unsigned *gx, unsigned *gy)
{
    long long x = (w + 127) / 128;
    long long target = (long long)(sms > 0 ? sms : 132) * 16; /* 2048 threads / 128 per SM */
    long long y = (target + x - 1) / x;
    long long ymax = rows / 64 > 0 ? rows / 64 : 1;
    if (y > ymax) y = ymax;
    if (y < 1) y = 1;
    *gx = (unsigned)x;
    *gy = (unsigned)y;
}

/* n0 > 1 ([n0, rows, w] -> [n0, w], a sum over a middle dimension): the columns are the n0 * w
 * outputs, column c of output o reading in[o * rows * w + r * w + c]; w a multiple of 4 keeps a
 * thread's 4 columns in one o (else the scalar path, column by column). */
template <typename To, typename Ti>
__global__ void __launch_bounds__(128)
    ew_reduce_col_kernel(To *out, const Ti *__restrict__ in, unsigned rows, unsigned w,
                         float *staging, unsigned *sema, unsigned n0)
{
    __shared__ float part[4][32][4];
    __shared__ bool last;
    unsigned c0 = (blockIdx.x * 32 + threadIdx.x) * 4;
    size_t wt = (size_t)w * n0; /* columns in all */
    float acc[4] = {0, 0, 0, 0};
    bool full = c0 + 4 <= wt && (w & 3) == 0 &&
                reinterpret_cast<uintptr_t>(in) % (4 * sizeof(Ti)) == 0;
    size_t obase = n0 > 1 ? (size_t)(c0 / w) * rows * w + c0 % w : c0;
    for (unsigned r = blockIdx.y * 4 + threadIdx.y; r < rows; r += 4 * gridDim.y) {
        const Ti *p = in + obase + (size_t)r * w;
        if (full) {
            avec<Ti, 4> v = *reinterpret_cast<const avec<Ti, 4> *>(p);
#pragma unroll
            for (int j = 0; j < 4; j++) acc[j] += tof(v.v[j]);
        } else {
            for (unsigned j = 0; j < 4 && c0 + j < wt; j++)
                acc[j] += tof(n0 > 1 ? in[(size_t)((c0 + j) / w) * rows * w + (c0 + j) % w +
                                          (size_t)r * w]
                                     : p[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) part[threadIdx.y][threadIdx.x][j] = acc[j];
    __syncthreads();
    if (threadIdx.y == 0)
        for (int y = 1; y < 4; y++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[j] += part[y][threadIdx.x][j];
    if (gridDim.y == 1) {
        if (threadIdx.y == 0)
            for (unsigned j = 0; j < 4; j++)
                if (c0 + j < wt) out[c0 + j] = fromf<To>(acc[j]);
        return;
    }
    if (threadIdx.y == 0)
        for (unsigned j = 0; j < 4; j++)
            if (c0 + j < wt) staging[(size_t)blockIdx.y * wt + c0 + j] = acc[j];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0)
        last = atomicAdd(&sema[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    /* The last block sums the staging rows with all its threads, as Reduce.cuh's global_reduce
     * does (is_last_block_done: threadIdx.y steps over ctas_per_output by blockDim.y, each
     * thread's output_vec_size columns loaded together, then block_y_reduce in shared memory);
     * one warp summing every row alone made the sum of a narrow weight's gradient (Qwen3's
     * QK-norm, w = 128: 2112 staging rows) 5-15x the kernel's streaming time. */
    __threadfence();
    float s4[4] = {0, 0, 0, 0};
    bool vec4 = c0 + 4 <= wt && (wt & 3) == 0;
    for (unsigned y = threadIdx.y; y < gridDim.y; y += 4) {
        const float *q = staging + (size_t)y * wt + c0;
        if (vec4) {
            float4 v = __ldcg(reinterpret_cast<const float4 *>(q));
            s4[0] += v.x, s4[1] += v.y, s4[2] += v.z, s4[3] += v.w;
        } else {
            for (unsigned j = 0; j < 4 && c0 + j < wt; j++) s4[j] += __ldcg(q + j);
        }
    }
    __syncthreads(); /* part[] is free again: every thread read its sums of the first pass */
#pragma unroll
    for (int j = 0; j < 4; j++) part[threadIdx.y][threadIdx.x][j] = s4[j];
    __syncthreads();
    if (threadIdx.y != 0) return;
    for (int y = 1; y < 4; y++)
#pragma unroll
        for (int j = 0; j < 4; j++) s4[j] += part[y][threadIdx.x][j];
    for (unsigned j = 0; j < 4 && c0 + j < wt; j++) out[c0 + j] = fromf<To>(s4[j]);
}

/* -- cunn_SoftMaxForward / Backward (log_softmax): a block per row (1024 threads), ILP 4 vector
 * loads; forward: max, sum of exp(x - max), then out = x - max - log(sum); backward: sum of the
 * gradient, then grad_in = grad - exp(out) * sum. */
template <typename Op>
static __device__ float block_reduce(float v, float *smem, Op op, float init)
{
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) smem[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < (int)(blockDim.x >> 5) ? smem[lane] : init;
        for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) smem[32] = v;
    }
    __syncthreads();
    return smem[32];
}

struct op_max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct op_add {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct op_sumexp { /* SumExpFloat */
    float mx;
    __device__ float operator()(float acc, float x) const { return acc + expf(x - mx); }
};

/* f(acc, x) over a row with 4-wide loads where the row is 16-byte aligned */
template <typename F>
static __device__ float row_pass(const float *r, unsigned w, float init, F f)
{
    float acc = init;
    bool vec = ((reinterpret_cast<uintptr_t>(r) & 15) == 0);
    unsigned i = threadIdx.x * 4;
    if (vec) {
        for (; i + 4 <= w; i += blockDim.x * 4) {
            float4 v = *reinterpret_cast<const float4 *>(r + i);
            acc = f(f(f(f(acc, v.x), v.y), v.z), v.w);
        }
        for (unsigned e = (w & ~3u) + threadIdx.x; e < w; e += blockDim.x) acc = f(acc, r[e]);
    } else {
        for (unsigned e = threadIdx.x; e < w; e += blockDim.x) acc = f(acc, r[e]);
    }
    return acc;
}

__global__ void __launch_bounds__(1024)
    ew_softmax_fwd_kernel(float *out, const float *__restrict__ in, unsigned w)
{
    __shared__ float smem[33];
    const float *r = in + (size_t)blockIdx.x * w;
    float *o = out + (size_t)blockIdx.x * w;
    float mx = row_pass(r, w, -INFINITY, op_max());
    mx = block_reduce(mx, smem, op_max(), -INFINITY);
    op_sumexp se_op = {mx};
    float se = row_pass(r, w, 0.0f, se_op);
    se = block_reduce(se, smem, op_add(), 0.0f);
    float sub = mx + logf(se);
    bool vec = ((reinterpret_cast<uintptr_t>(r) & 15) == 0) &&
               ((reinterpret_cast<uintptr_t>(o) & 15) == 0);
    unsigned i = threadIdx.x * 4;
    if (vec) {
        for (; i + 4 <= w; i += blockDim.x * 4) {
            float4 v = *reinterpret_cast<const float4 *>(r + i);
            v.x -= sub, v.y -= sub, v.z -= sub, v.w -= sub;
            *reinterpret_cast<float4 *>(o + i) = v;
        }
        for (unsigned e = (w & ~3u) + threadIdx.x; e < w; e += blockDim.x) o[e] = r[e] - sub;
    } else {
        for (unsigned e = threadIdx.x; e < w; e += blockDim.x) o[e] = r[e] - sub;
    }
}

__global__ void __launch_bounds__(1024)
    ew_softmax_bwd_kernel(float *gin, const float *__restrict__ gout,
                          const float *__restrict__ outp, unsigned w)
{
    __shared__ float smem[33];
    size_t off = (size_t)blockIdx.x * w;
    const float *g = gout + off, *y = outp + off;
    float *d = gin + off;
    float s = row_pass(g, w, 0.0f, op_add());
    s = block_reduce(s, smem, op_add(), 0.0f);
    bool vec = ((reinterpret_cast<uintptr_t>(g) & 15) == 0) &&
               ((reinterpret_cast<uintptr_t>(y) & 15) == 0) &&
               ((reinterpret_cast<uintptr_t>(d) & 15) == 0);
    unsigned i = threadIdx.x * 4;
    if (vec) {
        for (; i + 4 <= w; i += blockDim.x * 4) {
            float4 a = *reinterpret_cast<const float4 *>(g + i);
            float4 b = *reinterpret_cast<const float4 *>(y + i);
            float4 r = {a.x - expf(b.x) * s, a.y - expf(b.y) * s, a.z - expf(b.z) * s,
                        a.w - expf(b.w) * s};
            *reinterpret_cast<float4 *>(d + i) = r;
        }
        for (unsigned e = (w & ~3u) + threadIdx.x; e < w; e += blockDim.x)
            d[e] = g[e] - expf(y[e]) * s;
    } else {
        for (unsigned e = threadIdx.x; e < w; e += blockDim.x) d[e] = g[e] - expf(y[e]) * s;
    }
}

/* -- multi_tensor_apply_kernel with a Copy functor (torch._foreach_copy_): a 512-thread block
 * per 65536-element chunk, ILP 4 (4-element vectors when the chunk's length and both pointers'
 * alignment allow, else element by element), at most 320 blocks per launch, as many launches as
 * that takes. */
template <typename To, typename Ti>
__global__ void __launch_bounds__(512)
    foreach_copy_kernel(To *out, const Ti *__restrict__ in, long long n, long long chunk0)
{
    long long start = (chunk0 + blockIdx.x) * 65536LL;
    long long len = n - start < 65536 ? n - start : 65536;
    const Ti *src = in + start;
    To *dst = out + start;
    bool aligned = (reinterpret_cast<uintptr_t>(src) % (4 * sizeof(Ti))) == 0 &&
                   (reinterpret_cast<uintptr_t>(dst) % (4 * sizeof(To))) == 0;
    if ((len & 3) == 0 && aligned) {
        for (long long i = threadIdx.x; i * 4 < len; i += 512) {
            avec<Ti, 4> v = reinterpret_cast<const avec<Ti, 4> *>(src)[i];
            avec<To, 4> o;
#pragma unroll
            for (int j = 0; j < 4; j++) o.v[j] = fromf<To>(tof(v.v[j]));
            reinterpret_cast<avec<To, 4> *>(dst)[i] = o;
        }
    } else {
        for (long long i = threadIdx.x; i < len; i += 512) dst[i] = fromf<To>(tof(src[i]));
    }
}

/* -- split_with_sizes_copy_out_contiguous_no_cast_kernel (one split): 128-thread blocks, 16
 * bytes per thread (ld.global.nc, st.global.cs), a jagged grid over the chunk and grid rows
 * over the ranks' chunks; unaligned ends byte by byte. */
__global__ void __launch_bounds__(128)
    split_copy_kernel(char *dst, const char *__restrict__ src, long long chunk_bytes,
                      long long src_stride, int nchunks)
{
    long long nthreads = (long long)gridDim.x * blockDim.x;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int c = blockIdx.y; c < nchunks; c += gridDim.y) {
        char *d = dst + c * chunk_bytes;
        const char *s = src + c * src_stride;
        long long off = (16 - (long long)(reinterpret_cast<uintptr_t>(d) & 15)) & 15;
        if (off > chunk_bytes) off = chunk_bytes;
        long long aligned = (chunk_bytes - off) & ~15LL;
        for (long long i = off + t * 16; i < off + aligned; i += nthreads * 16) {
            uint4 v;
            if ((reinterpret_cast<uintptr_t>(s + i) & 15) == 0) {
                v = __ldg(reinterpret_cast<const uint4 *>(s + i));
            } else {
                for (int j = 0; j < 16; j++) reinterpret_cast<char *>(&v)[j] = s[i + j];
            }
            __stcs(reinterpret_cast<uint4 *>(d + i), v);
        }
        if (t < off) d[t] = s[t];
        if (off + aligned + t < chunk_bytes) d[off + aligned + t] = s[off + aligned + t];
    }
}

/* -- chunk_cat_cuda_kernel<float, BFloat16> (one tensor): 128-thread blocks, one per 2048
 * bytes of a rank's fp32 chunk, a grid row per rank; the cast path copies element by element,
 * each thread every (blocks x 128)-th element. */
__global__ void __launch_bounds__(128)
    chunk_cat_kernel(float *dst, const bf16 *__restrict__ src, long long n)
{
    long long nthreads = (long long)gridDim.x * blockDim.x;
    const bf16 *s = src + (long long)blockIdx.y * n;
    float *d = dst + (long long)blockIdx.y * n;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += nthreads)
        d[e] = __bfloat162float(s[e]);
}

/* -- chunk_cat_cuda_kernel<float, float> (fsdp_copies.h rs_copy): no cast, so copy_chunk_with_pad
 * moves 16 bytes a thread, 2048 a block (ATen cuda/TensorShape.cu BLOCK_SIZE, BYTES_PER_THREAD) */
__global__ void __launch_bounds__(128)
    chunk_cat_f32_kernel(float *dst, const float *__restrict__ src, long long n)
{
    const float *s = src + (long long)blockIdx.y * n;
    float *d = dst + (long long)blockIdx.y * n;
    long long e = 4 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
    bool vec = e + 3 < n && (((uintptr_t)(s + e) | (uintptr_t)(d + e)) & 15) == 0;
    if (vec) *reinterpret_cast<float4 *>(d + e) = *reinterpret_cast<const float4 *>(s + e);
    else for (long long k = e; k < e + 4 && k < n; k++) d[k] = s[k];
}

/* ---- launchers ---- */

#define EW_TYPES2(eo, ea, CALL)                                                                \
    do {                                                                                       \
        if ((eo) == 2 && (ea) == 2) { typedef bf16 To; typedef bf16 Ta; CALL; }                \
        else if ((eo) == 4 && (ea) == 4) { typedef float To; typedef float Ta; CALL; }         \
        else if ((eo) == 2 && (ea) == 4) { typedef bf16 To; typedef float Ta; CALL; }          \
        else if ((eo) == 4 && (ea) == 2) { typedef float To; typedef bf16 Ta; CALL; }          \
        else return (int)cudaErrorInvalidValue;                                                \
    } while (0)

static int launch_vectorized(const bkk_ew *e, void *out, const void *a, const void *b,
                             cudaStream_t st)
{
    long long n = e->n[0] * e->n[1] * e->n[2];
    int eo = e->esize[0], ea = e->esize[1], eb = e->esize[2];
    int nin = (ea ? 1 : 0) + (eb ? 1 : 0);
    int emin = eo;
    if (ea && ea < emin) emin = ea;
    if (eb && eb < emin) emin = eb;
    if (n <= 0) return 0;
    if (nin == 2 && ea != eb) return (int)cudaErrorInvalidValue;
    /* memory::can_vectorize_up_to: every operand aligned to a whole vector, else the unrolled
     * kernel (vec size 1) */
    int vec = 16 / emin;
    bool aligned = (uintptr_t)out % (size_t)(vec * eo) == 0 &&
                   (!ea || (uintptr_t)a % (size_t)(vec * ea) == 0) &&
                   (!eb || (uintptr_t)b % (size_t)(vec * eb) == 0);
    if (!aligned) {
        ew_unrolled_kernel<<<(unsigned)((n + 511) / 512), 128, 0, st>>>(
            (char *)out, (const char *)a, (const char *)b, eo, ea, eb, nin, n);
        return (int)cudaGetLastError();
    }
#define VLAUNCH(To, Ta, NIN, VEC)                                                              \
    ew_vectorized_kernel<To, Ta, Ta, NIN, VEC>                                                 \
        <<<(unsigned)((n + 128 * VEC - 1) / (128 * VEC)), 128, 0, st>>>(                       \
            (To *)out, (const Ta *)a, (const Ta *)b, n)
    if (nin == 0) {
        if (eo == 2) VLAUNCH(bf16, bf16, 0, 8);
        else if (eo == 4) VLAUNCH(float, float, 0, 4);
        else return (int)cudaErrorInvalidValue;
    } else if (emin == 2) {
        if (nin == 1) EW_TYPES2(eo, ea, VLAUNCH(To, Ta, 1, 8));
        else EW_TYPES2(eo, ea, VLAUNCH(To, Ta, 2, 8));
    } else {
        if (nin == 1) EW_TYPES2(eo, ea, VLAUNCH(To, Ta, 1, 4));
        else EW_TYPES2(eo, ea, VLAUNCH(To, Ta, 2, 4));
    }
#undef VLAUNCH
    return (int)cudaGetLastError();
}

/* TensorIterator's dimension coalescing: drop size-1 dimensions, merge neighbours whose strides
 * line up for every operand; out: sizes and element strides innermost first. */
static int coalesce(const bkk_ew *e, long long size[3], long long st[3][3])
{
    int nd = 0;
    for (int d = 2; d >= 0; d--) { /* innermost first */
        if (e->n[d] == 1) continue;
        if (nd > 0) {
            bool merge = true;
            for (int k = 0; k < 3; k++)
                if (e->esize[k] && e->stride[k][d] != st[nd - 1][k] * size[nd - 1]) merge = false;
            if (merge) {
                size[nd - 1] *= e->n[d];
                continue;
            }
        }
        size[nd] = e->n[d];
        for (int k = 0; k < 3; k++) st[nd][k] = e->esize[k] ? e->stride[k][d] : 0;
        nd++;
    }
    if (nd == 0) {
        size[0] = 1;
        for (int k = 0; k < 3; k++) st[0][k] = 0;
        nd = 1;
    }
    return nd;
}

template <int VT, typename To, typename Ta, int NIN, typename Tb = Ta>
static void offsets_go(int N, const offset_calc &oc, char *out, const char *a, const char *b,
                       cudaStream_t st)
{
    ew_offsets_kernel<VT, To, Ta, Tb, NIN><<<(N + 128 * VT - 1) / (128 * VT), 128, 0, st>>>(
        N, oc, out, a, b);
}

/* One launch over dims[0..nd) (innermost first); iterations of more than 2^31 elements or
 * 2^32 bytes of any operand are split along the outermost dimension, as TensorIterator's
 * with_32bit_indexing splits them. */
static int launch_offsets_dims(const bkk_ew *e, int nd, long long size[3], long long st[3][3],
                               char *out, const char *a, const char *b, cudaStream_t stream)
{
    long long N = 1, span[3] = {1, 1, 1};
    for (int d = 0; d < nd; d++) {
        N *= size[d];
        for (int k = 0; k < 3; k++) span[k] += (size[d] - 1) * st[d][k];
    }
    bool big = N >= (1LL << 31);
    for (int k = 0; k < 3; k++)
        if (span[k] * (e->esize[k] ? e->esize[k] : 1) >= (1LL << 32)) big = true;
    if (big && size[nd - 1] > 1) {
        long long half = size[nd - 1] / 2, sz2[3] = {size[0], size[1], size[2]};
        sz2[nd - 1] = half;
        int r = launch_offsets_dims(e, nd, sz2, st, out, a, b, stream);
        if (r) return r;
        sz2[nd - 1] = size[nd - 1] - half;
        long long o0 = half * st[nd - 1][0] * e->esize[0], o1 = half * st[nd - 1][1] * e->esize[1],
                  o2 = half * st[nd - 1][2] * e->esize[2];
        return launch_offsets_dims(e, nd, sz2, st, out + o0, a ? a + o1 : a, b ? b + o2 : b,
                                   stream);
    }
    if (big) return (int)cudaErrorInvalidValue;
    offset_calc oc;
    memset(&oc, 0, sizeof oc);
    oc.dims = nd;
    for (int d = 0; d < nd; d++) {
        oc.size[d] = make_divider((unsigned)size[d]);
        for (int k = 0; k < 3; k++) oc.stride[d][k] = (unsigned)(st[d][k] * e->esize[k]);
    }
    int eo = e->esize[0], ea = e->esize[1], eb = e->esize[2];
    int nin = (ea ? 1 : 0) + (eb ? 1 : 0);
    /* operands of two dtypes (an fp32 accumulator plus a bf16 tensor: PyTorch's ring attention
     * adds each step's bf16 dK/dV half into its fp32 buffer, cp_ring_torch.c cp.dkv.add_half):
     * TensorIterator's dynamic-cast path reads each in its own dtype, unroll 4 */
    if (nin == 2 && ea != eb) {
        if (eo == 4 && ea == 4 && eb == 2) offsets_go<4, float, float, 2, bf16>((int)N, oc, out, a, b, stream);
        else if (eo == 2 && ea == 2 && eb == 4) offsets_go<4, bf16, bf16, 2, float>((int)N, oc, out, a, b, stream);
        else return (int)cudaErrorInvalidValue;
        return (int)cudaGetLastError();
    }
    bool nocast = nin == 0 || ea == eo;
    /* gpu_kernel_impl_nocast: unroll 4 for results under 4 bytes, 2 otherwise; with a cast
     * (gpu_kernel_impl) 4 */
#define OGO(To, Ta, NIN)                                                                       \
    do {                                                                                       \
        if (nocast && sizeof(To) >= 4) offsets_go<2, To, Ta, NIN>((int)N, oc, out, a, b, stream); \
        else offsets_go<4, To, Ta, NIN>((int)N, oc, out, a, b, stream);                        \
    } while (0)
    if (nin == 0) {
        if (eo == 2) OGO(bf16, bf16, 0);
        else if (eo == 4) OGO(float, float, 0);
        else return (int)cudaErrorInvalidValue;
    } else if (nin == 1) {
        EW_TYPES2(eo, ea, OGO(To, Ta, 1));
    } else {
        EW_TYPES2(eo, ea, OGO(To, Ta, 2));
    }
#undef OGO
    return (int)cudaGetLastError();
}

size_t bkk_ew_workspace_bytes(const bkk_ew *e, int sms)
{
    if (e->pattern != BKK_EW_REDUCE_COL) return 0;
    unsigned gx, gy;
    col_grid(e->n[1], e->n[0] * e->n[2], sms, &gx, &gy);
    if (gy <= 1) return 0;
    size_t staging = ((size_t)gy * e->n[0] * e->n[2] * 4 + 255) & ~(size_t)255;
    return staging + (size_t)gx * 4;
}

int bkk_ew_launch(const bkk_ew *e, void *out, const void *a, const void *b, void *ws, int sms,
                  void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    int eo = e->esize[0], ea = e->esize[1];
    long long rows = e->n[1], w = e->n[2];
    switch (e->pattern) {
    case BKK_EW_VECTORIZED: return launch_vectorized(e, out, a, b, st);
    case BKK_EW_UNROLLED: {
        long long n = e->n[0] * e->n[1] * e->n[2];
        if (n <= 0) return 0;
        int nin = (ea ? 1 : 0) + (e->esize[2] ? 1 : 0);
        ew_unrolled_kernel<<<(unsigned)((n + 511) / 512), 128, 0, st>>>(
            (char *)out, (const char *)a, (const char *)b, eo, ea, e->esize[2], nin, n);
        return (int)cudaGetLastError();
    }
    case BKK_EW_OFFSETS: {
        long long size[3], stv[3][3];
        int nd = coalesce(e, size, stv);
        return launch_offsets_dims(e, nd, size, stv, (char *)out, (const char *)a,
                                   (const char *)b, st);
    }
    case BKK_EW_CAT: {
        cat_meta m;
        for (int d = 0; d < 3; d++) {
            m.n[d] = (unsigned)e->n[d];
            m.ost[d] = (unsigned)e->stride[0][d];
            m.ist[0][d] = (unsigned)e->stride[1][d];
            m.ist[1][d] = (unsigned)e->stride[2][d];
        }
        dim3 grid((unsigned)(2 * (sms > 0 ? sms : 132)), 2);
        if (eo == 2)
            ew_cat_kernel<uint16_t><<<grid, 512, 0, st>>>(
                (uint16_t *)out, (const uint16_t *)a, (const uint16_t *)b, m);
        else if (eo == 4)
            ew_cat_kernel<uint32_t><<<grid, 512, 0, st>>>(
                (uint32_t *)out, (const uint32_t *)a, (const uint32_t *)b, m);
        else return (int)cudaErrorInvalidValue;
        return (int)cudaGetLastError();
    }
    case BKK_EW_REDUCE_ROW: {
        dim3 block(32, 16);
        unsigned grid = (unsigned)((rows + 15) / 16);
        EW_TYPES2(eo, ea, (ew_reduce_row_kernel<To, Ta><<<grid, block, 0, st>>>(
                              (To *)out, (const Ta *)a, (unsigned)rows, (unsigned)w)));
        return (int)cudaGetLastError();
    }
    case BKK_EW_REDUCE_COL: {
        unsigned gx, gy;
        long long n0 = e->n[0] > 1 ? e->n[0] : 1;
        col_grid(rows, n0 * w, sms, &gx, &gy);
        float *staging = (float *)ws;
        unsigned *sema = NULL;
        if (gy > 1) {
            if (!ws) return (int)cudaErrorInvalidValue;
            size_t sb = ((size_t)gy * n0 * w * 4 + 255) & ~(size_t)255;
            sema = (unsigned *)((char *)ws + sb);
            cudaError_t r = cudaMemsetAsync(sema, 0, (size_t)gx * 4, st);
            if (r != cudaSuccess) return (int)r;
        }
        dim3 block(32, 4), grid(gx, gy);
        EW_TYPES2(eo, ea,
                  (ew_reduce_col_kernel<To, Ta><<<grid, block, 0, st>>>(
                      (To *)out, (const Ta *)a, (unsigned)rows, (unsigned)w, staging, sema,
                      (unsigned)n0)));
        return (int)cudaGetLastError();
    }
    case BKK_EW_SOFTMAX_FWD:
        if (eo != 4 || ea != 4) return (int)cudaErrorInvalidValue;
        ew_softmax_fwd_kernel<<<(unsigned)rows, 1024, 0, st>>>((float *)out, (const float *)a,
                                                              (unsigned)w);
        return (int)cudaGetLastError();
    case BKK_EW_SOFTMAX_BWD:
        if (eo != 4 || ea != 4 || e->esize[2] != 4) return (int)cudaErrorInvalidValue;
        ew_softmax_bwd_kernel<<<(unsigned)rows, 1024, 0, st>>>(
            (float *)out, (const float *)a, (const float *)b, (unsigned)w);
        return (int)cudaGetLastError();
    case BKK_EW_FOREACH_COPY: {
        long long n = e->n[0] * e->n[1] * e->n[2];
        long long chunks = (n + 65535) / 65536;
        for (long long c = 0; c < chunks; c += 320) {
            unsigned blocks = (unsigned)(chunks - c < 320 ? chunks - c : 320);
            EW_TYPES2(eo, ea, (foreach_copy_kernel<To, Ta><<<blocks, 512, 0, st>>>(
                                  (To *)out, (const Ta *)a, n, c)));
            cudaError_t r = cudaGetLastError();
            if (r != cudaSuccess) return (int)r;
        }
        return 0;
    }
    case BKK_EW_SPLIT_COPY: {
        if (eo != ea) return (int)cudaErrorInvalidValue;
        long long nchunks = rows, cb = w * eo;
        if (nchunks <= 0 || cb <= 0) return 0;
        /* split_with_sizes_copy_out_cuda_contiguous_no_cast's grid: at most 2 x the SMs'
         * resident 128-thread blocks; the iteration factor spread over chunks per block and
         * iterations per chunk */
        long long num_blocks = (cb + 2047) / 2048;
        long long max_blocks = (long long)(sms > 0 ? sms : 132) * (2048 / 128) * 2;
        long long iter = (num_blocks * nchunks + max_blocks - 1) / max_blocks;
        long long cpb = (long long)ceil(sqrt((double)iter));
        if (cpb > nchunks) cpb = nchunks;
        if (cpb < 1) cpb = 1;
        long long ipc = (iter + cpb - 1) / cpb;
        if (ipc < 1) ipc = 1;
        long long bx = (cb + 2048 * ipc - 1) / (2048 * ipc);
        dim3 grid((unsigned)bx, (unsigned)(nchunks / cpb));
        split_copy_kernel<<<grid, 128, 0, st>>>((char *)out, (const char *)a, cb, cb, (int)nchunks);
        return (int)cudaGetLastError();
    }
    case BKK_EW_CHUNK_CAT: {
        if (eo != 4 || (ea != 2 && ea != 4)) return (int)cudaErrorInvalidValue;
        if (rows <= 0 || w <= 0) return 0;
        dim3 grid((unsigned)((w * 4 + 2047) / 2048), (unsigned)rows);
        if (ea == 4) chunk_cat_f32_kernel<<<grid, 128, 0, st>>>((float *)out, (const float *)a, w);
        else chunk_cat_kernel<<<grid, 128, 0, st>>>((float *)out, (const bf16 *)a, w);
        return (int)cudaGetLastError();
    }
    case BKK_EW_INDEX_ACCUM: return bkk_index_accum_launch(e, out, a, st);
    }
    return (int)cudaErrorInvalidValue;
}
