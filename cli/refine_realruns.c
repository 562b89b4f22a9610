/*
 * refine_realruns.c — `plan refine --realruns FILE` (refine_realruns.h). A run is priced as
 * bench/realruns/fidelity.py prices it: the run's config.json cut to its layer count, FSDP2 on
 * world_size GPUs, its sequence and micro-batch, gradient checkpointing as full recompute, its
 * implementation (--impl), torch.compile and optimizer implementation (torch's default AdamW
 * on CUDA is foreach). Runs that went out of memory, or that the cost model cannot express,
 * are left out and named.
 */
#define _GNU_SOURCE /* strcasestr */
#include "refine_realruns.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "estimate.h"
#include "impl.h"
#include "input_file.h"
#include "profile.h"
#include "refine.h"
#include "units.h"

typedef struct {
    char label[64];
    model_spec model;
    training_spec training;
} run_spec;

/* The run's config: as written (relative to the repository root, where the scripts run), else
 * beside the file (bench/realruns/results/X.jsonl -> bench/realruns/configs/NAME). */
static char *config_text(const char *cfg, const char *jsonl, size_t *len, char *err, size_t errlen)
{
    char *text = NULL;
    if (input_file_read(cfg, "model config", "check the run's \"config\"", INPUT_FILE_JSON_MAX_BYTES,
                        &text, len, err, errlen) == CM_OK)
        return text;
    char alt[1024];
    const char *slash = strrchr(jsonl, '/'), *base = strrchr(cfg, '/');
    snprintf(alt, sizeof alt, "%.*s%s../configs/%s", slash ? (int)(slash - jsonl) : 0, jsonl,
             slash ? "/" : "", base ? base + 1 : cfg);
    if (input_file_read(alt, "model config", "check the run's \"config\"", INPUT_FILE_JSON_MAX_BYTES,
                        &text, len, err, errlen) == CM_OK)
        return text;
    return NULL;
}

/* One line's run, or why it is left out (false). */
static bool run_from_json(const json_t *r, const char *jsonl, const system_spec *sys,
                          run_spec *rs, refine_obs *obs, bool *other_gpu, char *why, size_t whylen)
{
    *other_gpu = false;
    const char *label = json_string_value(json_object_get(r, "label"));
    const char *gpu = json_string_value(json_object_get(r, "gpu"));
    const char *cfg = json_string_value(json_object_get(r, "config"));
    const json_t *step = json_object_get(r, "step_s_median");
    snprintf(rs->label, sizeof rs->label, "%s", label ? label : "?");
    if (json_is_true(json_object_get(r, "oom"))) return snprintf(why, whylen, "out of memory"), false;
    if (!gpu || !strcasestr(gpu, sys->name)) {
        *other_gpu = true; /* another system's run: not named, the file may hold both */
        return false;
    }
    if (!cfg || !json_is_number(step) || !(json_number_value(step) > 0))
        return snprintf(why, whylen, "no \"config\" or \"step_s_median\""), false;
    size_t len = 0;
    char err[CM_ERRLEN];
    char *text = config_text(cfg, jsonl, &len, err, sizeof err);
    if (!text) return snprintf(why, whylen, "%s", err), false;
    json_error_t je;
    json_t *c = json_loadb(text, len, 0, &je);
    free(text);
    if (!c) return snprintf(why, whylen, "%s is not valid JSON", cfg), false;
    int layers = (int)json_integer_value(json_object_get(r, "layers"));
    if (layers > 0) json_object_set_new(c, "num_hidden_layers", json_integer(layers));
    char *cut = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    cm_status st = cut ? model_load_json_string(cut, strlen(cut), rs->label, &rs->model, err,
                                                sizeof err)
                       : CM_ENOMEM;
    free(cut);
    if (st != CM_OK) return snprintf(why, whylen, "%s", err), false;
    int ws = (int)json_integer_value(json_object_get(r, "world_size"));
    if (ws < 1) ws = 1;
    int mbs = (int)json_integer_value(json_object_get(r, "mbs"));
    rs->training = training_default();
    rs->training.seq_len = (int)json_integer_value(json_object_get(r, "seq"));
    rs->training.global_batch = mbs * ws;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.dp = ws;
    l.mbs = mbs;
    l.recompute = json_is_true(json_object_get(r, "grad_ckpt")) ? RECOMPUTE_FULL : RECOMPUTE_NONE;
    l.compile = json_is_true(json_object_get(r, "compile"));
    const char *impl = json_string_value(json_object_get(r, "impl"));
    if (impl && !impl_parse(impl, &l.impl))
        return snprintf(why, whylen, "implementation '%s' is not modelled", impl), false;
    const char *oi = json_string_value(json_object_get(r, "optimizer_impl"));
    l.optimizer_impl = OPTIMIZER_IMPL_FOREACH; /* torch's default AdamW on CUDA */
    if (oi && strcmp(oi, "default") && !optimizer_impl_parse(oi, &l.optimizer_impl))
        return snprintf(why, whylen, "optimizer '%s' is not modelled", oi), false;
    if (training_check(&rs->training, err, sizeof err) != CM_OK ||
        layout_check(&rs->model, sys, &rs->training, &l, ws, err, sizeof err) != CM_OK)
        return snprintf(why, whylen, "%s", err), false;
    *obs = (refine_obs){.layout = l, .measured_step_s = json_number_value(step)};
    return true;
}

