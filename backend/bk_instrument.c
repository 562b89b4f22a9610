/*
 * bk_instrument.c — what plan measure learns beyond the step's time (bk_run.h):
 *  - the instrumented step: CUDA events (pooled per GPU, reused) around every chunk, pipeline
 *    send and data-parallel collective, and for a trace every work item, on the first GPU of
 *    each stage; from them each stage's busy time, its time blocked on sends, the bubble and
 *    the trace (trace.h), all timed from that GPU's step start;
 *  - the pipeline check: every receive slot written in that step holds its sender's buffer,
 *    byte for byte;
 *  - each distinct item alone (same launch on every GPU, back-to-back repeats, median: the
 *    timing engine, bk_timing.h), times its count per step, which gives the per-component
 *    times;
 *  - the out-of-memory report: a plan that does not fit names the plan, what each GPU needs and
 *    what is free.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_run.h"
#include "units.h"


/* ---- events and spans of the instrumented step ----------------------------------------------- */

/* Record a pooled event on stream st of device d; *idx is its index in the pool. */
cm_status bk_mark(bk_run *x, int d, cudaStream_t st, int *idx, char *err, size_t errlen)
{
    *idx = -1;
    if (!bk_owns(x->c, d)) return CM_OK; /* another process's GPU */
    ev_pool *p = &x->events[d];
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

static cm_status add_mark(bk_run *x, const span_mark *m, char *err, size_t errlen)
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
cm_status bk_span_begin(bk_run *x, int s, cudaStream_t *streams, int *i0, char *err,
                        size_t errlen)
{
    *i0 = -1;
    if (!x->inst) return CM_OK;
    int d = trace_dev(x, s);
    return bk_mark(x, d, streams[d], i0, err, errlen);
}

cm_status bk_span_end(bk_run *x, int s, cudaStream_t *streams, int i0, int tid, const char *name,
                      int mb, int chunk, int layer, bool op, char *err, size_t errlen)
{
    if (!x->inst || i0 < 0) return CM_OK;
    int d = trace_dev(x, s), i1;
    BK_TRY(bk_mark(x, d, streams[d], &i1, err, errlen));
    span_mark m = {.stage = s, .tid = tid, .dev = d, .i0 = i0, .i1 = i1, .wait = -1, .op = op,
                   .mb = mb, .chunk = chunk, .layer = layer};
    snprintf(m.name, sizeof m.name, "%s", name);
    return add_mark(x, &m, err, errlen);
}

/* Seconds from device d's step start to pool event i. */
static cm_status at(bk_run *x, int d, int i, double *t, char *err, size_t errlen)
{
    float ms;
    CUDA_TRY(cudaSetDevice(x->c->dev[d]));
    CUDA_TRY(cudaEventElapsedTime(&ms, x->e0[d], x->events[d].e[i]));
    *t = ms * 1e-3;
    return CM_OK;
}

/* The instrumented step's spans: per-stage busy time, bubble, blocked sends; the trace. */
cm_status bk_read_spans(bk_run *x, bk_measure_result *out, trace_list *trace, char *err,
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

/* ---- the pipeline transfer check --------------------------------------------------------- */

/* Received activations and gradients equal what was sent: every receive slot written in the
 * instrumented step (poisoned before it) holds its sender's send buffer, byte for byte. */
cm_status bk_pp_check(bk_run *x, bk_measure_result *out, char *err, size_t errlen)
{
    char *a = malloc(x->pools.p2p_sz), *b = malloc(x->pools.p2p_sz);
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
                            e1 = cudaMemcpy(a, send_buf(x, dir, sd), x->pools.p2p_sz,
                                            cudaMemcpyDeviceToHost);
                        if (e1 == cudaSuccess && sp != rp) bk_world_send(a, x->pools.p2p_sz, rp);
                    }
                    if (bk_owns(x->c, rd)) {
                        if (sp != rp) bk_world_recv(a, x->pools.p2p_sz, sp);
                        e2 = cudaSetDevice(x->c->dev[rd]);
                        if (e2 == cudaSuccess)
                            e2 = cudaMemcpy(b, recv_buf(x, dir, rd, slot), x->pools.p2p_sz,
                                            cudaMemcpyDeviceToHost);
                    }
                    if (e1 != cudaSuccess || e2 != cudaSuccess) {
                        st = cm_fail(err, errlen, CM_EIO, "cudaMemcpy (pipeline check) failed: %s",
                                     cudaGetErrorString(e1 != cudaSuccess ? e1 : e2));
                        break;
                    }
                    if (!bk_owns(x->c, rd)) continue;
                    for (size_t i = 0; i < x->pools.p2p_sz; i++)
                        out->pp_wrong_bytes += a[i] != b[i];
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

/* ---- each item alone ------------------------------------------------------------------------ */

/* What bk_step_alone launches. */
typedef struct {
    bk_run *x;
    iso_kind k;
    const work_item *it;
    bool head;
    int kind;
} iso_arg;

static cm_status iso_launch_one(void *arg, int index, char *err, size_t errlen)
{
    (void)index;
    const iso_arg *a = arg;
    return bk_step_alone(a->x, a->k, a->it, a->head, a->kind, err, errlen);
}

/* One launch timed alone on every used GPU's compute stream: warm-up, one timed launch sizes
 * the repeats to min_repeat_s (1..50 launches), every GPU idle and every process at a barrier
 * before each repeat; slowest GPU, median. */
static cm_status iso_time(bk_run *x, iso_kind k, const work_item *it, bool head, int kind,
                          const bk_timing *tm, double *out, char *err, size_t errlen)
{
    iso_arg a = {.x = x, .k = k, .it = it, .head = head, .kind = kind};
    bk_timed t = {.launch = iso_launch_one, .arg = &a, .dev_lo = x->olo, .dev_hi = x->ohi,
                  .streams = x->c->compute, .start = x->e0, .stop = x->e1,
                  .sync = BK_SYNC_DEVICES, .across_processes = true,
                  .warmup = tm->warmup > 0 ? tm->warmup : 1, .probe_launches = 1,
                  .launches_per_repeat = 0, .min_launches = 1, .max_launches = 50,
                  .unsized_launches = 50, .min_repeat_s = tm->min_repeat_s, .warmup_s = 0,
                  .repeats = tm->repeats};
    bk_timed_result r;
    BK_TRY(bk_time(x->c, &t, &r, err, errlen));
    *out = r.time_s;
    return CM_OK;
}

cm_status bk_time_items(bk_run *x, const bk_timing *tm, bk_measure_result *out, char *err,
                        size_t errlen)
{
    const work_plan *w = x->w;
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
            /* FSDP2's one-GPU copies: compute-stream items (work_plan.fsdp2_copy_items) */
            if (lists[j]->item[i].component == WC_FRAMEWORK)
                out->copies_compute_s += reps[j] * res[j][i];
        }
    if (w->dp_active && (x->grp[GROUP_DP].size > 1 || x->fsdp2_copies)) {
        double gathers = w->gather_each_micro ? micro * (w->gather_in_bwd ? 2 : 1) : 1;
        double reduces = w->reduce_each_micro ? micro : 1;
        for (int kind = 0; kind < 2 && x->grp[GROUP_DP].size > 1; kind++) {
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
                if (x->fsdp2_acc) { /* each micro-batch's fp32 sum (bk_step.c) */
                    double ac, aa;
                    BK_TRY(iso_time(x, ISO_ACC_CAST, NULL, false, kind, tm, &ac, err, errlen));
                    BK_TRY(iso_time(x, ISO_ACC_ADD, NULL, false, kind, tm, &aa, err, errlen));
                    cmp += units[kind] * (ac + (micro - 1) * aa);
                }
                out->copies_compute_s += cmp;
                out->component_s[WC_FRAMEWORK] += cmp + units[kind] * gathers * ci;
            }
        }
    }
    if (x->P > 1) {
        BK_TRY(iso_time(x, ISO_P2P, NULL, false, 0, tm, &out->p2p_s, err, errlen));
        /* the estimate's count: a send each way per chunk and micro-batch */
        out->component_s[WC_PP] = micro * 2 * w->vpp * out->p2p_s;
    }
    BK_TRY(iso_time(x, ISO_ADAM, NULL, false, 0, tm, &out->optimizer_s, err, errlen));
    out->component_s[WC_OPTIMIZER] = out->optimizer_s;
    out->compute_s = out->component_s[WC_GEMM] + out->component_s[WC_ATTENTION] +
                     out->component_s[WC_ELEMENTWISE] + out->copies_compute_s;
    return CM_OK;
}

