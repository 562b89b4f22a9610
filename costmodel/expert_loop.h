/*
 * expert_loop.h — torchtitan's per-expert Python loop (GroupedExperts with use_grouped_mm=False,
 * torchtitan/models/moe/moe.py _run_experts_for_loop): what it costs beyond the grouped GEMMs'
 * path. Issue 20's "experts looped in Python" rows (bench/realruns/parallel_run.py --experts
 * loop, which runs the same loop) were priced as grouped GEMMs and came out 67-78% fast: the loop
 * issues every expert's GEMMs and SwiGLU kernels on its own (a launch each, small GEMMs), and
 * autograd's backward of `w1[expert_idx]` (SelectBackward0: zeros of the whole stacked weight
 * and a copy into its slice, tools/autograd/derivatives.yaml select_backward) produces one
 * full-size gradient per expert that the engine adds into the weight's accumulated gradient
 * (torch/csrc/autograd/input_buffer.cpp accumulate: add_ in place): per weight tensor and
 * layer, `local` zero fills and local - 1 in-place adds of the whole [local, h, f] bf16 weight.
 * expert_loop.c lists those kernels with their bytes and the measurement they agree with.
 */
#ifndef PLAN_EXPERT_LOOP_H
#define PLAN_EXPERT_LOOP_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"
#include "system.h"

/* Does the layer run torchtitan's per-expert loop: --moe-expert-loop on torchtitan's eager MoE
 * code (titan_moe_applies). */
bool expert_loop_applies(const training_spec *t, const layout *l);

/* The loop's own kernels for `local` experts on this GPU receiving `received` routed rows in
 * all: the forward's torch.cat of the experts' outputs, the backward's SelectBackward0 zero
 * fills, slice copies and gradient accumulation per weight tensor, and torch.split's backward
 * (one cat). out->eager and out->alone as elementwise_layer sets them. */
void expert_loop_kernels(const model_spec *m, const layout *l, int local, double received,
                         elementwise_list *out);

/* Host time per launch of the loop's expert GEMMs beyond the host's per-launch cost, forward
 * (*fwd_s) and backward (*bwd_s): cuBLAS chooses each GEMM's algorithm by a heuristic the first
 * time the process runs that shape and caches it per shape, and every expert's GEMMs take that
 * expert's row count as a dimension, so a row count new to the process makes its GEMMs new
 * shapes (expert_loop.c has the counts and the measurement). Zeros where the system has no
 * host.gemm_new_shape_s. */
void expert_loop_new_shape_host(const model_spec *m, const system_spec *sys, double new_share,
                                double *fwd_s, double *bwd_s);

#endif
