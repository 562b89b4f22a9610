/*
 * kernels_cast.cuh — bf16 / fp32 element conversions the eager kernels share (kernels_ew.cu,
 * kernels_index.cu): arithmetic in fp32, stored in the operand's type.
 */
#ifndef PLAN_KERNELS_CAST_CUH
#define PLAN_KERNELS_CAST_CUH

#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

static __device__ __forceinline__ float tof(float x) { return x; }
static __device__ __forceinline__ float tof(bf16 x) { return __bfloat162float(x); }
template <typename T> static __device__ __forceinline__ T fromf(float x);
template <> __device__ __forceinline__ float fromf<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 fromf<bf16>(float x) { return __float2bfloat16(x); }

#endif
