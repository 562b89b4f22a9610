/*
 * recipe_builder.c — the layer recipe's builder (recipe_builder.h): appending ops and work items,
 * priced as they are added. The formulas' sources are in layer_recipe.c's header.
 */
#include "recipe_builder.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compute.h"
#include "grad_accum.h"
#include "host_dispatch.h"

void rb_precision(builder *b, const layout *l)
{
    b->lp = precision_is_low(l);
    b->keep_bf16 = false;
    b->lp_peak_flops = precision_peak_flops(b->sys, l);
    b->lp_ratio = precision_gemm_ratio(b->sys, l);
    b->lp_shape = precision_gemm_shape_ratios(b->sys, l, &b->lp_shape_blockwise,
                                              &b->lp_shape_scale);
    b->quant_fwd_bytes = b->quant_bwd_bytes = 0;
    b->swizzle_fwd_s = b->swizzle_bwd_s = 0;
    b->quant_split_fwd_s = b->quant_split_bwd_s = 0;
    b->l = l;
    b->x_fwd_cast_frac = 1.0;
    b->x_saved_fp8 = false;
    b->x_sp_gathered = b->dy_sp_gathered = false;
    /* torchao's float8 casts, compiled by Inductor into an amax pass and a cast pass, reach
     * 0.33-0.63 of the HBM peak on H100 (bench/results/fp8_rowwise_2026-11-28: 5 bytes an
     * element at 1.1-2.1 TB/s, tensorwise and rowwise, 8B/70B shapes), the rate of the eager
     * elementwise kernels (gpu.eager_elementwise_efficiency), not of Transformer Engine's fused
     * cast-transpose, which streams */
    b->quant_eager = b->lp && layout_is_pytorch(l) && b->sys->eager_elementwise_efficiency > 0;
    precision_rules_on(b->sys, l, &b->pr);
}

/* One GEMM of a Linear in the builder's precision (bf16: compute_gemm_s, unchanged); an FP8
 * GEMM at its nearest measured shape's ratio where the profile has them (fp8_shape.h), else
 * the single ratio. */
double rb_gemm_s(const builder *b, double m, double n, double k)
{
    if (!b->lp || b->keep_bf16) return compute_gemm_s(b->sys, m, n, k);
    double ratio = b->lp_ratio, r;
    if (b->lp_shape &&
        fp8_shape_ratio(&b->sys->fp8_gemm_shapes, b->lp_shape_blockwise, m, n, k, &r))
        ratio = r * b->lp_shape_scale;
    return compute_gemm_lp_s(b->sys, b->lp_peak_flops, ratio, b->pr.operand_bytes, m, n, k);
}

/* rb_gemm_s's math term alone, and the bytes of its two operands (mcore_expert_gemm.h). */
void rb_gemm_parts(const builder *b, double m, double n, double k, double *math_s,
                   double *in_bytes)
{
    if (!b->lp || b->keep_bf16) {
        *math_s = compute_gemm_math_s(b->sys, b->sys->peak_bf16_flops_per_s, 1, m, n, k);
        *in_bytes = 2.0 * (m * k + k * n);
        return;
    }
    double ratio = b->lp_ratio, r;
    if (b->lp_shape &&
        fp8_shape_ratio(&b->sys->fp8_gemm_shapes, b->lp_shape_blockwise, m, n, k, &r))
        ratio = r * b->lp_shape_scale;
    *math_s = compute_gemm_math_s(b->sys, b->lp_peak_flops, ratio, m, n, k);
    *in_bytes = b->pr.operand_bytes * (m * k + k * n);
}

/* Forward + dgrad + wgrad, as compute_gemm_fwd_bwd_s composes them. */
double rb_gemm_fwd_bwd_s(const builder *b, double m, double n, double k)
{
    if (!b->lp || b->keep_bf16) return compute_gemm_fwd_bwd_s(b->sys, m, n, k);
    return rb_gemm_s(b, m, n, k) + rb_gemm_s(b, m, k, n) + rb_gemm_s(b, k, n, m);
}

