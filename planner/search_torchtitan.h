/*
 * search_torchtitan.h — the layouts the search tries under torchtitan (issue 19): FSDP2 or HSDP
 * x DTensor TP (sequence parallel, async TP) x torch.distributed.pipelining schedules x context
 * parallel x expert parallel, recompute none / selective / full, compiled. Kept apart from
 * search.c's Megatron and FSDP2 loops; search.c hands each layout to its evaluator through emit.
 */
#ifndef PLAN_SEARCH_TORCHTITAN_H
#define PLAN_SEARCH_TORCHTITAN_H

#include "search.h"

void search_torchtitan_layouts(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const search_options *opt,
                               void (*emit)(void *arg, const layout *l), void *arg);

#endif