/* ---- the out-of-memory report ---------------------------------------------------------------- */

cm_status bk_oom_pools(const bk_run *x, const char *plan_name, double freemin, double base,
                       char *err, size_t errlen)
{
    const bk_pools *p = &x->pools;
    double pools = p->total_bytes, G = UNITS_GIB_BYTES;
    return cm_fail(err, errlen, CM_ENOMEM,
                   "plan %s does not fit: each GPU needs %.2f GiB for the plan's tensors "
                   "(weights and optimizer states %.2f, then %.2f GiB for the step's largest "
                   "phase: training peak %.2f, end of backward %.2f, optimizer step %.2f, what "
                   "the step touches at once %.2f GiB) but only %.2f GiB are free after the CUDA "
                   "context, cuBLAS and NCCL took %.2f GiB: %.2f GiB short",
                   plan_name, pools / G, (double)p->persist_bytes / G, (double)p->phase_bytes / G,
                   p->phase_train_bytes / G, p->phase_bwd_end_bytes / G, p->phase_opt_bytes / G,
                   (double)p->touched_bytes / G, freemin / G, base / G, (pools - freemin) / G);
}

cm_status bk_oom_malloc(const bk_run *x, const char *plan_name, size_t bytes, const char *what,
                        int d, cudaError_t e, char *err, size_t errlen)
{
    size_t fr = 0, tot = 0;
    cudaGetLastError();
    cudaMemGetInfo(&fr, &tot);
    return cm_fail(err, errlen, CM_ENOMEM,
                   "plan %s does not fit: cudaMalloc of %.2f GiB (%s) failed on GPU %d "
                   "with %.2f GiB free (%s); the plan's arena needs %.2f GiB per GPU",
                   plan_name, bytes / UNITS_GIB_BYTES, what, d, fr / UNITS_GIB_BYTES, cudaGetErrorString(e),
                   x->pools.total_bytes / UNITS_GIB_BYTES);
}

cm_status bk_oom_elsewhere(const char *plan_name, char *err, size_t errlen)
{
    return cm_fail(err, errlen, CM_ENOMEM,
                   "plan %s does not fit: another process of the run could not "
                   "allocate its GPUs' arenas (its message says how much was short)",
                   plan_name);
}
