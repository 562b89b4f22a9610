/*
 * bk_measure.c — execute one training step of a plan on the local GPUs and time it.
 *
 * What runs (per GPU, one host thread enqueuing for all GPUs in Megatron rank order: tp
 * innermost, then cp, dp, and pp outermost, so stage s owns devices s*S .. s*S+S-1):
 *  - the plan's memory, allocated as three pools per GPU sized by the cost model's breakdown:
 *    state (weights + gradients + optimizer states), activations, communication buffers
 *    (gathered FSDP units, unsharded gradient buffers, the FSDP root unit). Operands are carved
 *    out of the pools, so a plan that does not fit fails on allocation, as the trainer would.
 *    Where an operand needs more room than the plan's pool (tiny models), the pool grows and the
 *    growth is reported as extra_bytes; so are the pipeline's send/receive buffers.
 *  - each stage's forward and backward chunks in its 1F1B (or interleaved 1F1B) order
 *    (work_pp_schedule): a forward runs the chunk's layers' forward items of work.h on the
 *    compute stream (cuBLAS GEMMs, attention as batched GEMMs, elementwise work as the kernels
 *    PyTorch runs for it, TP/SP collectives, Ulysses all-to-alls and MoE dispatch/combine
 *    all-to-alls, exposed in the compute stream; Megatron's ring-attention K/V exchanges on a
 *    ring stream beside the attention core, as Transformer Engine runs them), the output layer and loss after the last stage's last chunk; a
 *    backward the reverse. Without a pipeline this is micro-batch after micro-batch.
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
 *    kernels.cu): vectorized, cast, per-element-offset (broadcast, strided), cat, reductions and
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
 *    gradients before reducing them. Reported as their own component (WC_FRAMEWORK).
 * Not run (stated by `plan measure`): the embedding lookup, HSDP's replicate all-reduce, and a
 * pipeline whose tp*cp*pp GPUs are more than this machine has (then stage 0 alone runs).
 *
 * Timing: one warm-up step, then `steps` timed steps (CUDA events on every GPU, slowest GPU,
 * median). Then one instrumented step with CUDA events around every chunk, pipeline send and
 * data-parallel collective (and, for a trace, every work item) on the first GPU of each stage:
 * the per-stage busy time, the bubble and the time blocked on sends come from it, and the trace.
 * Then each distinct item alone (same launch on every GPU, back-to-back repeats, median), which
 * gives the per-component times.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_internal.h"
#include "fsdp_copies.h"
#include "kernels.h"

#define GiB 1073741824.0
#define ALIGN(x) (((x) + 255) & ~(size_t)255)
#define BK_MAX_SLOTS 8

typedef struct {
    int n;                     /* instances */
    int size;                  /* ranks per instance */
    int dev[BK_MAX_GPUS][BK_MAX_GPUS];    /* [instance][rank] -> device index */
    ncclComm_t comm[BK_MAX_GPUS][BK_MAX_GPUS];
    int rank_of[BK_MAX_GPUS]; /* device index -> rank in its instance */
} group_set;

/* CUDA events for the instrumented step, per device, reused between steps. */
typedef struct {
    cudaEvent_t *e;
    int n, created, cap;
} ev_pool;

/* A span of the instrumented step: two events of ev_pool[dev]. */
typedef struct {
    int stage, tid, dev, i0, i1;
    int wait;                  /* op spans: event after the blocking send's wait, or -1 */
    bool op;                   /* a forward/backward chunk (else an item, a send, a collective) */
    int mb, chunk, layer;
    char name[40];
} span_mark;

typedef struct {
    bk_ctx *c;
    const work_plan *w;
    int nd;                    /* devices used (global indices 0..nd-1) */
    int olo, ohi;              /* the used devices this process drives: [olo, ohi) */
    int S, P;                  /* devices per stage, stages run */
    int dlo, dhi;              /* the devices launches go to now: one stage, or all */
    group_set grp[GROUP_COUNT];
    /* pools per device */
    char *state[BK_MAX_GPUS], *act[BK_MAX_GPUS], *commbuf[BK_MAX_GPUS], *ppbuf[BK_MAX_GPUS];
    size_t state_bytes, act_bytes, comm_bytes, pp_bytes;
    size_t w_bytes, g_bytes;   /* weights and gradients parts of the state pool */
    /* activation regions (offsets in act) */
    size_t x_off, x_sz, y_off, y_sz, z_off, z_sz;
    /* communication buffers (offsets in commbuf), FSDP */
    size_t root_off, root_sz, gbuf_off[2], gbuf_sz, ggrad_off[2], ggrad_sz, rbuf_off[2], rbuf_sz;
    size_t unit_cnt[2];        /* elements per rank of a layer unit, dense / MoE (ceil(p / g)) */
    size_t ecnt;               /* MoE, not FSDP: expert elements per expert-dp rank */
    size_t red_esz;            /* bytes per element of the gradient reduction */
    bool fsdp2_copies;         /* run FSDP2's copy-in / copy-out kernels */
    size_t cin_off, cin_sz;    /* FSDP2 copy-in's flat bf16 buffer (offset in commbuf) */
    size_t y_ws;               /* offset of elementwise kernels' scratch in the y region */
    cudaEvent_t ev_used[BK_MAX_GPUS][2], ev_gath[BK_MAX_GPUS][2], ev_rdone[BK_MAX_GPUS][2];
    cudaEvent_t ev_bw[BK_MAX_GPUS], ev_join[BK_MAX_GPUS], ev_root[BK_MAX_GPUS];
    cudaEvent_t ev_rfree[BK_MAX_GPUS]; /* FSDP2: the compute stream is done with the root unit */
    cudaEvent_t e0[BK_MAX_GPUS], e1[BK_MAX_GPUS];
    /* pipeline */
    ncclComm_t ppc[2][BK_MAX_GPUS][BK_MAX_GPUS]; /* [direction][column][stage] */
    bool ppc_made;
    cudaStream_t ps[2][BK_MAX_GPUS];             /* p2p stream per direction */
    size_t p2p_sz;             /* one transfer, bytes (whole bf16 elements) */
    size_t p2p_slot;           /* aligned */
    int nslots;
    cudaEvent_t ev_recv[2][BK_MAX_GPUS][BK_MAX_SLOTS], ev_cons[2][BK_MAX_GPUS][BK_MAX_SLOTS];
    cudaEvent_t ev_sent[2][BK_MAX_GPUS], ev_done[BK_MAX_GPUS], ev_pjoin[2][BK_MAX_GPUS];
    work_pp_op *sched;         /* [P][per] */
    work_pp_issue *order;
    int per, norder;
    int made[BK_MAX_GPUS][2], used[BK_MAX_GPUS][2]; /* transfers into stage s, per direction */
    /* instrumentation */
    bool inst, inst_items;
    /* Megatron's ring attention (context parallel): Transformer Engine exchanges the next K/V
     * chunk on its own stream while the current attention block computes
     * (transformer_engine/pytorch/attention: AttnFuncWithCPAndKVP2P, send/recv on a separate
     * stream, waited before the block that needs it); the backend runs the layer's ring
     * exchanges on cps beside the attention core and joins before the next item. */
    bool cp_overlap;
    size_t cp_off, cp_sz;      /* the ring's send and receive buffers (offset in act) */
    cudaStream_t cps[BK_MAX_GPUS];
    cudaEvent_t ev_cp0[BK_MAX_GPUS], ev_cp1[BK_MAX_GPUS];
    ev_pool pool[BK_MAX_GPUS];
    span_mark *marks;
    int nmarks, capmarks;
} M;

static int stage_of(const M *x, int d) { return d / x->S; }
static int trace_dev(const M *x, int s) { return s * x->S; }

/* A pointer to `need` bytes inside [base, base+size), placed by `slot` (wraps around). */
static char *carve(char *base, size_t size, size_t need, size_t slot)
{
    if (need > size) return base; /* sizes are checked when the pools are sized */
    size_t room = size - need;
    size_t off = room ? (slot % (room + 1)) & ~(size_t)255 : 0;
    return base + off;
}

static void add_instance(group_set *g, const int *devs)
{
    int k = g->n++;
    for (int r = 0; r < g->size; r++) {
        g->dev[k][r] = devs[r];
        g->rank_of[devs[r]] = r;
    }
}

