/*
 * estimate.c — step time and the composed estimate for one layout.
 *
 * Per micro-batch, each layer type (dense, MoE) costs its recipe (layer_recipe.h, the list
 * the simulator and the backend use too): forward, backward and recomputed GEMMs and
 * attention (compute.c) and elementwise kernels (elementwise.c), plus the
 * communication that sits on the critical path: TP/SP collectives (exposed: Megatron runs them
 * in the compute stream unless TP-comm overlap is configured, which this model does not
 * assume), EP all-to-alls (exposed), CP ring exchange (hidden behind attention where it fits,
 * as Megatron/TE overlap it), Ulysses all-to-alls (exposed), FSDP gathers and reduce-scatters
 * (prefetched one unit ahead: only the part longer than the unit's compute shows), PP
 * send/recv. A pipeline runs m micro-batches through its slowest stage and pays the 1F1B
 * fill/drain bubble (p-1)/v of a micro-batch
 * (Narayanan et al. 2021, Sec. 2.2: bubble fraction (p-1)/(v m)). Data-parallel gradient
 * reduction overlaps the last micro-batch's backward when the framework overlaps it
 * (Megatron --overlap-grad-reduce: bucketed, the last bucket stays exposed).
 */
#include "estimate.h"
#include "grad_accum.h"
#include "estimate_internal.h"
#include "gemm_headroom.h"
#include "estimate_costs.h"

#include <math.h>
#include <string.h>

#include "collective.h"
#include "compute.h"
#include "dtensor_step_host.h"
#include "elementwise.h"
#include "flops.h"
#include "fsdp_copies.h"
#include "layer_recipe.h"
#include "memory.h"
#include "overlap.h"
#include "offload.h"
#include "optimizer_host.h"
#include "cuda_graphs.h"
#include "pp_schedule.h"
#include "precision.h"
#include "schedule.h"
#include "shard_grads.h"

static layer_time layer_cost(const model_spec *m, const system_spec *sys, const training_spec *t,
                             const layout *l, int moe)
{
    recipe r;
    recipe_layer(m, sys, t, l, moe, &r, NULL);
    layer_time x;
    recipe_price(&r, &x);
    return x;
}

/* FSDP2's copies of stage s's root unit (fsdp_copies.h: embedding on the first stage, final
 * norm and output layer on the last), per micro-batch: the compute stream's copy-out of each
 * gather (forward, and backward when resharded) and the reduce-scatter copy-in, and the copy-in
 * ahead of each gather. Nothing runs beside the root's gathers (the forward's first op, the
 * backward's first), so its copy-in is exposed. Zeros without FSDP2. */
static void root_copies_cost(const model_spec *m, const system_spec *sys, const layout *l,
                             int stage, int micro, double *fwd_s, double *bwd_s,
                             double *copy_in_s)
{
    *fwd_s = *bwd_s = *copy_in_s = 0;
    double p = fsdp_root_params(m, l, stage) / l->tp;
    if (!fsdp_copies_apply(l) || p <= 0) return;
    fsdp_copies fc;
    fsdp_copies_of(l, p, &fc);
    if (fsdp_pipelined(l) && !l->reshard_after_forward) {
        /* once per step, the gradients summed in fp32 between (fsdp_copies.h) */
        *fwd_s = fsdp_pipelined_copy_out_s(sys, &fc, micro);
        *bwd_s = fsdp_pipelined_grad_s(sys, &fc, micro);
        *copy_in_s = fsdp_copy_in_s(sys, &fc) / (micro > 0 ? micro : 1);
        return;
    }
    *fwd_s = fsdp_copy_out_s(sys, &fc);
    *bwd_s = (l->reshard_after_forward ? fsdp_copy_out_s(sys, &fc) : 0) +
             fsdp_rs_copy_in_s(sys, &fc) + fsdp_rs_one_rank_s(sys, &fc);
    *copy_in_s = fsdp_gathers_per_microbatch(l) * fsdp_copy_in_s(sys, &fc);
}

/* Output layer GEMM and the loss head's elementwise kernels on the last stage, per micro-batch,
 * under FSDP2 with the compute-stream copies of the last stage's root unit: the head's recipe
 * (layer_recipe.h recipe_head) priced. */
void estimate_head_cost(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, double *fwd_s, double *bwd_s)
{
    estimate_head_cost_mtp(m, sys, t, l, NULL, fwd_s, bwd_s);
}

void estimate_head_cost_mtp(const model_spec *m, const system_spec *sys,
                            const training_spec *t, const layout *l, const recipe *mtp_layer,
                            double *fwd_s, double *bwd_s)
{
    recipe r;
    recipe_head_mtp(m, sys, t, l, mtp_layer, &r, NULL);
    recipe_time x;
    recipe_price(&r, &x);
    /* the MTP modules' layer brings its TP/EP exchanges and recompute (recipe_mtp.c) */
    *fwd_s = x.fwd_s + x.fwd_comm_s;
    *bwd_s = x.bwd_s + x.recompute_s + x.bwd_comm_s;
}

/* How far the host's issue queue runs ahead of the GPU over the loss head (its GPU time less its
 * host issue time, forward and backward; 0 where no host floor applies). */
static double head_host_lead_s(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const layout *l)
{
    recipe r;
    recipe_head(m, sys, t, l, &r, NULL);
    recipe_time x;
    recipe_price(&r, &x);
    return x.host_lead_fwd_s + x.host_lead_bwd_s;
}

/* One send of a micro-batch's activations (or their gradients) to the adjacent stage; each TP
 * rank sends its 1/tp slice (SP, or Megatron's scatter-gather). */
