/*
 * refine.h — the step-level refit of issue 4: from training steps measured on real GPUs
 * (`plan measure --refine`, backend/bk_measure.c), fit the corrections the microbenchmarks
 * cannot see (system.h's system_step: compute rate, exposed-communication speed, DP/FSDP
 * overlap efficiency, fixed cost per layer and micro-batch, FSDP2's compute rate against
 * Megatron's), by
 * nonlinear least squares on relative residuals (gsl_multifit_nlinear), with residuals and the
 * parameter covariance kept; and score the fit on plans it did not see (leave-one-out or a fixed
 * holdout), which is the honest error figure.
 *
 * The model fitted is estimate_layout() itself with the trial terms in sys->step, so the fit and
 * the prediction can never disagree about how a term acts (estimate.c applies them in one place).
 *
 * A term is fitted only when the plans in the fit exercise it (a measured FSDP2 plan for the
 * FSDP2 scale, hidden DP traffic for the overlap efficiency, ...) and there are more plans than
 * free terms: terms are kept at the base system's value otherwise, lowest priority first
 * (compute, comm, overlap, FSDP2 compute, per-layer: refine.c says why). The same happens to a
 * term the plans cannot separate from the others (e.g. per-layer cost and compute rate when
 * every plan runs the same number of micro-batches). A fitted value outside the term's physical range
 * (system_step_range) is fixed at the bound and the rest refitted. Callers own all memory;
 * nothing here prints.
 */
#ifndef PLAN_REFINE_H
#define PLAN_REFINE_H

#include <stdbool.h>

#include "estimate.h"

#define REFINE_MAX_PLANS 64

/* One measured plan: its layout and the measured step time (whole layout). model and
 * training: the plan's own when it was measured on another model or training shape (real
 * training runs of several models, plan refine --realruns); NULL: the fit's m and t. */
typedef struct {
    layout layout;
    double measured_step_s;
    const model_spec *model;
    const training_spec *training;
} refine_obs;

typedef enum {
    REFINE_TERM_FITTED = 0, /* free in the fit */
    REFINE_TERM_OFF,        /* not asked for (terms mask) */
    REFINE_TERM_UNSEEN,     /* no plan in the fit exercises it: kept at the base value */
    REFINE_TERM_DROPPED,    /* too few plans, or not separable from the others: kept */
    REFINE_TERM_AT_BOUND,   /* the fit left its physical range: fixed at the bound */
} refine_term_state;

typedef struct {
    system_step step;                    /* fitted terms (base values where not fitted), their
                                            covariance, rms residual and plan count */
    refine_term_state state[STEP_NTERMS];
    int points;                          /* plans in the fit */
    int free_terms;
    double rms_rel_residual;
    double residual[REFINE_MAX_PLANS];   /* (predicted - measured) / measured per obs in the fit,
                                            NaN for obs outside it */
    int iterations;
} refine_result;

/* Every term. */
#define REFINE_ALL_TERMS ((1u << STEP_NTERMS) - 1)

/*
 * Fit the step terms in `terms` (bit i = system_step_term i) to the obs with in_fit[i] (NULL:
 * all), starting from base (its step terms when active, else the defaults). Needs >= 2 plans in
 * the fit. Fails with err saying why (a layout the cost model rejects, a non-positive time, the
 * solver not converging).
 */
cm_status refine_fit(const model_spec *m, const system_spec *base, const training_spec *t,
                     const refine_obs *obs, int n, const bool *in_fit, unsigned terms,
                     refine_result *out, char *err, size_t errlen);

/* sys with the fitted terms: sys->step = r->step (active). */
void refine_apply(system_spec *sys, const refine_result *r);

/* Step time and its 1-sigma band of layout l under sys (estimate_layout). */
cm_status refine_predict(const model_spec *m, const system_spec *sys, const training_spec *t,
                         const layout *l, double *step_s, double *sd_s, char *err,
                         size_t errlen);

/* Which plans a fixed holdout of `holdout` out of n keeps out: spread evenly over the order
 * given (positions round((j + 0.5) n / holdout)), so held-out plans are not all the best or all
 * the worst predicted. */
void refine_pick_holdout(int n, int holdout, bool *held);

/*
 * Held-out predictions. held == NULL: leave-one-out, pred[i] from a fit to every plan but i.
 * Otherwise the plans with held[i] are predicted from one fit to the others (and pred is NaN for
 * the others). A plan whose fit fails (too few plans) gets NaN. sd[i] is the band of pred[i]
 * (may be NULL).
 */
cm_status refine_holdout(const model_spec *m, const system_spec *base, const training_spec *t,
                         const refine_obs *obs, int n, const bool *held, unsigned terms,
                         double *pred, double *sd, char *err, size_t errlen);

/* Median of |x[i]| over finite x (NaN when none). */
double refine_median_abs(const double *x, int n);

const char *refine_term_state_name(refine_term_state s);

#endif
