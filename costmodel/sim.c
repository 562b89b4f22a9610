/*
 * sim.c — the event-driven step simulator (see sim.h).
 *
 * Model. A pipeline stage is one GPU of the pipeline (all GPUs of a stage run the same
 * timeline). It owns four FIFO resources ("streams"): compute, the send of activations to the
 * next stage, the send of gradients to the previous stage, and the stream that carries
 * data-parallel and FSDP collectives. Each stage runs a fixed list of forward/backward chunks in
 * the order its schedule gives (schedule()); a chunk starts when the compute stream is free and
 * its input has arrived. An event is "stage s can run its next chunk" (its input arrived); a
 * chunk's completion raises the event for the neighbouring stage that waits on its output, and
 * for its own next chunk. Inside a chunk the layers are walked one by one only where something
 * happens between them (FSDP gathers and reduce-scatters, gradient buckets becoming ready,
 * parameter gathers awaited); elsewhere the chunk's summed duration is used, which keeps a
 * 16-stage, 128-micro-batch step well under a millisecond (bench/sim_speed.c).
 *
 * Durations are the closed form's (estimate_costs.h): a layer's forward and backward already
 * include its exposed TP/SP, CP and EP communication, which Megatron runs on the compute stream
 * (no TP-comm overlap is assumed, as in estimate.c).
 */
#include "sim.h"
#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "cuda_graphs.h"
#include "estimate_costs.h"
#include "estimate_internal.h"
#include "overlap.h"

#include "sim_internal.h"

