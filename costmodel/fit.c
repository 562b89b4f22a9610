/*
 * fit.c — GSL least-squares fits of the GEMM roofline and of alpha-beta collectives
 * (see fit.h). Residuals are relative, so a 10 us kernel and a 10 ms kernel weigh the same.
 */
#include "fit.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "compute.h"

typedef struct {
    const system_spec *sys;
    const fit_gemm_obs *obs;
    bool lp;              /* low precision: compute_gemm_lp_s against peak_flops */
    double peak_flops, operand_bytes;
    size_t p;             /* parameters: 2 (efficiency, overhead), or 1 with the overhead
                             fixed at fixed_overhead_s */
    double fixed_overhead_s;
} gemm_data;

/* x = (efficiency, overhead in microseconds): scaled so both are O(1) for the solver. */
static int gemm_residuals(const gsl_vector *x, void *data, gsl_vector *f)
{
    const gemm_data *d = data;
    system_spec s = *d->sys;
    s.gemm_efficiency_max = gsl_vector_get(x, 0);
    s.gemm_overhead_s = d->p == 2 ? gsl_vector_get(x, 1) * 1e-6 : d->fixed_overhead_s;
    if (s.gemm_efficiency_max <= 1e-3) s.gemm_efficiency_max = 1e-3;
    for (size_t i = 0; i < f->size; i++) {
        const fit_gemm_obs *o = &d->obs[i];
        double t = d->lp ? compute_gemm_lp_s(&s, d->peak_flops, 1.0, d->operand_bytes, o->m, o->n,
                                             o->k)
                         : compute_gemm_s(&s, o->m, o->n, o->k);
        gsl_vector_set(f, i, (t - o->time_s) / o->time_s);
    }
    return GSL_SUCCESS;
}

/* NaN and infinities fail every comparison but this one; a fit of them is NaN (issue 18). */
static bool positive_finite(double x) { return isfinite(x) && x > 0; }

static cm_status fit_roofline(const gemm_data *dd, const fit_gemm_obs *obs, int n,
                              fit_gemm_result *out, char *err, size_t errlen)
{
    const system_spec *sys = dd->sys;
    memset(out, 0, sizeof *out);
    if (n < 3)
        return cm_fail(err, errlen, CM_EINVAL,
                       "a GEMM fit needs at least 3 measured shapes, got %d: run plan calibrate "
                       "with --ops gemm",
                       n);
    for (int i = 0; i < n; i++)
        if (!positive_finite(obs[i].time_s) || !positive_finite(obs[i].m) ||
            !positive_finite(obs[i].n) || !positive_finite(obs[i].k))
            return cm_fail(err, errlen, CM_EINVAL,
                           "GEMM measurement %d has a shape or time that is not a positive "
                           "finite number",
                           i + 1);
    gsl_set_error_handler_off();
    gemm_data d = *dd;
    gsl_multifit_nlinear_fdf fdf = {.f = gemm_residuals, .df = NULL, .fvv = NULL, .n = (size_t)n,
                                    .p = d.p, .params = &d};
    gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, (size_t)n, d.p);
    double x0[2] = {sys->gemm_efficiency_max > 0 ? sys->gemm_efficiency_max : 0.7,
                    sys->gemm_overhead_s * 1e6 + 1.0};
    gsl_vector_view xv = gsl_vector_view_array(x0, d.p);
    gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
    int info;
    int status = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 0.0, NULL, NULL, &info, w);
    if (status != GSL_SUCCESS && status != GSL_EMAXITER) {
        gsl_multifit_nlinear_free(w);
        return cm_fail(err, errlen, CM_EINVAL, "the GEMM fit did not converge (%s)",
                       gsl_strerror(status));
    }
    gsl_vector *x = gsl_multifit_nlinear_position(w);
    gsl_vector *f = gsl_multifit_nlinear_residual(w);
    gsl_matrix *J = gsl_multifit_nlinear_jac(w);
    gsl_matrix *cov = gsl_matrix_alloc(d.p, d.p);
    gsl_multifit_nlinear_covar(J, 0.0, cov);
    double chisq;
    gsl_blas_ddot(f, f, &chisq);
    double dof = n > (int)d.p ? n - (int)d.p : 1;
    double scale = chisq / dof; /* residual variance: covariance of relative residuals */
    out->efficiency = gsl_vector_get(x, 0);
    out->overhead_s = d.p == 2 ? gsl_vector_get(x, 1) * 1e-6 : d.fixed_overhead_s;
    out->efficiency_sd = sqrt(scale * gsl_matrix_get(cov, 0, 0));
    out->overhead_sd = d.p == 2 ? sqrt(scale * gsl_matrix_get(cov, 1, 1)) * 1e-6 : 0;
    out->rms_rel_residual = sqrt(chisq / n);
    out->points = n;
    gsl_matrix_free(cov);
    gsl_multifit_nlinear_free(w);
    if (!(out->efficiency > 0.01 && out->efficiency <= 1.0))
        return cm_fail(err, errlen, CM_EINVAL,
                       "the %s GEMM fit gave an efficiency of %.3f of peak: check the system's "
                       "%s and the measurements",
                       dd->lp ? "FP8" : "bf16", out->efficiency,
                       dd->lp ? "peak_fp8_flops" : "peak_bf16_flops");
    if (out->overhead_s < 0) out->overhead_s = 0;
    if (!isfinite(out->overhead_s) || !isfinite(out->efficiency_sd) ||
        !isfinite(out->overhead_sd) || !isfinite(out->rms_rel_residual))
        return cm_fail(err, errlen, CM_EINVAL,
                       "the GEMM fit gave a non-finite term: check the measurements");
    return CM_OK;
}

