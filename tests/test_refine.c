/*
 * test_refine.c — the step-level refit of `plan measure --refine` (costmodel/refine.h), CPU
 * only: the fit recovers known step terms from synthetic "measured" steps (the cost model with
 * known terms, plus noise); the held-out error is computed from fits that did not see the plan;
 * a refined profile round-trips through its JSON and predicts the same; bad step sections give
 * clear errors; the default (inactive) terms leave every prediction bit-for-bit unchanged. With
 * PLAN_EXE set, `plan measure --refine --from FILE` refits a saved measurement file end to end.
 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile.h"
#include "refine.h"
#include "test_tmp.h"

static model_spec M;
static system_spec S;
static training_spec T;

static int setup(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    char err[CM_ERRLEN];
    if (!dir) return -1;
    if (model_load("8b", dir, &M, err, sizeof err) != CM_OK) return -1;
    if (system_load("h200-x4", dir, &S, err, sizeof err) != CM_OK) return -1;
    T = training_default();
    T.global_batch = 16;
    return 0;
}

static layout mk(layout_framework fw, int tp, int dp, int cp, int mbs, layout_sharding sh,
                 bool reshard)
{
    layout l = layout_default(fw);
    l.tp = tp;
    l.dp = dp;
    l.cp = cp;
    l.mbs = mbs;
    l.sharding = sh;
    l.sp = fw == FRAMEWORK_MEGATRON && tp > 1;
    l.reshard_after_forward = reshard;
    return l;
}

/* The kinds of plan `plan measure --refine` measures on 4 GPUs. */
static int plans(layout *out)
{
    int n = 0;
    out[n++] = mk(FRAMEWORK_MEGATRON, 1, 4, 1, 2, SHARDING_DISTOPT, true);
    out[n++] = mk(FRAMEWORK_MEGATRON, 1, 4, 1, 1, SHARDING_FSDP, true);
    out[n++] = mk(FRAMEWORK_MEGATRON, 2, 2, 1, 1, SHARDING_DISTOPT, true);
    out[n++] = mk(FRAMEWORK_MEGATRON, 2, 2, 1, 4, SHARDING_FSDP, true);
    out[n++] = mk(FRAMEWORK_MEGATRON, 4, 1, 1, 2, SHARDING_DISTOPT, true);
    out[n++] = mk(FRAMEWORK_MEGATRON, 1, 2, 2, 2, SHARDING_DISTOPT, true);
    out[n++] = mk(FRAMEWORK_FSDP2, 1, 4, 1, 1, SHARDING_FSDP, true);
    out[n++] = mk(FRAMEWORK_FSDP2, 1, 4, 1, 2, SHARDING_FSDP, false);
    out[n++] = mk(FRAMEWORK_MEGATRON, 2, 2, 1, 2, SHARDING_DDP, true);
    out[n++] = mk(FRAMEWORK_MEGATRON, 1, 4, 1, 4, SHARDING_FSDP, true);
    return n;
}

static const double TRUTH[STEP_NTERMS] = {1.06, 1.45, 0.55, 0.12e-3, 0.88};

/* Synthetic measurements: the cost model under TRUTH, times (1 + N(0, noise)). */
static int synth(refine_obs *obs, double noise, unsigned long seed)
{
    layout ls[16];
    int n = plans(ls);
    system_spec truth = S;
    system_step_reset(&truth.step);
    memcpy(truth.step.value, TRUTH, sizeof TRUTH);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    char err[CM_ERRLEN];
    for (int i = 0; i < n; i++) {
        double step;
        assert_int_equal(refine_predict(&M, &truth, &T, &ls[i], &step, NULL, err, sizeof err),
                         CM_OK);
        obs[i] = (refine_obs){.layout = ls[i]}; /* the fit's model and training */
        obs[i].measured_step_s = step * (1 + (noise > 0 ? gsl_ran_gaussian(rng, noise) : 0));
    }
    gsl_rng_free(rng);
    return n;
}

/* Without noise the fit recovers every term exactly; with 1% noise within a few sigma, and the
 * covariance is non-trivial. */
