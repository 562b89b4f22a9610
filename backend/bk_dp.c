/*
 * bk_dp.c — plan measure's data-parallel unit traffic and FSDP2's copies (moved out of
 * bk_step.c, which issues them): per layer unit (index j within the stage; kind 0 dense, 1 MoE)
 * the all-gather of its parameters and the reduction of its gradients over the data-parallel
 * group (and a Megatron MoE layer's experts over the expert-dp group), FSDP2's copy-in,
 * copy-out and reduce-scatter copy-in (fsdp_copies.h: the list the estimate prices, with
 * PyTorch's kernels for them; torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py), torch
 * pipelining's fp32 gradient sums between its one gather and one reduction a step, and the
 * stage's root unit. Each launches on the streams it is given and waits for nothing.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bk_run.h"
#include "fsdp_copies.h"

/* ---- data-parallel unit traffic ----------------------------------------------------------- */


/* Gather layer j's (index within the stage) parameters on stream set `streams`. */
cm_status bk_dp_gather(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                           size_t errlen)
{
    const work_plan *w = x->w;
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t cnt = x->pools.unit_cnt[kind], shard = cnt * 2;
    EACH_DEV
    {
        int rank = x->grp[GROUP_DP].rank_of[d];
        if (w->fsdp) {
            r[d] = x->commbuf[d] + x->pools.gbuf_off[j % 2];
            /* FSDP2 gathers in place over the chunk its copy-in wrote */
            s[d] = x->fsdp2_copies ? (char *)r[d] + rank * shard
                                   : bk_carve(x->state[d], x->pools.w_bytes, shard,
                                              (size_t)j * shard);
        } else { /* in place in the bf16 model weights */
            r[d] = bk_carve(x->state[d], x->pools.w_bytes, shard * g, (size_t)j * shard * g);
            s[d] = (char *)r[d] + rank * shard;
        }
    }
    BK_TRY(bk_group_coll(x, GROUP_DP, w->gather_op, cnt * g * 2, false, streams, s, r, err,
                         errlen));
    size_t ge = (size_t)x->grp[GROUP_EDP].size;
    if (kind && !w->fsdp && x->pools.ecnt && ge > 1) { /* expert weights over expert-dp */
        size_t es = x->pools.ecnt * 2;
        EACH_DEV
        {
            r[d] = bk_carve(x->state[d], x->pools.w_bytes, es * ge,
                            (size_t)j * es * ge + shard * g);
            s[d] = (char *)r[d] + x->grp[GROUP_EDP].rank_of[d] * es;
        }
        BK_TRY(bk_group_coll(x, GROUP_EDP, w->gather_op, x->pools.ecnt * ge * 2, false, streams, s,
                          r, err, errlen));
    }
    return CM_OK;
}

cm_status bk_dp_reduce(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                           size_t errlen)
{
    const work_plan *w = x->w;
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t cnt = x->pools.unit_cnt[kind], shard = cnt * x->pools.red_esz;
    EACH_DEV
    {
        int rank = x->grp[GROUP_DP].rank_of[d];
        char *grads = x->grads[d];
        if (w->fsdp) {
            s[d] = x->commbuf[d] + x->pools.rbuf_off[j % 2];
            r[d] = bk_carve(grads, x->pools.g_bytes, shard, (size_t)j * shard);
        } else { /* in place in the gradient buffer */
            s[d] = bk_carve(grads, x->pools.g_bytes, shard * g, (size_t)j * shard * g);
            r[d] = w->reduce_op == COLL_ALL_REDUCE ? s[d] : (char *)s[d] + rank * shard;
        }
    }
    BK_TRY(bk_group_coll(x, GROUP_DP, w->reduce_op, shard * g, x->pools.red_esz == 4, streams, s, r,
                      err, errlen));
    size_t ge = (size_t)x->grp[GROUP_EDP].size;
    if (kind && !w->fsdp && x->pools.ecnt && ge > 1) {
        size_t es = x->pools.ecnt * x->pools.red_esz;
        EACH_DEV
        {
            char *grads = x->grads[d];
            s[d] = bk_carve(grads, x->pools.g_bytes, es * ge, (size_t)j * es * ge + shard * g);
            r[d] = w->reduce_op == COLL_ALL_REDUCE
                       ? s[d]
                       : (char *)s[d] + x->grp[GROUP_EDP].rank_of[d] * es;
        }
        BK_TRY(bk_group_coll(x, GROUP_EDP, w->reduce_op, es * ge, x->pools.red_esz == 4, streams, s,
                             r, err, errlen));
    }
    return CM_OK;
}

/* ---- FSDP2's copies (fsdp_copies.h: the list the estimate prices, run with PyTorch's kernels
 * for them) ------------------------------------------------------------------------------------ */