/* A new op; its index, or -1 when the (generously sized) table is full. */
int rb_op_add(builder *b, const char *name, recipe_kind kind, recipe_phase phase,
                  recipe_stream stream, recipe_overlap overlap, double fwd_s, double bwd_s)
{
    recipe *r = b->r;
    if (r->n_ops >= RECIPE_MAX_OPS) return -1;
    recipe_op *o = &r->op[r->n_ops];
    o->name = name;
    o->kind = kind;
    o->phase = phase;
    o->stream = stream;
    o->overlap = overlap;
    o->recompute = false;
    o->recompute_launches = 0;
    o->fwd_s = fwd_s;
    o->bwd_s = bwd_s;
    o->fwd_bwd_s = 0;
    o->launches = 1;
    o->inner_launches = 0;
    o->leave_fwd_s = 0;
    o->recompute_enter_only = false;
    o->sac_enter_s = -1;
    o->recompute_sac_enter = false;
    o->recompute_stops_here = false;
    o->block = b->block;
    o->ep_part = RECIPE_EP_NONE;
    o->beside_s = 0;
    o->host_extra_fwd_s = o->host_extra_bwd_s = 0;
    return r->n_ops++;
}

recipe_item *rb_item_add(builder *b, int op, recipe_phase phase, recipe_item_kind kind,
                             const char *name)
{
    recipe_items *w = b->items;
    if (!w || op < 0) return NULL;
    if (w->n >= RECIPE_MAX_ITEMS) {
        w->overflow = true;
        return NULL;
    }
    recipe_item *it = &w->item[w->n++];
    memset(it, 0, sizeof *it);
    it->phase = phase;
    it->op = op;
    it->kind = kind;
    it->batch = 1;
    snprintf(it->name, sizeof it->name, "%s", name);
    return it;
}

void rb_gemm_item(builder *b, int op, recipe_phase phase, const char *name,
                      recipe_gemm_form form, double m, double n, double k, int batch, bool weight,
                      double pred_s)
{
    recipe_item *it = rb_item_add(b, op, phase, RECIPE_ITEM_GEMM, name);
    if (!it) return;
    it->form = form;
    it->m = m;
    it->n = n;
    it->k = k;
    it->batch = batch;
    it->weight_operand = weight;
    /* the Linears (and grouped experts) priced in the low-precision format by rb_gemm_s; the
     * attention core, router and output layer stay bf16 */
    it->low_precision = b->lp && !b->keep_bf16 && b->r->op[op].kind == RECIPE_GEMM;
    it->pred_s = pred_s;
}

void rb_stream_item(builder *b, int op, recipe_phase phase, const char *name, double bytes,
                        const ew_access *a, double pred_s)
{
    recipe_item *it = rb_item_add(b, op, phase, RECIPE_ITEM_STREAM, name);
    if (!it) return;
    it->bytes = bytes;
    it->access = *a;
    it->pred_s = pred_s;
}

/* A memory-bound kernel of `bytes` with no derived pattern: a vectorized bf16 kernel reading
 * half of them and writing half. */
void rb_lump_item(builder *b, int op, recipe_phase phase, const char *name, double bytes,
                      double pred_s)
{
    long n = (long)(bytes / 4);
    ew_access a = {.pattern = EW_VECTORIZED, .esize = {2, 2, 0}, .n = {1, 1, n > 0 ? n : 1}};
    a.stride[0][2] = a.stride[1][2] = 1;
    rb_stream_item(b, op, phase, name, bytes, &a, pred_s);
}

void rb_coll_item(builder *b, int op, recipe_phase phase, const char *name, collective_op c,
                      double bytes, recipe_group g, double pred_s)
{
    recipe_item *it = rb_item_add(b, op, phase, RECIPE_ITEM_COLL, name);
    if (!it) return;
    it->coll = c;
    it->bytes = bytes;
    it->group = g;
    it->pred_s = pred_s;
}

/* The quantize / amax / transpose kernels of `copies` low-precision Linears of `tokens` rows and
 * an out x in weight (precision.c gives the bytes per element of each recipe): forward (input
 * and weight) and backward (the other layouts and the output gradient), gathered per layer. */
