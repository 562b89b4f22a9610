/*
 * fp8_shape.h — the FP8 GEMM's efficiency ratio by GEMM shape, from measured points.
 *
 * One ratio per GPU (precision.h: FP8's achieved fraction of the FP8 peak over bf16's of the
 * bf16 peak, fitted over all measured shapes by plan fit) is right for large GEMMs and wrong for
 * small ones: FP8 halves the operands' math time but not the bf16 result's write or a kernel's
 * fixed costs, so its speedup over bf16 falls with the GEMM (H100, plan calibrate at
 * Llama-3.1-8B's shapes: 1.97x at 4096x4096x14336, 1.06x at 4096x4096x512;
 * bench/results/fp8h200_2026-11-27). A calibration profile may carry the measured points
 * ("calibration"."fp8_gemm_shapes", written by plan fit from plan calibrate's gemm, gemm_fp8 and
 * gemm_fp8_blockwise rows of the same run); an FP8 GEMM then takes the ratio of the measured
 * shape nearest its own. Without points the single ratio stands.
 *
 * Per point: ratio = (bf16 time / FP8 time) x (bf16 peak / FP8 peak), each time the median over
 * the CSV's rows of that shape (its rounds): the same quantity as the fitted single ratio, at one
 * shape, so compute_gemm_lp_s prices the FP8 GEMM at the measured speedup over the modelled bf16
 * GEMM of that shape (at compute-bound shapes, fixed cost aside).
 *
 * Nearest: the smallest Euclidean distance in (log2 m, log2 n, log2 k), with m and n taken in
 * either order (y = x W^T and its transpose are one GEMM to cuBLAS: the same tiles over the
 * output, the same K loop), ties to the earlier point. Shapes beyond the measured ones take the
 * nearest edge point.
 */
#ifndef PLAN_FP8_SHAPE_H
#define PLAN_FP8_SHAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

#define FP8_SHAPE_MAX_POINTS 128

typedef struct {
    double m, n, k;
    double ratio;           /* per-tensor scaled e4m3 (0: not measured at this shape) */
    double blockwise_ratio; /* 1x128 by 128x128 block scales (0: not measured) */
} fp8_shape_point;

typedef struct {
    int n;
    fp8_shape_point p[FP8_SHAPE_MAX_POINTS];
} fp8_shape_table;

struct json_t;

/* Read "fp8_gemm_shapes": {"points": [[m, n, k, ratio, blockwise_ratio], ...]} (blockwise_ratio
 * may be null; a ratio 0 or null: not measured). NULL section: an empty table. */
cm_status fp8_shape_from_json(const struct json_t *section, const char *path, fp8_shape_table *t,
                              char *err, size_t errlen);

/* The section fp8_shape_from_json reads (a new reference), or NULL for an empty table. */
struct json_t *fp8_shape_to_json(const fp8_shape_table *t);

/* Add one measured shape (its ratios 0 where not measured); false when the table is full. */
bool fp8_shape_add(fp8_shape_table *t, double m, double n, double k, double ratio,
                   double blockwise_ratio);

/* The ratio (blockwise or per-tensor) of the measured shape nearest m x n x k among the points
 * that have one; false when none has. */
bool fp8_shape_ratio(const fp8_shape_table *t, bool blockwise, double m, double n, double k,
                     double *ratio);

#endif
