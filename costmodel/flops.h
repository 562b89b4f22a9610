/*
 * flops.h — FLOP counts: per-layer forward work from the model's matrix shapes, model FLOPs
 * per step (no recompute) and hardware FLOPs (with recompute), and the two published
 * definitions the golden rows use.
 *
 * Counting follows Narayanan et al. 2021 (SC'21) Appendix "Floating-point operations" and
 * Megatron-LM's num_floating_point_operations: a GEMM of an m x k by k x n matrix costs 2mnk;
 * backward costs twice the forward (data and weight gradients); attention scores and
 * attention-over-values cost 2*s*s*d per head each; with a causal mask the masked half is not
 * computed by fused kernels, so model FLOPs count half of it (Megatron-LM's causal halving).
 */
#ifndef PLAN_FLOPS_H
#define PLAN_FLOPS_H

#include "layout.h"
#include "model.h"

/* Matrix (GEMM) parameters a token touches in one layer's attention / MLP (active experts). */
double flops_attention_matrix_params(const model_spec *m);
double flops_mlp_matrix_params(const model_spec *m, int moe_layer);

/* Forward FLOPs of the attention core (scores + over-values) of layer `layer` for `tokens`
 * tokens in sequences of length seq; causal halves it, and a sliding-window layer counts only
 * the keys inside its window (causal only: without the mask's skipping the whole s x s
 * matrix is computed). */
double flops_attention_core_forward_layer(const model_spec *m, int layer, double tokens,
                                          double seq, bool causal);
/* The same averaged over the model's layers (equal to any layer's when none has a sliding
 * window), so layers x this is the model's attention core. */
double flops_attention_core_forward(const model_spec *m, double tokens, double seq, bool causal);

/* Forward FLOPs of one layer (GEMMs + the layers' mean attention core) for `tokens` tokens. */
double flops_layer_forward(const model_spec *m, int moe_layer, double tokens, double seq,
                           bool causal);
/* Forward FLOPs of the output layer (logits) for `tokens` tokens. */
double flops_logits_forward(const model_spec *m, double tokens);

/* Model FLOPs of one optimizer step: 3 x forward of all layers and the logits. */
double flops_model_per_step(const model_spec *m, const training_spec *t);
/* Hardware FLOPs: model FLOPs plus the recomputed forward work of this layout. */
double flops_hardware_per_step(const model_spec *m, const training_spec *t, const layout *l);

/* Narayanan et al. 2021, eq. (3): 96 B s l h^2 (1 + s/6h + V/16lh); counts the recompute
 * forward (full recompute) — hardware FLOPs for those runs. */
double flops_narayanan_eq3(double batch, double seq, double layers, double hidden, double vocab);
/* Korthikanti et al. 2022, Sec. 6: model FLOPs 72 B L s h^2 (1 + s/6h + V/12hL). */
double flops_korthikanti_model(double batch, double seq, double layers, double hidden,
                               double vocab);

#endif
