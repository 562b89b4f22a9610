/*
 * search.h — enumerate every valid layout for a GPU count under both frameworks, evaluate each
 * with the cost model, and keep the best by predicted step time (tie-break: memory headroom).
 */
#ifndef PLAN_SEARCH_H
#define PLAN_SEARCH_H

#include "estimate.h"

#define SEARCH_KEEP_MAX 256

typedef struct {
    int gpus;
    int keep;                   /* how many ranked plans to keep (>= the --top asked for) */
    bool frameworks[2];         /* which frameworks to search (index = layout_framework) */
} search_options;

typedef struct {
    int gpus;                   /* the GPU count searched */
    long evaluated;             /* layouts passed through the cost model */
    long feasible;
    double seconds;
    int count;                  /* ranked plans kept, best first */
    estimate ranked[SEARCH_KEEP_MAX];
    bool has_best[2];           /* best feasible plan of each framework */
    estimate best[2];
    bool has_best_sharding[2][3]; /* best feasible plan per framework and sharding */
    estimate best_sharding[2][3];
    bool has_closest[2];        /* when nothing fits: the plan closest to fitting */
    estimate closest[2];
} search_result;

/* Is a better than b (step time, then memory headroom)? */
bool search_better(const estimate *a, const estimate *b);

/* Runs the search. result is large: allocate it (search_result_new) rather than on the stack. */
cm_status search_run(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const search_options *opt, search_result *result, char *err,
                     size_t errlen);
search_result *search_result_new(void);
void search_result_free(search_result *r);

#endif
