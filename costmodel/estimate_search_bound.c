/*
 * estimate_search_bound.c — the lower bounds on a layout's step time that let a search skip
 * timing it (estimate_search.c's pruning), kept apart from the evaluation they gate: which
 * layouts may be pruned, the micro-batch factor of the bound, Megatron-FSDP's bound from its
 * DDP form, and (speed15) the bound that settles a full-recompute layout's layer-count tries
 * before any of them is made (estimate_search_recompute_tries_pruned); and (speed24) where a
 * layout's memory may stop at its first candidate stage that does not fit.
 */
#include "estimate_cache_internal.h"

#include "offload.h"

#include <string.h>

/* May a lower bound skip l's timing? Not where the step has calibrated terms (a fitted scale
 * or per-layer overhead could shrink it), nor where feasibility needs the timed figures (CPU
 * offload's host memory, FSDP2's or Megatron's; a multi-node plan without a network). */
bool estimate_search_prunable(const system_spec *sys, const layout *l)
{
    if (sys->step.active || l->offload || l->optimizer_offload_pct > 0 || l->activation_offload)
        return false;
    if (layout_gpus(l) > sys->gpus_per_node && system_inter_bandwidth_per_gpu(sys) <= 0)
        return false;
    return true;
}

double estimate_search_bound_factor(const layout *l, int microbatches)
{
    /* the V schedules' bubble can be below (pp-1)/vpp of a stage (pp_schedule.h: ZB-H2 and
     * DualPipeV shrink it with the weight-gradient work), so their bound counts none */
    layout_pp_schedule sch = layout_pp_schedule_of(l);
    bool v_shape = sch == PP_SCHEDULE_ZBV || sch == PP_SCHEDULE_DUALPIPEV;
    double bubble = l->pp > 1 && !v_shape ? (double)(l->pp - 1) / l->vpp : 0;
    /* torchtitan's pipelines that keep their FSDP units gathered charge the worst stage's
     * exposed FSDP time once a step, not once a micro-batch (estimate_time_assemble's
     * fsdp_rounds): their step is at least m x (that stage's time less its FSDP time) + its
     * FSDP time + the bubble >= its time + the bubble >= the first stage's time + the bubble,
     * and the worst stage is not known from the first alone, so one micro-batch is all the
     * bound can count */
    if (l->framework == FRAMEWORK_TORCHTITAN && l->pp > 1 && !l->reshard_after_forward)
        return 1 + bubble;
    return microbatches + bubble;
}

/*
 * A lower bound on a Megatron-FSDP layout's first-stage decoder layers
 * (estimate_stage_layers_total with its own layer costs) from its DDP form's layer costs, so a
 * layout the bound prunes never prices its FSDP recipe (issue 21: those keys hold the shard
 * group, dp, so each is priced for one pipeline size; the DDP form's key holds no dp or pp and
 * is shared by all of them). Why it is a lower bound: the FSDP recipe is the DDP form's ops and
 * fields with the unit's gather and reduce-scatter appended (layer_recipe.c fsdp_from, for
 * Megatron nothing else: fsdp_copies_apply is FSDP2's and torchtitan's, l->offload FSDP2's),
 * and recipe_price puts those two only into gather_s and reduce_s (the EP pairing skips them),
 * so both recipes have the same GPU sums (gpu_fwd_s, gpu_bwd_s, recompute_s) and the same
 * tp_s, cp_s and ep_s. The FSDP layer's fwd_s and bwd_s are those sums raised by the host's
 * floor and serial time (recipe_price_floor: >= 0), and its stage adds the exposed FSDP time
 * (stage_layers_cost: fmax(0, .) terms and overlap_contended's contention, >= 0 with slowdowns
 * >= 1), where the DDP form's gather_s = reduce_s = 0 add nothing. stage_layers_cost is a sum
 * of those terms with non-negative counts, so with the DDP form's GPU sums as fwd_s and bwd_s
 * it is at most the FSDP layer's figure, but for two of its steps this leaves out: the host
 * lead it subtracts (only where pp, tp, cp and ep are all 1) and activation offload's exposed
 * copies (which shrink as fwd_s grows); those layouts get no bound here (-1), nor do layouts
 * with bf16 first/last layers (uncached). The caller takes it with a relative margin (1e-9)
 * far above the rounding of these sums (a few dozen terms: ~1e-14), so the inequality of the
 * exact sums holds for the computed ones.
 */
