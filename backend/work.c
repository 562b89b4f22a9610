/*
 * work.c — layout to GPU work (see work.h). A layer's and the head's items are the cost model's
 * layer recipe (costmodel/layer_recipe.h) turned into work items one for one, with the recipe's
 * predicted time each: what a layer does is written there once, for the estimate, the
 * simulator and this file (tests/test_recipe.c checks the three agree).
 */
#include "work.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "estimate_costs.h"
#include "fsdp_copies.h"
#include "dtensor_step_host.h"
#include "host_dispatch.h"
#include "impl.h"
#include "layer_recipe.h"
#include "optimizer_host.h"
#include "memory.h"
#include "precision.h"

static const char *component_names[WC_COUNT] = {
    "gemm",    "attention", "elementwise", "tp_comm",         "cp_comm", "ep_comm",
    "pp_comm", "dp_comm",   "optimizer",   "framework_copies",
};
static const char *group_names[GROUP_COUNT] = {"tp", "cp", "dp", "ep", "edp"};

const char *work_component_name(work_component c)
{
    return (c >= 0 && c < WC_COUNT) ? component_names[c] : "?";
}

const char *work_group_name(work_group g)
{
    return (g >= 0 && g < GROUP_COUNT) ? group_names[g] : "?";
}

double work_list_pred_s(const work_list *w)
{
    double s = 0;
    for (int i = 0; i < w->n; i++) s += w->item[i].pred_s;
    return s;
}

double work_list_host_s(const work_list *w)
{
    double s = w->host_lead_s;
    for (int i = 0; i < w->n; i++) s += w->item[i].host_s;
    return s;
}

void work_host_layer_s(const work_plan *w, bool moe, double *fwd_s, double *bwd_s)
{
    int k = moe ? 1 : 0;
    *fwd_s = work_list_host_s(moe ? &w->moe_fwd : &w->layer_fwd) + w->host_gather_fwd_s[k];
    *bwd_s = work_list_host_s(moe ? &w->moe_bwd : &w->layer_bwd) + w->host_gather_bwd_s[k] +
             w->host_reduce_s[k];
}

/* The backend's component (report row) of a recipe op. */
static work_component component_of(recipe_kind k)
{
    switch (k) {
    case RECIPE_GEMM: return WC_GEMM;
    case RECIPE_ATTENTION: return WC_ATTENTION;
    case RECIPE_ELEMENTWISE: return WC_ELEMENTWISE;
    case RECIPE_TP: return WC_TP;
    case RECIPE_CP: return WC_CP;
    case RECIPE_EP: return WC_EP;
    case RECIPE_FSDP_GATHER:
    case RECIPE_FSDP_REDUCE: return WC_DP;
    case RECIPE_FSDP_COPY:
    case RECIPE_KINDS: break;
    }
    return WC_FRAMEWORK;
}

/* A recipe item as a work item: the same shape, bytes and predicted time. */
static void work_item_of(const recipe *r, const recipe_item *s, work_item *it)
{
    static const work_kind kinds[] = {[RECIPE_ITEM_GEMM] = WORK_GEMM,
                                      [RECIPE_ITEM_STREAM] = WORK_STREAM,
                                      [RECIPE_ITEM_COLL] = WORK_COLL};
    static const work_gemm_form forms[] = {[RECIPE_FORM_FWD] = GEMM_FWD,
                                           [RECIPE_FORM_DGRAD] = GEMM_DGRAD,
                                           [RECIPE_FORM_WGRAD] = GEMM_WGRAD};
    static const work_group groups[] = {[RECIPE_GROUP_TP] = GROUP_TP,
                                        [RECIPE_GROUP_CP] = GROUP_CP,
                                        [RECIPE_GROUP_EP] = GROUP_EP};
    memset(it, 0, sizeof *it);
    it->kind = kinds[s->kind];
    it->component = component_of(r->op[s->op].kind);
    snprintf(it->name, sizeof it->name, "%s", s->name);
    it->batch = s->batch;
    if (s->kind == RECIPE_ITEM_GEMM) {
        it->form = forms[s->form];
        it->m = s->m;
        it->n = s->n;
        it->k = s->k;
        it->weight_operand = s->weight_operand;
        it->looped = s->looped;
        it->fp8 = s->low_precision;
        it->flops = 2.0 * s->m * s->n * s->k * s->batch;
    } else if (s->kind == RECIPE_ITEM_STREAM) {
        it->bytes = s->bytes;
        it->access = s->access;
        it->param_operands = s->param_operands;
    } else {
        it->op = s->coll;
        it->bytes = s->bytes;
        it->group = groups[s->group];
    }
    it->pred_s = s->pred_s;
}

/* The host's issue time of r's ops (h, host_dispatch_host_of) onto the items of F and B: an op's
 * host time in a pass shared evenly over its items in that pass; what no item carries (an op
 * without items in the pass, the pass's hooks) at the list's start. */
