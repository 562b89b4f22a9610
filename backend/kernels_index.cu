/*
 * kernels_index.cu — the backend's run of PyTorch's indexing_backward_kernel (elementwise.h
 * EW_INDEX_ACCUM: index_put_ with accumulate over runs of duplicate indices, the backward of
 * GPT-OSS's expert-bias gathers, hf_experts.h), kept apart from kernels_ew.cu for its length.
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "kernels_cast.cuh"


/* -- indexing_backward_kernel (index_put_ with accumulate over sorted indices; elementwise.h
 * EW_INDEX_ACCUM): a warp per destination row and 128-feature slice (32 lanes x 4) walks the
 * row's run of n[0] source rows in order, each step reading the source row and reading, adding
 * and writing the destination row through memory (volatile: the step's read cannot be served
 * from the register the previous step wrote), as ATen cuda/Indexing.cu's kernel does for a run
 * of duplicate indices. The first step writes the source value (the destination's zeros are
 * their own kernel). */
template <typename T, typename U>
static __global__ void __launch_bounds__(32)
    index_accum_kernel(U *out, const T *__restrict__ src, long long run, long long w)
{
    long long r = blockIdx.x, f0 = (long long)blockIdx.y * 128 + threadIdx.x;
    volatile U *o = out + r * w;
    for (long long c = 0; c < run; c++) {
        const T *g = src + (r * run + c) * w;
#pragma unroll
        for (int ii = 0; ii < 4; ii++) {
            long long f = f0 + ii * 32;
            if (f >= w) continue;
            U prev = o[f];
            T pv;
            memcpy(&pv, &prev, sizeof pv);
            T nv = fromf<T>((c ? tof(pv) : 0.0f) + tof(g[f]));
            U nu;
            memcpy(&nu, &nv, sizeof nu);
            o[f] = nu;
        }
    }
}

int bkk_index_accum_launch(const bkk_ew *e, void *out, const void *a, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    long long run = e->n[0], rows = e->n[1], w = e->n[2];
    int eo = e->esize[0];
    if (rows <= 0 || w <= 0 || run <= 0) return 0;
    if (eo != e->esize[1]) return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)rows, (unsigned)((w + 127) / 128));
    if (eo == 2)
        index_accum_kernel<bf16, uint16_t><<<grid, 32, 0, st>>>((uint16_t *)out, (const bf16 *)a,
                                                                 run, w);
    else if (eo == 4)
        index_accum_kernel<float, uint32_t><<<grid, 32, 0, st>>>((uint32_t *)out,
                                                                  (const float *)a, run, w);
    else return (int)cudaErrorInvalidValue;
    return (int)cudaGetLastError();
}
