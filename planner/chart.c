/*
 * chart.c — stacked-bar and line charts with cairo (see chart.h).
 *
 * One drawing routine serves both outputs: an SVG surface written to memory through
 * cairo_svg_surface_create_for_stream (inlined into the HTML report) and an image surface
 * written as PNG (beside a Markdown report). Text uses cairo's toy font API with the generic
 * "sans-serif" family, so whatever fontconfig resolves it to is used; no font file is bundled.
 *
 * Without cairo (PLAN_HAVE_CAIRO undefined) only the data helpers are built and rendering
 * returns an error that says how to enable charts.
 */
#include "chart.h"

#include <errno.h>
#include <stdio.h>

#include "whole_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void chart_init(chart *c, chart_kind kind, const char *title, const char *x_label,
                const char *y_label)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    snprintf(c->title, sizeof c->title, "%s", title ? title : "");
    snprintf(c->x_label, sizeof c->x_label, "%s", x_label ? x_label : "");
    snprintf(c->y_label, sizeof c->y_label, "%s", y_label ? y_label : "");
    for (int s = 0; s < CHART_MAX_SERIES; s++)
        for (int i = 0; i < CHART_MAX_POINTS; i++) c->y[s][i] = NAN;
    c->ref_y = NAN;
    c->y_min = c->y_max = NAN;
}

void chart_data_range(const chart *c, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0;
    for (int i = 0; i < c->npoints; i++) {
        if (c->kind == CHART_STACKED_BARS) {
            double sum = 0;
            for (int s = 0; s < c->nseries; s++)
                if (!isnan(c->y[s][i]) && c->y[s][i] > 0) sum += c->y[s][i];
            if (sum > *hi) *hi = sum;
            if (sum > 0 && sum < *lo) *lo = sum;
            continue;
        }
        for (int s = 0; s < c->nseries; s++) {
            double v = c->y[s][i];
            if (isnan(v) || v <= 0) continue;
            if (v > *hi) *hi = v;
            if (v < *lo) *lo = v;
        }
    }
    if (!isnan(c->ref_y) && c->ref_y > *hi) *hi = c->ref_y;
    if (!isfinite(*lo)) *lo = *hi;
}

int chart_add_series(chart *c, const char *name)
{
    if (c->nseries == CHART_MAX_SERIES) return -1;
    snprintf(c->series[c->nseries], sizeof c->series[0], "%s", name);
    return c->nseries++;
}

int chart_add_point(chart *c, const char *label, double x)
{
    if (c->npoints == CHART_MAX_POINTS) return -1;
    snprintf(c->labels[c->npoints], sizeof c->labels[0], "%s", label ? label : "");
    c->x[c->npoints] = x;
    return c->npoints++;
}

#ifndef PLAN_HAVE_CAIRO

bool chart_available(void) { return false; }

void chart_cleanup(void) {}

cm_status chart_svg(const chart *c, const char *id_prefix, char **svg, size_t *len, char *err,
                    size_t errlen)
{
    (void)c;
    (void)id_prefix;
    *svg = NULL;
    if (len) *len = 0;
    return cm_fail(err, errlen, CM_EINVAL,
                   "this build of plan has no cairo, so no charts: install libcairo2-dev and "
                   "reconfigure (meson setup --reconfigure -Dcharts=enabled)");
}

cm_status chart_png_staged(const chart *c, const char *path, whole_file *w, char *err,
                           size_t errlen)
{
    (void)c;
    (void)path;
    memset(w, 0, sizeof *w);
    return cm_fail(err, errlen, CM_EINVAL,
                   "this build of plan has no cairo, so no charts: install libcairo2-dev and "
                   "reconfigure (meson setup --reconfigure -Dcharts=enabled)");
}

#else

#include <cairo-svg.h>
#include <cairo.h>

bool chart_available(void) { return true; }

#ifdef PLAN_HAVE_FONTCONFIG
#include <fontconfig/fontconfig.h>
#endif

void chart_cleanup(void)
{
    cairo_debug_reset_static_data();
#ifdef PLAN_HAVE_FONTCONFIG
    FcFini(); /* fontconfig's own configuration, which cairo loaded for the text */
#endif
}

enum { W = 760, H = 380, LEFT = 76, RIGHT = 190, TOP = 44, BOTTOM = 64 };