static void host_onto(const recipe *r, const recipe_items *items, const host_dispatch_host *h,
                      work_list *F, work_list *B)
{
    int count[RECIPE_PHASES][RECIPE_MAX_OPS] = {{0}};
    for (int i = 0; i < items->n; i++) count[items->item[i].phase][items->item[i].op]++;
    F->host_lead_s = h->pass_s[RECIPE_FWD];
    B->host_lead_s = h->pass_s[RECIPE_RECOMPUTE] + h->pass_s[RECIPE_BWD];
    for (int p = 0; p < RECIPE_PHASES; p++)
        for (int o = 0; o < r->n_ops; o++)
            if (!count[p][o])
                *(p == RECIPE_FWD ? &F->host_lead_s : &B->host_lead_s) += h->op_s[p][o];
    /* the lists hold the items in lists_of's order: phase by phase, the recipe's order within */
    static const recipe_phase order[3] = {RECIPE_FWD, RECIPE_RECOMPUTE, RECIPE_BWD};
    int nf = 0, nb = 0;
    int seen[RECIPE_PHASES][RECIPE_MAX_OPS] = {{0}};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < items->n; i++) {
            const recipe_item *s = &items->item[i];
            if (s->phase != order[k]) continue;
            work_item *it = order[k] == RECIPE_FWD ? &F->item[nf++] : &B->item[nb++];
            it->host_s = h->op_s[s->phase][s->op] / count[s->phase][s->op];
            /* the queue's wait for the GPU comes after the op's last launch of the pass */
            it->host_sync = h->sync[s->phase][s->op] &&
                            ++seen[s->phase][s->op] == count[s->phase][s->op];
        }
}

/* The recipe's items into the forward list F and the backward list B (the recomputed forward
 * first, then the backward), in the recipe's order. */
static cm_status lists_of(const recipe *r, const recipe_items *items, work_list *F, work_list *B,
                          char *err, size_t errlen)
{
    int n[RECIPE_PHASES] = {0};
    for (int i = 0; i < items->n; i++) n[items->item[i].phase]++;
    if (items->overflow || n[RECIPE_FWD] >= WORK_MAX_ITEMS || n[RECIPE_BWD] >= WORK_MAX_ITEMS ||
        n[RECIPE_RECOMPUTE] + n[RECIPE_BWD] > WORK_MAX_ITEMS)
        return cm_fail(err, errlen, CM_EINVAL, "internal: too many work items per layer");
    static const recipe_phase order[3] = {RECIPE_FWD, RECIPE_RECOMPUTE, RECIPE_BWD};
    F->n = B->n = 0;
    for (int o = 0; o < 3; o++) {
        work_list *w = order[o] == RECIPE_FWD ? F : B;
        for (int i = 0; i < items->n; i++)
            if (items->item[i].phase == order[o])
                work_item_of(r, &items->item[i], &w->item[w->n++]);
    }
    return CM_OK;
}

int work_rank(const layout *l, int tp_idx, int cp_idx, int dp_idx)
{
    return tp_idx + l->tp * (cp_idx + l->cp * dp_idx);
}

int work_local_pp(const layout *l, int local_gpus)
{
    return (long)l->tp * l->cp * l->pp <= local_gpus ? l->pp : 1;
}

int work_local_dp(const layout *l, int local_gpus, bool *whole, char *err, size_t errlen)
{
    int mp = l->tp * l->cp;
    *whole = false;
    if (mp > local_gpus) {
        cm_fail(err, errlen, CM_EINVAL,
                "one tensor/context-parallel group needs tp*cp = %d GPUs, this machine has %d: "
                "measure a layout with tp*cp <= %d",
                mp, local_gpus, local_gpus);
        return 0;
    }
    int pp = work_local_pp(l, local_gpus);
    int dp = local_gpus / (mp * pp);
    if (dp >= l->dp) dp = l->dp;
    *whole = dp == l->dp && pp == l->pp;
    return dp;
}

/* ---- pipeline schedule -------------------------------------------------------------------- */

int work_pp_schedule(int p, int v, int m, int s, work_pp_op *out)
{
    return schedule_pipeline(p, v, m, s, out); /* the simulator's order (schedule.h) */
}

work_pp_link work_pp_links(int p, int v, int s, const work_pp_op *op)
{
    work_pp_link k = {-1, -1, op->backward ? 1 : 0};
    if (!op->backward) {
        /* activations arrive from the previous stage, or (next chunk) wrap from the last */
        if (s > 0) k.from_stage = s - 1;
        else if (op->chunk > 0) k.from_stage = p - 1;
        if (s < p - 1) k.to_stage = s + 1;
        else if (op->chunk < v - 1) k.to_stage = 0;
    } else {
        /* gradients arrive from the next stage, or (the chunk after) wrap from the first */
        if (s < p - 1) k.from_stage = s + 1;
        else if (op->chunk < v - 1) k.from_stage = 0;
        if (s > 0) k.to_stage = s - 1;
        else if (op->chunk > 0) k.to_stage = p - 1;
    }
    if (p == 1) k.from_stage = k.to_stage = -1;
    return k;
}