void rb_quantize_ops(builder *b, double tokens, double out, double in, double copies)
{
    if (!b->lp || b->keep_bf16) return;
    const precision_rules *p = &b->pr;
    double x = tokens * in, w = out * in, dy = tokens * out;
    b->quant_fwd_bytes += copies * (p->x_fwd_bytes * x * b->x_fwd_cast_frac + p->w_fwd_bytes * w);
    /* an input saved in float8 is transposed for wgrad (torchao float8_ops float8_mm makes
     * the column-major operand with .t().contiguous().t(): read 1, write 1) */
    double xb = b->x_saved_fp8 ? 2.0 : p->x_bwd_bytes;
    /* TE NVFP4 under SP: the row-parallel Linear's output gradient cast on its shard, and the
     * reorder of each gathered columnwise copy (precision.c "NVFP4 under SP") */
    double dyf = b->dy_sp_gathered ? precision_sp_shard_frac(b->l) : 1.0;
    double fix = precision_sp_gather_fixup_bytes(b->l);
    double fixed = (b->x_sp_gathered ? x : 0) + (b->dy_sp_gathered ? dy : 0);
    b->quant_bwd_bytes += copies * (xb * x + p->w_bwd_bytes * w + p->dy_bwd_bytes * dy * dyf +
                                    fix * fixed);
    /* the GEMMs' scale swizzles (precision.c "Scale swizzles"): fprop X, W; dgrad dY, W;
     * wgrad X, dY; a grouped GEMM swizzles all its experts in one kernel */
    const system_spec *s = b->sys;
    b->swizzle_fwd_s += precision_scale_swizzle_s(s, b->l, copies * x) +
                        precision_scale_swizzle_s(s, b->l, copies * w);
    b->swizzle_bwd_s += 2 * precision_scale_swizzle_s(s, b->l, copies * dy) +
                        precision_scale_swizzle_s(s, b->l, copies * w) +
                        precision_scale_swizzle_s(s, b->l, copies * x);
}

/* torchtitan's Float8 TP (float8 tensorwise with TP: parallelize_llama's Float8ColwiseParallel
 * and PrepareFloat8ModuleInput) casts a block's input to float8 on its sequence shard, before
 * the SP all-gather, which then moves float8 (pytorch/ao 36027d8
 * torchao/float8/float8_tensor_parallel.py Float8ColwiseParallel._prepare_input_fn:
 * hp_tensor_to_float8_dynamic of the Shard(1) DTensor, then redistribute to Replicate): the
 * forward input cast of the Linears that enter the block covers tokens / tp rows, not the
 * gathered tokens. Float8RowwiseParallel casts the Linears that leave the block in its prepare
 * hook as well, so every TP Linear's input reaches torchao's matmul_with_hp_or_float8_args in
 * float8, which saves it for backward as it came and, tensor_already_casted_to_fp8, does not
 * cast it again for wgrad (torchao/float8/float8_linear.py backward): the backward transposes
 * the float8 copy (x_saved_fp8). The rowwise recipe keeps TP in bf16 (its Linears cast after
 * the gather). */
double rb_float8_tp_shard_cast(const layout *l)
{
    bool float8_tp = l->framework == FRAMEWORK_TORCHTITAN && l->tp > 1 && l->sp &&
                     l->precision == PRECISION_FP8 &&
                     precision_fp8_recipe(l) == FP8_RECIPE_TENSORWISE;
    return float8_tp ? 1.0 / l->tp : 1.0;
}

double rb_sp_input_cast_frac(const layout *l)
{
    double f = rb_float8_tp_shard_cast(l);
    return f < 1.0 ? f : precision_sp_shard_frac(l);
}

/* torchao's float8 casts in a torch.compile'd block (FSDP2 / torchtitan, no TP), where the
 * system measured them: the FP8 block's kernels other than GEMMs and attention, less the bf16
 * block's, against the bytes rb_quantize_ops counts (X 5 + 5, W 5 + 5, dY 5 + 5 rowwise; dY 8
 * tensorwise). On one H200 (bench/fp8b19_probe.py, bench/results/fp8b19_2026-11-29/probe.json:
 * one Llama-3.1-8B block, 8192 tokens, torch.profiler): rowwise 7.740 - 1.413 = 6.327 ms for
 * 7.885 GB, 1.246 TB/s = 0.2596 of 4.8 TB/s; tensorwise 5.354 - 1.413 = 3.941 ms for 7.180 GB,
 * 1.822 TB/s = 0.3796. The compiled casts fuse with the recomputed norms and SwiGLU product
 * (memory.h memory_torchao_compiled_recompute), reduce along the tokens for the wgrad operands
 * and write transposed copies: slower than the isolated casts (0.33-0.63 of peak on H100,
 * bench/results/fp8_rowwise_2026-11-28). 0: not measured (the eager rate). */
