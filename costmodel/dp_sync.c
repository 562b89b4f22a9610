/*
 * dp_sync.c — the data-parallel gradient synchronisation of a step's parameters (DDP's
 * all-reduce; the distributed optimizer's reduce-scatter and parameter all-gather), priced on the
 * layout's data-parallel and expert-data-parallel groups. Declared in estimate_costs.h; used by
 * the closed form (estimate.c) and the step simulator (sim.c, per gradient bucket).
 */
#include "estimate_costs.h"

#include "collective.h"
#include "precision.h"
#include "shard_grads.h"

/* Data-parallel synchronisation of dense_params (over dp*cp) and expert_params (over the expert
 * data-parallel group) gradients: DDP all-reduces them; the distributed optimizer reduce-
 * scatters them and all-gathers the updated parameters (*gather_s): bf16, but the lp_* Linear
 * weights among them in their low-precision format with --fp8-param-gather (precision.h:
 * Megatron's uint8 parameter buffer). FSDP's traffic is per layer (layer_cost), so it has none
 * here. */
double estimate_dp_sync_s(const system_spec *sys, const training_spec *t, const layout *l,
                          double dense_params, double expert_params, double lp_dense_params,
                          double lp_expert_params, double *gather_s)
{
    double pd = dense_params, pe = expert_params;
    *gather_s = 0;
    if (l->sharding == SHARDING_FSDP) return 0;
    double gbytes = t->grad_reduce_bf16 ? 2.0 : 4.0;
    layout_group gdp = layout_dp_group(sys, l);
    layout_group gedp = layout_expert_dp_group(sys, l);
    double grad;
    if (l->sharding == SHARDING_DDP) {
        grad = collective_time_s(sys, COLL_ALL_REDUCE, gbytes * pd, gdp) +
               collective_time_s(sys, COLL_ALL_REDUCE, gbytes * pe, gedp);
    } else {
        grad = collective_time_s(sys, COLL_REDUCE_SCATTER, gbytes * pd, gdp) +
               collective_time_s(sys, COLL_REDUCE_SCATTER, gbytes * pe, gedp);
        double pb = precision_param_gather_bytes(l);
        double bd = 2.0 * (pd - lp_dense_params) + pb * lp_dense_params;
        double be = 2.0 * (pe - lp_expert_params) + pb * lp_expert_params;
        *gather_s = collective_time_s(sys, COLL_ALL_GATHER, bd, gdp) +
                    collective_time_s(sys, COLL_ALL_GATHER, be, gedp);
        /* ZeRO-2 (shard_grads.h): the gradients left in every micro-batch's backward, unit by
         * unit (the layer recipes' fsdp.reduce_scatter, estimate.c's root_traffic) */
        if (layout_zero2(l)) grad = 0;
    }
    return grad;
}