static double p2p_cost(const model_spec *m, const system_spec *sys, const training_spec *t,
                       const layout *l)
{
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    double bytes = tokens * m->hidden * 2.0 / l->tp;
    return collective_time_s(sys, COLL_SEND_RECV, bytes, layout_pp_group(sys, l));
}

/* The FSDP root unit of stage s (embedding on the first stage, final norm and output layer on
 * the last): torch FSDP2's fully_shard(model) and Megatron-FSDP shard them like a layer. One
 * all-gather of it and one reduce-scatter of its gradients, per micro-batch; zeros without
 * FSDP. Its gather is the forward's first operation and, resharded, the backward's first; its
 * reduce-scatter the backward's last: nothing runs beside them, so they are exposed (the same
 * reasoning as the first layer's gather in stage_cost; the simulator places them there). */
static void root_traffic(const model_spec *m, const system_spec *sys, const training_spec *t,
                         const layout *l, int stage, double *gather_s, double *reduce_s)
{
    *gather_s = *reduce_s = 0;
    if (!layout_grads_sharded(l)) return;
    double pr = fsdp_root_params(m, l, stage) / l->tp;
    if (pr <= 0) return;
    layout_group g = layout_shard_place(sys, l);
    double red = layout_is_pytorch(l) ? 4.0 : (t->grad_reduce_bf16 ? 2.0 : 4.0);
    /* ZeRO-2 (shard_grads.h): replicated parameters, nothing gathered */
    if (l->sharding == SHARDING_FSDP)
        *gather_s = collective_time_s(sys, COLL_ALL_GATHER, 2.0 * pr, g);
    *reduce_s = collective_time_s(sys, COLL_REDUCE_SCATTER, red * pr, g);
}



void estimate_layer_times(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, layer_kinds *k)
{
    k->dense = layer_cost(m, sys, t, l, 0);
    k->moe = model_is_moe(m) ? layer_cost(m, sys, t, l, 1) : k->dense;
    k->dense_bf16 = k->dense;
    k->moe_bf16 = k->moe;
    if (precision_is_low(l) && (l->bf16_layers_start > 0 || l->bf16_layers_end > 0)) {
        layout lb = precision_bf16_layout(l);
        k->dense_bf16 = layer_cost(m, sys, t, &lb, 0);
        k->moe_bf16 = model_is_moe(m) ? layer_cost(m, sys, t, &lb, 1) : k->dense_bf16;
    }
}

/* Megatron activation offload (offload.h): the waits Transformer Engine's schedule of the
 * copies puts on the compute stream, layer by layer, of the stage's n (<= 1024) layers from
 * start. Apart from stage_layers_cost (never inlined there) so that its 24 KB of per-layer
 * arrays are not in that hot function's frame (speed27). */
static __attribute__((noinline)) void activation_offload_waits(
    const model_spec *m, const system_spec *sys, const training_spec *t, const layout *l,
    const layer_kinds *kinds, int start, int n, int act_off, double *fwd_wait_s,
    double *bwd_wait_s)
{
    double fwd[1024], bwd[1024], bytes[1024];
    double layer_bytes[2] = {memory_layer_activation_bytes(m, t, l, false),
                             model_is_moe(m) ? memory_layer_activation_bytes(m, t, l, true) : 0};
    for (int j = 0; j < n; j++) {
        const layer_time *x = estimate_layer_kind_of(m, l, kinds, start + j);
        fwd[j] = x->fwd_s;
        bwd[j] = x->bwd_s;
        bytes[j] = layer_bytes[memory_layer_is_moe(m, start + j) ? 1 : 0];
    }
    offload_activation_pass p = {.n = n, .n_off = act_off, .fwd_s = fwd, .bwd_s = bwd,
                                 .bytes = bytes};
    offload_activation_wait_s(sys, &p, fwd_wait_s, bwd_wait_s);
}

/* Stage `stage`'s decoder layers into s (zeroed first): every sum of estimate_stage_cost up to
 * its layers' last term, so that what it adds after them (the first FSDP unit's traffic, the
 * head, the root units, the pipeline sends) only adds non-negative terms to these sums.
 * Returns the stage's first global layer. */