double rb_torchao_compiled_cast_efficiency(const system_spec *sys, const layout *l)
{
    if (!layout_is_pytorch(l) || !l->compile || l->precision != PRECISION_FP8 || l->tp > 1)
        return 0;
    layout_fp8_recipe r = precision_fp8_recipe(l);
    return r == FP8_RECIPE_ROWWISE      ? sys->torchao_cast_efficiency_rowwise
           : r == FP8_RECIPE_TENSORWISE ? sys->torchao_cast_efficiency_tensorwise
                                        : 0;
}

/* The layer's quantize kernels as two elementwise ops, forward and backward. */
void rb_quantize_flush(builder *b)
{
    if (!b->lp) return;
    double fwd = b->quant_fwd_bytes, bwd = b->quant_bwd_bytes;
    double eager_bw = b->sys->hbm_bandwidth_bytes_per_s * b->sys->eager_elementwise_efficiency;
    double cast_eff = rb_torchao_compiled_cast_efficiency(b->sys, b->l);
    if (b->quant_eager && cast_eff > 0) eager_bw = b->sys->hbm_bandwidth_bytes_per_s * cast_eff;
    double tf = b->quant_eager ? fwd / eager_bw : compute_stream_s(b->sys, fwd),
           tb = b->quant_eager ? bwd / eager_bw : compute_stream_s(b->sys, bwd);
    tf += b->swizzle_fwd_s; /* Transformer Engine < 2.12's scale swizzles (precision.h) */
    tb += b->swizzle_bwd_s;
    tf += b->quant_split_fwd_s; /* TE's per-expert launches (mcore_expert_gemm.h) */
    tb += b->quant_split_bwd_s;
    int of = rb_op_add(b, "lp.quantize", RECIPE_ELEMENTWISE, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                    RECIPE_OVERLAP_NONE, tf, 0);
    rb_lump_item(b, of, RECIPE_FWD, "lp.quantize", fwd, tf);
    int ob = rb_op_add(b, "lp.quantize_bwd", RECIPE_ELEMENTWISE, RECIPE_BWD, RECIPE_STREAM_COMPUTE,
                    RECIPE_OVERLAP_NONE, 0, tb);
    rb_lump_item(b, ob, RECIPE_BWD, "lp.quantize_bwd", bwd, tb);
}

/* The measured rates of the three GEMMs of a bf16 Linear whose out-features `width` are not a
 * multiple of 8 (rows of y, dy and dy^T not 16-byte aligned, so cuBLAS leaves its nvjet_sm90
 * kernels), by alignment class: odd (gpu.gemm_odd_out_*), 2 mod 4 and 4 mod 8
 * (gpu.gemm_out_2mod4_*, gpu.gemm_out_4mod8_*), all measured at the output layer's shapes
 * (bench/results/granite24_2026-11-29, oddgemm24_2026-11-29). False for a multiple of 8 or
 * a class without rates (not measured: the aligned GEMM). */
static bool out_class_rates(const system_spec *sys, double width, double rate[3])
{
    long long w = (long long)width;
    const double *r = w % 2   ? (const double[3]){sys->gemm_odd_out_fwd_flops_per_s,
                                                  sys->gemm_odd_out_dgrad_flops_per_s,
                                                  sys->gemm_odd_out_wgrad_flops_per_s}
                      : w % 4 ? (const double[3]){sys->gemm_out_2mod4_fwd_flops_per_s,
                                                  sys->gemm_out_2mod4_dgrad_flops_per_s,
                                                  sys->gemm_out_2mod4_wgrad_flops_per_s}
                      : w % 8 ? (const double[3]){sys->gemm_out_4mod8_fwd_flops_per_s,
                                                  sys->gemm_out_4mod8_dgrad_flops_per_s,
                                                  sys->gemm_out_4mod8_wgrad_flops_per_s}
                              : NULL;
    if (!r || !(r[0] > 0) || !(r[1] > 0) || !(r[2] > 0)) return false;
    for (int i = 0; i < 3; i++) rate[i] = r[i];
    return true;
}

