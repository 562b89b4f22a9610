/*
 * refine_plans.c — picking the plans `plan refine` measures and the saved-measurement format
 * (see refine_plans.h). Layouts go through layout_codec.h: written with resolved values, read
 * back whether they hold those or the raw zeros of records written before the codec.
 */
#include "refine_plans.h"
#include "input_file.h"
#include "whole_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout_codec.h"
#include "search.h"

/* the measured step times --from accepts, in seconds */
#define REFINE_MIN_STEP_S 1e-6
#define REFINE_MAX_STEP_S 86400.0

/* ---- the records ---- */

json_t *refine_plans_json(const refine_plan *plans, int n)
{
    json_t *plist = json_array();
    for (int i = 0; i < n; i++) {
        const refine_plan *r = &plans[i];
        char name[128];
        layout_short_name(&r->obs.layout, name, sizeof name);
        json_t *p = json_pack("{s:s, s:o, s:i, s:f}", "name", name, "layout",
                              layout_to_json(&r->obs.layout), "rank", r->rank, "measured_step_s",
                              r->obs.measured_step_s);
        if (r->spread > 0) json_object_set_new(p, "measured_spread", json_real(r->spread));
        if (r->mem_meas > 0)
            json_object_set_new(p, "measured_memory_bytes", json_real(r->mem_meas));
        if (r->mem_pred > 0)
            json_object_set_new(p, "predicted_memory_bytes", json_real(r->mem_pred));
        json_array_append_new(plist, p);
    }
    return plist;
}

json_t *refine_plans_record(const refine_run *run, json_t *plist)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:O}", "model", run->model,
                     "model_name", run->model_name, "system", run->system, "seq", run->seq,
                     "gbs", run->gbs, "gpus", run->gpus, "device",
                     run->device[0] ? run->device : "(from file)", "plans", plist);
}

cm_status refine_plans_write_record(const char *path, const refine_run *run,
                                    const refine_plan *plans, int n, char *err, size_t errlen)
{
    json_t *plist = refine_plans_json(plans, n);
    json_t *rec = refine_plans_record(run, plist);
    cm_status st = rec ? whole_file_json(rec, path, JSON_INDENT(1) | JSON_REAL_PRECISION(10),
                                         err, errlen)
                       : cm_fail(err, errlen, CM_ENOMEM, "out of memory writing '%s'", path);
    json_decref(rec);
    json_decref(plist);
    if (st != CM_OK) return st;
    return CM_OK;
}

cm_status refine_plans_read(const char *path, const char *model_ref, const model_spec *m,
                            const training_spec *t, refine_plan *plans, int *n, char *err,
                            size_t errlen)
{
    *n = 0;
    /* through the checked opener (input_file.h): a FIFO or a directory is named, not waited on */
    char *text = NULL;
    size_t len = 0;
    cm_status rs = input_file_read(path, "measurements file", "give a file plan refine --record "
                                   "wrote", INPUT_FILE_JSON_MAX_BYTES, &text, &len, err, errlen);
    if (rs != CM_OK) return rs;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root)
        return cm_fail(err, errlen, CM_EPARSE, "'%s' is not valid JSON (line %d: %s)", path,
                       je.line, je.text);
    const json_t *src = json_object_get(root, "refine") ? json_object_get(root, "refine") : root;
    const json_t *list = json_object_get(src, "plans");
    const char *model = json_string_value(json_object_get(src, "model"));
    const char *model_name = json_string_value(json_object_get(src, "model_name"));
    const json_t *seq = json_object_get(src, "seq"), *gbs = json_object_get(src, "gbs");
    cm_status st = CM_OK;
    if (!json_is_array(list) || json_array_size(list) == 0)
        st = cm_fail(err, errlen, CM_EPARSE,
                     "'%s' holds no \"plans\" list: give the --format json output of plan "
                     "refine, or a profile it wrote",
                     path);
    else if ((model || model_name) && !(model && !strcmp(model, model_ref)) &&
             !(model_name && !strcmp(model_name, m->name)))
        st = cm_fail(err, errlen, CM_EINVAL, "'%s' was measured with --model %s: pass the same",
                     path, model ? model : model_name);
    else if ((seq && json_integer_value(seq) != t->seq_len) ||
             (gbs && json_integer_value(gbs) != t->global_batch))
        st = cm_fail(err, errlen, CM_EINVAL,
                     "'%s' was measured with --seq %lld --gbs %lld: pass the same", path,
                     (long long)json_integer_value(seq), (long long)json_integer_value(gbs));
    else if (json_array_size(list) > REFINE_MAX_PLANS)
        st = cm_fail(err, errlen, CM_EINVAL, "'%s': at most %d plans", path, REFINE_MAX_PLANS);
    for (size_t i = 0; st == CM_OK && i < json_array_size(list); i++) {
        const json_t *p = json_array_get(list, i);
        refine_plan *r = &plans[i];
        memset(r, 0, sizeof *r);
        char where[64], msg[CM_ERRLEN];
        snprintf(where, sizeof where, "plans[%zu].layout", i);
        if (layout_from_json(json_object_get(p, "layout"), where, &r->obs.layout, NULL, msg,
                             sizeof msg) != CM_OK) {
            st = cm_fail(err, errlen, CM_EPARSE, "'%s': %s", path, msg);
            break;
        }
        /* a step of a microsecond to a day: past them (1e308, 1e-300) the fit and the table
         * printed inf and 300-digit numbers with exit 0 */
        const json_t *ts = json_object_get(p, "measured_step_s");
        if (!json_is_number(ts) || !(json_number_value(ts) >= REFINE_MIN_STEP_S) ||
            !(json_number_value(ts) <= REFINE_MAX_STEP_S)) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "'%s': plans[%zu].measured_step_s must be a number of seconds between "
                         "%g and %g",
                         path, i, REFINE_MIN_STEP_S, REFINE_MAX_STEP_S);
            break;
        }
        const json_t *sp = json_object_get(p, "measured_spread"),
                     *mm = json_object_get(p, "measured_memory_bytes");
        if ((sp && !(json_is_number(sp) && json_number_value(sp) >= 0 &&
                     json_number_value(sp) <= 1e3)) ||
            (mm && !(json_is_number(mm) && json_number_value(mm) >= 0 &&
                     json_number_value(mm) <= 1e15))) {
            st = cm_fail(err, errlen, CM_EPARSE,
                         "'%s': plans[%zu]: measured_spread must be a number from 0 to 1000 ((max - "
                         "min) / median of the repeats) and measured_memory_bytes one of bytes "
                         "from 0 to 1e15",
                         path, i);
            break;
        }
        r->obs.measured_step_s = json_number_value(ts);
        r->spread = json_number_value(sp);
        r->mem_meas = json_number_value(mm);
        r->rank = (int)json_integer_value(json_object_get(p, "rank"));
        *n = (int)i + 1;
    }
    json_decref(root);
    return st;
}

