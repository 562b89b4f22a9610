/*
 * bk_measure.c — execute one training step of a plan on the local GPUs and time it.
 *
 * What runs (per GPU, one host thread enqueuing for all GPUs in Megatron rank order):
 *  - the plan's memory, allocated as three pools per GPU sized by the cost model's breakdown:
 *    state (weights + gradients + optimizer states), activations, communication buffers
 *    (gathered FSDP units, unsharded gradient buffers, the FSDP root unit). Operands are carved
 *    out of the pools, so a plan that does not fit fails on allocation, as the trainer would.
 *    Where an operand needs more room than the plan's pool (tiny models), the pool grows and the
 *    growth is reported as extra_bytes.
 *  - per micro-batch, per layer, the forward items then (layers reversed) the backward items of
 *    work.h on the compute stream: cuBLAS GEMMs, attention as batched GEMMs, elementwise work as
 *    a copy of the modelled bytes, TP/SP/CP collectives (exposed, in the compute stream).
 *  - data-parallel traffic on the communication stream, overlapped as the frameworks overlap
 *    it: FSDP gathers the next unit while the current one computes (prefetch one ahead, two
 *    unit buffers), gathers again in backward when reshard_after_forward, and reduce-scatters
 *    each unit's gradients as soon as its backward is done (two gradient buffers); Megatron's
 *    distributed optimizer gathers parameters per bucket ahead of the first micro-batch's
 *    forward and reduces gradients per bucket (= layer) in the last micro-batch's backward;
 *    DDP all-reduces the buckets the same way.
 *  - the optimizer: a fused Adam kernel over this GPU's shard (fp32 param, grad, m, v).
 *  - under torch FSDP2, the copies its all-gather and reduce-scatter paths make (torch/distributed/
 *    fsdp/_fully_shard/_fsdp_collectives.py): all-gather copy-in (the fp32 shard cast to bf16 into
 *    the all-gather buffer, communication stream), copy-out (the gathered bf16 unit into the
 *    unsharded parameters, compute stream), reduce-scatter copy-in (bf16 gradients cast to the
 *    fp32 reduce buffer, communication stream). The cost model does not price them; they are
 *    reported as their own component (WC_FRAMEWORK) with no prediction.
 * Not run (stated by `plan measure`): the embedding lookup, pipeline send/recv and bubble (one
 * stage is measured), HSDP's replicate all-reduce.
 *
 * Timing: one warm-up step, then `steps` timed steps (CUDA events on every GPU, slowest GPU,
 * median). Then each distinct item alone (same launch on every GPU, back-to-back repeats,
 * median), which gives the per-component times.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_internal.h"
#include "kernels.h"

#define GiB 1073741824.0
#define ALIGN(x) (((x) + 255) & ~(size_t)255)

typedef struct {
    int n;                     /* instances */
    int size;                  /* ranks per instance */
    int dev[BK_MAX_GPUS][BK_MAX_GPUS];    /* [instance][rank] -> device index */
    ncclComm_t comm[BK_MAX_GPUS][BK_MAX_GPUS];
    int rank_of[BK_MAX_GPUS]; /* device index -> rank in its instance */
} group_set;

typedef struct {
    bk_ctx *c;
    const work_plan *w;
    int nd;                    /* devices used */
    group_set grp[GROUP_COUNT];
    /* pools per device */
    char *state[BK_MAX_GPUS], *act[BK_MAX_GPUS], *commbuf[BK_MAX_GPUS];
    size_t state_bytes, act_bytes, comm_bytes;
    size_t w_bytes, g_bytes;   /* weights and gradients parts of the state pool */
    /* activation regions (offsets in act) */
    size_t x_off, x_sz, y_off, y_sz, z_off, z_sz;
    /* communication buffers (offsets in commbuf), FSDP */
    size_t root_off, root_sz, gbuf_off[2], gbuf_sz, ggrad_off[2], ggrad_sz, rbuf_off[2], rbuf_sz;
    size_t unit_cnt;           /* elements per rank of a layer unit (ceil(p / g)) */
    size_t root_cnt;
    size_t red_esz;            /* bytes per element of the gradient reduction */
    bool fsdp2_copies;         /* run FSDP2's copy-in / copy-out kernels */
    cudaEvent_t ev_used[BK_MAX_GPUS][2], ev_gath[BK_MAX_GPUS][2], ev_rdone[BK_MAX_GPUS][2];
    cudaEvent_t ev_bw[BK_MAX_GPUS], ev_join[BK_MAX_GPUS], ev_root[BK_MAX_GPUS];
    cudaEvent_t e0[BK_MAX_GPUS], e1[BK_MAX_GPUS];
} M;

/* A pointer to `need` bytes inside [base, base+size), placed by `slot` (wraps around). */
static char *carve(char *base, size_t size, size_t need, size_t slot)
{
    if (need > size) return base; /* sizes are checked when the pools are sized */
    size_t room = size - need;
    size_t off = room ? (slot % (room + 1)) & ~(size_t)255 : 0;
    return base + off;
}

