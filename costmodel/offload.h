/*
 * offload.h — Megatron-Core's CPU offload (issue 21): what the host link costs and what GPU
 * memory it frees.
 *
 * Optimizer offload (--optimizer-cpu-offload --optimizer-offload-fraction F, Megatron-LM
 * megatron/training/arguments.py; HybridDeviceOptimizer in
 * megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py at 0d41ecd): the first F of this
 * rank's (distributed-optimizer shard of) parameters keep their fp32 master copy and Adam
 * moments on the host and are stepped by a CPU Adam; their fp32 gradients cross the host link
 * to the host (D2H) and the updated parameters cross back (H2D), on side streams when
 * --overlap-cpu-optimizer-d2h-h2d is set (emitted with it). GPU memory: the optimizer state of
 * those parameters (12 of the 12 bytes per parameter the distributed optimizer holds).
 *
 * Activation offload (--cpu-offloading --cpu-offloading-num-layers K; Megatron-Core
 * TransformerConfig: K < num_layers, no pipeline parallelism, no recompute): each of K layers'
 * saved activations goes to the host after its forward and returns before its backward, on a
 * side stream beside the next layer's compute. Here K = layers - 1, the most Megatron allows.
 */
#ifndef PLAN_OFFLOAD_H
#define PLAN_OFFLOAD_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* The share of the optimizer state on the host (0..1). */
double offload_optimizer_fraction(const layout *l);

/* The optimizer step of local_params parameters with fraction f on the host: the GPU's fused
 * Adam on the rest (gpu_full_s: its time for all of them) beside the gradients' D2H copy, then
 * the CPU Adam beside the parameters' H2D copy (per-parameter optimizers pipeline the two);
 * 4 bytes a parameter each way (fp32 main gradients; fp32 updated master weights). */
double offload_optimizer_step_s(const system_spec *sys, double local_params, double gpu_full_s,
                                double f);
/* Host memory per node the offloaded state takes: 12 bytes (fp32 master, Adam m and v) plus
 * the 4-byte pinned gradient copy per offloaded parameter, for every GPU of the node. */
double offload_optimizer_host_bytes(const system_spec *sys, double local_params, double f);

/* Decoder layers whose activations go to the host (0 without activation offload). */
int offload_activation_layers(const model_spec *m, const layout *l);
/* The exposed part of one layer's activation copy (bytes each way over the host link) beside
 * a pass of compute_s: what the copy outlasts the compute by. */
double offload_activation_exposed_s(const system_spec *sys, double bytes, double compute_s);

#endif
