/*
 * system.c — reads GPU/cluster presets and calibration overlays (data/systems/README.md).
 *
 * One table maps each JSON field ("gpu.peak_bf16_flops") to its struct member, so the preset
 * reader, the overlay reader and the checks share one list. A preset must give every required
 * field; an overlay may give any subset.
 */
#include "system.h"

#include "collective.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *section;
    const char *key;
    size_t offset;
    bool is_int;
    bool required;
    double min, max; /* sane range; outside it the file is rejected */
} system_field;

#define F(sec, key, member, req, lo, hi) {sec, key, offsetof(system_spec, member), false, req, lo, hi}
#define I(sec, key, member, req, lo, hi) {sec, key, offsetof(system_spec, member), true, req, lo, hi}

static const system_field fields[] = {
    F("gpu", "peak_bf16_flops", peak_bf16_flops, true, 1e12, 1e17),
    F("gpu", "peak_fp8_flops", peak_fp8_flops, false, 0, 1e17),
    F("gpu", "hbm_bytes", hbm_bytes, true, 1e9, 1e13),
    F("gpu", "hbm_bandwidth_bytes_per_s", hbm_bandwidth_bytes_per_s, true, 1e10, 1e14),
    F("gpu", "gemm_efficiency_max", gemm_efficiency_max, true, 0.05, 1.0),
    F("gpu", "gemm_overhead_s", gemm_overhead_s, true, 0, 1e-3),
    F("gpu", "hbm_efficiency", hbm_efficiency, true, 0.05, 1.0),
    F("gpu", "attention_efficiency", attention_efficiency, true, 0.05, 1.0),
    F("gpu", "eager_elementwise_efficiency", eager_elementwise_efficiency, true, 0.02, 1.0),
    F("gpu", "eager_kernel_gap_s", eager_kernel_gap_s, false, 0, 1e-4),
    I("node", "gpus_per_node", gpus_per_node, true, 1, 1024),
    F("node", "intra_bandwidth_bytes_per_s", intra_bandwidth_bytes_per_s, true, 1e9, 1e14),
    F("node", "intra_latency_s", intra_latency_s, true, 0, 1e-2),
    F("node", "intra_busbw_efficiency", intra_busbw_efficiency, true, 0.05, 1.0),
    F("node", "call_latency_s", call_latency_s, false, 0, 1e-2),
    I("network", "nics_per_node", nics_per_node, true, 0, 1024),
    F("network", "nic_bandwidth_bytes_per_s", nic_bandwidth_bytes_per_s, true, 0, 1e14),
    F("network", "latency_s", inter_latency_s, true, 0, 1e-1),
    F("network", "busbw_efficiency", inter_busbw_efficiency, true, 0, 1.0),
    F("host", "pcie_bandwidth_bytes_per_s", pcie_bandwidth_bytes_per_s, true, 1e9, 1e13),
    F("host", "memory_bytes", host_memory_bytes, true, 1e9, 1e15),
    F("host", "adam_params_per_s", host_adam_params_per_s, true, 1e6, 1e13),
    F("framework", "reserved_bytes", framework_reserved_bytes, true, 0, 1e11),
    /* Step-level corrections (issue 4; fitted by plan measure --refine, costmodel/refine.h),
     * optional everywhere, in system_step_term order; their ranges are the physical ones. */
    F("step", "compute_scale", step.value[STEP_COMPUTE_SCALE], false, 0.1, 10),
    F("step", "comm_scale", step.value[STEP_COMM_SCALE], false, 0.1, 10),
    F("step", "overlap_efficiency", step.value[STEP_OVERLAP_EFFICIENCY], false, 0, 1),
    F("step", "layer_overhead_s", step.value[STEP_LAYER_OVERHEAD], false, 0, 0.1),
    F("step", "fsdp2_compute_scale", step.value[STEP_FSDP2_COMPUTE_SCALE], false, 0.1, 10),
    F("step", "rms_rel_residual", step.rms_rel_residual, false, 0, 10),
    I("step", "plans", step.plans, false, 0, 1000000),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

/* "calibration": {"gemm_efficiency_sd": x, "collectives": [{"op", "group_size", "span",
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
        int k;
        for (k = 0; k < sys->n_collective_fits; k++) {
            system_collective_fit *o = &sys->collective_fits[k];
            if (o->op == f.op && o->group_size == f.group_size && o->spans_nodes == f.spans_nodes)
                break;
        }
        if (k == SYSTEM_MAX_COLLECTIVE_FITS)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': more than %d collective fits", path,
                           SYSTEM_MAX_COLLECTIVE_FITS);
        sys->collective_fits[k] = f;
        if (k == sys->n_collective_fits) sys->n_collective_fits++;
    }
    return CM_OK;
}

static const char *const step_names[STEP_NTERMS] = {
    "compute_scale", "comm_scale", "overlap_efficiency", "layer_overhead_s",
    "fsdp2_compute_scale",
};
static const double step_defaults[STEP_NTERMS] = {1, 1, 1, 0, 1};

const char *system_step_name(system_step_term t)
{
    return t >= 0 && t < STEP_NTERMS ? step_names[t] : "?";
}

double system_step_default(system_step_term t)
{
    return t >= 0 && t < STEP_NTERMS ? step_defaults[t] : 0;
}

void system_step_range(system_step_term t, double *lo, double *hi)
{
    *lo = 0;
    *hi = 0;
    for (size_t i = 0; i < NFIELDS; i++)
        if (!strcmp(fields[i].section, "step") && t >= 0 && t < STEP_NTERMS &&
            !strcmp(fields[i].key, step_names[t])) {
            *lo = fields[i].min;
            *hi = fields[i].max;
        }
}

void system_step_reset(system_step *s)
{
    memset(s, 0, sizeof *s);
    s->active = true;
    for (int t = 0; t < STEP_NTERMS; t++) s->value[t] = step_defaults[t];
}

/* "step": {"compute_scale": .., ..., "covariance": {"terms": [names], "matrix": [[..]]}}. Called
 * before the field table is applied: a "step" section replaces any earlier one as a whole (the
 * terms are fitted jointly, so values from two fits do not mix); terms it omits are at their
 * defaults. Unknown keys are rejected, so a misspelt term cannot be silently ignored. */
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
        for (int t = 0; t < STEP_NTERMS; t++) known |= !strcmp(key, step_names[t]);
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
            if (!strcmp(name, step_names[t])) idx[i] = t;
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

static cm_status apply(const json_t *root, const char *path, system_spec *sys, bool overlay,
                       char *err, size_t errlen)
{
    const json_t *step = json_object_get(root, "step");
    if (step) {
        cm_status st = apply_step(step, path, sys, err, errlen);
        if (st != CM_OK) return st;
    }
    for (size_t i = 0; i < NFIELDS; i++) {
        const system_field *f = &fields[i];
        const json_t *sec = json_object_get(root, f->section);
        const json_t *v = sec && json_is_object(sec) ? json_object_get(sec, f->key) : NULL;
        if (!v) {
            if (f->required && !overlay)
                return cm_fail(err, errlen, CM_EPARSE,
                               "system file '%s' lacks \"%s\".\"%s\": add it (schema in "
                               "data/systems/README.md)",
                               path, f->section, f->key);
            continue;
        }
        if (!json_is_number(v))
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': \"%s\".\"%s\" must be a number: fix it", path,
                           f->section, f->key);
        double x = json_number_value(v);
        if (!(x >= f->min && x <= f->max) || (f->is_int && x != floor(x)))
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': \"%s\".\"%s\" = %g is outside the sane range "
                           "[%g, %g]: check units (bytes, seconds, FLOP/s)",
                           path, f->section, f->key, x, f->min, f->max);
        char *base = (char *)sys + f->offset;
        if (f->is_int)
            *(int *)base = (int)x;
        else
            *(double *)base = x;
    }
    const json_t *cal = json_object_get(root, "calibration");
    if (cal) {
        cm_status st = apply_calibration(cal, path, sys, err, errlen);
        if (st != CM_OK) return st;
    }
    if (sys->nics_per_node > 0 && sys->nic_bandwidth_bytes_per_s <= 0)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': nics_per_node > 0 needs nic_bandwidth_bytes_per_s > 0",
                       path);
    return CM_OK;
}