static cm_status make_groups(M *x, const layout *l, int dpl, char *err, size_t errlen)
{
    int tp = l->tp, cp = l->cp;
    group_set *g;
    /* TP: for each (cp, dp) the tp ranks */
    g = &x->grp[GROUP_TP];
    g->size = tp;
    for (int d = 0; d < dpl; d++)
        for (int c = 0; c < cp; c++) {
            int k = g->n++;
            for (int t = 0; t < tp; t++) {
                g->dev[k][t] = work_rank(l, t, c, d);
                g->rank_of[work_rank(l, t, c, d)] = t;
            }
        }
    g = &x->grp[GROUP_CP];
    g->size = cp;
    for (int d = 0; d < dpl; d++)
        for (int t = 0; t < tp; t++) {
            int k = g->n++;
            for (int c = 0; c < cp; c++) {
                g->dev[k][c] = work_rank(l, t, c, d);
                g->rank_of[work_rank(l, t, c, d)] = c;
            }
        }
    g = &x->grp[GROUP_DP]; /* gradients and FSDP shards: dp x cp ranks with the same tp index */
    g->size = cp * dpl;
    for (int t = 0; t < tp; t++) {
        int k = g->n++;
        int r = 0;
        for (int d = 0; d < dpl; d++)
            for (int c = 0; c < cp; c++) {
                g->dev[k][r] = work_rank(l, t, c, d);
                g->rank_of[work_rank(l, t, c, d)] = r;
                r++;
            }
    }
    for (int G = 0; G < GROUP_COUNT; G++) {
        g = &x->grp[G];
        if (g->size < 2) continue;
        for (int k = 0; k < g->n; k++) {
            int devs[BK_MAX_GPUS];
            for (int r = 0; r < g->size; r++) devs[r] = x->c->dev[g->dev[k][r]];
            NCCL_TRY(ncclCommInitAll(g->comm[k], g->size, devs));
        }
    }
    return CM_OK;
}

static void destroy_groups(M *x)
{
    for (int G = 0; G < GROUP_COUNT; G++) {
        group_set *g = &x->grp[G];
        if (g->size < 2) continue;
        for (int k = 0; k < g->n; k++)
            for (int r = 0; r < g->size; r++)
                if (g->comm[k][r]) ncclCommDestroy(g->comm[k][r]);
    }
}

/* One collective over every instance of group G, on the given streams (per device), buffers
 * chosen per device by the callback-free convention: send/recv arrays indexed by device. */
