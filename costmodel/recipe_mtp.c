/*
 * recipe_mtp.c — the loss head's output layer and the multi-token-prediction modules that share
 * it, as ops of the head's recipe (layer_recipe.h recipe_head).
 *
 * Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 Sec. 2.2) runs, for each of the model's
 * num_nextn_predict_layers modules, on the last pipeline stage after the main head (Megatron-Core
 * megatron/core/transformer/multi_token_prediction.py, MultiTokenPredictionLayer at d98e8a6):
 *  - RMSNorm of the next tokens' embeddings (enorm) and of the hidden states (hnorm), their
 *    concatenation [s, b, 2h];
 *  - eh_proj, a column-parallel Linear 2h -> h (gather_output=False): under sequence
 *    parallelism its input is all-gathered over the sequence; its h/tp-wide output is then
 *    all-gathered over the hidden dimension (gather_from_tensor_model_parallel_region) and cut
 *    back to the rank's sequence share. Backward: the input gradient's reduce-scatter (an
 *    all-reduce without SP); the output gather's backward is a split;
 *  - one transformer layer built from the decoder's spec (DeepSeek-V3: a MoE layer), with the
 *    decoder's recompute settings;
 *  - its own final norm, the shared output layer and a second cross-entropy.
 * Megatron runs it whenever --mtp-num-layers is set, which plan's Megatron emitters write from
 * the model's config (emit_megatron.c); Hugging Face and torchtitan training do not run it
 * (layout_mtp_layers). The head's other ops are in recipe_head.
 */
#include "recipe_builder.h"

#include <stdlib.h>
#include <string.h>

#include "compute.h"

void rb_output_head(builder *b, const model_spec *m, const layout *l, double tokens)
{
    b->keep_bf16 = true; /* the output layer stays bf16 under every recipe (precision.h) */
    rb_linear(b, "lm_head", tokens, (double)m->vocab / l->tp, m->hidden);
    b->keep_bf16 = false;
    /* final norm, logits.float() and cross-entropy over V/tp logits (elementwise.c) */
    elementwise_list el;
    elementwise_head(m, l, tokens, &el);
    rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
    rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
}

/* Appends src's ops (and items, with their op index moved) to b's recipe. */
static void append_recipe(builder *b, const recipe *src, const recipe_items *src_items)
{
    recipe *r = b->r;
    int base = r->n_ops;
    int n = src->n_ops;
    if (base + n > RECIPE_MAX_OPS) n = RECIPE_MAX_OPS - base;
    if (n > 0) memcpy(&r->op[base], src->op, (size_t)n * sizeof src->op[0]);
    r->n_ops = base + (n > 0 ? n : 0);
    r->shared_fwd_s += src->shared_fwd_s;
    r->shared_bwd_s += src->shared_bwd_s;
    if (!b->items || !src_items) return;
    for (int i = 0; i < src_items->n; i++) {
        if (b->items->n >= RECIPE_MAX_ITEMS) {
            b->items->overflow = true;
            break;
        }
        recipe_item it = src_items->item[i];
        it.op += base;
        b->items->item[b->items->n++] = it;
    }
    if (src_items->overflow) b->items->overflow = true;
}

/* enorm + hnorm + cat, and eh_proj with its TP collectives, of one module. */
static void mtp_projection(builder *b, const model_spec *m, const layout *l, double tokens)
{
    const system_spec *sys = b->sys;
    double h = m->hidden, tp = l->tp;
    double rows = l->sp ? tokens / tp : tokens; /* the norms run on the rank's sequence share */
    /* two RMSNorms (read and write h bf16 values per row each) and the concatenation (read
     * 2h, write 2h): 16 bytes x h per row forward; the backward reads the gradient and the
     * inputs and writes the inputs' gradients, twice the traffic */
    double fwd_bytes = 16.0 * h * rows, bwd_bytes = 32.0 * h * rows;
    int nf = rb_op_add(b, "mtp.norms", RECIPE_ELEMENTWISE, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                       RECIPE_OVERLAP_NONE, compute_stream_s(sys, fwd_bytes), 0);
    rb_lump_item(b, nf, RECIPE_FWD, "mtp.norms", fwd_bytes, compute_stream_s(sys, fwd_bytes));
    int nb = rb_op_add(b, "mtp.norms.bwd", RECIPE_ELEMENTWISE, RECIPE_BWD, RECIPE_STREAM_COMPUTE,
                       RECIPE_OVERLAP_NONE, 0, compute_stream_s(sys, bwd_bytes));
    rb_lump_item(b, nb, RECIPE_BWD, "mtp.norms.bwd", bwd_bytes, compute_stream_s(sys, bwd_bytes));
    if (l->tp > 1) {
        layout_group g = layout_tp_group(sys, l);
        double in_bytes = tokens * 2.0 * h * 2.0, out_bytes = tokens * h * 2.0;
        double in_fwd = l->sp ? collective_time_s(sys, COLL_ALL_GATHER, in_bytes, g) : 0;
        double out_fwd = collective_time_s(sys, COLL_ALL_GATHER, out_bytes, g);
        collective_op in_bwd_op = l->sp ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
        double in_bwd = collective_time_s(sys, in_bwd_op, in_bytes, g);
        int op = rb_op_add(b, "mtp.tp", RECIPE_TP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                           RECIPE_OVERLAP_NONE, in_fwd + out_fwd, in_bwd);
        if (l->sp)
            rb_coll_item(b, op, RECIPE_FWD, "mtp.sp_gather", COLL_ALL_GATHER, in_bytes,
                         RECIPE_GROUP_TP, in_fwd);
        rb_coll_item(b, op, RECIPE_FWD, "mtp.out_gather", COLL_ALL_GATHER, out_bytes,
                     RECIPE_GROUP_TP, out_fwd);
        rb_coll_item(b, op, RECIPE_BWD, "mtp.in_grad", in_bwd_op, in_bytes, RECIPE_GROUP_TP,
                     in_bwd);
    }
    b->quant_fwd_bytes = b->quant_bwd_bytes = 0;
    b->swizzle_fwd_s = b->swizzle_bwd_s = 0;
    b->quant_split_fwd_s = b->quant_split_bwd_s = 0;
    rb_linear(b, "mtp.eh_proj", tokens, h / tp, 2.0 * h);
    rb_quantize_flush(b);
}

void rb_mtp_modules(builder *b, const model_spec *m, const training_spec *t, const layout *l,
                    double tokens)
{
    int n = layout_mtp_layers(m, l);
    if (n <= 0) return;
    bool moe = model_layer_is_moe(m, m->layers - 1); /* the decoder's last layer's spec */
    if (b->mtp_layer && !b->items) { /* built already: the same ops (builder.mtp_layer) */
        for (int i = 0; i < n; i++) {
            mtp_projection(b, m, l, tokens);
            append_recipe(b, b->mtp_layer, NULL);
            rb_output_head(b, m, l, tokens);
        }
        return;
    }
    recipe layer;
    recipe_items *layer_items = NULL;
    if (b->items) {
        layer_items = malloc(sizeof *layer_items);
        if (!layer_items) b->items->overflow = true; /* the items are incomplete; ops are not */
    }
    recipe_layer(m, b->sys, t, l, moe, &layer, layer_items);
    for (int i = 0; i < n; i++) {
        mtp_projection(b, m, l, tokens);
        append_recipe(b, &layer, layer_items);
        rb_output_head(b, m, l, tokens);
    }
    free(layer_items);
}