static int stage_layers_cost(const model_spec *m, const system_spec *sys,
                             const training_spec *t, const layout *l, int stage,
                             const layer_kinds *kinds, stage_time *out)
{
    /* zeroed by a copy: memset's rep stos on this 2.6 M-a-search path cost more (speed27) */
    static const stage_time zero;
    stage_time s = zero;
    int n = layout_stage_layers(m, l, stage);
    int start = layout_stage_start(m, l, stage); /* closed form for the default split */
    /* count each kind's layers, then add count x time (in the kinds' order) */
    const layer_time *kind[4] = {&kinds->dense, &kinds->moe, &kinds->dense_bf16,
                                 &kinds->moe_bf16};
    int counts[4] = {0, 0, 0, 0}, first_moe = -1; /* -1: some layer bf16 */
    if (precision_is_low(l) &&
        (l->bf16_layers_start > 0 || l->bf16_layers_end > 0 || start + n > m->layers)) {
        for (int i = start; i < start + n; i++)
            counts[(memory_layer_is_moe(m, i) ? 1 : 0) + (precision_layer_bf16(m, l, i) ? 2 : 0)]++;
    } else { /* no bf16 layers (precision_layer_bf16): the MoE ones are from dense_first on */
        first_moe = !model_is_moe(m)            ? start + n
                    : m->dense_first > start ? m->dense_first
                                             : start;
        counts[1] = first_moe < start + n ? start + n - first_moe : 0;
        counts[0] = n - counts[1];
    }
    /* full recompute of some layers (--recompute-num-layers, memory.c's count): that share of
     * the recompute time */
    double rf = 1;
    if (l->recompute == RECOMPUTE_FULL && l->recompute_layers > 0 && l->recompute_layers < n)
        rf = (double)l->recompute_layers / n;
    int act_off = offload_activation_layers(m, l);
    double host_lead = 0, host_exposed = 0; /* the host's issue queue, below */
    for (int k = 0; k < 4; k++) {
        const layer_time *x = kind[k];
        int c = counts[k];
        if (!c) continue;
        s.fwd_s += c * x->fwd_s;
        s.bwd_s += c * (x->bwd_s + rf * x->recompute_s);
        host_lead += c * x->host_lead_fwd_s;
        host_exposed += c * x->host_exposed_bwd_s;
        s.wgrad_s += c * x->wgrad_s;
        s.tp_s += c * x->tp_s;
        s.cp_s += c * x->cp_s;
        s.ep_s += c * x->ep_s;
        s.ep_unpaired_s += c * x->ep_unpaired_s;
        if (layout_zero2(l)) {
            /* ZeRO-2: no gathers; the reduce-scatter queue stalls the backward only when full,
             * and drains beside the forward that follows (shard_grads.h), per chunk of the
             * stage's layers */
            double chunk = (double)n / (l->vpp > 1 ? l->vpp : 1);
            double lp = memory_layer_params(m, l, k == 1 || k == 3);
            s.fsdp_s += c * (shard_grads_bwd_stall_s(x->reduce_s, x->bwd_s + rf * x->recompute_s,
                                                     x->fwd_s, chunk, lp) / chunk +
                             x->fsdp_contention_fwd_s + x->fsdp_contention_bwd_s);
            s.fsdp_contention_s += c * (x->fsdp_contention_fwd_s + x->fsdp_contention_bwd_s);
            s.fsdp_raw_s += c * x->reduce_s;
        } else if (layout_grads_sharded(l)) {
            /* the prefetched traffic's exposure in layer order, below */
            double ag_bwd = l->reshard_after_forward ? x->gather_s : 0;
            s.fsdp_s += c * (x->fsdp_contention_fwd_s + x->fsdp_contention_bwd_s);
            s.fsdp_contention_s += c * (x->fsdp_contention_fwd_s + x->fsdp_contention_bwd_s);
            s.fsdp_raw_s += c * (x->gather_s + ag_bwd + x->reduce_s);
        }
    }
    /* One unit prefetched ahead, in layer order: layer j's gather hides behind layer j-1's
     * forward; layer j's backward hides layer j-1's gather and layer j+1's reduce-scatter. At
     * the ends a layer pairs with its own traffic, so uniform layers give count x (gather -
     * fwd) and count x (gather + reduce - bwd); a dense first layer before MoE ones (GLM-4.5,
     * DeepSeek-V3) hides the first MoE layer's gather and reduce-scatter behind its own, shorter
     * compute (bench/results/hfmoe2r25_2026-11-29). */
    if (!layout_zero2(l) && layout_grads_sharded(l))
        s.fsdp_s = fsdp_prefetch_exposed_add(m, l, kinds, start, n, first_moe, rf, s.fsdp_s);
    if (act_off > 0 && n <= 1024) {
        double fwd_wait_s, bwd_wait_s;
        activation_offload_waits(m, sys, t, l, kinds, start, n, act_off, &fwd_wait_s,
                                 &bwd_wait_s);
        s.fwd_s += fwd_wait_s;
        s.bwd_s += bwd_wait_s;
    }
    /* The host's lead carries over the micro-batch (host_dispatch.h): the GPU work it queued
     * ahead during the forward and the loss head (GPU time - host issue time, summed) is still
     * running while the host does the backward's own work (FSDP2's chunk_cat above all), so the
     * backward's host excess is exposed only past that lead. Measured on Mixtral-8x7B cut to 2
     * layers (bench/results/smallrows_2026-11-27, call1 trace): the host issued the forward in
     * 13.9 ms against 29.6 ms of GPU work, and the GPU idled 16.5 and 18.8 ms of the two layers'
     * 36-39 ms of chunk_cat host time. Plain tensors on one stage only: a pipeline stage's
     * backward waits for the next stage's gradient, and the DTensor TP, CP ring and EP host
     * costs (host_dispatch.c) were measured as whole-layer host times that already hold what
     * their passes hide (carrying a lead there took the multi-GPU table's TP rows 5-12 points
     * low). The launch queue's depth (about a thousand kernels) is not a limit here.
     * A compiled DTensor TP step carries it too: its blocks' host figure (host_dispatch.c
     * compiled_layer_s) is the host alone (measured at a GPU-free shape), and the loss head's
     * GPU backward (the vocabulary-parallel loss over the logits) is queued ahead of the first
     * block's backward while the host issues the blocks: bench/results/tp11_2026-11-28, the
     * compiled TP 4 step of tt10 (H100) +15.8% -> +2.0% and tp11's on its own host +7.3% ->
     * -2.4% with it. */
    if (l->pp == 1 && (l->tp == 1 || l->compile) && l->cp == 1 && l->ep == 1 && host_exposed > 0) {
        double lead = host_lead;
        if (lead < host_exposed) lead += head_host_lead_s(m, sys, t, l);
        s.bwd_s -= fmin(lead, host_exposed);
    }
    s.layers = n;
    *out = s;
    return start;
}