/* Colour-blind-safe palette (Okabe-Ito), in series order. */
static const double palette[CHART_MAX_SERIES][3] = {
    {0.000, 0.447, 0.698}, {0.902, 0.624, 0.000}, {0.000, 0.620, 0.451},
    {0.800, 0.475, 0.655}, {0.337, 0.706, 0.914}, {0.835, 0.369, 0.000},
    {0.941, 0.894, 0.259}, {0.400, 0.400, 0.400},
};

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about n ticks over range. */
static double nice_step(double range, int n)
{
    if (!(range > 0)) return 1;
    double raw = range / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void fmt_value(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (a >= 1e6) snprintf(buf, len, "%.3gM", v / 1e6);
    else if (a >= 1e4) snprintf(buf, len, "%.3gk", v / 1e3);
    else snprintf(buf, len, "%.4g", v);
}

static void text_at(cairo_t *cr, double x, double y, const char *s, double align)
{
    cairo_text_extents_t ext;
    cairo_text_extents(cr, s, &ext);
    cairo_move_to(cr, x - align * (ext.width + ext.x_bearing), y);
    cairo_show_text(cr, s);
}

static void set_font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

/* The y axis: linear from lo (0) to hi with a tick every step, or log10 from lo to hi with
 * ticks at 1, 2 and 5 times the powers of ten. */
typedef struct {
    double lo, hi, step;
    bool log;
} y_axis;

static y_axis make_axis(const chart *c)
{
    double dlo, dhi;
    chart_data_range(c, &dlo, &dhi);
    y_axis a = {0, 0, 1, c->kind == CHART_LINES && c->log_y};
    if (a.log) {
        double lo = !isnan(c->y_min) && c->y_min > 0 ? c->y_min : dlo;
        double hi = !isnan(c->y_max) && c->y_max > 0 ? c->y_max : dhi;
        if (!(lo > 0)) lo = 1;
        if (!(hi > lo)) hi = lo * 10;
        a.lo = pow(10, floor(log10(lo)));
        a.hi = pow(10, ceil(log10(hi)));
        return a;
    }
    bool fixed = !isnan(c->y_max) && c->y_max > 0;
    double hi = fixed ? c->y_max : dhi;
    a.step = nice_step(hi > 0 ? hi : 1, 5);
    /* from the data: a little room above the tallest value; fixed: the tick at or above it */
    a.hi = hi > 0 ? ceil(hi * (fixed ? 1 - 1e-9 : 1.04) / a.step) * a.step : a.step;
    return a;
}

static double ypos(const y_axis *a, double v)
{
    double ph = H - TOP - BOTTOM, f;
    if (a->log) f = v > 0 ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : -1;
    else f = v / a->hi;
    if (f < -0.02) f = -0.02; /* a value under the axis (or 0 on a log axis) sits on it */
    return TOP + ph - f * ph;
}

static void y_tick(cairo_t *cr, const y_axis *a, double v)
{
    double pw = W - LEFT - RIGHT, y = ypos(a, v);
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_set_line_width(cr, 0.6);
    cairo_move_to(cr, LEFT, y);
    cairo_line_to(cr, LEFT + pw, y);
    cairo_stroke(cr);
    char buf[32];
    fmt_value(v, buf, sizeof buf);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    text_at(cr, LEFT - 6, y + 3.5, buf, 1.0);
}

static void draw_y_axis(cairo_t *cr, const chart *c, const y_axis *a)
{
    double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
    set_font(cr, 10, false);
    if (a->log) {
        for (double dec = a->lo; dec < a->hi * 1.0001; dec *= 10)
            for (int k = 0; k < 3; k++) {
                double v = dec * (k == 0 ? 1 : k == 1 ? 2 : 5);
                if (v <= a->hi * 1.0001) y_tick(cr, a, v);
            }
    } else {
        for (double v = 0; v <= a->hi * (1 + 1e-9); v += a->step) y_tick(cr, a, v);
    }
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, LEFT, TOP);
    cairo_line_to(cr, LEFT, TOP + ph);
    cairo_line_to(cr, LEFT + pw, TOP + ph);
    cairo_stroke(cr);
    /* y label, rotated */
    set_font(cr, 11, false);
    cairo_save(cr);
    cairo_translate(cr, 16, TOP + ph / 2);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, c->y_label, 0.5);
    cairo_restore(cr);
}

static void draw_ref_line(cairo_t *cr, const chart *c, const y_axis *a)
{
    if (isnan(c->ref_y)) return;
    double pw = W - LEFT - RIGHT;
    double y = ypos(a, c->ref_y);
    double dash[] = {6, 4};
    cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
    cairo_set_line_width(cr, 1.4);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, LEFT, y);
    cairo_line_to(cr, LEFT + pw, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0); /* its label is in the legend */
}

