/*
 * bk_step.c — issuing one training step of a plan onto the GPUs' streams (bk_run.h): what runs,
 * on which stream, after which event. Nothing here waits for a GPU: one host thread enqueues
 * every GPU's work (in Megatron rank order: tp innermost, then cp, dp, and pp outermost, so
 * stage s owns devices s*S .. s*S+S-1), and bk_measure.c times it with the timing engine.
 * The data-parallel unit traffic and FSDP2's copies it issues are launched by bk_dp.c.
 *
 * What runs, per GPU:
 *  - operands carved out of the pools (bk_pools.h): activations in the activation pool's x, y
 *    and z regions, weights and gradients in the state pool (FSDP: the gathered unit buffers and
 *    unsharded gradient buffers of the communication pool).
 *  - each stage's forward and backward chunks in its 1F1B (or interleaved 1F1B) order
 *    (work_pp_schedule): a forward runs the chunk's layers' forward items of work.h on the
 *    compute stream (cuBLAS GEMMs, FP8 ones for a --precision fp8 layout's Linears, attention as batched GEMMs, elementwise work as the kernels
 *    PyTorch runs for it, TP/SP collectives, Ulysses all-to-alls and MoE dispatch/combine
 *    all-to-alls, exposed in the compute stream; Megatron's ring-attention K/V exchanges on a
 *    ring stream beside the attention core, as Transformer Engine runs them), the output layer
 *    and loss after the last stage's last chunk; a backward the reverse. Without a pipeline
 *    this is micro-batch after micro-batch.
 *  - pipeline transfers: after a chunk, its activations (or input gradients) go to the next
 *    (previous) stage with a grouped ncclSend/ncclRecv on a per-direction p2p stream of each
 *    GPU; the receiver's compute stream waits on an event recorded after the receive, and the
 *    receive waits until the receiver has consumed the slot's previous content. Every GPU's
 *    work is issued onto its own streams in schedule order and cross-stage dependencies are
 *    events: the host never blocks inside the schedule. The host's issue order across stages is
 *    work_pp_issue_order's (an op goes out once its input transfer has). Under the
 *    non-interleaved schedule a sender's compute stream waits for its send to finish, as
 *    Megatron's blocking send_forward / send_backward do; interleaved sends overlap compute
 *    (Megatron's overlap_p2p_comm). The bubble is therefore measured, not assumed.
 *  - data-parallel traffic on the communication stream, overlapped as the frameworks overlap
 *    it: FSDP gathers the next unit while the current one computes (prefetch one ahead, two
 *    unit buffers), gathers again in backward when reshard_after_forward, and reduce-scatters
 *    each unit's gradients as soon as its backward is done (two gradient buffers); Megatron's
 *    distributed optimizer gathers parameters per bucket ahead of the first micro-batch's
 *    forward and reduces gradients per bucket (= layer) in the last micro-batch's backward;
 *    DDP all-reduces the buckets the same way. MoE layers reduce their expert weights over the
 *    expert-data-parallel group, the rest over dp*cp.
 *  - the optimizer: a fused Adam kernel over this GPU's shard (fp32 param, grad, m, v).
 *  - elementwise work as the kernel PyTorch runs for it (the item's access pattern, elementwise.h;
 *    kernels_ew.cu): vectorized, cast, per-element-offset (broadcast, strided), cat, reductions and
 *    softmax kernels over operands in the activation pool, so that the step runs at the framework's
 *    kernel efficiency, not at an ideal copy's.
 *  - under torch FSDP2, the copies its all-gather and reduce-scatter paths make (fsdp_copies.h, the
 *    list the estimate prices; torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py), with
 *    PyTorch's kernels for them: per all-gather the copy-in (the fp32 shard cast into a flat bf16
 *    buffer, then into this rank's slot of the all-gather buffer: two foreach copies, on the
 *    communication stream ahead of the gather) and the copy-out (split_with_sizes_copy of the
 *    gathered unit, compute stream); per reduce-scatter the copy-in (chunk_cat of the bf16
 *    gradients into the fp32 buffer, compute stream). The root unit too: FSDP2 gathers it at each
 *    forward (and, resharded, again before the output layer's backward) and chunk_cats its
 *    gradients before reducing them. Reported as their own component (WC_FRAMEWORK). On one GPU
 *    FSDP2 runs no collective and none of these: there its unshard's cast and copy, chunk_cat and
 *    the one-rank reduce-scatter's fp32 copy are the layer's and the head's items (the recipe's,
 *    recipe_fsdp.c rb_fsdp_copies), issued in the lists on the compute stream.
 * Spans of the instrumented step (bk_instrument.c) are marked around chunks, sends, collectives
 * and (for a trace) items as they are issued.
 *
 * Host pacing (issue 14; x->pace, plan measure --host-pace): a real eager step cannot issue a
 * kernel before Python, the dispatcher, autograd and FSDP2's hooks have done their work for
 * it, so where the cost model prices that host work (work_plan.host_priced) the issuing thread
 * spends the same time before each item: the host time the model's issue queue charges the
 * item's launches (work_item.host_s, from costmodel/host_dispatch.c), each layer unit's FSDP2
 * launches, and the optimizer's host work after its kernel (a floor: the step ends when both
 * the GPU and the host are done, as the estimate's max(GPU, host)). It spins on the monotonic
 * clock (sleeping would oversleep by tens of microseconds); the backend's own issue time counts
 * towards each wait, so the pace is the model's and not the model's plus the backend's. Where the
 * model's queue has the host wait for the GPU (torchtitan EP's split sizes after the router:
 * work_item.host_sync), a paced step drains the compute streams there and paces on from then;
 * so it does before the optimizer of a torchtitan layout (the clip's float(norm),
 * work_plan.host_sync_clip).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bk_run.h"
#include "fsdp_copies.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The host's s seconds of work before what is issued next: the issue point moves s past the
 * last one, and the thread spins until the clock gets there (if its own work took longer, the
 * point is now). */