static cm_status group_coll(M *x, work_group G, collective_op op, size_t bytes, bool fp32,
                            cudaStream_t *streams, void **send, void **recv, char *err,
                            size_t errlen)
{
    group_set *g = &x->grp[G];
    if (g->size < 2 || bytes == 0) return CM_OK;
    NCCL_TRY(ncclGroupStart());
    for (int k = 0; k < g->n; k++) {
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

/* ---- buffers for one item on device d --------------------------------------------------- */

static bool is_weight_grad(const work_item *it)
{
    return it->kind == WORK_GEMM && it->form == GEMM_WGRAD && it->component == WC_GEMM;
}

static size_t gemm_a_bytes(const work_item *it) { return (size_t)(2.0 * it->m * it->k * it->batch); }
static size_t gemm_b_bytes(const work_item *it) { return (size_t)(2.0 * it->n * it->k * it->batch); }
static size_t gemm_c_bytes(const work_item *it) { return (size_t)(2.0 * it->m * it->n * it->batch); }

typedef struct {
    int layer;   /* which layer's weights and gradient slices */
    int buf;     /* FSDP unit buffer (layer % 2) */
    bool head;   /* the output layer: weights of the root unit */
} item_ctx;

static cm_status exec_item(M *x, const work_item *it, item_ctx ic, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    int nd = x->nd;
    double p = w->layer_params;
    if (it->kind == WORK_GEMM) {
        for (int d = 0; d < nd; d++) {
            CUDA_TRY(cudaSetDevice(x->c->dev[d]));
            char *A = x->act[d] + x->x_off, *B, *C;
            if (it->weight_operand) {
                size_t nb = gemm_b_bytes(it);
                if (w->fsdp && w->dp_active)
                    B = ic.head ? x->commbuf[d] + x->root_off
                                : x->commbuf[d] + x->gbuf_off[ic.buf];
                else
                    B = carve(x->state[d], x->w_bytes, nb,
                              ic.head ? (size_t)(w->layers * 2.0 * p) : (size_t)(ic.layer * 2.0 * p));
            } else {
                B = x->act[d] + x->z_off;
            }
            if (is_weight_grad(it)) {
                size_t nc = gemm_c_bytes(it);
                if (w->fsdp && w->dp_active && !ic.head)
                    C = x->commbuf[d] + x->ggrad_off[ic.buf];
                else
                    C = carve(x->state[d] + x->w_bytes, x->g_bytes, nc,
                              ic.head ? (size_t)(w->layers * x->red_esz * p)
                                      : (size_t)(ic.layer * x->red_esz * p));
            } else {
                C = x->act[d] + x->y_off;
            }
            BK_TRY(bk_gemm_launch(x->c, d, it->form, (long)it->m, (long)it->n, (long)it->k,
                                  it->batch, A, B, C, err, errlen));
        }
    } else if (it->kind == WORK_STREAM) {
        size_t half = (size_t)(it->bytes / 2);
        for (int d = 0; d < nd; d++) {
            CUDA_TRY(cudaSetDevice(x->c->dev[d]));
            CUDA_TRY(bkk_stream_copy(x->act[d] + x->y_off, x->act[d] + x->x_off, half, x->c->sms,
                                     x->c->compute[d]));
        }
    } else {
        void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
        for (int d = 0; d < nd; d++) {
            s[d] = x->act[d] + x->x_off;
            r[d] = x->act[d] + x->y_off;
        }
        BK_TRY(group_coll(x, it->group, it->op, (size_t)it->bytes, it->fp32, x->c->compute, s, r,
                          err, errlen));
    }
    return CM_OK;
}

static cm_status exec_list(M *x, const work_list *l, item_ctx ic, char *err, size_t errlen)
{
    for (int i = 0; i < l->n; i++) BK_TRY(exec_item(x, &l->item[i], ic, err, errlen));
    return CM_OK;
}

/* ---- data-parallel unit traffic ----------------------------------------------------------- */

/* Gather layer j's parameters on stream set `streams`. */
static cm_status dp_gather(M *x, int j, cudaStream_t *streams, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t shard = x->unit_cnt * 2;
    for (int d = 0; d < x->nd; d++) {
        int rank = x->grp[GROUP_DP].rank_of[d];
        if (w->fsdp) {
            r[d] = x->commbuf[d] + x->gbuf_off[j % 2];
            /* FSDP2 gathers in place over the chunk its copy-in wrote */
            s[d] = x->fsdp2_copies ? (char *)r[d] + rank * shard
                                   : carve(x->state[d], x->w_bytes, shard, (size_t)j * shard);
        } else { /* in place in the bf16 model weights */
            r[d] = carve(x->state[d], x->w_bytes, shard * g, (size_t)j * shard * g);
            s[d] = (char *)r[d] + rank * shard;
        }
    }
    return group_coll(x, GROUP_DP, w->gather_op, x->unit_cnt * g * 2, false, streams, s, r, err,
                      errlen);
}

static cm_status dp_reduce(M *x, int j, cudaStream_t *streams, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t shard = x->unit_cnt * x->red_esz;
    for (int d = 0; d < x->nd; d++) {
        int rank = x->grp[GROUP_DP].rank_of[d];
        char *grads = x->state[d] + x->w_bytes;
        if (w->fsdp) {
            s[d] = x->commbuf[d] + x->rbuf_off[j % 2];
            r[d] = carve(grads, x->g_bytes, shard, (size_t)j * shard);
        } else { /* in place in the gradient buffer */
            s[d] = carve(grads, x->g_bytes, shard * g, (size_t)j * shard * g);
            r[d] = w->reduce_op == COLL_ALL_REDUCE ? s[d] : (char *)s[d] + rank * shard;
        }
    }
    return group_coll(x, GROUP_DP, w->reduce_op, shard * g, x->red_esz == 4, streams, s, r, err,
                      errlen);
}

/* The FSDP root unit (embedding + output layer): one gather per step, its gradients reduced in
 * chunks of a unit buffer after the backward. Non-FSDP: the root's gradients in place. */
static cm_status root_gather(M *x, cudaStream_t *streams, char *err, size_t errlen)
{
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    for (int d = 0; d < x->nd; d++) {
        s[d] = carve(x->state[d], x->w_bytes, x->root_cnt * 2, 0);
        r[d] = x->commbuf[d] + x->root_off;
    }
    return group_coll(x, GROUP_DP, COLL_ALL_GATHER, x->root_cnt * g * 2, false, streams, s, r, err,
                      errlen);
}

static cm_status root_reduce(M *x, cudaStream_t *streams, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    size_t g = (size_t)x->grp[GROUP_DP].size;
    double total = x->root_cnt * (double)g * x->red_esz; /* bytes of root gradients */
    size_t chunk = x->unit_cnt * g * x->red_esz;
    if (!w->fsdp) {
        size_t unit = g * x->red_esz * 256; /* whole per-rank chunks, in-place offsets exact */
        chunk = (size_t)fmin((double)x->g_bytes, total);
        chunk -= chunk % unit;
    }
    if (chunk == 0) return CM_OK;
    int pieces = (int)ceil(total / chunk);
    for (int i = 0; i < pieces; i++) {
        void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
        size_t shard = chunk / g;
        for (int d = 0; d < x->nd; d++) {
            int rank = x->grp[GROUP_DP].rank_of[d];
            char *grads = x->state[d] + x->w_bytes;
            if (w->fsdp) {
                s[d] = x->commbuf[d] + x->rbuf_off[0];
                r[d] = carve(grads, x->g_bytes, shard, (size_t)i * shard);
            } else {
                s[d] = carve(grads, x->g_bytes, chunk, 0);
                r[d] = w->reduce_op == COLL_ALL_REDUCE ? s[d] : (char *)s[d] + rank * shard;
            }
        }
        BK_TRY(group_coll(x, GROUP_DP, w->reduce_op, chunk, x->red_esz == 4, streams, s, r, err,
                          errlen));
    }
    return CM_OK;
}

static cm_status adam(M *x, char *err, size_t errlen)
{
    size_t n = (size_t)x->w->optimizer_params;
    for (int d = 0; d < x->nd; d++) {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        float *base = (float *)x->state[d];
        void *copy = x->w->optimizer_bf16_copy && x->act_bytes >= 2 * n ? x->act[d] : NULL;
        CUDA_TRY(bkk_adam(base, base + n, base + 2 * n, base + 3 * n, copy, n, x->c->sms,
                          x->c->compute[d]));
    }
    return CM_OK;
}

/* ---- one step -------------------------------------------------------------------------------- */

#define EACH_DEV for (int d = 0; d < x->nd; d++)
#define DEV(call)                                                                              \
    EACH_DEV                                                                                   \
    {                                                                                          \
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));                                                 \
        CUDA_TRY(call);                                                                        \
    }