/* The bound of a layout equal byte for byte to one of the last few, less --fp8-param-gather, is
 * that one's (speed22: a low-precision Megatron-FSDP layout is listed without and with the gather,
 * search.c emit, and the two differ in that field alone). Why the gather changes no figure of the
 * bound: the DDP form's layer costs are looked up without it (estimate_cache_key and
 * estimate_search_layer_costs clear it for Megatron without FSDP: its recipes read it only in the
 * FSDP unit's all-gather, layer_recipe.c rb_fsdp_unit), and estimate_stage_layers_total (estimate.c
 * stage_layers_cost) reads of l the stage split, the precision and its bf16 layers, the recompute
 * fields, activation offload, layout_zero2 (false: it needs the distributed optimizer,
 * shard_grads.c), layout_grads_sharded, reshard_after_forward, vpp, and pp/tp/compile/cp/ep for the
 * host lead: none of these reads fp8_param_gather (precision_param_gather's readers are memory, the
 * optimizer step, the DP sync, the FSDP unit and the rules). The host lead's branch prices the head
 * with l (head_host_lead_s), so a layout that can take it (pp, cp, ep 1 and compile) is not
 * remembered; nor is the training spec read, but by activation offload's waits (no bound, above)
 * and that head. The key compares bytes (padding included): unequal padding is only a miss. */
static bool fsdp_lb_memo_key(const estimate_cache *c, const layout *l, layout *key)
{
    if (l->compile && l->pp == 1 && l->cp == 1 && l->ep == 1) return false;
    /* l's bytes with --fp8-param-gather's cleared, by one masking (speed27: the copy and the
     * field's store stalled the compare's word loads) */
    estimate_key_masked_copy(key, l, c->fsdp_lb_mask);
    return true;
}

double estimate_search_fsdp_layers_lb(estimate_cache *c, const model_spec *m,
                                      const system_spec *sys, const training_spec *t,
                                      const layout *l, bool held)
{
    if (l->framework != FRAMEWORK_MEGATRON || l->sharding != SHARDING_FSDP || estimate_search_uncached(l))
        return -1;
    if ((l->pp == 1 && l->tp == 1 && l->cp == 1 && l->ep == 1) ||
        offload_activation_layers(m, l) > 0)
        return -1;
    layout key;
    bool memo = fsdp_lb_memo_key(c, l, &key);
    if (memo)
        for (int i = 0; i < FSDP_LB_MEMO; i++)
            if (c->fsdp_lb[i].used && c->fsdp_lb[i].m == m && c->fsdp_lb[i].sys == sys &&
                estimate_same_layout(&c->fsdp_lb[i].key, &key))
                return c->fsdp_lb[i].lb_s;
    layout ld = *l;
    ld.sharding = SHARDING_DDP;
    layer_kinds own, k; /* the DDP form's (its dense and MoE kinds; bf16 copies set below) */
    const layer_kinds *kp = held ? estimate_search_layer_costs_held(c, m, &ld)
                                 : estimate_search_layer_costs(c, m, sys, t, &ld, &own);
    if (!kp) return -2;
    /* not uncached (above): the cache's; the bf16 kinds are set from these below, so only
     * these two are copied (speed27: the whole 704 bytes' rep movs was a quarter of this) */
    k.dense = kp->dense;
    k.moe = kp->moe;
    layer_time *x[2] = {&k.dense, &k.moe};
    for (int i = 0; i < 2; i++) {
        x[i]->fwd_s = x[i]->gpu_fwd_s;
        x[i]->bwd_s = x[i]->gpu_bwd_s;
        x[i]->gather_s = x[i]->reduce_s = 0;
        x[i]->fsdp_contention_fwd_s = x[i]->fsdp_contention_bwd_s = 0;
    }
    k.dense_bf16 = k.dense;
    k.moe_bf16 = k.moe;
    double lb_s = estimate_stage_layers_total(m, sys, t, l, 0, &k);
    if (memo) {
        int i = c->fsdp_lb_next;
        c->fsdp_lb_next = (i + 1) % FSDP_LB_MEMO;
        c->fsdp_lb[i].used = true;
        c->fsdp_lb[i].m = m;
        c->fsdp_lb[i].sys = sys;
        memcpy(&c->fsdp_lb[i].key, &key, sizeof key); /* the padding too */
        c->fsdp_lb[i].lb_s = lb_s;
    }
    return lb_s;
}

/* Whether every try of a layer count ls[0].recompute_layers or more of ls (the overlap variants of
 * one Megatron full-recompute layout, the count set on each) is bounded above prune_above_s: then
 * no such try that fits can change a search's result (it is pruned, or timed slower than the
 * threshold), so the search need not make them (planner/search.c memory_knobs; speed15: 97% of
 * those tries were pruned after their memory and bound had been made, 12% of DeepSeek-V3's search
 * at 16384 GPUs). Why the bound of the count k = ls[0].recompute_layers holds for every larger
 * count: the count enters a step's lower bound (estimate_search.c: f x the first stage's decoder
 * layers, estimate_stage_layers_total, or Megatron-FSDP's from its DDP form, each <= the bound the
 * try itself would be judged by) only through stage_layers_cost's rf (the recomputed share, k / n,
 * 1 from n on), which is non-decreasing in k: per layer kind, the backward c x (bwd_s + rf x
 * recompute_s) with recompute_s >= 0, and under FSDP the exposed c x fmax(0, gather + reduce -
 * (bwd_s + rf x recompute_s)) beside it, the two summing to c x fmax(bwd_s + rf x recompute_s,
 * gather + reduce), non-decreasing; no other term, nor f, reads the count (the layer costs are
 * keyed without it: estimate_cache_key). The bound is taken with a relative margin (1e-8) far above
 * the rounding of these sums (~1e-14), so the inequality of the exact sums holds for the computed
 * ones. False where a variant has no such bound (not prunable, bf16 first/last layers,
 * Megatron-FSDP without its DDP-form bound), or with no threshold. */
