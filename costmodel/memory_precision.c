/*
 * memory_precision.c — what a layout's precision adds to one pipeline stage's memory
 * (memory_precision.h). Moved as it was from memory.c (issue 21, speed7: memory.c's stage
 * split into its state and activation parts grew it past ~800 lines).
 */
#include "memory_precision.h"

#include "memory.h"
#include "memory_params.h"
#include "precision.h"

/* Low-precision Linears (GEMM weights) of one layer: the amax history is per GEMM. */
static double layer_linears(const model_spec *m, const layout *l, int moe_layer)
{
    double attn = m->mla ? (m->q_lora_rank > 0 ? 5.0 : 4.0) : 2.0;
    if (!moe_layer) return attn + 2.0;
    return attn + 2.0 * (m->experts / l->ep) + (m->shared_experts ? 2.0 : 0);
}

/* What l's precision adds to the stage's memory (precision.h): the low-precision weight copies
 * Transformer Engine keeps beside the bf16 weights (the stage's low-precision layers; under
 * FSDP the two gathered units in flight), the amax history of delayed scaling, and torchao's
 * FP8 all-gather, which gathers the Linear weights of FSDP2's units in one byte instead of two.
 * With --fp8-param-gather the weight itself is the low-precision copy: the bf16 weight
 * (sharded under Megatron-FSDP, gathered in its units) shrinks to operand_bytes, and TE keeps
 * only the other layout beside it. bf16 first/last layers add nothing. */
void memory_precision_add(const model_spec *m, const layout *l, int stage, int start,
                          int n_layers, int moe_layers, const double layer_params[2],
                          const double *lp, memory_breakdown *r)
{
    if (!precision_is_low(l)) return;
    precision_rules pr;
    precision_rules_of(l, &pr);
    int lo, split, hi; /* the stage's low-precision layers, dense then MoE */
    memory_lp_layers_from(m, l, start, n_layers, &lo, &split, &hi);
    int lp_dense = split - lo, lp_moe = hi - split;
    if (!lp_dense && !lp_moe) return;
    /* memory_layer_linear_params of each kind, from the layer parameters given (the same
     * difference of the same doubles) */
    double lin_dense = layer_params[0] - model_norm_params(m);
    double lin_moe = moe_layers ? layer_params[1] - model_norm_params(m) - model_router_params(m)
                                : 0;
    double lin_stage = lp_dense * lin_dense + lp_moe * lin_moe;
    double lin_unit = moe_layers ? lin_moe : lin_dense;
    bool pg = precision_param_gather(l);
    double pb = pg ? pr.operand_bytes : 2.0; /* precision_param_bytes, from pr */
    double copy = pg ? pr.weight_copy_bytes - pb : pr.weight_copy_bytes;
    if (l->sharding == SHARDING_FSDP)
        r->comm_buffer_bytes += copy * 2.0 * lin_unit;
    else
        r->weights_bytes += copy * lin_stage;
    r->weights_bytes += pr.amax_history_bytes *
                        (lp_dense * layer_linears(m, l, 0) + lp_moe * layer_linears(m, l, 1));
    if (l->sharding == SHARDING_FSDP && layout_is_pytorch(l) && pr.gather_bytes < 2.0)
        r->comm_buffer_bytes -= (2.0 - pr.gather_bytes) * 2.0 * lin_unit; /* cur + prefetch */
    if (pg) {
        double lpd, lpe;
        if (lp) {
            lpd = lp[0];
            lpe = lp[1];
        } else {
            memory_stage_lp_params(m, l, stage, &lpd, &lpe);
        }
        if (l->sharding == SHARDING_FSDP) {
            double nd = layout_shard_group(l), ne = layout_expert_dp(l);
            if (l->shard_size > 0 && l->shard_size < ne) ne = l->shard_size;
            r->weights_bytes -= (2.0 - pb) * (lpd / nd + lpe / ne);
            r->comm_buffer_bytes -= (2.0 - pb) * 2.0 * lin_unit; /* the two gathered units */
        } else {
            r->weights_bytes -= (2.0 - pb) * (lpd + lpe);
        }
    }
}
