/*
 * recipe_tp.c — the tensor-parallel blocks of the layer recipe (layer_recipe.c): the SP
 * all-gather entering a block and the reduce-scatter (or all-reduce) leaving it, the block's TP
 * op, and the exposed time of a block whose collectives overlap its GEMMs (Megatron's
 * Transformer Engine userbuffers, torchtitan's async TP). Split from layer_recipe.c (issue 13:
 * small rooms); the formulas and their sources are unchanged: Korthikanti et al. 2022 Sec.
 * 4.2.2 for the collectives (two per direction, the same volume with and without SP),
 * overlap.h and async_tp.h for the overlaps; bw13 added the backward's asynchronous NCCL
 * collectives of Megatron without userbuffers (tp_nccl_block).
 */
#include "recipe_builder.h"

#include <math.h>

#include "async_tp.h"
#include "compute.h"
#include "overlap.h"

/* The bytes of a block's SP all-gather in `phase`: the quantized input of a TE Linear forward
 * (Transformer Engine linear.py / layernorm_linear.py _forward: the local input is quantized,
 * rowwise, and gather_along_first_dim runs with the quantizer, TE d0067d0), else ag_bytes. */
static double tp_gather_bytes(const rb_tp_ctx *c, recipe_phase phase)
{
    return phase != RECIPE_BWD && c->lp_block && c->ag_lp_bytes > 0 ? c->ag_lp_bytes
                                                                     : c->ag_bytes;
}

void rb_tp_enter(const rb_tp_ctx *c, int op, recipe_phase phase)
{
    double bytes = tp_gather_bytes(c, phase);
    if (c->l->tp > 1 && c->l->sp)
        rb_coll_item(c->b, op, phase, "tp.sp_gather", COLL_ALL_GATHER, bytes, RECIPE_GROUP_TP,
                  collective_time_s(c->b->sys, COLL_ALL_GATHER, bytes, c->g));
}

void rb_tp_leave(const rb_tp_ctx *c, int op, recipe_phase phase)
{
    if (c->l->tp > 1 && c->l->sp)
        rb_coll_item(c->b, op, phase, "tp.sp_reduce_scatter", COLL_REDUCE_SCATTER, c->act_bytes,
                  RECIPE_GROUP_TP,
                  collective_time_s(c->b->sys, COLL_REDUCE_SCATTER, c->act_bytes, c->g));
    else if (c->l->tp > 1)
        rb_coll_item(c->b, op, phase, "tp.all_reduce", COLL_ALL_REDUCE, c->act_bytes,
                  RECIPE_GROUP_TP,
                  collective_time_s(c->b->sys, COLL_ALL_REDUCE, c->act_bytes, c->g));
}

/* One block's TP op: enter + leave forward, the same backward (-1 without TP). */
int rb_tp_op(const rb_tp_ctx *c, const char *name)
{
    if (c->l->tp <= 1) return -1;
    double fwd_s = c->one_s;
    if (c->l->sp && tp_gather_bytes(c, RECIPE_FWD) != c->ag_bytes)
        fwd_s += collective_time_s(c->b->sys, COLL_ALL_GATHER, tp_gather_bytes(c, RECIPE_FWD),
                                   c->g) -
                 collective_time_s(c->b->sys, COLL_ALL_GATHER, c->ag_bytes, c->g);
    int op = rb_op_add(c->b, name, RECIPE_TP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                    RECIPE_OVERLAP_NONE, fwd_s, c->one_s);
    if (op >= 0)
        c->b->r->op[op].leave_fwd_s = collective_time_s(
            c->b->sys, c->l->sp ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE, c->act_bytes, c->g);
    return op;
}