static void draw_legend(cairo_t *cr, const chart *c)
{
    set_font(cr, 10.5, false);
    double x = W - RIGHT + 14, y = TOP + 6;
    /* Stacked bars list their components top-down in the order they are stacked, last on top. */
    for (int k = 0; k < c->nseries; k++) {
        int s = c->kind == CHART_STACKED_BARS ? c->nseries - 1 - k : k;
        const double *col = palette[s % CHART_MAX_SERIES];
        cairo_set_source_rgb(cr, col[0], col[1], col[2]);
        if (c->kind == CHART_LINES) {
            cairo_set_line_width(cr, 2.2);
            cairo_move_to(cr, x, y + 5);
            cairo_line_to(cr, x + 16, y + 5);
            cairo_stroke(cr);
            cairo_arc(cr, x + 8, y + 5, 3, 0, 2 * M_PI);
            cairo_fill(cr);
        } else {
            cairo_rectangle(cr, x, y, 14, 10);
            cairo_fill(cr);
        }
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        text_at(cr, x + 22, y + 9, c->series[s], 0);
        y += 18;
    }
    if (!isnan(c->ref_y) && c->ref_label[0]) {
        double dash[] = {5, 3};
        cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
        cairo_set_line_width(cr, 1.4);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, x, y + 5);
        cairo_line_to(cr, x + 16, y + 5);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        text_at(cr, x + 22, y + 9, c->ref_label, 0);
    }
}

static void hatch(cairo_t *cr, double x, double y, double w, double h)
{
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.55);
    cairo_set_line_width(cr, 2);
    for (double d = -h; d < w; d += 7) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

static void draw_bars(cairo_t *cr, const chart *c)
{
    double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
    y_axis ax = make_axis(c);
    double ymax = ax.hi;
    draw_y_axis(cr, c, &ax);
    int n = c->npoints > 0 ? c->npoints : 1;
    double slot = pw / n, bw = slot * 0.62, ann_x[CHART_MAX_POINTS], ann_y[CHART_MAX_POINTS];
    if (bw > 46) bw = 46;
    for (int i = 0; i < c->npoints; i++) {
        double x = LEFT + slot * i + (slot - bw) / 2, base = TOP + ph;
        bool any = false;
        /* a bar taller than a fixed scale is cut at the top of the plot, with a break mark */
        cairo_save(cr);
        cairo_rectangle(cr, x - 1, TOP, bw + 2, ph);
        cairo_clip(cr);
        for (int s = 0; s < c->nseries; s++) {
            double v = c->y[s][i];
            if (isnan(v) || v <= 0) continue;
            any = true;
            double h = v / ymax * ph;
            const double *col = palette[s % CHART_MAX_SERIES];
            cairo_set_source_rgb(cr, col[0], col[1], col[2]);
            cairo_rectangle(cr, x, base - h, bw, h);
            cairo_fill(cr);
            if (c->hatched[i]) hatch(cr, x, base - h, bw, h);
            base -= h;
        }
        cairo_restore(cr);
        if (base < TOP - 1) { /* over by more than a pixel (a 100% stack is not cut) */
            cairo_set_source_rgb(cr, 1, 1, 1);
            cairo_set_line_width(cr, 3);
            for (int k = 0; k < 2; k++) {
                cairo_move_to(cr, x - 2, TOP + 12 + 6 * k);
                cairo_line_to(cr, x + bw + 2, TOP + 6 + 6 * k);
            }
            cairo_stroke(cr);
        }
        if (base < TOP) base = TOP;
        ann_y[i] = any && c->annot[i][0] ? base - 4 : NAN;
        ann_x[i] = x + bw / 2;
        set_font(cr, 9.5, false);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        if (!any) {
            cairo_save(cr);
            cairo_translate(cr, x + bw / 2 + 3, TOP + ph - 6);
            cairo_rotate(cr, -M_PI / 2);
            text_at(cr, 0, 0, "no plan", 0);
            cairo_restore(cr);
        }
        /* the label, up to two lines */
        char lab[sizeof c->labels[0]];
        snprintf(lab, sizeof lab, "%s", c->labels[i]);
        char *nl = strchr(lab, '\n');
        if (nl) *nl = '\0';
        text_at(cr, x + bw / 2, TOP + ph + 14, lab, 0.5);
        if (nl) text_at(cr, x + bw / 2, TOP + ph + 26, nl + 1, 0.5);
    }
    draw_ref_line(cr, c, &ax);
    /* the numbers above the bars, over the reference line on a white ground (readable where
     * the headroom is small and the number sits on the capacity line) */
    set_font(cr, 9.5, false);
    for (int i = 0; i < c->npoints; i++) {
        if (isnan(ann_y[i])) continue;
        cairo_text_extents_t ext;
        cairo_text_extents(cr, c->annot[i], &ext);
        cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
        cairo_rectangle(cr, ann_x[i] - ext.width / 2 - 2, ann_y[i] + ext.y_bearing - 1,
                        ext.width + 4, ext.height + 2);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        text_at(cr, ann_x[i], ann_y[i], c->annot[i], 0.5);
    }
    set_font(cr, 11, false);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    text_at(cr, LEFT + pw / 2, H - 10, c->x_label, 0.5);
}