static cm_status make_groups(M *x, const layout *l, int dpl, char *err, size_t errlen)
{
    int tp = l->tp, cp = l->cp, S = x->S;
    int etp = layout_etp(l), ep = x->w->moe ? l->ep : 1;
    int devs[BK_MAX_GPUS];
    x->grp[GROUP_TP].size = tp;
    x->grp[GROUP_CP].size = cp;
    x->grp[GROUP_DP].size = cp * dpl; /* gradients and FSDP shards: dp x cp, same tp index */
    x->grp[GROUP_EP].size = ep;
    x->grp[GROUP_EDP].size = x->w->moe ? S / (ep * etp) : 1;
    for (int s = 0; s < x->P; s++) {
        int base = s * S;
        for (int d = 0; d < dpl; d++)
            for (int c = 0; c < cp; c++) {
                for (int t = 0; t < tp; t++) devs[t] = base + work_rank(l, t, c, d);
                add_instance(&x->grp[GROUP_TP], devs);
            }
        for (int d = 0; d < dpl; d++)
            for (int t = 0; t < tp; t++) {
                for (int c = 0; c < cp; c++) devs[c] = base + work_rank(l, t, c, d);
                add_instance(&x->grp[GROUP_CP], devs);
            }
        for (int t = 0; t < tp; t++) {
            int r = 0;
            for (int d = 0; d < dpl; d++)
                for (int c = 0; c < cp; c++) devs[r++] = base + work_rank(l, t, c, d);
            add_instance(&x->grp[GROUP_DP], devs);
        }
        /* Expert groups over the stage's ranks: etp innermost, then ep, then expert-dp. */
        if (!x->w->moe) continue;
        int edp = S / (ep * etp);
        for (int f = 0; f < edp; f++)
            for (int e = 0; e < etp; e++) {
                for (int k = 0; k < ep; k++) devs[k] = base + e + etp * (k + ep * f);
                add_instance(&x->grp[GROUP_EP], devs);
            }
        for (int k = 0; k < ep; k++)
            for (int e = 0; e < etp; e++) {
                for (int f = 0; f < edp; f++) devs[f] = base + e + etp * (k + ep * f);
                add_instance(&x->grp[GROUP_EDP], devs);
            }
    }
    for (int G = 0; G < GROUP_COUNT; G++) {
        group_set *g = &x->grp[G];
        if (g->size < 2) continue;
        for (int k = 0; k < g->n; k++) {
            BK_TRY(bk_comm_group(x->c, g->size, g->dev[k], g->comm[k], err, errlen));
        }
    }
    /* Pipeline: per column (the same tp, cp, dp index in every stage) one communicator over
     * the stages for activations and one for gradients, so each has one stream per rank. */
    if (x->P > 1) {
        for (int dir = 0; dir < 2; dir++)
            for (int col = 0; col < S; col++) {
                for (int s = 0; s < x->P; s++) devs[s] = s * S + col;
                BK_TRY(bk_comm_group(x->c, x->P, devs, x->ppc[dir][col], err, errlen));
            }
        x->ppc_made = true;
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
    for (int dir = 0; dir < 2; dir++)
        for (int col = 0; col < BK_MAX_GPUS; col++)
            for (int s = 0; s < BK_MAX_GPUS; s++)
                if (x->ppc[dir][col][s]) ncclCommDestroy(x->ppc[dir][col][s]);
}

/* One collective over every instance of group G whose devices are in [dlo, dhi), on the given
 * streams (per device), with send/recv arrays indexed by device. */
static cm_status group_coll(M *x, work_group G, collective_op op, size_t bytes, bool fp32,
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

/* The devices launches go to now that this process drives. */
#define EACH_DEV                                                                               \
    for (int d = x->dlo > x->olo ? x->dlo : x->olo; d < (x->dhi < x->ohi ? x->dhi : x->ohi); d++)
/* Every used device this process drives. */
#define OWNED for (int d = x->olo; d < x->ohi; d++)
#define DEV(call)                                                                              \
    EACH_DEV                                                                                   \
    {                                                                                          \
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));                                                 \
        CUDA_TRY(call);                                                                        \
    }

static void set_stage(M *x, int s)
{
    x->dlo = s * x->S;
    x->dhi = x->dlo + x->S;
}

static void set_all(M *x)
{
    x->dlo = 0;
    x->dhi = x->nd;
}

/* ---- instrumentation ------------------------------------------------------------------------ */

/* Record a pooled event on stream st of device d; *idx is its index in the pool. */
static cm_status mark(M *x, int d, cudaStream_t st, int *idx, char *err, size_t errlen)
{
    *idx = -1;
    if (!bk_owns(x->c, d)) return CM_OK; /* another process's GPU */
    ev_pool *p = &x->pool[d];
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 1024;
        cudaEvent_t *e = realloc(p->e, sizeof *e * (size_t)cap);
        if (!e) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory (trace events)");
        p->e = e;
        p->cap = cap;
    }
    CUDA_TRY(cudaSetDevice(x->c->dev[d]));
    if (p->n == p->created) {
        CUDA_TRY(cudaEventCreate(&p->e[p->n]));
        p->created++;
    }
    CUDA_TRY(cudaEventRecord(p->e[p->n], st));
    *idx = p->n++;
    return CM_OK;
}

static cm_status add_mark(M *x, const span_mark *m, char *err, size_t errlen)
{
    if (x->nmarks == x->capmarks) {
        int cap = x->capmarks ? 2 * x->capmarks : 1024;
        span_mark *p = realloc(x->marks, sizeof *p * (size_t)cap);
        if (!p) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory (trace spans)");
        x->marks = p;
        x->capmarks = cap;
    }
    x->marks[x->nmarks++] = *m;
    return CM_OK;
}

/* Begin / end a span on stage s's trace device, stream st. */
static cm_status span_begin(M *x, int s, cudaStream_t *streams, int *i0, char *err, size_t errlen)
{
    *i0 = -1;
    if (!x->inst) return CM_OK;
    int d = trace_dev(x, s);
    return mark(x, d, streams[d], i0, err, errlen);
}

static cm_status span_end(M *x, int s, cudaStream_t *streams, int i0, int tid, const char *name,
                          int mb, int chunk, int layer, bool op, char *err, size_t errlen)
{
    if (!x->inst || i0 < 0) return CM_OK;
    int d = trace_dev(x, s), i1;
    BK_TRY(mark(x, d, streams[d], &i1, err, errlen));
    span_mark m = {.stage = s, .tid = tid, .dev = d, .i0 = i0, .i1 = i1, .wait = -1, .op = op,
                   .mb = mb, .chunk = chunk, .layer = layer};
    snprintf(m.name, sizeof m.name, "%s", name);
    return add_mark(x, &m, err, errlen);
}

/* ---- buffers for one item on device d --------------------------------------------------- */

static bool is_weight_grad(const work_item *it)
{
    return it->kind == WORK_GEMM && it->form == GEMM_WGRAD && it->component == WC_GEMM;
}

static size_t gemm_a_bytes(const work_item *it) { return (size_t)(2.0 * it->m * it->k * it->batch); }
static size_t gemm_b_bytes(const work_item *it) { return (size_t)(2.0 * it->n * it->k * it->batch); }
static size_t gemm_c_bytes(const work_item *it) { return (size_t)(2.0 * it->m * it->n * it->batch); }

/* kernels.cu's copy of an access pattern (elementwise.h). */
static bkk_ew ew_of(const ew_access *a)
{
    bkk_ew e;
    e.pattern = (int)a->pattern;
    for (int k = 0; k < 3; k++) {
        e.esize[k] = a->esize[k];
        e.n[k] = a->n[k];
        for (int i = 0; i < 3; i++) e.stride[k][i] = a->stride[k][i];
    }
    return e;
}

/* Bytes operand k of an access spans. */
static size_t ew_bytes(const ew_access *a, int k)
{
    return (size_t)ew_operand_elems(a, k) * (size_t)a->esize[k];
}

typedef struct {
    int layer;   /* which layer's weights and gradient slices (index within the stage) */
    int buf;     /* FSDP unit buffer (layer % 2) */
    bool head;   /* the output layer: weights of the root unit */
} item_ctx;