/* FSDP2 all-gather copy-in: this rank's fp32 shard cast to bf16 into its chunk of the
 * all-gather buffer (which the gather then runs in place over). */
static cm_status fsdp2_copy_in(M *x, int j, cudaStream_t *streams, char *err, size_t errlen)
{
    size_t n = x->unit_cnt;
    DEV(bkk_f32_to_bf16((const float *)carve(x->state[d], x->w_bytes, 4 * n, (size_t)j * 4 * n),
                        x->commbuf[d] + x->gbuf_off[j % 2] +
                            (size_t)x->grp[GROUP_DP].rank_of[d] * 2 * n,
                        n, streams[d]));
    return CM_OK;
}

/* FSDP2 copy-out: the gathered unit into the unsharded parameters (read 2p, write 2p). */
static cm_status fsdp2_copy_out(M *x, int l, cudaStream_t *streams, char *err, size_t errlen)
{
    size_t bytes = (size_t)(2.0 * x->w->layer_params) & ~(size_t)15;
    DEV(bkk_stream_copy(x->commbuf[d] + x->ggrad_off[l % 2], x->commbuf[d] + x->gbuf_off[l % 2],
                        bytes, x->c->sms, streams[d]));
    return CM_OK;
}

/* FSDP2 reduce-scatter copy-in: bf16 gradients cast into the fp32 reduce buffer. */
static cm_status fsdp2_rs_copy_in(M *x, int l, cudaStream_t *streams, char *err, size_t errlen)
{
    size_t n = (size_t)x->w->layer_params;
    DEV(bkk_bf16_to_f32(x->commbuf[d] + x->ggrad_off[l % 2],
                        (float *)(x->commbuf[d] + x->rbuf_off[l % 2]), n, streams[d]));
    return CM_OK;
}

static cm_status issue_gather(M *x, int j, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    if (x->w->fsdp) DEV(cudaStreamWaitEvent(c->comm[d], x->ev_used[d][j % 2], 0));
    if (x->fsdp2_copies) BK_TRY(fsdp2_copy_in(x, j, c->comm, err, errlen));
    BK_TRY(dp_gather(x, j, c->comm, err, errlen));
    DEV(cudaEventRecord(x->ev_gath[d][j % 2], c->comm[d]));
    return CM_OK;
}