static void bk_pace(bk_run *x, double s)
{
    if (!x->pace || s <= 0) return;
    double target = x->pace_t + s, t = mono_s();
    while (t < target) t = mono_s();
    x->pace_t = t > target ? t : target;
}

/* The host waits for the GPU (a device-to-host copy whose value it needs: torchtitan EP's split
 * sizes, work_item.host_sync): each GPU's compute stream drained, and the host's issue point is
 * now. Its lead over the GPU is gone, so the items after it reach the GPU at the host's pace, as
 * the cost model's issue queue prices them (host_dispatch.c q_sync). */
static cm_status bk_host_sync(bk_run *x, char *err, size_t errlen)
{
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        CUDA_TRY(cudaStreamSynchronize(x->c->compute[d]));
    }
    x->pace_t = mono_s();
    return CM_OK;
}

/* A pointer to `need` bytes inside [base, base+size), placed by `slot` (wraps around). */
char *bk_carve(char *base, size_t size, size_t need, size_t slot)
{
    if (need > size) return base; /* sizes are checked when the pools are sized */
    size_t room = size - need;
    size_t off = room ? (slot % (room + 1)) & ~(size_t)255 : 0;
    return base + off;
}

/* One collective over every instance of group G whose devices are in [dlo, dhi), on the given
 * streams (per device), with send/recv arrays indexed by device. */
cm_status bk_group_coll(bk_run *x, work_group G, collective_op op, size_t bytes, bool fp32,
                            cudaStream_t *streams, void **send, void **recv, char *err,
                            size_t errlen)
{
    group_set *g = &x->grp[G];
    if (g->size < 2 || bytes == 0) return CM_OK;
    NCCL_TRY(ncclGroupStart());
    for (int k = 0; k < g->n; k++) {
        if (g->dev[k][0] < x->dlo || g->dev[k][0] >= x->dhi) continue;
        cudaStream_t s[BK_MAX_GPUS];
        void *sb[BK_MAX_GPUS], *rb[BK_MAX_GPUS];
        for (int r = 0; r < g->size; r++) {
            int d = g->dev[k][r];
            s[r] = streams[d];
            sb[r] = send[d];
            rb[r] = recv[d];
        }
        cm_status st = bk_coll_launch(op, g->size, g->comm[k], s, sb, rb, bytes, fp32, err, errlen);
        if (st != CM_OK) {
            ncclGroupEnd();
            return st;
        }
    }
    NCCL_TRY(ncclGroupEnd());
    return CM_OK;
}

/* ---- one item on the current devices --------------------------------------------------- */

typedef struct {
    int layer;   /* which layer's weights and gradient slices (index within the stage) */
    int buf;     /* FSDP unit buffer (layer % 2) */
    bool head;   /* the output layer: weights of the root unit */
    const int *rows; /* the per-expert loop's row counts of this pass (bk_loop.c); NULL: the
                        balanced count */
} item_ctx;

/* One blockwise FP8 item (--fp8-recipe blockwise): e4m3 operands K-major as for per-tensor FP8,
 * A's scales per 1x128 block, B's per 128x128 block (fwd, dgrad: B is the weight) or per 1x128
 * block (wgrad); the scale tensors come from the context's pool (their values do not change the
 * time). A batch (grouped expert GEMMs) runs as that many GEMMs, as batch 1 is what cuBLASLt's
 * block scaling takes here. */
static cm_status launch_block(bk_ctx *c, int d, const work_item *it, const char *A,
                              const char *B, char *C, char *err, size_t errlen)
{
    long m = bk_fp8_dim(it->m), n = bk_fp8_dim(it->n), k = bk_fp8_dim(it->k);
    bool blk = it->form != GEMM_WGRAD;
    size_t sa = (bk_block_scale_floats(false, m, k) + 63) / 64 * 64;
    float *sc;
    BK_TRY(bk_block_scales(c, d, sa + bk_block_scale_floats(blk, n, k), &sc, err, errlen));
    int scaling = blk ? BK_SCALE_BLOCK_1x128_128x128 : BK_SCALE_BLOCK_1x128_1x128;
    for (int b = 0; b < it->batch; b++)
        BK_TRY(bk_gemm_launch_fp8_block(c, d, scaling, m, n, k, A + (size_t)b * m * k,
                                        B + (size_t)b * n * k, sc, sc + sa,
                                        C + 2 * (size_t)b * m * n, err, errlen));
    return CM_OK;
}

