/*
 * chart.h — the few charts `plan report` draws, with cairo: stacked bars (memory and step-time
 * breakdowns per plan) and lines (throughput against GPU count, speed ratio against model size).
 *
 * A chart is plain data (labels, series, values, an optional fixed y range so several charts
 * share one scale, and per-bar notes); chart_svg() renders it to an SVG string for
 * inlining into one self-contained HTML file, chart_png() to a PNG file for Markdown. When the
 * build has no cairo (meson feature `charts`), chart_available() is false and both return
 * CM_EINVAL with a message saying how to get charts; the report then says so in the text.
 */
#ifndef PLAN_CHART_H
#define PLAN_CHART_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"
#include "whole_file.h"

#define CHART_MAX_SERIES 8
#define CHART_MAX_POINTS 48

typedef enum { CHART_STACKED_BARS = 0, CHART_LINES = 1 } chart_kind;

typedef struct {
    chart_kind kind;
    char title[160];
    char x_label[80];
    char y_label[80];
    int nseries;                                   /* stack components, or lines */
    char series[CHART_MAX_SERIES][48];
    int npoints;                                   /* bars, or x positions */
    char labels[CHART_MAX_POINTS][40];             /* bar labels; '\n' splits two lines */
    bool hatched[CHART_MAX_POINTS];                /* bars: drawn hatched (e.g. does not fit) */
    double x[CHART_MAX_POINTS];                    /* lines: x values */
    double y[CHART_MAX_SERIES][CHART_MAX_POINTS];  /* NaN: missing (a gap in a line) */
    bool log_x;                                    /* lines: x axis in log2 */
    bool log_y;                                    /* lines: y axis in log10 (ratios read as
                                                      equal heights at any scale) */
    double y_min, y_max;                           /* y axis range; NaN: from the data (set
                                                      both on several charts for one scale) */
    char annot[CHART_MAX_POINTS][24];              /* bars: a note above each bar */
    double ref_y;                                  /* horizontal reference line; NaN: none */
    char ref_label[64];
} chart;

/* The y range chart_svg would draw for c from its data alone (before y_min/y_max apply): the
 * callers take the widest over several charts to give them one scale. */
void chart_data_range(const chart *c, double *lo, double *hi);

/* A chart with every value NaN and no reference line. */
void chart_init(chart *c, chart_kind kind, const char *title, const char *x_label,
                const char *y_label);
/* Add a series (returns its index, or -1 when full). */
int chart_add_series(chart *c, const char *name);
/* Add a bar or x position (returns its index, or -1 when full). */
int chart_add_point(chart *c, const char *label, double x);

/* Whether this build can draw (cairo found at configure time). */
bool chart_available(void);

/* Render as SVG into a malloc'd NUL-terminated string (caller frees). Every id in the SVG is
 * prefixed with id_prefix so several charts can be inlined in one HTML document. */
cm_status chart_svg(const chart *c, const char *id_prefix, char **svg, size_t *len, char *err,
                    size_t errlen);
/* Render as a PNG file. */
cm_status chart_png(const chart *c, const char *path, char *err, size_t errlen);
/* The same, written and synced but not yet in place: whole_file_publish(w) puts it there,
 * whole_file_abort(w) drops it (a report publishes its charts only when all were written). */
cm_status chart_png_staged(const chart *c, const char *path, whole_file *w, char *err,
                           size_t errlen);

/* Release cairo's font and surface caches (call once, when no chart is being drawn; keeps leak
 * checkers quiet about memory cairo would otherwise hold until exit). */
void chart_cleanup(void);

#endif
