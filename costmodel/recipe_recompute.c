/*
 * recipe_recompute.c — which of a built layer recipe's ops re-run in the backward under each
 * recompute setting (full, with torch's non-reentrant checkpoint stopping early; torchtitan's
 * selective per-op policy; Megatron's recompute modules; selective attention otherwise), set on
 * the recipe in place so one built recipe is re-priced under each setting (layer_recipe.h).
 */
#include "layer_recipe.h"
#include "recipe_builder.h"
#include "recompute_modules.h"
#include "host_dispatch.h"

#include <stdbool.h>
#include <string.h>

/* Does this layout's full recompute stop early? PyTorch's non-reentrant activation checkpoint
 * (torch.utils.checkpoint with use_reentrant=False, the form FSDP2 trainers and torchtitan's
 * checkpoint_wrapper use; bench/realruns checkpoints that way) re-runs the forward only until it
 * has re-created every tensor the forward saved, then stops: torch/utils/checkpoint.py,
 * _recomputation_hook.pack_hook raises _StopRecomputationError once recomp_counter reaches
 * len(weak_holders) (early_stop is on by default, set_checkpoint_early_stop). Autograd packs
 * an op's saved inputs before it runs the kernel (the generated VariableType code builds the
 * SavedVariables, which call the pack hook, ahead of the redispatch), so the last Linear's
 * GEMM (the MLP's down projection, whose saved inputs are the layer's last saved tensors) and
 * the residual add after it are never re-run. Megatron's full recompute (its own
 * CheckpointFunction, tensor_parallel/random.py) re-runs the whole forward. A MoE block's last
 * saved tensors sit inside its expert loop: modelled as a full re-run. */
static bool recompute_stops_early(const layout *l)
{
    return l->framework == FRAMEWORK_FSDP2 || l->framework == FRAMEWORK_TORCHTITAN;
}

/*
 * torchtitan's selective activation checkpointing (torchtitan b5bcd76 torchtitan/distributed/
 * activation_checkpoint.py, SelectiveAC and _get_default_save_ops): per op, the outputs of
 * matmuls, SDPA/flex attention and the reduce-scatter / all-to-all collectives are saved,
 * everything else recomputed, and of the matmuls every second one (in forward order, counted per
 * block) is recomputed too. In a Llama block (separate wq, wk, wv; w1, w3, w2,
 * torchtitan/models/common/attention.py and feed_forward.py) that recomputes wk, wo and w3 and
 * every elementwise op (norms, RoPE, SiLU x gate), and keeps the attention core. This recipe
 * fuses wq/wk/wv and w1/w3 into one op each, so the recomputed Linears are priced as attn_out
 * (wo) and mlp_down (w2, the FLOPs of w3); wk's, 4-6% of a GQA block's Linear FLOPs, is left
 * out.
 * The sequence-parallel all-gathers that enter each block ARE re-run (atp22): the policy saves
 * `_c10d_functional.reduce_scatter_tensor` but not `all_gather_into_tensor` (torchtitan
 * 820504e torchtitan/models/llama3/parallelize_llama.py lines 218-227, `_save_list`; b5bcd76's
 * _get_default_save_ops likewise), so the gathered block input, which the recomputed wk / w3
 * and the wgrads of wq..wv / w1, w3 read, is PREFER_RECOMPUTE. Eager SAC re-runs it in the
 * recompute; under torch.compile the min-cut partitioner honours the tag over its own ban on
 * recomputing collectives (torch/_functorch/partitioners.py: must_recompute() covers
 * MUST_RECOMPUTE and PREFER_RECOMPUTE, and should_ban_recomputation returns False for it before
 * the collective check applies). So the TP ops re-run their entering gather only (the
 * reduce-scatters are saved), as the full recompute's MLP block does (recompute_enter_only);
 * its exposure is the forward's (under async TP: fused with the block's first GEMM as in the
 * forward, though the recompute's consumers are only wk and w3: a lower bound there).
 */