static cm_status exec_item(M *x, const work_item *it, item_ctx ic, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    double p = w->layer_params;
    if (it->kind == WORK_GEMM) {
        EACH_DEV
        {
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
        /* the kernel PyTorch runs for it: a from x, b from z, the output (and any scratch) in y */
        bkk_ew e = ew_of(&it->access);
        EACH_DEV
        {
            CUDA_TRY(cudaSetDevice(x->c->dev[d]));
            char *y = x->act[d] + x->y_off;
            CUDA_TRY(bkk_ew_launch(&e, y, x->act[d] + x->x_off, x->act[d] + x->z_off,
                                   y + x->y_ws, x->c->sms, x->c->compute[d]));
        }
    } else {
        void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
        OWNED {
            s[d] = x->act[d] + x->x_off;
            r[d] = x->act[d] + x->y_off;
        }
        BK_TRY(group_coll(x, it->group, it->op, (size_t)it->bytes, it->fp32, x->c->compute, s, r,
                          err, errlen));
    }
    return CM_OK;
}

static bool ring_item(const M *x, const work_item *it)
{
    return x->cp_overlap && it->kind == WORK_COLL && it->component == WC_CP &&
           it->op == COLL_SEND_RECV;
}

/* One ring exchange on the ring streams, from and into the ring's own buffers (the attention
 * core computing beside it uses x, y and z). */
static cm_status ring_launch(M *x, const work_item *it, char *err, size_t errlen)
{
    void *sb[BK_MAX_GPUS], *rb[BK_MAX_GPUS];
    size_t half = x->cp_sz / 2;
    OWNED {
        sb[d] = x->act[d] + x->cp_off;
        rb[d] = x->act[d] + x->cp_off + half;
    }
    return group_coll(x, it->group, it->op, (size_t)it->bytes, it->fp32, x->cps, sb, rb, err,
                      errlen);
}

/* A list on the current stage; with item tracing, one span per item on stage s. Megatron's
 * ring exchanges (ring_item) go to the ring streams, forked from the compute stream at the
 * first and joined back before the first item that is neither an exchange nor attention. */
static cm_status exec_list(M *x, int s, const work_list *l, item_ctx ic, int gl, int mb,
                           int chunk, char *err, size_t errlen)
{
    bool ring_open = false;
    for (int i = 0; i < l->n; i++) {
        const work_item *it = &l->item[i];
        if (ring_item(x, it)) {
            if (!ring_open) {
                DEV(cudaEventRecord(x->ev_cp0[d], x->c->compute[d]));
                DEV(cudaStreamWaitEvent(x->cps[d], x->ev_cp0[d], 0));
                ring_open = true;
            }
            int j0 = -1;
            if (x->inst_items) BK_TRY(span_begin(x, s, x->cps, &j0, err, errlen));
            BK_TRY(ring_launch(x, it, err, errlen));
            if (x->inst_items)
                BK_TRY(span_end(x, s, x->cps, j0, TRACE_TID_COLL, it->name, mb, chunk, gl, false,
                                err, errlen));
            continue;
        }
        if (ring_open && it->component != WC_ATTENTION) {
            DEV(cudaEventRecord(x->ev_cp1[d], x->cps[d]));
            DEV(cudaStreamWaitEvent(x->c->compute[d], x->ev_cp1[d], 0));
            ring_open = false;
        }
        int i0 = -1;
        if (x->inst_items) BK_TRY(span_begin(x, s, x->c->compute, &i0, err, errlen));
        BK_TRY(exec_item(x, it, ic, err, errlen));
        if (x->inst_items)
            BK_TRY(span_end(x, s, x->c->compute, i0, TRACE_TID_COMPUTE, it->name, mb, chunk, gl,
                            false, err, errlen));
    }
    if (ring_open) {
        DEV(cudaEventRecord(x->ev_cp1[d], x->cps[d]));
        DEV(cudaStreamWaitEvent(x->c->compute[d], x->ev_cp1[d], 0));
    }
    return CM_OK;
}

/* ---- data-parallel unit traffic ----------------------------------------------------------- */

static bool layer_moe(const M *x, int gl) { return x->w->moe && gl >= x->w->first_moe_layer; }

/* Gather layer j's (index within the stage) parameters on stream set `streams`. */
static cm_status dp_gather(M *x, int j, int kind, cudaStream_t *streams, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t cnt = x->unit_cnt[kind], shard = cnt * 2;
    EACH_DEV
    {
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
    BK_TRY(group_coll(x, GROUP_DP, w->gather_op, cnt * g * 2, false, streams, s, r, err, errlen));
    size_t ge = (size_t)x->grp[GROUP_EDP].size;
    if (kind && !w->fsdp && x->ecnt && ge > 1) { /* expert weights over expert-dp */
        size_t es = x->ecnt * 2;
        EACH_DEV
        {
            r[d] = carve(x->state[d], x->w_bytes, es * ge, (size_t)j * es * ge + shard * g);
            s[d] = (char *)r[d] + x->grp[GROUP_EDP].rank_of[d] * es;
        }
        BK_TRY(group_coll(x, GROUP_EDP, w->gather_op, x->ecnt * ge * 2, false, streams, s, r, err,
                          errlen));
    }
    return CM_OK;
}

static cm_status dp_reduce(M *x, int j, int kind, cudaStream_t *streams, char *err,
                           size_t errlen)
{
    const work_plan *w = x->w;
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t cnt = x->unit_cnt[kind], shard = cnt * x->red_esz;
    EACH_DEV
    {
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
    BK_TRY(group_coll(x, GROUP_DP, w->reduce_op, shard * g, x->red_esz == 4, streams, s, r, err,
                      errlen));
    size_t ge = (size_t)x->grp[GROUP_EDP].size;
    if (kind && !w->fsdp && x->ecnt && ge > 1) {
        size_t es = x->ecnt * x->red_esz;
        EACH_DEV
        {
            char *grads = x->state[d] + x->w_bytes;
            s[d] = carve(grads, x->g_bytes, es * ge, (size_t)j * es * ge + shard * g);
            r[d] = w->reduce_op == COLL_ALL_REDUCE
                       ? s[d]
                       : (char *)s[d] + x->grp[GROUP_EDP].rank_of[d] * es;
        }
        BK_TRY(group_coll(x, GROUP_EDP, w->reduce_op, es * ge, x->red_esz == 4, streams, s, r,
                          err, errlen));
    }
    return CM_OK;
}

/* Elements per DP rank of stage s's root unit (embedding and/or output layer). */
static size_t root_cnt(const M *x, int s)
{
    size_t g = (size_t)(x->grp[GROUP_DP].size > 1 ? x->grp[GROUP_DP].size : 1);
    return (size_t)ceil(x->w->stage_root_params[s] / (double)g);
}

/* ---- FSDP2's copies (fsdp_copies.h: the list the estimate prices, run with PyTorch's kernels
 * for them) ------------------------------------------------------------------------------------ */

/* The copies of a unit of cnt elements per rank. */
static void unit_copies(const M *x, size_t cnt, fsdp_copies *fc)
{
    int g = x->grp[GROUP_DP].size > 1 ? x->grp[GROUP_DP].size : 1;
    fsdp_copies_unit((double)cnt * g, g, fc);
}

/* All-gather copy-in of a unit of cnt elements per rank: the fp32 shard (carved at src_slot)
 * cast into the flat bf16 buffer, then copied into this rank's slot of the all-gather buffer at
 * dst_off, which the gather then runs in place over (the two foreach copies). */
static cm_status copy_in(M *x, size_t cnt, size_t src_slot, size_t dst_off, cudaStream_t *streams,
                         char *err, size_t errlen)
{
    fsdp_copies fc;
    unit_copies(x, cnt, &fc);
    bkk_ew ci = ew_of(&fc.cast_in.access), si = ew_of(&fc.slot_in.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        const char *shard = carve(x->state[d], x->w_bytes, 4 * cnt, src_slot);
        char *flat = x->commbuf[d] + x->cin_off;
        char *slot = x->commbuf[d] + dst_off + (size_t)x->grp[GROUP_DP].rank_of[d] * 2 * cnt;
        CUDA_TRY(bkk_ew_launch(&ci, flat, shard, NULL, NULL, x->c->sms, streams[d]));
        CUDA_TRY(bkk_ew_launch(&si, slot, flat, NULL, NULL, x->c->sms, streams[d]));
    }
    return CM_OK;
}

/* Layer unit j's (kind: dense 0, MoE 1) all-gather copy-in. */
static cm_status fsdp2_copy_in(M *x, int j, int kind, cudaStream_t *streams, char *err,
                               size_t errlen)
{
    size_t n = x->unit_cnt[kind];
    return copy_in(x, n, (size_t)j * 4 * n, x->gbuf_off[j % 2], streams, err, errlen);
}

/* Copy-out: the gathered unit into the unsharded parameters (split_with_sizes_copy); a layer
 * unit's from gbuf[j % 2] into its unsharded buffer, the current stage's root unit from the root
 * buffer into the activation pool's y region (sized for it). */
static cm_status fsdp2_copy_out(M *x, int j, int kind, bool root, cudaStream_t *streams,
                                char *err, size_t errlen)
{
    size_t n = root ? root_cnt(x, stage_of(x, x->dlo)) : x->unit_cnt[kind];
    fsdp_copies fc;
    unit_copies(x, n, &fc);
    bkk_ew co = ew_of(&fc.copy_out.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        const char *src = x->commbuf[d] + (root ? x->root_off : x->gbuf_off[j % 2]);
        char *dst = root ? x->act[d] + x->y_off : x->commbuf[d] + x->ggrad_off[j % 2];
        CUDA_TRY(bkk_ew_launch(&co, dst, src, NULL, NULL, x->c->sms, streams[d]));
    }
    return CM_OK;
}

/* Reduce-scatter copy-in of layer unit j (chunk_cat): its bf16 gradients cast into the fp32
 * reduce buffer rbuf[j % 2]. */
static cm_status fsdp2_rs_copy_in(M *x, int j, int kind, cudaStream_t *streams, char *err,
                                  size_t errlen)
{
    fsdp_copies fc;
    unit_copies(x, x->unit_cnt[kind], &fc);
    bkk_ew rc = ew_of(&fc.rs_cast.access);
    EACH_DEV
    {
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        CUDA_TRY(bkk_ew_launch(&rc, x->commbuf[d] + x->rbuf_off[j % 2],
                               x->commbuf[d] + x->ggrad_off[j % 2], NULL, NULL, x->c->sms,
                               streams[d]));
    }
    return CM_OK;
}

/* The FSDP root unit (embedding + output layer) of the current stage: gathered once per step
 * (under FSDP2 at each forward and again before the output layer's backward, with its copy-in
 * first: the gather then runs in place over this rank's slot), its gradients reduced in chunks
 * of a unit buffer after the backward. Non-FSDP: the root's gradients in place. */
static cm_status root_gather(M *x, cudaStream_t *streams, char *err, size_t errlen)
{
    void *s[BK_MAX_GPUS], *r[BK_MAX_GPUS];
    size_t g = (size_t)x->grp[GROUP_DP].size;
    size_t rc = root_cnt(x, stage_of(x, x->dlo));
    if (x->fsdp2_copies) BK_TRY(copy_in(x, rc, 0, x->root_off, streams, err, errlen));
    EACH_DEV
    {
        r[d] = x->commbuf[d] + x->root_off;
        s[d] = x->fsdp2_copies ? (char *)r[d] + (size_t)x->grp[GROUP_DP].rank_of[d] * rc * 2
                               : carve(x->state[d], x->w_bytes, rc * 2, 0);
    }
    return group_coll(x, GROUP_DP, COLL_ALL_GATHER, rc * g * 2, false, streams, s, r, err,
                      errlen);
}

/* The chunks of the root's gradients root_reduce reduces: unit-buffer sized. */
static int root_pieces(const M *x, int s)
{
    size_t g = (size_t)x->grp[GROUP_DP].size;
    double total = root_cnt(x, s) * (double)g * x->red_esz;
    size_t chunk = x->unit_cnt[0] * g * x->red_esz;
    return chunk ? (int)ceil(total / chunk) : 0;
}

static cm_status root_reduce(M *x, cudaStream_t *streams, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    size_t g = (size_t)x->grp[GROUP_DP].size;
    double total = root_cnt(x, stage_of(x, x->dlo)) * (double)g * x->red_esz;
    size_t chunk = x->unit_cnt[0] * g * x->red_esz;
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
        if (x->fsdp2_copies) {
            /* FSDP2: the piece's chunk_cat on the compute stream once the previous reduction
             * out of the buffer is done, the reduction after it */
            DEV(cudaStreamWaitEvent(x->c->compute[d], x->ev_rdone[d][0], 0));
            BK_TRY(fsdp2_rs_copy_in(x, 0, 0, x->c->compute, err, errlen));
            DEV(cudaEventRecord(x->ev_bw[d], x->c->compute[d]));
            DEV(cudaStreamWaitEvent(streams[d], x->ev_bw[d], 0));
        }
        EACH_DEV
        {
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
        if (x->fsdp2_copies) DEV(cudaEventRecord(x->ev_rdone[d][0], streams[d]));
    }
    return CM_OK;
}

static cm_status adam(M *x, char *err, size_t errlen)
{
    EACH_DEV
    {
        size_t n = (size_t)x->w->stage_optimizer_params[stage_of(x, d)];
        if (x->P == 1) n = (size_t)x->w->stage_optimizer_params[0];
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        float *base = (float *)x->state[d];
        void *copy = x->w->optimizer_bf16_copy && x->act_bytes >= 2 * n ? x->act[d] : NULL;
        CUDA_TRY(bkk_adam(base, base + n, base + 2 * n, base + 3 * n, copy, n, x->c->sms,
                          x->c->compute[d]));
    }
    return CM_OK;
}

static cm_status issue_gather(M *x, int s, int j, int gl, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    int i0;
    if (x->w->fsdp) DEV(cudaStreamWaitEvent(c->comm[d], x->ev_used[d][j % 2], 0));
    BK_TRY(span_begin(x, s, c->comm, &i0, err, errlen));
    if (x->fsdp2_copies) BK_TRY(fsdp2_copy_in(x, j, layer_moe(x, gl), c->comm, err, errlen));
    BK_TRY(dp_gather(x, j, layer_moe(x, gl), c->comm, err, errlen));
    char nm[40];
    snprintf(nm, sizeof nm, "AG layer %d", gl);
    BK_TRY(span_end(x, s, c->comm, i0, TRACE_TID_COLL, nm, -1, -1, gl, false, err, errlen));
    DEV(cudaEventRecord(x->ev_gath[d][j % 2], c->comm[d]));
    return CM_OK;
}

/* FSDP2's unshard of stage s's root unit: once the compute stream is done with the root buffer,
 * the gather (with its copy-in) on the communication stream, the compute stream waiting for it
 * (nothing to hide it behind), then the copy-out. */
static cm_status root_unshard(M *x, int s, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    int i0;
    DEV(cudaEventRecord(x->ev_rfree[d], c->compute[d]));
    DEV(cudaStreamWaitEvent(c->comm[d], x->ev_rfree[d], 0));
    BK_TRY(span_begin(x, s, c->comm, &i0, err, errlen));
    BK_TRY(root_gather(x, c->comm, err, errlen));
    BK_TRY(span_end(x, s, c->comm, i0, TRACE_TID_COLL, "AG root", -1, -1, -1, false, err, errlen));
    DEV(cudaEventRecord(x->ev_root[d], c->comm[d]));
    DEV(cudaStreamWaitEvent(c->compute[d], x->ev_root[d], 0));
    return fsdp2_copy_out(x, 0, 0, true, c->compute, err, errlen);
}

/* ---- one chunk of one stage --------------------------------------------------------------- */

/* The layers of chunk op->chunk of stage s, forward or backward, for one micro-batch, with the
 * output layer on the last stage's last chunk and the data-parallel traffic around them. */
static cm_status run_chunk(M *x, int s, const work_pp_op *op, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    int first = work_chunk_first_layer(w, s, op->chunk);
    int L = work_chunk_layer_count(w, s, op->chunk);
    int local0 = w->vpp > 1 ? op->chunk * w->chunk_layers : 0;
    bool head = s == w->pp - 1 && op->chunk == w->vpp - 1;
    bool dp = w->dp_active && x->grp[GROUP_DP].size > 1;
    int mb = op->microbatch, micro = w->microbatches;
    int ch = w->vpp > 1 ? op->chunk : -1;
    item_ctx hc = {.layer = w->stage_layers[s], .buf = 0, .head = true};
    if (!op->backward) {
        bool G = dp && w->gather_bytes > 0 && (w->gather_each_micro || mb == 0);
        DEV(cudaEventRecord(x->ev_used[d][0], c->compute[d]));
        DEV(cudaEventRecord(x->ev_used[d][1], c->compute[d]));
        bool RU = dp && x->fsdp2_copies && op->chunk == 0 && root_cnt(x, s) > 0;
        if (RU) BK_TRY(root_unshard(x, s, err, errlen)); /* FSDP2: at every forward */
        if (G) BK_TRY(issue_gather(x, s, local0, first, err, errlen));
        for (int i = 0; i < L; i++) {
            int j = local0 + i, gl = first + i;
            if (G && i + 1 < L) BK_TRY(issue_gather(x, s, j + 1, gl + 1, err, errlen));
            if (G) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_gath[d][j % 2], 0));
            if (G && x->fsdp2_copies)
                BK_TRY(fsdp2_copy_out(x, j, layer_moe(x, gl), false, c->compute, err, errlen));
            item_ctx ic = {.layer = j, .buf = j % 2, .head = false};
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
        if (GB && i - 1 >= 0) BK_TRY(issue_gather(x, s, j - 1, gl - 1, err, errlen));
        if (GB) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_gath[d][j % 2], 0));
        if (GB && x->fsdp2_copies)
            BK_TRY(fsdp2_copy_out(x, j, layer_moe(x, gl), false, c->compute, err, errlen));
        if (R && w->fsdp) DEV(cudaStreamWaitEvent(c->compute[d], x->ev_rdone[d][j % 2], 0));
        item_ctx ic = {.layer = j, .buf = j % 2, .head = false};
        BK_TRY(exec_list(x, s, layer_moe(x, gl) ? &w->moe_bwd : &w->layer_bwd, ic, gl, mb, ch, err,
                         errlen));
        DEV(cudaEventRecord(x->ev_used[d][j % 2], c->compute[d]));
        if (R) {
            int i0;
            /* FSDP2's chunk_cat runs on the compute stream, before the reduce-scatter stream
             * waits for it (foreach_reduce) */
            if (x->fsdp2_copies)
                BK_TRY(fsdp2_rs_copy_in(x, j, layer_moe(x, gl), c->compute, err, errlen));
            DEV(cudaEventRecord(x->ev_bw[d], c->compute[d]));
            DEV(cudaStreamWaitEvent(c->comm[d], x->ev_bw[d], 0));
            BK_TRY(span_begin(x, s, c->comm, &i0, err, errlen));
            BK_TRY(dp_reduce(x, j, layer_moe(x, gl), c->comm, err, errlen));
            char nm[40];
            snprintf(nm, sizeof nm, "%s layer %d", w->reduce_op == COLL_ALL_REDUCE ? "AR" : "RS",
                     gl);
            BK_TRY(span_end(x, s, c->comm, i0, TRACE_TID_COLL, nm, -1, -1, gl, false, err, errlen));
            DEV(cudaEventRecord(x->ev_rdone[d][j % 2], c->comm[d]));
        }
    }
    if (RB && !head && s == 0 && op->chunk == 0) BK_TRY(root_unshard(x, s, err, errlen));
    if (R && op->chunk == 0 && root_cnt(x, s) > 0) {
        int i0;
        DEV(cudaEventRecord(x->ev_bw[d], c->compute[d]));
        DEV(cudaStreamWaitEvent(c->comm[d], x->ev_bw[d], 0));
        BK_TRY(span_begin(x, s, c->comm, &i0, err, errlen));
        BK_TRY(root_reduce(x, c->comm, err, errlen));
        BK_TRY(span_end(x, s, c->comm, i0, TRACE_TID_COLL,
                        w->reduce_op == COLL_ALL_REDUCE ? "AR root" : "RS root", -1, -1, -1, false,
                        err, errlen));
    }
    return CM_OK;
}