int work_pp_issue_order(int p, int v, int m, int nslots, work_pp_issue *out)
{
    int per = 2 * m * v, total = per * p;
    if (p < 1 || v < 1 || m < 1 || nslots < 1) return -1;
    work_pp_op *ops = malloc(sizeof *ops * (size_t)total);
    int *next = calloc((size_t)p, sizeof *next);
    /* per (receiver stage, direction): transfers issued, transfers consumed, and the FIFO of
     * their (microbatch, chunk) */
    int *made = calloc((size_t)p * 2, sizeof *made), *used = calloc((size_t)p * 2, sizeof *used);
    work_pp_op *fifo = malloc(sizeof *fifo * (size_t)total * 2);
    int n = 0, rc = 0;
    if (!ops || !next || !made || !used || !fifo) {
        rc = -1;
        goto out;
    }
    for (int s = 0; s < p; s++) work_pp_schedule(p, v, m, s, ops + (size_t)s * per);
    while (n < total) {
        bool progress = false;
        for (int s = 0; s < p; s++) {
            while (next[s] < per) {
                const work_pp_op *op = &ops[(size_t)s * per + next[s]];
                work_pp_link k = work_pp_links(p, v, s, op);
                if (k.from_stage >= 0) {
                    int q = s * 2 + k.dir;
                    if (used[q] >= made[q]) break; /* its input is not issued yet */
                }
                if (k.to_stage >= 0) {
                    int q = k.to_stage * 2 + k.dir;
                    if (made[q] - used[q] >= nslots) break; /* no free receive slot */
                }
                /* issue */
                if (k.from_stage >= 0) {
                    int q = s * 2 + k.dir;
                    /* FIFO check: the j-th transfer into (s, dir) is this op's input, the
                     * same micro-batch from chunk c (forward wrapped to stage 0: c-1; backward
                     * wrapped to the last stage: c+1) */
                    const work_pp_op *src = &fifo[(size_t)q * per + used[q]];
                    int want_chunk = op->chunk;
                    if (!op->backward && s == 0) want_chunk = op->chunk - 1;
                    if (op->backward && s == p - 1) want_chunk = op->chunk + 1;
                    if (src->microbatch != op->microbatch || src->chunk != want_chunk) {
                        rc = -2;
                        goto out;
                    }
                    used[q]++;
                }
                if (k.to_stage >= 0) {
                    int q = k.to_stage * 2 + k.dir;
                    if (made[q] >= per) {
                        rc = -2;
                        goto out;
                    }
                    fifo[(size_t)q * per + made[q]] = *op;
                    made[q]++;
                }
                out[n++] = (work_pp_issue){s, next[s]};
                next[s]++;
                progress = true;
            }
        }
        if (!progress) {
            rc = -1;
            goto out;
        }
    }
    rc = n;
out:
    free(ops);
    free(next);
    free(made);
    free(used);
    free(fifo);
    return rc;
}

int work_pp_slots(int p, int v, int m)
{
    int total = 2 * m * v * p;
    work_pp_issue *o = malloc(sizeof *o * (size_t)(total > 0 ? total : 1));
    if (!o) return m * v;
    int k = 1;
    for (; k < m * v; k++)
        if (work_pp_issue_order(p, v, m, k, o) == total) break;
    free(o);
    return k;
}

int work_chunk_first_layer(const work_plan *w, int s, int c)
{
    if (w->vpp > 1) return (c * w->pp + s) * w->chunk_layers;
    int first = 0;
    for (int i = 0; i < s; i++) first += w->stage_layers[i];
    return first;
}

int work_chunk_layer_count(const work_plan *w, int s, int c)
{
    (void)c;
    return w->vpp > 1 ? w->chunk_layers : w->stage_layers[s];
}

/* Adam's parameters on stage s: its shard (estimate.c optimizer_cost), everything under DDP. */
static double stage_optimizer_params(const model_spec *m, const layout *l, int s)
{
    double pd, pe;
    memory_stage_params(m, l, s, &pd, &pe);
    if (l->sharding == SHARDING_DDP) return pd + pe;
    double ne = layout_expert_dp(l);
    if (l->shard_size > 0 && l->shard_size < ne) ne = l->shard_size;
    return pd / layout_shard_group(l) + pe / ne;
}

/* A layer's host times (kind: moe) from the cost model's issue queue onto its lists. */
static void host_layer(work_plan *w, const system_spec *sys, const model_spec *m, const layout *l,
                       const recipe *r, const recipe_items *items, bool moe, host_dispatch_host *h)
{
    if (!host_dispatch_host_of(sys, m, l, r, true, moe, h)) return;
    host_onto(r, items, h, moe ? &w->moe_fwd : &w->layer_fwd, moe ? &w->moe_bwd : &w->layer_bwd);
    w->host_gather_fwd_s[moe] = h->gather_fwd_s;
    w->host_gather_bwd_s[moe] = h->gather_bwd_s;
    w->host_reduce_s[moe] = h->reduce_s;
    w->host_priced = true;
}

