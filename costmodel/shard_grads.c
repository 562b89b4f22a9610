/* shard_grads.c — ZeRO-2 under Megatron: predicates and rules (shard_grads.h). */
#include "shard_grads.h"

#include <math.h>
#include <stdio.h>

#include "recipe_builder.h"

bool layout_grads_sharded(const layout *l)
{
    return l->sharding == SHARDING_FSDP || layout_zero2(l);
}

bool layout_zero2(const layout *l)
{
    return l->shard_grads && l->framework == FRAMEWORK_MEGATRON &&
           l->sharding == SHARDING_DISTOPT;
}

#define RULE_MSG(...)                                                                           \
    do {                                                                                        \
        if (msg) snprintf(msg, len, __VA_ARGS__);                                               \
    } while (0)

bool layout_shard_grads_rule(const layout *l, const char **rule, char *msg, size_t len)
{
    if (!l->shard_grads) return false;
    if (l->framework != FRAMEWORK_MEGATRON || l->sharding != SHARDING_DISTOPT) {
        *rule = "shard-grads-megatron-distopt";
        RULE_MSG("--shard-grads is Megatron-FSDP's optim_grads (ZeRO-2: parameters replicated, "
                 "gradients and optimizer state sharded): use --framework megatron --sharding "
                 "distopt with it (--sharding fsdp is optim_grads_params, ZeRO-3)");
        return true;
    }
    /* megatron_fsdp.py 331-337 (d98e8a6): "Gradient reduce-scatter must be overlapped when
     * using sharding optimizer and gradients" (it forces overlap_grad_reduce on) */
    if (!l->overlap_grad_reduce) {
        *rule = "shard-grads-overlap-grad-reduce";
        RULE_MSG("--shard-grads reduce-scatters every micro-batch's gradients overlapped with the "
                 "backward (Megatron-FSDP forces overlap_grad_reduce): add --overlap-grad-reduce");
        return true;
    }
    if (l->optimizer_offload_pct > 0) {
        *rule = "shard-grads-no-optimizer-offload";
        RULE_MSG("--optimizer-cpu-offload is the distributed optimizer's HybridDeviceOptimizer, "
                 "which plan prices for ZeRO-1 only: drop --shard-grads or the offload");
        return true;
    }
    return false;
}
#undef RULE_MSG

void rb_shard_grads_unit(builder *b, const training_spec *t, const layout *l, double params)
{
    /* Megatron-FSDP reduce-scatters the unit's main-grad bucket, fp32 unless
     * --grad-reduce-in-bf16 (param_and_grad_buffer.py's grad dtype), on its communication stream
     * as Megatron-FSDP's optim_grads_params does (layer_recipe.c rb_fsdp_unit): the same op,
     * without the gather */
    double red = t->grad_reduce_bf16 ? 2.0 : 4.0;
    layout_group g = layout_shard_place(b->sys, l);
    double rs_s = collective_time_s(b->sys, COLL_REDUCE_SCATTER, red * params, g);
    rb_op_add(b, "fsdp.reduce_scatter", RECIPE_FSDP_REDUCE, RECIPE_BWD, RECIPE_STREAM_COMM,
              RECIPE_OVERLAP_LAYER, 0, rs_s);
}

/* megatron_fsdp.py 439-441: the capacity, in parameters, never below 1e9 */
static double queue_layers(double unit_params)
{
    if (unit_params <= 0) return 0;
    double cap = fmax(1e9, 2.0 * unit_params);
    return cap / unit_params;
}

double shard_grads_bwd_stall_s(double rs_s, double bwd_s, double fwd_s, double layers,
                               double unit_params)
{
    if (layers <= 0 || rs_s <= bwd_s) return 0;
    double q = queue_layers(unit_params);
    double queue = layers > q ? bwd_s + (layers - q) * rs_s - layers * bwd_s : 0;
    double stream = layers * (rs_s - bwd_s - fwd_s);
    return fmax(0, fmax(queue, stream));
}

double shard_grads_tail_s(double rs_s, double layers, double unit_params)
{
    return fmin(queue_layers(unit_params), layers) * rs_s;
}