static void draw_lines(cairo_t *cr, const chart *c)
{
    double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
    double xmin = INFINITY, xmax = -INFINITY;
    for (int i = 0; i < c->npoints; i++) {
        double x = c->log_x ? log2(c->x[i]) : c->x[i];
        if (!isfinite(x)) continue;
        if (x < xmin) xmin = x;
        if (x > xmax) xmax = x;
    }
    y_axis ax = make_axis(c);
    draw_y_axis(cr, c, &ax);
    if (!(xmax > xmin)) {
        xmin = isfinite(xmin) ? xmin - 1 : 0;
        xmax = xmin + 2;
    }
    double pad = (xmax - xmin) * 0.05;
    xmin -= pad;
    xmax += pad;
#define XPOS(v) (LEFT + ((c->log_x ? log2(v) : (v)) - xmin) / (xmax - xmin) * pw)
#define YPOS(v) ypos(&ax, (v))
    /* x ticks at the points themselves (GPU counts, model sizes) */
    set_font(cr, 9.5, false);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    double last_x = -1e9;
    for (int i = 0; i < c->npoints; i++) {
        double px = XPOS(c->x[i]);
        if (px - last_x < 26) continue; /* keep labels from overlapping */
        last_x = px;
        cairo_move_to(cr, px, TOP + ph);
        cairo_line_to(cr, px, TOP + ph + 4);
        cairo_stroke(cr);
        text_at(cr, px, TOP + ph + 15, c->labels[i], 0.5);
    }
    draw_ref_line(cr, c, &ax);
    for (int s = 0; s < c->nseries; s++) {
        const double *col = palette[s % CHART_MAX_SERIES];
        cairo_set_source_rgb(cr, col[0], col[1], col[2]);
        cairo_set_line_width(cr, 2.2);
        bool down = false;
        for (int i = 0; i < c->npoints; i++) {
            double v = c->y[s][i];
            if (isnan(v)) {
                down = false;
                continue;
            }
            if (down) cairo_line_to(cr, XPOS(c->x[i]), YPOS(v));
            else cairo_move_to(cr, XPOS(c->x[i]), YPOS(v));
            down = true;
        }
        cairo_stroke(cr);
        for (int i = 0; i < c->npoints; i++) {
            double v = c->y[s][i];
            if (isnan(v)) continue;
            cairo_arc(cr, XPOS(c->x[i]), YPOS(v), 3.2, 0, 2 * M_PI);
            cairo_fill(cr);
        }
    }
#undef XPOS
#undef YPOS
    set_font(cr, 11, false);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    text_at(cr, LEFT + pw / 2, H - 10, c->x_label, 0.5);
}

static void draw(cairo_t *cr, const chart *c)
{
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    set_font(cr, 13, true);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text_at(cr, LEFT, 24, c->title, 0);
    if (c->kind == CHART_STACKED_BARS) draw_bars(cr, c);
    else draw_lines(cr, c);
    draw_legend(cr, c);
}

typedef struct {
    char *buf;
    size_t len, cap;
    bool failed;
} membuf;

static cairo_status_t mem_write(void *closure, const unsigned char *data, unsigned int length)
{
    membuf *m = closure;
    if (m->len + length + 1 > m->cap) {
        size_t cap = m->cap ? m->cap : 16384;
        while (cap < m->len + length + 1) cap *= 2;
        char *nb = realloc(m->buf, cap);
        if (!nb) {
            m->failed = true;
            return CAIRO_STATUS_WRITE_ERROR;
        }
        m->buf = nb;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, data, length);
    m->len += length;
    m->buf[m->len] = '\0';
    return CAIRO_STATUS_SUCCESS;
}