/* The three GEMMs (forward, dgrad, wgrad) of one rank's Linear of `width` out-features (an
 * integer): the aligned GEMMs, or at out_class_rates' rates plus the fixed cost each, never
 * faster than the aligned GEMM (an unaligned operand only narrows cuBLAS's choice). */
static void rank_gemms_s(const builder *b, double tokens, double width, double in, double t[3])
{
    const system_spec *sys = b->sys;
    t[0] = rb_gemm_s(b, tokens, width, in);
    t[1] = rb_gemm_s(b, tokens, in, width);
    t[2] = rb_gemm_s(b, in, width, tokens);
    double rate[3];
    if (!out_class_rates(sys, width, rate)) return;
    double flops = 2.0 * tokens * width * in;
    for (int i = 0; i < 3; i++) t[i] = fmax(t[i], flops / rate[i] + sys->gemm_overhead_s);
}

/* The three GEMMs of a bf16 Linear (of `parts` Linears of equal width fused into one GEMM by
 * the recipe: gate and up) whose out-features are not a multiple of 8, under a PyTorch
 * framework, which keeps the width it is given (Megatron pads the vocabulary to
 * make_vocab_size_divisible_by x tp: megatron/training/tokenizer/tokenizer.py
 * _vocab_size_with_padding; left as it was). A width that tp does not divide is sharded as
 * DTensor's Shard does (torch.chunk: ceil(n / tp) on the first ranks, the rest on the last;
 * torch/distributed/tensor/placement_types.py Shard._split_tensor), and the slower of the two
 * widths is the step's. Writes the three times and returns true where it applies. */
static bool unaligned_out_gemms_s(const builder *b, double tokens, double out, double in,
                                  int parts, double *fwd_s, double *dgrad_s, double *wgrad_s)
{
    if ((b->lp && !b->keep_bf16) || !b->l || !layout_is_pytorch(b->l) || parts < 1) return false;
    double width = out / parts, rate[3];
    int tp = b->l->tp > 1 ? b->l->tp : 1;
    double widths[2] = {width, 0};
    if (width != floor(width)) {
        double n = round(width * tp), c = ceil(n / tp);
        if (fabs(n - width * tp) > 1e-6 || tp == 1) return false;
        widths[0] = c;
        widths[1] = n - (tp - 1) * c;
    }
    if (!out_class_rates(b->sys, widths[0], rate) &&
        !(widths[1] >= 1 && out_class_rates(b->sys, widths[1], rate)))
        return false;
    double best[3] = {0, 0, 0};
    for (int k = 0; k < 2; k++) {
        if (!(widths[k] >= 1)) continue;
        double t[3];
        rank_gemms_s(b, tokens, widths[k], in, t);
        if (parts * (t[0] + t[1] + t[2]) > best[0] + best[1] + best[2])
            for (int i = 0; i < 3; i++) best[i] = parts * t[i];
    }
    *fwd_s = best[0];
    *dgrad_s = best[1];
    *wgrad_s = best[2];
    return true;
}

/* A Linear of `tokens` rows, out x in weight: forward, and dgrad + wgrad in the backward, each
 * a compute_gemm_s of the shapes compute_gemm_fwd_bwd_s adds up (unaligned_out_gemms_s's rates
 * where out / parts, the width of each of the `parts` Linears the GEMM stands for, is not a
 * multiple of 8). */
