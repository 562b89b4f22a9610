/*
 * gather_moe.h — the routing kernels of a torch MoE block that regroups the routed tokens by
 * gathers on the way out and on the way back (out = x[idx] every time) and weights the top-k
 * outputs as a [T, k, h] fp32 product summed over k: bench/realruns/prun_moe.py, the expert-
 * parallel layer of every parallel_run.py run (training_spec.moe_gather_routing,
 * --moe-gather-routing). torchtitan writes the way back by index_put / scatter_add, whose
 * backward is a gather (titan_moe.h); a gather's backward is an index_put_ with accumulate into
 * zeros (a fill, a cub sort of the indices, indexing_backward_kernel), so this form runs five
 * such backwards a layer where torchtitan runs two or three. Measured: the profiled EP 2 steps of
 * bench/results/epg27_2026-11-29 (H200), 4.6 ms of a 12.5 ms OLMoE layer backward in them.
 */
#ifndef PLAN_GATHER_MOE_H
#define PLAN_GATHER_MOE_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* The routing kernels of one MoE block in that form: `tokens` tokens on this GPU, `received`
 * routed copies its experts receive; padded: the grouped experts' rows padded per expert into a
 * zero buffer by index_copy and un-padded by a gather (the per-expert loop has neither). The
 * grouped GEMMs, SwiGLU and the all-to-alls are priced elsewhere, as for titan_moe_routing. */
void gather_moe_routing(const model_spec *m, const layout *l, double tokens, double received,
                        bool padded, elementwise_list *out);

/* Is `name` a routing kernel that is a device copy ("moe." ... ".clone": an out-of-place op's
 * clone, hf_experts.c; ".rows": a gather of whole rows through an index, this file's
 * vectorized_gather_kernel<16>), priced at the streaming rate (elementwise.c). Measured in the
 * profiled EP 2 steps of bench/results/epg27_2026-11-29 (H200): an OLMoE layer's five forward
 * gathers moved 537 MB each in 122-163 us (3.3-4.4 TB/s), index_copy's backward index_select
 * the same bytes in 155 us, where the eager elementwise rate gives 221 us. */
bool gather_moe_copy_kernel(const char *name);

#endif
