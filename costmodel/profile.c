/*
 * profile.c — reads and writes calibration profiles (see profile.h; schema in
 * data/systems/README.md).
 *
 * A profile is applied in the order its parts depend on: a "step" section first replaces any
 * earlier one (reset to defaults, covariance), then the scalar fields it gives (system.c's
 * table), then the step terms' values, then the collective fits. --system PROFILE follows
 * "calibration_of" down to a preset and applies the profiles back up; the chain is checked for
 * cycles (two profiles naming each other would otherwise never end) before anything is read
 * onto the system.
 */
#include "profile.h"
#include "whole_file.h"

#include "burst_sustain.h"

#include "collective.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "calibration": {"gemm_efficiency_sd": x, "fp8_gemm": {"ratio", "ratio_sd"},
 * "fp8_gemm_shapes": {"points": [[m, n, k, ratio, blockwise_ratio], ...]} (fp8_shape.h),
 * "collectives": [{"op", "group_size", "span",
 * "alpha_s", "busbw_bytes_per_s", "alpha_sd", "busbw_sd", "rms_rel_residual", "points"}]}.
 * Fits replace earlier fits of the same op, group size and span. */
static cm_status apply_calibration(const json_t *cal, const char *path, system_spec *sys,
                                   char *err, size_t errlen)
{
    if (!json_is_object(cal))
        return cm_fail(err, errlen, CM_EPARSE,
                       "profile '%s': \"calibration\" must be an object (see "
                       "data/systems/README.md)",
                       path);
    const json_t *sd = json_object_get(cal, "gemm_efficiency_sd");
    if (sd) {
        if (!json_is_number(sd) || json_number_value(sd) < 0 || json_number_value(sd) > 1)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': calibration.gemm_efficiency_sd must be in [0, 1]", path);
        sys->gemm_efficiency_sd = json_number_value(sd);
    }
    /* "fp8_gemm": {"ratio": r, "ratio_sd": s}: precision.h's FP8 GEMM ratio fitted by plan fit;
     * "fp8_blockwise_gemm": the same for blockwise FP8 GEMMs */
    static const char *const keys[2] = {"fp8_gemm", "fp8_blockwise_gemm"};
    double *dst[2][2] = {{&sys->fp8_gemm_ratio, &sys->fp8_gemm_ratio_sd},
                         {&sys->fp8_blockwise_gemm_ratio, &sys->fp8_blockwise_gemm_ratio_sd}};
    for (int q = 0; q < 2; q++) {
        const json_t *f8 = json_object_get(cal, keys[q]);
        if (!f8) continue;
        const json_t *r = json_object_get(f8, "ratio"), *rs = json_object_get(f8, "ratio_sd");
        if (!json_is_object(f8) || !json_is_number(r) || !(json_number_value(r) > 0) ||
            json_number_value(r) > 2 || (rs && (!json_is_number(rs) || json_number_value(rs) < 0)))
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': calibration.%s needs \"ratio\" in (0, 2] (the "
                           "FP8 GEMM's fraction of the FP8 peak over bf16's of the bf16 peak) "
                           "and an optional \"ratio_sd\" >= 0",
                           path, keys[q]);
        *dst[q][0] = json_number_value(r);
        *dst[q][1] = rs ? json_number_value(rs) : 0;
    }
    /* "fp8_gemm_shapes": the FP8 ratios by GEMM shape (plan fit), replacing earlier ones */
    const json_t *shapes = json_object_get(cal, "fp8_gemm_shapes");
    if (shapes) {
        cm_status st = fp8_shape_from_json(shapes, path, &sys->fp8_gemm_shapes, err, errlen);
        if (st != CM_OK) return st;
    }
    const json_t *arr = json_object_get(cal, "collectives");
    if (!arr) return CM_OK;
    if (!json_is_array(arr))
        return cm_fail(err, errlen, CM_EPARSE,
                       "profile '%s': calibration.collectives must be a list", path);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *e = json_array_get(arr, i);
        const char *opname = json_string_value(json_object_get(e, "op"));
        const collective_desc *d = opname ? collective_find(opname) : NULL;
        const char *span = json_string_value(json_object_get(e, "span"));
        const json_t *n = json_object_get(e, "group_size");
        const json_t *a = json_object_get(e, "alpha_s");
        const json_t *bw = json_object_get(e, "busbw_bytes_per_s");
        if (!d)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': calibration.collectives[%zu] has no known \"op\" "
                           "(all_reduce, all_gather, reduce_scatter, all_to_all, send_recv)",
                           path, i);
        if (!json_is_integer(n) || json_integer_value(n) < 2 || json_integer_value(n) > 1000000 ||
            !span || (strcmp(span, "intra") && strcmp(span, "inter")) || !json_is_number(a) ||
            json_number_value(a) < 0 || json_number_value(a) > 1 || !json_is_number(bw) ||
            json_number_value(bw) <= 1e6 || json_number_value(bw) > 1e14)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': calibration.collectives[%zu] needs group_size >= 2, "
                           "span intra|inter, alpha_s in [0, 1] s and busbw_bytes_per_s in "
                           "(1e6, 1e14]",
                           path, i);
        system_collective_fit f = {
            .op = d->op,
            .group_size = (int)json_integer_value(n),
            .spans_nodes = !strcmp(span, "inter"),
            .alpha_s = json_number_value(a),
            .alpha_sd = json_number_value(json_object_get(e, "alpha_sd")),
            .busbw_bytes_per_s = json_number_value(bw),
            .busbw_sd = json_number_value(json_object_get(e, "busbw_sd")),
            .rms_rel_residual = json_number_value(json_object_get(e, "rms_rel_residual")),
            .points = (int)json_integer_value(json_object_get(e, "points")),
        };
        if (!system_collective_fit_put(sys, &f))
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': more than %d collective fits", path,
                           SYSTEM_MAX_COLLECTIVE_FITS);
    }
    return CM_OK;
}

