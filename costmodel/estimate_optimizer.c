/*
 * estimate_optimizer.c — the optimizer step's time on one pipeline stage: the bytes each
 * implementation streams per local parameter, FP8 parameter writes, DTensor and torch host
 * floors, CPU offload. Out of estimate.c (which assembles the step from it); declared in
 * estimate_internal.h and estimate_costs.h.
 */
#include "estimate_internal.h"
#include "estimate_costs.h"

#include <math.h>

#include "compute.h"
#include "cuda_graphs.h"
#include "dtensor_step_host.h"
#include "impl.h"
#include "memory.h"
#include "memory_params.h"
#include "offload.h"
#include "optimizer_host.h"
#include "precision.h"

/* Optimizer step of stage `stage`. Megatron (MixedPrecisionOptimizer / DistributedOptimizer
 * step, megatron/core/optimizer/optimizer.py at d98e8a6; the same passes in 2022's
 * megatron/optimizer/optimizer.py at 9aad9203aa lines 393-438): the gradient norm
 * (get_grad_norm_fp32, clip_grads.py: multi_tensor_l2norm reads the fp32 main grads, 4 bytes),
 * the fused Adam (fp32 grad, master, m and v read, master, m and v written: 28), then
 * _copy_main_params_to_model_params as its own multi_tensor_scale (lines 777-808, 1112-1117:
 * fp32 master read, bf16 param written: 6): 38 bytes per local parameter; and before the step's
 * first forward zero_grad_buffer zeroes the whole fp32 gradient buffer of the stage's
 * parameters, unsharded under the distributed optimizer too (param_and_grad_buffer.py
 * grad_data.zero_(), 4 bytes; --grad-reduce-in-bf16's 2 not told apart). The clip's
 * multi_tensor_scale runs only when the norm exceeds --clip-grad (clip_coeff < 1): not priced.
 * torch's AdamW under FSDP2 the bytes of its implementation (impl.h: fused 28, foreach and
 * for-loop 80) plus clip_grad_norm_'s 12 (impl.h). *local_params: the parameters this GPU
 * updates. */
double estimate_optimizer_local_s(const model_spec *m, const system_spec *sys, const layout *l,
                                  int stage, double *local_params)
{
    double pd, pe;
    memory_stage_params(m, l, stage, &pd, &pe);
    double local = pd + pe;
    if (l->sharding != SHARDING_DDP) {
        double ne = layout_expert_dp(l);
        if (l->shard_size > 0 && l->shard_size < ne) ne = l->shard_size;
        local = pd / layout_shard_group(l) + pe / ne;
    }
    *local_params = local;
    if (l->offload) return local / sys->host_adam_params_per_s;
    double per_param = 38.0, zeroed = 4.0 * (pd + pe);
    if (l->sharding == SHARDING_FSDP) zeroed = 4.0 * local; /* Megatron-FSDP: the shard's */
    /* bf16 gradient read and bf16 m, v read + write: 2 + 8 + 8 + 2 = 20 */
    if (l->optimizer_bf16_states) per_param = 20.0;
    /* torch's clip_grad_norm_ (foreach norm and scale) and foreach AdamW run as
     * multi_tensor_apply kernels, which stream below a plain copy's rate
     * (gpu.multi_tensor_efficiency: measured per GPU in clip's and AdamW's profiled kernels;
     * 0: hbm_efficiency); fused AdamW's own kernel and the for-loop's are not measured */
    double mt_bytes = 0;
    if (layout_is_pytorch(l)) {
        zeroed = 0; /* FSDP2 frees its gradients instead (set_to_none) */
        layout_optimizer_impl oi = layout_optimizer_impl_of(l);
        per_param = optimizer_impl_bytes_per_param(oi) + 12.0;
        if (sys->multi_tensor_efficiency > 0)
            mt_bytes = (12.0 + (oi == OPTIMIZER_IMPL_FOREACH ? optimizer_impl_bytes_per_param(oi)
                                                             : 0.0)) * local;
    }
    /* --fp8-param-gather: the updated fp32 master is written to the parameter buffer in its
     * low-precision format (Megatron quantizes the shard, fp8_utils.py quantize_param_shard)
     * instead of bf16: operand_bytes instead of 2 per Linear weight */
    double saved = 0;
    if (precision_param_gather(l)) {
        double lpd, lpe, ne = layout_expert_dp(l);
        memory_stage_lp_params(m, l, stage, &lpd, &lpe);
        if (l->shard_size > 0 && l->shard_size < ne) ne = l->shard_size;
        saved = (2.0 - precision_param_bytes(l)) * (lpd / layout_shard_group(l) + lpe / ne);
    }
    double gpu_s = compute_stream_s(sys, per_param * local + zeroed - saved - mt_bytes);
    if (mt_bytes > 0)
        gpu_s += mt_bytes / (sys->hbm_bandwidth_bytes_per_s * sys->multi_tensor_efficiency);
    /* DTensor TP: the fused AdamW call is one DTensor dispatch over every parameter tensor,
     * whose host work (unwrap and sharding propagation per tensor) comes before its kernels
     * (dtensor_step_host.h); where the GPU has caught up with the host by then (a host-bound
     * backward, or clipping's .item()) it idles through it */
    /* under torchtitan's CUDA graphs the host issues both while the GPU still replays the
     * micro-batches' graphs: the step's assembly prices them there (cuda_graphs_optimizer_s) */
    if (!cuda_graphs_on(l)) {
        gpu_s += dtensor_step_host_optimizer_s(sys, m, l, stage);
        /* torch's clip and AdamW: the host's issue time as a floor (optimizer_host.h) */
        if (!l->offload) gpu_s = fmax(gpu_s, optimizer_host_s(sys, m, l, stage, local));
    }
    double f = offload_optimizer_fraction(l); /* Megatron --optimizer-cpu-offload */
    return f > 0 ? offload_optimizer_step_s(sys, local, gpu_s, f) : gpu_s;
}

double estimate_optimizer_s(const model_spec *m, const system_spec *sys, const layout *l,
                            int stage)
{
    double local;
    return estimate_optimizer_local_s(m, sys, l, stage, &local);
}
