/*
 * eager_beside.c — a PyTorch layer's eager kernels slowed beside FSDP's collectives only as
 * much as those collectives cover the layer (layer_recipe.h recipe_eager_beside; issue 14,
 * bench/results/apertus2r25_2026-11-29).
 *
 * Why: on several GPUs every eager elementwise kernel is priced at
 * gpu.eager_elementwise_efficiency (0.51), measured in a 4-GPU FSDP2 step of Llama-3.1-8B, seq
 * 4096, micro-batch 1 (bench/BACKEND.md "Eager elementwise kernels"), where the unit's
 * all-gathers and reduce-scatters (and FSDP2's copy-in kernels) run beside part of each layer;
 * alone on one H200 the same kernels run at _alone (0.62). Per kernel class (bench/ew_classes.py,
 * beside_classes.py in that folder) the step's kernels at their alone rates make 0.609 of peak
 * against 0.513 in the step: contention, not the mix; and the classes that run where the next
 * unit's gather and the previous unit's reduce-scatter are in flight (the RMSNorm, RoPE and
 * SiLU-backward kernels at the start of each pass) are the slowed ones (0.65-0.87 of their alone
 * rate), the RMSNorm backward's fp32 kernels at the end of each layer's backward, with nothing
 * beside them, run at their alone rates (0.99-1.0). So the slower rate's extra time belongs to
 * the part of the layer the collectives cover. A layer whose collectives cover less of it than
 * in that step (a long layer: Apertus-8B's 21504-wide xIELU MLP with 37 eager kernels over it at
 * 8192 tokens on 2 ranks covers ~8%, the reference ~30%) keeps that share of it; a layer whose
 * collectives cover more keeps all of it (the measured rate: nothing beyond it measured).
 *
 * The share is plan's own: (gather + the backward's gather + reduce-scatter) / (forward +
 * backward) of the layer's compute ops as built (recompute left out: the cut does not depend on
 * it, so a recipe re-set for another recompute keeps its figure), the same quantity as
 * OVERLAP_EAGER_BESIDE_REF (overlap.h) for the reference layout. Only PyTorch layouts (FSDP2,
 * torchtitan: the rate's measurement; Megatron's eager kernels keep theirs) whose sole
 * collectives are FSDP's over two ranks or more: TP, CP and EP exchanges run beside kernels
 * too, not measured here; a pipeline stage whose FSDP group is one rank runs no collective
 * beside its kernels but its P2P sends, and keeps the measured rate (not examined here).
 */
#include "layer_recipe.h"
#include "overlap.h"

#include <math.h>

/* Each eager op's time and its items' (one a launch) moved from keeping `was` of its beside_s to
 * keeping `keep`. */
static void set_keep(recipe *r, recipe_items *items, double was, double keep)
{
    for (int i = 0; i < r->n_ops; i++) {
        recipe_op *o = &r->op[i];
        if (o->kind != RECIPE_ELEMENTWISE || !(o->beside_s > 0) || keep == was) continue;
        double d = (keep - was) * o->beside_s;
        *(o->phase == RECIPE_FWD ? &o->fwd_s : &o->bwd_s) += d;
        for (int j = 0; items && j < items->n; j++)
            if (items->item[j].op == i && o->launches > 0)
                items->item[j].pred_s += d / o->launches;
    }
    r->eager_beside_keep = keep;
}

void recipe_eager_beside(recipe *r, const layout *l, recipe_items *items)
{
    double was = r->eager_beside_keep;
    /* FSDP over one rank (torch pipelining's stages at dp 1) runs copies, no collective */
    if (!layout_is_pytorch(l) || layout_shard_group(l) < 2) {
        set_keep(r, items, was, 1);
        return;
    }
    double gather = 0, reduce = 0, window = 0;
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        switch (o->kind) {
        case RECIPE_TP:
        case RECIPE_EP:
        case RECIPE_CP:
            if (o->fwd_s > 0 || o->bwd_s > 0) { /* beside other exchanges: kept */
                set_keep(r, items, was, 1);
                return;
            }
            break;
        case RECIPE_FSDP_GATHER:
            gather += o->fwd_s;
            break;
        case RECIPE_FSDP_REDUCE:
            reduce += o->bwd_s;
            break;
        case RECIPE_GEMM:
            window += o->fwd_bwd_s;
            break;
        case RECIPE_ELEMENTWISE: /* as built: what a cut took back */
            window += (o->phase == RECIPE_FWD ? o->fwd_s : o->bwd_s) + (1 - was) * o->beside_s;
            break;
        default:
            window += o->fwd_s + o->bwd_s;
            break;
        }
    }
    double keep = 1;
    if ((gather > 0 || reduce > 0) && window > 0) {
        double comm = gather + (r->fsdp_bwd_gather ? gather : 0) + reduce;
        keep = fmin(1, comm / window / OVERLAP_EAGER_BESIDE_REF);
    }
    set_keep(r, items, was, keep);
}