/* torchtitan's per-expert loop with a share of new row counts (--moe-new-counts): plan measure
 * issues the new counts (work_rows.h) and cuBLAS charges their heuristic, so the issue queue
 * leaves out the model's price for it (recipe_op.host_extra_*, expert_loop.h) before its host
 * times go onto the items: the paced host is the model's per-launch work, the new shapes' cost
 * the library's own. */
static void loop_rows_of(const system_spec *sys, const training_spec *t, recipe *r,
                         const recipe_items *items, work_plan *w)
{
    bool looped = false;
    for (int i = 0; i < items->n; i++) looped |= items->item[i].looped && items->item[i].batch > 1;
    if (!looped || !(t->moe_new_count_share > 0)) return;
    w->loop_new_share = t->moe_new_count_share < 1 ? t->moe_new_count_share : 1;
    w->gemm_new_shape_s = sys->host_gemm_new_shape_s;
    for (int i = 0; i < r->n_ops; i++) r->op[i].host_extra_fwd_s = r->op[i].host_extra_bwd_s = 0;
}

cm_status work_plan_build(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, work_plan *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (model_is_moe(m) && layout_etp(l) != l->tp)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan measure runs the experts with the attention's tensor parallelism: "
                       "expert tensor parallel %d differs from tp %d; drop --etp (or use plan "
                       "estimate)",
                       layout_etp(l), l->tp);
    /* issue 19: the step executor (bk_step.c) and its issue order run the looped placement of
     * 1F1B and interleaved 1F1B; GPipe's order and the V placement of ZBVZeroBubble and
     * DualPipeV (schedule.h) are the cost model's and the simulator's only */
    layout_pp_schedule sched = layout_pp_schedule_of(l);
    if (l->pp > 1 && sched != PP_SCHEDULE_1F1B && sched != PP_SCHEDULE_INTERLEAVED_1F1B)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan measure runs the 1F1B and Interleaved1F1B schedules; %s is "
                       "estimated and simulated only: measure with --pp-schedule 1F1B or "
                       "Interleaved1F1B, or use plan estimate --simulate",
                       layout_pp_schedule_name(sched));
    if (l->pp > WORK_MAX_STAGES)
        return cm_fail(err, errlen, CM_EINVAL,
                       "pipeline size %d: plan measure handles up to %d stages", l->pp,
                       WORK_MAX_STAGES);
    /* one dense layer's list runs every dense layer, so bf16 first/last layers of a
     * low-precision plan (priced in bf16 by the estimate) would run in FP8 */
    if (precision_is_low(l) && (l->bf16_layers_start > 0 || l->bf16_layers_end > 0))
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan measure runs every layer of a stage from one layer list, so it "
                       "cannot keep the first/last layers in bf16: measure without "
                       "--bf16-first-layers/--bf16-last-layers (or use plan estimate)");
    cm_status st = estimate_layout(m, sys, t, l, &w->est, err, errlen);
    if (st != CM_OK) return st;
    estimate_costs costs;
    st = estimate_stage_costs(m, sys, t, l, &costs, NULL, err, errlen);
    if (st != CM_OK) return st;

    w->layout = *l;
    w->training = *t;
    w->pp = l->pp;
    w->vpp = l->vpp;
    for (int s = 0; s < l->pp; s++) w->stage_layers[s] = layout_stage_layers(m, l, s);
    w->chunk_layers = l->vpp > 1 ? m->layers / (l->pp * l->vpp) : 0;
    /* The stage the per-component figures are for: the estimate's slowest. */
    w->stage = costs.worst_stage;
    w->layers = w->stage_layers[w->stage];
    w->moe = model_is_moe(m);
    w->first_moe_layer = w->moe ? m->dense_first : m->layers;
    for (int c = 0; c < (l->vpp > 1 ? l->vpp : 1); c++) {
        int f = work_chunk_first_layer(w, w->stage, c), n = work_chunk_layer_count(w, w->stage, c);
        for (int i = f; i < f + n; i++) w->moe_layers += i >= w->first_moe_layer;
    }
    w->microbatches = layout_microbatches(l, t);
    if (w->microbatches < 1) w->microbatches = 1;
    w->has_head = w->stage == l->pp - 1;

    double tokens = (double)l->mbs * t->seq_len / l->cp;
    w->tokens = tokens;

    w->group_size[GROUP_TP] = l->tp;
    w->group_size[GROUP_CP] = l->cp;
    w->group_size[GROUP_DP] = l->dp * l->cp;
    w->group_size[GROUP_EP] = l->ep;
    w->group_size[GROUP_EDP] = layout_expert_dp(l);
    w->group_place[GROUP_TP] = layout_tp_group(sys, l);
    w->group_place[GROUP_CP] = layout_cp_group(sys, l);
    w->group_place[GROUP_DP] =
        l->sharding == SHARDING_FSDP ? layout_shard_place(sys, l) : layout_dp_group(sys, l);
    w->group_place[GROUP_EP] = layout_ep_group(sys, l);
    w->group_place[GROUP_EDP] =
        layout_group_place(sys, layout_expert_dp(l), l->ep * layout_etp(l));

    /* One dense layer, one MoE layer and the head: the cost model's recipe (layer_recipe.h),
     * item by item. */
    recipe_items *items = malloc(sizeof *items);
    if (!items) return cm_fail(err, errlen, CM_ENOMEM, "out of memory building the work");
    recipe r;
    host_dispatch_host h;
    recipe_layer(m, sys, t, l, false, &r, items);
    st = lists_of(&r, items, &w->layer_fwd, &w->layer_bwd, err, errlen);
    if (st == CM_OK) host_layer(w, sys, m, l, &r, items, false, &h);
    if (st == CM_OK && w->moe) {
        recipe_layer(m, sys, t, l, true, &r, items);
        w->local_experts = r.local_experts;
        w->expert_rows = r.expert_rows;
        st = lists_of(&r, items, &w->moe_fwd, &w->moe_bwd, err, errlen);
        loop_rows_of(sys, t, &r, items, w);
        if (st == CM_OK) host_layer(w, sys, m, l, &r, items, true, &h);
    }
    /* Output layer and loss on the last stage; always built, since the whole pipeline runs
     * when it fits. */
    if (st == CM_OK) {
        recipe_head(m, sys, t, l, &r, items);
        st = lists_of(&r, items, &w->head_fwd, &w->head_bwd, err, errlen);
        if (st == CM_OK && host_dispatch_host_of(sys, m, l, &r, false, false, &h)) {
            host_onto(&r, items, &h, &w->head_fwd, &w->head_bwd);
            w->host_pre_fwd_s = h.serial_fwd_s;
            w->host_tail_bwd_s = h.serial_bwd_s;
            w->host_priced = true;
        }
    }
    free(items);
    if (st != CM_OK) return st;
    /* --fp8-recipe blockwise: the FP8 items run with block scales (DeepSeek-V3: 1x128 for
     * activations and gradients, 128x128 for weights, so wgrad is 1x128 by 1x128) */
    if (l->precision == PRECISION_FP8 && precision_fp8_recipe(l) == FP8_RECIPE_BLOCKWISE) {
        work_list *ls[6] = {&w->layer_fwd, &w->layer_bwd, &w->moe_fwd, &w->moe_bwd,
                            &w->head_fwd, &w->head_bwd};
        for (int q = 0; q < 6; q++)
            for (int i = 0; i < ls[q]->n; i++) ls[q]->item[i].fp8_block = ls[q]->item[i].fp8;
    }

    /* Pipeline transfers (estimate.c p2p_cost): each TP rank sends its 1/tp slice. */
    w->p2p_bytes = tokens * m->hidden * 2.0 / l->tp;
    w->p2p_pred_s = l->pp > 1 ? costs.p2p_s : 0;

    /* Data-parallel traffic per layer unit. */
    w->layer_params = memory_layer_params(m, l, 0);
    if (w->moe) {
        w->moe_layer_params = memory_layer_params(m, l, 1);
        memory_layer_params_split(m, l, 1, &w->moe_dense_params, &w->moe_expert_params);
    }
    for (int s = 0; s < l->pp; s++) {
        /* the root unit's parameters on this GPU: the embedding and the output layer are
         * sharded over tp (torchtitan's RowwiseParallel embedding and ColwiseParallel output,
         * Megatron's VocabParallelEmbedding and ColumnParallelLinear), as the estimate's FSDP2
         * copies of the root count them (fsdp_root_params / tp) */
        w->stage_root_params[s] = fsdp_root_params(m, l, s) / l->tp;
        w->stage_optimizer_params[s] = stage_optimizer_params(m, l, s);
        /* the optimizer's host terms as estimate.c's optimizer_cost takes them */
        if (!l->offload) {
            w->host_optimizer_s[s] = optimizer_host_s(sys, m, l, s, w->stage_optimizer_params[s]);
            w->host_optimizer_pre_s[s] = dtensor_step_host_optimizer_s(sys, m, l, s);
            if (w->host_optimizer_s[s] > 0 || w->host_optimizer_pre_s[s] > 0)
                w->host_priced = true;
        }
    }
    /* The torchtitan layouts' real step (bench/realruns/parallel_run.py, prun_step.py clip)
     * takes the clip coefficient from float(norm): the host waits there until the GPU has run
     * the whole backward (its reduce-scatters too, whose gradients the norm reads), then issues
     * the scaling and the optimizer, while the GPU idles. Every profiled torchtitan step shows
     * it (bench/results/prof26_2026-11-29/prof, each summary JSON: cudaStreamSynchronize in step.clip,
     * 5.5-120 ms). FSDP2's trainer (realrun.py) clips with clip_grad_norm_, which keeps the
     * coefficient on the GPU: no wait. */
    w->host_sync_clip = w->host_priced && l->framework == FRAMEWORK_TORCHTITAN;
    w->root_params = w->stage_root_params[w->stage];
    int dpg = l->sharding == SHARDING_FSDP ? layout_shard_group(l) : l->dp * l->cp;
    w->group_size[GROUP_DP] = dpg;
    double p = w->layer_params;
    if (l->sharding == SHARDING_FSDP) {
        w->fsdp = true;
        w->gather_op = COLL_ALL_GATHER;
        w->gather_bytes = 2.0 * p;
        w->gather_each_micro = true;
        w->gather_in_bwd = l->reshard_after_forward;
        w->reduce_op = COLL_REDUCE_SCATTER;
        w->reduce_fp32 = layout_is_pytorch(l) || !t->grad_reduce_bf16;
        w->reduce_bytes = (w->reduce_fp32 ? 4.0 : 2.0) * p;
        w->reduce_each_micro = true;
        /* torchtitan's pipeline keeps FSDP2 units gathered and gradients unreduced between
         * micro-batches (torch/distributed/pipelining/stage.py backward_maybe_with_nosync; the
         * cost model's fsdp_rounds, estimate.c): gathered in the first forward (every forward
         * when resharded), reduce-scattered after the last backward */
        if (l->framework == FRAMEWORK_TORCHTITAN && l->pp > 1) {
            w->gather_each_micro = l->reshard_after_forward;
            w->reduce_each_micro = false;
        }
    } else {
        w->reduce_fp32 = !t->grad_reduce_bf16;
        w->reduce_bytes = (w->reduce_fp32 ? 4.0 : 2.0) * p;
        w->reduce_each_micro = false;
        if (l->sharding == SHARDING_DDP) {
            w->reduce_op = COLL_ALL_REDUCE;
        } else {
            w->reduce_op = COLL_REDUCE_SCATTER;
            w->gather_op = COLL_ALL_GATHER;
            w->gather_bytes = 2.0 * p;
            w->gather_each_micro = false;
        }
    }
    /* torch FSDP2 all-gathers and reduce-scatters its units at world size 1 too: the
     * collectives are copies there, its copy-in, copy-out and chunk_cat kernels (the
     * estimate's fsdp2 copies) run as on more GPUs */
    w->dp_active = dpg > 1 || (w->moe && !w->fsdp && layout_expert_dp(l) > 1) ||
                   (w->fsdp && fsdp_copies_apply(l));
    /* one GPU: the recipe's items are FSDP2's copies (recipe_fsdp.c rb_fsdp_copies) */
    fsdp_copies one;
    fsdp_copies_of(l, 1, &one);
    w->fsdp2_copy_items = w->fsdp && fsdp_copies_apply(l) && one.one_gpu;

    /* Optimizer shard of the reported stage (estimate.c). */
    w->optimizer_params = w->stage_optimizer_params[w->stage];
    w->optimizer_bf16_copy = l->framework == FRAMEWORK_MEGATRON;
    if (layout_is_pytorch(l) && !l->offload)
        w->optimizer_extra_bytes_per_param =
            fmax(0, optimizer_impl_bytes_per_param(layout_optimizer_impl_of(l)) + 12.0 - 28.0);

    /* Raw predicted sums per step on the reported stage, by component. */
    double micro = w->microbatches;
    int nd = w->layers - w->moe_layers, nm = w->moe_layers;
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->moe_fwd,
                                 &w->moe_bwd,   &w->head_fwd,  &w->head_bwd};
    double reps[6] = {micro * nd, micro * nd, micro * nm, micro * nm,
                      w->has_head ? micro : 0, w->has_head ? micro : 0};
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            const work_item *it = &lists[j]->item[i];
            w->pred_component_s[it->component] += reps[j] * it->pred_s;
            /* FSDP2's one-GPU copies: compute-stream items */
            if (it->component == WC_FRAMEWORK) w->pred_copies_compute_s += reps[j] * it->pred_s;
        }
    if (w->dp_active) {
        layout_group g = w->group_place[GROUP_DP];
        double gathers = w->gather_each_micro ? micro * (w->gather_in_bwd ? 2 : 1) : 1;
        double reduces = w->reduce_each_micro ? micro : 1;
        double rb = w->reduce_fp32 ? 4.0 : 2.0;
        for (int kind = 0; kind < 2; kind++) {
            int n = kind ? nm : nd;
            if (!n) continue;
            /* FSDP units hold the whole layer; Megatron reduces the dense part over dp*cp and
             * the experts over the expert-dp group (estimate_dp_sync_s) */
            double pdn = kind ? (w->fsdp ? w->moe_layer_params : w->moe_dense_params) : p;
            double pex = kind && !w->fsdp ? w->moe_expert_params : 0;
            layout_group ge = w->group_place[GROUP_EDP];
            if (w->gather_bytes > 0 && dpg > 1)
                w->pred_component_s[WC_DP] +=
                    n * gathers * collective_time_s(sys, w->gather_op, 2.0 * pdn, g);
            if (dpg > 1)
                w->pred_component_s[WC_DP] +=
                    n * reduces * collective_time_s(sys, w->reduce_op, rb * pdn, g);
            if (pex > 0 && ge.size > 1) {
                if (w->gather_bytes > 0)
                    w->pred_component_s[WC_DP] +=
                        n * gathers * collective_time_s(sys, w->gather_op, 2.0 * pex, ge);
                w->pred_component_s[WC_DP] +=
                    n * reduces * collective_time_s(sys, w->reduce_op, rb * pex, ge);
            }
        }
    }
    /* FSDP2's copies (fsdp_copies.h; bk_measure runs them around the unit collectives, so they
     * are not work items): per layer unit and the stage's root unit, a copy-in and a copy-out
     * per all-gather, a reduce-scatter copy-in per reduction. The copy-outs and the
     * reduce-scatter copy-ins are compute-stream time in the estimate. */
    if (fsdp_copies_apply(l) && !w->fsdp2_copy_items) {
        int g = layout_shard_group(l);
        double gathers = micro * fsdp_gathers_per_microbatch(l);
        for (int kind = 0; kind < 3; kind++) {
            double units = kind == 0 ? nd : (kind == 1 ? nm : 1);
            double up = kind == 0 ? p : (kind == 1 ? w->moe_layer_params
                                                   : fsdp_root_params(m, l, w->stage) / l->tp);
            if (units <= 0 || up <= 0) continue;
            fsdp_copies fc;
            fsdp_copies_unit(up, g, &fc);
            double cmp = units * (gathers * fsdp_copy_out_s(sys, &fc) +
                                  micro * fsdp_rs_copy_in_s(sys, &fc));
            double ins = gathers;
            if (fsdp_pipelined(l) && !l->reshard_after_forward) {
                /* torch pipelining: gathered once, the gradients summed in fp32 over the
                 * micro-batches and reduced once (the recipe's fsdp.copy_out and fsdp.grad_acc,
                 * estimate.c root_copies_cost; bk_step.c runs them) */
                cmp = units * micro * (fsdp_pipelined_copy_out_s(sys, &fc, (int)micro) +
                                       fsdp_pipelined_grad_s(sys, &fc, (int)micro));
                ins = 1;
            }
            w->pred_copies_compute_s += cmp;
            w->pred_component_s[WC_FRAMEWORK] += cmp + units * ins * fsdp_copy_in_s(sys, &fc);
        }
    }
    w->host_pace = w->host_priced;
    w->pred_component_s[WC_PP] = w->est.time.pp_s;
    w->pred_component_s[WC_OPTIMIZER] = w->est.time.optimizer_s;
    return CM_OK;
}