void rb_linear_parts(builder *b, const char *name, double tokens, double out, double in,
                     int parts)
{
    int op = rb_op_add(b, name, RECIPE_GEMM, RECIPE_FWD, RECIPE_STREAM_COMPUTE, RECIPE_OVERLAP_NONE,
                    0, 0);
    if (op < 0) return;
    recipe_op *o = &b->r->op[op];
    double dgrad_s = rb_gemm_s(b, tokens, in, out), wgrad_s = rb_gemm_s(b, in, out, tokens);
    o->fwd_s = rb_gemm_s(b, tokens, out, in);
    o->fwd_bwd_s = rb_gemm_fwd_bwd_s(b, tokens, out, in);
    if (unaligned_out_gemms_s(b, tokens, out, in, parts, &o->fwd_s, &dgrad_s, &wgrad_s))
        o->fwd_bwd_s = o->fwd_s + dgrad_s + wgrad_s;
    o->bwd_s = o->fwd_bwd_s - o->fwd_s;
    if (b->items) {
        char nm[32];
        rb_gemm_item(b, op, RECIPE_FWD, name, RECIPE_FORM_FWD, tokens, out, in, 1, true, o->fwd_s);
        snprintf(nm, sizeof nm, "%s.dgrad", name);
        rb_gemm_item(b, op, RECIPE_BWD, nm, RECIPE_FORM_DGRAD, tokens, in, out, 1, true, dgrad_s);
        snprintf(nm, sizeof nm, "%s.wgrad", name);
        rb_gemm_item(b, op, RECIPE_BWD, nm, RECIPE_FORM_WGRAD, out, in, tokens, 1, false, wgrad_s);
    }
    rb_quantize_ops(b, tokens, out, in, 1);
}

/* rb_linear_parts of one Linear. */
void rb_linear(builder *b, const char *name, double tokens, double out, double in)
{
    rb_linear_parts(b, name, tokens, out, in, 1);
}

/* Each kernel of an elementwise pass as an op, and each of its launches as an item, so that the
 * backend launches as many kernels of the same kind and bytes as the framework does. */
void rb_elementwise_ops(builder *b, const elementwise_list *e, const elementwise_kernel *k,
                            int n, recipe_phase phase)
{
    /* e's flags with nothing beside: elementwise_kernel_s reads a list's flags, never its
     * kernels (elementwise.h), so an empty list stands for it; a copy of e (two 64-kernel
     * arrays, 18 KB) per call was a third of the search's instructions (slow26) */
    elementwise_list alone;
    alone.eager = e->eager, alone.alone = true, alone.inductor = e->inductor;
    alone.n_fwd = alone.n_bwd = 0;
    for (int i = 0; i < n; i++) {
        double one = elementwise_kernel_s(b->sys, e, &k[i]);
        double all = k[i].count * one;
        int op = rb_op_add(b, k[i].name, RECIPE_ELEMENTWISE, phase, RECIPE_STREAM_COMPUTE,
                        RECIPE_OVERLAP_NONE, phase == RECIPE_FWD ? all : 0,
                        phase == RECIPE_BWD ? all : 0);
        if (op >= 0) {
            if (e->eager && !e->alone)
                b->r->op[op].beside_s =
                    fmax(0, all - k[i].count * elementwise_kernel_s(b->sys, &alone, &k[i]));
            b->r->op[op].launches = k[i].count;
            b->r->op[op].inner_launches = k[i].inner < k[i].count ? k[i].inner : k[i].count;
        }
        if (!b->items) continue;
        for (int j = 0; j < k[i].count; j++)
            rb_stream_item(b, op, phase, k[i].name, k[i].bytes, &k[i].access, one);
    }
}

/* The layer's weight gradients accumulated outside the wgrad GEMM (grad_accum.h): one
 * memory-bound backward kernel of grad_accum_layer_bytes for its `params` parameters on this
 * GPU; nothing where the framework fuses the sum into the GEMM. */
void rb_grad_accum_op(builder *b, const training_spec *t, const layout *l, double params)
{
    double bytes = grad_accum_layer_bytes(t, l, params);
    if (!(bytes > 0)) return;
    double s = compute_stream_s(b->sys, bytes);
    int op = rb_op_add(b, "grad_accum", RECIPE_ELEMENTWISE, RECIPE_BWD, RECIPE_STREAM_COMPUTE,
                       RECIPE_OVERLAP_NONE, 0, s);
    rb_lump_item(b, op, RECIPE_BWD, "grad_accum", bytes, s);
}