stage_time estimate_stage_cost(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const layout *l, int stage,
                               const layer_kinds *kinds, const layer_time *head)
{
    stage_time s;
    int start = stage_layers_cost(m, sys, t, l, stage, kinds, &s);
    s.stage = stage;
    int n = s.layers;
    /* torch pipelining gathers and reduces each unit once per step (fsdp_copies.h): what is
     * exposed once is spread over the step's micro-batches */
    int micro = layout_microbatches(l, t);
    double once = fsdp_pipelined(l) && !l->reshard_after_forward && micro > 1 ? 1.0 / micro : 1.0;
    if (layout_zero2(l) && n > 0) {
        /* what is still queued after the step's last backward (shard_grads.h) */
        const layer_time *first = estimate_layer_kind_of(m, l, kinds, start);
        double tail = shard_grads_tail_s(first->reduce_s, (double)n / (l->vpp > 1 ? l->vpp : 1),
                                         memory_layer_params(m, l, memory_layer_is_moe(m, start)));
        s.fsdp_s += tail / (micro > 0 ? micro : 1);
        s.fsdp_raw_s += first->reduce_s;
    } else if (layout_grads_sharded(l) && n > 0) {
        const layer_time *first = estimate_layer_kind_of(m, l, kinds, start);
        s.fsdp_s += once * (first->gather_s + first->reduce_s); /* nothing to hide the first/last */
        s.fsdp_raw_s += once * (first->gather_s + first->reduce_s);
    }
    /* the head where it runs: the last rank, or rank 0 under the V schedules, whose last
     * virtual stage is there (layout_head_stage; memory_params.c puts its weights there too;
     * torchtitan b5bcd76 distributed/pipeline_parallel.py:551-567 maps rank r to stages r and
     * 2pp-1-r, and 357-467 gives the last stage the norm and output) */
    if (stage == layout_head_stage(l)) {
        double hf, hb;
        if (head) {
            hf = head->fwd_s;
            hb = head->bwd_s;
        } else {
            estimate_head_cost(m, sys, t, l, &hf, &hb);
        }
        s.fwd_s += hf;
        s.bwd_s += hb;
    }
    /* FSDP2's root unit copies: the last stage's compute-stream ones are in head_cost; the
     * first stage's (the embedding, with a pipeline) here; every root copy-in exposed. */
    {
        double rf, rb, rin;
        root_copies_cost(m, sys, l, stage, micro, &rf, &rb, &rin);
        if (stage == 0 && l->pp > 1) {
            s.fwd_s += rf;
            s.bwd_s += rb;
        }
        s.fsdp_s += rin;
        s.fsdp_raw_s += rin;
    }
    /* The root unit's own traffic, all exposed (root_traffic). */
    {
        double rg, rr;
        root_traffic(m, sys, t, l, stage, &rg, &rr);
        double root = once * (fsdp_gathers_per_microbatch(l) * rg + rr);
        s.fsdp_s += root;
        s.fsdp_raw_s += root;
    }
    if (l->pp > 1) s.pp_s = 2.0 * l->vpp * p2p_cost(m, sys, t, l);
    s.compute_s = s.fwd_s + s.bwd_s;
    return s;
}

double estimate_stage_total(const stage_time *s)
{
    return s->compute_s + s->tp_s + s->cp_s + s->ep_s + s->pp_s + s->fsdp_s;
}

double estimate_stage_layers_total(const model_spec *m, const system_spec *sys,
                                   const training_spec *t, const layout *l, int stage,
                                   const layer_kinds *kinds)
{
    stage_time s;
    stage_layers_cost(m, sys, t, l, stage, kinds, &s);
    s.compute_s = s.fwd_s + s.bwd_s; /* pp_s stays 0 */
    return estimate_stage_total(&s);
}

/*
 * Step-level corrections (issue 4): the terms of system.h's system_step, fitted by `plan
 * measure --refine` (costmodel/refine.c) to training steps measured by the backend
 * (backend/bk_measure.c), and applied here and nowhere else. Each has a physical meaning:
 *   compute  x compute_scale [x fsdp2_compute_scale under torch FSDP2]
 *            + layers x micro-batches x layer_overhead_s
 *   bubble   x the same scale (it is made of compute)
 *   TP/CP/EP/PP exposed communication  x comm_scale
 *   DP/FSDP  + (1 - overlap_efficiency) x the traffic the model hides behind compute
 * layer_mbs = layers on the timed stage x micro-batches; hidden_dp_s = modelled-hidden DP/FSDP
 * traffic per step. The prediction's variance from the fit is g' C g with g = d step / d terms
 * at the fitted values (the delta method; exact but for the product of the two scales).
 */
static double apply_step_terms(const system_step *st, const layout *l, double layer_mbs,
                               double hidden_dp_s, time_breakdown *tm)
{
    const double *v = st->value;
    bool fsdp2 = layout_is_pytorch(l); /* torch FSDP2 steps: the fsdp2 path and torchtitan */
    double fs = fsdp2 ? v[STEP_FSDP2_COMPUTE_SCALE] : 1, cs = v[STEP_COMPUTE_SCALE] * fs;
    double g[STEP_NTERMS];
    g[STEP_COMPUTE_SCALE] = (tm->compute_s + tm->bubble_s) * fs;
    g[STEP_COMM_SCALE] = tm->tp_s + tm->cp_s + tm->ep_s + tm->pp_s;
    g[STEP_OVERLAP_EFFICIENCY] = -hidden_dp_s;
    g[STEP_LAYER_OVERHEAD] = layer_mbs;
    g[STEP_FSDP2_COMPUTE_SCALE] = fsdp2 ? (tm->compute_s + tm->bubble_s) * v[STEP_COMPUTE_SCALE] : 0;
    tm->compute_s = cs * tm->compute_s + layer_mbs * v[STEP_LAYER_OVERHEAD];
    tm->bubble_s *= cs;
    tm->tp_s *= v[STEP_COMM_SCALE];
    tm->cp_s *= v[STEP_COMM_SCALE];
    tm->ep_s *= v[STEP_COMM_SCALE];
    tm->pp_s *= v[STEP_COMM_SCALE];
    tm->dp_s += (1 - v[STEP_OVERLAP_EFFICIENCY]) * hidden_dp_s;
    tm->comm_exposed_s = tm->tp_s + tm->cp_s + tm->ep_s + tm->pp_s + tm->dp_s;
    double var = 0;
    for (int i = 0; i < STEP_NTERMS; i++)
        for (int j = 0; j < STEP_NTERMS; j++) var += g[i] * st->cov[i][j] * g[j];
    return var > 0 ? var : 0;
}