static json_t *load_object(const char *path, char *err, size_t errlen, cm_status *st)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        FILE *f = fopen(path, "r");
        if (!f) {
            *st = cm_fail(err, errlen, CM_EIO, "cannot read system file '%s': no such file",
                          path);
            return NULL;
        }
        fclose(f);
        *st = cm_fail(err, errlen, CM_EPARSE,
                      "system file '%s' is not valid JSON (line %d: %s): fix the file", path,
                      jerr.line, jerr.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *st = cm_fail(err, errlen, CM_EPARSE, "system file '%s' must hold a JSON object", path);
        return NULL;
    }
    *st = CM_OK;
    return root;
}

cm_status system_load_json(const char *path, const char *name, system_spec *sys, char *err,
                           size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    cm_status st;
    json_t *root = load_object(path, err, errlen, &st);
    if (!root) return st;
    const json_t *v = json_object_get(root, "name");
    snprintf(sys->name, sizeof sys->name, "%s",
             name ? name : (json_is_string(v) ? json_string_value(v) : path));
    v = json_object_get(root, "description");
    if (json_is_string(v)) snprintf(sys->description, sizeof sys->description, "%s",
                                    json_string_value(v));
    const json_t *gpu = json_object_get(root, "gpu");
    v = gpu ? json_object_get(gpu, "name") : NULL;
    snprintf(sys->gpu_name, sizeof sys->gpu_name, "%s", json_is_string(v) ? json_string_value(v)
                                                                          : "GPU");
    st = apply(root, path, sys, false, err, errlen);
    json_decref(root);
    return st;
}

