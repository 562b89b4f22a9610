/*
 * output.h — what the user reads: the human report of a plan or an estimate, and the JSON whose
 * keys are a public interface (issue 2: add keys freely, rename none).
 */
#ifndef PLAN_OUTPUT_H
#define PLAN_OUTPUT_H

#include <jansson.h>
#include <stdio.h>

#include "estimate.h"
#include "search.h"

/* Write the simulator's last run (recorded with trace on) to path as a Chrome/Perfetto trace.
 * Returns CM_OK or fills err. */
struct sim_workspace;
cm_status output_write_trace(const struct sim_workspace *w, const char *path, char *err,
                             size_t errlen);
/* The "time_simulated" object of an estimate (null when the simulator did not run). */
json_t *output_time_simulated_json(const estimate *e);
/* One estimate as the public JSON object (caller owns the reference). */
json_t *output_estimate_json(const estimate *e, const model_spec *m, const system_spec *sys);
/* {"plans": [...], "search": {...}}; stats: search.unchecked and search.stats (the per-knob
 * counts: what the search did, plan --search-stats) too. */
json_t *output_plan_json(const search_result *r, int top, const model_spec *m,
                         const system_spec *sys, bool stats);

/* One-line layout description: "megatron TP 8 · PP 4 · DP 2 ..." */
void output_layout_line(const estimate *e, char *buf, size_t len);

void output_estimate_human(FILE *f, const estimate *e, const model_spec *m,
                           const system_spec *sys);
/* The "host-paced" lines of an estimate (issue 14, costmodel/host_paced.h): what share of the
 * step the CPU's kernel issue sets, the step on an instant host and on a host
 * HOST_PACED_SLOW_FACTOR times slower; nothing where that slower host moves the step less than
 * HOST_PACED_SHOWN_SLOWDOWN. plan estimate, the search's recommendation, plan simulate. */
void output_host_paced_line(FILE *f, const estimate *e, const model_spec *m,
                            const system_spec *sys);
/* `plan estimate --ops`: the layer recipe's priced operations (dense layer, MoE layer, loss
 * head), per micro-batch, with the sums the estimate adds up (output_ops.c). */
void output_recipe_ops(FILE *f, const estimate *e, const model_spec *m, const system_spec *sys);
void output_plan_human(FILE *f, const search_result *r, int top, const model_spec *m,
                       const system_spec *sys, const training_spec *t);

#endif