static cm_status exec_item(bk_run *x, const work_item *it, item_ctx ic, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    double p = w->layer_params;
    if (it->kind == WORK_GEMM) {
        EACH_DEV
        {
            CUDA_TRY(cudaSetDevice(x->c->dev[d]));
            char *A = x->act[d] + x->pools.x_off, *B, *C;
            if (it->weight_operand) {
                size_t nb = bk_gemm_b_bytes(it);
                if (w->fsdp && w->dp_active)
                    B = ic.head ? x->commbuf[d] + x->pools.root_off
                                : x->commbuf[d] + x->pools.gbuf_off[ic.buf];
                else
                    B = bk_carve(x->state[d], x->pools.w_bytes, nb,
                             ic.head ? (size_t)(w->layers * 2.0 * p)
                                     : (size_t)(ic.layer * 2.0 * p));
            } else {
                B = x->act[d] + x->pools.z_off;
            }
            if (bk_item_weight_grad(it)) {
                size_t nc = bk_gemm_c_bytes(it);
                if (w->fsdp && w->dp_active && !ic.head)
                    C = x->commbuf[d] + x->pools.ggrad_off[ic.buf];
                else
                    C = bk_carve(x->grads[d], x->pools.g_bytes, nc,
                              ic.head ? (size_t)(w->layers * x->pools.red_esz * p)
                                      : (size_t)(ic.layer * x->pools.red_esz * p));
            } else {
                C = x->act[d] + x->pools.y_off;
            }
            if (it->fp8_block) {
                BK_TRY(launch_block(x->c, d, it, A, B, C, err, errlen));
            } else if (it->fp8) {
                /* FP8: e4m3 operands read from the same regions (their bf16 fill is valid e4m3
                 * too, kernels.cu), every form in the K-major layout whose transposed copies
                 * the recipe's lp.quantize kernels make; sizes padded to multiples of 16 as
                 * Transformer Engine pads FP8 GEMM operands (Fp8Padding; the pools hold the
                 * padded operands, bk_pools.c) */
                BK_TRY(bk_gemm_launch_fp8(x->c, d, bk_fp8_dim(it->m), bk_fp8_dim(it->n),
                                          bk_fp8_dim(it->k), it->batch, A, B,
                                          x->c->fp8_scale[d],
                                          x->c->fp8_scale[d] + BK_FP8_SCALE_STRIDE, C, err,
                                          errlen));
            } else if (it->looped && it->batch > 1 && ic.rows) {
                BK_TRY(bk_loop_launch(x, d, d == (x->dlo > x->olo ? x->dlo : x->olo), it,
                                      ic.rows, A, B, C, err, errlen));
            } else if (it->looped && it->batch > 1) {
                /* a kernel per expert (torchtitan's per-expert loop): the batch's GEMMs one by
                 * one, each on its own slice (A m*k, B n*k, C m*n elements in every form) */
                size_t sa = 2 * (size_t)it->m * (size_t)it->k, sb = 2 * (size_t)it->n * (size_t)it->k,
                       sc = 2 * (size_t)it->m * (size_t)it->n;
                for (int b = 0; b < it->batch; b++)
                    BK_TRY(bk_gemm_launch(x->c, d, it->form, (long)it->m, (long)it->n,
                                          (long)it->k, 1, A + b * sa, B + b * sb, C + b * sc, err,
                                          errlen));
            } else {
                BK_TRY(bk_gemm_launch(x->c, d, it->form, (long)it->m, (long)it->n, (long)it->k,
                                      it->batch, A, B, C, err, errlen));
            }
        }
    } else if (it->kind == WORK_STREAM && it->param_operands) {
        /* FSDP2's one-GPU unit copies (the unshard's cast and copy, chunk_cat, the one-rank
         * reduce-scatter's copy): from the weights, into the gradients, each a unit's
         * parameters in size (bk_pools.c sizes both regions for the largest) */
        bkk_ew e = bk_ew_kernel(&it->access);
        EACH_DEV
        {
            CUDA_TRY(cudaSetDevice(x->c->dev[d]));
            const ew_access *a = &it->access;
            size_t in = (size_t)ew_operand_elems(a, 1) * (size_t)a->esize[1];
            size_t out = (size_t)ew_operand_elems(a, 0) * (size_t)a->esize[0];
            size_t slot = (size_t)(ic.head ? w->layers : ic.layer) * out;
            CUDA_TRY(bkk_ew_launch(&e, bk_carve(x->grads[d], x->pools.g_bytes, out, slot),
                                   bk_carve(x->state[d], x->pools.persist_bytes, in, slot), NULL,
                                   NULL, x->c->sms, x->c->compute[d]));
        }
    } else if (it->kind == WORK_STREAM) {
        /* the kernel PyTorch runs for it: a from x, b from z, the output (and any scratch) in y */
        bkk_ew e = bk_ew_kernel(&it->access);
        EACH_DEV
        {
            CUDA_TRY(cudaSetDevice(x->c->dev[d]));
            char *y = x->act[d] + x->pools.y_off;
            CUDA_TRY(bkk_ew_launch(&e, y, x->act[d] + x->pools.x_off, x->act[d] + x->pools.z_off,
                                   y + x->pools.y_ws, x->c->sms, x->c->compute[d]));
        }
    } else {
        void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
        OWNED {
            s[d] = x->act[d] + x->pools.x_off;
            r[d] = x->act[d] + x->pools.y_off;
        }
        BK_TRY(bk_group_coll(x, it->group, it->op, (size_t)it->bytes, it->fp32, x->c->compute, s, r,
                          err, errlen));
    }
    return CM_OK;
}

