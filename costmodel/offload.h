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
 * Activation offload (--cpu-offloading-num-layers N; Megatron-Core TransformerConfig at
 * d98e8a6: 0 <= N < num_layers, no pipeline parallelism, no recompute): Transformer Engine's
 * default synchronizer (transformer_engine/pytorch/cpu_offload.py, DefaultOffloadSynchronizer,
 * TE v2.10 on; d0067d0) offloads layers 0..N-1 of L. Layer i's copy to the host starts after
 * its forward, on one side stream (copies queue), and must be done before layer L-N+i's
 * forward starts, when its GPU memory is released; its copy back starts at the backward of
 * layer L-1-N+i and must be done when the backward reaches layer i. The saved activations the
 * GPU holds then peak at (L - N) layers' (the docstring's "(num_layers - num_offloaded_layers)
 * * T"). N defaults to L - 1, the most it allows.
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

/* One micro-batch's offload schedule over a stage's n layers (n_off of them offloaded, the
 * first ones): per layer, its forward and backward compute time and its saved-activation bytes
 * (each way over the host link). */
typedef struct {
    int n, n_off;
    const double *fwd_s, *bwd_s, *bytes;
} offload_activation_pass;
/* The time the compute stream waits for the copies in the forward (*fwd_wait_s) and the
 * backward (*bwd_wait_s): TE's deadlines above, the copies queued on one stream at the host
 * link's rate (system pcie_bandwidth_bytes_per_s). */
void offload_activation_wait_s(const system_spec *sys, const offload_activation_pass *p,
                               double *fwd_wait_s, double *bwd_wait_s);

#endif