static void print_list(FILE *f, const char *phase, const work_list *w, double reps)
{
    for (int i = 0; i < w->n; i++) {
        const work_item *it = &w->item[i];
        /* identical launches in a row (an eager kernel run twice per layer): one line */
        int same = 1;
        while (it->kind == WORK_STREAM && i + same < w->n &&
               w->item[i + same].kind == WORK_STREAM && w->item[i + same].bytes == it->bytes &&
               !strcmp(w->item[i + same].name, it->name))
            same++;
        i += same - 1;
        fprintf(f, "  %-5s %-22s ", phase, it->name);
        switch (it->kind) {
        case WORK_GEMM:
            fprintf(f, "%-6s m=%-6.0f n=%-6.0f k=%-6.0f batch=%-3d",
                    it->fp8_block ? "fp8blk" : it->fp8 ? "fp8" : it->looped ? "loop" : "gemm",
                    it->m, it->n, it->k, it->batch);
            break;
        case WORK_STREAM:
            fprintf(f, "stream %-13s %-27.3g", ew_pattern_name(it->access.pattern), it->bytes);
            break;
        case WORK_COLL:
            fprintf(f, "%-14s %-9s %-12.4g %-9s", collective_get(it->op)->name,
                    work_group_name(it->group), it->bytes, "");
            break;
        }
        fprintf(f, "  pred %8.3f ms  x%.0f%s\n", it->pred_s * 1e3, reps * same,
                it->host_sync ? "  then the host waits for the GPU (paced)" : "");
    }
}