/* Copy src to a new string, dropping the XML declaration and prefixing every id and every
 * reference to one (id="x", href="#x", url(#x)) with prefix: cairo names its glyphs, clips and
 * surfaces glyph0-1, clip1, surface5 in every file, and ids must be unique in one HTML page. */
static char *prefix_ids(const char *src, const char *prefix)
{
    if (!strncmp(src, "<?xml", 5)) {
        const char *e = strstr(src, "?>");
        if (e) src = e + 2;
        while (*src == '\n' || *src == '\r') src++;
    }
    static const char *const pats[] = {"id=\"", "href=\"#", "url(#"};
    size_t plen = strlen(prefix), n = 0;
    for (const char *p = src; *p; p++)
        for (int k = 0; k < 3; k++)
            if (!strncmp(p, pats[k], strlen(pats[k]))) n++;
    char *out = malloc(strlen(src) + n * plen + 1), *o = out;
    if (!out) return NULL;
    for (const char *p = src; *p;) {
        int hit = -1;
        for (int k = 0; k < 3 && hit < 0; k++)
            if (!strncmp(p, pats[k], strlen(pats[k]))) hit = k;
        if (hit < 0) {
            *o++ = *p++;
            continue;
        }
        size_t l = strlen(pats[hit]);
        memcpy(o, p, l);
        o += l;
        p += l;
        memcpy(o, prefix, plen);
        o += plen;
    }
    *o = '\0';
    return out;
}

cm_status chart_svg(const chart *c, const char *id_prefix, char **svg, size_t *len, char *err,
                    size_t errlen)
{
    *svg = NULL;
    membuf m = {0};
    cairo_surface_t *s = cairo_svg_surface_create_for_stream(mem_write, &m, W, H);
    cairo_t *cr = cairo_create(s);
    draw(cr, c);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (st != CAIRO_STATUS_SUCCESS || m.failed || !m.buf) {
        free(m.buf);
        return cm_fail(err, errlen, CM_ENOMEM, "drawing the chart '%s' failed: %s", c->title,
                       m.failed ? "out of memory" : cairo_status_to_string(st));
    }
    char *out = prefix_ids(m.buf, id_prefix ? id_prefix : "");
    free(m.buf);
    if (!out) return cm_fail(err, errlen, CM_ENOMEM, "out of memory rendering a chart");
    *svg = out;
    if (len) *len = strlen(out);
    return CM_OK;
}

static cairo_status_t png_write(void *closure, const unsigned char *data, unsigned int length)
{
    return fwrite(data, 1, length, (FILE *)closure) == length ? CAIRO_STATUS_SUCCESS
                                                               : CAIRO_STATUS_WRITE_ERROR;
}

cm_status chart_png_staged(const chart *c, const char *path, whole_file *w, char *err,
                           size_t errlen)
{
    memset(w, 0, sizeof *w); /* whole_file_abort is safe on it whatever happens below */
    const double scale = 1.5; /* crisper on high-density screens */
    cairo_surface_t *s =
        cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)(W * scale), (int)(H * scale));
    cairo_t *cr = cairo_create(s);
    cairo_scale(cr, scale, scale);
    draw(cr, c);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(s);
        return cm_fail(err, errlen, CM_ENOMEM, "drawing the chart '%s' failed: %s", path,
                       cairo_status_to_string(st));
    }
    /* Written whole (whole_file.h): a full disk leaves no half PNG behind. */
    cm_status ws = whole_file_open(w, path, err, errlen);
    if (ws != CM_OK) {
        cairo_surface_destroy(s);
        return ws;
    }
    st = cairo_surface_write_to_png_stream(s, png_write, w->f);
    cairo_surface_destroy(s);
    if (st != CAIRO_STATUS_SUCCESS) {
        int e = errno;
        whole_file_abort(w);
        return whole_file_fail(path, st == CAIRO_STATUS_WRITE_ERROR ? e : 0, err, errlen);
    }
    return whole_file_finish(w, err, errlen);
}

#endif

cm_status chart_png(const chart *c, const char *path, char *err, size_t errlen)
{
    whole_file w;
    cm_status st = chart_png_staged(c, path, &w, err, errlen);
    return st != CM_OK ? st : whole_file_publish(&w, err, errlen);
}