/* Whether every variant of ls is bounded above prune_above_s by f x its first stage's decoder
 * layers (estimate_stage_layers_total, or Megatron-FSDP's from its DDP form), with the relative
 * margin the callers document. held (speed23's bound before the memory): only from layer costs
 * the cache holds priced (false where it holds none), and a Megatron-FSDP layout whose DDP-form
 * bound does not settle it tries its own costs (the bound search_checked itself starts from);
 * otherwise (speed15's tries, as before) costs are priced where not held, and a Megatron-FSDP
 * layout without its DDP-form bound has none. */
static bool layers_bounded(const model_spec *m, const system_spec *sys, const training_spec *t,
                           const layout *ls, int n, estimate_cache *c, double prune_above_s,
                           double margin, bool held)
{
    bool done[2] = {false, false}; /* the bound depends on tp_comm_overlap alone of the knobs */
    for (int i = 0; i < n; i++) {
        const layout *l = &ls[i];
        if (done[l->tp_comm_overlap]) continue;
        done[l->tp_comm_overlap] = true;
        if (estimate_search_uncached(l) || !estimate_search_prunable(sys, l) ||
            offload_activation_layers(m, l) > 0)
            return false;
        double f = estimate_search_bound_factor(l, layout_microbatches(l, t));
        double layers_s = -1;
        if (l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_FSDP) {
            layers_s = estimate_search_fsdp_layers_lb(c, m, sys, t, l, held);
            if (layers_s == -1 && !held) return false;
            if (held && !(f * layers_s * (1 - margin) > prune_above_s)) layers_s = -1;
        }
        if (layers_s < 0) {
            layer_kinds own;
            const layer_kinds *k = held ? estimate_search_layer_costs_held(c, m, l)
                                        : estimate_search_layer_costs(c, m, sys, t, l, &own);
            if (!k) return false;
            layers_s = estimate_stage_layers_total(m, sys, t, l, 0, k);
        }
        if (!(f * layers_s * (1 - margin) > prune_above_s)) return false;
    }
    return true;
}

bool estimate_search_recompute_tries_pruned(const model_spec *m, const system_spec *sys,
                                            const training_spec *t, const layout *ls, int n,
                                            estimate_cache *c, double prune_above_s)
{
    if (!c || prune_above_s <= 0) return false;
    for (int i = 0; i < n; i++)
        if (ls[i].framework != FRAMEWORK_MEGATRON || ls[i].recompute != RECOMPUTE_FULL ||
            ls[i].recompute_layers < 1)
            return false;
    return layers_bounded(m, sys, t, ls, n, c, prune_above_s, 1e-8, false);
}


/*
 * speed23: the bound before the memory. A search that prunes (planner/search.c) made every
 * listed layout's memory breakdown first (memory.c, ~29% of DeepSeek-V3's search at 16384
 * GPUs) and then its step's lower bound; most layouts that fit are then pruned by that bound
 * (1.27 M of 1.33 M there). Here the bound comes first: where f x the first stage's decoder
 * layers of every variant (layers_bounded; the very bound search_checked starts from, or
 * Megatron-FSDP's from its DDP form, <= it: estimate_search_fsdp_layers_lb's proof) exceeds
 * the threshold with the 1e-8 margin, no variant that fits could be timed (search_checked
 * prunes it: its lb is >= this one, and above the threshold), so the layout is answered
 * ESTIMATE_BOUNDED without its memory: whether it fits is not known. Only from layer costs the
 * cache already holds priced: a layout whose costs are not there goes memory first as before
 * (pricing them first, where the layout may not even fit, cost more than the memory saved:
 * DeepSeek-V3 at 16384 GPUs, 14.94 G -> 15.71 G instructions, 96 k -> 158 k recipes built).
 *
 * What the planner would still have done with such a layout, and why none of it can change a
 * plan it shows:
 *  - a full-recompute Megatron layout that fits tries fewer recomputed layers (memory_knobs),
 *    each faster than it: the bound is taken at recompute_layers 1, the fastest of them and
 *    <= the layout's own (the monotonicity proof above estimate_search_recompute_tries_pruned),
 *    so every try would be bounded out too;
 *  - a distributed-optimizer layout that does not fit tries optimizer CPU offload: the try's
 *    layer costs are the layout's (estimate_cache_key clears optimizer_offload_pct), no term of the
 *    bound reads the fraction (stage_layers_cost, the bound factor), and its step is >= the
 *    bound as every step is (estimate_time_assemble: m x the worst stage plus non-negative
 *    terms; the offload only adds the optimizer's host time), so it could only be timed slower
 *    than the threshold, or found not to fit;
 *  - activation offload (Megatron, pp 1, no recompute) changes the layer costs' key and adds
 *    waits to the stage: those layouts are not bounded here;
 *  - a layout that does not fit can be its framework's "closest to fitting", shown only where
 *    the framework has no feasible plan (output.c, report_sec_summary.c), while a threshold
 *    exists only once its framework and sharding have one (search.c prune_threshold_s).
 * So the plans, their ranking, the best per framework and sharding and every figure shown of
 * them stay the same; the counts of feasible layouts and of each outcome move (the caller
 * reports how many were bounded before their memory).
 */