void estimate_model_counts_of(const model_spec *m, estimate_model_counts *c)
{
    c->params_total = model_params_total(m);
    c->params_active = model_params_active(m);
    memory_model_counts_of(m, &c->memory);
}

void estimate_memory_part(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, const layout *l, estimate *out)
{
    estimate_model_counts c;
    estimate_model_counts_of(m, &c);
    estimate_memory_part_counted(m, &c, sys, t, l, out);
}

/* The estimate's identity (zeroed first), before its memory. */
static void estimate_identity(const model_spec *m, const estimate_model_counts *c,
                              const training_spec *t, const layout *l, estimate *out)
{
    memset(out, 0, sizeof *out);
    size_t n = strnlen(m->name, sizeof out->model_name - 1);
    memcpy(out->model_name, m->name, n);
    out->params_total = c->params_total;
    out->params_active = c->params_active;
    out->layout = *l;
    out->training = *t;
    out->gpus = layout_gpus(l);
    out->microbatches = layout_microbatches(l, t);
}

void estimate_memory_part_counted(const model_spec *m, const estimate_model_counts *c,
                                  const system_spec *sys, const training_spec *t,
                                  const layout *l, estimate *out)
{
    estimate_identity(m, c, t, l, out);
    out->memory = memory_peak_counted(m, &c->memory, sys, t, l);
}

void estimate_memory_part_memo(const model_spec *m, const estimate_model_counts *c,
                               memory_memo *memo, const system_spec *sys,
                               const training_spec *t, const layout *l,
                               const memory_breakdown *known, estimate *out)
{
    estimate_identity(m, c, t, l, out);
    out->memory = known ? *known : memory_peak_memo(m, memo, sys, t, l);
}

stage_time estimate_worst_stage(const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *l,
                                const layer_kinds *kinds_in, const layer_time *head)
{
    layer_kinds k;
    if (kinds_in) k = *kinds_in;
    else estimate_layer_times(m, sys, t, l, &k);
    int cands[3] = {0, l->pp > 1 ? layout_busiest_middle_stage(m, l) : 0, l->pp - 1};
    stage_time worst = estimate_stage_cost(m, sys, t, l, 0, &k, head);
    double first_s = estimate_stage_total(&worst), mid_s = first_s, last_s = first_s;
    double first_u = worst.ep_unpaired_s, mid_u = first_u, last_u = first_u;
    int head_stage = layout_head_stage(l);
    bool head_worst = l->pp > 1 && head_stage == 0;
    for (int i = 1; i < 3; i++) {
        if (cands[i] == 0) continue;
        stage_time s = estimate_stage_cost(m, sys, t, l, cands[i], &k, head);
        double ts = estimate_stage_total(&s);
        if (i == 1 && cands[1] != cands[2]) {
            mid_s = ts;
            mid_u = s.ep_unpaired_s;
        }
        if (i == 2) {
            last_u = s.ep_unpaired_s;
            last_s = ts;
        }
        if (ts > estimate_stage_total(&worst)) {
            worst = s;
            head_worst = cands[i] == head_stage;
        }
    }
    /* The last stage the slowest (the loss head on it): the fill and drain run through the
     * stages before it, the first micro-batch's forward and the last one's backward, not
     * through p-1 copies of the slowest (a pipeline's makespan is m times its bottleneck
     * stage plus the other stages' times; with equal stages (p-1)/v micro-batches as before).
     * The stages before it are priced as the slower of the first and a middle one (their
     * sum is at most p-1 times that), so the bubble never falls below (p-1)/v of the first
     * stage's micro-batch, the search's lower bound (estimate_search.c). The step simulator
     * runs the stages op by op and gives the same (bench/README.md "Pipeline bubble with a
     * heavy last stage": the real pipelined runs' median error 8.1% -> 3.9%). */
    /* (under the V schedules the head is on rank 0: the others are a middle one and the last) */
    double other_s = head_stage == 0 ? last_s : first_s;
    worst.fill_s = head_worst ? (mid_s > other_s ? mid_s : other_s) : 0;
    /* the other stages' unpaired exchanges (ep_unpaired_path_s): the middle stages hold equal
     * layers (layout_stage_layers), so the first, p - 2 middle ones and the last */
    double all_u = first_u + (l->pp > 2 ? l->pp - 2 : 0) * mid_u + (l->pp > 1 ? last_u : 0);
    worst.ep_unpaired_rest_s = fmax(0, all_u - worst.ep_unpaired_s);
    return worst;
}

