/*
 * calib_csv.h — reads a `plan calibrate` CSV (one row per measurement: op, m, n, k, bytes,
 * group_size, span, time_s, ...) into the observations `plan fit` fits: the GEMM shapes (bf16
 * and FP8 apart), and the
 * message sizes of each collective per (op, group size, span). Moved out of cmd_fit.c so the
 * fuzz harness reads it as `plan fit` does.
 *
 * Every number is parsed strictly (cli_number.h): a cell that is not a finite number (NaN,
 * "inf", 1e400, "12abc") is an error naming the line and the column, never a NaN fit written
 * with exit 0 (issue 18). The file is opened through input_file.h (regular files only, at most
 * INPUT_FILE_CSV_MAX_BYTES).
 */
#ifndef PLAN_CALIB_CSV_H
#define PLAN_CALIB_CSV_H

#include <stddef.h>

#include "fit.h"

#define CALIB_CSV_MAX_GROUPS 64 /* distinct (op, group size, span) */

typedef struct {
    int op;            /* collective_op */
    int group_size;
    int spans_nodes;
    fit_collective_obs *obs;
    int n, cap;
} calib_csv_collective;

typedef struct {
    fit_gemm_obs *gemm;        /* op "gemm": bf16 */
    int ngemm, capgemm;
    fit_gemm_obs *gemm_fp8;    /* op "gemm_fp8": e4m3 operands, bf16 result (issue 16) */
    int ngemm_fp8, capgemm_fp8;
    fit_gemm_obs *gemm_fp8_block; /* op "gemm_fp8_blockwise": 1x128 by 128x128 block scales */
    int ngemm_fp8_block, capgemm_fp8_block;
    calib_csv_collective colls[CALIB_CSV_MAX_GROUPS];
    int ncolls;
} calib_csv;

/* Reads path into *out (zeroed first; release with calib_csv_free, also after an error). */
cm_status calib_csv_read(const char *path, calib_csv *out, char *err, size_t errlen);

void calib_csv_free(calib_csv *c);

#endif