static bool titan_sac_recomputes(const recipe_op *o)
{
    if (o->kind == RECIPE_ELEMENTWISE) return o->phase == RECIPE_FWD;
    if (o->kind == RECIPE_TP) return true; /* the entering all-gather only (caller) */
    if (o->kind != RECIPE_GEMM) return false;
    return !strcmp(o->name, "attn_out") || !strcmp(o->name, "mlp_down") ||
           !strcmp(o->name, "shared_down");
}

void recipe_set_recompute_priced(const system_spec *sys, const model_spec *m, const layout *l,
                                 recipe *r, bool moe, recipe_time *price)
{
    recipe_set_recompute(sys, m, l, r, moe, false);
    rb_pace_priced(sys, m, l, r, moe, price);
}

/* ---- recompute: full repeats every forward op (its collectives too) before the backward,
 * selective the attention core. Only the flags and the host's pacing depend on it, so a
 * built recipe is re-priced under another recompute setting by calling this again. */
void recipe_set_recompute(const system_spec *sys, const model_spec *m, const layout *l,
                          recipe *r, bool moe, bool pace)
{
    /* torch's non-reentrant checkpoint stops early (recompute_stops_early) */
    bool early = l->recompute == RECOMPUTE_FULL && !moe && recompute_stops_early(l);
    for (int i = 0; i < r->n_ops; i++) {
        recipe_op *o = &r->op[i];
        /* FSDP's transfers and FSDP2's copies are not re-run: the recomputed forward finds
         * the unit unsharded by its pre-backward hook (FSDPState._pre_forward returns at once
         * in PRE_BACKWARD, "the pre-backward hook is responsible for the unshard":
         * torch/distributed/fsdp/_fully_shard/_fsdp_state.py at pytorch 01c9f4fc) */
        if (l->recompute == RECOMPUTE_FULL)
            o->recompute = o->phase == RECIPE_FWD && o->kind != RECIPE_FSDP_GATHER &&
                           o->kind != RECIPE_FSDP_REDUCE && o->kind != RECIPE_FSDP_COPY;
        else if (l->recompute == RECOMPUTE_SELECTIVE && l->framework == FRAMEWORK_TORCHTITAN)
            o->recompute = titan_sac_recomputes(o);
        else if (l->recompute == RECOMPUTE_SELECTIVE && l->framework == FRAMEWORK_MEGATRON)
            o->recompute = o->phase == RECIPE_FWD &&
                           recompute_modules_reruns(recompute_modules_of(l), moe, o->name,
                                                    o->kind);
        else if (l->recompute == RECOMPUTE_SELECTIVE)
            o->recompute = o->kind == RECIPE_ATTENTION;
        else
            o->recompute = false;
        /* the stop is raised in the pack hook of the GEMM's saved inputs, after the module's
         * input hook and the Linear's decomposition before the GEMM have run (host_dispatch.c) */
        o->recompute_stops_here = early && !strcmp(o->name, "mlp_down");
        if (o->recompute_stops_here) o->recompute = false;
        /* nor the MLP's reduce-scatter after it (its output is the block's, which no gradient
         * of the block needs); the attention block's is re-run: the MLP's input needs it */
        o->recompute_enter_only = early && o->recompute && !strcmp(o->name, "tp.mlp");
        /* torchtitan's per-op SAC: a TP op re-runs its SP all-gather, not its saved
         * reduce-scatter; without SP there is no gather to re-run (the all-reduce's output is
         * the block's, which no gradient needs) */
        if (o->kind == RECIPE_TP && l->recompute == RECOMPUTE_SELECTIVE &&
            l->framework == FRAMEWORK_TORCHTITAN) {
            o->recompute = l->sp;
            o->recompute_enter_only = l->sp;
        }
        o->recompute_sac_enter = o->recompute_enter_only && l->recompute == RECOMPUTE_SELECTIVE;
        o->recompute_launches = o->recompute ? o->launches : 0;
        /* the second of the two residual adds (after the MLP) is not re-run either; the host's
         * queue (host_dispatch.c) gives a split op's odd launch to its first place, as here */
        if (early && o->recompute && !strcmp(o->name, "residual.add"))
            o->recompute_launches = o->launches - o->launches / 2;
    }
    if (pace) host_dispatch_pace(sys, m, l, r, true, moe);
}
