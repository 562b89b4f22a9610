/* attention_rate.c — the measured attention-rate table of a system; see attention_rate.h. */
#include "attention_rate.h"

#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static const char *mask_names[ATTN_MASKS] = {"causal", "none", "window", "sliding"};

/* Reorders t's points into its groups (attn_table's comment): stable, so within a group the
 * file's order stays (the nearest point's tie-break reads it). */
static void group(attn_table *t)
{
    attn_point sorted[ATTN_MAX_POINTS];
    bool done[ATTN_MAX_POINTS] = {false};
    int n = 0;
    t->ngroups = 0;
    for (int i = 0; i < t->n; i++) {
        if (done[i]) continue;
        attn_group *g = &t->g[t->ngroups++];
        g->mask = t->p[i].mask;
        g->head_dim = t->p[i].head_dim;
        g->first = n;
        for (int k = i; k < t->n; k++)
            if (!done[k] && t->p[k].mask == g->mask && t->p[k].head_dim == g->head_dim) {
                sorted[n++] = t->p[k];
                done[k] = true;
            }
        g->n = n - g->first;
    }
    memcpy(t->p, sorted, (size_t)n * sizeof *sorted);
}

/* A fresh table identity (attn_table.id) for each table filled or changed. */
static unsigned long next_id(void)
{
    static atomic_ulong loads;
    return atomic_fetch_add(&loads, 1) + 1;
}

cm_status attn_table_from_json(const json_t *section, const char *path, attn_table *t,
                               char *err, size_t errlen)
{
    t->n = 0;
    t->ngroups = 0;
    t->id = next_id();
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
                           "\"causal\"|\"none\"|\"window\"|\"sliding\", batch_x_heads, seq, "
                           "fwd_tflops, "
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
    group(t);
    return CM_OK;
}

bool attn_table_overlay(attn_table *t, const attn_table *over)
{
    if (over->n == 0) return true;
    attn_point kept[ATTN_MAX_POINTS];
    int n = 0;
    for (int gi = 0; gi < t->ngroups; gi++) {
        const attn_group *g = &t->g[gi];
        bool replaced = false;
        for (int k = 0; k < over->ngroups && !replaced; k++)
            replaced = over->g[k].mask == g->mask && over->g[k].head_dim == g->head_dim;
        if (replaced) continue;
        memcpy(kept + n, t->p + g->first, (size_t)g->n * sizeof *kept);
        n += g->n;
    }
    if (n + over->n > ATTN_MAX_POINTS) return false;
    memcpy(t->p, over->p, (size_t)over->n * sizeof *t->p);
    memcpy(t->p + over->n, kept, (size_t)n * sizeof *kept);
    t->n = over->n + n;
    group(t);
    t->id = next_id();
    return true;
}

/*
 * The interpolation reads only the points of one (mask, head dim), contiguous in the table
 * (group()). A search prices the attention core once per layer recipe built (100,000 and
 * more), and seven passes over the whole table were a quarter of `plan --model deepseek-v3
 * --gpus 16384`'s time; the figures are the same.
 */

/* The group's point nearest (x, y) in the grid's units (the first of equals, in table order). */
static const attn_point *nearest(const attn_point *g, int n, double x, double y)
{
    const attn_point *best = NULL;
    double bd = INFINITY;
    for (int i = 0; i < n; i++) {
        const attn_point *p = &g[i];
        double d = (p->log2_rows - x) * (p->log2_rows - x) + (p->log2_seq - y) * (p->log2_seq - y);
        if (d < bd) bd = d, best = p;
    }
    return best;
}

typedef struct {
    double below, above, min, max;
} axis_bracket;

static void bracket_add(axis_bracket *b, double c, double v)
{
    if (c < b->min) b->min = c;
    if (c > b->max) b->max = c;
    if (c <= v && c > b->below) b->below = c;
    if (c >= v && c < b->above) b->above = c;
}

/* The grid's neighbours of v along one axis: lo <= v <= hi, or both the edge when v lies
 * outside. */