/*
 * Megatron --tp-comm-overlap (Transformer Engine userbuffers, overlap.h): the exposed time of
 * one tensor-parallel block whose entering all-gather and leaving reduce-scatter hide behind
 * its Linears, as TE's default methods pair them. Forward: the all-gather of the input by ring
 * exchange inside the first GEMM (qkv_fprop / fc1_fprop, tp chunks), the reduce-scatter
 * pipelined after the last (proj_fprop / fc2_fprop, 4 chunks, 16 SMs). Backward: the output
 * gradient's all-gather by ring exchange inside the last GEMM's dgrad (proj_dgrad /
 * fc2_dgrad), the reduce-scatter of the first GEMM's input gradient in bulk beside its wgrad
 * (qkv_wgrad / fc1_wgrad, 16 SMs). The transfers are userbuffer copies over NVLink (copy
 * engines or SM kernels, no NCCL call): bytes (tp-1)/tp at the group's bus bandwidth plus one
 * hop latency per step. first: tokens x in -> n1; last: tokens x k2 -> out (hidden).
 */

static rb_tp_exposed tp_overlapped_block(const system_spec *sys, const layout *l, double tokens,
                                      double act_bytes, layout_group g, double in, double n1,
                                      double k2, double out)
{
    int tp = l->tp;
    double bw = collective_busbw_bytes_per_s(sys, g);
    double comm = act_bytes * (tp - 1) / tp / bw + (tp - 1) * sys->intra_latency_s;
    double slow = overlap_tp_sm_slowdown(sys);
    int ps = OVERLAP_TP_PIPELINE_SPLITS;
    /* the pipelined reduce-scatter runs one ring per chunk: each pays the tp-1 hops */
    double comm_ps = act_bytes * (tp - 1) / tp / bw + ps * (tp - 1) * sys->intra_latency_s;
    /* forward: first GEMM with ring-exchange all-gather, last with pipelined reduce-scatter */
    double f1 = compute_gemm_s(sys, tokens, n1, in);
    double f1c = tp * compute_gemm_s(sys, tokens / tp, n1, in);
    double f2 = compute_gemm_s(sys, tokens, out, k2);
    double f2c = ps * compute_gemm_s(sys, tokens / ps, out, k2) * slow;
    /* backward: the last GEMM's dgrad (tokens x out -> k2) with the ring exchange, the first
     * GEMM's wgrad beside the bulk reduce-scatter of its dgrad output */
    double d2 = compute_gemm_s(sys, tokens, k2, out);
    double d2c = tp * compute_gemm_s(sys, tokens / tp, k2, out);
    double w1 = compute_gemm_s(sys, in, n1, tokens);
    rb_tp_exposed e = {0};
    e.leave_fwd_s = overlap_tp_pipeline_s(f2, f2c, comm_ps, ps);
    e.fwd_s = overlap_tp_ring_exchange_s(f1, f1c, comm, tp) + e.leave_fwd_s;
    e.bwd_s = overlap_tp_ring_exchange_s(d2, d2c, comm, tp) + overlap_tp_bulk_s(w1, slow, comm);
    return e;
}

/*
 * Megatron without userbuffers (no --tp-comm-overlap, or a TP group TE's userbuffers cannot
 * reach): the SP collectives are NCCL calls, yet the column-parallel Linear's backward issues
 * two of them asynchronously. Transformer Engine (module/linear.py and layernorm_linear.py
 * backward, TE 366798e = Megatron-Bridge v0.4.2's: linear.py lines 668-671 and
 * layernorm_linear.py 685-688 gather the saved input for the wgrad GEMM with async_op=True
 * before the dgrad GEMM, "Tensor-parallel communication is overlapped with dgrad GEMM";
 * linear.py 748-751 / layernorm_linear.py 760-763 reduce-scatter the dgrad output with
 * async_op=True before the wgrad GEMM; the waits come after each GEMM, linear.py 774 and
 * 938-941; the same calls in TE v2.9, the 25.11 container's, and at 4220403, v0.5.0's) and
 * Megatron-Core's own Linear
 * (tensor_parallel/layers.py at d98e8a6 lines 675-710, LinearWithGradAccumulationAndAsync
 * Communication.backward) both do it. The row-parallel Linear's backward gathers its output
 * gradient synchronously first (TE base.py grad_output_preprocess, lines 1186-1233), so the
 * block's backward exposes that all-gather (quantized where TE quantizes it:
 * precision_tp_grad_gather_bytes; the op's items still say bf16), plus whatever of
 * the input all-gather outlasts the first Linear's dgrad GEMM and of the reduce-scatter
 * outlasts its wgrad GEMM, each pair slowed by NCCL's measured contention (overlap.h
 * OVERLAP_CONTENTION_AG_RS_*: H200s, bench/results/contention_2026-11-27; an ASSUMPTION on
 * other GPUs). The input is gathered in the layout's low-precision format where the forward's
 * is (TE passes the input quantizer to that gather, linear.py 668-673). The forward is
 * unchanged: both its collectives sit between the GEMMs that need them. Without SP see
 * tp_nccl_allreduce_block.
 */
