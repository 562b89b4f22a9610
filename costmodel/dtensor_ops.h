/*
 * dtensor_ops.h — which ops of a decoder layer run on DTensors under torchtitan's tensor-parallel
 * plan, and the DTensor dispatches that plan issues beyond the kernels the recipe counts
 * (issues 19 and 24). The host's issue queue (host_dispatch.c) prices each DTensor dispatch at
 * the measured DTensor host time per op, the rest at the plain one.
 *
 * torchtitan's Llama plan (torchtitan/models/llama3/infra/parallelize.py at 81c12433,
 * apply_tp; the same plan bench/realruns/parallel_run.py tp_plan runs): norms SequenceParallel,
 * attention and feed_forward PrepareModuleInput(Shard(1) -> Replicate), wq/wk/wv/w1/w3 ColwiseParallel,
 * wo/w2 RowwiseParallel(output Shard(1)), output ColwiseParallel(Shard(-1)) under loss_parallel.
 * Colwise and Rowwise default to use_local_output=True, so between them the attention core,
 * RoPE, the activation and the residual adds run on plain local tensors; the norms, the
 * Linears and the loss head run on DTensors.
 */
#ifndef PLAN_DTENSOR_OPS_H
#define PLAN_DTENSOR_OPS_H

#include <stdbool.h>

#include "layer_recipe.h"
#include "layout.h"

/* Whether the host prices DTensor dispatch for l (torchtitan with TP > 1). */
bool dtensor_tp_applies(const layout *l);

/* Whether op o of a decoder layer runs on DTensors (its Linears and its norms). */
bool dtensor_layer_op(const recipe_op *o);

/* DTensor dispatches without a kernel of their own that one GEMM op of `modules` Linear
 * modules issues in the forward (bwd false) or the backward: the Linear's decomposition and
 * the parallel style's hooks (dtensor_ops.c gives the count and its sources). */
double dtensor_linear_dispatches(const recipe_op *o, double modules, bool bwd);

/* Of those, the ones a recompute that torch's non-reentrant checkpoint stops early in this GEMM
 * op's autograd save still issues (recipe_op.recompute_stops_here): each module's input hook and
 * the decomposition's ops before the mm (dtensor_ops.c). */
double dtensor_linear_stop_dispatches(const recipe_op *o, double modules);

/* The same for one SequenceParallel norm with the PrepareModuleInput that follows it, per pass
 * (a decoder layer has two). */
double dtensor_norm_dispatches(void);

/* The loss head's: the final norm's input hook and the output Colwise's input redistribute. */
double dtensor_head_dispatches(void);

#endif