/* One ring exchange on the ring streams, from and into the ring's own buffers (the attention
 * core computing beside it uses x, y and z). */
static cm_status ring_launch(bk_run *x, const work_item *it, char *err, size_t errlen)
{
    void *sb[BK_MAX_GPUS], *rb[BK_MAX_GPUS];
    size_t half = x->pools.cp_sz / 2;
    OWNED {
        sb[d] = x->act[d] + x->pools.cp_off;
        rb[d] = x->act[d] + x->pools.cp_off + half;
    }
    return bk_group_coll(x, it->group, it->op, (size_t)it->bytes, it->fp32, x->cps, sb, rb, err,
                      errlen);
}

/* A list on the current stage; with item tracing, one span per item on stage s. Megatron's
 * ring exchanges (ring_item) go to the ring streams, forked from the compute stream at the
 * first and joined back before the first item that is neither an exchange nor attention. */
static cm_status exec_list(bk_run *x, int s, const work_list *l, item_ctx ic, int gl, int mb,
                           int chunk, char *err, size_t errlen)
{
    bool ring_open = false;
    bk_pace(x, l->host_lead_s);
    for (int i = 0; i < l->n; i++) {
        const work_item *it = &l->item[i];
        bk_pace(x, it->host_s);
        if (ring_item(x, it)) {
            if (!ring_open) {
                DEV(cudaEventRecord(x->ev_cp0[d], x->c->compute[d]));
                DEV(cudaStreamWaitEvent(x->cps[d], x->ev_cp0[d], 0));
                ring_open = true;
            }
            int j0 = -1;
            if (x->inst_items) BK_TRY(bk_span_begin(x, s, x->cps, &j0, err, errlen));
            BK_TRY(ring_launch(x, it, err, errlen));
            if (x->inst_items)
                BK_TRY(bk_span_end(x, s, x->cps, j0, TRACE_TID_COLL, it->name, mb, chunk, gl, false,
                                   err, errlen));
            continue;
        }
        if (ring_open && it->component != WC_ATTENTION) {
            DEV(cudaEventRecord(x->ev_cp1[d], x->cps[d]));
            DEV(cudaStreamWaitEvent(x->c->compute[d], x->ev_cp1[d], 0));
            ring_open = false;
        }
        int i0 = -1;
        if (x->inst_items) BK_TRY(bk_span_begin(x, s, x->c->compute, &i0, err, errlen));
        BK_TRY(exec_item(x, it, ic, err, errlen));
        if (x->inst_items)
            BK_TRY(bk_span_end(x, s, x->c->compute, i0, TRACE_TID_COMPUTE, it->name, mb, chunk, gl,
                               false, err, errlen));
        if (it->host_sync && x->pace) BK_TRY(bk_host_sync(x, err, errlen));
    }
    if (ring_open) {
        DEV(cudaEventRecord(x->ev_cp1[d], x->cps[d]));
        DEV(cudaStreamWaitEvent(x->c->compute[d], x->ev_cp1[d], 0));
    }
    return CM_OK;
}

static bool layer_moe(const bk_run *x, int gl) { return x->w->moe && gl >= x->w->first_moe_layer; }

static cm_status adam(bk_run *x, char *err, size_t errlen)
{
    EACH_DEV
    {
        size_t n = (size_t)x->w->stage_optimizer_params[stage_of(x, d)];
        if (x->P == 1) n = (size_t)x->w->stage_optimizer_params[0];
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        /* param, m and v from the persistent part's start, the gradients at the phase region's
         * end (bk_pools.h sizes both for it); Megatron's bf16 copy in the phase region before
         * the gradients, whose activations are freed by now */
        float *base = (float *)x->state[d], *grad = (float *)x->grads[d];
        void *copy = x->w->optimizer_bf16_copy &&
                             x->pools.g_off - x->pools.act_off >= 2 * n ? x->act[d] : NULL;
        CUDA_TRY(bkk_adam(base, grad, base + n, base + 2 * n, copy, n, x->c->sms,
                          x->c->compute[d]));
        /* the bytes torch's clip and AdamW move beyond the fused kernel's: fp32 read + write
         * passes over the gradient shard, in place (its values do not matter) */
        double left = x->w->optimizer_extra_bytes_per_param * (double)n / 8;
        while (left >= 1) {
            long k = (long)fmin(left, (double)n);
            ew_access a = {.pattern = EW_VECTORIZED, .esize = {4, 4, 0}, .n = {1, 1, k}};
            a.stride[0][2] = a.stride[1][2] = 1;
            bkk_ew e = bk_ew_kernel(&a);
            CUDA_TRY(bkk_ew_launch(&e, grad, grad, NULL, NULL, x->c->sms,
                                   x->c->compute[d]));
            left -= (double)k;
        }
    }
    return CM_OK;
}