bool estimate_search_bounded_first(const model_spec *m, const system_spec *sys,
                                   const training_spec *t, const layout *ls, int n,
                                   estimate_cache *c, double prune_above_s)
{
    if (!c || !c->bound_first || prune_above_s <= ESTIMATE_PRUNE_ALL_S || n > 6) return false;
    const layout *l = &ls[0];
    if (l->framework == FRAMEWORK_MEGATRON && l->pp == 1 && l->recompute == RECOMPUTE_NONE)
        return false; /* activation offload may be tried (above) */
    /* the variants with full recompute of every layer taken at one layer: copies where one
     * is (speed24: copied only then; the copy was 1% of DeepSeek-V3's search at 16384 GPUs) */
    const layout *v = ls;
    layout lb[6];
    for (int i = 0; i < n; i++) {
        if (ls[i].framework != FRAMEWORK_MEGATRON || ls[i].recompute != RECOMPUTE_FULL ||
            ls[i].recompute_layers != 0)
            continue;
        if (v == ls) memcpy(lb, ls, (size_t)n * sizeof *ls);
        v = lb;
        lb[i].recompute_layers = 1;
    }
    return layers_bounded(m, sys, t, v, n, c, prune_above_s, 1e-8, true);
}

double estimate_search_first_bound_s(const model_spec *m, const system_spec *sys,
                                     const training_spec *t, const layout *l, estimate_cache *c)
{
    if (!c || estimate_search_uncached(l) || !estimate_search_prunable(sys, l) ||
        offload_activation_layers(m, l) > 0 ||
        (l->framework == FRAMEWORK_MEGATRON && l->pp == 1 && l->recompute == RECOMPUTE_NONE))
        return -1;
    layout b = *l; /* as estimate_search_bounded_first takes it */
    if (b.framework == FRAMEWORK_MEGATRON && b.recompute == RECOMPUTE_FULL &&
        b.recompute_layers == 0)
        b.recompute_layers = 1;
    double f = estimate_search_bound_factor(&b, layout_microbatches(&b, t));
    layer_kinds own;
    double lb = f * estimate_stage_layers_total(
                        m, sys, t, &b, 0, estimate_search_layer_costs(c, m, sys, t, &b, &own));
    if (b.framework == FRAMEWORK_MEGATRON && b.sharding == SHARDING_FSDP) {
        double ddp = estimate_search_fsdp_layers_lb(c, m, sys, t, &b, false);
        if (ddp >= 0 && f * ddp > lb) lb = f * ddp;
    }
    return lb;
}

/*
 * speed24: may l's memory breakdown stop at a candidate stage that exceeds the device by more
 * than the cache's unfit_stop_over_bytes (memory_memo.h verdict_only: the layout's need is at
 * least each candidate stage's, a lower bound)? Only where a layout that does not fit is read
 * for nothing but its verdict and whether it is over by more than that: a search without a
 * visitor (skip_pruned_memory) reads such a layout only as its framework's "closest to
 * fitting" (planner/search.c fold_closest: the least excess), and gives as unfit_stop_over_bytes
 * the excess of the closest it holds (infinite while it holds none), so a layout stopped is
 * over by more than the closest and could not have replaced it; a prunable layout (no offload
 * try), and not Megatron's distributed optimizer, whose optimizer-offload tries read the
 * excess and the optimizer bytes (planner/search.c memory_knobs; activation offload is tried
 * at pp 1: one stage, nothing to stop).
 */
bool estimate_search_memory_verdict_only(const estimate_cache *c, const system_spec *sys,
                                         const layout *l)
{
    return !c->unfit_memory_whole && c->skip_pruned_memory && estimate_search_prunable(sys, l) &&
           !(l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_DISTOPT);
}
