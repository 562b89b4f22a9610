/* fp8_shape.c — the FP8 GEMM's efficiency ratio by shape; see fp8_shape.h for the sources. */
#include "fp8_shape.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* A ratio entry: a number in [0, 2] or null (0: not measured). */
static bool ratio_value(const json_t *v, double *out)
{
    if (!v || json_is_null(v)) {
        *out = 0;
        return true;
    }
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0 && *out <= 2;
}

cm_status fp8_shape_from_json(const json_t *section, const char *path, fp8_shape_table *t,
                              char *err, size_t errlen)
{
    t->n = 0;
    if (!section) return CM_OK;
    const json_t *pts = json_is_object(section) ? json_object_get(section, "points") : NULL;
    if (!json_is_array(pts))
        return cm_fail(err, errlen, CM_EPARSE,
                       "profile '%s': calibration.fp8_gemm_shapes needs \"points\": [[m, n, k, "
                       "ratio, blockwise_ratio], ...] (plan fit writes it)",
                       path);
    if (json_array_size(pts) > FP8_SHAPE_MAX_POINTS)
        return cm_fail(err, errlen, CM_EPARSE,
                       "profile '%s': calibration.fp8_gemm_shapes has %zu points, at most %d",
                       path, json_array_size(pts), FP8_SHAPE_MAX_POINTS);
    size_t i;
    const json_t *row;
    json_array_foreach(pts, i, row) {
        double d[3], r, rb;
        bool ok = json_is_array(row) && (json_array_size(row) == 4 || json_array_size(row) == 5);
        for (int j = 0; ok && j < 3; j++) {
            const json_t *v = json_array_get(row, (size_t)j);
            d[j] = json_is_number(v) ? json_number_value(v) : -1;
            ok = isfinite(d[j]) && d[j] >= 1 && d[j] <= 1e7;
        }
        ok = ok && ratio_value(json_array_get(row, 3), &r) &&
             ratio_value(json_array_get(row, 4), &rb) && (r > 0 || rb > 0);
        if (!ok)
            return cm_fail(err, errlen, CM_EPARSE,
                           "profile '%s': calibration.fp8_gemm_shapes point %zu must be [m, n, "
                           "k, ratio, blockwise_ratio] with m, n, k from 1 to 1e7 and ratios in "
                           "[0, 2] or null, at least one of them > 0",
                           path, i + 1);
        fp8_shape_add(t, d[0], d[1], d[2], r, rb);
    }
    return CM_OK;
}

json_t *fp8_shape_to_json(const fp8_shape_table *t)
{
    if (t->n == 0) return NULL;
    json_t *pts = json_array();
    for (int i = 0; i < t->n; i++) {
        const fp8_shape_point *p = &t->p[i];
        json_array_append_new(pts, json_pack("[I, I, I, o, o]", (json_int_t)p->m,
                                             (json_int_t)p->n, (json_int_t)p->k,
                                             p->ratio > 0 ? json_real(p->ratio) : json_null(),
                                             p->blockwise_ratio > 0 ? json_real(p->blockwise_ratio)
                                                                    : json_null()));
    }
    return json_pack("{s:s, s:o}", "columns", "m, n, k, ratio, blockwise_ratio", "points", pts);
}

bool fp8_shape_add(fp8_shape_table *t, double m, double n, double k, double ratio,
                   double blockwise_ratio)
{
    if (t->n >= FP8_SHAPE_MAX_POINTS) return false;
    t->p[t->n++] = (fp8_shape_point){m, n, k, ratio, blockwise_ratio};
    return true;
}

static double sq(double x) { return x * x; }

bool fp8_shape_ratio(const fp8_shape_table *t, bool blockwise, double m, double n, double k,
                     double *ratio)
{
    if (m <= 0 || n <= 0 || k <= 0) return false;
    double lm = log2(m), ln = log2(n), lk = log2(k), best = INFINITY;
    for (int i = 0; i < t->n; i++) {
        const fp8_shape_point *p = &t->p[i];
        double r = blockwise ? p->blockwise_ratio : p->ratio;
        if (!(r > 0)) continue;
        double pm = log2(p->m), pn = log2(p->n), dk = sq(lk - log2(p->k));
        double d = fmin(sq(lm - pm) + sq(ln - pn), sq(lm - pn) + sq(ln - pm)) + dk;
        if (d < best) {
            best = d;
            *ratio = r;
        }
    }
    return isfinite(best);
}
