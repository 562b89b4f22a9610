/*
 * recipe_builder.h — private to the layer recipe (layer_recipe.c, recipe_builder.c): the builder
 * that appends ops and the backend's work items to a recipe, priced as it goes (GEMMs by
 * compute.h, Linears with their low-precision quantize kernels, memory-bound lumps, collectives).
 * layer_recipe.c says what a layer holds; this says how one entry is added.
 */
#ifndef PLAN_RECIPE_BUILDER_H
#define PLAN_RECIPE_BUILDER_H

#include <stdbool.h>

#include "collective.h"
#include "elementwise.h"
#include "layer_recipe.h"
#include "fsdp_copies.h"
#include "grouped_rate.h"
#include "precision.h"

typedef struct {
    const system_spec *sys;
    recipe *r;
    recipe_items *items; /* NULL: ops only (the estimate) */
    /* low precision (precision.h): the Linears' GEMMs in the layout's format, with their
     * quantize kernels; keep_bf16 while adding a Linear the recipes keep in bf16 (router) */
    bool lp;
    bool keep_bf16;
    double lp_peak_flops;
    double lp_ratio; /* precision_gemm_ratio: the GPU's low-precision GEMM efficiency ratio */
    bool lp_shape;   /* ... or by shape (precision_gemm_shape_ratios): which, and the factor */
    bool lp_shape_blockwise;
    double lp_shape_scale;
    precision_rules pr;
    double quant_fwd_bytes, quant_bwd_bytes; /* the layer's quantize kernels (quantize_ops) */
    double swizzle_fwd_s, swizzle_bwd_s;     /* their GEMMs' scale swizzles (precision.h) */
    double quant_split_fwd_s, quant_split_bwd_s; /* TE's per-expert quantize launches
                                                    (mcore_expert_gemm.h) */
    const layout *l;                         /* the layout rb_precision read */
    bool quant_eager; /* PyTorch's casts (torchao under Inductor): at the eager elementwise rate */
    /* rows of the forward input cast of the Linear being added, over its GEMM rows: 1, or 1/tp
     * where torchtitan's Float8 TP casts the sequence shard before the SP all-gather
     * (layer_recipe.c, recipe_builder.c rb_float8_tp_shard_cast) */
    double x_fwd_cast_frac;
    /* the Linear's input reaches it already in float8 (torchtitan's Float8 TP: the prepare
     * hooks cast it), so its backward transposes the saved float8 input instead of casting the
     * bf16 one again (rb_float8_tp_shard_cast's comment) */
    bool x_saved_fp8;
    /* the Linear being added takes a TP-gathered input (column parallel) or a TP-gathered
     * output gradient (row parallel) under SP: TE's NVFP4 quantizes those on the sequence shard
     * and reorders their gathered columnwise copy (precision_sp_shard_frac, _gather_fixup_bytes) */
    bool x_sp_gathered, dy_sp_gathered;
    recipe_block block; /* the block ops added now belong to (rb_op_add stamps it) */
    /* the MTP modules' transformer layer, recipe_layer's for the head's layout, already built
     * (the search's layer-cost cache holds it: recipe_head_mtp), or NULL: rb_mtp_modules
     * builds it */
    const recipe *mtp_layer;
} builder;

void rb_precision(builder *b, const layout *l);
/* The measured rate of torchao's compiled float8 casts as a fraction of the HBM peak
 * (gpu.torchao_cast_efficiency_rowwise / _tensorwise), 0 where not measured or not that case. */
double rb_torchao_compiled_cast_efficiency(const system_spec *sys, const layout *l);
/* 1/tp where l's Linears that enter a TP block take a float8 input cast on the sequence shard
 * (torchtitan, float8 tensorwise, TP with SP), else 1 */
double rb_float8_tp_shard_cast(const layout *l);
/* The forward input cast's fraction of the GEMM rows for a column-parallel Linear under SP:
 * rb_float8_tp_shard_cast's, or TE NVFP4's shard (precision_sp_shard_frac) */