static void test_fit_recovers_terms(void **state)
{
    (void)state;
    refine_obs obs[16];
    int n = synth(obs, 0, 1);
    refine_result r;
    char err[CM_ERRLEN];
    assert_int_equal(refine_fit(&M, &S, &T, obs, n, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_OK);
    for (int k = 0; k < STEP_NTERMS; k++) {
        assert_int_equal(r.state[k], REFINE_TERM_FITTED);
        double tol = k == STEP_LAYER_OVERHEAD ? 1e-8 : 1e-6;
        if (fabs(r.step.value[k] - TRUTH[k]) > tol)
            fail_msg("noise-free: %s = %.9g, truth %.9g", system_step_name(k), r.step.value[k],
                     TRUTH[k]);
    }
    assert_true(r.rms_rel_residual < 1e-8);

    n = synth(obs, 0.01, 42);
    assert_int_equal(refine_fit(&M, &S, &T, obs, n, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_OK);
    assert_int_equal(r.points, n);
    assert_int_equal(r.free_terms, STEP_NTERMS);
    for (int k = 0; k < STEP_NTERMS; k++) {
        double sd = sqrt(r.step.cov[k][k]);
        printf("  %-24s %.5g +- %.2g (truth %.5g)\n", system_step_name(k), r.step.value[k], sd,
               TRUTH[k]);
        assert_true(sd > 0);
        if (fabs(r.step.value[k] - TRUTH[k]) > 4 * sd)
            fail_msg("%s = %g +- %g, truth %g", system_step_name(k), r.step.value[k], sd,
                     TRUTH[k]);
    }
    assert_true(fabs(r.step.value[STEP_COMPUTE_SCALE] - 1.06) < 0.02);
    assert_true(r.rms_rel_residual > 0.003 && r.rms_rel_residual < 0.03); /* ~ the 1% noise */
    for (int i = 0; i < n; i++) assert_true(isfinite(r.residual[i]));
    /* the covariance is symmetric and the correlations are within [-1, 1] */
    for (int a = 0; a < STEP_NTERMS; a++)
        for (int b = 0; b < STEP_NTERMS; b++) {
            assert_true(r.step.cov[a][b] == r.step.cov[b][a]);
            assert_true(fabs(r.step.cov[a][b]) <=
                        sqrt(r.step.cov[a][a] * r.step.cov[b][b]) * (1 + 1e-9));
        }
}

/* Terms no plan exercises stay at their defaults; with few plans, low-priority terms are kept;
 * a fit that leaves a physical range is fixed at the bound. */
static void test_term_selection(void **state)
{
    (void)state;
    refine_obs obs[16];
    int n = synth(obs, 0, 3);
    (void)n;
    /* Megatron plans only (the first six): the FSDP2 term is unseen. */
    refine_result r;
    char err[CM_ERRLEN];
    assert_int_equal(refine_fit(&M, &S, &T, obs, 6, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_OK);
    assert_int_equal(r.state[STEP_FSDP2_COMPUTE_SCALE], REFINE_TERM_UNSEEN);
    assert_true(r.step.value[STEP_FSDP2_COMPUTE_SCALE] == 1);
    assert_true(r.step.cov[STEP_FSDP2_COMPUTE_SCALE][STEP_FSDP2_COMPUTE_SCALE] == 0);
    /* Three plans: at most two free terms (dof >= 1), the rest kept. */
    assert_int_equal(refine_fit(&M, &S, &T, obs, 3, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_OK);
    assert_true(r.free_terms <= 2);
    assert_int_equal(r.state[STEP_COMPUTE_SCALE], REFINE_TERM_FITTED);
    /* Only the compute scale asked for. */
    assert_int_equal(refine_fit(&M, &S, &T, obs, 6, NULL, 1u << STEP_COMPUTE_SCALE, &r, err,
                                sizeof err),
                     CM_OK);
    assert_int_equal(r.state[STEP_COMM_SCALE], REFINE_TERM_OFF);
    assert_int_equal(r.free_terms, 1);
    /* Steps much faster than any overlap can explain: overlap efficiency pinned at 1. */
    refine_obs fast[16];
    memcpy(fast, obs, sizeof fast);
    for (int i = 0; i < 10; i++) {
        double p;
        assert_int_equal(refine_predict(&M, &S, &T, &fast[i].layout, &p, NULL, err, sizeof err),
                         CM_OK);
        fast[i].measured_step_s = p * 0.9;
    }
    unsigned two = (1u << STEP_COMPUTE_SCALE) | (1u << STEP_OVERLAP_EFFICIENCY);
    assert_int_equal(refine_fit(&M, &S, &T, fast, 10, NULL, two, &r, err, sizeof err), CM_OK);
    double lo, hi;
    system_step_range(STEP_OVERLAP_EFFICIENCY, &lo, &hi);
    assert_true(r.step.value[STEP_OVERLAP_EFFICIENCY] >= lo &&
                r.step.value[STEP_OVERLAP_EFFICIENCY] <= hi);
    /* Too few plans, bad times */
    assert_int_equal(refine_fit(&M, &S, &T, obs, 1, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_EINVAL);
    assert_non_null(strstr(err, "at least 2 measured plans"));
    fast[0].measured_step_s = -1;
    assert_int_equal(refine_fit(&M, &S, &T, fast, 4, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_EINVAL);
    assert_non_null(strstr(err, "non-positive"));
}

/* Held-out predictions come from fits that did not see the plan: a plan whose measurement is
 * wildly off does not change its own held-out prediction, only the in-fit one. */
static void test_holdout_excludes_plan(void **state)
{
    (void)state;
    refine_obs obs[16];
    int n = synth(obs, 0.005, 9);
    double loo[16], loo2[16], sd[16];
    char err[CM_ERRLEN];
    assert_int_equal(
        refine_holdout(&M, &S, &T, obs, n, NULL, REFINE_ALL_TERMS, loo, sd, err, sizeof err),
        CM_OK);
    for (int i = 0; i < n; i++) {
        assert_true(isfinite(loo[i]) && sd[i] > 0);
        /* fitted on the 9 others, with 0.5% noise: within a few percent */
        assert_true(fabs(loo[i] - obs[i].measured_step_s) / obs[i].measured_step_s < 0.05);
    }
    refine_obs bad[16];
    memcpy(bad, obs, sizeof bad);
    bad[4].measured_step_s *= 3; /* corrupt plan 5 */
    assert_int_equal(
        refine_holdout(&M, &S, &T, bad, n, NULL, REFINE_ALL_TERMS, loo2, NULL, err, sizeof err),
        CM_OK);
    assert_true(loo2[4] == loo[4]); /* its own held-out prediction never saw it */
    /* a fixed holdout of 2: exactly two predictions, both of held plans */
    bool held[16];
    refine_pick_holdout(n, 2, held);
    int nh = 0;
    for (int i = 0; i < n; i++) nh += held[i];
    assert_int_equal(nh, 2);
    assert_true(!held[0] || !held[1]); /* spread, not the first two */
    assert_int_equal(
        refine_holdout(&M, &S, &T, obs, n, held, REFINE_ALL_TERMS, loo, NULL, err, sizeof err),
        CM_OK);
    for (int i = 0; i < n; i++) assert_true(held[i] ? isfinite(loo[i]) : isnan(loo[i]));
    /* corrupting a held plan's measurement does not move any prediction */
    memcpy(bad, obs, sizeof bad);
    for (int i = 0; i < n; i++)
        if (held[i]) bad[i].measured_step_s *= 5;
    assert_int_equal(
        refine_holdout(&M, &S, &T, bad, n, held, REFINE_ALL_TERMS, loo2, NULL, err, sizeof err),
        CM_OK);
    for (int i = 0; i < n; i++)
        if (held[i]) assert_true(loo2[i] == loo[i]);
    double e[3] = {0.01, -0.03, NAN};
    assert_true(refine_median_abs(e, 3) == 0.02);
}

/* A refined profile written with profile_write and overlaid on the preset gives the same
 * terms, covariance and predictions (to the 10 digits written). */
static void test_profile_round_trip(void **state)
{
    (void)state;
    refine_obs obs[16];
    int n = synth(obs, 0.01, 5);
    refine_result r;
    char err[CM_ERRLEN];
    assert_int_equal(refine_fit(&M, &S, &T, obs, n, NULL, REFINE_ALL_TERMS, &r, err, sizeof err),
                     CM_OK);
    system_spec fitted = S;
    refine_apply(&fitted, &r);
    char path[] = "/tmp/plan_refine_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    json_t *extra = json_pack("{s:s}", "date", "2026-01-01");
    assert_int_equal(profile_write(path, &fitted, extra, err, sizeof err), CM_OK);
    json_decref(extra);
    system_spec back = S;
    assert_int_equal(profile_overlay(path, &back, err, sizeof err), CM_OK);
    assert_true(back.step.active);
    assert_int_equal(back.step.plans, n);
    for (int k = 0; k < STEP_NTERMS; k++) {
        assert_true(fabs(back.step.value[k] - fitted.step.value[k]) <=
                    1e-9 * fabs(fitted.step.value[k]));
        for (int j = 0; j < STEP_NTERMS; j++)
            assert_true(fabs(back.step.cov[k][j] - fitted.step.cov[k][j]) <=
                        1e-9 * fabs(fitted.step.cov[k][j]));
    }
    for (int i = 0; i < n; i++) {
        double a, b, sa, sb;
        refine_predict(&M, &fitted, &T, &obs[i].layout, &a, &sa, err, sizeof err);
        refine_predict(&M, &back, &T, &obs[i].layout, &b, &sb, err, sizeof err);
        assert_true(fabs(a - b) <= 1e-9 * a && fabs(sa - sb) <= 1e-6 * sa);
        /* the band carries the fit: wider than the scatter alone, and finite */
        assert_true(sa >= fitted.step.rms_rel_residual * a * 0.999 && sa < 0.2 * a);
    }
    unlink(path);
}

/* Inactive step terms change nothing; active terms at their defaults change no step time. */
static void test_defaults_unchanged(void **state)
{
    (void)state;
    layout ls[16];
    int n = plans(ls);
    char err[CM_ERRLEN];
    system_spec d = S;
    system_step_reset(&d.step);
    for (int i = 0; i < n; i++) {
        estimate a, b;
        assert_int_equal(estimate_layout(&M, &S, &T, &ls[i], &a, err, sizeof err), CM_OK);
        assert_int_equal(estimate_layout(&M, &d, &T, &ls[i], &b, err, sizeof err), CM_OK);
        assert_true(a.time.step_s == b.time.step_s);
        assert_true(a.time.compute_s == b.time.compute_s);
        assert_true(a.time.dp_s == b.time.dp_s);
    }
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void expect_bad(const char *text, const char *needle)
{
    const char *p = test_tmp_path("plan_bad_step_profile.json");
    write_text(p, text);
    system_spec s = S;
    char err[CM_ERRLEN];
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_EPARSE);
    if (!strstr(err, needle)) fail_msg("profile %s: error '%s' lacks '%s'", text, err, needle);
    unlink(p);
}

static void test_bad_step_profiles(void **state)
{
    (void)state;
    expect_bad("{\"step\": {\"compute_scale\": 0}}", "sane range");
    expect_bad("{\"step\": {\"overlap_efficiency\": 1.5}}", "overlap_efficiency");
    expect_bad("{\"step\": {\"layer_overhead_s\": -1e-3}}", "sane range");
    expect_bad("{\"step\": {\"layer_overhead_s\": \"1ms\"}}", "must be a number");
    expect_bad("{\"step\": {\"compute_scal\": 1.1}}", "unknown step term \"compute_scal\"");
    expect_bad("{\"step\": [1]}", "\"step\" must be an object");
    expect_bad("{\"step\": {\"covariance\": {\"terms\": [\"compute_scale\"], \"matrix\": [[-1]]}}}",
               "not a covariance");
    expect_bad("{\"step\": {\"covariance\": {\"terms\": [\"compute_scale\", \"comm_scale\"], "
               "\"matrix\": [[1, 0.5], [0.4, 1]]}}}",
               "not a covariance");
    expect_bad("{\"step\": {\"covariance\": {\"terms\": [\"speed\"], \"matrix\": [[1]]}}}",
               "not a step term");
    expect_bad("{\"step\": {\"covariance\": {\"terms\": [\"comm_scale\"], \"matrix\": [1]}}}",
               "row 0");
    /* a good one */
    const char *p = test_tmp_path("plan_good_step_profile.json");
    write_text(p, "{\"step\": {\"compute_scale\": 1.1, \"covariance\": {\"terms\": "
                  "[\"compute_scale\"], \"matrix\": [[0.0001]]}}}");
    system_spec s = S;
    char err[CM_ERRLEN];
    assert_int_equal(profile_overlay(p, &s, err, sizeof err), CM_OK);
    assert_true(s.step.active && s.step.value[STEP_COMPUTE_SCALE] == 1.1);
    assert_true(s.step.value[STEP_OVERLAP_EFFICIENCY] == 1 && s.step.cov[0][0] == 0.0001);
    unlink(p);
}

/* ---- several models in one fit (plan refine --realruns, issue 14) ---- */

/* Steps of two models (8B, and 1B) on one GPU each, FSDP2, made under compute_scale 0.9: a fit
 * of compute_scale alone, each plan priced with its own model and training, gives back 0.9, and
 * each plan held out is predicted within 0.1%. The same obs priced with the fit's model (M)
 * would not fit: their step times differ several-fold at one layout. */
static void test_per_obs_models(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    static model_spec one;
    char err[CM_ERRLEN];
    assert_int_equal(model_load("1b", dir, &one, err, sizeof err), CM_OK);
    static training_spec tr[6];
    refine_obs obs[6];
    system_spec truth = S;
    system_step_reset(&truth.step);
    truth.step.active = true;
    truth.step.value[STEP_COMPUTE_SCALE] = 0.9;
    for (int i = 0; i < 6; i++) {
        tr[i] = training_default();
        tr[i].seq_len = 1024 << (i % 3);
        tr[i].global_batch = 1 + i / 3;
        layout l = layout_default(FRAMEWORK_FSDP2);
        l.dp = 1;
        l.mbs = tr[i].global_batch;
        l.recompute = RECOMPUTE_FULL;
        obs[i] = (refine_obs){.layout = l, .model = i % 2 ? &one : &M, .training = &tr[i]};
        assert_int_equal(refine_predict(obs[i].model, &truth, obs[i].training, &l,
                                        &obs[i].measured_step_s, NULL, err, sizeof err),
                         CM_OK);
    }
    refine_result r;
    unsigned cs = 1u << STEP_COMPUTE_SCALE;
    assert_int_equal(refine_fit(NULL, &S, NULL, obs, 6, NULL, cs, &r, err, sizeof err), CM_OK);
    assert_true(fabs(r.step.value[STEP_COMPUTE_SCALE] - 0.9) < 1e-3);
    double held[6];
    assert_int_equal(refine_holdout(NULL, &S, NULL, obs, 6, NULL, cs, held, NULL, err, sizeof err),
                     CM_OK);
    for (int i = 0; i < 6; i++)
        assert_true(fabs(held[i] - obs[i].measured_step_s) < 1e-3 * obs[i].measured_step_s);
}

/* ---- the command line: plan measure --refine --from FILE (no GPU needed) ---- */

static int run(const char *args, char *out, size_t outlen, char *errbuf, size_t errlen)
{
    char errpath[] = "/tmp/plan_refine_err_XXXXXX";
    int fd = mkstemp(errpath);
    close(fd);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", getenv("PLAN_EXE"), args, errpath);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    FILE *e = fopen(errpath, "r");
    n = e ? fread(errbuf, 1, errlen - 1, e) : 0;
    errbuf[n] = '\0';
    if (e) fclose(e);
    unlink(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_t *layout_json(const layout *l)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:s, s:b, s:s}", "framework",
                     layout_framework_name(l->framework), "tp", l->tp, "pp", l->pp, "dp", l->dp,
                     "cp", l->cp, "ep", l->ep, "vpp", l->vpp, "mbs", l->mbs, "sp", l->sp,
                     "sharding", layout_sharding_name(l->sharding), "reshard_after_forward",
                     l->reshard_after_forward, "recompute", layout_recompute_name(l->recompute));
}

static void test_cli_from_file(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    refine_obs obs[16];
    int n = synth(obs, 0.005, 11);
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:o, s:f}", "layout", layout_json(&obs[i].layout),
                                              "measured_step_s", obs[i].measured_step_s));
    json_t *root = json_pack("{s:s, s:s, s:i, s:i, s:o}", "model", "8b", "system", "h200-x4",
                             "seq", 4096, "gbs", 16, "plans", list);
    const char *in = test_tmp_path("plan_refine_in.json"),
               *prof = test_tmp_path("plan_refine_out.json");
    json_dump_file(root, in, JSON_INDENT(1));
    json_decref(root);
    static char out[1 << 17], err[8192];
    char args[1024];
    snprintf(args, sizeof args,
             "measure --refine --from %s --model 8b --system h200-x4 --gbs 16 --format json -o %s",
             in, prof);
    int st = run(args, out, sizeof out, err, sizeof err);
    if (st != 0) fail_msg("plan %s: exit %d: %s", args, st, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    json_t *terms = json_object_get(j, "terms");
    assert_non_null(terms);
    double cs = json_number_value(json_object_get(json_object_get(terms, "compute_scale"), "after"));
    assert_true(fabs(cs - TRUTH[0]) < 0.02);
    json_t *err_j = json_object_get(j, "errors");
    double held = json_number_value(json_object_get(err_j, "heldout_median_abs"));
    double before = json_number_value(json_object_get(err_j, "before_median_abs"));
    assert_true(held < 0.03 && before > held);
    assert_int_equal(json_array_size(json_object_get(j, "plans")), n);
    json_decref(j);
    /* the profile overlays the preset */
    system_spec s = S;
    char e2[CM_ERRLEN];
    assert_int_equal(profile_overlay(prof, &s, e2, sizeof e2), CM_OK);
    assert_true(s.step.active && fabs(s.step.value[0] - TRUTH[0]) < 0.02);
    /* the human table, and a fixed holdout */
    snprintf(args, sizeof args,
             "measure --refine --from %s --model 8b --system h200-x4 --gbs 16 --holdout 2", in);
    st = run(args, out, sizeof out, err, sizeof err);
    if (st != 0) fail_msg("plan %s: exit %d: %s", args, st, err);
    assert_non_null(strstr(out, "held-out"));
    assert_non_null(strstr(out, "compute_scale"));
    /* plan refine is the same command, a row of plan --help */
    static char out2[1 << 17];
    snprintf(args, sizeof args,
             "refine --from %s --model 8b --system h200-x4 --gbs 16 --holdout 2", in);
    st = run(args, out2, sizeof out2, err, sizeof err);
    if (st != 0) fail_msg("plan %s: exit %d: %s", args, st, err);
    assert_string_equal(out, out2);
    st = run("--help", out2, sizeof out2, err, sizeof err);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out2, "\n  refine "));
    /* --realruns: bench/realruns' H100 runs, each priced as fidelity.py prices it */
    {
        char rr[1024];
        snprintf(rr, sizeof rr,
                 "refine --realruns %s/../bench/realruns/results/h100-2026-11-24.jsonl --system "
                 "h100 --terms compute_scale",
                 getenv("PLAN_DATA_DIR"));
        st = run(rr, out2, sizeof out2, err, sizeof err);
        if (st != 0) fail_msg("plan %s: exit %d: %s", rr, st, err);
        assert_non_null(strstr(out2, "39 runs on h100 (7 left out)"));
        assert_non_null(strstr(out2, "held out"));
        assert_non_null(strstr(err, "left out q3-4b-s4k-b1: out of memory"));
        /* the H200 file has no H100 run */
        snprintf(rr, sizeof rr,
                 "refine --realruns %s/../bench/realruns/results/h200-2026-11-24.jsonl --system "
                 "h100",
                 getenv("PLAN_DATA_DIR"));
        st = run(rr, out2, sizeof out2, err, sizeof err);
        assert_int_equal(st, 2);
        assert_non_null(strstr(err, "0 run(s) measured on h100's GPU"));
        st = run("refine --realruns /nonexistent.jsonl", out2, sizeof out2, err, sizeof err);
        assert_int_equal(st, 2);
        assert_non_null(strstr(err, "--realruns"));
    }
    /* bad input: one line, exit 2 */
    const char *bad[][2] = {
        {"measure --refine --from /nonexistent.json --model 8b --gbs 16", "cannot read"},
        {"measure --refine --from IN --model 8b --gbs 32", "--gbs 16"},
        {"measure --refine --from IN --model 8b --gbs 16 --holdout x",
         "--holdout"},
        {"measure --refine --from IN --model 8b --gbs 16 --terms speed",
         "--terms"},
        {"measure --refine --k 0 --model 8b", "--k"},
        {"measure --refine --model 8b --record", "--record needs a value"},
        {"measure --refine --model 8b --gbs 8 --dry-run", "needs --gpus"},
        {"bench --measure --preset guide", "--measure measures the rows of a sweep"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        /* IN: the measurements file written above (in this process's scratch directory) */
        char cmd[1024];
        const char *at = strstr(bad[i][0], " IN ");
        if (at)
            snprintf(cmd, sizeof cmd, "%.*s %s %s", (int)(at - bad[i][0]), bad[i][0], in,
                     at + 4);
        else
            snprintf(cmd, sizeof cmd, "%s", bad[i][0]);
        st = run(cmd, out, sizeof out, err, sizeof err);
        if (st != 2 || !strstr(err, bad[i][1]) || strncmp(err, "plan: error: ", 13) ||
            strchr(err, '\n') != err + strlen(err) - 1)
            fail_msg("plan %s: exit %d, stderr '%s' (want 2 and '%s')", bad[i][0], st, err,
                     bad[i][1]);
    }
    /* --dry-run lists the plans it would measure, spread over frameworks and tp */
    st = run("measure --refine --dry-run --model 8b --system h200-x4 --gpus 4 --gbs 8", out,
             sizeof out, err, sizeof err);
    if (st != 0) fail_msg("refine --dry-run: exit %d: %s", st, err);
    assert_non_null(strstr(out, "fsdp2 tp1"));
    assert_non_null(strstr(out, "megatron tp2"));
    assert_non_null(strstr(out, "megatron tp4"));
    /* Measuring without a GPU (CI): exit 3 (backend built) or 2 (no backend), one line. */
    const char *gpu_cmds[] = {"measure --refine --model 8b --system h200-x4 --gbs 8",
                              "bench --measure --models 8b --gpus 4 --system h200-x4 --gbs 8"};
    for (int i = 0; i < 2; i++) {
        st = run(gpu_cmds[i], out, sizeof out, err, sizeof err);
        if (st == 0) continue; /* a GPU machine: it measured */
        if (!((st == 3 && strstr(err, "no CUDA GPU")) || (st == 2 && strstr(err, "CUDA backend"))))
            fail_msg("plan %s: exit %d: %s", gpu_cmds[i], st, err);
    }
    unlink(in);
    unlink(prof);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_terms),  cmocka_unit_test(test_term_selection),
        cmocka_unit_test(test_holdout_excludes_plan), cmocka_unit_test(test_profile_round_trip),
        cmocka_unit_test(test_defaults_unchanged),  cmocka_unit_test(test_bad_step_profiles),
        cmocka_unit_test(test_per_obs_models),
        cmocka_unit_test(test_cli_from_file),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