cm_status system_overlay_json(const char *path, system_spec *sys, char *err, size_t errlen)
{
    cm_status st;
    json_t *root = load_object(path, err, errlen, &st);
    if (!root) return st;
    st = apply(root, path, sys, true, err, errlen);
    json_decref(root);
    return st;
}

void system_list_presets(const char *data_dir, char *buf, size_t buflen)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/systems", data_dir);
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    size_t used = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && used + len < buflen)
            used += (size_t)snprintf(buf + used, buflen - used, "%s%.*s", used ? ", " : "",
                                     (int)(len - 5), e->d_name);
    }
    closedir(d);
}

cm_status system_load(const char *name_or_path, const char *data_dir, system_spec *sys,
                      char *err, size_t errlen)
{
    if (!name_or_path || !*name_or_path)
        return cm_fail(err, errlen, CM_EINVAL, "no system given: use --system with a preset "
                                               "(e.g. h100) or a path to a system JSON");
    if (strchr(name_or_path, '/') || strstr(name_or_path, ".json")) {
        /* A calibration profile names the preset it overlays ("calibration_of", written by
         * plan fit and plan measure --refine): --system PROFILE loads that preset, then the
         * profile on top, so a profile works wherever a system does. */
        cm_status st;
        json_t *root = load_object(name_or_path, err, errlen, &st);
        if (!root) return st;
        const json_t *base = json_object_get(root, "calibration_of");
        char base_name[64] = "";
        if (json_is_string(base))
            snprintf(base_name, sizeof base_name, "%s", json_string_value(base));
        json_decref(root);
        if (!base_name[0]) return system_load_json(name_or_path, NULL, sys, err, errlen);
        if (strchr(base_name, '/') || !strcmp(base_name, name_or_path))
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': \"calibration_of\" must name a preset under "
                           "data/systems/ (e.g. h200-x4)",
                           name_or_path);
        st = system_load(base_name, data_dir, sys, err, errlen);
        if (st != CM_OK) return st;
        st = system_overlay_json(name_or_path, sys, err, errlen);
        if (st == CM_OK) {
            const char *stem = strrchr(name_or_path, '/');
            snprintf(sys->name, sizeof sys->name, "%.30s+%.30s", base_name,
                     stem ? stem + 1 : name_or_path);
        }
        return st;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/systems/%s.json", data_dir, name_or_path);
    FILE *f = fopen(path, "r");
    if (!f) {
        char list[1024];
        system_list_presets(data_dir, list, sizeof list);
        return cm_fail(err, errlen, CM_EINVAL,
                       "unknown system '%s': use one of the presets (%s) or a path to a system "
                       "JSON",
                       name_or_path, list[0] ? list : "none found: set PLAN_DATA_DIR");
    }
    fclose(f);
    return system_load_json(path, name_or_path, sys, err, errlen);
}

double system_inter_bandwidth_per_gpu(const system_spec *sys)
{
    if (sys->nics_per_node <= 0) return 0;
    return sys->nics_per_node * sys->nic_bandwidth_bytes_per_s / sys->gpus_per_node;
}

cm_status system_write_profile(const char *path, const system_spec *sys, const void *extra_json,
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
    json_object_set_new(root, "calibration",
                        json_pack("{s:f, s:o}", "gemm_efficiency_sd", sys->gemm_efficiency_sd,
                                  "collectives", list));
    if (sys->step.active) {
        json_t *st = json_object(), *names = json_array(), *mat = json_array();
        for (int t = 0; t < STEP_NTERMS; t++) {
            json_object_set_new(st, step_names[t], json_real(sys->step.value[t]));
            json_array_append_new(names, json_string(step_names[t]));
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
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (rc != 0)
        return cm_fail(err, errlen, CM_EIO, "cannot write profile '%s': check the directory",
                       path);
    return CM_OK;
}
