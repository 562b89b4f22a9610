/*
 * explain.h — the short "why" under a recommendation: which constraint decided the layout and
 * what the alternatives cost, computed from the estimates (no canned text without numbers).
 */
#ifndef PLAN_EXPLAIN_H
#define PLAN_EXPLAIN_H

#include <stdio.h>

#include "search.h"

/* Writes up to `max` bullet lines ("- ...\n") explaining r->ranked[0]. */
void explain_plan(FILE *f, const search_result *r, const model_spec *m, const system_spec *sys,
                  const training_spec *t);

/* "- Tight: ..." when r->ranked[0] needs all but under 5% of the GPU's memory (the memory
 * model's error on real runs reaches that), naming the fastest kept plan with that much room;
 * nothing otherwise. */
void explain_tight(FILE *f, const search_result *r);

#endif
