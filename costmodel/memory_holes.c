/* memory_holes.c — the free bytes of the reserved peak at the loss's moment (memory_holes.h). */
#include "memory_holes.h"

#include "cuda_graphs.h"
#include "memory.h"
#include "memory_phases.h"
#include "memory_pools.h"

double memory_loss_holes_bytes(const model_spec *m, const training_spec *t, const layout *l,
                               int stage, double layer_params, bool moe_block,
                               double chain_block_bytes)
{
    if (!layout_is_pytorch(l) || l->sharding != SHARDING_FSDP || l->offload || l->pp > 1 ||
        layout_impl_of(l) != IMPL_NATIVE || stage != layout_head_stage(l) || cuda_graphs_on(l))
        return 0; /* a CUDA graph's private pool allocates its own way: not measured */
    double holes = 0;
    /* the bf16 logits, deleted before the backward of an eager loss (a compiled loss's graph
     * keeps them for its backward; a loop that holds them holds them allocated) */
    if (!layout_loss_compiled(l) && !t->hold_logits)
        holes += (double)l->mbs * t->seq_len / l->cp * 2.0 * (double)m->vocab / l->tp;
    /* the gathered root and block, freed after forward (or held: the same reserved bytes), when
     * not already allocated at the loss (memory_root_at_loss_bytes) and smaller than what the
     * loss's backward asks for */
    if (l->reshard_after_forward) {
        double root = memory_root_gathered_bytes(m, l, stage) - memory_root_at_loss_bytes(m, l, stage);
        double block = memory_fsdp2_block_gathered_bytes(m, l, layer_params, moe_block);
        if (root > 0 && root < chain_block_bytes) holes += root;
        if (block < chain_block_bytes) holes += block;
    }
    return holes;
}