/* The copies of a unit of cnt elements per rank. */
static void unit_copies(const bk_run *x, size_t cnt, fsdp_copies *fc)
{
    int g = x->grp[GROUP_DP].size > 1 ? x->grp[GROUP_DP].size : 1;
    fsdp_copies_unit((double)cnt * g, g, fc);
}

/* All-gather copy-in of a unit of cnt elements per rank: the fp32 shard (carved at src_slot)
 * cast into the flat bf16 buffer, then copied into this rank's slot of the all-gather buffer at
 * dst_off, which the gather then runs in place over (the two foreach copies). */
cm_status bk_copy_in(bk_run *x, size_t cnt, size_t src_slot, size_t dst_off,
                         cudaStream_t *streams, char *err, size_t errlen)
{
    fsdp_copies fc;
    unit_copies(x, cnt, &fc);
    bkk_ew ci = bk_ew_kernel(&fc.cast_in.access), si = bk_ew_kernel(&fc.slot_in.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        const char *shard = bk_carve(x->state[d], x->pools.w_bytes, 4 * cnt, src_slot);
        char *flat = x->commbuf[d] + x->pools.cin_off;
        char *slot = x->commbuf[d] + dst_off + (size_t)x->grp[GROUP_DP].rank_of[d] * 2 * cnt;
        CUDA_TRY(bkk_ew_launch(&ci, flat, shard, NULL, NULL, x->c->sms, streams[d]));
        CUDA_TRY(bkk_ew_launch(&si, slot, flat, NULL, NULL, x->c->sms, streams[d]));
    }
    return CM_OK;
}

/* Layer unit j's (kind: dense 0, MoE 1) all-gather copy-in. */
cm_status bk_fsdp2_copy_in(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                               size_t errlen)
{
    size_t n = x->pools.unit_cnt[kind];
    return bk_copy_in(x, n, (size_t)j * 4 * n, x->pools.gbuf_off[j % 2], streams, err, errlen);
}

/* Copy-out: the gathered unit into the unsharded parameters (split_with_sizes_copy); a layer
 * unit's from gbuf[j % 2] into its unsharded buffer, the current stage's root unit from the root
 * buffer into the activation pool's y region (sized for it). */
cm_status bk_fsdp2_copy_out(bk_run *x, int j, int kind, bool root, cudaStream_t *streams,
                                char *err, size_t errlen)
{
    size_t n = root ? root_cnt(x, stage_of(x, x->dlo)) : x->pools.unit_cnt[kind];
    fsdp_copies fc;
    unit_copies(x, n, &fc);
    bkk_ew co = bk_ew_kernel(&fc.copy_out.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        const char *src = x->commbuf[d] + (root ? x->pools.root_off : x->pools.gbuf_off[j % 2]);
        char *dst = root ? x->act[d] + x->pools.y_off : x->commbuf[d] + x->pools.ggrad_off[j % 2];
        CUDA_TRY(bkk_ew_launch(&co, dst, src, NULL, NULL, x->c->sms, streams[d]));
    }
    return CM_OK;
}

/* The fp32 accumulator of a unit of cnt elements per rank at acc_slot (fsdp2_acc): its slot of
 * the gradient region, which the estimate sizes as the stage's unsharded fp32 gradients under
 * torch pipelining (memory.c: FSDP2's unsharded accumulator). */
static char *acc_buf(bk_run *x, int d, size_t cnt, size_t acc_slot)
{
    size_t g = (size_t)(x->grp[GROUP_DP].size > 1 ? x->grp[GROUP_DP].size : 1);
    return bk_carve(x->grads[d], x->pools.g_bytes, 4 * cnt * g, acc_slot);
}

/* Reduce-scatter copy-in of layer unit j (chunk_cat) into the reduce buffer rbuf[j % 2]: its bf16
 * gradients cast to fp32; under fsdp2_acc its fp32 sum copied (fsdp_copies.h rs_copy). */
cm_status bk_fsdp2_rs_copy_in(bk_run *x, int j, int kind, cudaStream_t *streams, char *err,
                                  size_t errlen)
{
    fsdp_copies fc;
    size_t cnt = x->pools.unit_cnt[kind];
    unit_copies(x, cnt, &fc);
    bkk_ew rc = bk_ew_kernel(x->fsdp2_acc ? &fc.rs_copy.access : &fc.rs_cast.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        const char *src = x->fsdp2_acc ? acc_buf(x, d, cnt, (size_t)j * 4 * cnt)
                                       : x->commbuf[d] + x->pools.ggrad_off[j % 2];
        CUDA_TRY(bkk_ew_launch(&rc, x->commbuf[d] + x->pools.rbuf_off[j % 2], src, NULL, NULL,
                               x->c->sms, streams[d]));
    }
    return CM_OK;
}