static cm_status step(M *x, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    int L = w->layers, micro = w->microbatches;
    bool dp = w->dp_active && x->grp[GROUP_DP].size > 1;
    DEV(cudaEventRecord(x->e0[d], c->compute[d]));
    /* The communication stream starts with the step. */
    DEV(cudaStreamWaitEvent(c->comm[d], x->e0[d], 0));
    DEV(cudaEventRecord(x->ev_rdone[d][0], c->comm[d]));
    DEV(cudaEventRecord(x->ev_rdone[d][1], c->comm[d]));
    if (dp && w->fsdp) {
        BK_TRY(root_gather(x, c->comm, err, errlen));
        DEV(cudaEventRecord(x->ev_root[d], c->comm[d]));
        DEV(cudaStreamWaitEvent(c->compute[d], x->ev_root[d], 0));
    }
    for (int mb = 0; mb < micro; mb++) {
        /* forward */
        bool G = dp && w->gather_bytes > 0 && (w->gather_each_micro || mb == 0);
        DEV(cudaEventRecord(x->ev_used[d][0], c->compute[d]));
        DEV(cudaEventRecord(x->ev_used[d][1], c->compute[d]));
        if (G) BK_TRY(issue_gather(x, 0, err, errlen));
        for (int l = 0; l < L; l++) {
            if (G && l + 1 < L) BK_TRY(issue_gather(x, l + 1, err, errlen));
            if (G) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_gath[d][l % 2], 0));
            if (G && x->fsdp2_copies) BK_TRY(fsdp2_copy_out(x, l, c->compute, err, errlen));
            item_ctx ic = {.layer = l, .buf = l % 2, .head = false};
            BK_TRY(exec_list(x, &w->layer_fwd, ic, err, errlen));
            DEV(cudaEventRecord(x->ev_used[d][l % 2], c->compute[d]));
        }
        item_ctx hc = {.layer = L, .buf = 0, .head = true};
        BK_TRY(exec_list(x, &w->head_fwd, hc, err, errlen));
        /* backward */
        BK_TRY(exec_list(x, &w->head_bwd, hc, err, errlen));
        bool GB = dp && w->fsdp && w->gather_in_bwd;
        bool R = dp && (w->reduce_each_micro || mb == micro - 1);
        DEV(cudaEventRecord(x->ev_used[d][0], c->compute[d]));
        DEV(cudaEventRecord(x->ev_used[d][1], c->compute[d]));
        if (GB) BK_TRY(issue_gather(x, L - 1, err, errlen));
        for (int l = L - 1; l >= 0; l--) {
            if (GB && l - 1 >= 0) BK_TRY(issue_gather(x, l - 1, err, errlen));
            if (GB) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_gath[d][l % 2], 0));
            if (GB && x->fsdp2_copies) BK_TRY(fsdp2_copy_out(x, l, c->compute, err, errlen));
            if (R && w->fsdp) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_rdone[d][l % 2], 0));
            item_ctx ic = {.layer = l, .buf = l % 2, .head = false};
            BK_TRY(exec_list(x, &w->layer_bwd, ic, err, errlen));
            DEV(cudaEventRecord(x->ev_used[d][l % 2], c->compute[d]));
            if (R) {
                DEV(cudaEventRecord(x->ev_bw[d], c->compute[d]));
                DEV(cudaStreamWaitEvent(c->comm[d], x->ev_bw[d], 0));
                if (x->fsdp2_copies) BK_TRY(fsdp2_rs_copy_in(x, l, c->comm, err, errlen));
                BK_TRY(dp_reduce(x, l, c->comm, err, errlen));
                DEV(cudaEventRecord(x->ev_rdone[d][l % 2], c->comm[d]));
            }
        }
        if (R) {
            DEV(cudaEventRecord(x->ev_bw[d], c->compute[d]));
            DEV(cudaStreamWaitEvent(c->comm[d], x->ev_bw[d], 0));
            BK_TRY(root_reduce(x, c->comm, err, errlen));
        }
    }
    /* Join the communication stream, then the optimizer. */
    DEV(cudaEventRecord(x->ev_join[d], c->comm[d]));
    DEV(cudaStreamWaitEvent(c->compute[d], x->ev_join[d], 0));
    BK_TRY(adam(x, err, errlen));
    DEV(cudaEventRecord(x->e1[d], c->compute[d]));
    return CM_OK;
}

static cm_status sync_all(M *x, char *err, size_t errlen)
{
    DEV(cudaDeviceSynchronize());
    return CM_OK;
}

/* Time on the compute streams between e0 and e1, slowest device. */
static cm_status elapsed(M *x, double *s, char *err, size_t errlen)
{
    double worst = 0;
    EACH_DEV
    {
        float ms;
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        CUDA_TRY(cudaEventSynchronize(x->e1[d]));
        CUDA_TRY(cudaEventElapsedTime(&ms, x->e0[d], x->e1[d]));
        if (ms * 1e-3 > worst) worst = ms * 1e-3;
    }
    *s = worst;
    return CM_OK;
}

/* ---- isolated timing of one launch ------------------------------------------------------ */

typedef enum { ISO_ITEM, ISO_GATHER, ISO_REDUCE, ISO_ADAM, ISO_COPY_GATHER, ISO_COPY_REDUCE } iso_kind;

static cm_status iso_launch(M *x, iso_kind k, const work_item *it, bool head, char *err,
                            size_t errlen)
{
    item_ctx ic = {.layer = 0, .buf = 0, .head = head};
    switch (k) {
    case ISO_ITEM: return exec_item(x, it, ic, err, errlen);
    case ISO_GATHER: return dp_gather(x, 0, x->c->compute, err, errlen);
    case ISO_REDUCE: return dp_reduce(x, 0, x->c->compute, err, errlen);
    case ISO_ADAM: return adam(x, err, errlen);
    case ISO_COPY_GATHER:
        BK_TRY(fsdp2_copy_in(x, 0, x->c->compute, err, errlen));
        return fsdp2_copy_out(x, 0, x->c->compute, err, errlen);
    case ISO_COPY_REDUCE: return fsdp2_rs_copy_in(x, 0, x->c->compute, err, errlen);
    }
    return CM_OK;
}