/* ---- pipeline transfers ------------------------------------------------------------------- */

static char *send_buf(M *x, int dir, int d) { return x->ppbuf[d] + (size_t)dir * x->p2p_slot; }
static char *recv_buf(M *x, int dir, int d, int slot)
{
    return x->ppbuf[d] + (size_t)(2 + dir * x->nslots + slot) * x->p2p_slot;
}

/* One grouped send/recv of p2p_sz bytes per column from stage `from` to stage `to`: sends on
 * the senders' streams ss, receives into slot on the receivers' streams rs. */
static cm_status p2p_launch(M *x, int dir, int from, int to, int slot, cudaStream_t *ss,
                            cudaStream_t *rs, char *err, size_t errlen)
{
    size_t count = x->p2p_sz / 2;
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
static cm_status issue_op(M *x, int s, const work_pp_op *op, char *err, size_t errlen)
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
    BK_TRY(span_begin(x, s, c->compute, &i0, err, errlen));
    BK_TRY(run_chunk(x, s, op, err, errlen));
    char nm[40];
    if (w->vpp > 1)
        snprintf(nm, sizeof nm, "%c%d (chunk %d)", op->backward ? 'B' : 'F', op->microbatch,
                 op->chunk);
    else
        snprintf(nm, sizeof nm, "%c%d", op->backward ? 'B' : 'F', op->microbatch);
    BK_TRY(span_end(x, s, c->compute, i0, TRACE_TID_COMPUTE, nm, op->microbatch,
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
        BK_TRY(span_begin(x, s, ps, &j0, err, errlen));
        BK_TRY(p2p_launch(x, k.dir, s, r, slot, ps, ps, err, errlen));
        snprintf(nm, sizeof nm, "send %c%d", op->backward ? 'B' : 'F', op->microbatch);
        if (w->vpp > 1) {
            size_t n = strlen(nm);
            snprintf(nm + n, sizeof nm - n, " (chunk %d)", op->chunk);
        }
        BK_TRY(span_end(x, s, ps, j0, k.dir ? TRACE_TID_SEND_BWD : TRACE_TID_SEND_FWD, nm,
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
                BK_TRY(mark(x, td, c->compute[td], &iw, err, errlen));
                x->marks[opmark].wait = iw;
            }
        }
    }
    return CM_OK;
}

/* ---- one step -------------------------------------------------------------------------------- */

static cm_status step(M *x, char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    bool dp = w->dp_active && x->grp[GROUP_DP].size > 1;
    set_all(x);
    DEV(cudaEventRecord(x->e0[d], c->compute[d]));
    /* The communication and p2p streams start with the step. */
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
            BK_TRY(span_begin(x, s, c->comm, &i0, err, errlen));
            BK_TRY(root_gather(x, c->comm, err, errlen));
            BK_TRY(span_end(x, s, c->comm, i0, TRACE_TID_COLL, "AG root", -1, -1, -1, false, err,
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
    for (int s = 0; s < x->P; s++) {
        int i0;
        set_stage(x, s);
        BK_TRY(span_begin(x, s, c->compute, &i0, err, errlen));
        BK_TRY(adam(x, err, errlen));
        BK_TRY(span_end(x, s, c->compute, i0, TRACE_TID_COMPUTE, "optimizer", -1, -1, -1, false,
                        err, errlen));
    }
    set_all(x);
    DEV(cudaEventRecord(x->e1[d], c->compute[d]));
    return CM_OK;
}

/* Every device idle, and (several processes) every process here before any goes on, so that
 * the next timed launches start together. */
static cm_status sync_all(M *x, char *err, size_t errlen)
{
    set_all(x);
    DEV(cudaDeviceSynchronize());
    bk_world_barrier();
    return CM_OK;
}

/* Time on the compute streams between e0 and e1, slowest device. */
static cm_status elapsed(M *x, double *s, char *err, size_t errlen)
{
    double worst = 0;
    set_all(x);
    EACH_DEV
    {
        float ms;
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        CUDA_TRY(cudaEventSynchronize(x->e1[d]));
        CUDA_TRY(cudaEventElapsedTime(&ms, x->e0[d], x->e1[d]));
        if (ms * 1e-3 > worst) worst = ms * 1e-3;
    }
    bk_world_max(&worst, 1); /* the slowest GPU of any process */
    *s = worst;
    return CM_OK;
}

/* Seconds from device d's step start to pool event i. */
static cm_status at(M *x, int d, int i, double *t, char *err, size_t errlen)
{
    float ms;
    CUDA_TRY(cudaSetDevice(x->c->dev[d]));
    CUDA_TRY(cudaEventElapsedTime(&ms, x->e0[d], x->pool[d].e[i]));
    *t = ms * 1e-3;
    return CM_OK;
}

/* The instrumented step's spans: per-stage busy time, bubble, blocked sends; the trace. */
static cm_status read_spans(M *x, bk_measure_result *out, trace_list *trace, char *err,
                            size_t errlen)
{
    double busy[BK_MAX_GPUS] = {0}, wait[BK_MAX_GPUS] = {0}, end[BK_MAX_GPUS] = {0};
    for (int i = 0; i < x->nmarks; i++) {
        const span_mark *m = &x->marks[i];
        double t0, t1;
        BK_TRY(at(x, m->dev, m->i0, &t0, err, errlen));
        BK_TRY(at(x, m->dev, m->i1, &t1, err, errlen));
        if (m->op) {
            busy[m->stage] += t1 - t0;
            double e = t1;
            if (m->wait >= 0) {
                double tw;
                BK_TRY(at(x, m->dev, m->wait, &tw, err, errlen));
                wait[m->stage] += fmax(0, tw - t1);
                e = tw;
            }
            if (e > end[m->stage]) end[m->stage] = e;
        }
        if (trace) {
            trace_span sp = {.stage = m->stage, .tid = (trace_tid)m->tid, .start_s = t0,
                             .end_s = t1, .microbatch = m->mb, .chunk = m->chunk,
                             .layer = m->layer};
            snprintf(sp.name, sizeof sp.name, "%s", m->name);
            if (trace_add(trace, &sp) != CM_OK)
                return cm_fail(err, errlen, CM_ENOMEM, "out of host memory (trace)");
        }
    }
    /* Each stage's figures come from the process driving its first GPU. */
    bk_world_sum(busy, x->P);
    bk_world_sum(wait, x->P);
    bk_world_max(end, x->P);
    /* The pipeline phase ends when the last stage's last chunk (and send) ends; a stage's
     * bubble is the part of that phase its compute stream spends neither in a chunk nor
     * blocked on a send: (p-1)/v chunks' worth under 1F1B, the estimate's bubble term. */
    int crit = 0;
    double phase = 0;
    for (int s = 0; s < x->P; s++) phase = fmax(phase, end[s]);
    out->pipeline_s = phase;
    for (int s = 0; s < x->P; s++) {
        out->stage_busy_s[s] = busy[s];
        out->stage_pp_wait_s[s] = wait[s];
        out->stage_bubble_s[s] = fmax(0, phase - busy[s] - wait[s]);
        if (busy[s] > busy[crit]) crit = s;
        if (trace) trace->gpu[s] = trace_dev(x, s);
    }
    out->critical_stage = crit;
    out->bubble_s = out->stage_bubble_s[crit];
    out->pp_exposed_s = out->stage_pp_wait_s[crit];
    return CM_OK;
}

/* Received activations and gradients equal what was sent: every receive slot written in the
 * instrumented step (poisoned before it) holds its sender's send buffer, byte for byte. */
static cm_status pp_check(M *x, bk_measure_result *out, char *err, size_t errlen)
{
    char *a = malloc(x->p2p_sz), *b = malloc(x->p2p_sz);
    if (!a || !b) {
        free(a);
        free(b);
        return cm_fail(err, errlen, CM_ENOMEM, "out of host memory (pipeline check)");
    }
    cm_status st = CM_OK;
    int per = x->c->own_hi - x->c->own_lo; /* GPUs per process: global index / per = process */
    for (int r = 0; r < x->P && st == CM_OK; r++)
        for (int dir = 0; dir < 2 && st == CM_OK; dir++) {
            int from = dir == 0 ? (r > 0 ? r - 1 : x->P - 1) : (r < x->P - 1 ? r + 1 : 0);
            int slots = x->made[r][dir] < x->nslots ? x->made[r][dir] : x->nslots;
            for (int slot = 0; slot < slots && st == CM_OK; slot++)
                for (int col = 0; col < x->S; col++) {
                    /* The sender's buffer goes to the receiver's process when they differ. */
                    int sd = from * x->S + col, rd = r * x->S + col;
                    int sp = sd / per, rp = rd / per;
                    cudaError_t e1 = cudaSuccess, e2 = cudaSuccess;
                    if (bk_owns(x->c, sd)) {
                        e1 = cudaSetDevice(x->c->dev[sd]);
                        if (e1 == cudaSuccess)
                            e1 = cudaMemcpy(a, send_buf(x, dir, sd), x->p2p_sz,
                                            cudaMemcpyDeviceToHost);
                        if (e1 == cudaSuccess && sp != rp) bk_world_send(a, x->p2p_sz, rp);
                    }
                    if (bk_owns(x->c, rd)) {
                        if (sp != rp) bk_world_recv(a, x->p2p_sz, sp);
                        e2 = cudaSetDevice(x->c->dev[rd]);
                        if (e2 == cudaSuccess)
                            e2 = cudaMemcpy(b, recv_buf(x, dir, rd, slot), x->p2p_sz,
                                            cudaMemcpyDeviceToHost);
                    }
                    if (e1 != cudaSuccess || e2 != cudaSuccess) {
                        st = cm_fail(err, errlen, CM_EIO, "cudaMemcpy (pipeline check) failed: %s",
                                     cudaGetErrorString(e1 != cudaSuccess ? e1 : e2));
                        break;
                    }
                    if (!bk_owns(x->c, rd)) continue;
                    for (size_t i = 0; i < x->p2p_sz; i++) out->pp_wrong_bytes += a[i] != b[i];
                    out->pp_checked++;
                }
        }
    free(a);
    free(b);
    if (st == CM_OK) {
        double v[2] = {(double)out->pp_wrong_bytes, (double)out->pp_checked};
        bk_world_sum(v, 2);
        out->pp_wrong_bytes = (unsigned long long)v[0];
        out->pp_checked = (int)v[1];
    }
    return st;
}

/* ---- isolated timing of one launch ------------------------------------------------------ */

typedef enum {
    ISO_ITEM, ISO_GATHER, ISO_REDUCE, ISO_ADAM, ISO_COPY_IN, ISO_COPY_OUT, ISO_COPY_REDUCE, ISO_P2P
} iso_kind;

static cm_status iso_launch(M *x, iso_kind k, const work_item *it, bool head, int kind, char *err,
                            size_t errlen)
{
    item_ctx ic = {.layer = 0, .buf = 0, .head = head};
    set_all(x);
    switch (k) {
    case ISO_ITEM: return exec_item(x, it, ic, err, errlen);
    case ISO_GATHER: return dp_gather(x, 0, kind, x->c->compute, err, errlen);
    case ISO_REDUCE: return dp_reduce(x, 0, kind, x->c->compute, err, errlen);
    case ISO_ADAM: return adam(x, err, errlen);
    /* FSDP2's copies of a layer unit (kind 0 dense, 1 MoE) or of stage 0's root unit (kind 2;
     * its reduce-scatter copy-in: one unit-sized piece) */
    case ISO_COPY_IN:
        if (kind == 2)
            return copy_in(x, root_cnt(x, 0), 0, x->root_off, x->c->compute, err, errlen);
        return fsdp2_copy_in(x, 0, kind, x->c->compute, err, errlen);
    case ISO_COPY_OUT: return fsdp2_copy_out(x, 0, kind % 2, kind == 2, x->c->compute, err, errlen);
    case ISO_COPY_REDUCE: return fsdp2_rs_copy_in(x, 0, kind % 2, x->c->compute, err, errlen);
    case ISO_P2P: return p2p_launch(x, 0, 0, 1, 0, x->c->compute, x->c->compute, err, errlen);
    }
    return CM_OK;
}

static cm_status iso_time(M *x, iso_kind k, const work_item *it, bool head, int kind,
                          const bk_timing *tm, double *out, char *err, size_t errlen)
{
    for (int j = 0; j < (tm->warmup > 0 ? tm->warmup : 1); j++)
        BK_TRY(iso_launch(x, k, it, head, kind, err, errlen));
    int iters = 1;
    double t[64];
    int reps = tm->repeats > 64 ? 64 : (tm->repeats < 1 ? 1 : tm->repeats);
    for (int r = -1; r < reps; r++) {
        BK_TRY(sync_all(x, err, errlen));
        DEV(cudaEventRecord(x->e0[d], x->c->compute[d]));
        for (int j = 0; j < iters; j++) BK_TRY(iso_launch(x, k, it, head, kind, err, errlen));
        set_all(x);
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
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd,
                                 &w->head_bwd,  &w->moe_fwd,   &w->moe_bwd};
    size_t xa = 0, yc = 0, zb = 0, wsmax = 0;
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            const work_item *it = &lists[j]->item[i];
            size_t a = 0, b = 0, cc = 0;
            if (it->kind == WORK_GEMM) {
                a = gemm_a_bytes(it);
                b = it->weight_operand ? 0 : gemm_b_bytes(it);
                cc = is_weight_grad(it) ? 0 : gemm_c_bytes(it);
            } else if (it->kind == WORK_STREAM) { /* a in x, b in z, output and scratch in y */
                bkk_ew e = ew_of(&it->access);
                a = ew_bytes(&it->access, 1);
                b = ew_bytes(&it->access, 2);
                cc = ew_bytes(&it->access, 0);
                size_t ws = bkk_ew_workspace_bytes(&e, x->c->sms);
                if (ws > wsmax) wsmax = ws;
            } else {
                a = cc = (size_t)it->bytes;
            }
            if (a > xa) xa = a;
            if (b > zb) zb = b;
            if (cc > yc) yc = cc;
        }
    /* FSDP2's copy-out of the root unit lands in y */
    if (x->fsdp2_copies)
        for (int s = 0; s < x->P; s++) {
            size_t rb = root_cnt(x, s) * (size_t)x->grp[GROUP_DP].size * 2;
            if (rb > yc) yc = rb;
        }
    x->x_off = 0;
    x->x_sz = ALIGN(xa + 256);
    x->y_off = x->x_sz;
    x->y_ws = ALIGN(yc + 256);
    x->y_sz = ALIGN(x->y_ws + wsmax);
    x->z_off = x->y_off + x->y_sz;
    x->z_sz = ALIGN(zb + 256);
    /* the ring's send and receive buffers, apart from the attention core's operands */
    size_t ring = 0;
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++)
            if (ring_item(x, &lists[j]->item[i]) && (size_t)lists[j]->item[i].bytes > ring)
                ring = (size_t)lists[j]->item[i].bytes;
    x->cp_off = x->z_off + x->z_sz;
    x->cp_sz = ring ? 2 * ALIGN(ring + 256) : 0;
}

cm_status bk_measure(bk_ctx *c, const work_plan *w, const char *plan_name, int steps,
                     const bk_timing *tm, bk_measure_result *out, char *err, size_t errlen)
{
    return bk_measure_traced(c, w, plan_name, steps, tm, NULL, out, err, errlen);
}

cm_status bk_measure_traced(bk_ctx *c, const work_plan *w, const char *plan_name, int steps,
                            const bk_timing *tm, trace_list *trace, bk_measure_result *out,
                            char *err, size_t errlen)
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
    int P = work_local_pp(l, c->ngpus);
    int S = l->tp * l->cp * dpl;
    if (w->moe && l->ep > 1 && S % (l->ep * layout_etp(l)))
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan %s: the expert-parallel group (ep*etp = %d GPUs) does not fit the "
                       "%d GPUs of a stage measured here: lower --ep",
                       plan_name, l->ep * layout_etp(l), S);
    M *x = calloc(1, sizeof *x);
    if (!x) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    x->c = c;
    x->w = w;
    x->S = S;
    x->P = P;
    x->nd = S * P;
    x->olo = c->own_lo < x->nd ? c->own_lo : x->nd;
    x->ohi = c->own_hi < x->nd ? c->own_hi : x->nd;
    set_all(x);
    out->gpus_used = x->nd;
    out->dp_measured = dpl;
    out->stages_run = P;
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
    /* The schedule and the host's issue order. */
    {
        int m = w->microbatches, v = w->vpp;
        x->per = 2 * m * v;
        x->sched = malloc(sizeof *x->sched * (size_t)x->per * P);
        x->order = malloc(sizeof *x->order * (size_t)x->per * P);
        if (!x->sched || !x->order) {
            st = cm_fail(err, errlen, CM_ENOMEM, "out of host memory (schedule)");
            goto done;
        }
        for (int s = 0; s < P; s++) work_pp_schedule(P, v, m, s, x->sched + (size_t)s * x->per);
        x->nslots = P > 1 ? work_pp_slots(P, v, m) : 1;
        if (x->nslots > BK_MAX_SLOTS) {
            st = cm_fail(err, errlen, CM_EINVAL,
                         "plan %s: the pipeline schedule needs %d receive buffers per direction, "
                         "more than the %d the backend keeps",
                         plan_name, x->nslots, BK_MAX_SLOTS);
            goto done;
        }
        x->norder = work_pp_issue_order(P, v, m, x->nslots, x->order);
        if (x->norder != x->per * P) {
            st = cm_fail(err, errlen, CM_EINVAL,
                         "plan %s: internal: the pipeline schedule (pp %d, vpp %d, %d "
                         "micro-batches) cannot be issued (%d)",
                         plan_name, P, v, m, x->norder);
            goto done;
        }
        out->pp_slots = x->nslots;
    }
    BK_TRY(make_groups(x, l, dpl, err, errlen));

    /* Baseline: context, cuBLAS workspace, NCCL communicators. */
    double base = 0, freemin = INFINITY;
    OWNED {
        size_t fr, tot;
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaMemGetInfo(&fr, &tot));
        if ((double)(tot - fr) > base) base = (double)(tot - fr);
        if ((double)fr < freemin) freemin = (double)fr;
    }
    bk_world_max(&base, 1);
    bk_world_min(&freemin, 1); /* every process decides the fit on the same figures */
    out->baseline_used_bytes = base;

    /* Pool sizes: the plan's own figures, grown where an operand needs more. */
    const memory_breakdown *mb = &w->est.memory;
    x->fsdp2_copies = w->fsdp && w->dp_active && l->framework == FRAMEWORK_FSDP2 &&
                      x->grp[GROUP_DP].size > 1;
    x->cp_overlap = l->cp > 1 && l->framework == FRAMEWORK_MEGATRON;
    size_regions(x);
    size_t g = (size_t)(x->grp[GROUP_DP].size > 1 ? x->grp[GROUP_DP].size : 1);
    size_t ge = (size_t)(x->grp[GROUP_EDP].size > 1 ? x->grp[GROUP_EDP].size : 1);
    double p = w->layer_params;
    x->red_esz = w->reduce_fp32 ? 4 : 2;
    x->unit_cnt[0] = (size_t)ceil(p / g);
    x->unit_cnt[1] = x->unit_cnt[0];
    if (w->moe) {
        x->unit_cnt[1] = (size_t)ceil((w->fsdp ? w->moe_layer_params : w->moe_dense_params) / g);
        if (!w->fsdp) x->ecnt = (size_t)ceil(w->moe_expert_params / ge);
    }
    size_t ucnt = x->unit_cnt[0] > x->unit_cnt[1] ? x->unit_cnt[0] : x->unit_cnt[1];
    size_t rcnt = 0;
    double opt_max = 0;
    for (int s = 0; s < P; s++) {
        if (root_cnt(x, s) > rcnt) rcnt = root_cnt(x, s);
        if (w->stage_optimizer_params[s] > opt_max) opt_max = w->stage_optimizer_params[s];
    }
    x->w_bytes = ALIGN((size_t)mb->weights_bytes);
    x->g_bytes = ALIGN((size_t)mb->gradients_bytes);
    size_t state_plan = x->w_bytes + x->g_bytes + ALIGN((size_t)mb->optimizer_bytes);
    size_t state_need = ALIGN((size_t)(16.0 * opt_max));
    size_t wmin = ALIGN(ucnt * g * 2 + x->ecnt * ge * 2),
           gmin = ALIGN((ucnt * g + x->ecnt * ge) * x->red_esz);
    if (x->w_bytes < wmin) x->w_bytes = wmin;
    if (x->g_bytes < gmin) x->g_bytes = gmin;
    x->state_bytes = x->w_bytes + x->g_bytes + ALIGN((size_t)mb->optimizer_bytes);
    if (x->state_bytes < state_need) x->state_bytes = state_need;
    size_t act_need = x->cp_off + x->cp_sz;
    size_t act_plan = ALIGN((size_t)mb->activations_bytes);
    x->act_bytes = act_plan > act_need ? act_plan : act_need;
    size_t comm_need = 0;
    double lp_max = w->moe && w->moe_layer_params > p ? w->moe_layer_params : p;
    if (w->fsdp && w->dp_active) {
        x->root_off = 0;
        x->root_sz = ALIGN(rcnt * g * 2);
        x->gbuf_sz = ALIGN(ucnt * g * 2);
        x->ggrad_sz = ALIGN((size_t)(2.0 * lp_max) + 256);
        x->rbuf_sz = ALIGN(ucnt * g * x->red_esz);
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
        if (x->fsdp2_copies) { /* the copy-in's flat bf16 buffer */
            x->cin_off = o;
            x->cin_sz = ALIGN((ucnt > rcnt ? ucnt : rcnt) * 2);
            o += x->cin_sz;
        }
        comm_need = o;
    }
    size_t comm_plan = ALIGN((size_t)mb->comm_buffer_bytes);
    x->comm_bytes = comm_plan > comm_need ? comm_plan : comm_need;
    /* Pipeline buffers: a send buffer and nslots receive buffers per direction. */
    if (P > 1) {
        x->p2p_sz = ((size_t)w->p2p_bytes) & ~(size_t)1;
        x->p2p_slot = ALIGN(x->p2p_sz);
        x->pp_bytes = (size_t)(2 + 2 * x->nslots) * x->p2p_slot;
    }
    double plan_pools = (double)state_plan + act_plan + comm_plan;
    double pools = (double)x->state_bytes + x->act_bytes + x->comm_bytes + x->pp_bytes;
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
                     (double)(x->comm_bytes + x->pp_bytes) / GiB, freemin / GiB, base / GiB,
                     (pools - freemin) / GiB);
        goto done;
    }
    OWNED {
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        char **dst[4] = {&x->state[d], &x->act[d], &x->commbuf[d], &x->ppbuf[d]};
        size_t sz[4] = {x->state_bytes, x->act_bytes, x->comm_bytes, x->pp_bytes};
        const char *what[4] = {"weights+gradients+optimizer", "activations",
                               "communication buffers", "pipeline send/receive buffers"};
        for (int i = 0; i < 4; i++) {
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
                goto allocated;
            }
            /* Random, never-zero bf16 data everywhere; optimizer states positive. Each GPU's
             * pipeline send buffers differ (the receive check tells senders apart). */
            CUDA_TRY(bkk_fill_bf16(*dst[i], sz[i] / 2, 17u * (uint32_t)i + 101u * (uint32_t)d,
                                   -1.0f, 1.0f, c->compute[d]));
        }
        for (int i = 0; i < 2; i++) {
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_used[d][i], cudaEventDisableTiming));
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_gath[d][i], cudaEventDisableTiming));
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_rdone[d][i], cudaEventDisableTiming));
        }
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_bw[d], cudaEventDisableTiming));
        if (x->cp_overlap) {
            CUDA_TRY(cudaStreamCreateWithFlags(&x->cps[d], cudaStreamNonBlocking));
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_cp0[d], cudaEventDisableTiming));
            CUDA_TRY(cudaEventCreateWithFlags(&x->ev_cp1[d], cudaEventDisableTiming));
        }
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_join[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_root[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_rfree[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreateWithFlags(&x->ev_done[d], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreate(&x->e0[d]));
        CUDA_TRY(cudaEventCreate(&x->e1[d]));
        if (P > 1)
            for (int dir = 0; dir < 2; dir++) {
                CUDA_TRY(cudaStreamCreateWithFlags(&x->ps[dir][d], cudaStreamNonBlocking));
                CUDA_TRY(cudaEventCreateWithFlags(&x->ev_sent[dir][d], cudaEventDisableTiming));
                CUDA_TRY(cudaEventCreateWithFlags(&x->ev_pjoin[dir][d], cudaEventDisableTiming));
                for (int k = 0; k < x->nslots; k++) {
                    CUDA_TRY(cudaEventCreateWithFlags(&x->ev_recv[dir][d][k],
                                                      cudaEventDisableTiming));
                    CUDA_TRY(cudaEventCreateWithFlags(&x->ev_cons[dir][d][k],
                                                      cudaEventDisableTiming));
                }
            }
    }

allocated:
    /* Every process goes on only if every process has its memory. */
    {
        double failed = st != CM_OK;
        bk_world_max(&failed, 1);
        if (failed > 0) {
            if (st == CM_OK)
                st = cm_fail(err, errlen, CM_ENOMEM,
                             "plan %s does not fit: another process of the run could not "
                             "allocate its GPUs' pools (its message says how much was short)",
                             plan_name);
            goto done;
        }
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
    OWNED {
        size_t fr, tot;
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaMemGetInfo(&fr, &tot));
        if ((double)(tot - fr) > out->peak_used_bytes) out->peak_used_bytes = (double)(tot - fr);
    }
    bk_world_max(&out->peak_used_bytes, 1);

    /* One instrumented step: spans of every chunk, send and collective (and item, for a
     * trace) on each stage's first GPU; the pipeline's receive buffers poisoned first. */
    if (P > 1)
        OWNED {
            CUDA_TRY(cudaSetDevice(c->dev[d]));
            CUDA_TRY(bkk_fill_bf16(x->ppbuf[d] + 2 * x->p2p_slot,
                                   (size_t)2 * x->nslots * x->p2p_slot / 2, 999u + (uint32_t)d,
                                   -4.0f, -2.0f, c->compute[d]));
        }
    x->inst = true;
    x->inst_items = trace != NULL;
    BK_TRY(sync_all(x, err, errlen));
    BK_TRY(step(x, err, errlen));
    BK_TRY(elapsed(x, &out->instrumented_step_s, err, errlen));
    BK_TRY(sync_all(x, err, errlen));
    x->inst = x->inst_items = false;
    BK_TRY(read_spans(x, out, trace, err, errlen));
    if (P > 1) BK_TRY(pp_check(x, out, err, errlen));

    /* Each item alone. Counts: the reported stage's dense and MoE layers. */
    double micro = w->microbatches;
    double nd = w->layers - w->moe_layers, nm = w->moe_layers;
    double hreps = w->has_head ? micro : 0;
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd,
                                 &w->head_bwd,  &w->moe_fwd,   &w->moe_bwd};
    double *res[6] = {out->layer_fwd_s, out->layer_bwd_s, out->head_fwd_s,
                      out->head_bwd_s,  out->moe_fwd_s,   out->moe_bwd_s};
    double reps[6] = {micro * nd, micro * nd, hreps, hreps, micro * nm, micro * nm};
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            BK_TRY(iso_time(x, ISO_ITEM, &lists[j]->item[i], j == 2 || j == 3, 0, tm, &res[j][i],
                            err, errlen));
            out->component_s[lists[j]->item[i].component] += reps[j] * res[j][i];
        }
    if (w->dp_active && x->grp[GROUP_DP].size > 1) {
        double gathers = w->gather_each_micro ? micro * (w->gather_in_bwd ? 2 : 1) : 1;
        double reduces = w->reduce_each_micro ? micro : 1;
        for (int kind = 0; kind < 2; kind++) {
            double n = kind ? nm : nd;
            if (n == 0) continue;
            double gs = 0, rs = 0;
            if (w->gather_bytes > 0) {
                BK_TRY(iso_time(x, ISO_GATHER, NULL, false, kind, tm, &gs, err, errlen));
                out->component_s[WC_DP] += n * gathers * gs;
            }
            BK_TRY(iso_time(x, ISO_REDUCE, NULL, false, kind, tm, &rs, err, errlen));
            out->component_s[WC_DP] += n * reduces * rs;
            if (kind == 0 || nd == 0) {
                out->gather_s = gs;
                out->reduce_s = rs;
            }
        }
        if (x->fsdp2_copies) {
            /* per layer unit and stage 0's root unit: copy-in and copy-out per gather, the
             * reduce-scatter copy-in per reduction (the root's in unit-sized pieces); the
             * copy-outs and reduce-scatter copy-ins are compute-stream time */
            double units[3] = {nd, nm, root_cnt(x, 0) > 0 ? 1 : 0};
            double pieces[3] = {1, 1, root_pieces(x, 0)};
            for (int kind = 0; kind < 3; kind++) {
                if (units[kind] == 0) continue;
                double ci, co, cr;
                BK_TRY(iso_time(x, ISO_COPY_IN, NULL, false, kind, tm, &ci, err, errlen));
                BK_TRY(iso_time(x, ISO_COPY_OUT, NULL, false, kind, tm, &co, err, errlen));
                BK_TRY(iso_time(x, ISO_COPY_REDUCE, NULL, false, kind, tm, &cr, err, errlen));
                double cmp = units[kind] * (gathers * co + reduces * pieces[kind] * cr);
                out->copies_compute_s += cmp;
                out->component_s[WC_FRAMEWORK] += cmp + units[kind] * gathers * ci;
            }
        }
    }
    if (P > 1) {
        BK_TRY(iso_time(x, ISO_P2P, NULL, false, 0, tm, &out->p2p_s, err, errlen));
        /* the estimate's count: a send each way per chunk and micro-batch */
        out->component_s[WC_PP] = micro * 2 * w->vpp * out->p2p_s;
    }
    BK_TRY(iso_time(x, ISO_ADAM, NULL, false, 0, tm, &out->optimizer_s, err, errlen));
    out->component_s[WC_OPTIMIZER] = out->optimizer_s;
    out->compute_s = out->component_s[WC_GEMM] + out->component_s[WC_ATTENTION] +
                     out->component_s[WC_ELEMENTWISE] + out->copies_compute_s;
    if (P == 1) out->bubble_s = out->pp_exposed_s = 0;
    /* FSDP2's copy-ins run ahead of the gathers, on the communication stream: what shows of
     * them is exposed communication, as the estimate counts it */
    out->exposed_comm_s =
        fmax(0, out->step_s - out->compute_s - out->optimizer_s - out->bubble_s);

