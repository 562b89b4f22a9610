/*
 * published_runs.c — the shared runner of the published-runs tests (published_runs.h): one
 * `plan estimate --format json` per row with the row's system, layout and recipe knobs,
 * tokens/s/GPU against the published figure, the predicted peak GiB and whether it fits.
 */
#include "published_runs.h"

#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csv_table.h"
#include "plan_run.h"

#define CELL 512

static const char *cell(const csv_table *t, int r, const char *name)
{
    if (!csv_table_has_column(t, name)) fail_msg("no column %s in the published-runs file", name);
    return csv_table_cell(t, r, name);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double published_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A row's plan_args with every word that starts with "data/" (a file of the tree, e.g. a
 * calibration profile) made a quoted path under the source root, as the model files are. */
static void expand_tree_paths(const char *args, const char *root, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (const char *p = args; *p && o + 1 < len;) {
        bool word_start = p == args || p[-1] == ' ';
        if (word_start && !strncmp(p, "data/", 5)) {
            size_t w = strcspn(p, " ");
            int n = snprintf(out + o, len - o, "'%s/%.*s'", root, (int)w, p);
            if (n < 0 || (size_t)n >= len - o) fail_msg("plan_args too long: %s", args);
            o += (size_t)n;
            p += w;
        } else {
            out[o++] = *p++;
            out[o] = '\0';
        }
    }
}

/* One row through `plan estimate --format json`, with extra options appended: tokens/s per
 * GPU, the predicted peak GiB and whether it fits. */
static void price(const csv_table *t, int r, const char *root, const char *extra,
                  double *tokens_per_gpu, double *mem_gib, bool *fits)
{
    const char *model = cell(t, r, "model");
    char model_arg[CELL + 64];
    if (strchr(model, '/'))
        snprintf(model_arg, sizeof model_arg, "'%s/%s'", root, model);
    else
        snprintf(model_arg, sizeof model_arg, "%s", model);
    char plan_args[2048];
    expand_tree_paths(cell(t, r, "plan_args"), root, plan_args, sizeof plan_args);
    char args[4096];
    snprintf(args, sizeof args,
             "estimate --model %s --gpus %s --system %s --tp %s --pp %s --cp %s --vpp %s "
             "--ep %s --mbs %s --gbs %s --seq %s %s %s --format json",
             model_arg, cell(t, r, "gpus"), cell(t, r, "system"), cell(t, r, "tp"),
             cell(t, r, "pp"), cell(t, r, "cp"), cell(t, r, "vp"), cell(t, r, "ep"),
             cell(t, r, "mbs"), cell(t, r, "gbs"), cell(t, r, "seq"), plan_args, extra);
    static plan_run_result res;
    assert_int_equal(plan_run(&res, args), 0);
    if (res.status == 2) fail_msg("%s: plan %s\n%s", cell(t, r, "run_id"), args, res.err);
    json_error_t je;
    json_t *j = json_loads(res.out, 0, &je);
    if (!j) fail_msg("%s: no JSON from plan: %s", cell(t, r, "run_id"), je.text);
    *tokens_per_gpu = json_number_value(json_object_get(j, "tokens_per_s")) / atof(cell(t, r, "gpus"));
    *mem_gib = json_number_value(json_object_get(json_object_get(j, "memory"), "total_bytes")) /
               1073741824.0;
    *fits = json_is_true(json_object_get(j, "fits"));
    json_decref(j);
    assert_true(*tokens_per_gpu > 0);
}

int published_runs_price(const char *csv_path, const char *source_root, published_row *rows,
                         int maxrows)
{
    char rerr[256];
    csv_table *tab = csv_table_read(csv_path, rerr, sizeof rerr);
    if (!tab) fail_msg("%s", rerr);
    int nrows = csv_table_rows(tab);
    assert_true(nrows >= 1 && nrows <= maxrows);
    printf("%-38s %-8s %-11s %9s %9s %7s %6s  %s\n", "run", "release", "system", "published",
           "predicted", "error", "GiB", "layout (tokens/s/GPU)");
    for (int r = 1; r <= nrows; r++) {
        published_row *o = &rows[r - 1];
        memset(o, 0, sizeof *o);
        const char *id = cell(tab, r, "run_id");
        snprintf(o->run_id, sizeof o->run_id, "%s", id);
        snprintf(o->system, sizeof o->system, "%s", cell(tab, r, "system"));
        snprintf(o->precision, sizeof o->precision, "%s", cell(tab, r, "precision"));
        snprintf(o->kind, sizeof o->kind, "%s", cell(tab, r, "kind"));
        if (!o->system[0]) fail_msg("%s: no system named", id);
        o->published_tokens_per_gpu = atof(cell(tab, r, "tokens_per_s_per_gpu"));
        assert_true(o->published_tokens_per_gpu > 0);
        const char *rel = cell(tab, r, "release");
        if (strcmp(cell(tab, r, "expressible"), "yes")) {
            printf("%-38s %-8s %-11s %9s %9s %7s %6s  not expressible: %s\n", id, rel, o->system,
                   cell(tab, r, "tokens_per_s_per_gpu"), "-", "-", "-", cell(tab, r, "note"));
            continue;
        }
        o->expressible = true;
        double pub = o->published_tokens_per_gpu;
        const char *unknown = cell(tab, r, "unknown_args");
        if (unknown[0]) {
            /* a knob the source does not state: the band over its plausible values, kept out
             * of the statistics (no value is picked because it fits) */
            char alts[CELL];
            snprintf(alts, sizeof alts, "%s", unknown);
            double lo = 1e300, hi = -1e300;
            o->lo_gib = 1e300;
            o->hi_gib = -1e300;
            char *save = NULL;
            for (char *a = strtok_r(alts, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
                double pred, gib;
                bool ok;
                price(tab, r, source_root, a, &pred, &gib, &ok);
                lo = fmin(lo, pred / pub - 1);
                hi = fmax(hi, pred / pub - 1);
                o->lo_gib = fmin(o->lo_gib, gib);
                o->hi_gib = fmax(o->hi_gib, gib);
                o->n_alts++;
                o->n_alts_fit += ok;
            }
            printf("%-38s %-8s %-11s %9.0f %9s %+6.1f%%..%+.1f%%  band over an unstated knob (%s)\n",
                   id, rel, o->system, pub, "-", 100 * lo, 100 * hi, unknown);
            o->banded = true;
            o->lo_err = lo;
            o->hi_err = hi;
            continue;
        }
        price(tab, r, source_root, "", &o->predicted_tokens_per_gpu, &o->mem_gib, &o->fits);
        o->err = o->predicted_tokens_per_gpu / pub - 1;
        o->priced = true;
        printf("%-38s %-8s %-11s %9.0f %9.0f %+6.1f%% %6.1f  tp%s pp%s cp%s vp%s ep%s %s%s\n", id,
               rel, o->system, pub, o->predicted_tokens_per_gpu, 100 * o->err, o->mem_gib,
               cell(tab, r, "tp"), cell(tab, r, "pp"), cell(tab, r, "cp"), cell(tab, r, "vp"),
               cell(tab, r, "ep"), o->precision, o->fits ? "" : "  PREDICTED NOT TO FIT (it ran)");
    }
    csv_table_free(tab);
    return nrows;
}
