/*
 * memory_precision.h — what a layout's precision adds to one pipeline stage's memory
 * (memory.c's stage memory calls it): Transformer Engine's low-precision weight copies, the
 * delayed-scaling amax history, torchao's FP8 all-gather, and --fp8-param-gather's smaller
 * weights. bf16 layouts add nothing.
 */
#ifndef PLAN_MEMORY_PRECISION_H
#define PLAN_MEMORY_PRECISION_H

#include "layout.h"
#include "memory.h"
#include "model.h"

/* Adds to r's weights_bytes and comm_buffer_bytes what l's precision adds to the stage of
 * n_layers layers from layer start (layout_stage_start; moe_layers of them MoE). layer_params: one dense layer's and one MoE
 * layer's memory_layer_params (the MoE one read only where moe_layers > 0), which the caller
 * holds already (memory.c's layer figures); lp: the stage's memory_stage_lp_params (dense,
 * expert) where the caller holds them, or NULL. */
void memory_precision_add(const model_spec *m, const layout *l, int stage, int start,
                          int n_layers, int moe_layers, const double layer_params[2], const double *lp,
                          memory_breakdown *r);

#endif