static cm_status issue_gather(bk_run *x, int s, int j, int gl, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    int i0;
    if (x->w->fsdp) DEV(cudaStreamWaitEvent(c->comm[d], x->ev_used[d][j % 2], 0));
    BK_TRY(bk_span_begin(x, s, c->comm, &i0, err, errlen));
    if (x->fsdp2_copies) BK_TRY(bk_fsdp2_copy_in(x, j, layer_moe(x, gl), c->comm, err, errlen));
    BK_TRY(bk_dp_gather(x, j, layer_moe(x, gl), c->comm, err, errlen));
    char nm[40];
    snprintf(nm, sizeof nm, "AG layer %d", gl);
    BK_TRY(bk_span_end(x, s, c->comm, i0, TRACE_TID_COLL, nm, -1, -1, gl, false, err, errlen));
    DEV(cudaEventRecord(x->ev_gath[d][j % 2], c->comm[d]));
    return CM_OK;
}

/* FSDP2's unshard of stage s's root unit: once the compute stream is done with the root buffer,
 * the gather (with its copy-in) on the communication stream, the compute stream waiting for it
 * (nothing to hide it behind), then the copy-out. */
static cm_status root_unshard(bk_run *x, int s, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    int i0;
    DEV(cudaEventRecord(x->ev_rfree[d], c->compute[d]));
    DEV(cudaStreamWaitEvent(c->comm[d], x->ev_rfree[d], 0));
    BK_TRY(bk_span_begin(x, s, c->comm, &i0, err, errlen));
    BK_TRY(bk_root_gather(x, c->comm, err, errlen));
    BK_TRY(bk_span_end(x, s, c->comm, i0, TRACE_TID_COLL, "AG root", -1, -1, -1, false, err,
                       errlen));
    DEV(cudaEventRecord(x->ev_root[d], c->comm[d]));
    DEV(cudaStreamWaitEvent(c->compute[d], x->ev_root[d], 0));
    return bk_fsdp2_copy_out(x, 0, 0, true, c->compute, err, errlen);
}

/* ---- one chunk of one stage --------------------------------------------------------------- */

/* The layers of chunk op->chunk of stage s, forward or backward, for one micro-batch, with the
 * output layer on the last stage's last chunk and the data-parallel traffic around them. */
