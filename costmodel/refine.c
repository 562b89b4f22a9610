/*
 * refine.c — the step-level refit (refine.h): GSL nonlinear least squares of system_step terms
 * on the relative residuals of measured training steps, with term selection, physical bounds,
 * covariance, and held-out scoring.
 *
 * Why relative residuals: a 0.2 s step and a 2 s step should weigh the same, and the error
 * targets of issue 4 are relative. Why estimate_layout() inside the residual: it is where the
 * terms act (estimate.c's apply_step_terms), so a fitted profile predicts exactly what the fit
 * saw. The prediction is linear in the terms, so the Jacobian is taken by finite differences
 * with a large step (exact up to rounding) and the covariance (J'J)^-1 s^2 is the usual one,
 * with s^2 = chi^2 / dof of the relative residuals.
 */
#include "refine.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The solver works on O(1) numbers: overheads in milliseconds, the others as they are. */
static double unit(int term)
{
    return term == STEP_LAYER_OVERHEAD ? 1e-3 : 1.0;
}

typedef struct {
    const model_spec *m;
    const system_spec *base;
    const training_spec *t;
    const refine_obs *obs;
    int fit[REFINE_MAX_PLANS]; /* obs indices in the fit */
    int nfit;
    int free[STEP_NTERMS];     /* free terms, in priority order */
    int nfree;
    system_step start;         /* values of every term (the free ones are overwritten) */
    system_spec trial;         /* scratch */
} fit_ctx;

static cm_status predict_with(fit_ctx *c, const double *x, int obs, double *step_s)
{
    c->trial = *c->base;
    c->trial.step = c->start;
    memset(c->trial.step.cov, 0, sizeof c->trial.step.cov);
    c->trial.step.rms_rel_residual = 0;
    for (int k = 0; k < c->nfree; k++) c->trial.step.value[c->free[k]] = x[k] * unit(c->free[k]);
    estimate e;
    const refine_obs *o = &c->obs[obs];
    cm_status st = estimate_layout(o->model ? o->model : c->m, &c->trial,
                                   o->training ? o->training : c->t, &o->layout, &e, NULL, 0);
    *step_s = e.time.step_s;
    return st;
}

static int residuals(const gsl_vector *x, void *data, gsl_vector *f)
{
    fit_ctx *c = data;
    double xs[STEP_NTERMS];
    for (int k = 0; k < c->nfree; k++) xs[k] = gsl_vector_get(x, k);
    for (int i = 0; i < c->nfit; i++) {
        double p;
        if (predict_with(c, xs, c->fit[i], &p) != CM_OK || !isfinite(p)) return GSL_EDOM;
        double meas = c->obs[c->fit[i]].measured_step_s;
        gsl_vector_set(f, i, (p - meas) / meas);
    }
    return GSL_SUCCESS;
}

/* Forward differences with a step of 0.1 solver units: the model is linear in each term (the
 * two compute scales multiply, so it is bilinear in those two). */
static int jacobian(const gsl_vector *x, void *data, gsl_matrix *J)
{
    fit_ctx *c = data;
    double xs[STEP_NTERMS];
    for (int k = 0; k < c->nfree; k++) xs[k] = gsl_vector_get(x, k);
    for (int i = 0; i < c->nfit; i++) {
        double meas = c->obs[c->fit[i]].measured_step_s, p0;
        if (predict_with(c, xs, c->fit[i], &p0) != CM_OK) return GSL_EDOM;
        for (int k = 0; k < c->nfree; k++) {
            double h = 0.1, saved = xs[k], p1;
            xs[k] += h;
            cm_status st = predict_with(c, xs, c->fit[i], &p1);
            xs[k] = saved;
            if (st != CM_OK) return GSL_EDOM;
            gsl_matrix_set(J, i, k, (p1 - p0) / h / meas);
        }
    }
    return GSL_SUCCESS;
}

/* Smallest over largest singular value of J with unit-norm columns: how separable the free
 * terms are on these plans (0: one is a combination of the others). */
