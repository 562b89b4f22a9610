/*
 * recipe_moe.c — the MoE layer's expert pieces of a layer recipe (layer_recipe.c builds the
 * layer): the experts' GEMM time per implementation (one grouped kernel, a GEMM per expert,
 * Transformer Engine's per-expert GEMMs with their output traffic) and the routing / per-expert
 * loop kernels of the Hugging Face and torchtitan experts. Declared in recipe_builder.h.
 */
#include "recipe_builder.h"

#include <string.h>

#include "expert_loop.h"
#include "compute.h"
#include "gather_moe.h"
#include "hf_experts.h"
#include "mcore_expert_gemm.h"
#include "titan_moe.h"

/* transformers' grouped_mm experts (hf_experts.h): the two grouped GEMMs launch
 * HF_EXPERTS_GROUPED_MM_KERNELS kernels each (host_dispatch.c reads op.launches), and the
 * routing kernels around them. */
void rb_hf_routing_ops(builder *b, const model_spec *m, const layout *l, double tokens,
                           int experts_op)
{
    if (experts_op >= 0) b->r->op[experts_op].launches = 2 * HF_EXPERTS_GROUPED_MM_KERNELS;
    elementwise_list el;
    hf_experts_routing(m, l, tokens, &el);
    rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
    rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
}

/* torchtitan's routing kernels around the experts (titan_moe.h), or with `gather` those of a
 * MoE that regroups by gathers both ways (gather_moe.h; `padded`: grouped experts); `received`:
 * the routed copies this GPU's experts receive. */
void rb_titan_routing_ops(builder *b, const model_spec *m, const layout *l, double tokens,
                              double received, int experts_op, bool gather, bool padded)
{
    /* torchtitan's three torch._grouped_mm (w1, w3, w2), each a prepare_grouped_gemm_data and
     * a CUTLASS kernel: 6 launches forward, 12 backward in the traces of
     * bench/results/epstep_2026-11-27 (GroupedMmBackward0) */
    if (experts_op >= 0) b->r->op[experts_op].launches = 3 * HF_EXPERTS_GROUPED_MM_KERNELS;
    elementwise_list el;
    if (gather) gather_moe_routing(m, l, tokens, received, padded, &el);
    else titan_moe_routing(m, l, tokens, received, &el);
    rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
    rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
}

/* torchtitan's per-expert loop (expert_loop.h): every expert's GEMMs are launches of their own
 * (three Linear-shaped matmuls each for SwiGLU), so are its SwiGLU kernels (expert_loop_act),
 * and the loop's own kernels (expert_loop.c) join the layer. */
void rb_expert_loop_ops(builder *b, const model_spec *m, const layout *l, int local,
                            double received, int experts_op, double new_share)
{
    int per = m->activation == MODEL_ACT_SWIGLU ? 3 : 2;
    if (experts_op >= 0) {
        recipe_op *o = &b->r->op[experts_op];
        o->launches = per * local;
        expert_loop_new_shape_host(m, b->sys, new_share, &o->host_extra_fwd_s,
                                   &o->host_extra_bwd_s);
    }
    elementwise_list el;
    expert_loop_kernels(m, l, local, received, &el);
    rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
    rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
}

/* The loop's SwiGLU kernels (elementwise.c's experts.* ops, priced by their total bytes) are
 * issued once per expert. */
void rb_expert_loop_act(recipe *r, int local)
{
    for (int i = 0; i < r->n_ops; i++) {
        recipe_op *o = &r->op[i];
        if (o->kind == RECIPE_ELEMENTWISE && !strncmp(o->name, "experts.", 8)) o->launches *= local;
    }
}

/* `local` experts' GEMMs of one shape in `kernels` launches: one grouped kernel pays the fixed
 * launch cost once (compute_grouped_gemm_s's rule), a GEMM per expert pays it each time; the
 * format (bf16 or low precision) as gemm_s. out_bytes > 0: Transformer Engine's per-expert
 * GEMMs, each with its output traffic of out_bytes per element (mcore_expert_gemm.h). */
double rb_moe_experts_s(const builder *b, int local, int kernels, double m, double n,
                            double k, double out_bytes, grouped_form form)
{
    if (out_bytes > 0) {
        double math_s, in_bytes;
        rb_gemm_parts(b, m, n, k, &math_s, &in_bytes);
        return local * mcore_expert_gemm_s(b->sys, math_s, in_bytes, m, n, k, out_bytes);
    }
    double ratio;
    if (form != GROUPED_NONE && kernels == 1 && local >= 1 && (!b->lp || b->keep_bf16) &&
        m > 0 && n > 0 && k > 0 &&
        grouped_table_ratio(&b->sys->grouped_gemm_rates, form, local, form == GROUPED_K ? k : m,
                            n, form == GROUPED_K ? m : k, &ratio))
        /* the measured call's time (its launch inside it): the flat model's math term at the
         * measured rate ratio (grouped_rate.h), at most the flat rate: a grouped call does the
         * dense GEMM's tiles plus its groups' edges, and the table's ratios over 1 (to 1.16,
         * large experts at ~1k rows) are within the run's own dense-rate spread (633-684
         * TFLOP/s) and its short timed windows, not a faster kernel (grpmm27 README) */
        return local * compute_gemm_math_s(b->sys, b->sys->peak_bf16_flops_per_s,
                                           ratio < 1 ? ratio : 1, m, n, k);
    double one = rb_gemm_s(b, m, n, k);
    if (kernels != 1) return local * one;
    if (local < 1 || one <= 0) return 0;
    return local * (one - b->sys->gemm_overhead_s) + b->sys->gemm_overhead_s;
}

grouped_form rb_grouped_mm_form(const layout *l, int kernels, bool te)
{
    return kernels == 1 && !te && (hf_experts_applies(l) || titan_moe_applies(l)) ? GROUPED_M
                                                                                 : GROUPED_NONE;
}

/* Forward + dgrad + wgrad of moe_experts_s, as compute_gemm_fwd_bwd_s composes them; under
 * Transformer Engine (te) the outputs in bf16 and the weight gradient's in wgrad_bytes. */
double rb_moe_experts_fwd_bwd_s(const builder *b, int local, int kernels, double m, double n,
                                    double k, bool te, double wgrad_bytes, grouped_form form)
{
    double o = te ? 2 : 0, w = te ? wgrad_bytes : 0;
    grouped_form fm = form, fk = form != GROUPED_NONE ? GROUPED_K : GROUPED_NONE;
    return rb_moe_experts_s(b, local, kernels, m, n, k, o, fm) +
           rb_moe_experts_s(b, local, kernels, m, k, n, o, fm) +
           rb_moe_experts_s(b, local, kernels, k, n, m, w, fk);
}

/* GroupedLinear quantizes two tensors per expert in each pass (fc1's and fc2's input forward,
 * their output gradients backward: mcore_expert_gemm.h) */
void rb_expert_quantize_split(builder *b, int local, double fwd_bytes, double bwd_bytes)
{
    if (!b->lp || b->keep_bf16) return;
    b->quant_split_fwd_s += mcore_expert_quantize_split_s(b->sys, b->l, local, 2, fwd_bytes);
    b->quant_split_bwd_s += mcore_expert_quantize_split_s(b->sys, b->l, local, 2, bwd_bytes);
}
