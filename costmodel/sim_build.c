/*
 * sim_build.c — the step simulator's input from the cost model (sim.h sim_build): each layer's
 * and stage's priced costs (estimate_costs.h, the closed form's own), the virtual stages' layer
 * counts, Megatron's gradient buckets, and the framework's overlaps. sim.c runs what this
 * builds; split from it to keep each file to one concept.
 */
#include "sim.h"

#include <math.h>
#include <string.h>

#include "cuda_graphs.h"
#include "estimate_costs.h"
#include "estimate_internal.h"
#include "overlap.h"
#include "shard_grads.h"

#include "sim_internal.h"

cm_status sim_build(sim_workspace *w, const model_spec *m, const system_spec *sys,
                    const training_spec *t, const layout *l, char *err, size_t errlen)
{
    /* estimate_stage_costs checks the layout before it touches stages[], so grow the per-stage
     * arrays only for a sane pp and let it report a bad one. */
    int pp_need = l->pp >= 1 && l->pp <= (1 << 20) ? l->pp : 1;
    /* ZeRO-2's per-micro-batch unit reduce-scatters with the distributed optimizer's per-step
     * parameter gather (shard_grads.h) are priced by the closed form only */
    if (layout_zero2(l))
        return cm_fail(err, errlen, CM_EINVAL, "the step simulator does not run --shard-grads "
                                               "(ZeRO-2); the closed form prices it");
    if (!sim_reserve(&w->stage_costs, &w->costs_cap, pp_need, sizeof *w->stage_costs) ||
        !sim_reserve(&w->grad_sync, &w->grad_cap, pp_need, sizeof *w->grad_sync) ||
        !sim_reserve(&w->param_sync, &w->param_cap, pp_need, sizeof *w->param_sync) ||
        !sim_reserve(&w->optimizer, &w->opt_cap, pp_need, sizeof *w->optimizer))
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory building the simulation");
    estimate_costs c;
    cm_status st = estimate_stage_costs(m, sys, t, l, &c, w->stage_costs, err, errlen);
    if (st != CM_OK) return st;

    int pp = l->pp, v = l->vpp, nv = pp * v, L = m->layers;
    if (!sim_reserve(&w->layer, &w->layer_cap, L, sizeof *w->layer) ||
        !sim_reserve(&w->vstage_layers, &w->vs_cap, nv, sizeof *w->vstage_layers))
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory building the simulation");
    bool fsdp = l->sharding == SHARDING_FSDP;
    for (int i = 0; i < L; i++) {
        const estimate_layer_costs *x = estimate_costs_layer(&c, i);
        sim_layer *y = &w->layer[i];
        y->fwd_s = x->fwd_s + x->fwd_comm_s;
        y->bwd_s = x->bwd_s + x->recompute_s + x->bwd_comm_s;
        y->wgrad_s = x->wgrad_s;
        y->gather_s = fsdp ? x->gather_s : 0;
        y->reduce_s = fsdp ? x->reduce_s : 0;
        y->ep_unpaired_fwd_s = x->ep_unpaired_fwd_s;
        y->ep_unpaired_bwd_s = x->ep_unpaired_bwd_s;
    }
    /* Virtual stage k = chunk * pp + stage holds the k-th slice of the layers (Megatron's
     * interleaved assignment, megatron/core/transformer/transformer_block.py; in a V schedule
     * chunk 1 of stage s is virtual stage 2pp-1-s, schedule.h); layout_check makes the slices
     * equal when vpp > 1 but for Megatron's uneven split, whose chunks are those plan writes
     * as --pipeline-model-parallel-layout (layout_chunk_layers), and torchtitan's, which
     * splits the virtual stages themselves (layout_vstage_layers, pp_split.c). */
    for (int k = 0; k < nv; k++)
        w->vstage_layers[k] = v == 1 ? w->stage_costs[k].layers : layout_vstage_layers(m, l, k);
    for (int s = 0; s < pp; s++) {
        w->grad_sync[s] = w->stage_costs[s].grad_sync_s;
        w->param_sync[s] = w->stage_costs[s].param_sync_s;
        w->optimizer[s] = w->stage_costs[s].optimizer_s;
    }

    /*
     * Gradient buckets (Megatron DistributedDataParallel): parameters are packed in reverse
     * order, the order backward produces their gradients, into buckets of at least
     * max(40M, 1M x dp) parameters (overlap_dp_bucket_params; Megatron-Core
     * distributed_data_parallel.py, ddp bucket_size default:
     * "larger DP sizes need larger buckets" to stay bandwidth-bound); a bucket is reduced as
     * soon as every gradient in it is ready in the last micro-batch. We close buckets at layer
     * boundaries. The embedding (first stage) joins the bucket of its lowest layers, the output
     * layer (last stage) the bucket of its highest. Without overlap Megatron uses one bucket
     * (bucket_size = None); sim_run then uses the stage's grad_sync_s instead.
     */
    int nb = 0;
    bool dp_buckets = !fsdp && (l->overlap_grad_reduce ||
                                (l->overlap_param_gather && l->sharding == SHARDING_DISTOPT));
    if (dp_buckets) {
        if (!sim_reserve(&w->bucket, &w->bucket_cap, L + nv, sizeof *w->bucket))
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory building the simulation");
        double bucket_params = overlap_dp_bucket_params(l);
        for (int s = 0; s < pp; s++) {
            const estimate_stage *es = &w->stage_costs[s];
            /* Stage extras: embedding and/or output layer (what the layers do not account). */
            double xd = es->dense_params, xe = es->expert_params;
            for (int ch = 0; ch < v; ch++) {
                int k = ch * pp + s, lo = 0;
                for (int j = 0; j < k; j++) lo += w->vstage_layers[j];
                for (int i = lo; i < lo + w->vstage_layers[k]; i++) {
                    const estimate_layer_costs *x = estimate_costs_layer(&c, i);
                    xd -= x->dense_params;
                    xe -= x->expert_params;
                }
            }
            xd = fmax(0, xd);
            xe = fmax(0, xe);
            int stage_first_bucket = nb, lowest = -1, highest = -1;
            for (int ch = v - 1; ch >= 0; ch--) {
                int k = ch * pp + s, lo = 0;
                for (int j = 0; j < k; j++) lo += w->vstage_layers[j];
                int hi = lo + w->vstage_layers[k] - 1;
                double pd = 0, pe = 0, lpd = 0, lpe = 0;
                int top = hi;
                for (int i = hi; i >= lo; i--) {
                    const estimate_layer_costs *x = estimate_costs_layer(&c, i);
                    pd += x->dense_params;
                    pe += x->expert_params;
                    lpd += x->lp_dense_params;
                    lpe += x->lp_expert_params;
                    if (pd + pe >= bucket_params || i == lo) {
                        sim_bucket *b = &w->bucket[nb];
                        b->vstage = k;
                        b->first_layer = i;
                        b->last_layer = top;
                        b->reduce_s = pd; /* parameter counts for now; times below */
                        b->gather_s = pe;
                        b->lp_params[0] = lpd;
                        b->lp_params[1] = lpe;
                        if (ch == v - 1 && top == hi) highest = nb;
                        if (ch == 0 && i == lo) lowest = nb;
                        nb++;
                        pd = pe = lpd = lpe = 0;
                        top = i - 1;
                    }
                }
            }
            int home = (s == pp - 1 && pp > 1) ? highest : lowest;
            if (home >= 0) {
                w->bucket[home].reduce_s += xd;
                w->bucket[home].gather_s += xe;
            }
            for (int b = stage_first_bucket; b < nb; b++) {
                double pd = w->bucket[b].reduce_s, pe = w->bucket[b].gather_s;
                w->bucket[b].reduce_s =
                    estimate_dp_sync_s(sys, t, l, pd, pe, w->bucket[b].lp_params[0],
                                       w->bucket[b].lp_params[1], &w->bucket[b].gather_s);
            }
        }
    }

    sim_input *in = &w->in;
    memset(in, 0, sizeof *in);
    in->pp = pp;
    in->vpp = v;
    in->schedule = layout_pp_schedule_of(l);
    in->microbatches = c.microbatches;
    in->layers = L;
    in->layer = w->layer;
    in->vstage_layers = w->vstage_layers;
    in->head_fwd_s = c.head_fwd_s;
    in->head_bwd_s = c.head_bwd_s;
    in->first_root_fwd_s = c.first_root_fwd_s;
    in->first_root_bwd_s = c.first_root_bwd_s;
    for (int i = 0; i < 2; i++) {
        in->root_gather_s[i] = c.root_gather_s[i];
        in->root_reduce_s[i] = c.root_reduce_s[i];
    }
    in->p2p_s = c.p2p_s;
    /* Megatron-LM overlaps p2p with compute only in the interleaved schedule: overlap_p2p_comm
     * defaults on (arguments.py --no-overlap-p2p-communication) and is turned off for the
     * non-interleaved one, whose send_forward_recv_backward waits for its transfers. */
    in->p2p_overlap = v > 1;
    /* torch.distributed.pipelining issues its sends as batch_isend_irecv and waits on them a step
     * later (schedules.py _batch_p2p / fwd_sends_to_wait) under every schedule */
    if (l->framework == FRAMEWORK_TORCHTITAN) in->p2p_overlap = true;
    /* ScheduleInterleaved1F1B runs on _PipelineScheduleRuntime, whose sends and receives keep
     * their lowered order on one NCCL stream (pp_p2p_order.h); Schedule1F1B is a single-stage
     * schedule with its own loop, not modelled this way (bench/pp_torch_order.py: for 1F1B the
     * two semantics give the same timeline) */
    in->p2p_stream = l->framework == FRAMEWORK_TORCHTITAN && v > 1 && pp > 1 &&
                     (in->schedule == PP_SCHEDULE_DEFAULT ||
                      in->schedule == PP_SCHEDULE_INTERLEAVED_1F1B);
    in->fsdp = fsdp;
    in->fsdp_reshard = l->reshard_after_forward;
    in->fsdp_accumulate = fsdp && l->framework == FRAMEWORK_TORCHTITAN && pp > 1;
    in->grad_overlap = !fsdp && l->overlap_grad_reduce;
    in->param_gather_overlap = l->sharding == SHARDING_DISTOPT && l->overlap_param_gather;
    /* the closed form's unpaired steps (estimate.c ep_unpaired_path_s), op by op */
    in->ep_unpaired = l->framework == FRAMEWORK_MEGATRON && t->moe_ep_overlap;
    in->buckets = nb;
    in->bucket = w->bucket;
    in->grad_sync_s = w->grad_sync;
    in->param_sync_s = w->param_sync;
    in->optimizer_s = w->optimizer;
    if (cuda_graphs_on(l)) {
        /* what the closed form charges a graphed step (estimate.c, cuda_graphs.h): the first
         * replay's launch before the GPU has work; the optimizer behind the host's replays,
         * clip and optimizer issue (the stage costs' optimizer_s is its GPU time there) */
        double local;
        estimate_optimizer_local_s(m, sys, l, 0, &local);
        in->start_s = cuda_graphs_replay_host_s(sys, l);
        in->opt_host_end_s = cuda_graphs_host_issue_s(sys, m, l, local, c.microbatches);
    }
    return CM_OK;
}