/* "step": {"compute_scale": .., ..., "covariance": {"terms": [names], "matrix": [[..]]}}, its
 * first half, applied before the scalar fields: a "step" section replaces any earlier one as a
 * whole (the terms are fitted jointly, so values from two fits do not mix); terms it omits are
 * at their defaults. Unknown keys are rejected, so a misspelt term cannot be silently ignored. */
static cm_status apply_step(const json_t *st, const char *path, system_spec *sys, char *err,
                            size_t errlen)
{
    if (!json_is_object(st))
        return cm_fail(err, errlen, CM_EPARSE,
                       "profile '%s': \"step\" must be an object of step terms (see "
                       "data/systems/README.md)",
                       path);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)st, key, v) {
        bool known = !strcmp(key, "covariance") || !strcmp(key, "rms_rel_residual") ||
                     !strcmp(key, "plans");
        for (int t = 0; t < STEP_NTERMS; t++) known |= !strcmp(key, system_step_name(t));
        if (!known)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': unknown step term \"%s\": the terms are compute_scale, "
                           "comm_scale, overlap_efficiency, layer_overhead_s, "
                           "fsdp2_compute_scale (with covariance, rms_rel_residual, plans)",
                           path, key);
    }
    system_step_reset(&sys->step);
    const json_t *cov = json_object_get(st, "covariance");
    if (!cov) return CM_OK;
    const json_t *names = json_object_get(cov, "terms"), *mat = json_object_get(cov, "matrix");
    size_t n = json_array_size(names);
    if (!json_is_object(cov) || !json_is_array(names) || !json_is_array(mat) || n == 0 ||
        n > STEP_NTERMS || json_array_size(mat) != n)
        return cm_fail(err, errlen, CM_EPARSE,
                       "profile '%s': step.covariance must be {\"terms\": [names], \"matrix\": "
                       "[[...]]} with one row and column per named term",
                       path);
    int idx[STEP_NTERMS];
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        idx[i] = -1;
        for (int t = 0; name && t < STEP_NTERMS; t++)
            if (!strcmp(name, system_step_name(t))) idx[i] = t;
        for (size_t j = 0; j < i && idx[i] >= 0; j++)
            if (idx[j] == idx[i]) idx[i] = -1;
        if (idx[i] < 0)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': step.covariance.terms[%zu] is not a step term or is "
                           "named twice",
                           path, i);
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *row = json_array_get(mat, i);
        if (!json_is_array(row) || json_array_size(row) != n)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': step.covariance.matrix row %zu must hold %zu numbers",
                           path, i, n);
        for (size_t j = 0; j < n; j++) {
            const json_t *c = json_array_get(row, j);
            if (!json_is_number(c) || !isfinite(json_number_value(c)))
                return cm_fail(err, errlen, CM_EPARSE,
                               "profile '%s': step.covariance.matrix[%zu][%zu] is not a number",
                               path, i, j);
            sys->step.cov[idx[i]][idx[j]] = json_number_value(c);
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double a = sys->step.cov[idx[i]][idx[j]], b = sys->step.cov[idx[j]][idx[i]];
            double di = sys->step.cov[idx[i]][idx[i]], dj = sys->step.cov[idx[j]][idx[j]];
            if (di < 0 || fabs(a - b) > 1e-9 * (fabs(a) + fabs(b)) + 1e-300 ||
                fabs(a) > sqrt(di * dj) * (1 + 1e-6) + 1e-300)
                return cm_fail(err, errlen, CM_EPARSE,
                               "profile '%s': step.covariance.matrix is not a covariance "
                               "(symmetric, non-negative variances, |correlation| <= 1): refit "
                               "with plan measure --refine",
                               path);
        }
    return CM_OK;
}

