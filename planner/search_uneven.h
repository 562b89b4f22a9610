/*
 * search_uneven.h — the uneven-pipeline variant the search tries beside a pipeline layout
 * (issue 21): the first and last stage with fewer decoder layers than the others, so that the
 * embedding's stage (the most micro-batches in flight) and the head's stage (the output GEMMs
 * and the loss) do not set the pace.
 */
#ifndef PLAN_SEARCH_UNEVEN_H
#define PLAN_SEARCH_UNEVEN_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"

/* The variant of l (pp >= 2, one stage a rank, no uneven split yet): M = (layers + s) / pp
 * decoder layers a stage, the first M - a, the last M - b, with s = a + b the smallest of 1..4
 * that makes M whole and b the head's share (its GEMMs in decoder layers, at least 1, at most
 * s). False when there is none. */
bool search_uneven_variant(const model_spec *m, const layout *l, layout *out);

#endif
