/*
 * kernels.h — C interface of kernels.cu. Streams are passed as void * (a cudaStream_t) so that
 * this header needs no CUDA include; each function returns the cudaError_t of its launch.
 */
#ifndef PLAN_BACKEND_KERNELS_H
#define PLAN_BACKEND_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Op codes of the collective checker; the same order as collective_op (collective.h). */
enum { BKK_OP_ALL_REDUCE = 0, BKK_OP_ALL_GATHER, BKK_OP_REDUCE_SCATTER, BKK_OP_ALL_TO_ALL,
       BKK_OP_SEND_RECV };

int bkk_fill_bf16(void *p, size_t n, uint32_t seed, float lo, float hi, void *stream);
int bkk_fill_pattern_bf16(void *p, size_t n, size_t offset, int rank, void *stream);
int bkk_check(const void *p, size_t n, int op, int rank, int g, size_t cnt,
              unsigned long long *dev_bad, void *stream);
int bkk_stream_copy(void *dst, const void *src, size_t bytes, int sms, void *stream);
int bkk_adam(float *p, const float *g, float *m, float *v, void *bf16_out, size_t n, int sms,
             void *stream);
int bkk_ref_gemm(int form, int m, int n, int k, int batch, const void *A, const void *B, float *C,
                 void *stream);
int bkk_bf16_to_f32(const void *in, float *out, size_t n, void *stream);
int bkk_f32_to_bf16(const float *in, void *out, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