/* The second half of "step": the terms' values in their physical ranges (system_step_range),
 * the fit's scatter and how many plans it used. */
static cm_status apply_step_values(const json_t *st, const char *path, system_spec *sys,
                                   char *err, size_t errlen)
{
    double x;
    cm_status s;
    for (int t = 0; t < STEP_NTERMS; t++) {
        const json_t *v = json_object_get(st, system_step_name(t));
        if (!v) continue;
        double lo, hi;
        system_step_range(t, &lo, &hi);
        s = system_field_number(v, path, "step", system_step_name(t), lo, hi, false, &x, err,
                                errlen);
        if (s != CM_OK) return s;
        sys->step.value[t] = x;
    }
    const json_t *v = json_object_get(st, "rms_rel_residual");
    if (v) {
        s = system_field_number(v, path, "step", "rms_rel_residual", 0, 10, false, &x, err,
                                errlen);
        if (s != CM_OK) return s;
        sys->step.rms_rel_residual = x;
    }
    v = json_object_get(st, "plans");
    if (v) {
        s = system_field_number(v, path, "step", "plans", 0, 1000000, true, &x, err, errlen);
        if (s != CM_OK) return s;
        sys->step.plans = (int)x;
    }
    return CM_OK;
}

/* A profile's "attention_rates" (the preset's format): attention measured with other software
 * than the preset's table (e.g. the cuDNN of an older container). Its (mask, head dim) groups
 * replace the preset's, the others stay; its rates are burst figures like the preset's and are
 * derated with the base's sustained_over_burst (burst_sustain.h). */
static cm_status apply_attention(const json_t *attn, const char *path, system_spec *sys,
                                 char *err, size_t errlen)
{
    attn_table *over = malloc(sizeof *over); /* ~20 KB: off the stack */
    if (!over) return cm_fail(err, errlen, CM_ENOMEM, "out of memory reading '%s'", path);
    cm_status st = attn_table_from_json(attn, path, over, err, errlen);
    if (st == CM_OK) {
        burst_sustain_derate_table(over, sys->sustained_over_burst);
        if (!attn_table_overlay(&sys->attention_rates, over))
            st = cm_fail(err, errlen, CM_EPARSE,
                         "profile '%s': its attention_rates and the preset's other groups hold "
                         "more than %d points together; drop points from the profile",
                         path, ATTN_MAX_POINTS);
    }
    free(over);
    return st;
}

/* Apply one profile's JSON object on sys; with_fields false when its scalar fields are already
 * in (a full system file, read by system_from_json). */
static cm_status apply_profile(const json_t *root, const char *path, system_spec *sys,
                               bool with_fields, char *err, size_t errlen)
{
    const json_t *step = json_object_get(root, "step");
    cm_status st;
    if (step && (st = apply_step(step, path, sys, err, errlen)) != CM_OK) return st;
    if (with_fields && (st = system_overlay_fields(root, path, sys, err, errlen)) != CM_OK)
        return st;
    if (step && (st = apply_step_values(step, path, sys, err, errlen)) != CM_OK) return st;
    const json_t *attn = with_fields ? json_object_get(root, "attention_rates") : NULL;
    if (attn && (st = apply_attention(attn, path, sys, err, errlen)) != CM_OK) return st;
    const json_t *cal = json_object_get(root, "calibration");
    if (cal && (st = apply_calibration(cal, path, sys, err, errlen)) != CM_OK) return st;
    return CM_OK;
}