double rb_sp_input_cast_frac(const layout *l);
double rb_gemm_s(const builder *b, double m, double n, double k);
double rb_gemm_fwd_bwd_s(const builder *b, double m, double n, double k);
void rb_gemm_parts(const builder *b, double m, double n, double k, double *math_s,
                   double *in_bytes);
int rb_op_add(builder *b, const char *name, recipe_kind kind, recipe_phase phase,
                  recipe_stream stream, recipe_overlap overlap, double fwd_s, double bwd_s);
recipe_item *rb_item_add(builder *b, int op, recipe_phase phase, recipe_item_kind kind,
                             const char *name);
void rb_gemm_item(builder *b, int op, recipe_phase phase, const char *name,
                      recipe_gemm_form form, double m, double n, double k, int batch, bool weight,
                      double pred_s);
void rb_stream_item(builder *b, int op, recipe_phase phase, const char *name, double bytes,
                        const ew_access *a, double pred_s);
void rb_lump_item(builder *b, int op, recipe_phase phase, const char *name, double bytes,
                      double pred_s);
void rb_coll_item(builder *b, int op, recipe_phase phase, const char *name, collective_op c,
                      double bytes, recipe_group g, double pred_s);
void rb_quantize_ops(builder *b, double tokens, double out, double in, double copies);
void rb_quantize_flush(builder *b);
/* After the experts' rb_quantize_ops: the time of their quantize kernels' per-expert launches
 * (mcore_expert_gemm.h), from the bytes those calls added (fwd_bytes, bwd_bytes). */
void rb_expert_quantize_split(builder *b, int local, double fwd_bytes, double bwd_bytes);
void rb_linear(builder *b, const char *name, double tokens, double out, double in);
/* rb_linear of a GEMM that stands for `parts` Linears of out / parts out-features each (the
 * alignment of each is the one cuBLAS sees) */
void rb_linear_parts(builder *b, const char *name, double tokens, double out, double in,
                     int parts);
void rb_grad_accum_op(builder *b, const training_spec *t, const layout *l, double params);
/* FSDP2's compute-stream copies of a unit (recipe_fsdp.c): ops, and on one GPU their items. */
void rb_fsdp_copies(builder *b, const training_spec *t, const layout *l, const fsdp_copies *fc);
void rb_elementwise_ops(builder *b, const elementwise_list *e, const elementwise_kernel *k,
                            int n, recipe_phase phase);
/* The TP/SP collectives entering (SP all-gather) and leaving (SP reduce-scatter, or the
 * all-reduce without SP) a tensor-parallel block. */
typedef struct {
    builder *b;
    const layout *l;
    double act_bytes; /* tokens x hidden in bf16: the reduce-scatter (all-reduce) */
    layout_group g;
    double one_s;     /* enter + leave of one block, one pass */
    double ag_bytes;  /* the SP all-gather: fp8 under torchtitan's Float8 TP (async_tp.h) */
    /* the forward's SP all-gather into a Transformer Engine Linear in low precision: the input
     * quantized first and gathered in its format (precision_tp_gather_bytes; 0: ag_bytes), for
     * the blocks whose first Linear gathers (lp_block) */
    double ag_lp_bytes;
    bool lp_block;
    bool dgrad_allreduce_sync; /* training_spec.tp_dgrad_allreduce_sync */
} rb_tp_ctx;

/* A TP block's exposed time with its collectives overlapped (recipe_tp.c). */
typedef struct {
    double fwd_s, bwd_s;
    double leave_fwd_s; /* the forward's reduce-scatter part of fwd_s */
    /* Megatron's NCCL path (recipe_tp.c tp_nccl_block): the backward's three collectives, their
     * bytes and what each adds to bwd_s (the output gradient's all-gather whole, the input's
     * all-gather and the dgrad reduce-scatter what outlasts the GEMM beside them) */
    bool nccl_bwd;
    double dy_bytes, dy_s, x_bytes, x_s, rs_s;
    /* without SP (recipe_tp.c tp_nccl_allreduce_block): the first Linear's dgrad all-reduce,
     * what of it outlasts the wgrad GEMM beside it */
    bool nccl_ar_bwd;
    double ar_s;
} rb_tp_exposed;

