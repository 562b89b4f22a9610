/*
 * shard_grads.h — ZeRO-2 under Megatron (layout.h shard_grads): Megatron-FSDP's "optim_grads"
 * sharding strategy, which keeps the parameters whole on every data-parallel rank and shards
 * the optimizer state and the gradients, reduce-scattering each FSDP unit's gradients in every
 * micro-batch's backward. It exists because the Llama 3 paper's data parallelism is this split
 * (Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, Sec. 3.3.2: "Our use of
 * FSDP for Llama 3 shards optimizer states and gradients, but for model shards we do not
 * reshard after forward computation"), which neither the distributed optimizer (ZeRO-1:
 * unsharded fp32 main gradients, 4 bytes a parameter) nor Megatron-FSDP's default
 * optim_grads_params (ZeRO-3: a gather per unit and micro-batch) prices.
 *
 * Sources (Megatron-LM d98e8a6): megatron/core/distributed/fsdp/mcore_fsdp_adapter.py 166-169
 * ("optim_grads": reduce-scatter communication groups on all micro-batches),
 * megatron_fsdp.py 116-119 (optim_grads "conceptually close to ZeRO-2") and 331-337 (gradient
 * reduce-scatter must be overlapped: overlap_grad_reduce forced), src/docs/mfsdp_design.md's
 * table (ZeRO-2 / optim_grads: parameters replicated, gradients and optimizer sharded).
 *
 * What it changes (each where the model composes it):
 *   - the layer recipe (layer_recipe.c): the unit's gradient reduce-scatter over the dp x cp
 *     shard group in every micro-batch's backward, on the communication stream; no gather;
 *   - the step (estimate.c, dp_sync.c): what of those reduce-scatters the compute stream waits
 *     for, from Megatron-FSDP's bounded reduce-scatter queue (shard_grads_bwd_stall_s below),
 *     plus the measured contention of a collective beside the GEMMs (overlap.h), and no
 *     step-end gradient reduce-scatter; the updated parameters are gathered once a step, as
 *     the distributed optimizer's;
 *   - memory (memory.c): main gradients grad_bytes / (dp x cp) a parameter, plus the two
 *     unsharded gradient buckets in flight that Megatron-FSDP's optim_grads_params holds;
 *   - the accumulation copy of Megatron-FSDP's unfused gradient path (grad_accum.h path 2).
 */
#ifndef PLAN_SHARD_GRADS_H
#define PLAN_SHARD_GRADS_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"

/* Are l's gradients sharded over its data-parallel group during the step (Megatron-FSDP of
 * either strategy, torch FSDP2)? */
bool layout_grads_sharded(const layout *l);

/* Is l ZeRO-2 under Megatron (shard_grads on a distributed-optimizer layout)? */
bool layout_zero2(const layout *l);

/* (Its rules, layout_shard_grads_rule, are declared in layout.h beside the rank order's.) */

/*
 * The compute-stream time one backward of a chunk of `layers` decoder layers loses to ZeRO-2's
 * reduce-scatters (rs_s a layer), each layer's backward bwd_s, the forward that follows it
 * fwd_s a layer, unit_params parameters a layer on this GPU.
 *
 * Megatron-FSDP issues each unit's reduce-scatter on its own stream as the unit's gradients are
 * ready and lets the compute stream run on until the queue of reduce-scatters not yet done
 * holds more than suggested_RS_queue_capacity parameters, max(1e9, 2 x the mean unit's)
 * (megatron_fsdp.py 420-443); past that the compute stream waits on the oldest one's event
 * (param_and_grad_buffer.py 3912-3946, GradReducePipeline.reduce_gradients and
 * wait_for_previous_grad_reduce). So a backward of n layers whose reduce-scatters outrun it
 * stalls only once the queue is full, q = capacity / unit_params layers behind, and what is
 * queued at its end drains beside the compute that follows: in 1F1B's steady state (and in
 * gradient accumulation) the next micro-batch's forward of a chunk of the same size. The loss
 * is the larger of the queue's bound, bwd + (n - q) rs - n bwd, and the stream's throughput
 * bound, n rs - n bwd - n fwd, never below 0. (Megatron-FSDP's optim_grads_params prices its
 * reduce-scatter exposed past each layer's backward, estimate.c: there the next forward's
 * all-gathers hold the network.)
 */
double shard_grads_bwd_stall_s(double rs_s, double bwd_s, double fwd_s, double layers,
                               double unit_params);

/* What of the reduce-scatters is still queued when the step's last backward of such a chunk
 * ends (nothing follows it): min(q, layers) of them, paid once a step. */
double shard_grads_tail_s(double rs_s, double layers, double unit_params);

#endif