static void bracket_end(const axis_bracket *b, double v, double *lo, double *hi)
{
    double below = b->below, above = b->above;
    if (v <= b->min) below = above = b->min;
    else if (v >= b->max) below = above = b->max;
    *lo = below, *hi = above;
}

static bool rates(const attn_table *t, attn_mask mask, double head_dim, double rows,
                  double seq, double *fwd_flops_per_s, double *bwd_flops_per_s);

/* The last lookups of this thread: a search asks for the same few shapes (the layouts' micro-
 * batch, TP and CP) once per layer recipe it builds. Keyed by the table's load and every
 * argument, so a hit returns what rates() returned for them. */
enum { MEMO_SLOTS = 64 };
typedef struct {
    unsigned long id; /* 0: empty */
    attn_mask mask;
    double head_dim, rows, seq, fwd, bwd;
    bool ok;
} memo_slot;
static _Thread_local memo_slot memo[MEMO_SLOTS];

bool attn_table_rates(const attn_table *t, attn_mask mask, double head_dim, double rows,
                      double seq, double *fwd_flops_per_s, double *bwd_flops_per_s)
{
    if (t->id == 0 || t->ngroups == 0) /* not loaded by attn_table_from_json */
        return rates(t, mask, head_dim, rows, seq, fwd_flops_per_s, bwd_flops_per_s);
    union {
        double d;
        uint64_t u;
    } a = {rows}, b = {seq};
    uint64_t h = (a.u * 0x9E3779B97F4A7C15u) ^ (b.u * 0xC2B2AE3D27D4EB4Fu) ^
                 ((uint64_t)mask << 7) ^ (uint64_t)t->id;
    memo_slot *m = &memo[(h ^ (h >> 31)) % MEMO_SLOTS];
    if (m->id != t->id || m->mask != mask || m->head_dim != head_dim || m->rows != rows ||
        m->seq != seq) {
        *m = (memo_slot){.id = t->id, .mask = mask, .head_dim = head_dim, .rows = rows,
                         .seq = seq};
        m->ok = rates(t, mask, head_dim, rows, seq, &m->fwd, &m->bwd);
    }
    *fwd_flops_per_s = m->fwd;
    *bwd_flops_per_s = m->bwd;
    return m->ok;
}

static bool rates(const attn_table *t, attn_mask mask, double head_dim, double rows,
                  double seq, double *fwd_flops_per_s, double *bwd_flops_per_s)
{
    const attn_group *gr = NULL; /* the mask's group of the nearest head dim (the larger of two) */
    double dd = INFINITY;
    for (int i = 0; i < t->ngroups; i++) {
        const attn_group *q = &t->g[i];
        if (q->mask != (unsigned char)mask) continue;
        double d = fabs(q->head_dim - head_dim);
        if (d < dd || (d == dd && gr && q->head_dim > gr->head_dim)) dd = d, gr = q;
    }
    if (!(dd < INFINITY) || rows <= 0 || seq <= 0) return false;
    double x = log2(rows), y = log2(seq);
    const attn_point *g = &t->p[gr->first];
    int ng = gr->n;
    axis_bracket bx = {-INFINITY, INFINITY, INFINITY, -INFINITY}, by = bx;
    for (int i = 0; i < ng; i++) {
        bracket_add(&bx, g[i].log2_rows, x);
        bracket_add(&by, g[i].log2_seq, y);
    }
    double x0, x1, y0, y1;
    bracket_end(&bx, x, &x0, &x1);
    bracket_end(&by, y, &y0, &y1);
    double xc = x < x0 ? x0 : (x > x1 ? x1 : x), yc = y < y0 ? y0 : (y > y1 ? y1 : y);
    double wx = x1 > x0 ? (xc - x0) / (x1 - x0) : 0, wy = y1 > y0 ? (yc - y0) / (y1 - y0) : 0;
    /* a corner missing from the grid (a shape that ran out of memory) takes its nearest point */
    const attn_point *c[4] = {nearest(g, ng, x0, y0), nearest(g, ng, x1, y0),
                              nearest(g, ng, x0, y1), nearest(g, ng, x1, y1)};
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