static bool tp_nccl_backward_overlap_applies(const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && l->tp > 1 && l->sp;
}

/* Megatron with TP and without SP: the block's backward has one collective, the all-reduce of
 * the column-parallel Linear's input gradient, and both Megatron's own Linear and Transformer
 * Engine's issue it asynchronously before the wgrad GEMM and wait after it: Megatron-LM
 * megatron/core/tensor_parallel/layers.py at d98e8a6 lines 693-697 (`allreduce_dgrad`, set at
 * 1144-1146 for TP without SP); TE module/linear.py and layernorm_linear.py / layernorm_mlp.py
 * backward, `allreduce(dgrad, tp_group, async_op=True)` in the SP reduce-scatter's `else` branch
 * (the place tp_nccl_block cites); in 2022 megatron/mpu/layers.py at 9aad9203aa (the code of
 * Korthikanti et al. 2022) lines 277-283, default on (arguments.py
 * --no-async-tensor-model-parallel-allreduce). It came with 16c90445e7 (2021-09-02,
 * ColumnParallelLinearWithAsyncAllreduce); the code before it (SC'21's 6985e58) all-reduced
 * synchronously: training_spec.tp_dgrad_allreduce_sync keeps that. The row-parallel Linear's
 * backward has no collective, and the forward's all-reduce sits between the GEMMs that need
 * it, so what changes is the backward's all-reduce: what of it outlasts the wgrad GEMM, the
 * pair slowed by the same measured contention as the SP collectives (an all-reduce is a
 * reduce-scatter and an all-gather on the same channels; an ASSUMPTION, not measured as such).
 * Korthikanti et al. 2022 Table 4 (22B, TP 8, one layer) shows it: the backward with SP
 * (11.8 ms) is no faster than without (11.9 ms) although SP runs the layer norms and dropouts
 * on 1/8 of the tokens, which saves 0.5 ms of the 7.7 ms forward and twice that in the
 * backward; a synchronous all-reduce would have made the backward without SP ~1.3 ms slower
 * than with it (bench/results/sp20_2026-11-29). */
static bool tp_nccl_allreduce_applies(const rb_tp_ctx *c)
{
    const layout *l = c->l;
    return l->framework == FRAMEWORK_MEGATRON && l->tp > 1 && !l->sp && !c->dgrad_allreduce_sync;
}

/* Exposed time of `comm_s` issued beside a GEMM of `gemm_s`, both slowed by the contention. */
static double tp_nccl_beside_gemm_s(double gemm_s, double comm_s)
{
    double g, c;
    overlap_contended(gemm_s, comm_s, OVERLAP_CONTENTION_AG_RS_COMPUTE,
                      OVERLAP_CONTENTION_AG_RS_COMM, &g, &c);
    return fmax(g, c) - gemm_s;
}

