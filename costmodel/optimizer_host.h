/*
 * optimizer_host.h — the host's time to issue torch's clip_grad_norm_ and foreach AdamW over a
 * stage's parameters (FSDP2 / torchtitan layouts), a floor under the optimizer's GPU time.
 *
 * Why: on FSDP2 every parameter is a DTensor; clip_grad_norm_ and the foreach optimizer unwrap
 * each one on the host, and their multi_tensor_apply kernels are launched in chunks. In a
 * host-bound step (small models) nothing hides that host time: measured on one H100
 * (bench/realruns/gap_profile.py, bench/results/smallrows_2026-11-27/call1, unsynced steps)
 * SmolLM2-360M's 290 parameter tensors took the host 7.06 ms in clip_grad_norm_ and 12.27 ms
 * in AdamW.step (foreach) while their kernels ran 1.6 and 10.6 ms: the GPU waited for the host
 * 10.2 and 5.3 ms there (trace_summary.py). Priced as
 *   tensors x (host.clip_tensor_s + host.adamw_foreach_tensor_s)
 *   + launches x host.multi_tensor_launch_s,
 * launches = ceil(parameters / 20,971,520) per foreach op (multi_tensor_apply: a block per
 * 65,536 elements, a launch per 320 blocks), 2 ops for the clip (_foreach_norm, _foreach_mul_)
 * and 8 for AdamW (the launch counts of both traces: 46 and 144 for SmolLM2-360M's 362 M
 * parameters, 310 and 1,208 for Mixtral-8x7B cut to 2 layers, 3.16 G); the constants' fit:
 * bench/results/smallrows_2026-11-27/optimizer_host_fit.py. The fused AdamW's host time is
 * not measured: only the clip's part is priced for it. 0 where the system gives no constants.
 * The optimizer then takes max(GPU time, host time): where the backward leaves the host ahead
 * of the GPU (large models) the GPU time is the larger anyway.
 */
#ifndef PLAN_OPTIMIZER_HOST_H
#define PLAN_OPTIMIZER_HOST_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* Parameter tensors stage `stage` holds (as the model code holds them, host_dispatch.c). */
double optimizer_host_tensors(const model_spec *m, const layout *l, int stage);

/* Host time of the clip and optimizer step over `local_params` parameters of stage `stage`. */
double optimizer_host_s(const system_spec *sys, const model_spec *m, const layout *l, int stage,
                        double local_params);

#endif