/* Grow *p to hold n elements of size sz; false when out of memory. */
bool sim_reserve(void *pp, int *cap, int n, size_t sz)
{
    void **p = (void **)pp;
    if (n <= *cap && *p) return true;
    int c = *cap > 0 ? *cap : 16;
    while (c < n) c *= 2;
    void *q = realloc(*p, (size_t)c * sz);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

sim_workspace *sim_alloc(void) { return calloc(1, sizeof(sim_workspace)); }

void sim_free(sim_workspace *w)
{
    if (!w) return;
    free(w->layer);
    free(w->vstage_layers);
    free(w->bucket);
    free(w->grad_sync);
    free(w->param_sync);
    free(w->optimizer);
    free(w->stage_costs);
    free(w->sched);
    free(w->ops);
    free(w->arr_f);
    free(w->arr_b);
    free(w->vfirst);
    free(w->vfwd);
    free(w->vbwd);
    free(w->vwgrad);
    free(w->vunp);
    free(w->param_ready);
    free(w->bucket_at);
    free(w->bucket_num);
    free(w->stage_count);
    free(w->op_off);
    free(w->st);
    free(w->p2p);
    free(w->half);
    free(w->stats);
    free(w->queue);
    free(w->ev);
    free(w);
}

const sim_input *sim_input_of(const sim_workspace *w) { return &w->in; }
int sim_op_count(const sim_workspace *w) { return w->nops; }
const sim_op *sim_ops(const sim_workspace *w) { return w->ops; }
const sim_stage_stats *sim_stages(const sim_workspace *w) { return w->stats; }
int sim_trace_events(const sim_workspace *w) { return w->traced ? w->nev : 0; }

/* ---- schedules ---- */

/* The order stage s runs its chunks in (schedule.h): Megatron-LM's 1F1B / interleaved 1F1B,
 * torch.distributed.pipelining's interleaved 1F1B (torchtitan layouts), GPipe, ZBVZeroBubble,
 * DualPipeV. */
static int schedule(const sim_input *in, int s, sched_op *out)
{
    if (in->p2p_stream) /* torchtitan's interleaved 1F1B: torch's order (schedule.h) */
        return schedule_pipeline_torch(in->pp, in->vpp, in->microbatches, s, out);
    return schedule_pipeline_kind(in->schedule, in->pp, in->vpp, in->microbatches, s, out);
}

static int vstage_of(const sim_input *in, int chunk, int s)
{
    return schedule_vstage(in->schedule, in->pp, chunk, s);
}

/* ---- running ---- */

static void record(sim_workspace *w, int stage, int tid, int kind, double a, double b,
                   int index, int mb, int chunk)
{
    if (!w->tracing || w->ev_failed || w->ev_over) return;
    if (w->nev >= SIM_MAX_TRACE_EVENTS) {
        w->ev_over = true;
        return;
    }
    if (!sim_reserve(&w->ev, &w->ev_cap, w->nev + 1, sizeof *w->ev)) {
        w->ev_failed = true;
        return;
    }
    w->ev[w->nev++] = (trace_event){a, b, stage, index, mb, chunk, (unsigned char)tid,
                                    (unsigned char)kind};
    w->st[stage].tids_used |= 1u << tid;
}

/* Enqueue a collective on stage s's collective stream: FIFO, starts at issue or when the
 * previous one ends. Returns its end. */
static double collective(sim_workspace *w, int s, double issue, double dur, int kind,
                         int index, int mb)
{
    stage_state *st = &w->st[s];
    double start = fmax(st->coll_free, issue), end = start + dur;
    st->coll_free = end;
    if (dur > 0) record(w, s, TID_COLL, kind, start, end, index, mb, -1);
    return end;
}

/* When stage s's next chunk's input is there (< 0: not yet). */
static double input_ready(const sim_workspace *w, int s)
{
    const stage_state *st = &w->st[s];
    const sched_op *op = &w->sched[(size_t)s * w->per_stage + st->next];
    const sim_input *in = w->run_in;
    int k = vstage_of(in, op->chunk, s), m = in->microbatches;
    if (op->part == SCHEDULE_WEIGHT) return 0.0; /* after its own I, earlier on this stage */
    if (!op->backward) return k == 0 ? 0.0 : w->arr_f[(size_t)k * m + op->microbatch];
    return w->arr_b[(size_t)k * m + op->microbatch];
}

/* Queue stage s if its next chunk can run (its input has arrived). */
static void try_queue(sim_workspace *w, int *tail, int s)
{
    stage_state *st = &w->st[s];
    if (st->queued || st->next >= st->nops) return;
    if (input_ready(w, s) < 0) return;
    st->queued = true;
    w->queue[*tail % w->pp] = s;
    (*tail)++;
}

/* Run stage s's next chunk, whose input arrived at `ready`. */
static void run_chunk(sim_workspace *w, const sim_options *o, int s, double ready)
{
    const sim_input *in = w->run_in;
    stage_state *st = &w->st[s];
    const sched_op *op = &w->sched[(size_t)s * w->per_stage + st->next];
    int p = in->pp, m = in->microbatches, nv = p * in->vpp;
    int k = vstage_of(in, op->chunk, s), mb = op->microbatch;
    schedule_part part = (schedule_part)op->part; /* I or W: a zero-bubble schedule's halves */
    int lo = w->vfirst[k], hi = lo + in->vstage_layers[k] - 1;
    bool last_vs = k == nv - 1;
    bool fwd = !op->backward;
    bool ser = o->serialize;
    double c0 = fmax(st->compute_free, ready), t0 = c0, t = t0;
    /* The FSDP root unit of the first / last virtual stage: nothing runs beside its gather (the
     * chunk waits for it) or its reduce-scatter (the step waits for it): estimate.c
     * root_traffic, the same exposed terms. */
    /* torch.distributed.pipelining keeps FSDP2 units unsharded and their gradients unreduced
     * between micro-batches (pipelining/stage.py backward_maybe_with_nosync:
     * set_reshard_after_backward(False), set_requires_gradient_sync(False) until the last
     * backward): with fsdp_accumulate a unit is gathered in the first forward (every forward
     * when resharded after forward) and reduce-scattered after the last micro-batch's backward */
    bool acc = in->fsdp_accumulate;
    bool fg = in->fsdp && (!acc || in->fsdp_reshard || mb == 0);
    bool last_mb = !acc || mb == m - 1;
    double root_pre = 0, root_post = 0;
    for (int r = 0; r < 2; r++) {
        if (!(r == 0 ? k == 0 : k == nv - 1 && nv > 1)) continue;
        if ((fwd && (!acc || in->fsdp_reshard || mb == 0)) ||
            (!fwd && in->fsdp_reshard && part != SCHEDULE_WEIGHT))
            root_pre += in->root_gather_s[r];
        if (!fwd && part != SCHEDULE_INPUT && last_mb) root_post += in->root_reduce_s[r];
    }
    t0 += root_pre;
    t = t0;

    bool buckets = !ser && in->grad_overlap && in->buckets > 0 && !fwd && mb == m - 1 &&
                   part == SCHEDULE_FULL;
    bool params = !ser && in->param_gather_overlap && in->buckets > 0 && fwd && mb == 0;
    const sim_layer *L = in->layer;
    /* the share of each layer's backward this op runs: all, all but W (I), or W alone */
    double wshare = part == SCHEDULE_INPUT ? -1.0 : part == SCHEDULE_WEIGHT ? 1.0 : 0.0;
#define BWD_PART(x, wg) (part == SCHEDULE_FULL ? (x) : wshare > 0 ? (wg) : (x) - (wg))
    /* an unpaired forward or backward of the EP A2A overlap exposes its whole exchange */
    bool unp = fwd ? st->fwd_done < st->unpaired
                   : part != SCHEDULE_WEIGHT && st->bwd_done >= m * in->vpp - st->unpaired;
    double unp_s = unp ? w->vunp[2 * k + (fwd ? 0 : 1)] : 0;
    bool ag = in->fsdp && in->fsdp_reshard && part != SCHEDULE_WEIGHT; /* backward gathers */
    bool rs = in->fsdp && part != SCHEDULE_INPUT && last_mb;
    if (!(fwd ? fg : ag || rs) && !buckets && !params) {
        t = t0 + (fwd ? w->vfwd[k] : BWD_PART(w->vbwd[k], w->vwgrad[k])) + unp_s;
    } else if (fwd) {
        /* FSDP forward: the first layer's gather is issued when the chunk starts; each next
         * layer's is issued as the current layer starts computing (FSDP2's one-unit forward
         * prefetch, torch.distributed.fsdp fully_shard docs; Megatron-FSDP likewise), so it
         * hides behind that layer. Without overlap each gather waits for the compute before
         * it. */
        double ag_end = fg && hi >= lo
                            ? collective(w, s, t0, L[lo].gather_s, EV_AG_LAYER, lo, mb)
                            : 0;
        for (int j = lo; j <= hi; j++) {
            double start = fmax(t, ag_end);
            if (params) start = fmax(start, w->param_ready[j]);
            double end = start + L[j].fwd_s + (unp ? L[j].ep_unpaired_fwd_s : 0);
            if (fg && j < hi)
                ag_end = collective(w, s, ser ? end : start, L[j + 1].gather_s, EV_AG_LAYER,
                                    j + 1, mb);
            t = end;
        }
        if (last_vs) t += in->head_fwd_s;
        if (k == 0) t += in->first_root_fwd_s;
    } else {
        /* Backward: the head's first, then the layers from the top down. Resharded FSDP
         * parameters are gathered again, one layer ahead; each layer's gradients are
         * reduce-scattered when its backward ends (FSDP2 post-backward hook), overlapping the
         * next layer's backward. In the last micro-batch a data-parallel bucket is reduced as
         * soon as its lowest layer's backward ends (Megatron overlap_grad_reduce,
         * megatron/core/distributed/param_and_grad_buffer.py register_grad_ready). */
        if (last_vs && part != SCHEDULE_WEIGHT) t += in->head_bwd_s;
        /* W runs after its I, which gathered the layers again where resharded; its weight
         * gradients are what the reduce-scatter sends, so I reduces nothing */

        double ag_end = ag && hi >= lo
                            ? collective(w, s, ser ? t : t0, L[hi].gather_s, EV_AG_LAYER, hi, mb)
                            : 0;
        for (int j = hi; j >= lo; j--) {
            double start = fmax(t, ag_end);
            if (ag && j > lo && !ser)
                ag_end = collective(w, s, start, L[j - 1].gather_s, EV_AG_LAYER, j - 1, mb);
            double end = start + BWD_PART(L[j].bwd_s, L[j].wgrad_s) +
                         (unp ? L[j].ep_unpaired_bwd_s : 0);
            t = end;
            if (rs) {
                double rs = collective(w, s, end, L[j].reduce_s, EV_RS_LAYER, j, mb);
                if (ser) t = rs;
            }
            if (ag && j > lo && ser)
                ag_end = collective(w, s, t, L[j - 1].gather_s, EV_AG_LAYER, j - 1, mb);
            if (buckets && w->bucket_at[j] >= 0) {
                const sim_bucket *b = &in->bucket[w->bucket_at[j]];
                collective(w, s, end, b->reduce_s, b->gather_s > 0 ? EV_RS_BUCKET : EV_AR_BUCKET,
                           w->bucket_num[w->bucket_at[j]], -1);
            }
        }
        /* the embedding's gradient accumulation and reduce-scatter copy-in, after its backward
         * (the input half's, as the closed form's bwd_s holds it) */
        if (k == 0 && part != SCHEDULE_WEIGHT) t += in->first_root_bwd_s;
    }

#undef BWD_PART
    t += root_post;
    size_t idx = (size_t)w->op_off[s] + st->next;
    /* The chunk holds the compute stream from c0, its root unit's exposed traffic included. */
    w->ops[idx] = (sim_op){s, op->chunk, k, mb, op->backward ? SIM_BACKWARD : SIM_FORWARD, ready, c0, t};
    record(w, s, TID_COMPUTE,
           fwd ? EV_FWD : part == SCHEDULE_INPUT ? EV_BWD_INPUT : part == SCHEDULE_WEIGHT ? EV_BWD_WEIGHT : EV_BWD,
           c0, t, -1, mb, in->vpp > 1 ? op->chunk : -1);
    st->busy += t - c0;

    /* Send the output on: activations to virtual stage k + 1, gradients to k - 1. The last
     * virtual stage's backward needs only its own forward (the loss is computed there). */
    int dest = fwd ? k + 1 : k - 1;
    if (part == SCHEDULE_WEIGHT) {
        /* nothing leaves the stage: the input gradient went with the I op */
    } else if (fwd && last_vs) {
        w->arr_b[(size_t)k * m + mb] = t;
    } else if (in->p2p_stream && dest >= 0 && dest < nv) {
        /* p2p_advance issues the send in its place on the stage's NCCL stream */
    } else if (dest >= 0 && dest < nv &&
               schedule_stage_of(in->schedule, p, dest) == s) {
        /* the V turns on this stage (virtual stages p-1 and p): no send */
        (fwd ? w->arr_f : w->arr_b)[(size_t)dest * m + mb] = t;
    } else if (dest >= 0 && dest < nv) {
        int dir = fwd ? 0 : 1;
        double start = fmax(st->send_free[dir], t), end = start + in->p2p_s;
        st->send_free[dir] = end;
        (fwd ? w->arr_f : w->arr_b)[(size_t)dest * m + mb] = end;
        record(w, s, fwd ? TID_SEND_FWD : TID_SEND_BWD, fwd ? EV_SEND_FWD : EV_SEND_BWD, start,
               end, -1, mb, in->vpp > 1 ? op->chunk : -1);
        if (ser || !in->p2p_overlap) {
            st->busy += end - t;
            t = end;
        }
    }
    st->compute_free = t;
    st->next++;
    if (fwd) st->fwd_done++;
    else if (part != SCHEDULE_WEIGHT) st->bwd_done++;
}

/*
 * p2p_stream: issue stage s's next SENDs and RECVs (pp_p2p_order.h) as far as they go. One runs
 * once the compute ops placed before it have run (ProcessGroupNCCL makes its stream wait for
 * the compute stream when the op is issued, and the host is ahead of the GPU) and the previous
 * one on the stage's stream has ended; a send and its receive end together, p2p_s after the
 * later of the two started (NCCL's p2p kernels rendezvous), so a stream waits at a half whose
 * peer has not been issued. A completed receive makes the chunk waiting on it runnable.
 * Returns whether anything was issued or completed.
 */
static bool p2p_advance(sim_workspace *w, int s, int *tail)
{
    const sim_input *in = w->run_in;
    stage_state *st = &w->st[s];
    int m = in->microbatches, nvm = in->pp * in->vpp * m, cap = pp_p2p_max_ops(in->vpp, m);
    bool moved = false;
    while (st->p2p_pos < st->p2p_n) {
        const pp_p2p_op *op = &w->p2p[(size_t)s * cap + st->p2p_pos];
        if (st->next < op->after) break;
        double issue = st->p2p_free;
        if (op->after > 0) issue = fmax(issue, w->ops[w->op_off[s] + op->after - 1].end_s);
        size_t idx = (size_t)op->dest_vstage * m + op->microbatch;
        int dir = op->backward ? 1 : 0;
        double *mine = &w->half[(size_t)(dir * 2 + op->send) * nvm + idx];
        const double *other = &w->half[(size_t)(dir * 2 + !op->send) * nvm + idx];
        if (*mine < 0) {
            *mine = issue;
            moved = true;
        }
        if (*other < 0) break; /* the peer has not issued its half: the stream waits */
        double start = fmax(*mine, *other), end = start + in->p2p_s;
        st->p2p_free = end;
        st->p2p_pos++;
        moved = true;
        if (op->send) {
            record(w, s, dir ? TID_SEND_BWD : TID_SEND_FWD, dir ? EV_SEND_BWD : EV_SEND_FWD, start,
                   end, -1, op->microbatch,
                   in->vpp > 1 ? (op->dest_vstage + (dir ? 1 : -1)) / in->pp : -1);
        } else {
            (dir ? w->arr_b : w->arr_f)[idx] = end;
            try_queue(w, tail, s);
        }
    }
    return moved;
}

/* Issue every stage's SENDs and RECVs until none can go further. */
static void p2p_settle(sim_workspace *w, int *tail)
{
    if (!w->run_in->p2p_stream) return;
    for (bool moved = true; moved;) {
        moved = false;
        for (int s = 0; s < w->pp; s++) moved |= p2p_advance(w, s, tail);
    }
}

static cm_status check_input(const sim_input *in, char *err, size_t errlen)
{
    if (in->pp < 1 || in->vpp < 1 || in->microbatches < 1 || in->layers < 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "simulation needs pp, vpp and micro-batches >= 1 (got %d, %d, %d)",
                       in->pp, in->vpp, in->microbatches);
    if ((long)in->pp * in->vpp * in->microbatches > SIM_MAX_CHUNKS)
        return cm_fail(err, errlen, CM_EINVAL,
                       "simulation of %d stages x %d chunks x %d micro-batches is over the "
                       "limit of %ld stage-chunk-micro-batches: a smaller --gbs or a larger "
                       "--mbs simulates; the search ranks such a plan by its closed form",
                       in->pp, in->vpp, in->microbatches, SIM_MAX_CHUNKS);
    bool looped = in->schedule == PP_SCHEDULE_DEFAULT ||
                  in->schedule == PP_SCHEDULE_INTERLEAVED_1F1B;
    /* torch's order (p2p_stream: torchtitan) needs m divisible by its rounds, max(1, m / p);
     * Megatron's by p (schedule.h) */
    int divisor = in->p2p_stream ? schedule_torch_rounds(in->pp, in->microbatches) : in->pp;
    if (in->vpp > 1 && looped && (in->pp < 2 || in->microbatches % divisor))
        return cm_fail(err, errlen, CM_EINVAL,
                       "the interleaved schedule needs pp >= 2 and micro-batches (%d) divisible "
                       "by %s (%d)",
                       in->microbatches, in->p2p_stream ? "torch's rounds" : "pp", divisor);
    if (!in->vstage_layers || !in->optimizer_s || !in->grad_sync_s || !in->param_sync_s ||
        (in->layers > 0 && !in->layer) || (in->buckets > 0 && !in->bucket))
        return cm_fail(err, errlen, CM_EINVAL, "simulation input lacks an array");
    long sum = 0;
    for (int k = 0; k < in->pp * in->vpp; k++) {
        if (in->vstage_layers[k] < 0)
            return cm_fail(err, errlen, CM_EINVAL, "virtual stage %d has %d layers", k,
                           in->vstage_layers[k]);
        sum += in->vstage_layers[k];
    }
    if (sum != in->layers)
        return cm_fail(err, errlen, CM_EINVAL,
                       "virtual stages hold %ld layers but the input has %d", sum, in->layers);
    return CM_OK;
}

cm_status sim_run(sim_workspace *w, const sim_input *in, const sim_options *o,
                  time_simulated *out, char *err, size_t errlen)
{
    static const sim_options defaults = {false, false};
    if (!o) o = &defaults;
    cm_status status = check_input(in, err, errlen);
    if (status != CM_OK) return status;
    int p = in->pp, v = in->vpp, m = in->microbatches, nv = p * v;
    int per_stage = schedule_max_ops(v, m);
    size_t nops = (size_t)p * per_stage;
    if (!sim_reserve(&w->sched, &w->sched_cap, (int)nops, sizeof *w->sched) ||
        !sim_reserve(&w->ops, &w->ops_cap, (int)nops, sizeof *w->ops) ||
        !sim_reserve(&w->arr_f, &w->arrf_cap, nv * m, sizeof *w->arr_f) ||
        !sim_reserve(&w->arr_b, &w->arrb_cap, nv * m, sizeof *w->arr_b) ||
        !sim_reserve(&w->vfirst, &w->vfirst_cap, nv, sizeof *w->vfirst) ||
        !sim_reserve(&w->vfwd, &w->vfwd_cap, nv, sizeof *w->vfwd) ||
        !sim_reserve(&w->vbwd, &w->vbwd_cap, nv, sizeof *w->vbwd) ||
        !sim_reserve(&w->vwgrad, &w->vw_cap, nv, sizeof *w->vwgrad) ||
        !sim_reserve(&w->vunp, &w->unp_cap, 2 * nv, sizeof *w->vunp) ||
        !sim_reserve(&w->param_ready, &w->pr_cap, in->layers + 1, sizeof *w->param_ready) ||
        !sim_reserve(&w->bucket_at, &w->ba_cap, in->layers + 1, sizeof *w->bucket_at) ||
        !sim_reserve(&w->bucket_num, &w->bn_cap, in->buckets + 1, sizeof *w->bucket_num) ||
        !sim_reserve(&w->stage_count, &w->sc_cap, p, sizeof *w->stage_count) ||
        !sim_reserve(&w->op_off, &w->off_cap, p, sizeof *w->op_off) ||
        !sim_reserve(&w->st, &w->st_cap, p, sizeof *w->st) ||
        !sim_reserve(&w->stats, &w->stats_cap, p, sizeof *w->stats) ||
        !sim_reserve(&w->queue, &w->queue_cap, p, sizeof *w->queue))
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory in the simulation");

    w->run_in = in;
    w->pp = p;
    w->per_stage = per_stage;
    w->nops = 0; /* the ops scheduled, counted below */
    w->tracing = o->trace;
    w->traced = o->trace;
    w->nev = 0;
    w->ev_failed = false;
    w->ev_over = false;
    memset(w->st, 0, (size_t)p * sizeof *w->st);
    /* Megatron's combined 1F1B (sim.h ep_unpaired): schedules.py get_pp_rank_microbatches
     * 964-970, the warm-up with its one extra forward; the cool-down as long (estimate.c
     * ep_unpaired_path_s charges the same count's critical-path part) */
    for (int s = 0; s < p && in->ep_unpaired; s++)
        w->st[s].unpaired = schedule_combined_unpaired(p, v, m, s);
    for (int s = 0; s < p; s++) /* a graphed step's first replay launch (sim.h start_s) */
        w->st[s].compute_free = w->st[s].coll_free = w->st[s].send_free[0] =
            w->st[s].send_free[1] = w->st[s].p2p_free = in->start_s;
    for (int i = 0; i < nv * m; i++) w->arr_f[i] = w->arr_b[i] = -1;

    /* Chunk sums, first layers, bucket triggers. */
    int first = 0;
    for (int k = 0; k < nv; k++) {
        w->vfirst[k] = first;
        double f = 0, b = 0, wg = 0, uf = 0, ub = 0;
        for (int j = first; j < first + in->vstage_layers[k]; j++) {
            f += in->layer[j].fwd_s;
            b += in->layer[j].bwd_s;
            wg += in->layer[j].wgrad_s;
            uf += in->layer[j].ep_unpaired_fwd_s;
            ub += in->layer[j].ep_unpaired_bwd_s;
        }
        w->vwgrad[k] = wg;
        w->vunp[2 * k] = uf;
        w->vunp[2 * k + 1] = ub;
        if (k == nv - 1) {
            f += in->head_fwd_s;
            b += in->head_bwd_s;
        }
        if (k == 0) {
            f += in->first_root_fwd_s;
            b += in->first_root_bwd_s;
        }
        w->vfwd[k] = f;
        w->vbwd[k] = b;
        first += in->vstage_layers[k];
    }
    for (int j = 0; j < in->layers; j++) {
        w->bucket_at[j] = -1;
        w->param_ready[j] = 0;
    }
    for (int b = 0; b < in->buckets; b++) {
        const sim_bucket *x = &in->bucket[b];
        if (x->vstage < 0 || x->vstage >= nv || x->first_layer < w->vfirst[x->vstage] ||
            x->last_layer < x->first_layer ||
            x->last_layer >= w->vfirst[x->vstage] + in->vstage_layers[x->vstage])
            return cm_fail(err, errlen, CM_EINVAL,
                           "bucket %d (layers %d..%d) is not inside virtual stage %d", b,
                           x->first_layer, x->last_layer, x->vstage);
        w->bucket_at[x->first_layer] = b;
    }
    for (int s = 0; s < p; s++) w->stage_count[s] = 0;
    for (int b = 0; b < in->buckets; b++) w->bucket_num[b] = w->stage_count[in->bucket[b].vstage % p]++;

    for (int s = 0; s < p; s++) {
        w->st[s].nops = schedule(in, s, &w->sched[(size_t)s * per_stage]);
        if (w->st[s].nops < 0)
            return cm_fail(err, errlen, CM_EINVAL,
                           "the %s schedule does not run with %d stages x %d chunks x %d "
                           "micro-batches",
                           layout_pp_schedule_name(in->schedule), p, v, m);
        w->op_off[s] = w->nops;
        w->nops += w->st[s].nops;
        /* Megatron overlap_param_gather: the updated parameters are all-gathered bucket by
         * bucket in forward order, and the first forward of each bucket's layers waits for
         * its gather (param_and_grad_buffer.py, forward pre-hook). The one step simulated
         * starts with them. */
        if (!o->serialize && in->param_gather_overlap && in->buckets > 0) {
            for (int ch = 0; ch < v; ch++) {
                int k = vstage_of(in, ch, s);
                for (int j = w->vfirst[k]; j < w->vfirst[k] + in->vstage_layers[k]; j++) {
                    int b = w->bucket_at[j];
                    if (b < 0) continue;
                    const sim_bucket *x = &in->bucket[b];
                    double end =
                        collective(w, s, 0, x->gather_s, EV_AG_BUCKET, w->bucket_num[b], -1);
                    for (int i = x->first_layer; i <= x->last_layer; i++) w->param_ready[i] = end;
                }
            }
        }
    }

    if (in->p2p_stream) {
        int cap = pp_p2p_max_ops(v, m);
        if (!sim_reserve(&w->p2p, &w->p2p_cap, p * cap, sizeof *w->p2p) ||
            !sim_reserve(&w->half, &w->half_cap, 4 * nv * m, sizeof *w->half) ||
            !sim_reserve(&w->stage_count, &w->sc_cap, p, sizeof *w->stage_count))
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory in the simulation");
        for (int s = 0; s < p; s++) w->stage_count[s] = w->st[s].nops;
        int *nout = malloc((size_t)p * sizeof *nout);
        if (!nout) return cm_fail(err, errlen, CM_ENOMEM, "out of memory in the simulation");
        int rc = pp_p2p_lower(p, v, m, w->sched, per_stage, w->stage_count, w->p2p, nout);
        for (int s = 0; s < p; s++) {
            w->st[s].p2p_n = rc == 0 ? nout[s] : 0;
            w->st[s].p2p_pos = 0;
            w->st[s].p2p_free = in->start_s;
        }
        free(nout);
        if (rc != 0)
            return cm_fail(err, errlen, CM_EINVAL,
                           "torch's send/receive lowering stalled on this %d-stage schedule (a "
                           "bug in the simulator's schedule)", p);
        for (int i = 0; i < 4 * nv * m; i++) w->half[i] = -1;
    }

    /* The event loop. An event is "stage s can run its next chunk": its input arrived. Each
     * stage's streams are FIFO and used by that stage alone, so a chunk's times depend only on
     * its own stage's earlier chunks and on its input's arrival; events are therefore handled
     * in the order they arise (a FIFO of stages, at most one entry each) rather than sorted by
     * time, with the same result and no priority queue: a 64-stage, 256-micro-batch step takes
     * about a millisecond. */
    int head = 0, tail = 0;
    for (int s = 0; s < p; s++) try_queue(w, &tail, s);
    p2p_settle(w, &tail);
    while (head < tail) {
        int s = w->queue[head % p];
        head++;
        stage_state *st = &w->st[s];
        st->queued = false;
        const sched_op *op = &w->sched[(size_t)s * per_stage + st->next];
        int k = vstage_of(in, op->chunk, s);
        bool fwd = !op->backward;
        run_chunk(w, o, s, input_ready(w, s));
        try_queue(w, &tail, s);
        p2p_settle(w, &tail);
        /* the stage whose input this chunk produced */
        int dest = fwd ? k + 1 : k - 1;
        if (dest >= 0 && dest < nv) try_queue(w, &tail, schedule_stage_of(in->schedule, p, dest));
    }
    for (int s = 0; s < p; s++)
        if (w->st[s].next < w->st[s].nops)
            return cm_fail(err, errlen, CM_EINVAL,
                           "the schedule deadlocked on stage %d at chunk %d of %d (a bug in "
                           "the simulator's schedule)",
                           s, w->st[s].next, w->st[s].nops);

    /* Gradients, then the optimizer. Every stage starts its optimizer step together: Megatron
     * clips by the global gradient norm, all-reduced over the model-parallel group including
     * the pipeline (megatron/core/optimizer/clip_grads.py get_grad_norm_fp32), so no stage
     * steps before all have reduced their gradients. */
    double t_opt = 0;
    for (int s = 0; s < p; s++) {
        stage_state *st = &w->st[s];
        sim_stage_stats *x = &w->stats[s];
        x->busy_s = st->busy;
        x->compute_end_s = st->compute_free;
        bool bucketed = !o->serialize && in->grad_overlap && in->buckets > 0;
        double g = fmax(st->compute_free, st->coll_free);
        if (!bucketed && in->grad_sync_s[s] > 0)
            g = collective(w, s, st->compute_free, in->grad_sync_s[s],
                           in->param_sync_s[s] > 0 ? EV_RS_GRADS : EV_AR_GRADS, -1, -1);
        x->grads_ready_s = g;
        t_opt = fmax(t_opt, g);
    }
    double step = 0, pipeline = 0, busy = 0, opt = 0;
    int critical = 0;
    for (int s = 0; s < p; s++) {
        sim_stage_stats *x = &w->stats[s];
        /* under graphs, not before the host has issued it (sim.h opt_host_end_s) */
        double opt_s = fmax(in->optimizer_s[s], in->opt_host_end_s - t_opt);
        double end = t_opt + opt_s;
        record(w, s, TID_COMPUTE, EV_OPTIMIZER, t_opt, end, -1, -1, -1);
        bool gathered = !o->serialize && in->param_gather_overlap && in->buckets > 0;
        if (!gathered && in->param_sync_s[s] > 0) {
            w->st[s].coll_free = end;
            end = collective(w, s, end, in->param_sync_s[s], EV_AG_PARAMS, -1, -1);
        }
        x->end_s = end;
        step = fmax(step, end);
        pipeline = fmax(pipeline, x->compute_end_s);
        opt = fmax(opt, opt_s);
        if (x->busy_s > busy) {
            busy = x->busy_s;
            critical = s;
        }
    }
    memset(out, 0, sizeof *out);
    out->step_s = step;
    out->compute_busy_s = busy;
    out->bubble_s = pipeline - busy - in->start_s; /* the replay's launch is no bubble */
    out->grad_sync_s = t_opt - pipeline;
    out->optimizer_s = opt;
    out->param_gather_s = fmax(0, step - t_opt - opt); /* 0, not -1e-16, when none */
    out->critical_stage = critical;
    if (w->ev_failed || w->ev_over) w->traced = false;
    if (w->ev_over)
        return cm_fail(err, errlen, CM_EINVAL,
                       "the trace would hold more than %d events, the limit (about %d MB of "
                       "JSON): trace a plan with fewer micro-batches (a smaller --gbs or a "
                       "larger --mbs)",
                       SIM_MAX_TRACE_EVENTS, SIM_MAX_TRACE_EVENTS / 7500);
    return CM_OK;
}

cm_status sim_estimate(sim_workspace *w, const model_spec *m, const system_spec *sys,
                       const training_spec *t, const layout *l, const sim_options *o,
                       estimate *e, char *err, size_t errlen)
{
    cm_status st = sim_build(w, m, sys, t, l, err, errlen);
    if (st != CM_OK) return st;
    time_simulated r;
    st = sim_run(w, &w->in, o, &r, err, errlen);
    if (st != CM_OK) return st;
    if (!(r.step_s < COLL_UNPRICED_S * 1e-10)) /* NaN, inf, or holding an unpriced transfer */
        return cm_fail(err, errlen, CM_EINVAL,
                       "the simulated step has no time: a communication group spans nodes but "
                       "system '%s' has no inter-node network",
                       sys->name);
    e->time_sim = r;
    e->simulated = true;
    return CM_OK;
}