static double predict(const run_spec *rs, const system_spec *sys, const layout *l)
{
    double s = NAN;
    char err[CM_ERRLEN];
    if (refine_predict(&rs->model, sys, &rs->training, l, &s, NULL, err, sizeof err) != CM_OK)
        return NAN;
    return s;
}

int refine_realruns(const char *path, const cli_options *co, unsigned terms, const char *out,
                    const char *command)
{
    char err[CM_ERRLEN];
    static system_spec sys, refined;
    const char *dir = cli_data_dir();
    if (profile_load_system(co->system, dir, &sys, err, sizeof err) != CM_OK) return cli_error(err);
    if (co->calibration && profile_overlay(co->calibration, &sys, err, sizeof err) != CM_OK)
        return cli_error(err);
    char *text = NULL;
    size_t len = 0;
    if (input_file_read(path, "real-runs file", "give a bench/realruns results .jsonl file",
                        INPUT_FILE_JSON_MAX_BYTES, &text, &len, err, sizeof err) != CM_OK) {
        char msg[CM_ERRLEN + 32];
        snprintf(msg, sizeof msg, "--realruns: %s", err);
        return cli_error(msg);
    }
    static run_spec runs[REFINE_MAX_PLANS];
    static refine_obs obs[REFINE_MAX_PLANS];
    int n = 0, lineno = 0, left = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        lineno++;
        if (!*line) continue;
        json_error_t je;
        json_t *r = json_loads(line, 0, &je);
        if (!json_is_object(r)) {
            json_decref(r);
            free(text);
            snprintf(err, sizeof err,
                     "--realruns %s:%d is not a JSON object (%s): give a bench/realruns results "
                     ".jsonl file, one run a line", path, lineno, je.text);
            return cli_error(err);
        }
        char why[CM_ERRLEN] = "";
        bool other_gpu = false;
        if (n == REFINE_MAX_PLANS) {
            fprintf(stderr, "refine: left out line %d: more than %d runs\n", lineno,
                    REFINE_MAX_PLANS);
            left++;
        } else if (run_from_json(r, path, &sys, &runs[n], &obs[n], &other_gpu, why, sizeof why)) {
            obs[n].model = &runs[n].model;
            obs[n].training = &runs[n].training;
            n++;
        } else if (!other_gpu) {
            fprintf(stderr, "refine: left out %s: %s\n", runs[n].label, why);
            left++;
        }
        json_decref(r);
    }
    free(text);
    if (n < 2) {
        snprintf(err, sizeof err,
                 "--realruns %s: %d run(s) measured on %s's GPU that the model can price; the fit "
                 "needs 2 or more: pick the file of this system's runs (or --system)",
                 path, n, sys.name);
        return cli_error(err);
    }
    static refine_result fit;
    if (refine_fit(NULL, &sys, NULL, obs, n, NULL, terms, &fit, err, sizeof err) != CM_OK)
        return cli_error(err);
    double held[REFINE_MAX_PLANS];
    if (refine_holdout(NULL, &sys, NULL, obs, n, NULL, terms, held, NULL, err, sizeof err) !=
        CM_OK)
        return cli_error(err);
    refined = sys;
    refine_apply(&refined, &fit);
    double eb[REFINE_MAX_PLANS], ea[REFINE_MAX_PLANS], eh[REFINE_MAX_PLANS];
    printf("plan refine --realruns %s: %d runs on %s (%d left out), step-level terms fitted to "
           "the real steps\n\n",
           path, n, sys.name, left);
    printf("  %-28s %9s %9s %8s %9s %8s %9s %8s\n", "run", "real_s", "before_s", "err",
           "after_s", "err", "held_s", "err");
    for (int i = 0; i < n; i++) {
        double meas = obs[i].measured_step_s;
        double b = predict(&runs[i], &sys, &obs[i].layout);
        double a = predict(&runs[i], &refined, &obs[i].layout);
        eb[i] = units_rel_error(b, meas);
        ea[i] = units_rel_error(a, meas);
        eh[i] = units_rel_error(held[i], meas);
        printf("  %-28s %9.4f %9.4f %+7.1f%% %9.4f %+7.1f%% %9.4f %+7.1f%%\n", runs[i].label, meas,
               b, 100 * eb[i], a, 100 * ea[i], held[i], 100 * eh[i]);
    }
    printf("\nmedian |error|: before %.1f%%, after %.1f%% (fitted on every run), held out %.1f%% "
           "(leave-one-out: each run predicted from a fit to the others)\n",
           100 * refine_median_abs(eb, n), 100 * refine_median_abs(ea, n),
           100 * refine_median_abs(eh, n));
    printf("terms (rms residual %.1f%%):\n", 100 * fit.rms_rel_residual);
    for (int k = 0; k < STEP_NTERMS; k++)
        printf("  %-22s %10.4g  %s\n", system_step_name((system_step_term)k),
               fit.step.value[k], refine_term_state_name(fit.state[k]));
    if (out) {
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        json_t *extra = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", out, "description",
                                  "calibration profile with step-level terms fitted to real "
                                  "training steps (plan refine --realruns)",
                                  "calibration_of", co->system, "date", date, "command", command,
                                  "realruns", path);
        cm_status st = profile_write(out, &refined, extra, err, sizeof err);
        json_decref(extra);
        if (st != CM_OK) return cli_error(err);
        printf("wrote %s (use as --calibration %s)\n", out, out);
    }
    return 0;
}
