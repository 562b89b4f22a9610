/*
 * cmd_refine.c — `plan refine` (issue 4; also `plan measure --refine`): measure the plans that
 * fit the local GPUs (which ones: planner/refine_plans.h; measured with cli/measure_local.h),
 * fit the step-level terms the microbenchmarks cannot see (costmodel/refine.h) and show
 * predicted-before, predicted-after, held-out and measured step times side by side; write the
 * refined profile.
 *
 * A plan that fails to run (out of memory) is reported and the next one is taken. The honest
 * figure: with `--holdout loo` (default) every plan is also predicted from a fit to the others
 * (leave-one-out); with `--holdout N`, N plans spread over the ranking are kept out of the fit
 * entirely and the profile is the fit to the rest. `--from FILE` refits the plans of an earlier
 * run (its --format json output, its --record file or its profile) without a GPU.
 */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "units.h"
#include "commands.h"
#include "layout_codec.h"
#include "measure_local.h"
#include "profile.h"
#include "refine.h"
#include "refine_plans.h"
#include "refine_realruns.h"
#include "search.h"
#ifdef PLAN_HAVE_BACKEND
#include "backend.h"
#endif


typedef struct {
    int k;
    int holdout;      /* 0: leave-one-out */
    bool pick_top;
    const char *from;
    const char *realruns; /* refine_realruns.h */
    const char *out;
    const char *record; /* rewritten after every measured plan */
    unsigned terms;
    int steps, local;
    bool dry; /* list the plans that would be measured, without a GPU */
} refine_opts;

static void usage(void)
{
    printf("usage: plan refine --model M [--system S] [--calibration P] [--gbs N] [--seq N]\n"
           "                   [--gpus N] [--framework F] [options]\n"
           "       (plan measure --refine ... is the same command)\n"
           "Measures the best plans for the local GPUs, fits the step-level terms (compute\n"
           "rate, exposed-communication speed, DP/FSDP overlap efficiency, per-layer fixed\n"
           "cost, FSDP2's compute rate) and shows predicted-before, predicted-after and\n"
           "measured step times.\n"
           "  --k N             plans to measure (default 6)\n"
           "  --pick spread|top spread over frameworks, tp and sharding (default) or plain top k\n"
           "  --holdout loo|N   leave-one-out (default) or keep N plans out of the fit\n"
           "  --terms LIST      terms to fit (default all): compute_scale, comm_scale,\n"
           "                    overlap_efficiency, layer_overhead_s, fsdp2_compute_scale\n"
           "  --from FILE       refit the plans of an earlier --format json output or profile\n"
           "  --realruns FILE   fit to real training steps instead (bench/realruns results .jsonl:\n"
           "                    the runs on --system's GPU, each with its own model and shape;\n"
           "                    no --model needed)\n"
           "  -o PROFILE.json   write the refined profile (use as --calibration PROFILE.json)\n"
           "  --record FILE     write the measurements after every plan (for --from: a run cut\n"
           "                    short keeps what it measured)\n"
           "  --dry-run         list the plans it would measure (no GPU; needs --gpus)\n"
           "  --steps N, --local-gpus N, --format human|json   as plan measure\n"
           "Use a small --gbs (e.g. 8): every plan runs warm-up + --steps steps.\n"
           "Exit status: 0 done, 2 bad input, 3 no GPU, 1 other errors.\n");
}

static int parse_terms(const char *s, unsigned *out)
{
    *out = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        for (k = 0; k < STEP_NTERMS && strcmp(tok, system_step_name(k)); k++) {}
        if (k == STEP_NTERMS) return -1;
        *out |= 1u << k;
    }
    return *out ? 0 : -1;
}

/* ---- options (getopt_long rows beside the shared ones of cli.h) ---- */

enum {
    OPT_K = CLI_OWN_OPT, OPT_HOLDOUT, OPT_PICK, OPT_FROM, OPT_REALRUNS, OPT_TERMS, OPT_STEPS, OPT_LOCAL,
    OPT_RECORD, OPT_DRY, OPT_REFINE,
};

