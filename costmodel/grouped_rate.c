/* grouped_rate.c — torch._grouped_mm's measured rate table; see grouped_rate.h. */
#include "grouped_rate.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static cm_status read_axis(const json_t *a, const char *path, const char *what, float *out,
                           int *n, char *err, size_t errlen)
{
    size_t sz = json_is_array(a) ? json_array_size(a) : 0;
    if (sz < 1 || sz > GROUPED_MAX_GRID)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"grouped_gemm_rates\" shape's \"%s\" must be an "
                       "array of 1..%d numbers",
                       path, what, GROUPED_MAX_GRID);
    for (size_t i = 0; i < sz; i++) {
        double v = json_number_value(json_array_get(a, i));
        if (!(v >= 1) || (i > 0 && log2(v) <= out[i - 1]))
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': \"grouped_gemm_rates\" shape's \"%s\" must be "
                           "ascending numbers >= 1",
                           path, what);
        out[i] = (float)log2(v);
    }
    *n = (int)sz;
    return CM_OK;
}

cm_status grouped_table_from_json(const json_t *section, const char *path, grouped_table *t,
                                  char *err, size_t errlen)
{
    t->n = 0;
    if (!section) return CM_OK;
    const json_t *shapes = json_is_object(section) ? json_object_get(section, "shapes") : NULL;
    if (!json_is_array(shapes) || json_array_size(shapes) > GROUPED_MAX_SHAPES)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"grouped_gemm_rates\" must be an object with an array "
                       "\"shapes\" of at most %d entries",
                       path, GROUPED_MAX_SHAPES);
    size_t i;
    const json_t *e;
    json_array_foreach(shapes, i, e) {
        grouped_shape *s = &t->s[t->n];
        const char *form = json_string_value(json_object_get(e, "form"));
        double n = json_number_value(json_object_get(e, "n"));
        double k = json_number_value(json_object_get(e, "k"));
        if (!form || (strcmp(form, "M") && strcmp(form, "K")) || !(n >= 1) || !(k >= 1))
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': \"grouped_gemm_rates\" shape %zu needs \"form\" "
                           "(\"M\" or \"K\"), \"n\" and \"k\" >= 1",
                           path, i);
        s->form = form[0] == 'M' ? GROUPED_M : GROUPED_K;
        s->n = (float)n;
        s->k = (float)k;
        cm_status st = read_axis(json_object_get(e, "groups"), path, "groups", s->log2_groups,
                                 &s->ng, err, errlen);
        if (st == CM_OK)
            st = read_axis(json_object_get(e, "rows_per_group"), path, "rows_per_group",
                           s->log2_rows, &s->nr, err, errlen);
        if (st != CM_OK) return st;
        const json_t *r = json_object_get(e, "ratio");
        if (!json_is_array(r) || (int)json_array_size(r) != s->ng)
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': \"grouped_gemm_rates\" shape %zu's \"ratio\" must "
                           "hold one row per groups value",
                           path, i);
        for (int g = 0; g < s->ng; g++) {
            const json_t *row = json_array_get(r, (size_t)g);
            if (!json_is_array(row) || (int)json_array_size(row) != s->nr)
                return cm_fail(err, errlen, CM_EPARSE,
                               "system file '%s': \"grouped_gemm_rates\" shape %zu's \"ratio\" "
                               "rows must hold one number per rows_per_group value",
                               path, i);
            for (int q = 0; q < s->nr; q++) {
                double v = json_number_value(json_array_get(row, (size_t)q));
                if (!(v > 0) || v > 2)
                    return cm_fail(err, errlen, CM_EPARSE,
                                   "system file '%s': \"grouped_gemm_rates\" shape %zu has a "
                                   "ratio outside (0, 2]",
                                   path, i);
                s->ratio[g][q] = (float)v;
            }
        }
        t->n++;
    }
    return CM_OK;
}

/* The bracketing index i (axis[i] <= x <= axis[i + 1]) and the weight of axis[i + 1], clamped at
 * the ends. */
static void bracket(const float *axis, int n, double x, int *i, double *w)
{
    if (n == 1 || x <= axis[0]) {
        *i = 0;
        *w = 0;
        return;
    }
    if (x >= axis[n - 1]) {
        *i = n - 2;
        *w = 1;
        return;
    }
    int j = 0;
    while (j < n - 2 && x > axis[j + 1]) j++;
    *i = j;
    *w = (x - axis[j]) / (axis[j + 1] - axis[j]);
}

bool grouped_table_ratio(const grouped_table *t, grouped_form form, double groups, double rows,
                         double n, double k, double *ratio)
{
    const grouped_shape *best = NULL;
    double bd = INFINITY;
    for (int i = 0; i < t->n; i++) {
        const grouped_shape *s = &t->s[i];
        if (s->form != form) continue;
        double d = fabs(log2(n) - log2(s->n)) + fabs(log2(k) - log2(s->k));
        if (d < bd) {
            bd = d;
            best = s;
        }
    }
    if (!best || !(groups >= 1) || !(rows > 0)) return false;
    int gi, ri;
    double gw, rw;
    bracket(best->log2_groups, best->ng, log2(groups), &gi, &gw);
    bracket(best->log2_rows, best->nr, log2(rows), &ri, &rw);
    int g1 = best->ng > 1 ? gi + 1 : gi, r1 = best->nr > 1 ? ri + 1 : ri;
    double lo = best->ratio[gi][ri] * (1 - rw) + best->ratio[gi][r1] * rw;
    double hi = best->ratio[g1][ri] * (1 - rw) + best->ratio[g1][r1] * rw;
    *ratio = lo * (1 - gw) + hi * gw;
    return true;
}
