/*
 * mcore_moe_host.h — the host (CPU) time of a Megatron-Core MoE layer, per layer and
 * micro-batch (issue 20). plan prices no host time for Megatron's dense layers (Transformer
 * Engine's fused modules keep the GPU ahead), but a fine-grained MoE layer issues much more
 * from Python: the router (gating GEMM, top-k, the aux loss and its scaler), the token
 * dispatcher's metadata (token counts per expert, their all-gather over the EP group, split
 * sizes), permute and unpermute, the all-to-all calls, and Transformer Engine's GroupedLinear,
 * which loops over the local experts on the host issuing one cuBLASLt GEMM per expert and pass.
 * And every dispatcher synchronises the host with the GPU once per forward (the token counts
 * the all-to-all and the grouped GEMM need as host integers): the host's lead is gone at every
 * MoE layer, so what it issues after the sync is not hidden behind the GPU work before it.
 *
 * Priced as two floors under the layer's passes (recipe_price.c takes them like
 * host_dispatch.h's):
 *   forward  = max(H_fwd, GPU_fwd + max(0, H_post - GPU_post))
 *   backward = max(H_bwd, GPU_bwd)   (a recompute of the layer adds its forward again)
 * H_fwd, H_bwd: the layer's host issue time (router + dispatcher + permute + combine, measured
 * on Megatron-Core's own MoELayer, + 2 forward / 4 backward GEMMs per local expert at the
 * measured host time of TE's per-GEMM cuBLASLt sequence, + the attention block's host time,
 * measured on Megatron-Core's TransformerLayer beside the MoELayer); H_post: the host time after the sync
 * (measured as what a stack of layers takes beyond a GPU delay before each one); GPU_post: the
 * MoE block's GPU time after the sync (the experts' GEMMs and elementwise, the EP exchanges).
 * Measurements and sources: bench/mcore_moe_host.py, bench/mcore_moe_sync_check.py,
 * bench/te_gemm_host.cu, bench/results/mcore_moe_host_2026-11-27, bench/README.md
 * "Megatron-Core MoE host cost".
 */
#ifndef PLAN_MCORE_MOE_HOST_H
#define PLAN_MCORE_MOE_HOST_H

#include <stdbool.h>

#include "layer_recipe.h"
#include "layout.h"
#include "model.h"
#include "system.h"

/* The host times of one MoE layer per micro-batch at EP size ep with local_experts experts on
 * the GPU: the forward's issue time, the part of it after the dispatcher's sync, and the
 * backward's. */
typedef struct {
    double fwd_s, post_sync_s, bwd_s;
} mcore_moe_host_times;

/* Whether the term applies: Megatron, and the system has the constants (host.mcore_moe_*). */
bool mcore_moe_host_applies(const system_spec *sys, const layout *l);

/* The host times from the system's constants (above). */
mcore_moe_host_times mcore_moe_host_of(const system_spec *sys, int ep, int local_experts);

/* The GPU sums of a recipe the floors are taken against (recipe_time's, and the MoE block's
 * forward after the sync). */
typedef struct {
    double fwd_s, fwd_comm_s; /* forward compute; its exposed communication */
    double bwd_s, bwd_comm_s; /* backward compute with the recompute; its exposed communication */
    double post_sync_s;       /* the MoE block's forward GPU time after the dispatcher's sync */
    bool recompute;           /* the backward re-runs the MoE layer's forward (full recompute,
                                 or the "moe" module): its host time and sync again */
} mcore_moe_gpu;

/* The two floors (seconds) for recipe r's forward compute (recipe_time.fwd_s) and its backward
 * with recompute (bwd_s + recompute_s), given h and g. Pure, for tests; with
 * x = max(0, h.post_sync - g.post_sync), the host's time after the sync that the GPU does not
 * cover:
 *   fwd_floor = max(h.fwd - g.fwd_comm, g.fwd + x)
 *   bwd_floor = max(h.bwd - g.bwd_comm, 0)                       without recompute
 *             = max(h.bwd + h.fwd - g.bwd_comm, g.bwd + x)       with it
 * the exposed communication already counts as time. */
void mcore_moe_host_floors(const mcore_moe_host_times *h, const mcore_moe_gpu *g,
                           double *fwd_floor_s, double *bwd_floor_s);

/* Adds to h the host time of the layer's attention block (m's: with q/k norms where m has
 * them), which the host issues between two of the dispatcher's syncs beside the MoE block's
 * (host.mcore_attn_*, host.mcore_qk_norm_*; bench/mcore_layer_host.py): to the forward and
 * the backward, not to the part after the sync that the MoE block's GPU work covers. */
void mcore_moe_host_add_attention(const system_spec *sys, const model_spec *m,
                                  mcore_moe_host_times *h);

/* Sets r->host_fwd_s and r->host_bwd_s for a Megatron MoE layer of model m (r's ops
 * complete); leaves them at 0 where mcore_moe_host_applies() is false. Called by
 * host_dispatch_pace(). */
void mcore_moe_host_pace(const system_spec *sys, const model_spec *m, const layout *l, recipe *r);
/* The same, and r's price with the floors set (recipe_price(r, price) after the pacing): the
 * pacing prices r without them first, so the search's layer-cost cache prices once. */
void mcore_moe_host_pace_priced(const system_spec *sys, const model_spec *m, const layout *l,
                                recipe *r, recipe_time *price);

#endif
