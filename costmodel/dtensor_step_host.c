/*
 * dtensor_step_host.c — host work of a DTensor TP step outside its decoder layers (see
 * dtensor_step_host.h for what and where it is priced).
 *
 * Measured: bench/tphost_outer.py on the --host-split records of the eight fitting runs
 * (bench/results/tphost_2026-11-27/derive: Llama-3.1-8B and Qwen3-4B cut to 8 / 12 layers,
 * TP 2 and 4, dp 1, seq 256 and 4096, two 4 x H100 machines; the held-out runs of that folder
 * were not used), output in bench/results/tpouter_2026-11-27/outer_pieces.txt. The mechanisms
 * and counts come from the profiled steps of those runs (call1_h100x4/prof, host ops per region)
 * and torch's source (pytorch/pytorch at 01c9f4fc):
 *  - pre-forward (start of the step to block 0's forward, less one layer's FSDP2 pre-forward
 *    hook): FSDP::root_pre_forward (torch/distributed/fsdp/_fully_shard/_fsdp_state.py
 *    _root_pre_forward: stream waits and the inputs' to-device, no kernel, 2.2-2.9 ms under
 *    the profiler), the root unit's FSDP::pre_forward (its all-gather: 6 launches), and the
 *    embedding's RowwiseParallel (torch/distributed/tensor/parallel/style.py: from_local of the
 *    Replicate ids, the embedding on the Shard(0) weight whose MaskPartial input handling runs 7
 *    aten ops in one dispatch, redistribute to Shard(1) with the reduce-scatter, to_local): 4
 *    DTensor dispatches. Measured 1.8-2.7 ms at TP 2 and 4 alike (it does not grow with tp, unlike
 *    a DTensor dispatch), so beyond the 4 dispatches it is priced in plain launches: median
 *    45.1 x host.eager_launch_s (36-56 per run).
 *  - the loss head's forward (last block's end to the loss): 3.1-4.6 ms against the 11 dispatches
 *    host_dispatch.c counts for the final norm and output layer; the rest is the loss under
 *    loss_parallel (torch/distributed/tensor/parallel/loss.py: log_softmax and nll_loss run as
 *    custom handlers, local ops with all-reduces, 33-40 launches in the profiles), the logits'
 *    flatten and .float(): median 64.9 plain launches (35-81).
 *  - the backward's tail (block 0's input gradient to the end of backward): FSDP2's
 *    root_post_backward_callback, whose post_backward_reduce runs fsdp::chunk_cat over the root
 *    unit's gradients (9.9 ms of host under the profiler at TP 2 for Llama-3.1-8B's 1.03 M
 *    blocks of 2 KiB, 4.7 ms at TP 4), layer 0's post-backward, the embedding's backward and its
 *    RowwiseParallel hooks' backward. The chunk_cat at host.chunk_cat_block_s per block
 *    (fsdp_copies.h) plus a median 64.9 backward DTensor dispatches (39-136 per run; larger at
 *    TP 2, where the root's chunk_cat runs 9-10 ns per block on these hosts against the preset's
 *    5.6: the part of it above 5.6 ns lands in this count).
 *  - the optimizer (clip end to the optimizer's end): aten::_fused_adamw_ over lists of every
 *    parameter tensor is one DTensor dispatch (PythonSubclass in the profile, 34-67 launches of
 *    the local fused kernel inside it) whose unwrap and sharding propagation run per list
 *    element (torch/distributed/tensor/_ops/_pointwise_ops.py at 004d0584: the fused adam/adamw
 *    and _foreach_ ops are registered as one strategy over the pytree of their list arguments,
 *    RuntimeSchemaInfo(needs_pytree=True)), plus _foreach_add_ of the step counts;
 *    zero_grad(set_to_none) only drops references. 2.7-6.7 ms for 75 and 135 tensors: median 46.9 us per tensor
 *    (host.eager_dtensor_optim_tensor_s).
 * The loss head's backward beyond its 17 counted dispatches (median 4.5 more, -16 to +17 per
 * run) is left out.
 */
#include "dtensor_step_host.h"
#include "optimizer_host.h"

#include "dtensor_ops.h"
#include "fsdp_copies.h"
#include "host_dispatch.h"

enum { EMBED_DISPATCHES = 4 };     /* from_local, embedding, redistribute, to_local */
static const double PRE_PLAIN = 45.1;        /* root pre-forward + root gather, plain launches */
static const double LOSS_PLAIN = 64.9;       /* loss_parallel's handlers, flatten, .float() */
static const double TAIL_DISPATCHES = 64.9;  /* backward dispatches after block 0's gradient */

double dtensor_step_host_pre_s(double plain_s, double dt_fwd_s)
{
    return EMBED_DISPATCHES * dt_fwd_s + PRE_PLAIN * plain_s;
}

double dtensor_step_host_loss_s(double plain_s)
{
    return LOSS_PLAIN * plain_s;
}

double dtensor_step_host_tail_s(const system_spec *sys, const model_spec *m, const layout *l,
                                double dt_bwd_s)
{
    double s = TAIL_DISPATCHES * dt_bwd_s;
    if (l->sharding == SHARDING_FSDP)
        s += fsdp_rs_copy_in_host_s(sys, fsdp_root_params(m, l, 0) / l->tp, layout_shard_group(l));
    return s;
}

double dtensor_step_host_optimizer_s(const system_spec *sys, const model_spec *m,
                                     const layout *l, int stage)
{
    if (!dtensor_tp_applies(l) || sys->host_dtensor_optim_tensor_s <= 0) return 0;
    /* the stage's parameter tensors: its layers, the embedding on the first stage, the final
     * norm and the output layer (unless tied) on the last (optimizer_host.h) */
    return optimizer_host_tensors(m, l, stage) * sys->host_dtensor_optim_tensor_s;
}