static cm_status iso_time(M *x, iso_kind k, const work_item *it, bool head, const bk_timing *tm,
                          double *out, char *err, size_t errlen)
{
    for (int j = 0; j < (tm->warmup > 0 ? tm->warmup : 1); j++)
        BK_TRY(iso_launch(x, k, it, head, err, errlen));
    int iters = 1;
    double t[64];
    int reps = tm->repeats > 64 ? 64 : (tm->repeats < 1 ? 1 : tm->repeats);
    for (int r = -1; r < reps; r++) {
        BK_TRY(sync_all(x, err, errlen));
        DEV(cudaEventRecord(x->e0[d], x->c->compute[d]));
        for (int j = 0; j < iters; j++) BK_TRY(iso_launch(x, k, it, head, err, errlen));
        DEV(cudaEventRecord(x->e1[d], x->c->compute[d]));
        double s;
        BK_TRY(elapsed(x, &s, err, errlen));
        if (r < 0) {
            double one = s / iters;
            iters = one > 0 ? (int)ceil(tm->min_repeat_s / one) : 50;
            if (iters < 1) iters = 1;
            if (iters > 50) iters = 50;
        } else {
            t[r] = s / iters;
        }
    }
    *out = bk_median(t, reps);
    return CM_OK;
}

/* ---- sizing and allocation ------------------------------------------------------------------ */

static void size_regions(M *x)
{
    const work_plan *w = x->w;
    const work_list *lists[4] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd, &w->head_bwd};
    size_t xa = 0, yc = 0, zb = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            const work_item *it = &lists[j]->item[i];
            size_t a = 0, b = 0, cc = 0;
            if (it->kind == WORK_GEMM) {
                a = gemm_a_bytes(it);
                b = it->weight_operand ? 0 : gemm_b_bytes(it);
                cc = is_weight_grad(it) ? 0 : gemm_c_bytes(it);
            } else if (it->kind == WORK_STREAM) {
                a = cc = (size_t)(it->bytes / 2);
            } else {
                a = cc = (size_t)it->bytes;
            }
            if (a > xa) xa = a;
            if (b > zb) zb = b;
            if (cc > yc) yc = cc;
        }
    x->x_off = 0;
    x->x_sz = ALIGN(xa + 256);
    x->y_off = x->x_sz;
    x->y_sz = ALIGN(yc + 256);
    x->z_off = x->y_off + x->y_sz;
    x->z_sz = ALIGN(zb + 256);
}

