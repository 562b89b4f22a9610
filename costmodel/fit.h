/*
 * fit.h — turns measurements into calibration terms (issue 4), with GSL:
 *  - GEMMs: the roofline of compute.c, t = max(2mnk / (peak e), bytes / (HBM h)) + o, fitted for
 *    the achieved efficiency e and the fixed cost o by nonlinear least squares on relative
 *    residuals (gsl_multifit_nlinear, trust region), covariance from the Jacobian; bf16, and FP8
 *    against the FP8 peak, whose ratio of efficiencies is precision.h's GEMM ratio;
 *  - collectives: per operation, group size and span, t = alpha + bytes * bus_factor / busbw,
 *    a weighted linear fit (gsl_multifit_wlinear, weights 1/t^2 = relative residuals), alpha and
 *    1/busbw with their covariance.
 * Callers own all memory; nothing here prints.
 */
#ifndef PLAN_FIT_H
#define PLAN_FIT_H

#include "collective.h"
#include "system.h"

typedef struct {
    double m, n, k;
    double time_s;
} fit_gemm_obs;

typedef struct {
    double efficiency, efficiency_sd;
    double overhead_s, overhead_sd;
    double rms_rel_residual;
    int points;
} fit_gemm_result;

cm_status fit_gemm(const system_spec *sys, const fit_gemm_obs *obs, int n, fit_gemm_result *out,
                   char *err, size_t errlen);

/* The same roofline for FP8 GEMMs (plan calibrate's gemm_fp8 rows: e4m3 operands, bf16 result):
 * compute_gemm_lp_s against peak_fp8_flops with one-byte operands, the efficiency (the achieved
 * fraction of the FP8 peak, issue 16) alone, with the fixed cost held at overhead_s: the cost
 * model prices FP8 GEMMs with the one gemm_overhead_s (compute_gemm_lp_s), so the bf16 fit's
 * fixed cost of the same run is the one to pass. */
cm_status fit_gemm_fp8(const system_spec *sys, const fit_gemm_obs *obs, int n,
                       double overhead_s, fit_gemm_result *out, char *err, size_t errlen);

/* The FP8 GEMM efficiency ratio of precision.h (the FP8 fraction of its peak over the bf16
 * fraction of its peak, both fitted on one run's shapes) onto sys, with its propagated sd. */
void fit_apply_fp8_ratio(system_spec *sys, const fit_gemm_result *bf16,
                         const fit_gemm_result *fp8);

/* The same ratio for blockwise FP8 GEMMs (gemm_fp8_blockwise rows fitted with fit_gemm_fp8:
 * their fp32 block scales are under 1% of the operand bytes) onto
 * sys->fp8_blockwise_gemm_ratio. */
void fit_apply_fp8_blockwise_ratio(system_spec *sys, const fit_gemm_result *bf16,
                                   const fit_gemm_result *blk);

/* The same ratios shape by shape (fp8_shape.h) onto sys->fp8_gemm_shapes, replacing what it
 * held: for each m x n x k with bf16 rows and FP8 (or blockwise) rows, (median bf16 time /
 * median FP8 time) x (peak_bf16 / peak_fp8); blk may be NULL (nblk 0). The number of shapes
 * kept (at most FP8_SHAPE_MAX_POINTS, in the order of the FP8 rows). */
int fit_apply_fp8_shapes(system_spec *sys, const fit_gemm_obs *bf16, int nbf16,
                         const fit_gemm_obs *fp8, int nfp8, const fit_gemm_obs *blk, int nblk);

typedef struct {
    double bytes;
    double time_s;
} fit_collective_obs;

/* Fit one operation on one group (size, span) from its sizes; needs >= 3 distinct sizes. */
cm_status fit_collective(collective_op op, int group_size, bool spans_nodes,
                         const fit_collective_obs *obs, int n, system_collective_fit *out,
                         char *err, size_t errlen);

/* Apply fits to a system: GEMM efficiency/overhead (and its sd) and collective fits. */
void fit_apply_gemm(system_spec *sys, const fit_gemm_result *g);
cm_status fit_apply_collective(system_spec *sys, const system_collective_fit *f, char *err,
                               size_t errlen);

#endif
