/* memory_pools.c — torch FSDP2's side-stream memory pools (memory_pools.h). */
#include "memory_pools.h"

#include "memory_params.h"
#include "memory_phases.h"
#include "precision.h"

double memory_fsdp2_block_gathered_bytes(const model_spec *m, const layout *l, double layer_params,
                                         bool moe_block)
{
    double block = 2.0 * layer_params;
    if (precision_is_low(l)) {
        precision_rules pr;
        precision_rules_of(l, &pr);
        if (pr.gather_bytes < 2.0)
            block -= (2.0 - pr.gather_bytes) * memory_layer_linear_params(m, l, moe_block);
    }
    return block;
}

void memory_fsdp2_side_pools(const model_spec *m, const layout *l, int stage, double sharded_params,
                             double layer_params, bool moe_block, double *all_gather_bytes,
                             double *reduce_scatter_bytes)
{
    *all_gather_bytes = *reduce_scatter_bytes = 0;
    if (!layout_is_pytorch(l) || l->sharding != SHARDING_FSDP || l->offload) return;
    /* the sharded gradients: views of the reduce-scatter output, in the reduce dtype (fp32,
     * torchtitan's MixedPrecisionPolicy reduce_dtype) */
    *reduce_scatter_bytes = 4.0 * sharded_params;
    if (layout_shard_group(l) <= 1) return; /* nothing to gather */
    /* the root and a block, as gathered (memory_fsdp2_block_gathered_bytes) */
    *all_gather_bytes = memory_root_gathered_bytes(m, l, stage) +
                        memory_fsdp2_block_gathered_bytes(m, l, layer_params, moe_block);
}
