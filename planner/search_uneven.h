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
 * s; head_layers: search_uneven_head_layers(m)). False when there is none. */
bool search_uneven_variant(const model_spec *m, double head_layers, const layout *l,
                           layout *out);
/* The head's GEMM work in decoder layers, search_uneven_variant's head_layers (a search counts
 * it once per model, not per layout). */
double search_uneven_head_layers(const model_spec *m);

/* Virtual-stage counts that need Megatron's account-for-embedding-and-loss split
 * (--account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split, the way
 * NVIDIA's recipes put Llama-3.1-405B's 126 layers on pp 8 x vpp 8): the embedding and the
 * loss count as a layer each, (layers + 2) / pp units a rank, the first and last rank one
 * decoder layer fewer. Fills out with each v >= 2 that divides the units of a rank and is not
 * in have (the even split's counts); returns how many. 0 when (layers + 2) % pp != 0. */
int search_uneven_account_vpps(const model_spec *m, int pp, const int *have, int nhave,
                               int *out, int max);
/* Sets l's first and last stage to the account-for split's (layers + 2) / pp - 1 each. */
void search_uneven_account_split(const model_spec *m, layout *l);

#endif