static rb_tp_exposed tp_nccl_block(const builder *b, const rb_tp_ctx *c, double tokens,
                                   double in, double n1)
{
    const system_spec *sys = b->sys;
    double rs = collective_time_s(sys, COLL_REDUCE_SCATTER, c->act_bytes, c->g);
    double ag_x = collective_time_s(sys, COLL_ALL_GATHER, tp_gather_bytes(c, RECIPE_FWD), c->g);
    double dy_elem = precision_tp_grad_gather_bytes(c->l);
    double dy_bytes = c->lp_block && dy_elem > 0 ? c->act_bytes / 2.0 * dy_elem : c->ag_bytes;
    double ag_dy = collective_time_s(sys, COLL_ALL_GATHER, dy_bytes, c->g);
    double dgrad = rb_gemm_s(b, tokens, in, n1); /* tokens x n1 -> in */
    double wgrad = rb_gemm_s(b, in, n1, tokens); /* in x n1 over the tokens */
    rb_tp_exposed e = {0};
    e.leave_fwd_s = rs;
    e.fwd_s = ag_x + rs;
    e.nccl_bwd = true;
    e.dy_bytes = dy_bytes;
    e.dy_s = ag_dy;
    e.x_bytes = tp_gather_bytes(c, RECIPE_FWD);
    e.x_s = tp_nccl_beside_gemm_s(dgrad, ag_x);
    e.rs_s = tp_nccl_beside_gemm_s(wgrad, rs);
    e.bwd_s = e.dy_s + e.x_s + e.rs_s;
    return e;
}

static rb_tp_exposed tp_nccl_allreduce_block(const builder *b, const rb_tp_ctx *c,
                                             double tokens, double in, double n1)
{
    double ar = collective_time_s(b->sys, COLL_ALL_REDUCE, c->act_bytes, c->g);
    double wgrad = rb_gemm_s(b, in, n1, tokens); /* in x n1 over the tokens */
    rb_tp_exposed e = {0};
    e.fwd_s = c->one_s; /* the forward's all-reduce, between the GEMMs */
    e.leave_fwd_s = ar;
    e.nccl_ar_bwd = true;
    e.ar_s = tp_nccl_beside_gemm_s(wgrad, ar);
    e.bwd_s = e.ar_s;
    return e;
}

/* The items carry what the estimate counts (the backend's TP component equals the estimate's
 * exposed TP): the two asynchronous collectives their exposed part, so `plan measure`, which
 * runs each alone, measures them longer than predicted (it does not overlap them). */
void rb_tp_backward_items(const rb_tp_ctx *c, int op, const rb_tp_exposed *e)
{
    if (e && e->nccl_ar_bwd && c->l->tp > 1) {
        rb_coll_item(c->b, op, RECIPE_BWD, "tp.all_reduce", COLL_ALL_REDUCE, c->act_bytes,
                     RECIPE_GROUP_TP, e->ar_s);
        return;
    }
    if (!e || !e->nccl_bwd || c->l->tp <= 1) {
        rb_tp_enter(c, op, RECIPE_BWD);
        rb_tp_leave(c, op, RECIPE_BWD);
        return;
    }
    rb_coll_item(c->b, op, RECIPE_BWD, "tp.sp_gather", COLL_ALL_GATHER, e->dy_bytes,
                 RECIPE_GROUP_TP, e->dy_s);
    rb_coll_item(c->b, op, RECIPE_BWD, "tp.sp_gather_wgrad", COLL_ALL_GATHER, e->x_bytes,
                 RECIPE_GROUP_TP, e->x_s);
    rb_coll_item(c->b, op, RECIPE_BWD, "tp.sp_reduce_scatter", COLL_REDUCE_SCATTER, c->act_bytes,
                 RECIPE_GROUP_TP, e->rs_s);
}

/* Does l's TP overlap apply to the blocks of this layer (Megatron, tp > 1 with SP, the TP
 * group inside one NVLink domain, where userbuffers reach every peer)? */
