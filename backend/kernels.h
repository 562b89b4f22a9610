/*
 * kernels.h — C interface of kernels.cu and kernels_ew.cu. Streams are passed as void * (a
 * cudaStream_t) so that this header needs no CUDA include; each function returns the
 * cudaError_t of its launch.
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
int bkk_adam(float *p, const float *g, float *m, float *v, void *bf16_out, size_t n, int sms,
             void *stream);
int bkk_ref_gemm(int form, int m, int n, int k, int batch, const void *A, const void *B, float *C,
                 void *stream);
int bkk_bf16_to_f32(const void *in, float *out, size_t n, void *stream);
/* FP8 (e4m3): random fill (uniform in [-amp, amp], never zero), dequantizing cast to bf16
 * (out = in * scale), and rows[] of the forward product C = scale * A B^T in fp32 (A m x k,
 * B n x k, row-major e4m3; out nrows x n). */
int bkk_fill_e4m3(void *p, size_t n, uint32_t seed, float amp, void *stream);
int bkk_e4m3_to_bf16(const void *in, void *out, size_t n, float scale, void *stream);
int bkk_ref_rows_e4m3(int n, int k, const void *A, const void *B, const int *rows, int nrows,
                      float scale, float *out, void *stream);
/* Blockwise FP8: random powers of two in [1/4, 4] (block scales; exact products), and rows[] of
 * C = A B^T with A's scales per 1x128 block (sa, bk_block_scale_floats' VEC128 layout, leading
 * dimension roundup(m, 4)) and B's per 128x128 block (b_blk, leading dimension
 * roundup(ceil(k/128), 4)) or per 1x128 block (leading dimension roundup(n, 4)). */
int bkk_fill_pow2(float *p, size_t n, uint32_t seed, void *stream);
/* The host-ahead gate of bk_timing.c: a one-thread kernel that holds its stream until the host
 * sets gate[0] (mapped host memory, device-visible), or timeout_s passes (then gate[1] = 1). */
int bkk_gate(volatile uint32_t *gate, double timeout_s, void *stream);
int bkk_ref_rows_e4m3_block(int m, int n, int k, const void *A, const void *B, const int *rows,
                            int nrows, const float *sa, const float *sb, int b_blk, float *out,
                            void *stream);

/* An eager PyTorch kernel (costmodel/elementwise.h's ew_access, field for field; the patterns in
 * ew_pattern's order), run the way PyTorch's kernel of that pattern runs. Operands: out, a, b
 * (bf16 for element size 2, fp32 for 4). Binary kernels compute a * b, unary ones a (with the
 * cast), output-only ones write zeros; reductions sum; softmax is log_softmax and its backward
 * (a = gradient, b = output); the FSDP2 copies copy (with the cast); the index accumulation
 * sums each destination row's run of source rows in order. */
enum {
    BKK_EW_VECTORIZED = 0, BKK_EW_UNROLLED, BKK_EW_OFFSETS, BKK_EW_CAT, BKK_EW_REDUCE_ROW,
    BKK_EW_REDUCE_COL, BKK_EW_SOFTMAX_FWD, BKK_EW_SOFTMAX_BWD, BKK_EW_FOREACH_COPY,
    BKK_EW_SPLIT_COPY, BKK_EW_CHUNK_CAT, BKK_EW_INDEX_ACCUM, BKK_EW_COUNT
};

typedef struct {
    int pattern;
    int esize[3];
    long long n[3];
    long long stride[3][3];
} bkk_ew;

/* Device scratch a launch needs (column reductions: staging and semaphores), bytes. */
size_t bkk_ew_workspace_bytes(const bkk_ew *e, int sms);
/* ws: bkk_ew_workspace_bytes of device memory (NULL when 0). */
int bkk_ew_launch(const bkk_ew *e, void *out, const void *a, const void *b, void *ws, int sms,
                  void *stream);
/* BKK_EW_INDEX_ACCUM's launch (kernels_index.cu): out [n[1], n[2]], a [n[1] x n[0], n[2]]. */
int bkk_index_accum_launch(const bkk_ew *e, void *out, const void *a, void *stream);

#ifdef __cplusplus
}
#endif

#endif
