/*
 * titan_moe.h — the routing kernels of torchtitan's MoE block in eager PyTorch (router, token
 * reordering, the permute to local-expert order and back around the grouped GEMMs, the unsort
 * and the weighted top-k sum), forward and backward, and how many launches the host issues for
 * them. Without this list the torchtitan path priced one lumped "moe.permute" kernel per pass;
 * a profiled expert-parallel step (bench/results/ep_2026-11-27) spends 12-15 ms of GPU time per
 * step (4 MoE layers, Qwen3-30B-A3B at seq 4096, H200) in these kernels, and, after the
 * split-size device-to-host sync of expert parallelism (host_dispatch.c), the host issues them
 * one by one with an empty queue. titan_moe.c lists them op by op with its sources.
 */
#ifndef PLAN_TITAN_MOE_H
#define PLAN_TITAN_MOE_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* Does l run torchtitan's MoE model code eagerly (framework torchtitan, no torch.compile, no TP
 * or CP: every token of this GPU goes through its own router). */
bool titan_moe_applies(const layout *l);

/* The routing kernels of one MoE block: `tokens` tokens on this GPU, `received` routed copies
 * this GPU's experts receive (tokens x top_k, times the busiest rank's load under EP). The
 * grouped GEMMs, the SwiGLU between them and the all-to-alls are priced elsewhere
 * (layer_recipe.c, elementwise.c, moe_dispatch.c). out->eager and out->alone as
 * elementwise_layer sets them. */
void titan_moe_routing(const model_spec *m, const layout *l, double tokens, double received,
                       elementwise_list *out);

#endif
