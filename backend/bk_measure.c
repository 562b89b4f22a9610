/*
 * bk_measure.c — plan measure on the local GPUs: one training step of a plan, set up, timed and
 * released (bk_measure, bk_measure_traced), and the report's pipeline and MoE rows.
 *
 * The files it rests on (bk_run.h holds the state they share):
 *  - bk_pools.c: how big the plan's memory arena is and where its regions lie (plain C);
 *  - bk_step.c: issuing the step onto every GPU's streams (schedule, overlap, transfers);
 *  - bk_instrument.c: the instrumented step's events and spans, the trace, the pipeline check,
 *    every item timed alone, the out-of-memory report;
 *  - bk_timing.c: the timing engine the steps and the items are timed with.
 *
 * Set-up: the pipeline schedule and the host's issue order, the communicators of every group
 * (Megatron rank order), the memory baseline (context, cuBLAS, NCCL), then the arena, sized
 * by the cost model's phases and allocated on every GPU (a plan that does not fit stops
 * before allocating, or when cudaMalloc fails, as the trainer would; every process agrees),
 * filled with random never-zero data.
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

#include "bk_run.h"
#include "fsdp_copies.h"
#include "units.h"

/* ---- communicators --------------------------------------------------------------------------- */

static void add_instance(group_set *g, const int *devs)
{
    int k = g->n++;
    for (int r = 0; r < g->size; r++) {
        g->dev[k][r] = devs[r];
        g->rank_of[devs[r]] = r;
    }
}

static cm_status make_groups(bk_run *x, const layout *l, int dpl, char *err, size_t errlen)
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

static void destroy_groups(bk_run *x)
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

/* ---- set-up ------------------------------------------------------------------------------- */

/* The pipeline schedule of every stage and the host's issue order. */
static cm_status make_schedule(bk_run *x, const char *plan_name, bk_measure_result *out,
                               char *err, size_t errlen)
{
    const work_plan *w = x->w;
    int m = w->microbatches, v = w->vpp, P = x->P;
    x->per = 2 * m * v;
    x->sched = malloc(sizeof *x->sched * (size_t)x->per * P);
    x->order = malloc(sizeof *x->order * (size_t)x->per * P);
    if (!x->sched || !x->order)
        return cm_fail(err, errlen, CM_ENOMEM, "out of host memory (schedule)");
    for (int s = 0; s < P; s++) work_pp_schedule(P, v, m, s, x->sched + (size_t)s * x->per);
    x->nslots = P > 1 ? work_pp_slots(P, v, m) : 1;
    if (x->nslots > BK_MAX_SLOTS)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan %s: the pipeline schedule needs %d receive buffers per direction, "
                       "more than the %d the backend keeps",
                       plan_name, x->nslots, BK_MAX_SLOTS);
    x->norder = work_pp_issue_order(P, v, m, x->nslots, x->order);
    if (x->norder != x->per * P)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan %s: internal: the pipeline schedule (pp %d, vpp %d, %d "
                       "micro-batches) cannot be issued (%d)",
                       plan_name, P, v, m, x->norder);
    out->pp_slots = x->nslots;
    return CM_OK;
}

/* Memory used before the plan's pools (context, cuBLAS workspace, NCCL communicators), the
 * most of any GPU, and the least free memory of any GPU; the same figures on every process. */
static cm_status baseline(bk_run *x, double *base, double *freemin, char *err, size_t errlen)
{
    *base = 0;
    *freemin = INFINITY;
    OWNED {
        size_t fr, tot;
        CUDA_TRY(cudaSetDevice(x->c->dev[d]));
        CUDA_TRY(cudaMemGetInfo(&fr, &tot));
        if ((double)(tot - fr) > *base) *base = (double)(tot - fr);
        if ((double)fr < *freemin) *freemin = (double)fr;
    }
    bk_world_max(base, 1);
    bk_world_min(freemin, 1); /* every process decides the fit on the same figures */
    return CM_OK;
}

/* The largest device scratch of the plan's elementwise kernels. */
static size_t ew_scratch_max(const bk_run *x)
{
    const work_plan *w = x->w;
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd,
                                 &w->head_bwd,  &w->moe_fwd,   &w->moe_bwd};
    size_t wsmax = 0;
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            const work_item *it = &lists[j]->item[i];
            if (it->kind != WORK_STREAM) continue;
            bkk_ew e = bk_ew_kernel(&it->access);
            size_t ws = bkk_ew_workspace_bytes(&e, x->c->sms);
            if (ws > wsmax) wsmax = ws;
        }
    return wsmax;
}