static const struct option own_opts[] = {
    {"k", required_argument, NULL, OPT_K},
    {"plans", required_argument, NULL, OPT_K},
    {"holdout", required_argument, NULL, OPT_HOLDOUT},
    {"pick", required_argument, NULL, OPT_PICK},
    {"from", required_argument, NULL, OPT_FROM},
    {"realruns", required_argument, NULL, OPT_REALRUNS},
    {"output", required_argument, NULL, 'o'},
    {"terms", required_argument, NULL, OPT_TERMS},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"local-gpus", required_argument, NULL, OPT_LOCAL},
    {"record", required_argument, NULL, OPT_RECORD},
    {"dry-run", no_argument, NULL, OPT_DRY},
    {"refine", no_argument, NULL, OPT_REFINE}, /* plan measure --refine passes it on */
    {NULL, 0, NULL, 0},
};

static const char *opt_name(int opt)
{
    if (opt == 'o') return "-o";
    for (const struct option *p = own_opts; p->name; p++)
        if (p->val == opt) return p->name;
    return "?";
}

static int take_opt(int opt, const char *v, void *arg)
{
    refine_opts *o = arg;
    char msg[300];
    if (!v) {
        snprintf(msg, sizeof msg, "%s%s needs a value (see plan refine --help)",
                 opt == 'o' ? "" : "--", opt_name(opt));
        return cli_error(msg);
    }
    char *end;
    long x = strtol(v, &end, 10);
    bool num_ok = *v && !*end;
    switch (opt) {
    case OPT_K:
        if (!num_ok || x < 2 || x > REFINE_MAX_PLANS) {
            snprintf(msg, sizeof msg, "--k needs an integer between 2 and %d, got '%s'",
                     REFINE_MAX_PLANS, v);
            return cli_error(msg);
        }
        o->k = (int)x;
        return 0;
    case OPT_HOLDOUT:
        if (!strcmp(v, "loo")) {
            o->holdout = 0;
        } else if (num_ok && x >= 1 && x < REFINE_MAX_PLANS) {
            o->holdout = (int)x;
        } else {
            snprintf(msg, sizeof msg,
                     "--holdout takes loo (leave-one-out) or a number of plans, got '%s'", v);
            return cli_error(msg);
        }
        return 0;
    case OPT_PICK:
        if (strcmp(v, "spread") && strcmp(v, "top")) {
            snprintf(msg, sizeof msg, "--pick takes spread or top, got '%s'", v);
            return cli_error(msg);
        }
        o->pick_top = !strcmp(v, "top");
        return 0;
    case OPT_FROM: o->from = v; return 0;
    case OPT_REALRUNS: o->realruns = v; return 0;
    case 'o': o->out = v; return 0;
    case OPT_RECORD: o->record = v; return 0;
    case OPT_TERMS:
        if (parse_terms(v, &o->terms)) {
            snprintf(msg, sizeof msg,
                     "--terms takes a comma-separated list of compute_scale, comm_scale, "
                     "overlap_efficiency, layer_overhead_s, fsdp2_compute_scale; got '%s'",
                     v);
            return cli_error(msg);
        }
        return 0;
    case OPT_STEPS:
    case OPT_LOCAL:
        if (!num_ok || x < 1 || x > 1024) {
            snprintf(msg, sizeof msg, "--%s needs an integer between 1 and 1024, got '%s'",
                     opt_name(opt), v);
            return cli_error(msg);
        }
        if (opt == OPT_STEPS) o->steps = (int)x;
        else o->local = (int)x;
        return 0;
    case OPT_DRY: o->dry = true; return 0;
    default: return 0; /* OPT_REFINE */
    }
}

/* ---- measuring the plans ---- */

typedef struct {
    const model_spec *m;
    const system_spec *sys;
    const training_spec *t;
    int local;
} runs_here_ctx;

static bool runs_here(const layout *l, void *arg, char *err, size_t errlen)
{
    const runs_here_ctx *c = arg;
    return measure_local_runs_whole(c->m, c->sys, c->t, l, c->local, err, errlen);
}

/* Open the local GPUs; on failure print why and return the exit status (< 0: end quietly with
 * status 0, another process of an mpirun reports). */