static bool tp_overlap_applies(const layout *l, layout_group g)
{
    return l->tp_comm_overlap && l->framework == FRAMEWORK_MEGATRON && l->tp > 1 && l->sp &&
           !g.spans_nodes;
}

/* The exposed time of one TP block whose collectives overlap its GEMMs, into *e: Megatron's
 * userbuffers (tp_overlapped_block), Megatron's NCCL path (tp_nccl_block), or torchtitan's async TP (async_tp.h: Inductor's
 * micro-pipeline TP pass fuses three of the four collectives, each with tp chunk GEMMs in the
 * layout's number format; symmetric memory, so NVLink only). False where neither applies.
 * first: tokens x in -> n1; last: tokens x k2 -> out (hidden). */
bool rb_tp_block_overlap(const builder *b, const rb_tp_ctx *c, double tokens, double in,
                             double n1, double k2, double out, rb_tp_exposed *e)
{
    const layout *l = c->l;
    *e = (rb_tp_exposed){0};
    if (tp_overlap_applies(l, c->g)) {
        *e = tp_overlapped_block(b->sys, l, tokens, c->act_bytes, c->g, in, n1, k2, out);
        return true;
    }
    if (!async_tp_applies(l) || c->g.spans_nodes) {
        if (tp_nccl_allreduce_applies(c)) {
            *e = tp_nccl_allreduce_block(b, c, tokens, in, n1);
            return true;
        }
        if (!tp_nccl_backward_overlap_applies(l)) return false;
        *e = tp_nccl_block(b, c, tokens, in, n1);
        return true;
    }
    double rows = tokens / l->tp;
    /* the fused ops' tp chunk GEMMs (tokens / tp rows each) run below the whole GEMM's rate:
     * their last wave of tiles is partly empty (measured on an H200, GH100's 132 SMs, at the
     * TP 8 shard shapes of Llama-3.1-8B/70B: whole / chunks 0.926 median over bf16, float8
     * tensorwise and rowwise, bench/results/atp22_2026-11-29; absent: 1) */
    double ck = l->tp / (b->sys->tp_chunk_gemm_efficiency > 0 ? b->sys->tp_chunk_gemm_efficiency
                                                              : 1.0);
    async_tp_gemms gm = {
        rb_gemm_s(b, tokens, n1, in),  ck * rb_gemm_s(b, rows, n1, in),
        rb_gemm_s(b, tokens, out, k2), ck * rb_gemm_s(b, rows, out, k2),
        rb_gemm_s(b, tokens, k2, out), ck * rb_gemm_s(b, rows, k2, out),
    };
    async_tp_exposed x = async_tp_block(b->sys, l, c->g, tokens * out, &gm);
    e->fwd_s = x.fwd_s;
    e->bwd_s = x.bwd_s;
    e->leave_fwd_s = x.fwd_leave_s;
    return true;
}

/* torchtitan's per-op SAC re-runs a block's SP all-gather in the backward (recipe_recompute.c).
 * Under async TP Inductor's micro-pipeline pass fuses that gather, in the backward graph too,
 * with the matmuls that take the gathered input as their first operand and are re-run: the
 * recomputed wk (n1_re = the KV width / tp) or w3 (ffn / tp), not the whole first GEMM of the
 * forward; the wgrads read the gathered input transposed and are not fused. The op's
 * sac_enter_s gets that fused gather's exposed time (async_tp_block with the smaller GEMM). */
void rb_tp_sac_regather(const builder *b, const rb_tp_ctx *c, int op, double tokens, double in,
                        double n1_re, double k2, double out)
{
    rb_tp_exposed e;
    if (op < 0 || !async_tp_applies(c->l) || c->g.spans_nodes ||
        !rb_tp_block_overlap(b, c, tokens, in, n1_re, k2, out, &e))
        return;
    b->r->op[op].sac_enter_s = e.fwd_s - e.leave_fwd_s;
}