/* The arena and the step's events on every GPU this process drives. A cudaMalloc that fails
 * sets *no_room (the out-of-memory report in err); every other failure is an error. */
static cm_status allocate(bk_run *x, const char *plan_name, bool *no_room, char *err,
                          size_t errlen)
{
    bk_ctx *c = x->c;
    *no_room = false;
    OWNED {
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        const bk_pools *p = &x->pools;
        size_t sz = (size_t)p->total_bytes;
        cudaError_t e = cudaMalloc((void **)&x->arena[d], sz);
        if (e != cudaSuccess) {
            x->arena[d] = NULL;
            *no_room = true;
            return bk_oom_malloc(x, plan_name, sz, "the arena: persistent part and phase region",
                                 d, e, err, errlen);
        }
        char *a = x->arena[d];
        x->state[d] = a;
        x->ppbuf[d] = p->pp_bytes ? a + p->pp_off : NULL;
        x->act[d] = a + p->act_off;
        x->commbuf[d] = p->comm_bytes ? a + p->comm_off : NULL;
        x->grads[d] = a + p->g_off;
        /* Random, never-zero bf16 data everywhere. Each GPU's pipeline send buffers differ (the
         * receive check tells senders apart). */
        CUDA_TRY(bkk_fill_bf16(a, sz / 2, 101u * (uint32_t)d, -1.0f, 1.0f, c->compute[d]));
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
        if (x->P > 1)
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
    return CM_OK;
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* Every device idle, and (several processes) every process here before any goes on. */
static cm_status sync_all(bk_run *x, char *err, size_t errlen)
{
    set_all(x);
    DEV(cudaDeviceSynchronize());
    bk_world_barrier();
    return CM_OK;
}

static cm_status step_launch(void *arg, int index, char *err, size_t errlen)
{
    (void)index;
    return bk_step_issue(arg, err, errlen);
}

/* Steps timed on every used GPU's compute streams (e0 to e1), each after every GPU is idle and
 * every process at a barrier; the slowest GPU. warmup_steps: untimed steps first (timed like
 * the others, then dropped). */
static cm_status time_steps(bk_run *x, int warmup_steps, int steps, bk_timed_result *r,
                            char *err, size_t errlen)
{
    bk_timed t = {.launch = step_launch, .arg = x, .dev_lo = x->olo, .dev_hi = x->ohi,
                  .streams = x->c->compute, .start = x->e0, .stop = x->e1,
                  .sync = BK_SYNC_DEVICES, .across_processes = true, .warmup = 0,
                  .probe_launches = warmup_steps, .launches_per_repeat = 1, .repeats = steps};
    return bk_time(x->c, &t, r, err, errlen);
}

/* ---- one measurement ------------------------------------------------------------------------ */

static cm_status measure_run(bk_run *x, int dpl, const char *plan_name, int steps,
                             const bk_timing *tm, trace_list *trace, bk_measure_result *out,
                             char *err, size_t errlen)
{
    bk_ctx *c = x->c;
    const work_plan *w = x->w;
    const layout *l = &w->layout;
    BK_TRY(make_schedule(x, plan_name, out, err, errlen));
    BK_TRY(make_groups(x, l, dpl, err, errlen));
    BK_TRY(bk_loop_setup(x, err, errlen));
    double base, freemin;
    BK_TRY(baseline(x, &base, &freemin, err, errlen));
    out->baseline_used_bytes = base;

    /* The arena: the plan's persistent tensors and its largest phase, grown where what the step
     * touches at once needs more (bk_pools.h). */
    /* one GPU: the copies are the lists' items (work_plan.fsdp2_copy_items) */
    x->fsdp2_copies = w->fsdp && w->dp_active && layout_is_pytorch(l) && !w->fsdp2_copy_items;
    x->fsdp2_acc = x->fsdp2_copies && fsdp_pipelined(l) && !l->reshard_after_forward;
    x->cp_overlap = l->cp > 1 && layout_cp_is_ring(l); /* ring CP: Megatron, torchtitan */
    bk_pool_shape shape = {.stages = x->P, .dp_group = x->grp[GROUP_DP].size,
                           .edp_group = x->grp[GROUP_EDP].size, .pp_slots = x->nslots,
                           .fsdp2_copies = x->fsdp2_copies, .cp_overlap = x->cp_overlap,
                           .ew_scratch_bytes = ew_scratch_max(x)};
    bk_pools_size(w, &shape, &x->pools);
    out->pool_bytes = x->pools.total_bytes;
    out->extra_bytes = x->pools.extra_bytes;
    out->persist_bytes = (double)x->pools.persist_bytes;
    out->phase_bytes = (double)x->pools.phase_bytes;
    out->touched_bytes = (double)x->pools.touched_bytes;
    out->phase_train_bytes = x->pools.phase_train_bytes;
    out->phase_bwd_end_bytes = x->pools.phase_bwd_end_bytes;
    out->phase_opt_bytes = x->pools.phase_opt_bytes;
    if (x->pools.total_bytes > freemin)
        return bk_oom_pools(x, plan_name, freemin, base, err, errlen);
    bool no_room;
    cm_status st = allocate(x, plan_name, &no_room, err, errlen);
    if (st != CM_OK && !no_room) return st;
    /* Every process goes on only if every process has its memory. */
    double failed = st != CM_OK;
    bk_world_max(&failed, 1);
    if (failed > 0) return st != CM_OK ? st : bk_oom_elsewhere(plan_name, err, errlen);

    /* Steps: one warm-up, then the timed ones; host-paced (bk_step.c), the GPU alone timed
     * first. One thread drives every stage this process has, so their hosts' work, side by side
     * in a real run, would add up here: paced only where it drives one stage. */
    if (steps < 1) steps = 1;
    if (steps > BK_TIMING_MAX_REPEATS) steps = BK_TIMING_MAX_REPEATS;
    bk_timed_result r;
    bool one_stage = stage_of(x, x->olo) == stage_of(x, x->ohi - 1);
    out->host_paced = w->host_pace && one_stage;
    snprintf(out->host_pace_note, sizeof out->host_pace_note, "%s",
             !w->host_priced ? "off (the cost model prices no host work for this layout)"
             : !w->host_pace ? "off (--host-pace off: the GPU alone)"
             : !one_stage    ? "off (this process drives several pipeline stages: run one "
                               "process per stage under mpirun to pace each)"
                             : "on (each item issued after the host time the cost model gives "
                               "its launches: costmodel/host_dispatch.c, optimizer_host.c)");
    x->pace = false;
    BK_TRY(time_steps(x, 1, steps, &r, err, errlen));
    BK_TRY(sync_all(x, err, errlen));
    out->step_unpaced_s = r.time_s;
    out->step_unpaced_spread = r.spread;
    if (out->host_paced) {
        x->pace = true;
        BK_TRY(time_steps(x, 1, steps, &r, err, errlen));
        BK_TRY(sync_all(x, err, errlen));
    }
    out->step_s = r.time_s;
    out->step_spread = r.spread;
    /* Peak memory: the arena stays allocated and NCCL has made its buffers by now. */
    OWNED {
        size_t fr, tot;
        CUDA_TRY(cudaSetDevice(c->dev[d]));
        CUDA_TRY(cudaMemGetInfo(&fr, &tot));
        if ((double)(tot - fr) > out->peak_used_bytes) out->peak_used_bytes = (double)(tot - fr);
    }
    bk_world_max(&out->peak_used_bytes, 1);

    /* One instrumented step: spans of every chunk, send and collective (and item, for a
     * trace) on each stage's first GPU; the pipeline's receive buffers poisoned first. */
    if (x->P > 1)
        OWNED {
            CUDA_TRY(cudaSetDevice(c->dev[d]));
            CUDA_TRY(bkk_fill_bf16(x->ppbuf[d] + 2 * x->pools.p2p_slot,
                                   (size_t)2 * x->nslots * x->pools.p2p_slot / 2,
                                   999u + (uint32_t)d, -4.0f, -2.0f, c->compute[d]));
        }
    x->inst = true;
    x->inst_items = trace != NULL;
    BK_TRY(time_steps(x, 0, 1, &r, err, errlen));
    out->instrumented_step_s = r.time_s;
    bk_loop_stats(x, &out->loop_new_calls, &out->loop_new_call_s, &out->loop_new_call_mean_s,
                  &out->loop_seen_calls, &out->loop_seen_call_s, &out->loop_new_exhausted);
    BK_TRY(sync_all(x, err, errlen));
    x->inst = x->inst_items = false;
    x->pace = false; /* items alone: the GPU's time */
    BK_TRY(bk_read_spans(x, out, trace, err, errlen));
    if (x->P > 1) BK_TRY(bk_pp_check(x, out, err, errlen));

    /* Each item alone, and the components. */
    BK_TRY(bk_time_items(x, tm, out, err, errlen));
    if (x->P == 1) out->bubble_s = out->pp_exposed_s = 0;
    /* FSDP2's copy-ins run ahead of the gathers, on the communication stream: what shows of
     * them is exposed communication, as the estimate counts it */
    out->exposed_comm_s =
        fmax(0, out->step_s - out->compute_s - out->optimizer_s - out->bubble_s);
    return CM_OK;
}

/* Everything a run made, made or not. */
static void release(bk_run *x)
{
    OWNED {
        cudaSetDevice(x->c->dev[d]);
        cudaDeviceSynchronize();
        if (x->arena[d]) cudaFree(x->arena[d]);
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
        for (int i = 0; i < x->events[d].created; i++) cudaEventDestroy(x->events[d].e[i]);
        free(x->events[d].e);
    }
    destroy_groups(x);
    bk_loop_free(x);
    free(x->sched);
    free(x->order);
    free(x->marks);
    free(x);
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
    bk_run *x = calloc(1, sizeof *x);
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
    cm_status st = measure_run(x, dpl, plan_name, steps, tm, trace, out, err, errlen);
    /* Every error names the plan. */
    if (st != CM_OK && err && strncmp(err, "plan ", 5) != 0) {
        char msg[CM_ERRLEN];
        snprintf(msg, sizeof msg, "%s", err);
        cm_fail(err, errlen, st, "plan %s: %s", plan_name, msg);
    }
    release(x);
    return st;
}

/* ---- the pipeline and MoE figures for plan measure's report ---------------------------------- */


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
            r->component_s[WC_EP],
            100 * units_rel_error(w->pred_component_s[WC_EP], r->component_s[WC_EP]));
    if (r->stages_run > 1) {
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "  pp send/recv (raw)", w->pred_component_s[WC_PP],
            r->component_s[WC_PP],
            100 * units_rel_error(w->pred_component_s[WC_PP], r->component_s[WC_PP]));
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "  pp blocked on sends", pt->pp_s,
            r->pp_exposed_s, 100 * units_rel_error(pt->pp_s, r->pp_exposed_s));
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "pipeline bubble", pt->bubble_s, r->bubble_s,
            100 * units_rel_error(pt->bubble_s, r->bubble_s));
        /* the busiest stage's chunks as they ran in the schedule, against the estimate's
         * compute plus the communication it leaves in the compute stream */
        double busy_pred = pt->compute_s + pt->tp_s + pt->cp_s + pt->ep_s;
        int cs = r->critical_stage;
        PUT("  %-26s %11.4f %11.4f %+9.1f%%\n", "busiest stage in schedule", busy_pred,
            r->stage_busy_s[cs], 100 * units_rel_error(busy_pred, r->stage_busy_s[cs]));
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
    if (w->loop_new_share > 0)
        PUT("  expert loop at %.0f%% new row counts (paced steps, first GPU): %d cuBLAS calls at "
            "a new shape, median host %.1f us, mean %.1f us; %d at a seen one, median %.1f us; "
            "model's price of a new shape beyond a launch %.1f us%s\n",
            100 * w->loop_new_share, r->loop_new_calls, r->loop_new_call_s * 1e6,
            r->loop_new_call_mean_s * 1e6,
            r->loop_seen_calls, r->loop_seen_call_s * 1e6, w->gemm_new_shape_s * 1e6,
            r->loop_new_exhausted ? " (some passes ran out of unused counts)" : "");
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
    if (w->loop_new_share > 0)
        json_object_set_new(j, "expert_loop",
                            json_pack("{s:f, s:i, s:f, s:f, s:i, s:f, s:f, s:I}",
                                      "new_count_share", w->loop_new_share, "new_shape_calls",
                                      r->loop_new_calls, "new_shape_call_host_s",
                                      r->loop_new_call_s, "new_shape_call_host_mean_s",
                                      r->loop_new_call_mean_s,
                                      "seen_shape_calls", r->loop_seen_calls,
                                      "seen_shape_call_host_s", r->loop_seen_call_s,
                                      "model_new_shape_s", w->gemm_new_shape_s,
                                      "counts_owed_not_issued", (json_int_t)r->loop_new_exhausted));
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
