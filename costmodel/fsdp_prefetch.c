/*
 * fsdp_prefetch.c — FSDP's prefetched gathers and reduce-scatters exposed in layer order over a
 * stage's layers (estimate.c's stage_layers_cost), and the layer kinds it walks. Apart from
 * estimate.c because the walk runs once a stage of every layout the search prices: each
 * layer's kind is found once and each distinct term computed once (slow26: the walk as first
 * written, three kind look-ups and two fmax a layer, was a quarter of 405B's search).
 */
#include "estimate_internal.h"

#include <math.h>
#include <stddef.h>

#include "memory.h"
#include "precision.h"

const layer_time *estimate_layer_kind_of(const model_spec *m, const layout *l,
                                         const layer_kinds *k, int i)
{
    bool moe = memory_layer_is_moe(m, i);
    if (precision_layer_bf16(m, l, i)) return moe ? &k->moe_bf16 : &k->dense_bf16;
    return moe ? &k->moe : &k->dense;
}

double fsdp_prefetch_exposed_add(const model_spec *m, const layout *l, const layer_kinds *kinds,
                                 int start, int n, int first_moe, double rf, double sum_s)
{
    if (n <= 0) return sum_s;
    const layer_time *x = estimate_layer_kind_of(m, l, kinds, start), *below = x;
    const layer_time *seen[3] = {NULL, NULL, NULL};
    double term = 0;
    for (int j = 0; j < n;) {
        int g = start + j + 1; /* the next layer */
        const layer_time *above = j + 1 == n      ? x
                                  : first_moe < 0 ? estimate_layer_kind_of(m, l, kinds, g)
                                  : g < first_moe ? &kinds->dense
                                                  : &kinds->moe;
        if (below != seen[0] || x != seen[1] || above != seen[2]) {
            double ag_bwd = l->reshard_after_forward ? below->gather_s : 0;
            term = fmax(0, x->gather_s - below->fwd_s) +
                   fmax(0, ag_bwd + above->reduce_s - (x->bwd_s + rf * x->recompute_s));
            seen[0] = below, seen[1] = x, seen[2] = above;
        }
        sum_s += term;
        below = x, x = above, j++;
        if (first_moe < 0 || seen[0] != seen[1] || seen[2] != seen[1]) continue;
        /* the split's layers of this kind before the next kind have these neighbours too */
        int end = g < first_moe && first_moe < start + n ? first_moe - 1 : start + n;
        for (; start + j < end; j++) sum_s += term;
    }
    return sum_s;
}