static int open_gpus(measure_local **ml, int local)
{
    char err[CM_ERRLEN];
    measure_local_failure why;
    if (measure_local_open(ml, local, &why, err, sizeof err) == CM_OK) return 0;
    if (why == MEASURE_LOCAL_NOT_FIRST) return -1;
    fprintf(stderr, "plan: error: %s\n", err);
#ifdef PLAN_HAVE_BACKEND
    if (why == MEASURE_LOCAL_FAILED_WORLD) bk_world_abort(1);
#endif
    return why == MEASURE_LOCAL_NO_BACKEND ? CLI_EXIT_USAGE
           : why == MEASURE_LOCAL_NO_GPU   ? CLI_EXIT_NO_GPU
                                           : 1;
}

static int measure_plans(const refine_opts *ro, const cli_options *co, const model_spec *m,
                         const system_spec *sys, refine_plan *rows, int *n, int *gpus_out,
                         char *device, size_t devlen)
{
    char err[CM_ERRLEN];
    measure_local *ml = NULL;
    int local;
    if (ro->dry) {
        local = ro->local ? ro->local : co->gpus;
        if (!local)
            return cli_error("--refine --dry-run needs --gpus N (or --local-gpus N): the GPUs "
                             "the plans would run on");
    } else {
        int rc = open_gpus(&ml, ro->local);
        if (rc) return rc;
        local = measure_local_gpus(ml);
        snprintf(device, devlen, "%s", measure_local_device(ml));
    }
    int gpus = co->gpus ? co->gpus : local;
    if (gpus > local) {
        measure_local_close(ml);
        snprintf(err, sizeof err,
                 "--gpus %d is more than the %d local GPUs: --refine measures plans that run "
                 "whole here",
                 gpus, local);
        return cli_error(err);
    }
    *gpus_out = gpus;
    bool frameworks[2];
    frameworks[FRAMEWORK_FSDP2] = !co->framework_given || co->layout.framework == FRAMEWORK_FSDP2;
    frameworks[FRAMEWORK_MEGATRON] =
        !co->framework_given || co->layout.framework == FRAMEWORK_MEGATRON;
    runs_here_ctx rh = {m, sys, &co->training, local};
    refine_pick pick;
    if (refine_plans_pick(m, sys, &co->training, gpus, frameworks, ro->pick_top, runs_here, &rh,
                          &pick, err, sizeof err) != CM_OK) {
        measure_local_close(ml);
        return cli_error(err);
    }
    fprintf(stderr, "refine: %d of the feasible plans for %d GPUs run whole here (%d do not or "
                    "are within 5%% of the memory)\n",
            pick.n, gpus, pick.skipped);
    const refine_candidate *order = pick.order;
    *n = 0;
    if (ro->dry) {
        printf("plan measure --refine would measure, in this order, the first %d that run (of "
               "%d tried at most):\n",
               ro->k, ro->k + 6);
        for (int i = 0; i < pick.n && i < ro->k + 6; i++) {
            char name[128];
            layout_short_name(&order[i].layout, name, sizeof name);
            estimate e;
            estimate_layout(m, sys, &co->training, &order[i].layout, &e, NULL, 0);
            printf("  %2d  %-40s search rank %3d  predicted %.4f s  %.1f GiB\n", i + 1, name,
                   order[i].rank, e.time.step_s, e.memory.total_bytes / UNITS_GIB_BYTES);
        }
        refine_pick_free(&pick);
        return -1;
    }
    refine_run run = {co->model, m->name, co->system, co->training.seq_len,
                      co->training.global_batch, gpus, device};
    for (int i = 0; i < pick.n && *n < ro->k && i < ro->k + 6; i++) {
        char name[128];
        layout_short_name(&order[i].layout, name, sizeof name);
        fprintf(stderr, "refine: measuring %d/%d: %s (search rank %d)\n", *n + 1, ro->k, name,
                order[i].rank);
        measure_local_result r;
        cm_status st = measure_local_run(ml, m, sys, &co->training, &order[i].layout, ro->steps,
                                         &r, err, sizeof err);
        if (st != CM_OK || !r.whole) {
            fprintf(stderr, "refine: skipped %s: %s\n", name,
                    st != CM_OK ? err : "only a slice ran");
            continue;
        }
        refine_plan *row = &rows[(*n)++];
        memset(row, 0, sizeof *row);
        row->obs.layout = order[i].layout;
        row->obs.measured_step_s = r.step_s;
        row->spread = r.step_spread;
        row->mem_meas = r.peak_memory_bytes;
        row->rank = order[i].rank;
        fprintf(stderr, "refine:   measured %.4f s (predicted %.4f s), peak %.2f GiB\n", r.step_s,
                r.predicted_step_s, r.peak_memory_bytes / UNITS_GIB_BYTES);
        if (ro->record) {
            row->mem_pred = r.predicted_memory_bytes;
            if (refine_plans_write_record(ro->record, &run, rows, *n, err, sizeof err) != CM_OK)
                fprintf(stderr, "refine: warning: %s\n", err);
        }
    }
    measure_local_close(ml);
    refine_pick_free(&pick);
    if (*n < 2) {
        fprintf(stderr, "plan: error: only %d plan(s) could be measured; the fit needs 2 or "
                        "more: raise --k or check the messages above\n",
                *n);
        return 1;
    }
    return 0;
}