static cm_status run_chunk(bk_run *x, int s, const work_pp_op *op, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    int first = work_chunk_first_layer(w, s, op->chunk);
    int L = work_chunk_layer_count(w, s, op->chunk);
    int local0 = w->vpp > 1 ? op->chunk * w->chunk_layers : 0;
    bool head = s == w->pp - 1 && op->chunk == w->vpp - 1;
    /* FSDP2 over a one-rank mesh beside TP or PP: its copies, the collectives skipped
     * (group_coll); on one GPU its copies are the lists' items (w->fsdp2_copy_items) and dp
     * is off */
    bool dp = w->dp_active && (x->grp[GROUP_DP].size > 1 || x->fsdp2_copies);
    int mb = op->microbatch, micro = w->microbatches;
    int ch = w->vpp > 1 ? op->chunk : -1;
    item_ctx hc = {.layer = w->stage_layers[s], .buf = 0, .head = true};
    if (!op->backward) {
        bool G = dp && w->gather_bytes > 0 && (w->gather_each_micro || mb == 0);
        DEV(cudaEventRecord(x->ev_used[d][0], c->compute[d]));
        DEV(cudaEventRecord(x->ev_used[d][1], c->compute[d]));
        bool RU = dp && x->fsdp2_copies && op->chunk == 0 && root_cnt(x, s) > 0 &&
                  (w->gather_each_micro || mb == 0);
        /* FSDP2: at every forward (torch pipelining: the first micro-batch's) */
        if (RU) BK_TRY(root_unshard(x, s, err, errlen));
        if (s == 0 && op->chunk == 0) bk_pace(x, w->host_pre_fwd_s);
        if (G) BK_TRY(issue_gather(x, s, local0, first, err, errlen));
        for (int i = 0; i < L; i++) {
            int j = local0 + i, gl = first + i;
            bk_pace(x, w->host_gather_fwd_s[layer_moe(x, gl)]);
            if (G && i + 1 < L) BK_TRY(issue_gather(x, s, j + 1, gl + 1, err, errlen));
            if (G) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_gath[d][j % 2], 0));
            if (G && x->fsdp2_copies)
                BK_TRY(bk_fsdp2_copy_out(x, j, layer_moe(x, gl), false, c->compute, err, errlen));
            item_ctx ic = {.layer = j, .buf = j % 2, .head = false,
                           .rows = layer_moe(x, gl) ? bk_loop_draw(x, gl, mb) : NULL};
            BK_TRY(exec_list(x, s, layer_moe(x, gl) ? &w->moe_fwd : &w->layer_fwd, ic, gl, mb, ch,
                             err, errlen));
            DEV(cudaEventRecord(x->ev_used[d][j % 2], c->compute[d]));
        }
        if (head) BK_TRY(exec_list(x, s, &w->head_fwd, hc, -1, mb, ch, err, errlen));
        return CM_OK;
    }
    /* FSDP2 resharded the root after forward: gathered again for the output layer's backward
     * (on the first stage of a pipeline, for the embedding's, after the layers) */
    bool RB = dp && x->fsdp2_copies && w->gather_in_bwd && root_cnt(x, s) > 0;
    if (head && RB) BK_TRY(root_unshard(x, s, err, errlen));
    if (head) BK_TRY(exec_list(x, s, &w->head_bwd, hc, -1, mb, ch, err, errlen));
    bool GB = dp && w->fsdp && w->gather_in_bwd;
    bool R = dp && (w->reduce_each_micro || mb == micro - 1);
    DEV(cudaEventRecord(x->ev_used[d][0], c->compute[d]));
    DEV(cudaEventRecord(x->ev_used[d][1], c->compute[d]));
    if (GB) BK_TRY(issue_gather(x, s, local0 + L - 1, first + L - 1, err, errlen));
    for (int i = L - 1; i >= 0; i--) {
        int j = local0 + i, gl = first + i;
        bk_pace(x, w->host_gather_bwd_s[layer_moe(x, gl)]);
        if (GB && i - 1 >= 0) BK_TRY(issue_gather(x, s, j - 1, gl - 1, err, errlen));
        if (GB) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_gath[d][j % 2], 0));
        if (GB && x->fsdp2_copies)
            BK_TRY(bk_fsdp2_copy_out(x, j, layer_moe(x, gl), false, c->compute, err, errlen));
        if (R && w->fsdp) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_rdone[d][j % 2], 0));
        item_ctx ic = {.layer = j, .buf = j % 2, .head = false,
                       .rows = layer_moe(x, gl) ? bk_loop_rows(x, gl, mb) : NULL};
        BK_TRY(exec_list(x, s, layer_moe(x, gl) ? &w->moe_bwd : &w->layer_bwd, ic, gl, mb, ch, err,
                         errlen));
        if (dp && x->fsdp2_acc) { /* the unit's bf16 gradient into its fp32 sum */
            size_t n = x->pools.unit_cnt[layer_moe(x, gl)];
            BK_TRY(bk_fsdp2_grad_acc(x, n, mb == 0, x->pools.ggrad_off[j % 2], (size_t)j * 4 * n,
                                     c->compute, err, errlen));
        }
        DEV(cudaEventRecord(x->ev_used[d][j % 2], c->compute[d]));
        bk_pace(x, w->host_reduce_s[layer_moe(x, gl)]);
        if (R) {
            int i0;
            /* FSDP2's chunk_cat runs on the compute stream, before the reduce-scatter stream
             * waits for it (foreach_reduce) */
            if (x->fsdp2_copies)
                BK_TRY(bk_fsdp2_rs_copy_in(x, j, layer_moe(x, gl), c->compute, err, errlen));
            DEV(cudaEventRecord(x->ev_bw[d], c->compute[d]));
            DEV(cudaStreamWaitEvent(c->comm[d], x->ev_bw[d], 0));
            BK_TRY(bk_span_begin(x, s, c->comm, &i0, err, errlen));
            BK_TRY(bk_dp_reduce(x, j, layer_moe(x, gl), c->comm, err, errlen));
            char nm[40];
            snprintf(nm, sizeof nm, "%s layer %d", w->reduce_op == COLL_ALL_REDUCE ? "AR" : "RS",
                     gl);
            BK_TRY(bk_span_end(x, s, c->comm, i0, TRACE_TID_COLL, nm, -1, -1, gl, false, err,
                               errlen));
            DEV(cudaEventRecord(x->ev_rdone[d][j % 2], c->comm[d]));
        }
    }
    if (s == 0 && op->chunk == 0) bk_pace(x, w->host_tail_bwd_s);
    if (RB && !head && s == 0 && op->chunk == 0) BK_TRY(root_unshard(x, s, err, errlen));
    if (dp && x->fsdp2_acc && op->chunk == 0 && root_cnt(x, s) > 0) /* the root unit's sum */
        BK_TRY(bk_fsdp2_grad_acc(x, root_cnt(x, s), mb == 0, x->pools.root_off,
                                 (size_t)w->stage_layers[s] * 4 * x->pools.unit_cnt[0], c->compute,
                                 err, errlen));
    if (R && op->chunk == 0 && root_cnt(x, s) > 0) {
        int i0;
        DEV(cudaEventRecord(x->ev_bw[d], c->compute[d]));
        DEV(cudaStreamWaitEvent(c->comm[d], x->ev_bw[d], 0));
        BK_TRY(bk_span_begin(x, s, c->comm, &i0, err, errlen));
        BK_TRY(bk_root_reduce(x, c->comm, err, errlen));
        BK_TRY(bk_span_end(x, s, c->comm, i0, TRACE_TID_COLL,
                           w->reduce_op == COLL_ALL_REDUCE ? "AR root" : "RS root", -1, -1, -1,
                           false, err, errlen));
    }
    return CM_OK;
}

/* ---- pipeline transfers ------------------------------------------------------------------- */

/* One grouped send/recv of p2p_sz bytes per column from stage `from` to stage `to`: sends on
 * the senders' streams ss, receives into slot on the receivers' streams rs. */