cm_status fit_gemm(const system_spec *sys, const fit_gemm_obs *obs, int n, fit_gemm_result *out,
                   char *err, size_t errlen)
{
    gemm_data d = {.sys = sys, .obs = obs, .p = 2};
    return fit_roofline(&d, obs, n, out, err, errlen);
}

cm_status fit_gemm_fp8(const system_spec *sys, const fit_gemm_obs *obs, int n,
                       double overhead_s, fit_gemm_result *out, char *err, size_t errlen)
{
    if (!(sys->peak_fp8_flops_per_s > 0))
        return cm_fail(err, errlen, CM_EINVAL,
                       "the calibrate CSV has FP8 GEMM rows but system '%s' has no "
                       "peak_fp8_flops: fit them over a preset of that GPU (--system)",
                       sys->name);
    /* e4m3 operands, one byte each (the scales are two floats per GEMM) */
    gemm_data d = {.sys = sys, .obs = obs, .lp = true, .peak_flops = sys->peak_fp8_flops_per_s,
                   .operand_bytes = 1.0, .p = 1, .fixed_overhead_s = overhead_s};
    return fit_roofline(&d, obs, n, out, err, errlen);
}

/* lp's efficiency over bf16's, with the propagated sd of a ratio of independent estimates */
static void efficiency_ratio(const fit_gemm_result *bf16, const fit_gemm_result *lp, double *r,
                             double *sd)
{
    *r = lp->efficiency / bf16->efficiency;
    double a = lp->efficiency_sd / lp->efficiency, b = bf16->efficiency_sd / bf16->efficiency;
    *sd = *r * sqrt(a * a + b * b);
}

void fit_apply_fp8_ratio(system_spec *sys, const fit_gemm_result *bf16,
                         const fit_gemm_result *fp8)
{
    efficiency_ratio(bf16, fp8, &sys->fp8_gemm_ratio, &sys->fp8_gemm_ratio_sd);
}

void fit_apply_fp8_blockwise_ratio(system_spec *sys, const fit_gemm_result *bf16,
                                   const fit_gemm_result *blk)
{
    efficiency_ratio(bf16, blk, &sys->fp8_blockwise_gemm_ratio,
                     &sys->fp8_blockwise_gemm_ratio_sd);
}

/* Median time of the rows of one shape (0: none); rows of up to 64 rounds are looked at. */
static double shape_median_s(const fit_gemm_obs *obs, int n, double m, double nn, double k)
{
    double t[64];
    int c = 0;
    for (int i = 0; i < n && c < 64; i++)
        if (obs[i].m == m && obs[i].n == nn && obs[i].k == k && positive_finite(obs[i].time_s))
            t[c++] = obs[i].time_s;
    for (int i = 1; i < c; i++) /* insertion sort: a handful of rounds */
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    if (c == 0) return 0;
    return c % 2 ? t[c / 2] : 0.5 * (t[c / 2 - 1] + t[c / 2]);
}

int fit_apply_fp8_shapes(system_spec *sys, const fit_gemm_obs *bf16, int nbf16,
                         const fit_gemm_obs *fp8, int nfp8, const fit_gemm_obs *blk, int nblk)
{
    sys->fp8_gemm_shapes.n = 0;
    if (!(sys->peak_fp8_flops_per_s > 0) || !(sys->peak_bf16_flops_per_s > 0)) return 0;
    double peaks = sys->peak_bf16_flops_per_s / sys->peak_fp8_flops_per_s;
    /* the shapes of the FP8 rows, then blockwise-only shapes, each once */
    for (int pass = 0; pass < 2; pass++) {
        const fit_gemm_obs *o = pass ? blk : fp8;
        int n = pass ? nblk : nfp8;
        for (int i = 0; i < n; i++) {
            double m = o[i].m, nn = o[i].n, k = o[i].k;
            bool seen = false; /* a shape kept already (another round's row) */
            for (int j = 0; j < sys->fp8_gemm_shapes.n; j++) {
                const fp8_shape_point *p = &sys->fp8_gemm_shapes.p[j];
                seen |= p->m == m && p->n == nn && p->k == k;
            }
            if (seen) continue;
            double tb = shape_median_s(bf16, nbf16, m, nn, k);
            if (!(tb > 0)) continue;
            double t8 = shape_median_s(fp8, nfp8, m, nn, k);
            double tk = blk ? shape_median_s(blk, nblk, m, nn, k) : 0;
            double r8 = t8 > 0 ? tb / t8 * peaks : 0, rk = tk > 0 ? tb / tk * peaks : 0;
            if (r8 > 2) r8 = 0; /* beyond fp8_shape.h's range: not a ratio a profile may hold */
            if (rk > 2) rk = 0;
            if ((r8 > 0 || rk > 0) && !fp8_shape_add(&sys->fp8_gemm_shapes, m, nn, k, r8, rk))
                return sys->fp8_gemm_shapes.n;
        }
    }
    return sys->fp8_gemm_shapes.n;
}