cm_status bk_measure(bk_ctx *c, const work_plan *w, const char *plan_name, int steps,
                     const bk_timing *tm, bk_measure_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const layout *l = &w->layout;
    if (l->offload)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan %s: CPU offload is not measured yet (the backend runs GPU-resident "
                       "plans); use plan estimate for it", plan_name);
    bool whole;
    int dpl = work_local_dp(l, c->ngpus, &whole, err, errlen);
    if (dpl == 0) return CM_EINVAL;
    M *x = calloc(1, sizeof *x);
    if (!x) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    x->c = c;
    x->w = w;
    x->nd = l->tp * l->cp * dpl;
    out->gpus_used = x->nd;
    out->dp_measured = dpl;
    out->whole = whole;
    cm_status st = CM_OK;
    /* From here on every failure releases what was made: BK_TRY and CUDA_TRY jump to done. */
#undef CUDA_TRY
#define CUDA_TRY(call)                                                                         \
    do {                                                                                       \
        cudaError_t e_ = (cudaError_t)(call);                                                  \
        if (e_ != cudaSuccess) {                                                               \
            st = cm_fail(err, errlen, CM_EIO, "plan %s: %s failed: %s (%s:%d)", plan_name,     \
                         #call, cudaGetErrorString(e_), __FILE__, __LINE__);                   \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)
#undef BK_TRY
#define BK_TRY(call)                                                                           \
    do {                                                                                       \
        st = (call);                                                                           \
        if (st != CM_OK) goto done;                                                            \
    } while (0)
    BK_TRY(make_groups(x, l, dpl, err, errlen));

    /* Baseline: context, cuBLAS workspace, NCCL communicators. */
    double base = 0, freemin = INFINITY;
    for (int d = 0; d < x->nd; d++) {
        size_t fr, tot;
        cudaSetDevice(c->dev[d]);
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
            st = cm_fail(err, errlen, CM_EIO, "cudaMemGetInfo failed on GPU %d", d);
            goto done;
        }
        if ((double)(tot - fr) > base) base = (double)(tot - fr);
        if ((double)fr < freemin) freemin = (double)fr;
    }
    out->baseline_used_bytes = base;

    /* Pool sizes: the plan's own figures, grown where an operand needs more. */
    const memory_breakdown *mb = &w->est.memory;
    size_regions(x);
    size_t g = (size_t)(x->grp[GROUP_DP].size > 1 ? x->grp[GROUP_DP].size : 1);
    double p = w->layer_params;
    x->red_esz = w->reduce_fp32 ? 4 : 2;
    x->unit_cnt = (size_t)ceil(p / g);
    x->root_cnt = (size_t)ceil(w->root_params / g);
    x->w_bytes = ALIGN((size_t)mb->weights_bytes);
    x->g_bytes = ALIGN((size_t)mb->gradients_bytes);
    size_t state_plan = x->w_bytes + x->g_bytes + ALIGN((size_t)mb->optimizer_bytes);
    size_t state_need = ALIGN((size_t)(16.0 * w->optimizer_params));
    size_t wmin = ALIGN(x->unit_cnt * g * 2), gmin = ALIGN(x->unit_cnt * g * x->red_esz);
    if (x->w_bytes < wmin) x->w_bytes = wmin;
    if (x->g_bytes < gmin) x->g_bytes = gmin;
    x->state_bytes = x->w_bytes + x->g_bytes + ALIGN((size_t)mb->optimizer_bytes);
    if (x->state_bytes < state_need) x->state_bytes = state_need;
    size_t act_need = x->z_off + x->z_sz;
    size_t act_plan = ALIGN((size_t)mb->activations_bytes);
    x->act_bytes = act_plan > act_need ? act_plan : act_need;
    size_t comm_need = 0;
    if (w->fsdp && w->dp_active) {
        x->root_off = 0;
        x->root_sz = ALIGN(x->root_cnt * g * 2);
        x->gbuf_sz = ALIGN(x->unit_cnt * g * 2);
        x->ggrad_sz = ALIGN((size_t)(2.0 * p) + 256);
        x->rbuf_sz = ALIGN(x->unit_cnt * g * x->red_esz);
        size_t o = x->root_sz;
        for (int i = 0; i < 2; i++) {
            x->gbuf_off[i] = o;
            o += x->gbuf_sz;
        }
        for (int i = 0; i < 2; i++) {
            x->ggrad_off[i] = o;
            o += x->ggrad_sz;
        }
        for (int i = 0; i < 2; i++) {
            x->rbuf_off[i] = o;
            o += x->rbuf_sz;
        }
        comm_need = o;
    }
    x->fsdp2_copies = w->fsdp && w->dp_active && l->framework == FRAMEWORK_FSDP2 &&
                      x->grp[GROUP_DP].size > 1;
    size_t comm_plan = ALIGN((size_t)mb->comm_buffer_bytes);
    x->comm_bytes = comm_plan > comm_need ? comm_plan : comm_need;
    double plan_pools = (double)state_plan + act_plan + comm_plan;
    double pools = (double)x->state_bytes + x->act_bytes + x->comm_bytes;
    out->pool_bytes = pools;
    out->extra_bytes = pools - plan_pools;

    if (pools > freemin) {
        st = cm_fail(err, errlen, CM_ENOMEM,
                     "plan %s does not fit: each GPU needs %.2f GiB for the plan's tensors "
                     "(weights %.2f, gradients %.2f, optimizer %.2f, activations %.2f, "
                     "communication buffers %.2f GiB) but only %.2f GiB are free after the CUDA "
                     "context, cuBLAS and NCCL took %.2f GiB: %.2f GiB short",
                     plan_name, pools / GiB, mb->weights_bytes / GiB, mb->gradients_bytes / GiB,
                     mb->optimizer_bytes / GiB, (double)x->act_bytes / GiB,
                     (double)x->comm_bytes / GiB, freemin / GiB, base / GiB,
                     (pools - freemin) / GiB);
        goto done;
    }
    for (int d = 0; d < x->nd; d++) {
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        char **dst[3] = {&x->state[d], &x->act[d], &x->commbuf[d]};
        size_t sz[3] = {x->state_bytes, x->act_bytes, x->comm_bytes};
        const char *what[3] = {"weights+gradients+optimizer", "activations",
                               "communication buffers"};
        for (int i = 0; i < 3; i++) {
            if (!sz[i]) continue;
            cudaError_t e = cudaMalloc((void **)dst[i], sz[i]);
            if (e != cudaSuccess) {
                size_t fr = 0, tot = 0;
                cudaGetLastError();
                cudaMemGetInfo(&fr, &tot);
                st = cm_fail(err, errlen, CM_ENOMEM,
                             "plan %s does not fit: cudaMalloc of %.2f GiB (%s) failed on GPU %d "
                             "with %.2f GiB free (%s); the plan's pools need %.2f GiB per GPU",
                             plan_name, sz[i] / GiB, what[i], d, fr / GiB, cudaGetErrorString(e),
                             pools / GiB);
                goto done;
            }
            /* Random, never-zero bf16 data everywhere; optimizer states positive. */
            CUDA_TRY(bkk_fill_bf16(*dst[i], sz[i] / 2, 17u * (uint32_t)i + (uint32_t)d,
                                   -1.0f, 1.0f, c->compute[d]));
        }
        for (int i = 0; i < 2; i++) {
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_used[d][i], cudaEventDisableTiming));
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_gath[d][i], cudaEventDisableTiming));
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_rdone[d][i], cudaEventDisableTiming));
        }
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_bw[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_join[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_root[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreate(&x->e0[d]));
        CUDA_TRY(cudaEventCreate(&x->e1[d]));
    }

    /* Steps: one warm-up, then the timed ones. */
    if (steps < 1) steps = 1;
    if (steps > 64) steps = 64;
    double ts[64];
    for (int s = -1; s < steps; s++) {
        BK_TRY(sync_all(x, err, errlen));
        BK_TRY(step(x, err, errlen));
        double t;
        BK_TRY(elapsed(x, &t, err, errlen));
        if (s >= 0) ts[s] = t;
    }
    BK_TRY(sync_all(x, err, errlen));
    {
        double lo = ts[0], hi = ts[0];
        for (int s = 1; s < steps; s++) {
            if (ts[s] < lo) lo = ts[s];
            if (ts[s] > hi) hi = ts[s];
        }
        out->step_s = bk_median(ts, steps);
        out->step_spread = out->step_s > 0 ? (hi - lo) / out->step_s : 0;
    }
    /* Peak memory: the pools stay allocated and NCCL has made its buffers by now. */
    for (int d = 0; d < x->nd; d++) {
        size_t fr, tot;
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaMemGetInfo(&fr, &tot));
        if ((double)(tot - fr) > out->peak_used_bytes) out->peak_used_bytes = (double)(tot - fr);
    }

    /* Each item alone. */
    double micro = w->microbatches, L = w->layers;
    const work_list *lists[4] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd, &w->head_bwd};
    double *res[4] = {out->layer_fwd_s, out->layer_bwd_s, out->head_fwd_s, out->head_bwd_s};
    double reps[4] = {micro * L, micro * L, micro, micro};
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            BK_TRY(iso_time(x, ISO_ITEM, &lists[j]->item[i], j >= 2, tm, &res[j][i], err, errlen));
            out->component_s[lists[j]->item[i].component] += reps[j] * res[j][i];
        }
    if (w->dp_active && x->grp[GROUP_DP].size > 1) {
        double gathers = w->gather_each_micro ? micro * (w->gather_in_bwd ? 2 : 1) : 1;
        double reduces = w->reduce_each_micro ? micro : 1;
        if (w->gather_bytes > 0) {
            BK_TRY(iso_time(x, ISO_GATHER, NULL, false, tm, &out->gather_s, err, errlen));
            out->component_s[WC_DP] += L * gathers * out->gather_s;
        }
        BK_TRY(iso_time(x, ISO_REDUCE, NULL, false, tm, &out->reduce_s, err, errlen));
        out->component_s[WC_DP] += L * reduces * out->reduce_s;
        if (x->fsdp2_copies) {
            double cg, cr;
            BK_TRY(iso_time(x, ISO_COPY_GATHER, NULL, false, tm, &cg, err, errlen));
            BK_TRY(iso_time(x, ISO_COPY_REDUCE, NULL, false, tm, &cr, err, errlen));
            out->component_s[WC_FRAMEWORK] = L * (gathers * cg + reduces * cr);
        }
    }
    BK_TRY(iso_time(x, ISO_ADAM, NULL, false, tm, &out->optimizer_s, err, errlen));
    out->component_s[WC_OPTIMIZER] = out->optimizer_s;
    out->compute_s = out->component_s[WC_GEMM] + out->component_s[WC_ATTENTION] +
                     out->component_s[WC_ELEMENTWISE];
    out->exposed_comm_s = fmax(0, out->step_s - out->compute_s - out->optimizer_s -
                                      out->component_s[WC_FRAMEWORK]);