done:
    if (st != CM_OK && err && strncmp(err, "plan ", 5) != 0) {
        char msg[CM_ERRLEN];
        snprintf(msg, sizeof msg, "%s", err);
        cm_fail(err, errlen, st, "plan %s: %s", plan_name, msg);
    }
    OWNED {
        cudaSetDevice(c->dev[d]);
        cudaDeviceSynchronize();
        if (x->state[d]) cudaFree(x->state[d]);
        if (x->act[d]) cudaFree(x->act[d]);
        if (x->commbuf[d]) cudaFree(x->commbuf[d]);
        if (x->ppbuf[d]) cudaFree(x->ppbuf[d]);
        for (int i = 0; i < 2; i++) {
            if (x->ev_used[d][i]) cudaEventDestroy(x->ev_used[d][i]);
            if (x->ev_gath[d][i]) cudaEventDestroy(x->ev_gath[d][i]);
            if (x->ev_rdone[d][i]) cudaEventDestroy(x->ev_rdone[d][i]);
        }
        if (x->ev_bw[d]) cudaEventDestroy(x->ev_bw[d]);
        if (x->cps[d]) cudaStreamDestroy(x->cps[d]);
        if (x->ev_cp0[d]) cudaEventDestroy(x->ev_cp0[d]);
        if (x->ev_cp1[d]) cudaEventDestroy(x->ev_cp1[d]);
        if (x->ev_join[d]) cudaEventDestroy(x->ev_join[d]);
        if (x->ev_root[d]) cudaEventDestroy(x->ev_root[d]);
        if (x->ev_rfree[d]) cudaEventDestroy(x->ev_rfree[d]);
        if (x->ev_done[d]) cudaEventDestroy(x->ev_done[d]);
        if (x->e0[d]) cudaEventDestroy(x->e0[d]);
        if (x->e1[d]) cudaEventDestroy(x->e1[d]);
        for (int dir = 0; dir < 2; dir++) {
            if (x->ps[dir][d]) cudaStreamDestroy(x->ps[dir][d]);
            if (x->ev_sent[dir][d]) cudaEventDestroy(x->ev_sent[dir][d]);
            if (x->ev_pjoin[dir][d]) cudaEventDestroy(x->ev_pjoin[dir][d]);
            for (int k = 0; k < BK_MAX_SLOTS; k++) {
                if (x->ev_recv[dir][d][k]) cudaEventDestroy(x->ev_recv[dir][d][k]);
                if (x->ev_cons[dir][d][k]) cudaEventDestroy(x->ev_cons[dir][d][k]);
            }
        }
        for (int i = 0; i < x->pool[d].created; i++) cudaEventDestroy(x->pool[d].e[i]);
        free(x->pool[d].e);
    }
    destroy_groups(x);
    free(x->sched);
    free(x->order);
    free(x->marks);
    free(x);
    return st;
}