cm_status fit_collective(collective_op op, int group_size, bool spans_nodes,
                         const fit_collective_obs *obs, int n, system_collective_fit *out,
                         char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const collective_desc *d = collective_get(op);
    if (!d || group_size < 2)
        return cm_fail(err, errlen, CM_EINVAL, "collective fit needs a known op and group >= 2");
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        if (!positive_finite(obs[i].time_s) || !positive_finite(obs[i].bytes))
            return cm_fail(err, errlen, CM_EINVAL,
                           "%s measurement %d has a size or time that is not a positive finite "
                           "number",
                           d->name, i + 1);
        bool seen = false;
        for (int j = 0; j < i; j++) seen |= obs[j].bytes == obs[i].bytes;
        distinct += !seen;
    }
    if (distinct < 3)
        return cm_fail(err, errlen, CM_EINVAL,
                       "%s over %d GPUs: a fit needs at least 3 message sizes, got %d", d->name,
                       group_size, distinct);
    gsl_set_error_handler_off();
    double factor = d->bus_factor(group_size);
    gsl_matrix *X = gsl_matrix_alloc(n, 2);
    gsl_vector *y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n), *c = gsl_vector_alloc(2);
    gsl_matrix *cov = gsl_matrix_alloc(2, 2);
    for (int i = 0; i < n; i++) {
        gsl_matrix_set(X, i, 0, 1.0);
        gsl_matrix_set(X, i, 1, obs[i].bytes * factor * 1e-9); /* GB, for conditioning */
        gsl_vector_set(y, i, obs[i].time_s);
        gsl_vector_set(w, i, 1.0 / (obs[i].time_s * obs[i].time_s));
    }
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, 2);
    double chisq;
    int status = gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws);
    gsl_multifit_linear_free(ws);
    double alpha = gsl_vector_get(c, 0), beta = gsl_vector_get(c, 1) * 1e-9; /* s per byte */
    double dof = n > 2 ? n - 2 : 1;
    /* gsl_multifit_wlinear's covariance assumes the weights are exact variances; rescale by the
     * observed residual variance (chisq / dof), as for the nonlinear fit. */
    double scale = chisq / dof;
    double alpha_sd = sqrt(scale * gsl_matrix_get(cov, 0, 0));
    double beta_sd = sqrt(scale * gsl_matrix_get(cov, 1, 1)) * 1e-9;
    gsl_matrix_free(X);
    gsl_vector_free(y);
    gsl_vector_free(w);
    gsl_vector_free(c);
    gsl_matrix_free(cov);
    if (status != GSL_SUCCESS || !positive_finite(beta) || !isfinite(alpha))
        return cm_fail(err, errlen, CM_EINVAL,
                       "%s over %d GPUs: time does not grow with size (slope %.3g s/B): check "
                       "the measurements",
                       d->name, group_size, beta);
    out->op = op;
    out->group_size = group_size;
    out->spans_nodes = spans_nodes;
    out->alpha_s = alpha > 0 ? alpha : 0;
    out->alpha_sd = alpha_sd;
    out->busbw_bytes_per_s = 1.0 / beta;
    out->busbw_sd = beta_sd / (beta * beta); /* delta method: d(1/b) = db / b^2 */
    out->rms_rel_residual = sqrt(chisq / n);
    out->points = n;
    if (!positive_finite(out->busbw_bytes_per_s) || !isfinite(out->alpha_sd) ||
        !isfinite(out->busbw_sd) || !isfinite(out->rms_rel_residual))
        return cm_fail(err, errlen, CM_EINVAL,
                       "%s over %d GPUs: the fit gave a non-finite term: check the measurements",
                       d->name, group_size);
    return CM_OK;
}

void fit_apply_gemm(system_spec *sys, const fit_gemm_result *g)
{
    sys->gemm_efficiency_max = g->efficiency;
    sys->gemm_overhead_s = g->overhead_s;
    sys->gemm_efficiency_sd = g->efficiency_sd;
}

cm_status fit_apply_collective(system_spec *sys, const system_collective_fit *f, char *err,
                               size_t errlen)
{
    if (!system_collective_fit_put(sys, f))
        return cm_fail(err, errlen, CM_EINVAL, "more than %d collective fits",
                       SYSTEM_MAX_COLLECTIVE_FITS);
    return CM_OK;
}
