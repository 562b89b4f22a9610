/*
 * grad_accum.h — weight gradients summed across micro-batches by a separate kernel, where the
 * framework does not fuse the sum into the weight-gradient GEMM.
 *
 * Megatron-LM since 2022 accumulates each weight gradient inside its wgrad GEMM (--gradient-
 * accumulation-fusion, fused_weight_gradient_dense: commit 83b1e42f30 of 2022-02-13 for
 * fp32/bf16 main grads, 07916bf245 of 2022-09-27 for fp16; beta = 1 into main_grad), which
 * costs nothing beyond the GEMM and is what the rest of the model assumes. The 2021 Megatron-LM
 * of the SC'21 runs (commit 6985e58, examples/sc21: --fp16, --DDP-impl local or torch, no
 * --use-contiguous-buffers-in-ddp) did not: megatron/model/distributed.py there keeps the
 * gradients in param.grad (allreduce_gradients: "param.main_grad = param.grad", buckets of
 * param.grad.data), so PyTorch's AccumulateGrad sums every micro-batch's new fp16 gradient into
 * it in place (torch/csrc/autograd/functions/accumulate_grad.h: variable_grad += new_grad):
 * read 2 + read 2 + write 2 = 6 bytes per parameter for each micro-batch after the first,
 * a contiguous vectorized add at the streaming rate (compute_stream_s).
 *
 * training_spec.grad_accum_unfused turns it on (tests/golden.c for the 2021 rows); off, the
 * fused path, adds nothing.
 */
#ifndef PLAN_GRAD_ACCUM_H
#define PLAN_GRAD_ACCUM_H

#include "layout.h"
#include "system.h"

/* Bytes per parameter per micro-batch after the first (the unfused 16-bit sum above). */
#define GRAD_ACCUM_UNFUSED_BYTES_PER_PARAM 6.0

/* Seconds per optimizer step one GPU spends summing the gradients of its params parameters
 * over micro micro-batches: 0 unless t->grad_accum_unfused, or for micro <= 1. */
double grad_accum_step_s(const system_spec *sys, const training_spec *t, double params,
                         int micro);

#endif