/* ---- output ---- */


static void pct(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, " %+7.1f%%", 100 * x);
    else
        fprintf(f, " %8s", "-");
}

static json_t *num_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static int cmp_rank(const void *a, const void *b)
{
    const refine_plan *x = a, *y = b;
    if (x->before != y->before) return x->before < y->before ? -1 : 1;
    return 0;
}

int cmd_refine(int argc, char **argv)
{
    refine_opts ro = {.k = 6, .holdout = 0, .terms = REFINE_ALL_TERMS, .steps = 3};
    char command[2048] = "plan";
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(command);
        snprintf(command + used, sizeof command - used, " %s", argv[i]);
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
    cli_own_options own = {own_opts, "o:", take_opt, &ro};
    cli_options co;
    bool help;
    int rc = cli_parse_own(argc, argv, &own, &co, &help);
    if (rc) return rc;
    if (co.exact_model) /* its plans are the top of a search by framework, not filtered */
        return cli_error("plan refine does not take --exact-model: run plan --exact-model to "
                         "see which frameworks build the model, then plan refine --framework "
                         "with one of them");
    if (ro.realruns) return refine_realruns(ro.realruns, &co, ro.terms, ro.out, command);
    model_spec m;
    system_spec sys;
    if ((rc = cli_load_specs(&co, &m, &sys))) return rc;
    char err[CM_ERRLEN];
    if (training_check(&co.training, err, sizeof err) != CM_OK) return cli_error(err);

    static refine_plan rows[REFINE_MAX_PLANS];
    int n = 0, gpus = 0;
    char device[256] = "";
    if (ro.from) {
        if (refine_plans_read(ro.from, co.model, &m, &co.training, rows, &n, err, sizeof err) !=
            CM_OK) {
            char msg[CM_ERRLEN + 16];
            snprintf(msg, sizeof msg, "--from %s", err);
            return cli_error(msg);
        }
        for (int i = 0; i < n; i++)
            if (layout_gpus(&rows[i].obs.layout) > gpus) gpus = layout_gpus(&rows[i].obs.layout);
    } else {
        rc = measure_plans(&ro, &co, &m, &sys, rows, &n, &gpus, device, sizeof device);
        if (rc) return rc < 0 ? 0 : rc; /* < 0: --dry-run listed the plans */
    }
    /* Predictions before: the system as given. */
    for (int i = 0; i < n; i++) {
        refine_plan *r = &rows[i];
        estimate e;
        if (estimate_layout(&m, &sys, &co.training, &r->obs.layout, &e, err, sizeof err) !=
            CM_OK) {
            char msg[CM_ERRLEN + 64];
            snprintf(msg, sizeof msg, "measured plan %d: %s", i + 1, err);
            return cli_error(msg);
        }
        r->before = e.time.step_s;
        r->before_sd = e.time.step_sd_s;
        r->mem_pred = e.memory.total_bytes;
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_rank);
    if (ro.holdout >= n - 1 && ro.holdout > 0) {
        snprintf(err, sizeof err, "--holdout %d leaves fewer than 2 of the %d plans to fit",
                 ro.holdout, n);
        return cli_error(err);
    }
    static refine_obs obs[REFINE_MAX_PLANS];
    bool held[REFINE_MAX_PLANS], in_fit[REFINE_MAX_PLANS];
    refine_pick_holdout(n, ro.holdout, held);
    for (int i = 0; i < n; i++) {
        obs[i] = rows[i].obs;
        in_fit[i] = !held[i];
        rows[i].in_fit = in_fit[i];
    }
    static refine_result fit;
    if (refine_fit(&m, &sys, &co.training, obs, n, in_fit, ro.terms, &fit, err, sizeof err) !=
        CM_OK)
        return cli_error(err);
    double hp[REFINE_MAX_PLANS], hsd[REFINE_MAX_PLANS];
    if (refine_holdout(&m, &sys, &co.training, obs, n, ro.holdout ? held : NULL, ro.terms, hp,
                       hsd, err, sizeof err) != CM_OK)
        return cli_error(err);
    static system_spec refined;
    refined = sys;
    refine_apply(&refined, &fit);
    double eb[REFINE_MAX_PLANS], ea[REFINE_MAX_PLANS], eh[REFINE_MAX_PLANS];
    int chosen_before = 0, chosen_after = 0, best = 0;
    for (int i = 0; i < n; i++) {
        refine_plan *r = &rows[i];
        refine_predict(&m, &refined, &co.training, &r->obs.layout, &r->after, &r->after_sd, err,
                       sizeof err);
        r->held = hp[i];
        r->held_sd = hsd[i];
        double meas = r->obs.measured_step_s;
        eb[i] = units_rel_error(r->before, meas);
        ea[i] = r->in_fit ? units_rel_error(r->after, meas) : NAN;
        eh[i] = units_rel_error(r->held, meas);
        if (r->before < rows[chosen_before].before) chosen_before = i;
        if (r->after < rows[chosen_after].after) chosen_after = i;
        if (meas < rows[best].obs.measured_step_s) best = i;
    }
    double med_b = refine_median_abs(eb, n), med_a = refine_median_abs(ea, n),
           med_h = refine_median_abs(eh, n), max_h = 0;
    int nh = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(eh[i])) {
            max_h = fmax(max_h, fabs(eh[i]));
            nh++;
        }
    double gap_after = rows[chosen_after].obs.measured_step_s / rows[best].obs.measured_step_s - 1;
    double gap_before =
        rows[chosen_before].obs.measured_step_s / rows[best].obs.measured_step_s - 1;
    /* The whole search again under the refined terms: does the recommendation move? */
    search_result *sa = search_result_new(), *sb = search_result_new();
    search_options so = {.gpus = gpus, .keep = 1, .simulate = 0};
    so.frameworks[0] = so.frameworks[1] = true;
    bool searched = gpus > 0 &&
                    search_run(&m, &sys, &co.training, &so, sb, err, sizeof err) == CM_OK &&
                    search_run(&m, &refined, &co.training, &so, sa, err, sizeof err) == CM_OK &&
                    sa->count > 0 && sb->count > 0;
    char hold_desc[64];
    if (ro.holdout)
        snprintf(hold_desc, sizeof hold_desc, "fixed holdout of %d", ro.holdout);
    else
        snprintf(hold_desc, sizeof hold_desc, "leave-one-out");

    /* The measurement records: what --from reads back, also kept in the profile. */
    json_t *plist = refine_plans_json(rows, n);
    refine_run run = {co.model, m.name, co.system, co.training.seq_len, co.training.global_batch,
                      gpus, device};
    json_t *record = refine_plans_record(&run, plist);
    if (ro.out) {
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        json_t *extra = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:O}", "name", ro.out, "description",
            "calibration profile with step-level terms fitted by plan measure --refine",
            "calibration_of", co.system, "date", date, "command", command, "refine", record);
        cm_status st = profile_write(ro.out, &refined, extra, err, sizeof err);
        json_decref(extra);
        if (st != CM_OK) {
            json_decref(record);
            json_decref(plist);
            search_result_free(sa);
            search_result_free(sb);
            return cli_error(err);
        }
    }

    if (co.format == FORMAT_JSON) {
        json_t *j = json_object();
        json_object_set_new(j, "model", json_string(m.name));
        json_object_set_new(j, "system", json_string(sys.name));
        json_object_set_new(j, "seq", json_integer(co.training.seq_len));
        json_object_set_new(j, "gbs", json_integer(co.training.global_batch));
        json_object_set_new(j, "gpus", json_integer(gpus));
        json_object_set_new(j, "device", json_string(device[0] ? device : "(from file)"));
        json_object_set_new(j, "holdout", json_string(hold_desc));
        json_t *pl = json_array();
        for (int i = 0; i < n; i++) {
            const refine_plan *r = &rows[i];
            json_t *p = json_deep_copy(json_array_get(plist, (size_t)i));
            json_object_set_new(p, "in_fit", json_boolean(r->in_fit));
            json_object_set_new(p, "before_s", json_real(r->before));
            json_object_set_new(p, "before_sd_s", json_real(r->before_sd));
            json_object_set_new(p, "after_s", json_real(r->after));
            json_object_set_new(p, "after_sd_s", json_real(r->after_sd));
            json_object_set_new(p, "heldout_s", num_or_null(r->held));
            json_object_set_new(p, "heldout_sd_s", num_or_null(r->held_sd));
            json_object_set_new(p, "error_before", json_real(eb[i]));
            json_object_set_new(p, "error_after", num_or_null(ea[i]));
            json_object_set_new(p, "error_heldout", num_or_null(eh[i]));
            json_object_set_new(p, "residual", num_or_null(fit.residual[i]));
            json_array_append_new(pl, p);
        }
        json_object_set_new(j, "plans", pl);
        json_t *terms = json_object(), *cov = json_array();
        for (int k = 0; k < STEP_NTERMS; k++) {
            double before = sys.step.active ? sys.step.value[k] : system_step_default(k);
            json_object_set_new(
                terms, system_step_name(k),
                json_pack("{s:f, s:f, s:f, s:s}", "before", before, "after", fit.step.value[k],
                          "sd", sqrt(fit.step.cov[k][k]), "state",
                          refine_term_state_name(fit.state[k])));
            json_t *row = json_array();
            for (int u = 0; u < STEP_NTERMS; u++)
                json_array_append_new(row, json_real(fit.step.cov[k][u]));
            json_array_append_new(cov, row);
        }
        json_object_set_new(j, "terms", terms);
        json_object_set_new(j, "covariance", cov);
        json_object_set_new(j, "fit", json_pack("{s:i, s:i, s:f, s:i}", "points", fit.points,
                                                "free_terms", fit.free_terms, "rms_rel_residual",
                                                fit.rms_rel_residual, "iterations",
                                                fit.iterations));
        json_t *ej = json_object();
        json_object_set_new(ej, "before_median_abs", num_or_null(med_b));
        json_object_set_new(ej, "after_median_abs", num_or_null(med_a));
        json_object_set_new(ej, "heldout_median_abs", num_or_null(med_h));
        json_object_set_new(ej, "heldout_max_abs", nh ? json_real(max_h) : json_null());
        json_object_set_new(ej, "heldout_plans", json_integer(nh));
        json_object_set_new(j, "errors", ej);
        json_object_set_new(j, "ranking",
                            json_pack("{s:i, s:i, s:i, s:f, s:f}", "chosen_before",
                                      chosen_before + 1, "chosen_after", chosen_after + 1,
                                      "best_measured", best + 1, "chosen_before_gap", gap_before,
                                      "chosen_after_gap", gap_after));
        if (searched) {
            char a[128], b[128];
            layout_short_name(&sb->ranked[0].layout, b, sizeof b);
            layout_short_name(&sa->ranked[0].layout, a, sizeof a);
            json_object_set_new(j, "search",
                                json_pack("{s:s, s:f, s:s, s:f, s:f}", "best_before", b,
                                          "best_before_s", sb->ranked[0].time.step_s,
                                          "best_after", a, "best_after_s",
                                          sa->ranked[0].time.step_s, "best_after_sd_s",
                                          sa->ranked[0].time.step_sd_s));
        }
        if (ro.out) json_object_set_new(j, "profile", json_string(ro.out));
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        printf("plan measure --refine: %s, seq %d, gbs %d, %d GPUs of %s on %s\n", m.display,
               co.training.seq_len, co.training.global_batch, gpus, sys.name,
               device[0] ? device : "(measurements read from a file)");
        printf("%d plans measured; held-out: %s\n\n", n, hold_desc);
        printf("  %-2s %-38s %9s %9s %8s %9s %8s %9s %8s\n", "#", "plan (by predicted-before)",
               "measured", "before", "err", "after", "err", "held-out", "err");
        for (int i = 0; i < n; i++) {
            const refine_plan *r = &rows[i];
            char name[128];
            layout_short_name(&r->obs.layout, name, sizeof name);
            printf("  %-2d %-38s %9.4f %9.4f", i + 1, name, r->obs.measured_step_s, r->before);
            pct(stdout, eb[i]);
            printf(" %9.4f", r->after);
            pct(stdout, units_rel_error(r->after, r->obs.measured_step_s));
            if (isfinite(r->held))
                printf(" %9.4f", r->held);
            else
                printf(" %9s", "(in fit)");
            pct(stdout, eh[i]);
            printf("%s\n", r->in_fit ? "" : "  held out");
        }
        printf("\n  step times in s; err = (predicted - measured) / measured; after = the refined "
               "terms (fitted on %s);\n  held-out = predicted by a fit that did not see the plan\n",
               ro.holdout ? "the plans not held out" : "all plans");
        printf("\nMedian |error|: before %.1f%%, after %.1f%% (plans in the fit), held-out %.1f%% "
               "(max %.1f%%, %d plans) <- the honest figure\n",
               100 * med_b, 100 * med_a, 100 * med_h, 100 * max_h, nh);
        printf("\nStep terms (%d plans in the fit, %d free terms, relative rms residual %.2f%%):\n",
               fit.points, fit.free_terms, 100 * fit.rms_rel_residual);
        for (int k = 0; k < STEP_NTERMS; k++) {
            double before = sys.step.active ? sys.step.value[k] : system_step_default(k);
            double v = fit.step.value[k], sd = sqrt(fit.step.cov[k][k]);
            bool ms = k == STEP_LAYER_OVERHEAD;
            printf("  %-24s %8.4g -> %-9.4g", system_step_name(k), ms ? before * 1e3 : before,
                   ms ? v * 1e3 : v);
            if (sd > 0)
                printf(" +- %-8.2g", ms ? sd * 1e3 : sd);
            else
                printf(" %-11s", "");
            printf("%s %s\n", ms ? "ms" : "  ", refine_term_state_name(fit.state[k]));
        }
        printf("\nRanking among the measured plans: chosen before #%d (measured %+.1f%% vs the "
               "best), after #%d (%+.1f%%); best measured #%d (%.4f s)\n",
               chosen_before + 1, 100 * gap_before, chosen_after + 1, 100 * gap_after, best + 1,
               rows[best].obs.measured_step_s);
        const char *what[2] = {"predicted-after", "measured"};
        for (int w = 0; w < 2; w++) { /* the re-ranked order, and the true one */
            bool used[REFINE_MAX_PLANS] = {false};
            printf("  order by %-16s", what[w]);
            for (int k = 0; k < n; k++) {
                int pick = -1;
                for (int i = 0; i < n; i++) {
                    double v = w ? rows[i].obs.measured_step_s : rows[i].after;
                    double pv = pick < 0 ? 0 : w ? rows[pick].obs.measured_step_s : rows[pick].after;
                    if (!used[i] && (pick < 0 || v < pv)) pick = i;
                }
                used[pick] = true;
                printf(" #%d", pick + 1);
            }
            printf("\n");
        }
        if (searched) {
            char a[128], b[128];
            layout_short_name(&sb->ranked[0].layout, b, sizeof b);
            layout_short_name(&sa->ranked[0].layout, a, sizeof a);
            printf("Whole search, %d GPUs: best before %s (%.4f s); after %s (%.4f +- %.4f s)\n",
                   gpus, b, sb->ranked[0].time.step_s, a, sa->ranked[0].time.step_s,
                   sa->ranked[0].time.step_sd_s);
        }
        if (ro.out)
            printf("\nwrote %s (use it as --system %s --calibration %s)\n", ro.out, co.system,
                   ro.out);
    }
    json_decref(record);
    json_decref(plist);
    search_result_free(sa);
    search_result_free(sb);
    return 0;
}
