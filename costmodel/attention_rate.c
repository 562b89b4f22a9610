/* attention_rate.c — the measured attention-rate table of a system; see attention_rate.h. */
#include "attention_rate.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static const char *mask_names[ATTN_MASKS] = {"causal", "none", "window"};

cm_status attn_table_from_json(const json_t *section, const char *path, attn_table *t,
                               char *err, size_t errlen)
{
    t->n = 0;
    if (!section) return CM_OK;
    const json_t *pts = json_is_object(section) ? json_object_get(section, "points") : NULL;
    if (!json_is_array(pts))
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"attention_rates\" must be an object with an array "
                       "\"points\" (see bench/attention_sweep.py --table)",
                       path);
    if (json_array_size(pts) > ATTN_MAX_POINTS)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"attention_rates\" has %zu points, at most %d",
                       path, json_array_size(pts), ATTN_MAX_POINTS);
    size_t i;
    const json_t *row;
    json_array_foreach(pts, i, row) {
        double v[6] = {0};
        int mask = -1;
        bool ok = json_is_array(row) && json_array_size(row) == 6;
        for (size_t k = 0; ok && k < 6; k++) {
            const json_t *x = json_array_get(row, k);
            if (k == 1) {
                for (int mk = 0; json_is_string(x) && mk < ATTN_MASKS; mk++)
                    if (!strcmp(json_string_value(x), mask_names[mk])) mask = mk;
                ok = mask >= 0;
            } else {
                ok = json_is_number(x) && isfinite(v[k] = json_number_value(x)) && v[k] > 0;
            }
        }
        if (!ok || v[0] > 1024 || v[2] > 1e9 || v[3] > 1e9 || v[4] > 1e4 || v[5] > 1e4)
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': attention_rates point %zu must be [head_dim, "
                           "\"causal\"|\"none\"|\"window\", batch_x_heads, seq, fwd_tflops, "
                           "bwd_tflops] with positive numbers in range",
                           path, i);
        attn_point *p = &t->p[t->n++];
        p->head_dim = (float)v[0];
        p->mask = (unsigned char)mask;
        p->log2_rows = (float)log2(v[2]);
        p->log2_seq = (float)log2(v[3]);
        p->fwd_flops_per_s = (float)(v[4] * 1e12);
        p->bwd_flops_per_s = (float)(v[5] * 1e12);
    }
    return CM_OK;
}

/* The measured point of (mask, dim) nearest (x, y) in the grid's units. */
static const attn_point *nearest(const attn_table *t, int mask, float dim, double x, double y)
{
    const attn_point *best = NULL;
    double bd = INFINITY;
    for (int i = 0; i < t->n; i++) {
        const attn_point *p = &t->p[i];
        if (p->mask != mask || p->head_dim != dim) continue;
        double d = (p->log2_rows - x) * (p->log2_rows - x) + (p->log2_seq - y) * (p->log2_seq - y);
        if (d < bd) bd = d, best = p;
    }
    return best;
}

/* The grid's neighbours of v along one axis among the (mask, dim) points: lo <= v <= hi, or
 * both the edge when v lies outside. */
static void bracket(const attn_table *t, int mask, float dim, bool rows, double v, double *lo,
                    double *hi)
{
    double below = -INFINITY, above = INFINITY, min = INFINITY, max = -INFINITY;
    for (int i = 0; i < t->n; i++) {
        const attn_point *p = &t->p[i];
        if (p->mask != mask || p->head_dim != dim) continue;
        double c = rows ? p->log2_rows : p->log2_seq;
        if (c < min) min = c;
        if (c > max) max = c;
        if (c <= v && c > below) below = c;
        if (c >= v && c < above) above = c;
    }
    if (v <= min) below = above = min;
    else if (v >= max) below = above = max;
    *lo = below, *hi = above;
}

bool attn_table_rates(const attn_table *t, attn_mask mask, double head_dim, double rows,
                      double seq, double *fwd_flops_per_s, double *bwd_flops_per_s)
{
    float dim = 0;
    double dd = INFINITY;
    for (int i = 0; i < t->n; i++) {
        const attn_point *p = &t->p[i];
        if (p->mask != (unsigned char)mask) continue;
        double d = fabs(p->head_dim - head_dim);
        if (d < dd || (d == dd && p->head_dim > dim)) dd = d, dim = p->head_dim;
    }
    if (!(dd < INFINITY) || rows <= 0 || seq <= 0) return false;
    double x = log2(rows), y = log2(seq);
    double x0, x1, y0, y1;
    bracket(t, (int)mask, dim, true, x, &x0, &x1);
    bracket(t, (int)mask, dim, false, y, &y0, &y1);
    double xc = x < x0 ? x0 : (x > x1 ? x1 : x), yc = y < y0 ? y0 : (y > y1 ? y1 : y);
    double wx = x1 > x0 ? (xc - x0) / (x1 - x0) : 0, wy = y1 > y0 ? (yc - y0) / (y1 - y0) : 0;
    /* a corner missing from the grid (a shape that ran out of memory) takes its nearest point */
    const attn_point *c[4] = {nearest(t, mask, dim, x0, y0), nearest(t, mask, dim, x1, y0),
                              nearest(t, mask, dim, x0, y1), nearest(t, mask, dim, x1, y1)};
    double w[4] = {(1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy};
    double f = 0, b = 0;
    for (int k = 0; k < 4; k++) {
        f += w[k] * c[k]->fwd_flops_per_s;
        b += w[k] * c[k]->bwd_flops_per_s;
    }
    *fwd_flops_per_s = f;
    *bwd_flops_per_s = b;
    return f > 0 && b > 0;
}