static double separability(const gsl_matrix *J)
{
    size_t n = J->size1, p = J->size2;
    if (p == 0) return 1;
    if (n < p) return 0;
    gsl_matrix *A = gsl_matrix_alloc(n, p), *V = gsl_matrix_alloc(p, p);
    gsl_vector *s = gsl_vector_alloc(p), *work = gsl_vector_alloc(p);
    gsl_matrix_memcpy(A, J);
    for (size_t k = 0; k < p; k++) {
        gsl_vector_view col = gsl_matrix_column(A, k);
        double nrm = gsl_blas_dnrm2(&col.vector);
        if (nrm > 0) gsl_vector_scale(&col.vector, 1 / nrm);
    }
    gsl_linalg_SV_decomp(A, V, s, work);
    double r = gsl_vector_get(s, 0) > 0 ? gsl_vector_get(s, p - 1) / gsl_vector_get(s, 0) : 0;
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(s);
    gsl_vector_free(work);
    return r;
}

/* Solve for the free terms from x0 (solver units); fills x, the final Jacobian and chi^2. */
static cm_status solve(fit_ctx *c, double *x, gsl_matrix *Jout, double *chisq, int *iters,
                       char *err, size_t errlen)
{
    if (c->nfree == 0) {
        gsl_vector *f = gsl_vector_alloc(c->nfit);
        int st = residuals(NULL, c, f);
        double d = 0;
        if (st == GSL_SUCCESS) gsl_blas_ddot(f, f, &d);
        gsl_vector_free(f);
        *chisq = d;
        *iters = 0;
        return st == GSL_SUCCESS ? CM_OK
                                 : cm_fail(err, errlen, CM_EINVAL,
                                           "a measured plan's layout is rejected by the cost model");
    }
    gsl_multifit_nlinear_fdf fdf = {.f = residuals, .df = jacobian, .fvv = NULL,
                                    .n = (size_t)c->nfit, .p = (size_t)c->nfree, .params = c};
    gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(
        gsl_multifit_nlinear_trust, &params, (size_t)c->nfit, (size_t)c->nfree);
    gsl_vector_view xv = gsl_vector_view_array(x, (size_t)c->nfree);
    int info, status = gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
    if (status == GSL_SUCCESS)
        status = gsl_multifit_nlinear_driver(100, 1e-12, 1e-12, 0.0, NULL, NULL, &info, w);
    if (status != GSL_SUCCESS && status != GSL_EMAXITER) {
        gsl_multifit_nlinear_free(w);
        return cm_fail(err, errlen, CM_EINVAL, "the step-term fit did not converge (%s)",
                       gsl_strerror(status));
    }
    gsl_vector *xs = gsl_multifit_nlinear_position(w);
    for (int k = 0; k < c->nfree; k++) x[k] = gsl_vector_get(xs, k);
    gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), chisq);
    gsl_matrix_memcpy(Jout, gsl_multifit_nlinear_jac(w));
    *iters = (int)gsl_multifit_nlinear_niter(w);
    gsl_multifit_nlinear_free(w);
    return CM_OK;
}

static void drop_last_free(fit_ctx *c, refine_result *out, refine_term_state why)
{
    out->state[c->free[c->nfree - 1]] = why;
    c->nfree--;
}