/* torch pipelining's no-sync backward (fsdp_copies.h; FSDP2 _fsdp_param.py
 * to_accumulated_grad_if_needed / accumulate_unsharded_grad_if_needed): the unit's unsharded
 * bf16 gradient cast into its fp32 accumulator in the first micro-batch, added into it after. */
cm_status bk_fsdp2_grad_acc(bk_run *x, size_t cnt, bool first, size_t src_off, size_t acc_slot,
                            cudaStream_t *streams, char *err, size_t errlen)
{
    fsdp_copies fc;
    unit_copies(x, cnt, &fc);
    bkk_ew k = bk_ew_kernel(first ? &fc.acc_cast.access : &fc.acc_add.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        char *acc = acc_buf(x, d, cnt, acc_slot);
        const char *grad = x->commbuf[d] + src_off;
        /* acc_add: out = the fp32 sum, a = the same sum, b = the bf16 gradient */
        CUDA_TRY(first ? bkk_ew_launch(&k, acc, grad, NULL, NULL, x->c->sms, streams[d])
                       : bkk_ew_launch(&k, acc, acc, grad, NULL, x->c->sms, streams[d]));
    }
    return CM_OK;
}

/* The FSDP root unit (embedding + output layer) of the current stage: gathered once per step
 * (under FSDP2 at each forward and again before the output layer's backward, with its copy-in
 * first: the gather then runs in place over this rank's slot), its gradients reduced in chunks
 * of a unit buffer after the backward. Non-FSDP: the root's gradients in place. */
cm_status bk_root_gather(bk_run *x, cudaStream_t *streams, char *err, size_t errlen)
{
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t rc = root_cnt(x, stage_of(x, x->dlo));
    if (x->fsdp2_copies) BK_TRY(bk_copy_in(x, rc, 0, x->pools.root_off, streams, err, errlen));
    EACH_DEV
    {
        r[d] = x->commbuf[d] + x->pools.root_off;
        s[d] = x->fsdp2_copies ? (char *)r[d] + (size_t)x->grp[GROUP_DP].rank_of[d] * rc * 2
                               : bk_carve(x->state[d], x->pools.w_bytes, rc * 2, 0);
    }
    return bk_group_coll(x, GROUP_DP, COLL_ALL_GATHER, rc * g * 2, false, streams, s, r, err,
                      errlen);
}

cm_status bk_root_reduce(bk_run *x, cudaStream_t *streams, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    size_t g = (size_t)x->grp[GROUP_DP].size;
    double total = root_cnt(x, stage_of(x, x->dlo)) * (double)g * x->pools.red_esz;
    size_t chunk = x->pools.unit_cnt[0] * g * x->pools.red_esz;
    if (!w->fsdp) {
        /* whole per-rank chunks, in-place offsets exact */
        size_t unit = g * x->pools.red_esz * 256;
        chunk = (size_t)fmin((double)x->pools.g_bytes, total);
        chunk -= chunk % unit;
    }
    if (chunk == 0) return CM_OK;
    int pieces = (int)ceil(total / chunk);
    for (int i = 0; i < pieces; i++) {
        void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
        size_t shard = chunk / g;
        if (x->fsdp2_copies) {
            /* FSDP2: the piece's chunk_cat on the compute stream once the previous reduction
             * out of the buffer is done, the reduction after it */
            DEV(cudaStreamWaitEvent(x->c->compute[d], x->ev_rdone[d][0], 0));
            BK_TRY(bk_fsdp2_rs_copy_in(x, 0, 0, x->c->compute, err, errlen));
            DEV(cudaEventRecord(x->ev_bw[d], x->c->compute[d]));
            DEV(cudaStreamWaitEvent(streams[d], x->ev_bw[d], 0));
        }
        EACH_DEV
        {
            int rank = x->grp[GROUP_DP].rank_of[d];
            char *grads = x->grads[d];
            if (w->fsdp) {
                s[d] = x->commbuf[d] + x->pools.rbuf_off[0];
                r[d] = bk_carve(grads, x->pools.g_bytes, shard, (size_t)i * shard);
            } else {
                s[d] = bk_carve(grads, x->pools.g_bytes, chunk, 0);
                r[d] = w->reduce_op == COLL_ALL_REDUCE ? s[d] : (char *)s[d] + rank * shard;
            }
        }
        BK_TRY(bk_group_coll(x, GROUP_DP, w->reduce_op, chunk, x->pools.red_esz == 4, streams, s, r,
                          err, errlen));
        if (x->fsdp2_copies) DEV(cudaEventRecord(x->ev_rdone[d][0], streams[d]));
    }
    return CM_OK;
}