/* ---- the pipeline and MoE figures for plan measure's report ---------------------------------- */

static double rel(double meas, double pred) { return pred != 0 ? (meas - pred) / pred : 0; }

size_t bk_measure_extra_text(const work_plan *w, const bk_measure_result *r, char *buf,
                             size_t len)
{
    size_t n = 0;
#define PUT(...)                                                                               \
    do {                                                                                       \
        int k_ = snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__);                        \
        if (k_ > 0) n += (size_t)k_;                                                           \
    } while (0)
    const time_breakdown *pt = &w->est.time;
    if (len) buf[0] = '\0';
    if (w->moe && w->layout.ep > 1)
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "  ep all-to-all (raw)", w->pred_component_s[WC_EP],
            r->component_s[WC_EP], 100 * rel(r->component_s[WC_EP], w->pred_component_s[WC_EP]));
    if (r->stages_run > 1) {
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "  pp send/recv (raw)", w->pred_component_s[WC_PP],
            r->component_s[WC_PP], 100 * rel(r->component_s[WC_PP], w->pred_component_s[WC_PP]));
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "  pp blocked on sends", pt->pp_s,
            r->pp_exposed_s, 100 * rel(r->pp_exposed_s, pt->pp_s));
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "pipeline bubble", pt->bubble_s, r->bubble_s,
            100 * rel(r->bubble_s, pt->bubble_s));
        /* the busiest stage's chunks as they ran in the schedule, against the estimate's
         * compute plus the communication it leaves in the compute stream */
        double busy_pred = pt->compute_s + pt->tp_s + pt->cp_s + pt->ep_s;
        int cs = r->critical_stage;
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "busiest stage in schedule", busy_pred,
            r->stage_busy_s[cs], 100 * rel(r->stage_busy_s[cs], busy_pred));
        PUT("  pipeline (%s, %d stages, %d micro-batches; instrumented step %.4f s, pipeline "
            "phase %.4f s): busiest stage %d;",
            w->vpp > 1 ? "interleaved 1F1B" : "1F1B", r->stages_run, w->microbatches,
            r->instrumented_step_s, r->pipeline_s, cs);
        for (int s = 0; s < r->stages_run && s < BK_MEASURE_MAX_STAGES; s++)
            PUT(" stage %d busy %.4f s, bubble %.4f s, blocked on sends %.4f s%s", s,
                r->stage_busy_s[s], r->stage_bubble_s[s], r->stage_pp_wait_s[s],
                s + 1 < r->stages_run ? ";" : "\n");
        PUT("  pipeline transfers: %d compared, %s (%llu bytes differ); one transfer %.3f ms "
            "isolated (pred %.3f ms), %d receive buffer(s) per direction\n",
            r->pp_checked, r->pp_wrong_bytes ? "WRONG" : "received == sent", r->pp_wrong_bytes,
            r->p2p_s * 1e3, w->p2p_pred_s * 1e3, r->pp_slots);
    }
    if (w->moe)
        PUT("  MoE: %d MoE layers on the stage, %d local experts x %.0f rows each (grouped "
            "GEMMs), ep %d, expert dp %d\n",
            w->moe_layers, w->local_experts, w->expert_rows, w->layout.ep,
            w->group_size[GROUP_EDP]);
