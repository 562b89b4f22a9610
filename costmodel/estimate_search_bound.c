/*
 * estimate_search_bound.c — the lower bounds on a layout's step time that let a search skip
 * timing it (estimate_search.c's pruning), kept apart from the evaluation they gate: which
 * layouts may be pruned, the micro-batch factor of the bound, Megatron-FSDP's bound from its
 * DDP form, and (speed15) the bound that settles a full-recompute layout's layer-count tries
 * before any of them is made (estimate_search_recompute_tries_pruned).
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
/*
 * The bound of a layout equal byte for byte to one of the last few, less --fp8-param-gather,
 * is that one's (speed22: a low-precision Megatron-FSDP layout is listed without and with the
 * gather, search.c emit, and the two differ in that field alone). Why the gather changes no
 * figure of the bound: the DDP form's layer costs are looked up without it (cache_key and
 * estimate_search_layer_costs clear it for Megatron without FSDP: its recipes read it only in
 * the FSDP unit's all-gather, layer_recipe.c rb_fsdp_unit), and estimate_stage_layers_total
 * (estimate.c stage_layers_cost) reads of l the stage split, the precision and its bf16
 * layers, the recompute fields, activation offload, layout_zero2 (false: it needs the
 * distributed optimizer, shard_grads.c), layout_grads_sharded, reshard_after_forward, vpp,
 * and pp/tp/compile/cp/ep for the host lead: none of these reads fp8_param_gather
 * (precision_param_gather's readers are memory, the optimizer step, the DP sync, the FSDP unit
 * and the rules). The host lead's branch prices the head with l (head_host_lead_s), so a
 * layout that can take it (pp, cp, ep 1 and compile) is not remembered; nor is the training
 * spec read, but by activation offload's waits (no bound, above) and that head. The key
 * compares bytes (padding included): unequal padding is only a miss.
 */
static bool fsdp_lb_memo_key(const layout *l, layout *key)
{
    if (l->compile && l->pp == 1 && l->cp == 1 && l->ep == 1) return false;
    memcpy(key, l, sizeof *key);
    key->fp8_param_gather = false;
    return true;
}

double estimate_search_fsdp_layers_lb(estimate_cache *c, const model_spec *m,
                                      const system_spec *sys, const training_spec *t,
                                      const layout *l)
{
    if (l->framework != FRAMEWORK_MEGATRON || l->sharding != SHARDING_FSDP || estimate_search_uncached(l))
        return -1;
    if ((l->pp == 1 && l->tp == 1 && l->cp == 1 && l->ep == 1) ||
        offload_activation_layers(m, l) > 0)
        return -1;
    layout key;
    bool memo = fsdp_lb_memo_key(l, &key);
    if (memo)
        for (int i = 0; i < FSDP_LB_MEMO; i++)
            if (c->fsdp_lb[i].used && c->fsdp_lb[i].m == m && c->fsdp_lb[i].sys == sys &&
                !memcmp(&c->fsdp_lb[i].key, &key, sizeof key))
                return c->fsdp_lb[i].lb_s;
    layout ld = *l;
    ld.sharding = SHARDING_DDP;
    layer_kinds own, k; /* the DDP form's (its dense and MoE kinds; bf16 copies set below) */
    k = *estimate_search_layer_costs(c, m, sys, t, &ld, &own); /* not uncached (above): the cache's */
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

/*
 * Whether every try of a layer count ls[0].recompute_layers or more of ls (the overlap
 * variants of one Megatron full-recompute layout, the count set on each) is bounded above
 * prune_above_s: then no such try that fits can change a search's result (it is pruned, or
 * timed slower than the threshold), so the search need not make them (planner/search.c
 * memory_knobs; speed15: 97% of those tries were pruned after their memory and bound had been
 * made, 12% of DeepSeek-V3's search at 16384 GPUs).
 *
 * Why the bound of the count k = ls[0].recompute_layers holds for every larger count: the
 * count enters a step's lower bound (estimate_search.c: f x the first stage's decoder layers,
 * estimate_stage_layers_total, or Megatron-FSDP's from its DDP form, each <= the bound the
 * try itself would be judged by) only through stage_layers_cost's rf (the recomputed share,
 * k / n, 1 from n on), which is non-decreasing in k: per layer kind, the backward
 * c x (bwd_s + rf x recompute_s) with recompute_s >= 0, and under FSDP the exposed
 * c x fmax(0, gather + reduce - (bwd_s + rf x recompute_s)) beside it, the two summing to
 * c x fmax(bwd_s + rf x recompute_s, gather + reduce), non-decreasing; no other term, nor f,
 * reads the count (the layer costs are keyed without it: cache_key). The bound is taken with
 * a relative margin (1e-8) far above the rounding of these sums (~1e-14), so the inequality of
 * the exact sums holds for the computed ones. False where a variant has no such bound (not
 * prunable, bf16 first/last layers, Megatron-FSDP without its DDP-form bound), or with no
 * threshold.
 */
bool estimate_search_recompute_tries_pruned(const model_spec *m, const system_spec *sys,
                                            const training_spec *t, const layout *ls, int n,
                                            estimate_cache *c, double prune_above_s)
{
    if (!c || prune_above_s <= 0) return false;
    bool done[2] = {false, false}; /* the bound depends on tp_comm_overlap alone of the knobs */
    for (int i = 0; i < n; i++) {
        const layout *l = &ls[i];
        if (done[l->tp_comm_overlap]) continue;
        done[l->tp_comm_overlap] = true;
        if (l->framework != FRAMEWORK_MEGATRON || l->recompute != RECOMPUTE_FULL ||
            l->recompute_layers < 1 || estimate_search_uncached(l) ||
            !estimate_search_prunable(sys, l) || offload_activation_layers(m, l) > 0)
            return false;
        double layers_s;
        if (l->sharding == SHARDING_FSDP) {
            layers_s = estimate_search_fsdp_layers_lb(c, m, sys, t, l);
            if (layers_s < 0) return false;
        } else {
            layer_kinds own;
            layers_s = estimate_stage_layers_total(
                m, sys, t, l, 0, estimate_search_layer_costs(c, m, sys, t, l, &own));
        }
        double f = estimate_search_bound_factor(l, layout_microbatches(l, t));
        if (!(f * layers_s * (1 - 1e-8) > prune_above_s)) return false;
    }
    return true;
}