cm_status profile_overlay(const char *path, system_spec *sys, char *err, size_t errlen)
{
    cm_status st;
    json_t *root = system_read_json(path, &st, err, errlen);
    if (!root) return st;
    st = apply_profile(root, path, sys, true, err, errlen);
    json_decref(root);
    return st;
}

/* A name --system or "calibration_of" gives is a file when it looks like one, else a preset. */
static bool names_file(const char *name) { return strchr(name, '/') || strstr(name, ".json"); }

/* "a.json -> b.json -> a.json" into buf: the chain's names, then last. */
static void chain_text(char *buf, size_t len, const char *const *names, int n, const char *last)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i <= n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " -> " : "",
                                 i < n ? names[i] : last);
}

/* The profiles from the one --system names down to the system under them, in load order
 * reversed: names[0] is the one given, roots[i] its JSON, base[i] what it names. */
typedef struct {
    int n;
    const char *names[PROFILE_MAX_CHAIN];
    json_t *roots[PROFILE_MAX_CHAIN];
    char base[PROFILE_MAX_CHAIN][64];
    json_t *bottom;      /* the full system file at the end of the chain, when it is a file */
} profile_chain;

static void chain_free(profile_chain *c)
{
    for (int i = 0; i < c->n; i++) json_decref(c->roots[i]);
    if (c->bottom) json_decref(c->bottom);
}

/* Follow "calibration_of" from name until a preset name or a file without one, reading each
 * profile once. A profile met twice (by file identity, whatever its spelling) is a cycle. */
static cm_status chain_read(const char *name, profile_chain *c, const char **bottom_name,
                            char *err, size_t errlen)
{
    struct stat ids[PROFILE_MAX_CHAIN];
    bool known[PROFILE_MAX_CHAIN];
    memset(c, 0, sizeof *c);
    const char *cur = name;
    while (names_file(cur)) {
        cm_status st;
        json_t *root = system_read_json(cur, &st, err, errlen);
        if (!root) return st;
        const json_t *base = json_object_get(root, "calibration_of");
        if (!json_is_string(base) || !json_string_value(base)[0]) {
            c->bottom = root;
            break;
        }
        struct stat id;
        bool found = stat(cur, &id) == 0;
        for (int i = 0; found && i < c->n; i++)
            if (known[i] && ids[i].st_dev == id.st_dev && ids[i].st_ino == id.st_ino) {
                char text[CM_ERRLEN];
                chain_text(text, sizeof text, c->names, c->n, cur);
                json_decref(root);
                return cm_fail(err, errlen, CM_EPARSE,
                               "calibration_of cycle: %s; fix the calibration_of field", text);
            }
        if (c->n == PROFILE_MAX_CHAIN) {
            char text[CM_ERRLEN];
            chain_text(text, sizeof text, c->names, c->n, cur);
            json_decref(root);
            return cm_fail(err, errlen, CM_EPARSE,
                           "calibration_of chain deeper than %d profiles: %s; make a "
                           "calibration_of field name a preset (e.g. h200-x4)",
                           PROFILE_MAX_CHAIN, text);
        }
        int k = c->n++;
        c->names[k] = cur;
        c->roots[k] = root;
        known[k] = found;
        if (found) ids[k] = id;
        snprintf(c->base[k], sizeof c->base[k], "%s", json_string_value(base));
        if (strchr(c->base[k], '/'))
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': \"calibration_of\" must name a preset under "
                           "data/systems/ (e.g. h200-x4)",
                           cur);
        cur = c->base[k];
    }
    *bottom_name = cur;
    return CM_OK;
}

