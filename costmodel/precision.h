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
 * "output" (lm head) module by default.
 *
 * BF16 first/last layers: Megatron's --first-last-layers-bf16 with --num-layers-at-start-in-bf16
 * and --num-layers-at-end-in-bf16 (TransformerConfig first_last_layers_bf16,
 * num_layers_at_start_in_bf16, num_layers_at_end_in_bf16; megatron/core/fp8_utils.py
 * is_first_last_bf16_layer: global layer index < start, or >= num_layers - end; Megatron-LM
 * d98e8a6) run those decoder layers entirely in bf16: priced at bf16 rates with no quantize
 * kernels, no FP8 weight copies and bf16 saved inputs. Megatron refuses them with delayed
 * scaling and allows at most num_layers / pp of each (transformer_config.py __post_init__).
 * The NVFP4 recipe keeps such layers in BF16 too (arXiv 2509.25149, Sec. 4).
 *
 * FP8 parameters: Megatron's --fp8-param-gather (arguments.py, "Keep the compute param in fp8
 * (do not use any other intermediate dtype) and perform the param all-gather in fp8"; only with
 * the distributed optimizer or an FSDP) builds the Linears' weights as TE quantized tensors
 * (TransformerConfig.fp8_param: "the parameters affected are primarily the weights of GEMMs";
 * biases and norms stay bf16): the bf16 weight is gone, the fp32 master stays in the
 * optimizer (the distributed optimizer's main params, 12 bytes with Adam as before), the
 * parameter buffer is uint8 (megatron/core/distributed/param_and_grad_buffer.py
 * group_params_for_buffers: "torch.uint8 for FP8/NVFP4 parameters"), so the optimizer's
 * all-gather and Megatron-FSDP's unit gathers move operand_bytes per Linear parameter (MXFP8:
 * bf16, precision_param_gather_bytes). TE
 * keeps the other layout its GEMMs need (the transpose on Hopper, MXFP8's columnwise copy):
 * weight_copy_bytes - operand_bytes. NVFP4's counterpart is --fp4-param-gather.
 *
 * MFU stays defined against the dense bf16 peak (as Megatron and NeMo report it).
 */
#ifndef PLAN_PRECISION_H
#define PLAN_PRECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "model.h"
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

/* Is global decoder layer `layer` one of Megatron's bf16 first/last layers (always false in a
 * bf16 plan: nothing to keep)? */
bool precision_layer_bf16(const model_spec *m, const layout *l, int layer);
/* l with its Linears in bf16: the layout a bf16 first/last layer is priced with. */
layout precision_bf16_layout(const layout *l);
/* Does l keep its Linears' weights as low-precision parameters (--fp8-param-gather /
 * --fp4-param-gather)? */
bool precision_param_gather(const layout *l);
/* Bytes per element of a Linear's weight as a stored parameter: 2 (bf16), or operand_bytes
 * with --fp8-param-gather. */
double precision_param_bytes(const layout *l);
/* ... and on the parameter all-gather: operand_bytes, but 2 for MXFP8, which Megatron gathers
 * in bf16 through the gradient buffer and quantizes after (param_and_grad_buffer.py: "For
 * MXFP8 param: Create a shared buffer for param AG and grad RS", viewed as bfloat16;
 * _post_param_sync copies the gathered values into TE's quantized storage). */
double precision_param_gather_bytes(const layout *l);
/* The rules that need the model: bf16 first/last layer counts (Megatron: not with delayed
 * scaling, at most layers / pp each). */
cm_status precision_check_model(const model_spec *m, const layout *l, char *err, size_t errlen);

/* Transformer Engine's NVFP4 Linears under Megatron's sequence parallelism (tp > 1): the
 * fraction of a TP-gathered operand's rows TE quantizes (1/tp: the column-parallel Linear's
 * input and the row-parallel Linear's output gradient are quantized on the local sequence shard,
 * then gathered in NVFP4), else 1; and the bytes per gathered element of the fix-up kernel that
 * reorders a gathered columnwise (transposed) NVFP4 copy, data and scales read and written
 * (2 x (0.5 + 1/16); 0 where it does not run). Sources in precision.c ("NVFP4 under SP"). */
double precision_sp_shard_frac(const layout *l);
double precision_sp_gather_fixup_bytes(const layout *l);

/* The achieved fraction of the low-precision peak over the bf16 GEMM's achieved fraction of
 * the bf16 peak for l's recipe on sys's GPU: a calibration profile's fitted FP8 ratio
 * (sys->fp8_gemm_ratio, plan fit) for fp8 (sys->fp8_blockwise_gemm_ratio for the blockwise
 * recipe where the profile has it), else the measured Hopper ratios of precision_rules on
 * H100/H200/H800/H20, published MAMF ratios on Blackwell (times Transformer Engine's measured
 * MXFP8 and NVFP4 kernel rates over the per-tensor FP8 one), 1 elsewhere (precision.c); and a
 * line saying where it comes from. */
double precision_gemm_ratio(const system_spec *sys, const layout *l);
/* Is sys's GPU a Blackwell one (block-scaled tensor cores reading FP8 in any layout)? */
bool precision_blackwell(const system_spec *sys);
/* precision_rules_of as the kernels run on sys's GPU: Transformer Engine's per-tensor FP8 on
 * Blackwell writes no transpose (precision.c header). */
void precision_rules_on(const system_spec *sys, const layout *l, precision_rules *out);
/* Whether l's GEMMs take sys's ratios by shape (a profile's fp8_gemm_shapes, fp8_shape.h: fp8
 * only), which of them (*blockwise) and the factor on them (*scale: a per-tensor recipe's ratio
 * over per-tensor scaling's, as precision_gemm_ratio scales the single ratio; 1 blockwise). */
bool precision_gemm_shape_ratios(const system_spec *sys, const layout *l, bool *blockwise,
                                 double *scale);
const char *precision_gemm_ratio_source(const system_spec *sys);

/* The scale swizzles of Transformer Engine before 2.12 (system_spec.scale_swizzle_*; 0 where
 * the system has none or the format has no block scales): seconds of the kernel that swizzles
 * the scales of one GEMM operand of `elements` elements (all of a grouped GEMM's experts: one
 * multi-tensor kernel), precision.c "Scale swizzles". */
double precision_scale_swizzle_s(const system_spec *sys, const layout *l, double elements);

/* Bytes per element of the forward's sequence-parallel all-gather into a Linear: Transformer
 * Engine (Megatron) quantizes the local input first and gathers it in its low-precision format
 * (rowwise data and scales: operand_bytes); 0 where the gather stays as it is (bf16 plans, the
 * other frameworks: async_tp_gather_elem_bytes). */
double precision_tp_gather_bytes(const layout *l);

/* Bytes per element of the backward's sequence-parallel all-gather of the row-parallel Linear's
 * output gradient when Transformer Engine gathers it through NCCL (Megatron without
 * userbuffers): quantized first, rowwise for dgrad and columnwise for wgrad (linear.py
 * set_usage(rowwise=True, columnwise=True), base.py grad_output_preprocess gathers with the
 * quantizer, TE 366798e). Per-tensor FP8 gathers its rowwise copy only (_all_gather_fp8):
 * operand_bytes; MXFP8 and NVFP4 both copies (_all_gather_mxfp8 / _all_gather_nvfp4):
 * 2 x operand_bytes. 0 where the gather stays bf16 (bf16 plans, FP8 blockwise: not priced,
 * the other frameworks). */
double precision_tp_grad_gather_bytes(const layout *l);

/* Name of l's precision as the short name and the report show it ("fp8-delayed"). */
const char *precision_label(const layout *l);

#endif