static cm_status p2p_launch(bk_run *x, int dir, int from, int to, int slot, cudaStream_t *ss,
                            cudaStream_t *rs, char *err, size_t errlen)
{
    size_t count = x->pools.p2p_sz / 2;
    NCCL_TRY(ncclGroupStart());
    for (int col = 0; col < x->S; col++) {
        int sd = from * x->S + col, rd = to * x->S + col;
        /* Each side is launched by the process that drives its GPU. */
        ncclResult_t r1 = bk_owns(x->c, sd) ? ncclSend(send_buf(x, dir, sd), count, ncclBfloat16,
                                                       to, x->ppc[dir][col][from], ss[sd])
                                            : ncclSuccess;
        ncclResult_t r2 = r1 == ncclSuccess && bk_owns(x->c, rd)
                              ? ncclRecv(recv_buf(x, dir, rd, slot), count, ncclBfloat16, from,
                                         x->ppc[dir][col][to], rs[rd])
                              : r1;
        if (r1 != ncclSuccess || r2 != ncclSuccess) {
            ncclGroupEnd();
            return cm_fail(err, errlen, CM_EIO, "%s failed: %s (%s:%d)",
                           r1 != ncclSuccess ? "ncclSend (pipeline)" : "ncclRecv (pipeline)",
                           ncclGetErrorString(r1 != ncclSuccess ? r1 : r2), __FILE__, __LINE__);
        }
    }
    NCCL_TRY(ncclGroupEnd());
    return CM_OK;
}

/* Issue op k of stage s: wait for its input, run it, send its output. */
static cm_status issue_op(bk_run *x, int s, const work_pp_op *op, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    work_pp_link k = work_pp_links(x->P, w->vpp, s, op);
    int in_slot = -1;
    set_stage(x, s);
    if (k.from_stage >= 0) {
        in_slot = x->used[s][k.dir] % x->nslots;
        DEV(cudaStreamWaitEvent(c->compute[d], x->ev_recv[k.dir][d][in_slot], 0));
    }
    int i0;
    BK_TRY(bk_span_begin(x, s, c->compute, &i0, err, errlen));
    BK_TRY(run_chunk(x, s, op, err, errlen));
    char nm[40];
    if (w->vpp > 1)
        snprintf(nm, sizeof nm, "%c%d (chunk %d)", op->backward ? 'B' : 'F', op->microbatch,
                 op->chunk);
    else
        snprintf(nm, sizeof nm, "%c%d", op->backward ? 'B' : 'F', op->microbatch);
    BK_TRY(bk_span_end(x, s, c->compute, i0, TRACE_TID_COMPUTE, nm, op->microbatch,
                       w->vpp > 1 ? op->chunk : -1, -1, true, err, errlen));
    int opmark = x->inst ? x->nmarks - 1 : -1;
    if (k.from_stage >= 0) {
        DEV(cudaEventRecord(x->ev_cons[k.dir][d][in_slot], c->compute[d]));
        x->used[s][k.dir]++;
    }
    if (k.to_stage >= 0) {
        int r = k.to_stage, slot = x->made[r][k.dir] % x->nslots;
        cudaStream_t *ps = x->ps[k.dir];
        DEV(cudaEventRecord(x->ev_done[d], c->compute[d]));
        DEV(cudaStreamWaitEvent(ps[d], x->ev_done[d], 0));
        set_stage(x, r); /* the receive waits until the slot's previous content was consumed */
        DEV(cudaStreamWaitEvent(ps[d], x->ev_cons[k.dir][d][slot], 0));
        set_stage(x, s);
        int j0;
        BK_TRY(bk_span_begin(x, s, ps, &j0, err, errlen));
        BK_TRY(p2p_launch(x, k.dir, s, r, slot, ps, ps, err, errlen));
        snprintf(nm, sizeof nm, "send %c%d", op->backward ? 'B' : 'F', op->microbatch);
        if (w->vpp > 1) {
            size_t n = strlen(nm);
            snprintf(nm + n, sizeof nm - n, " (chunk %d)", op->chunk);
        }
        BK_TRY(bk_span_end(x, s, ps, j0, k.dir ? TRACE_TID_SEND_BWD : TRACE_TID_SEND_FWD, nm,
                           op->microbatch, w->vpp > 1 ? op->chunk : -1, -1, false, err, errlen));
        DEV(cudaEventRecord(x->ev_sent[k.dir][d], ps[d]));
        set_stage(x, r);
        DEV(cudaEventRecord(x->ev_recv[k.dir][d][slot], ps[d]));
        set_stage(x, s);
        x->made[r][k.dir]++;
        if (w->vpp == 1) { /* Megatron's non-interleaved sends block the compute stream */
            DEV(cudaStreamWaitEvent(c->compute[d], x->ev_sent[k.dir][d], 0));
            int td = trace_dev(x, s);
            if (opmark >= 0 && bk_owns(c, td)) {
                int iw;
                BK_TRY(bk_mark(x, td, c->compute[td], &iw, err, errlen));
                x->marks[opmark].wait = iw;
            }
        }
    }
    return CM_OK;
}

/* ---- one step -------------------------------------------------------------------------------- */