/* The time half (out already holds estimate_memory_part's fields) and the feasibility. */
static void estimate_time_part(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const layout *l, estimate *out)
{
    stage_time worst = estimate_worst_stage(m, sys, t, l, NULL, NULL);
    estimate_time_assemble(m, sys, t, l, &worst, out);
    /* GEMMs faster where the rest of the step leaves power under the cap */
    gemm_headroom_step(m, sys, t, l, &worst, out, NULL);
}

/* Megatron's EP A2A overlap pairs a forward with a backward of another micro-batch only in the
 * schedule's steady state (recipe_price.c prices that pairing): without pipelining the first
 * micro-batch's forward and the last one's backward run alone (Megatron-LM d98e8a6
 * pipeline_parallel/combined_1f1b.py combined_1f1b_schedule_for_no_pipelining, "Phases 0: 1st
 * microbatch forward"); under the interleaved schedule rank r runs (p - r - 1) x 2 + (v - 1) x
 * p + 1 warm-up forwards (of chunks) before its combined 1F1B steps and as many cool-down
 * backwards after them (schedules.py get_pp_rank_microbatches 964-970, the +1 being "one extra
 * micro-batch forward step before the 1f1b stages"; microbatch_group_size_per_vp_stage at its
 * default, p), each exposing its whole exchange (schedule_combined_unpaired counts them).
 *
 * The step pays those on its critical path, not w's own count (w the slowest stage): the first
 * forward and last backward chunk of every stage before w (fill and drain), one forward and one
 * backward chunk of every stage after w (w's first backward waits for that round trip, and its
 * own first 2(p - w - 1) unpaired forwards run under it: the extra warm-up of earlier stages,
 * schedules.py 959-962; the cool-down mirrors it), and w's remaining (v - 1)p + 1, the last
 * stage's count. Each chunk is 1/v of its stage's ep_unpaired_s. The step simulator, which runs
 * every stage's unpaired chunks, agrees exactly with w last (the MoE layouts' loss head) or all
 * stages equal, within 17% of this term with w first or in the middle (then faster stages after
 * it cover less of its warm-up; bench/results/unpaired15_2026-11-28/README.md). */
static double ep_unpaired_path_s(const layout *l, int micro, const stage_time *w)
{
    if (l->framework != FRAMEWORK_MEGATRON || micro < 1) return 0;
    if (l->pp <= 1) return w->ep_unpaired_s;
    int v = l->vpp > 1 ? l->vpp : 1;
    int n = schedule_combined_unpaired(l->pp, v, micro, l->pp - 1);
    return (n * w->ep_unpaired_s + w->ep_unpaired_rest_s) / v;
}

/* The step from the worst stage's micro-batch: data-parallel sync, optimizer, bubble, the
 * uncertainty band, throughput and feasibility. */