cm_status refine_fit(const model_spec *m, const system_spec *base, const training_spec *t,
                     const refine_obs *obs, int n, const bool *in_fit, unsigned terms,
                     refine_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n < 0 || n > REFINE_MAX_PLANS)
        return cm_fail(err, errlen, CM_EINVAL, "the step-term fit takes 0 to %d plans, got %d",
                       REFINE_MAX_PLANS, n);
    fit_ctx *c = calloc(1, sizeof *c);
    if (!c) return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    c->m = m;
    c->base = base;
    c->t = t;
    c->obs = obs;
    for (int i = 0; i < n; i++) {
        out->residual[i] = NAN;
        if (in_fit && !in_fit[i]) continue;
        if (!(obs[i].measured_step_s > 0) || !isfinite(obs[i].measured_step_s)) {
            free(c);
            return cm_fail(err, errlen, CM_EINVAL,
                           "measured plan %d has a non-positive step time (%g s)", i + 1,
                           obs[i].measured_step_s);
        }
        c->fit[c->nfit++] = i;
    }
    if (c->nfit < 2) {
        int got = c->nfit;
        free(c);
        return cm_fail(err, errlen, CM_EINVAL,
                       "the step-term fit needs at least 2 measured plans, got %d: measure more "
                       "plans (--k)",
                       got);
    }
    if (base->step.active) {
        c->start = base->step;
    } else {
        system_step_reset(&c->start);
    }
    gsl_set_error_handler_off();

    /* Which terms the plans exercise: a change of the term moves some prediction. */
    double x0[STEP_NTERMS];
    c->nfree = 0;
    for (int k = 0; k < STEP_NTERMS; k++) {
        if (!(terms & (1u << k))) {
            out->state[k] = REFINE_TERM_OFF;
            continue;
        }
        double maxd = 0;
        for (int i = 0; i < c->nfit; i++) {
            double p0, p1;
            c->free[0] = k;
            c->nfree = 1;
            double a = c->start.value[k] / unit(k), b = a + 0.1;
            cm_status s0 = predict_with(c, &a, c->fit[i], &p0);
            cm_status s1 = predict_with(c, &b, c->fit[i], &p1);
            if (s0 != CM_OK || s1 != CM_OK) {
                int bad = c->fit[i] + 1;
                free(c);
                return cm_fail(err, errlen, CM_EINVAL,
                               "measured plan %d: the cost model rejects its layout under this "
                               "system (check --model, --system, --seq and --gbs)",
                               bad);
            }
            maxd = fmax(maxd, fabs(p1 - p0) / obs[c->fit[i]].measured_step_s);
        }
        out->state[k] = maxd > 1e-7 ? REFINE_TERM_FITTED : REFINE_TERM_UNSEEN;
    }
    /* Priority, highest first: what moves step times most in measured steps (compute is most
     * of a step; TP/CP exposure and DP overlap decide between layouts; FSDP2's compute holds
     * its eager kernels and copies, 10-20% of its step), the generic per-layer cost last. The lowest is kept first when the plans
     * cannot carry them all. */
    static const int priority[STEP_NTERMS] = {STEP_COMPUTE_SCALE, STEP_COMM_SCALE,
                                              STEP_OVERLAP_EFFICIENCY, STEP_FSDP2_COMPUTE_SCALE,
                                              STEP_LAYER_OVERHEAD};
    c->nfree = 0;
    for (int q = 0; q < STEP_NTERMS; q++)
        if (out->state[priority[q]] == REFINE_TERM_FITTED) c->free[c->nfree++] = priority[q];
    /* dof >= 1: fewer free terms than plans. */
    while (c->nfree >= c->nfit) drop_last_free(c, out, REFINE_TERM_DROPPED);

    cm_status st = CM_OK;
    gsl_matrix *J = NULL;
    double chisq = 0;
    for (;;) {
        for (int k = 0; k < c->nfree; k++) x0[k] = c->start.value[c->free[k]] / unit(c->free[k]);
        if (J) gsl_matrix_free(J);
        J = c->nfree ? gsl_matrix_alloc((size_t)c->nfit, (size_t)c->nfree) : NULL;
        st = solve(c, x0, J, &chisq, &out->iterations, err, errlen);
        if (st != CM_OK) break;
        if (c->nfree > 1 && separability(J) < 1e-6) { /* not separable: keep the last */
            drop_last_free(c, out, REFINE_TERM_DROPPED);
            continue;
        }
        bool moved = false;
        for (int k = 0; k < c->nfree; k++) {
            int term = c->free[k];
            double v = x0[k] * unit(term), lo, hi;
            system_step_range((system_step_term)term, &lo, &hi);
            if (v < lo || v > hi) {
                c->start.value[term] = v < lo ? lo : hi;
                out->state[term] = REFINE_TERM_AT_BOUND;
                moved = true;
            }
        }
        if (!moved) break;
        int keep = 0;
        for (int k = 0; k < c->nfree; k++)
            if (out->state[c->free[k]] == REFINE_TERM_FITTED) c->free[keep++] = c->free[k];
        c->nfree = keep;
    }
    if (st == CM_OK) {
        out->step = c->start;
        out->step.active = true;
        memset(out->step.cov, 0, sizeof out->step.cov);
        for (int k = 0; k < c->nfree; k++) out->step.value[c->free[k]] = x0[k] * unit(c->free[k]);
        int dof = c->nfit - c->nfree;
        double s2 = chisq / (dof > 0 ? dof : 1);
        if (c->nfree > 0) {
            gsl_matrix *cov = gsl_matrix_alloc((size_t)c->nfree, (size_t)c->nfree);
            gsl_multifit_nlinear_covar(J, 0.0, cov);
            for (int a = 0; a < c->nfree; a++)
                for (int b = 0; b < c->nfree; b++) {
                    double v = 0.5 * (gsl_matrix_get(cov, a, b) + gsl_matrix_get(cov, b, a));
                    out->step.cov[c->free[a]][c->free[b]] =
                        s2 * v * unit(c->free[a]) * unit(c->free[b]);
                }
            gsl_matrix_free(cov);
        }
        out->points = c->nfit;
        out->free_terms = c->nfree;
        out->rms_rel_residual = sqrt(s2);
        out->step.rms_rel_residual = sqrt(s2);
        out->step.plans = c->nfit;
        for (int i = 0; i < c->nfit; i++) {
            double p;
            predict_with(c, x0, c->fit[i], &p);
            out->residual[c->fit[i]] =
                (p - obs[c->fit[i]].measured_step_s) / obs[c->fit[i]].measured_step_s;
        }
    }
    if (J) gsl_matrix_free(J);
    free(c);
    return st;
}

