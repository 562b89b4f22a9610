/*
 * dtensor_step_host.h — the host work of a DTensor tensor-parallel step (torchtitan with TP > 1)
 * outside its decoder layers (issues 19 and 14): FSDP2's root pre-forward with the embedding
 * under RowwiseParallel, the loss under loss_parallel, the backward's tail (FSDP2's root
 * post-backward with its chunk_cat, the embedding's backward) and the fused AdamW step over
 * DTensor parameters. host_dispatch.c prices the layers and the head's counted dispatches; these
 * are the rest, measured on real TP steps (bench/tphost_outer.py, bench/results/
 * tpouter_2026-11-27), each as a count times a per-launch, per-dispatch or per-tensor host time
 * of the system preset.
 */
#ifndef PLAN_DTENSOR_STEP_HOST_H
#define PLAN_DTENSOR_STEP_HOST_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* Host time of one micro-batch's forward before its first decoder layer: the embedding's 4
 * DTensor dispatches at dt_fwd_s and FSDP2's root pre-forward in plain launches at plain_s
 * (host.eager_launch_s). No GPU work of the micro-batch is queued before it. */
double dtensor_step_host_pre_s(double plain_s, double dt_fwd_s);

/* Host time of the loss under loss_parallel beyond the head's counted dispatches, in plain
 * launches at plain_s; it runs while the output layer's GEMM does. */
double dtensor_step_host_loss_s(double plain_s);

/* Host time of one micro-batch's backward after the first decoder layer's input gradient (the
 * backward's last host work: the GPU has caught up with a host-paced backward by then):
 * dispatches at dt_bwd_s, and under FSDP2 the root unit's chunk_cat over its gradients
 * (embedding, untied output layer, final norm; 1/tp of each per rank). */
double dtensor_step_host_tail_s(const system_spec *sys, const model_spec *m, const layout *l,
                                double dt_bwd_s);

/* Host time of the fused / foreach AdamW step over this rank's DTensor parameters (one
 * dispatch over lists of every parameter tensor: host.eager_dtensor_optim_tensor_s per tensor),
 * the tensors of pipeline stage `stage` (optimizer_host_tensors); 0 where dtensor_tp_applies() is false
 * or the preset has no figure. */
double dtensor_step_host_optimizer_s(const system_spec *sys, const model_spec *m,
                                     const layout *l, int stage);

#endif