cm_status bk_step_issue(bk_run *x, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    bool dp = w->dp_active && x->grp[GROUP_DP].size > 1;
    set_all(x);
    x->pace_t = mono_s();
    /* The communication and p2p streams start with the step (e0, on the compute streams). */
    DEV(cudaStreamWaitEvent(c->comm[d], x->e0[d], 0));
    DEV(cudaEventRecord(x->ev_rdone[d][0], c->comm[d]));
    DEV(cudaEventRecord(x->ev_rdone[d][1], c->comm[d]));
    if (x->P > 1)
        for (int dir = 0; dir < 2; dir++) DEV(cudaStreamWaitEvent(x->ps[dir][d], x->e0[d], 0));
    memset(x->made, 0, sizeof x->made);
    memset(x->used, 0, sizeof x->used);
    if (dp && w->fsdp && !x->fsdp2_copies) { /* FSDP2: root_unshard at each forward */
        for (int s = 0; s < x->P; s++) {
            int i0;
            set_stage(x, s);
            BK_TRY(bk_span_begin(x, s, c->comm, &i0, err, errlen));
            BK_TRY(bk_root_gather(x, c->comm, err, errlen));
            BK_TRY(bk_span_end(x, s, c->comm, i0, TRACE_TID_COLL, "AG root", -1, -1, -1, false, err,
                               errlen));
        }
        set_all(x);
        DEV(cudaEventRecord(x->ev_root[d], c->comm[d]));
        DEV(cudaStreamWaitEvent(c->compute[d], x->ev_root[d], 0));
    }
    for (int i = 0; i < x->norder; i++) {
        int s = x->order[i].stage;
        BK_TRY(issue_op(x, s, &x->sched[(size_t)s * x->per + x->order[i].index], err, errlen));
    }
    /* Join the communication and p2p streams, then the optimizer. */
    set_all(x);
    DEV(cudaEventRecord(x->ev_join[d], c->comm[d]));
    DEV(cudaStreamWaitEvent(c->compute[d], x->ev_join[d], 0));
    if (x->P > 1)
        for (int dir = 0; dir < 2; dir++) {
            DEV(cudaEventRecord(x->ev_pjoin[dir][d], x->ps[dir][d]));
            DEV(cudaStreamWaitEvent(c->compute[d], x->ev_pjoin[dir][d], 0));
        }
    /* torchtitan layouts: the clip's float(norm) makes the host wait for the whole backward
     * before the optimizer's host work (work_plan.host_sync_clip) */
    if (w->host_sync_clip && x->pace) BK_TRY(bk_host_sync(x, err, errlen));
    double t0 = x->pace_t, host_opt = 0;
    for (int s = 0; s < x->P; s++) {
        int i0;
        set_stage(x, s);
        BK_TRY(bk_span_begin(x, s, c->compute, &i0, err, errlen));
        bk_pace(x, w->host_optimizer_pre_s[s]);
        if (s == 0) t0 = x->pace_t;
        BK_TRY(adam(x, err, errlen));
        BK_TRY(bk_span_end(x, s, c->compute, i0, TRACE_TID_COMPUTE, "optimizer", -1, -1, -1, false,
                           err, errlen));
        host_opt = fmax(host_opt, w->host_optimizer_s[s]);
    }
    /* clip + AdamW's host time from the kernels' issue on (a floor under their GPU time); the
     * stages' hosts run theirs side by side, so the longest */
    x->pace_t = t0;
    bk_pace(x, host_opt);
    set_all(x);
    return CM_OK;
}

/* ---- one launch alone ------------------------------------------------------------------ */

cm_status bk_step_alone(bk_run *x, iso_kind k, const work_item *it, bool head, int kind,
                        char *err, size_t errlen)
{
    item_ctx ic = {.layer = 0, .buf = 0, .head = head};
    set_all(x);
    switch (k) {
    case ISO_ITEM: return exec_item(x, it, ic, err, errlen);
    case ISO_GATHER: return bk_dp_gather(x, 0, kind, x->c->compute, err, errlen);
    case ISO_REDUCE: return bk_dp_reduce(x, 0, kind, x->c->compute, err, errlen);
    case ISO_ADAM: return adam(x, err, errlen);
    /* FSDP2's copies of a layer unit (kind 0 dense, 1 MoE) or of stage 0's root unit (kind 2;
     * its reduce-scatter copy-in: one unit-sized piece) */
    case ISO_COPY_IN:
        if (kind == 2)
            return bk_copy_in(x, root_cnt(x, 0), 0, x->pools.root_off, x->c->compute, err, errlen);
        return bk_fsdp2_copy_in(x, 0, kind, x->c->compute, err, errlen);
    case ISO_COPY_OUT:
        return bk_fsdp2_copy_out(x, 0, kind % 2, kind == 2, x->c->compute, err, errlen);
    case ISO_COPY_REDUCE: return bk_fsdp2_rs_copy_in(x, 0, kind % 2, x->c->compute, err, errlen);
    case ISO_P2P: return p2p_launch(x, 0, 0, 1, 0, x->c->compute, x->c->compute, err, errlen);
    case ISO_ACC_CAST: /* torch pipelining's fp32 gradient sum of a unit (fsdp2_acc) */
    case ISO_ACC_ADD: {
        size_t n = kind == 2 ? root_cnt(x, 0) : x->pools.unit_cnt[kind];
        size_t src = kind == 2 ? x->pools.root_off : x->pools.ggrad_off[0];
        return bk_fsdp2_grad_acc(x, n, k == ISO_ACC_CAST, src, 0, x->c->compute, err, errlen);
    }
    }
    return CM_OK;
}
