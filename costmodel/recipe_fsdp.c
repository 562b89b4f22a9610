/*
 * recipe_fsdp.c — FSDP2's compute-stream copies of one FSDP unit as ops of a layer's or the
 * head's recipe (layer_recipe.h; fsdp_copies.h says what they are and where each number comes
 * from): the all-gather copy-out, the reduce-scatter copy-in, torch pipelining's fp32 gradient
 * sums, and on one GPU the one-rank reduce-scatter's copy. On one GPU, where FSDP2 runs no
 * collective, they are also the backend's items (issue 14, bench/results/bkmeas24_2026-11-29);
 * on several GPUs the backend runs them around its collectives (backend/bk_dp.c).
 */
#include "recipe_builder.h"

#include "compute.h"
#include "fsdp_copies.h"

/* A contiguous copy of n elements (bytes per element: out eo, in ea) as a vectorized kernel
 * (elementwise.h EW_VECTORIZED: fp32 -> bf16 bfloat16_copy, Memcpy DtoD) over operands the
 * size of a unit's parameters (recipe_item.param_operands). */
static void unit_copy_item(builder *b, int op, recipe_phase phase, const char *name, int eo,
                           int ea, double n, double pred_s)
{
    ew_access a = {.pattern = EW_VECTORIZED, .esize = {eo, ea, 0}, .n = {1, 1, (long)n}};
    a.stride[0][2] = a.stride[1][2] = 1;
    rb_stream_item(b, op, phase, name, (eo + ea) * n, &a, pred_s);
    if (b->items && b->items->n > 0 && !b->items->overflow)
        b->items->item[b->items->n - 1].param_operands = true;
}

/* One GPU (fsdp_copies.h one_gpu): FSDP2's unshard of the unit, the per-tensor cast of the fp32
 * shard to bf16 (6 bytes a parameter) and the copy into the unsharded parameter (4), as the two
 * kernels' items of fsdp.copy_out (their times its time split by bytes) in `phase`. */
static void unshard_items(builder *b, int op, recipe_phase phase, const fsdp_copies *fc)
{
    unit_copy_item(b, op, phase, "fsdp.unshard.cast", 2, 4, fc->params,
                   compute_stream_s(b->sys, 6.0 * fc->params));
    unit_copy_item(b, op, phase, "fsdp.unshard.copy", 2, 2, fc->params,
                   compute_stream_s(b->sys, 4.0 * fc->params));
}

/* FSDP2's compute-stream copies of a unit of p parameters (fsdp_copies.h): the all-gather
 * copy-out of each gather (forward, and backward when resharded) and the reduce-scatter copy-in
 * of the backward. On several GPUs bk_measure runs them around the unit collectives (no items);
 * on one GPU, where FSDP2 runs no collective and they are the unit's whole traffic, they are
 * items the backend runs on the compute stream: the unshard's cast and copy (fsdp.copy_out),
 * chunk_cat (fsdp.rs_copy_in) and the one-rank reduce-scatter's fp32 copy (fsdp.rs_one_rank). */
void rb_fsdp_copies(builder *b, const training_spec *t, const layout *l,
                    const fsdp_copies *fc)
{
    double out = fsdp_copy_out_s(b->sys, fc);
    if (fsdp_pipelined(l) && !l->reshard_after_forward) {
        /* torch pipelining: gathered once and reduced once per step, the gradients summed in
         * fp32 between (fsdp_copies.h) */
        int m = layout_microbatches(l, t);
        rb_op_add(b, "fsdp.copy_out", RECIPE_FSDP_COPY, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                  RECIPE_OVERLAP_NONE, fsdp_pipelined_copy_out_s(b->sys, fc, m), 0);
        rb_op_add(b, "fsdp.grad_acc", RECIPE_FSDP_COPY, RECIPE_BWD, RECIPE_STREAM_COMPUTE,
                  RECIPE_OVERLAP_NONE, 0, fsdp_pipelined_grad_s(b->sys, fc, m));
        return;
    }
    int co = rb_op_add(b, "fsdp.copy_out", RECIPE_FSDP_COPY, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                       RECIPE_OVERLAP_NONE, out, l->reshard_after_forward ? out : 0);
    int rc = rb_op_add(b, "fsdp.rs_copy_in", RECIPE_FSDP_COPY, RECIPE_BWD, RECIPE_STREAM_COMPUTE,
                       RECIPE_OVERLAP_NONE, 0, fsdp_rs_copy_in_s(b->sys, fc));
    if (!fc->one_gpu) return;
    /* the one-rank reduce-scatter's copy (fsdp_copies.h) */
    int ro = rb_op_add(b, "fsdp.rs_one_rank", RECIPE_FSDP_COPY, RECIPE_BWD, RECIPE_STREAM_COMPUTE,
                       RECIPE_OVERLAP_NONE, 0, fsdp_rs_one_rank_s(b->sys, fc));
    unshard_items(b, co, RECIPE_FWD, fc);
    if (l->reshard_after_forward) unshard_items(b, co, RECIPE_BWD, fc);
    /* chunk_cat's bf16 -> fp32 kernel (one rank's chunk), then the fp32 device copy */
    rb_stream_item(b, rc, RECIPE_BWD, "fsdp.rs_copy_in", fc->rs_cast.bytes, &fc->rs_cast.access,
                   fsdp_rs_copy_in_s(b->sys, fc));
    if (b->items && b->items->n > 0 && !b->items->overflow)
        b->items->item[b->items->n - 1].param_operands = true;
    unit_copy_item(b, ro, RECIPE_BWD, "fsdp.rs_one_rank", 4, 4, fc->params,
                   fsdp_rs_one_rank_s(b->sys, fc));
}