#undef PUT
    return n;
}

json_t *bk_measure_extra_json(const work_plan *w, const bk_measure_result *r)
{
    json_t *j = json_object();
    if (!j) return NULL;
    json_object_set_new(j, "stages_run", json_integer(r->stages_run));
    json_object_set_new(j, "schedule", json_string(w->vpp > 1 ? "interleaved-1f1b" : "1f1b"));
    json_object_set_new(j, "predicted_bubble_s", json_real(w->est.time.bubble_s));
    json_object_set_new(j, "measured_bubble_s", json_real(r->bubble_s));
    json_object_set_new(j, "predicted_pp_s", json_real(w->est.time.pp_s));
    json_object_set_new(j, "measured_pp_blocked_s", json_real(r->pp_exposed_s));
    json_object_set_new(j, "measured_p2p_one_s", json_real(r->p2p_s));
    json_object_set_new(j, "predicted_p2p_one_s", json_real(w->p2p_pred_s));
    json_object_set_new(j, "instrumented_step_s", json_real(r->instrumented_step_s));
    json_object_set_new(j, "pipeline_phase_s", json_real(r->pipeline_s));
    json_object_set_new(j, "critical_stage", json_integer(r->critical_stage));
    json_object_set_new(j, "transfers_checked", json_integer(r->pp_checked));
    json_object_set_new(j, "transfer_wrong_bytes", json_integer((json_int_t)r->pp_wrong_bytes));
    json_t *st = json_array();
    for (int s = 0; s < r->stages_run && s < BK_MEASURE_MAX_STAGES; s++)
        json_array_append_new(st, json_pack("{s:i, s:i, s:f, s:f, s:f}", "stage", s, "layers",
                                            w->stage_layers[s], "busy_s", r->stage_busy_s[s],
                                            "bubble_s", r->stage_bubble_s[s], "blocked_on_sends_s",
                                            r->stage_pp_wait_s[s]));
    json_object_set_new(j, "stages", st);
    if (w->moe)
        json_object_set_new(j, "moe",
                            json_pack("{s:i, s:i, s:f, s:i, s:i, s:f, s:f}", "moe_layers",
                                      w->moe_layers, "local_experts", w->local_experts,
                                      "expert_rows", w->expert_rows, "ep", w->layout.ep,
                                      "expert_dp", w->group_size[GROUP_EDP], "predicted_ep_s",
                                      w->pred_component_s[WC_EP], "measured_ep_raw_s",
                                      r->component_s[WC_EP]));
    return j;
}
