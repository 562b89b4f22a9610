/*
 * grad_accum.h — weight gradients summed across micro-batches by a separate kernel, where the
 * framework does not fuse the sum into the weight-gradient GEMM.
 *
 * Megatron-LM since 2022 accumulates each weight gradient inside its wgrad GEMM (--gradient-
 * accumulation-fusion, fused_weight_gradient_dense: commit 83b1e42f30 of 2022-02-13 for
 * fp32/bf16 main grads, 07916bf245 of 2022-09-27 for fp16; beta = 1 into main_grad), which
 * costs nothing beyond the GEMM and is what the rest of the model assumes. Two paths do not:
 *
 * 1. The 2021 Megatron-LM of the SC'21 runs (commit 6985e58, examples/sc21: --fp16, --DDP-impl
 *    local or torch, no --use-contiguous-buffers-in-ddp): megatron/model/distributed.py there
 *    keeps the gradients in param.grad (allreduce_gradients: "param.main_grad = param.grad",
 *    buckets of param.grad.data), so PyTorch's AccumulateGrad sums every micro-batch's new fp16
 *    gradient into it in place (torch/csrc/autograd/functions/accumulate_grad.h: variable_grad
 *    += new_grad): read 2 + read 2 + write 2 = 6 bytes per parameter for each micro-batch after
 *    the first. training_spec.grad_accum_unfused turns it on (tests/golden.c for the 2021 rows).
 *
 * 2. Megatron-FSDP, which plan emits with --no-gradient-accumulation-fusion (DESIGN.md,
 *    Framework rules): each Linear's wgrad GEMM writes a fresh bf16 param.grad, and the
 *    post-backward hook of optim_grads_params (a sharded gradient buffer) copies it into the
 *    layer's unsharded main-grad bucket before the bucket is reduce-scattered and accumulated
 *    into the shard (megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py _grad_acc,
 *    "param.main_grad.copy_(to_local_if_dtensor(param.grad))", Megatron-LM d98e8a6): read 2 +
 *    write the main-grad dtype (2 with --grad-reduce-in-bf16, 4 in fp32) per parameter of the
 *    layer on this GPU, every micro-batch. (Megatron's DDP and distributed optimizer with the
 *    fusion off run main_grad.add_(param.grad) in their hook, distributed_data_parallel.py
 *    _make_backward_post_hook; plan never emits that configuration.)
 *
 * Both are layer-recipe ops ("grad_accum", backward, memory-bound: compute_stream_s), so the
 * closed form and the simulator price the same term; the 2021 path's sum over micro-batches
 * after the first is spread evenly over the micro-batches, (micro - 1) / micro each, and its
 * part for the parameters outside the layers (the first stage's embedding) stays a per-step
 * term of the estimate (grad_accum_step_s).
 */
#ifndef PLAN_GRAD_ACCUM_H
#define PLAN_GRAD_ACCUM_H

#include <stdbool.h>

#include "layout.h"
#include "system.h"

/* Bytes per parameter per micro-batch after the first (the unfused 16-bit sum of path 1). */
#define GRAD_ACCUM_UNFUSED_BYTES_PER_PARAM 6.0

/* Does l under t accumulate its weight gradients outside the wgrad GEMM (path 1 or 2)? */
bool grad_accum_unfused(const training_spec *t, const layout *l);

/* Bytes the unfused accumulation moves per micro-batch for `params` weight parameters of a
 * layer on one GPU (0 when fused): path 2, (2 + main-grad bytes) x params; path 1,
 * 6 x params x (micro - 1) / micro. */
double grad_accum_layer_bytes(const training_spec *t, const layout *l, double params);

/* Seconds per optimizer step one GPU spends summing the gradients of its params parameters
 * over micro micro-batches under path 1: 0 unless t->grad_accum_unfused, or for micro <= 1.
 * The estimate charges it for the parameters outside the layers' recipes. */
double grad_accum_step_s(const system_spec *sys, const training_spec *t, double params,
                         int micro);

/* Megatron-LM's local DDP of 2022 (the code of Korthikanti et al. 2022, 9aad9203aa: --DDP-impl
 * local and contiguous gradient buffers, both its defaults, arguments.py lines 730-737): every
 * step, after the last backward and before the optimizer, allreduce_gradients divides each
 * fp32 gradient buffer by the data-parallel size in place and then all-reduces it
 * (megatron/model/distributed.py lines 195-202, `buffer_.data /= world_size`; training.py lines
 * 446-449), whatever that size, 1 included: read and write 4 bytes per parameter of the stage.
 * Seconds of that pass for `params` parameters, 0 unless t->grad_buffer_divide. (Megatron-Core
 * today scales only when the factor is not 1, distributed_data_parallel.py at d98e8a6 lines
 * 271-278, param_and_grad_buffer.py 666-667: not priced.) */
double grad_buffer_divide_s(const system_spec *sys, const training_spec *t, double params);

#endif