void refine_apply(system_spec *sys, const refine_result *r)
{
    sys->step = r->step;
    sys->step.active = true;
}

cm_status refine_predict(const model_spec *m, const system_spec *sys, const training_spec *t,
                         const layout *l, double *step_s, double *sd_s, char *err, size_t errlen)
{
    estimate e;
    cm_status st = estimate_layout(m, sys, t, l, &e, err, errlen);
    if (st != CM_OK) return st;
    *step_s = e.time.step_s;
    if (sd_s) *sd_s = e.time.step_sd_s;
    return CM_OK;
}

void refine_pick_holdout(int n, int holdout, bool *held)
{
    for (int i = 0; i < n; i++) held[i] = false;
    if (holdout <= 0 || n <= 0) return;
    if (holdout > n) holdout = n;
    for (int j = 0; j < holdout; j++) {
        int i = (int)floor((j + 0.5) * n / holdout);
        while (held[i]) i = (i + 1) % n;
        held[i] = true;
    }
}

cm_status refine_holdout(const model_spec *m, const system_spec *base, const training_spec *t,
                         const refine_obs *obs, int n, const bool *held, unsigned terms,
                         double *pred, double *sd, char *err, size_t errlen)
{
    bool in_fit[REFINE_MAX_PLANS];
    if (n > REFINE_MAX_PLANS)
        return cm_fail(err, errlen, CM_EINVAL, "at most %d plans", REFINE_MAX_PLANS);
    for (int i = 0; i < n; i++) pred[i] = NAN;
    if (sd)
        for (int i = 0; i < n; i++) sd[i] = NAN;
    refine_result *r = malloc(sizeof *r);
    system_spec *s = malloc(sizeof *s);
    if (!r || !s) {
        free(r);
        free(s);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    }
    cm_status st = CM_OK;
    /* Leave-one-out: n fits; a fixed holdout: one fit (round 0) predicting every held plan. */
    int rounds = held ? 1 : n;
    for (int i = 0; i < rounds && st == CM_OK; i++) {
        for (int j = 0; j < n; j++) in_fit[j] = held ? !held[j] : j != i;
        char ferr[CM_ERRLEN];
        if (refine_fit(m, base, t, obs, n, in_fit, terms, r, ferr, sizeof ferr) != CM_OK)
            continue; /* too few plans left: NaN */
        *s = *base;
        refine_apply(s, r);
        for (int j = 0; j < n && st == CM_OK; j++) {
            if (in_fit[j]) continue;
            double sdj;
            st = refine_predict(obs[j].model ? obs[j].model : m, s,
                                obs[j].training ? obs[j].training : t, &obs[j].layout, &pred[j],
                                &sdj, err, errlen);
            if (sd) sd[j] = sdj;
        }
    }
    free(r);
    free(s);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double refine_median_abs(const double *x, int n)
{
    double v[REFINE_MAX_PLANS];
    int k = 0;
    for (int i = 0; i < n && k < REFINE_MAX_PLANS; i++)
        if (isfinite(x[i])) v[k++] = fabs(x[i]);
    if (k == 0) return NAN;
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

const char *refine_term_state_name(refine_term_state s)
{
    switch (s) {
    case REFINE_TERM_FITTED: return "fitted";
    case REFINE_TERM_OFF: return "not asked for";
    case REFINE_TERM_UNSEEN: return "kept: no plan exercises it";
    case REFINE_TERM_DROPPED: return "kept: too few plans to separate it";
    case REFINE_TERM_AT_BOUND: return "fitted to its bound";
    }
    return "?";
}