/* recipe_tp.c: the TP/SP collectives of a block (items entering and leaving it, the block's op)
 * and the exposed time of a block whose collectives overlap its GEMMs (Megatron's userbuffers,
 * torchtitan's async TP). */
void rb_tp_enter(const rb_tp_ctx *c, int op, recipe_phase phase);
void rb_tp_leave(const rb_tp_ctx *c, int op, recipe_phase phase);
int rb_tp_op(const rb_tp_ctx *c, const char *name);
bool rb_tp_block_overlap(const builder *b, const rb_tp_ctx *c, double tokens, double in,
                         double n1, double k2, double out, rb_tp_exposed *e);
/* The backward's TP items of a block: the entering all-gather and leaving reduce-scatter (bf16),
 * or, where e says Megatron's NCCL path priced it, its three collectives at what each adds. */
void rb_tp_backward_items(const rb_tp_ctx *c, int op, const rb_tp_exposed *e);
/* Per-op SAC under async TP: the re-run gather fused with the re-run consumers (n1_re wide). */
void rb_tp_sac_regather(const builder *b, const rb_tp_ctx *c, int op, double tokens, double in,
                        double n1_re, double k2, double out);

/* recipe_mtp.c: the output layer with its loss kernels (the head, and each MTP module's), and
 * the multi-token-prediction modules Megatron runs on the last stage (layout_mtp_layers). */
void rb_output_head(builder *b, const model_spec *m, const layout *l, double tokens);
void rb_mtp_modules(builder *b, const model_spec *m, const training_spec *t, const layout *l,
                    double tokens);

/* layer_recipe.c: host_dispatch_pace(sys, m, l, r, true, moe), then recipe_price(r, price),
 * pricing a Megatron MoE layer once (mcore_moe_host_pace_priced). */
void rb_pace_priced(const system_spec *sys, const model_spec *m, const layout *l, recipe *r,
                    bool moe, recipe_time *price);

/* recipe_moe.c: the experts' GEMM time of `local` experts of one shape in `kernels` launches
 * (out_bytes > 0: Transformer Engine's per-expert GEMMs with their output traffic; form other
 * than GROUPED_NONE: one torch._grouped_mm of that form, priced from the system's measured
 * table where it has one, grouped_rate.h), forward + dgrad + wgrad of it (grouped_mm: the
 * three as torch._grouped_mm calls), and the routing / per-expert-loop kernels around the
 * experts op. */
double rb_moe_experts_s(const builder *b, int local, int kernels, double m, double n, double k,
                        double out_bytes, grouped_form form);
double rb_moe_experts_fwd_bwd_s(const builder *b, int local, int kernels, double m, double n,
                                double k, bool te, double wgrad_bytes, grouped_form form);
/* GROUPED_M where the experts' GEMMs are torch._grouped_mm calls (one kernel for the local
 * experts, no Transformer Engine, Hugging Face's grouped_mm experts or torchtitan's
 * GroupedExperts), else GROUPED_NONE */
grouped_form rb_grouped_mm_form(const layout *l, int kernels, bool te);
void rb_hf_routing_ops(builder *b, const model_spec *m, const layout *l, double tokens,
                       int experts_op);
/* gather: training_spec.moe_gather_routing (gather_moe.h); padded: grouped experts */
void rb_titan_routing_ops(builder *b, const model_spec *m, const layout *l, double tokens,
                          double received, int experts_op, bool gather, bool padded);
/* new_share: training_spec.moe_new_count_share (expert_loop_new_shape_host) */
void rb_expert_loop_ops(builder *b, const model_spec *m, const layout *l, int local,
                        double received, int experts_op, double new_share);
void rb_expert_loop_act(recipe *r, int local);

/* ZeRO-2 under Megatron (shard_grads.c): the unit's gradient reduce-scatter of every
 * micro-batch's backward over the dp x cp shard group, params parameters of the layer on this
 * GPU */
void rb_shard_grads_unit(builder *b, const training_spec *t, const layout *l, double params);

#endif
