/*
 * report.h — `plan report`: the "FSDP2 vs Megatron" decision guide for one system and a list of
 * models and GPU counts, with every number computed by the cost model (or measured, where a
 * calibration profile overlays the system or a bench CSV with measured columns is given).
 *
 * report_build() runs one search per model x GPU count (plus a GPU-count sweep per model, a
 * torchtitan search per model at each GPU count asked and a model-size sweep for the
 * thresholds) and keeps what the sections need; report_write() renders
 * the sections as one self-contained HTML file (inline SVG charts) or as Markdown with PNG
 * charts beside it. Neither prints or exits.
 */
#ifndef PLAN_REPORT_H
#define PLAN_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "bench_csv.h"
#include "layout.h"
#include "model.h"
#include "status.h"
#include "system.h"

#define REPORT_MAX_MODELS 16
#define REPORT_MAX_GPUS 16

typedef enum { REPORT_HTML = 0, REPORT_MARKDOWN = 1 } report_format;

typedef struct {
    const system_spec *sys;
    const char *system_name;        /* what the user typed (--system) */
    const char *calibration_path;   /* NULL: none (the profile is already overlaid on sys) */
    training_spec training;
    const model_spec *models;
    int nmodels;                    /* 1 .. REPORT_MAX_MODELS */
    const int *gpus;
    int ngpus;                      /* 1 .. REPORT_MAX_GPUS */
    const bench_row *bench;         /* rows of a bench CSV (measured columns used), or NULL */
    int nbench;
    const char *bench_path;
    /* Optional: called after every search with how many are done and how many the build will
     * run in all: report_planned_searches at first, less the counts a GPU-count sweep skips
     * when it ends early, so done never passes total and ends equal to it. A caller can show
     * progress; the library itself never prints. Called under a lock (one call at a time). */
    void (*progress)(long done, long total, void *arg);
    void *progress_arg;
    /* Optional "which cluster" tables (issue 22, planner/system_compare.h), one per model, made
     * by the caller (plan report --systems); they must outlive report_write. */
    const struct system_compare_table *which_cluster;
    int nwhich_cluster;
} report_options;

typedef struct {
    long searches;                  /* search_run calls */
    long layouts;                   /* layouts the cost model evaluated */
    int charts;                     /* charts drawn by the last report_write */
    int images;                     /* image files written beside a Markdown report */
    bool charts_available;
    double seconds;                 /* report_build's wall time */
} report_stats;

typedef struct report report;

/* The searches report_build(o) plans before it starts (the first total its progress callback
 * sees; 0 for options report_build refuses): per distinct model, one at each GPU count of its
 * sweep (powers of two from 1 to the larger of 4096 and the largest count asked, plus the counts
 * asked) and one torchtitan search at each count asked; then the dense size family (11 sizes)
 * at each count asked. */
long report_planned_searches(const report_options *o);

/* Run the searches and analyses. On failure *out is NULL and err says why. */
cm_status report_build(const report_options *o, report **out, char *err, size_t errlen);

/* Write the report to path. Markdown writes its PNG charts beside path, named
 * <stem>-<chart>.png. A path that cannot be written is CM_EIO with the reason. */
cm_status report_write(report *r, report_format fmt, const char *path, char *err,
                       size_t errlen);

report_stats report_get_stats(const report *r);
void report_free(report *r);

/* The format a path asks for: .html/.htm -> HTML, .md/.markdown -> Markdown; -1 otherwise. */
int report_format_from_path(const char *path);

#endif
