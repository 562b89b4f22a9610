/*
 * impl.h — which implementation runs the model and the optimizer (issue 14): the layer code
 * (Hugging Face transformers eager modules, a PyTorch-native torchtitan-style model, Transformer
 * Engine under Megatron), whether torch.compile fuses it, and which AdamW kernel path steps it
 * (torch's fused, foreach and for-loop implementations; Megatron's fused Adam). The layout holds
 * them (layout.h, layout_codec.c); 0 means "the framework's default", which impl_resolve() turns
 * into what the framework actually runs: FSDP2 -> Hugging Face + torch's default AdamW, which
 * on CUDA is the foreach path (torch/optim/optimizer.py _default_to_fused_or_foreach: fused is
 * never the default, foreach is when every tensor is on CUDA and not differentiable); Megatron
 * -> Transformer Engine + fused Adam (megatron/core/optimizer/__init__.py uses
 * apex/TE FusedAdam).
 */
#ifndef PLAN_IMPL_H
#define PLAN_IMPL_H

#include <stdbool.h>

typedef enum { IMPL_DEFAULT = 0, IMPL_HF = 1, IMPL_NATIVE = 2, IMPL_TE = 3 } layout_impl;
typedef enum {
    OPTIMIZER_IMPL_DEFAULT = 0,
    OPTIMIZER_IMPL_FUSED = 1,
    OPTIMIZER_IMPL_FOREACH = 2,
    OPTIMIZER_IMPL_FOR_LOOP = 3,
} layout_optimizer_impl;

const char *impl_name(layout_impl i);                 /* "default", "hf", "native", "te" */
const char *optimizer_impl_name(layout_optimizer_impl o); /* "default", "fused", ... */
int impl_parse(const char *s, layout_impl *out);       /* 1 on success */
int optimizer_impl_parse(const char *s, layout_optimizer_impl *out);

/*
 * AdamW (decoupled weight decay, fp32 state) per parameter of the step, from the kernels each
 * path launches (torch 2.11 torch/optim/adam.py, which AdamW subclasses):
 *   fused (_fused_adam -> torch._fused_adamw_, aten/src/ATen/native/cuda/fused_adamw_impl.cu):
 *     one multi-tensor kernel reads param, grad, exp_avg, exp_avg_sq and writes param,
 *     exp_avg, exp_avg_sq: 7 x 4 = 28 bytes; no temporary.
 *   foreach (_multi_tensor_adam): _foreach_mul_(params, 1 - lr*wd) 8; _foreach_lerp_(exp_avgs,
 *     grads, 1 - beta1) 12; _foreach_mul_(exp_avg_sqs, beta2) 8; _foreach_addcmul_(exp_avg_sqs,
 *     grads, grads, 1 - beta2) 12; exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs) 8 (a new list:
 *     4 bytes per parameter held until the step ends); _foreach_div_(exp_avg_sq_sqrt,
 *     bias_correction2_sqrt) 8; _foreach_add_(exp_avg_sq_sqrt, eps) 8; _foreach_addcdiv_(params,
 *     exp_avgs, exp_avg_sq_sqrt, step_size) 16: 80 bytes, 8 kernels per tensor chunk.
 *   for-loop (_single_tensor_adam): the same arithmetic one tensor at a time (param.mul_,
 *     exp_avg.lerp_, exp_avg_sq.mul_().addcmul_, denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps),
 *     param.addcdiv_): the same 80 bytes, a temporary of the largest tensor only, 8 launches
 *     per parameter tensor.
 * Gradient clipping (torch.nn.utils.clip_grad_norm_, foreach by default on CUDA):
 * _foreach_norm(grads) reads 4 bytes, _foreach_mul_(grads, clip_coef) reads and writes 8: 12
 * bytes per parameter, and one device-to-host sync (the clip coefficient's isfinite check is on
 * device; the trainer's loss.item() syncs once per step).
 */
double optimizer_impl_bytes_per_param(layout_optimizer_impl o);
/* Bytes per parameter the optimizer step allocates on top of params, grads and states while it
 * runs (foreach: the sqrt list; fused and for-loop: none that scales with the model). */
double optimizer_impl_temp_bytes_per_param(layout_optimizer_impl o);
/* Kernel launches per parameter tensor of the step (for-loop: one tensor per launch; fused and
 * foreach launch per chunk of tensors, counted per tensor group by the caller as 1). */
int optimizer_impl_launches_per_tensor(layout_optimizer_impl o);

#endif
