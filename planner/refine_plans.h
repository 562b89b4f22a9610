/*
 * refine_plans.h — the plans `plan refine` measures: which ones it picks from the search, and
 * the saved-measurement format (the records --record writes as it goes, the --format json
 * output and the "refine" section of a refined profile, all read back by --from).
 *
 * Which plans: the search's ranking (closed form, no simulator re-rank), restricted to layouts
 * the caller says run whole on its GPUs. Spread (the default) takes, in rank order, the best
 * plan of each (framework, tp), then of each (framework, tp, sharding), then of each (framework,
 * tp, cp, sharding, mbs), then the rest: the top plans of one search are often near-copies of
 * one layout, which can neither separate the step terms nor test them; top takes the plain
 * ranking.
 *
 * A record is {"model", "model_name", "system", "seq", "gbs", "gpus", "device", "plans": [{"name",
 * "layout" (layout_codec.h), "rank", "measured_step_s", "measured_spread",
 * "measured_memory_bytes", "predicted_memory_bytes"}]}. Nothing here prints.
 */
#ifndef PLAN_REFINE_PLANS_H
#define PLAN_REFINE_PLANS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "refine.h"

/* One measured plan and what refine computes for it. */
typedef struct {
    refine_obs obs; /* the layout and its measured step time */
    double spread, mem_meas, mem_pred;
    double before, before_sd, after, after_sd, held, held_sd;
    bool in_fit;
    int rank; /* position in the search ranking (1-based), 0 when not known */
} refine_plan;

/* The run a record belongs to. */
typedef struct {
    const char *model;      /* --model as given */
    const char *model_name; /* the model's name */
    const char *system;     /* --system as given */
    int seq, gbs, gpus;
    const char *device;     /* the GPUs measured on; "" when read from a file */
} refine_run;

/* The "plans" list of a record (a new array). */
json_t *refine_plans_json(const refine_plan *plans, int n);
/* The record of a run; keeps its own reference to plist. */
json_t *refine_plans_record(const refine_run *run, json_t *plist);
/* Write the record whole (temporary file, then rename). */
cm_status refine_plans_write_record(const char *path, const refine_run *run,
                                    const refine_plan *plans, int n, char *err, size_t errlen);

/*
 * Read the plans of an earlier run: a record, refine's --format json output, or a profile
 * holding one under "refine". It must have been measured with model_ref (or a model named
 * m->name), t's seq and gbs; at most REFINE_MAX_PLANS plans. Messages start with the path.
 */
cm_status refine_plans_read(const char *path, const char *model_ref, const model_spec *m,
                            const training_spec *t, refine_plan *plans, int *n, char *err,
                            size_t errlen);

/* Does layout l run whole here? (err: why not). */
typedef bool (*refine_runs_here_fn)(const layout *l, void *arg, char *err, size_t errlen);

typedef struct {
    layout layout;
    int rank; /* position in the search ranking, 1-based */
} refine_candidate;

typedef struct {
    refine_candidate *order; /* in order of trial (malloc'd; refine_pick_free) */
    int n;
    int skipped;             /* feasible plans left out: do not run whole, or within 5% of HBM */
} refine_pick;

/*
 * Search every layout of `gpus` GPUs under the frameworks enabled in frameworks[] and order
 * those that run here (runs_here) for trial: spread, or the plain ranking when top.
 */
cm_status refine_plans_pick(const model_spec *m, const system_spec *sys, const training_spec *t,
                            int gpus, const bool frameworks[2], bool top,
                            refine_runs_here_fn runs_here, void *arg, refine_pick *out,
                            char *err, size_t errlen);
void refine_pick_free(refine_pick *p);

#endif