void estimate_time_assemble(const model_spec *m, const system_spec *sys, const training_spec *t,
                            const layout *l, const stage_time *worst_stage, estimate *out)
{
    int micro = out->microbatches;
    stage_time worst = *worst_stage;
    double t_mb = estimate_stage_total(&worst);

    /* Data-parallel gradient (and parameter) synchronisation of the first stage, which is the
     * last to finish its backward. */
    double dp_s = 0, dp_raw = 0;
    if (l->sharding != SHARDING_FSDP) {
        double pd, pe, lpd, lpe;
        memory_stage_params(m, l, 0, &pd, &pe);
        memory_stage_lp_params(m, l, 0, &lpd, &lpe);
        double gather;
        double grad = estimate_dp_sync_s(sys, t, l, pd, pe, lpd, lpe, &gather);
        dp_raw = grad + gather;
        /* Megatron's DDP buckets (overlap.h): with --overlap-grad-reduce each bucket's
         * collective starts as it fills during the last micro-batch's backward, and pays its
         * own latency; without it the buffer is one bucket reduced after the backward. The
         * parameter all-gather uses the same buckets, hidden behind the first forward with
         * --overlap-param-gather. */
        int nb = overlap_dp_buckets(l, pd + pe);
        double bgather = gather, bgrad = grad;
        if (nb > 1)
            bgrad = estimate_dp_sync_s(sys, t, l, pd / nb, pe / nb, lpd / nb, lpe / nb, &bgather);
        dp_s += l->overlap_grad_reduce ? overlap_dp_exposed_s(bgrad, nb, worst.bwd_s) : grad;
        dp_s += l->overlap_param_gather ? overlap_dp_exposed_s(bgather, nb, worst.fwd_s)
                                        : nb * bgather;
    }

    double local;
    double opt_s = estimate_optimizer_local_s(m, sys, l, 0, &local);
    {   /* 2022's local DDP divides the gradient buffer first (grad_accum.h) */
        double pd0, pe0;
        memory_stage_params(m, l, 0, &pd0, &pe0);
        opt_s += grad_buffer_divide_s(sys, t, pd0 + pe0);
    }

    time_breakdown *tm = &out->time;
    tm->microbatch_s = t_mb;
    tm->compute_s = micro * worst.compute_s;
    if (t->grad_accum_unfused) {
        /* grad_accum.h: the first stage's parameters outside its layers (the embedding); the
         * layers' sums are their recipes' grad_accum ops, in worst.compute_s */
        double pd, pe, in_layers = 0;
        memory_stage_params(m, l, 0, &pd, &pe);
        int start = layout_stage_start(m, l, 0), n = layout_stage_layers(m, l, 0);
        for (int i = start; i < start + n; i++)
            in_layers += memory_layer_params(m, l, memory_layer_is_moe(m, i));
        tm->compute_s += grad_accum_step_s(sys, t, pd + pe - in_layers, micro);
    }
    tm->tp_s = micro * worst.tp_s;
    tm->cp_s = micro * worst.cp_s;
    tm->ep_s = micro * worst.ep_s + ep_unpaired_path_s(l, micro, &worst);
    tm->pp_s = micro * worst.pp_s;
    /* FSDP under torchtitan's pipeline: units stay gathered and gradients accumulate
     * unreduced across micro-batches (pytorch torch/distributed/pipelining/stage.py
     * backward_maybe_with_nosync): one gather and one reduce-scatter per step, every forward's
     * gathers again when resharded after forward (charged whole here, a slight overcount) */
    int fsdp_rounds = micro;
    if (l->framework == FRAMEWORK_TORCHTITAN && l->pp > 1 && !l->reshard_after_forward)
        fsdp_rounds = 1;
    tm->dp_s = fsdp_rounds * worst.fsdp_s + dp_s;
    tm->comm_exposed_s = tm->tp_s + tm->cp_s + tm->ep_s + tm->pp_s + tm->dp_s;
    /* the schedule's fill and drain (pp_schedule.h): (p-1)/v micro-batches under 1F1B and
     * interleaved 1F1B, less under the zero-bubble V schedules */
    pp_stage_work work = {worst.fwd_s, worst.bwd_s - worst.wgrad_s, worst.wgrad_s};
    layout_pp_schedule sch = layout_pp_schedule_of(l);
    /* With the head's stage the slowest, the fill and drain are made of the other stages'
     * time, under ZBV too: its head sits on rank 0's second chunk, and rank 0 idles only while
     * the first micro-batch crosses the other ranks (the step simulator, which runs the V op by
     * op with the head on rank 0: closed form 6.3% over it before at pp 4, 8B cut to 16 layers,
     * m 8, within 3% now; bench/results/fid10_2026-11-28/README.md). DualPipeV keeps the
     * busiest stage's time (its overlapped pairs are not modelled that way). */
    double t_fill = t_mb;
    if (worst.fill_s > 0 && sch != PP_SCHEDULE_DUALPIPEV)
        t_fill = worst.fill_s;
    tm->bubble_s = pp_schedule_bubble_s(l, t_fill, &work);
    if (cuda_graphs_on(l)) {
        /* the first replay's launch before the GPU has work (the later ones are issued while
         * it runs the graph before), then the optimizer behind the graphs (cuda_graphs.h) */
        tm->compute_s += cuda_graphs_replay_host_s(sys, l);
        opt_s = cuda_graphs_optimizer_s(sys, m, l, opt_s, local,
                                        tm->compute_s + tm->comm_exposed_s, micro);
    }
    tm->optimizer_s = opt_s;
    double step_var = 0; /* the step terms' share of the band */
    if (sys->step.active) {
        double hidden = layout_grads_sharded(l) ? fsdp_rounds * (worst.fsdp_raw_s - worst.fsdp_s)
                                                : 0;
        if (l->sharding != SHARDING_FSDP) hidden += dp_raw - dp_s; /* ZeRO-2: both */
        step_var = apply_step_terms(&sys->step, l, micro * worst.layers, fmax(0, hidden), tm);
    }
    tm->step_s = tm->compute_s + tm->comm_exposed_s + tm->bubble_s + tm->optimizer_s;
    /* Uncertainty (issue 4): the fitted GEMM efficiency's relative sd scales compute (and the
     * bubble, made of compute), the collectives' mean relative busbw sd scales exposed
     * communication; with step terms, their covariance (g' C g) and the measured steps'
     * relative scatter about the fit add too; independent terms add in quadrature. */
    double rel_gemm = sys->gemm_efficiency_sd > 0 ? sys->gemm_efficiency_sd / sys->gemm_efficiency_max
                                                  : 0;
    double rel_comm = 0;
    for (int i = 0; i < sys->n_collective_fits; i++)
        rel_comm += sys->collective_fits[i].busbw_sd / sys->collective_fits[i].busbw_bytes_per_s /
                    sys->n_collective_fits;
    double a = (tm->compute_s + tm->bubble_s) * rel_gemm, b = tm->comm_exposed_s * rel_comm;
    if (sys->step.active) {
        double scatter = sys->step.rms_rel_residual * tm->step_s;
        tm->step_sd_s = sqrt(a * a + b * b + step_var + scatter * scatter);
    } else {
        tm->step_sd_s = sqrt(a * a + b * b);
    }

    out->model_flops_per_step = flops_model_per_step(m, t);
    out->hardware_flops_per_step = flops_hardware_per_step(m, t, l);
    double tokens = (double)t->global_batch * t->seq_len;
    out->tokens_per_s = tokens / tm->step_s;
    double peak = sys->peak_bf16_flops_per_s * out->gpus;
    out->mfu = out->model_flops_per_step / (tm->step_s * peak);
    out->hfu = out->hardware_flops_per_step / (tm->step_s * peak);

    /* whether it can run (estimate_feasible.c) */
    estimate_feasibility(sys, l, local, out);
}

cm_status estimate_layout(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, estimate *out, char *err, size_t errlen)
{
    cm_status st = training_check(t, err, errlen);
    if (st != CM_OK) return st;
    st = layout_check(m, sys, t, l, 0, err, errlen);
    if (st != CM_OK) return st;
    estimate_memory_part(m, sys, t, l, out);
    estimate_time_part(m, sys, t, l, out);
    return CM_OK;
}