/* ---- picking ---- */

/* Every feasible layout the search evaluated (search_options.visit), ranked afterwards: the
 * ranking the search keeps (SEARCH_KEEP_MAX) can miss whole classes (tp 4, FSDP2). */
typedef struct {
    estimate *e;
    int n, cap;
    bool failed;
} collected;

static void collect(const estimate *e, void *arg)
{
    collected *c = arg;
    if (!e->feasible || c->failed) return;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 1024;
        estimate *p = realloc(c->e, (size_t)cap * sizeof *p);
        if (!p) {
            c->failed = true;
            return;
        }
        c->e = p;
        c->cap = cap;
    }
    c->e[c->n++] = *e;
}

static int cmp_estimate(const void *a, const void *b)
{
    const estimate *x = a, *y = b;
    return search_better(x, y) ? -1 : search_better(y, x) ? 1 : 0;
}

/* Is a plan of l's class at this level already in sel? Level 1: (framework, tp); 2: and
 * sharding; 3: and cp, mbs; 4: the same layout. */
static bool class_seen(const refine_candidate *sel, int nsel, const layout *l, int level)
{
    for (int i = 0; i < nsel; i++) {
        const layout *s = &sel[i].layout;
        bool same = s->framework == l->framework && s->tp == l->tp;
        if (level >= 2) same &= s->sharding == l->sharding;
        if (level >= 3) same &= s->cp == l->cp && s->mbs == l->mbs;
        if (level >= 4) same &= layout_equal(s, l);
        if (same) return true;
    }
    return false;
}

cm_status refine_plans_pick(const model_spec *m, const system_spec *sys, const training_spec *t,
                            int gpus, const bool frameworks[2], bool top,
                            refine_runs_here_fn runs_here, void *arg, refine_pick *out,
                            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    collected all = {0};
    search_options so = {.gpus = gpus, .keep = 1, .simulate = 0, .visit = collect,
                         .visit_arg = &all};
    so.frameworks[FRAMEWORK_FSDP2] = frameworks[FRAMEWORK_FSDP2];
    so.frameworks[FRAMEWORK_MEGATRON] = frameworks[FRAMEWORK_MEGATRON];
    search_result *sr = search_result_new();
    cm_status st = sr ? search_run(m, sys, t, &so, sr, err, errlen)
                      : cm_fail(err, errlen, CM_ENOMEM, "out of memory searching the plans");
    search_result_free(sr);
    if (st == CM_OK && all.failed)
        st = cm_fail(err, errlen, CM_ENOMEM, "out of memory collecting the plans");
    if (st != CM_OK) {
        free(all.e);
        return st;
    }
    qsort(all.e, (size_t)all.n, sizeof *all.e, cmp_estimate);
    /* Candidates: in rank order, those that run whole here. */
    refine_candidate *cand = malloc((size_t)(all.n + 1) * sizeof *cand);
    refine_candidate *order = malloc((size_t)(all.n + 1) * sizeof *order);
    bool *taken = calloc((size_t)all.n + 1, sizeof *taken);
    if (!cand || !order || !taken) {
        free(all.e);
        free(cand);
        free(order);
        free(taken);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory ordering the plans");
    }
    int nc = 0;
    for (int i = 0; i < all.n; i++) {
        const estimate *e = &all.e[i];
        bool dup = false;
        for (int j = 0; j < nc && !dup; j++) dup = layout_equal(&cand[j].layout, &e->layout);
        if (dup) continue;
        /* The CUDA context, cuBLAS and NCCL take ~5 GiB the estimate's reserve does not all
         * cover (bench/BACKEND.md): a plan predicted within 5% of the HBM would fail to run. */
        char why[CM_ERRLEN];
        if (e->memory.total_bytes > 0.95 * e->memory.capacity_bytes ||
            !runs_here(&e->layout, arg, why, sizeof why)) {
            out->skipped++;
            continue;
        }
        cand[nc].rank = i + 1;
        cand[nc++].layout = e->layout;
    }
    free(all.e);
    int no = 0;
    for (int level = top ? 4 : 1; level <= 4; level++)
        for (int i = 0; i < nc; i++) {
            if (taken[i] || class_seen(order, no, &cand[i].layout, level)) continue;
            taken[i] = true;
            order[no++] = cand[i];
        }
    free(cand);
    free(taken);
    out->order = order;
    out->n = no;
    return CM_OK;
}

void refine_pick_free(refine_pick *p)
{
    free(p->order);
    p->order = NULL;
    p->n = 0;
}
