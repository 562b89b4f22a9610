/*
 * calib.h — what `plan calibrate` measures and how its rows are written, without CUDA: the
 * operation list (--ops), the GEMM shapes the plans use, the message sizes, and the CSV schema
 * (libcsv). Kept apart from the CUDA code so the schema and the sweep are tested on any machine.
 */
#ifndef PLAN_BACKEND_CALIB_H
#define PLAN_BACKEND_CALIB_H

#include <stddef.h>
#include <stdio.h>

#include "collective.h"
#include "model.h"
#include "status.h"

/* Operation mask: bit 0 bf16 GEMMs, bit 1 + collective_op for each collective, then FP8 GEMMs
 * (e4m3 with per-tensor scales, issue 16; their CSV rows have op "gemm_fp8"), then blockwise FP8
 * GEMMs (DeepSeek-V3's 1x128 activation by 128x128 weight scales; op "gemm_fp8_blockwise"). */
#define CALIB_GEMM 1u
#define CALIB_COLL(op) (1u << (1 + (int)(op)))
#define CALIB_GEMM_FP8 (1u << (1 + COLL_COUNT))
#define CALIB_GEMM_FP8_BLOCK (1u << (2 + COLL_COUNT))
#define CALIB_GEMMS (CALIB_GEMM | CALIB_GEMM_FP8 | CALIB_GEMM_FP8_BLOCK)
#define CALIB_ALL (CALIB_GEMMS | ((1u << (1 + COLL_COUNT)) - 2u))

/* "gemm,gemm_fp8,gemm_fp8_blockwise,all_reduce,..." (also "allreduce", "all", "collectives")
 * into a mask. */
cm_status calib_parse_ops(const char *list, unsigned *mask, char *err, size_t errlen);

typedef struct {
    char name[48];   /* "qkv.tp2", "square" */
    long m, n, k;    /* C[m,n] = A[m,k] B[n,k]^T (the forward form of work.h) */
} calib_shape;

/* The projection and MLP GEMMs of model m for `tokens` rows (QKV, attention out, MLP up and
 * down) at every TP size of 1, 2, 4, 8 that divides heads and KV heads, then 8192^3.
 * Returns the count (at most max). */
int calib_gemm_shapes(const model_spec *m, long tokens, calib_shape *out, int max);

/* Message sizes from 1 KiB to max_bytes, x4 apart (nccl-tests -f 4), and max_bytes itself. */
int calib_sizes(size_t max_bytes, size_t *out, int max);

typedef struct {
    const char *op;        /* "gemm", "gemm_fp8", "gemm_fp8_blockwise" or the collective's
                              name (collective.h) */
    const char *dtype;     /* "bf16"; "e4m3" for gemm_fp8 and gemm_fp8_blockwise (bf16 result) */
    const char *name;      /* GEMM shape name, "" for collectives */
    long m, n, k;          /* GEMM shape, 0 for collectives */
    double bytes;          /* collective size (nccl-tests), GEMM operand+result bytes */
    int group_size;        /* 1 for GEMMs */
    const char *span;      /* "intra" (one node) or "inter" */
    double time_s;
    double algbw_bytes_per_s;
    double busbw_bytes_per_s;
    double tflops;         /* GEMMs: TFLOP/s; 0 for collectives */
    double check_error;    /* GEMM: relative error vs reference; collective: wrong elements */
    double spread;         /* (max - min) / median of the repeats */
} calib_row;

extern const char *const calib_csv_columns[];
extern const int calib_csv_ncolumns;

/* Header and rows through libcsv's csv_fwrite (every field quoted). Return 0 or -1. */
int calib_csv_header(FILE *f);
int calib_csv_row(FILE *f, const calib_row *r);

#endif