static estimate_layer_costs export_layer(const model_spec *m, const layout *l,
                                         const layer_time *x, int moe)
{
    estimate_layer_costs c;
    c.fwd_s = x->fwd_s;
    c.bwd_s = x->bwd_s;
    c.recompute_s = x->recompute_s;
    c.wgrad_s = x->wgrad_s;
    c.fwd_comm_s = x->fwd_comm_s;
    c.bwd_comm_s = x->bwd_comm_s;
    c.tp_s = x->tp_s;
    c.cp_s = x->cp_s;
    c.ep_s = x->ep_s;
    c.ep_unpaired_fwd_s = x->ep_unpaired_fwd_s;
    c.ep_unpaired_bwd_s = x->ep_unpaired_s - x->ep_unpaired_fwd_s;
    c.gather_s = x->gather_s;
    c.reduce_s = x->reduce_s;
    memory_layer_params_split(m, l, moe, &c.dense_params, &c.expert_params);
    memory_layer_lp_params_split(m, l, moe, &c.lp_dense_params, &c.lp_expert_params);
    return c;
}

const estimate_layer_costs *estimate_costs_layer(const estimate_costs *c, int i)
{
    bool bf16 = i < c->bf16_layers_start || i >= c->layers - c->bf16_layers_end;
    if (i >= c->first_moe_layer) return bf16 ? &c->moe_bf16 : &c->moe;
    return bf16 ? &c->dense_bf16 : &c->dense;
}

cm_status estimate_stage_costs(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const layout *l, estimate_costs *costs,
                               estimate_stage *stages, char *err, size_t errlen)
{
    cm_status st = training_check(t, err, errlen);
    if (st != CM_OK) return st;
    st = layout_check(m, sys, t, l, 0, err, errlen);
    if (st != CM_OK) return st;

    memset(costs, 0, sizeof *costs);
    costs->pp = l->pp;
    costs->vpp = l->vpp;
    costs->microbatches = layout_microbatches(l, t);
    costs->layers = m->layers;
    layer_kinds k;
    estimate_layer_times(m, sys, t, l, &k);
    costs->dense = export_layer(m, l, &k.dense, 0);
    costs->moe = model_is_moe(m) ? export_layer(m, l, &k.moe, 1) : costs->dense;
    /* bf16 first/last layers (precision.h): their own costs, bf16 weights on the gather */
    layout lb = precision_bf16_layout(l);
    costs->dense_bf16 = export_layer(m, &lb, &k.dense_bf16, 0);
    costs->moe_bf16 = model_is_moe(m) ? export_layer(m, &lb, &k.moe_bf16, 1) : costs->dense_bf16;
    costs->bf16_layers_start = precision_is_low(l) ? l->bf16_layers_start : 0;
    costs->bf16_layers_end = precision_is_low(l) ? l->bf16_layers_end : 0;
    costs->first_moe_layer = model_is_moe(m) ? m->dense_first : m->layers;
    estimate_head_cost(m, sys, t, l, &costs->head_fwd_s, &costs->head_bwd_s);
    if (l->pp > 1) { /* what estimate_stage_cost adds to stage 0 (its copy-in is in fsdp_s) */
        double rin;
        root_copies_cost(m, sys, l, 0, costs->microbatches, &costs->first_root_fwd_s,
                         &costs->first_root_bwd_s, &rin);
    }
    root_traffic(m, sys, t, l, 0, &costs->root_gather_s[0], &costs->root_reduce_s[0]);
    if (l->pp > 1)
        root_traffic(m, sys, t, l, l->pp - 1, &costs->root_gather_s[1], &costs->root_reduce_s[1]);
    costs->p2p_s = l->pp > 1 ? p2p_cost(m, sys, t, l) : 0;

    /* The closed form's choice of the slowest stage (estimate_layout). */
    int cands[3] = {0, l->pp > 1 ? layout_busiest_middle_stage(m, l) : 0, l->pp - 1};
    stage_time worst = estimate_stage_cost(m, sys, t, l, 0, &k, NULL);
    for (int i = 1; i < 3; i++) {
        if (cands[i] == 0) continue;
        stage_time s = estimate_stage_cost(m, sys, t, l, cands[i], &k, NULL);
        if (estimate_stage_total(&s) > estimate_stage_total(&worst)) {
            worst = s;
            costs->worst_stage = cands[i];
        }
    }
    if (!stages) return CM_OK;

    int first = 0;
    for (int s = 0; s < l->pp; s++) {
        estimate_stage *e = &stages[s];
        stage_time x = estimate_stage_cost(m, sys, t, l, s, &k, NULL);
        memset(e, 0, sizeof *e);
        e->layers = layout_stage_layers(m, l, s);
        e->first_layer = first;
        int moe_from = costs->first_moe_layer > first ? costs->first_moe_layer : first;
        e->moe_layers = first + e->layers > moe_from ? first + e->layers - moe_from : 0;
        first += e->layers;
        e->fwd_s = x.fwd_s;
        e->bwd_s = x.bwd_s;
        e->tp_s = x.tp_s;
        e->cp_s = x.cp_s;
        e->ep_s = x.ep_s;
        e->fsdp_s = x.fsdp_s;
        e->pp_s = x.pp_s;
        e->total_s = estimate_stage_total(&x);
        memory_stage_params(m, l, s, &e->dense_params, &e->expert_params);
        memory_stage_lp_params(m, l, s, &e->lp_dense_params, &e->lp_expert_params);
        e->grad_sync_s =
            estimate_dp_sync_s(sys, t, l, e->dense_params, e->expert_params, e->lp_dense_params,
                               e->lp_expert_params, &e->param_sync_s);
        e->optimizer_s = estimate_optimizer_s(m, sys, l, s) +
                         grad_buffer_divide_s(sys, t, e->dense_params + e->expert_params);
    }
    return CM_OK;
}
