/*
 * precision.h — low-precision training as a layout dimension (issue 16): which GEMMs run in
 * FP8 / MXFP8 / NVFP4, how fast they run, which quantize kernels each scaling recipe adds, and
 * what each recipe keeps in memory. One table row per (precision, recipe); the layer recipe
 * (layer_recipe.c) and the memory model (memory.c) read it, the planner emits and checks it.
 *
 * What runs in low precision (the same for every recipe here): the decoder layers' Linears
 * (QKV / MLA projections, attention output, MLP and expert up/down, shared experts) in all three
 * GEMMs (fprop, dgrad, wgrad). What stays bf16: the embedding, the output layer (lm head), the
 * MoE router, norms and the attention core. Sources: Transformer Engine docs, "Using FP8 with
 * Transformer Engine" (te.Linear / LayerNormLinear under fp8_autocast; embedding and head are
 * not TE modules in Megatron-LM); DeepSeek-V3 technical report (arXiv 2412.19437) Sec. 3.3.1:
 * "the embedding module, the output head, MoE gating modules, normalization operators, and
 * attention operators" keep their original precision; torchao float8 README / torchtitan
 * docs/float8.md: convert_to_float8_training converts nn.Linear, torchtitan filters the
 * "output" (lm head) module by default. Megatron's --first-last-layers-bf16 (off by default)
 * and the NVFP4 paper's BF16 tail layers (arXiv 2509.25149, Sec. 4) are not modelled: every
 * decoder layer is low precision.
 *
 * MFU stays defined against the dense bf16 peak (as Megatron and NeMo report it).
 */
#ifndef PLAN_PRECISION_H
#define PLAN_PRECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "status.h"
#include "system.h"

/* The rules of one precision and recipe, per Linear. Byte counts are HBM bytes per element. */
typedef struct {
    layout_precision precision;
    layout_fp8_recipe recipe;      /* resolved (never FP8_RECIPE_DEFAULT for fp8) */
    int framework;                 /* the framework whose implementation this row describes
                                      (layout_framework), -1: any */
    const char *name;              /* "fp8-delayed", "mxfp8", ... */
    /* GEMM: achieved fraction of the low-precision peak over the bf16 GEMM's achieved fraction
     * of the bf16 peak at the same shapes (bench/fp8_gemm.py, bench/results/fp8_h100). */
    double gemm_efficiency_ratio;
    double operand_bytes;          /* one element of a quantized operand, scales included */
    /* Quantize / amax / transpose kernels, bytes moved per element of the operand: the input
     * activation X (m x k) forward and backward, the weight W (n x k) forward and backward, the
     * output gradient dY (m x n) backward. */
    double x_fwd_bytes, x_bwd_bytes, w_fwd_bytes, w_bwd_bytes, dy_bwd_bytes;
    /* Memory: bytes per element of a Linear's input saved for the backward (2: kept in bf16),
     * persistent low-precision weight copies per Linear parameter (TE keeps the bf16 weight AND
     * these), the FSDP all-gather bytes per Linear parameter (2: bf16; 1: float8 all-gather),
     * and the amax history per Linear (delayed scaling). */
    double saved_input_bytes;
    double weight_copy_bytes;
    double gather_bytes;
    double amax_history_bytes;
} precision_rules;

const char *precision_name(layout_precision p);
int precision_parse(const char *s, layout_precision *out);
const char *precision_fp8_recipe_name(layout_fp8_recipe r);
int precision_parse_fp8_recipe(const char *s, layout_fp8_recipe *out);
/* The recipe l runs: fp8's default by framework (Megatron/TE delayed, torchao tensorwise). */
layout_fp8_recipe precision_fp8_recipe(const layout *l);
/* int-returning form for the layout codec (resolved value of the fp8_recipe field). */
int precision_fp8_recipe_resolved(const layout *l);

/* True when l's Linears run in a low-precision format. */
bool precision_is_low(const layout *l);
/* The rules of l's precision and recipe (bf16: everything as before, ratio 1, 2-byte). */
void precision_rules_of(const layout *l, precision_rules *out);
/* The dense peak the low-precision GEMMs run against: peak_fp8_flops_per_s (fp8, mxfp8),
 * peak_fp4_flops_per_s (nvfp4), peak_bf16_flops_per_s (bf16). */
double precision_peak_flops(const system_spec *sys, const layout *l);

/* Can this system and framework run l's precision? MXFP8 and NVFP4 need block-scaled tensor
 * cores (a preset with peak_fp4_flops_per_s: Blackwell, CDNA4), FP8 a peak_fp8_flops_per_s; torchao has no
 * delayed scaling any more and NVFP4 training is Transformer Engine's (Megatron) only. */
cm_status precision_check(const system_spec *sys, const layout *l, char *err, size_t errlen);

/* Name of l's precision as the short name and the report show it ("fp8-delayed"). */
const char *precision_label(const layout *l);

#endif