done:
    if (st != CM_OK && err && strncmp(err, "plan ", 5) != 0) {
        char msg[CM_ERRLEN];
        snprintf(msg, sizeof msg, "%s", err);
        cm_fail(err, errlen, st, "plan %s: %s", plan_name, msg);
    }
    for (int d = 0; d < x->nd; d++) {
        cudaSetDevice(c->dev[d]);
        cudaDeviceSynchronize();
        if (x->state[d]) cudaFree(x->state[d]);
        if (x->act[d]) cudaFree(x->act[d]);
        if (x->commbuf[d]) cudaFree(x->commbuf[d]);
        for (int i = 0; i < 2; i++) {
            if (x->ev_used[d][i]) cudaEventDestroy(x->ev_used[d][i]);
            if (x->ev_gath[d][i]) cudaEventDestroy(x->ev_gath[d][i]);
            if (x->ev_rdone[d][i]) cudaEventDestroy(x->ev_rdone[d][i]);
        }
        if (x->ev_bw[d]) cudaEventDestroy(x->ev_bw[d]);
        if (x->ev_join[d]) cudaEventDestroy(x->ev_join[d]);
        if (x->ev_root[d]) cudaEventDestroy(x->ev_root[d]);
        if (x->e0[d]) cudaEventDestroy(x->e0[d]);
        if (x->e1[d]) cudaEventDestroy(x->e1[d]);
    }
    destroy_groups(x);
    free(x);
    return st;
}
