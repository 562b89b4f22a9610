/*
 * memory_params.h — memory.c's own use of the parameter counts in memory_params.c (the public
 * ones, memory_layer_params, memory_stage_params and their low-precision forms, are in
 * memory.h).
 */
#ifndef PLAN_MEMORY_PARAMS_H
#define PLAN_MEMORY_PARAMS_H

#include "memory.h"

/* The MoE layers among the n from global layer start on. */
int memory_moe_layers_from(const model_spec *m, int start, int n);
/* One layer's parameters on one GPU, m's counts given. */
double memory_layer_params_counted(const model_spec *m, const memory_model_counts *c,
                                   const layout *l, int moe_layer);
/* Stage `stage`'s parameters, its n layers (moe of them MoE) given. */
void memory_stage_params_counted(const model_spec *m, const memory_model_counts *c,
                                 const layout *l, int stage, int n, int moe,
                                 double *dense_params, double *expert_params);
/* Linear (GEMM) parameters of one layer on one GPU (norms and router excluded). */
double memory_layer_linear_params(const model_spec *m, const layout *l, int moe_layer);
/* The low-precision layers (those precision_layer_bf16 leaves) among the n from global layer
 * start on, of a low-precision l: [*lo, *hi), the dense ones [*lo, *split) before the MoE ones
 * [*split, *hi) (memory_layer_is_moe). Empty: *lo == *hi. */
void memory_lp_layers_from(const model_spec *m, const layout *l, int start, int n, int *lo,
                           int *split, int *hi);

#endif