cm_status profile_load_system(const char *name_or_path, const char *data_dir, system_spec *sys,
                              char *err, size_t errlen)
{
    if (!name_or_path || !*name_or_path) /* says that no system was given */
        return system_load(name_or_path, data_dir, sys, err, errlen);
    profile_chain c;
    const char *bottom = NULL;
    cm_status st = chain_read(name_or_path, &c, &bottom, err, errlen);
    char preset[1024];
    const char *bottom_path = bottom;
    if (st == CM_OK && !c.bottom) { /* the chain ends at a preset name */
        st = system_preset_path(bottom, data_dir, preset, sizeof preset, err, errlen);
        if (st == CM_OK) c.bottom = system_read_json(preset, &st, err, errlen);
        bottom_path = preset;
    }
    if (st == CM_OK)
        st = system_from_json(c.bottom, bottom_path, bottom_path == preset ? bottom : NULL, sys,
                              err, errlen);
    if (st == CM_OK) st = apply_profile(c.bottom, bottom_path, sys, false, err, errlen);
    for (int i = c.n - 1; st == CM_OK && i >= 0; i--)
        st = apply_profile(c.roots[i], c.names[i], sys, true, err, errlen);
    if (st == CM_OK && c.n > 0) {
        const char *stem = strrchr(name_or_path, '/');
        snprintf(sys->name, sizeof sys->name, "%.30s+%.30s", c.base[0],
                 stem ? stem + 1 : name_or_path);
    }
    chain_free(&c);
    return st;
}

cm_status profile_write(const char *path, const system_spec *sys, const void *extra_json,
                        char *err, size_t errlen)
{
    json_t *root = json_object();
    if (extra_json) json_object_update(root, (json_t *)extra_json);
    json_object_set_new(root, "gpu", json_pack("{s:f, s:f}", "gemm_efficiency_max",
                                               sys->gemm_efficiency_max, "gemm_overhead_s",
                                               sys->gemm_overhead_s));
    json_t *list = json_array();
    for (int i = 0; i < sys->n_collective_fits; i++) {
        const system_collective_fit *f = &sys->collective_fits[i];
        json_array_append_new(
            list, json_pack("{s:s, s:i, s:s, s:f, s:f, s:f, s:f, s:f, s:i}", "op",
                            collective_get((collective_op)f->op)->name, "group_size",
                            f->group_size, "span", f->spans_nodes ? "inter" : "intra", "alpha_s",
                            f->alpha_s, "alpha_sd", f->alpha_sd, "busbw_bytes_per_s",
                            f->busbw_bytes_per_s, "busbw_sd", f->busbw_sd, "rms_rel_residual",
                            f->rms_rel_residual, "points", f->points));
    }
    json_t *cal = json_pack("{s:f, s:o}", "gemm_efficiency_sd", sys->gemm_efficiency_sd,
                            "collectives", list);
    if (sys->fp8_gemm_ratio > 0)
        json_object_set_new(cal, "fp8_gemm", json_pack("{s:f, s:f}", "ratio", sys->fp8_gemm_ratio,
                                                       "ratio_sd", sys->fp8_gemm_ratio_sd));
    if (sys->fp8_blockwise_gemm_ratio > 0)
        json_object_set_new(cal, "fp8_blockwise_gemm",
                            json_pack("{s:f, s:f}", "ratio", sys->fp8_blockwise_gemm_ratio,
                                      "ratio_sd", sys->fp8_blockwise_gemm_ratio_sd));
    json_t *shapes = fp8_shape_to_json(&sys->fp8_gemm_shapes);
    if (shapes) json_object_set_new(cal, "fp8_gemm_shapes", shapes);
    json_object_set_new(root, "calibration", cal);
    if (sys->step.active) {
        json_t *st = json_object(), *names = json_array(), *mat = json_array();
        for (int t = 0; t < STEP_NTERMS; t++) {
            json_object_set_new(st, system_step_name(t), json_real(sys->step.value[t]));
            json_array_append_new(names, json_string(system_step_name(t)));
            json_t *row = json_array();
            for (int u = 0; u < STEP_NTERMS; u++)
                json_array_append_new(row, json_real(sys->step.cov[t][u]));
            json_array_append_new(mat, row);
        }
        json_object_set_new(st, "covariance", json_pack("{s:o, s:o}", "terms", names, "matrix",
                                                        mat));
        json_object_set_new(st, "rms_rel_residual", json_real(sys->step.rms_rel_residual));
        json_object_set_new(st, "plans", json_integer(sys->step.plans));
        json_object_set_new(root, "step", st);
    }
    /* written whole: a failed write leaves no partial file (whole_file.h) */
    char why[CM_ERRLEN];
    cm_status st = whole_file_json(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10), why, sizeof why);
    json_decref(root);
    if (st != CM_OK) return cm_fail(err, errlen, st, "cannot write profile: %s", why);
    return CM_OK;
}