void work_plan_print(const work_plan *w, void *file)
{
    FILE *f = file;
    const layout *l = &w->layout;
    int nd = w->layers - w->moe_layers;
    fprintf(f, "work of one step on pipeline stage %d: %d layers x %d micro-batches, %.0f tokens "
               "per GPU per micro-batch\n",
            w->stage, w->layers, w->microbatches, w->tokens);
    if (w->moe) fprintf(f, "MoE layers on that stage: %d\n", w->moe_layers);
    fprintf(f, "groups: tp %d, cp %d, dp %d (%s)", l->tp, l->cp, w->group_size[GROUP_DP],
            layout_sharding_name(l->sharding));
    if (w->moe) fprintf(f, ", ep %d, expert dp %d", l->ep, w->group_size[GROUP_EDP]);
    fprintf(f, "\n");
    if (w->pp > 1) {
        fprintf(f, "pipeline: %d stages (layers", w->pp);
        for (int s = 0; s < w->pp; s++) fprintf(f, "%s%d", s ? " " : " ", w->stage_layers[s]);
        fprintf(f, "), %s, send/recv of %.4g bytes per micro-batch and direction, pred %.3f ms; "
                   "predicted bubble %.4f s\n",
                w->vpp > 1 ? "interleaved 1F1B" : "1F1B", w->p2p_bytes, w->p2p_pred_s * 1e3,
                w->est.time.bubble_s);
    }
    if (nd) {
        print_list(f, "fwd", &w->layer_fwd, (double)nd * w->microbatches);
        print_list(f, "bwd", &w->layer_bwd, (double)nd * w->microbatches);
    }
    if (w->moe_layers) {
        fprintf(f, "  MoE layers: %d local experts x %.0f rows each\n", w->local_experts,
                w->expert_rows);
        if (w->loop_new_share > 0)
            fprintf(f, "  expert loop: %.0f%% of each pass's row counts new to the process "
                       "(pairs %.0f +- d, cuBLAS's heuristic paid, not paced)\n",
                    100 * w->loop_new_share, w->expert_rows);
        print_list(f, "fwd", &w->moe_fwd, (double)w->moe_layers * w->microbatches);
        print_list(f, "bwd", &w->moe_bwd, (double)w->moe_layers * w->microbatches);
    }
    if (w->has_head) {
        print_list(f, "fwd", &w->head_fwd, w->microbatches);
        print_list(f, "bwd", &w->head_bwd, w->microbatches);
    }
    if (w->dp_active) {
        if (w->gather_bytes > 0)
            fprintf(f, "  unit  %-22s %-14s dp        %-12.4g per layer%s%s\n", "dp.gather",
                    collective_get(w->gather_op)->name, w->gather_bytes,
                    w->gather_each_micro ? ", every micro-batch" : ", once per step",
                    w->gather_in_bwd ? ", again in backward" : "");
        fprintf(f, "  unit  %-22s %-14s dp        %-12.4g per layer%s (%s)\n", "dp.reduce",
                collective_get(w->reduce_op)->name, w->reduce_bytes,
                w->reduce_each_micro ? ", every micro-batch" : ", last micro-batch",
                w->reduce_fp32 ? "fp32" : "bf16");
    }
    if (w->fsdp2_copy_items)
        fprintf(f, "  unit  %-22s one GPU: no collective; FSDP2's unshard (cast and copy), "
                   "chunk_cat and the one-rank reduce-scatter's copy are the fsdp.* items above "
                   "(fsdp_copies.h)\n",
                "fsdp2.copies");
    else if (fsdp_copies_apply(l)) {
        fsdp_copies fc;
        fsdp_copies_unit(w->layer_params, layout_shard_group(l), &fc);
        fprintf(f, "  unit  %-22s copy-in %.4g + %.4g bytes (%d launches each), copy-out %.4g, "
                   "reduce-scatter copy-in %.4g bytes per layer (fsdp_copies.h)\n",
                "fsdp2.copies", fc.cast_in.bytes * fc.cast_in.count,
                fc.slot_in.bytes * fc.slot_in.count, fc.cast_in.count, fc.copy_out.bytes,
                fc.rs_cast.bytes);
        if (fsdp_pipelined(l) && !l->reshard_after_forward)
            fprintf(f, "  unit  %-22s fp32 sum of the unsharded gradient: %.4g bytes in the first "
                       "micro-batch, %.4g in each later one; the reduce-scatter copy-in reads the "
                       "fp32 sum (%.4g bytes) per layer\n",
                    "fsdp2.grad_acc", fc.acc_cast.bytes, fc.acc_add.bytes, fc.rs_copy.bytes);
    }
    fprintf(f, "  step  %-22s adam over %.4g parameters%s", "optimizer", w->optimizer_params,
            w->optimizer_bf16_copy ? " (+ bf16 model copy)" : "");
    if (w->optimizer_extra_bytes_per_param > 0)
        fprintf(f, " + %.0f bytes per parameter (torch's clip and AdamW)",
                w->optimizer_extra_bytes_per_param);
    fputc('\n', f);
    if (w->host_priced) {
        double hf, hb;
        work_host_layer_s(w, false, &hf, &hb);
        fprintf(f, "host issue time (plan measure --host-pace): dense layer fwd %.3f ms, bwd %.3f "
                   "ms per micro-batch",
                hf * 1e3, hb * 1e3);
        if (w->moe_layers) {
            work_host_layer_s(w, true, &hf, &hb);
            fprintf(f, "; MoE layer fwd %.3f ms, bwd %.3f ms", hf * 1e3, hb * 1e3);
        }
        fprintf(f, "; head fwd %.3f ms, bwd %.3f ms; optimizer %.3f ms (floor)%s\n",
                (work_list_host_s(&w->head_fwd) + w->host_pre_fwd_s) * 1e3,
                (work_list_host_s(&w->head_bwd) + w->host_tail_bwd_s) * 1e3,
                w->host_optimizer_s[w->stage] * 1e3,
                w->host_sync_clip ? ", after the host waits for the GPU (the clip's float(norm))"
                                  : "");
    }
    fprintf(f, "predicted per step (raw item sums): ");
    for (int c = 0; c < WC_COUNT; c++)
        fprintf(f, "%s %.4f s%s", work_component_name(c), w->pred_component_s[c],
                c + 1 < WC_COUNT ? ", " : "\n");
}
