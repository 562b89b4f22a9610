/*
 * mcore_moe_host.h — the host (CPU) time of a Megatron-Core MoE layer, per layer and
 * micro-batch (issue 20). plan prices no host time for Megatron's dense layers (Transformer
 * Engine's fused modules keep the GPU ahead), but a fine-grained MoE layer issues much more
 * from Python: the router (gating GEMM, top-k, the aux loss and its scaler), the token
 * dispatcher's metadata (token counts per expert, their all-gather over the EP group, split
 * sizes), permute and unpermute, the all-to-all calls, and Transformer Engine's GroupedLinear,
 * which loops over the local experts on the host issuing one cuBLASLt GEMM per expert and pass.
 * And every dispatcher synchronises the host with the GPU at least once per forward (the token
 * counts the all-to-all and the grouped GEMM need as host integers): the host's lead is gone at
 * every MoE layer, so what it issues after the sync is not hidden behind the GPU work before it.
 * DeepEP, HybridEP and GPT-OSS's clamped activation sync a second time (below, moe11).
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

/* The second sync (moe11, 2026-11-28): GPT-OSS's clamped quick-GEGLU (mcore_unfused.h) goes
 * through weighted_bias_quick_geglu_impl, which builds its linear offset with
 * torch.tensor(linear_offset, dtype=..., device=input.device) on every call (Megatron-LM d98e8a6
 * megatron/core/fusions/fused_bias_geglu.py 433; the same at 0d8e071, b0cc270, 2edffadb,
 * d0b3b77): a host-to-device copy from a Python scalar that waits for the GPU. Measured on 4 x
 * H200 (bench/moe11_clamp_sync.py, bench/results/moe11_2026-11-28): with 50 ms of GPU work
 * queued the call returns after 49.4 ms, as a device-to-host .tolist() does (a fill_ returns
 * after 0.085 ms). So the forward syncs a second time after fc1 and the clamps: the host's
 * lead is lost again and what it issues from there to the next layer's dispatcher sync (the
 * activation, fc2's per-expert GEMMs, the experts' bias loop, the combine, the next layer's
 * attention block, router and dispatcher preprocessing) paces the GPU. With A the window from
 * the dispatcher's sync to the activation's (host h_A, GPU g_A with its exchange) and G, H the
 * whole forward's:
 *   forward + exposed exchange = max(g_A, h_A) + max(G - g_A + max(0, H_post - h_A - (G_post -
 *                                g_A)), H - h_A)
 * which is the one-sync floor when h_A = g_A = 0. DeepEP and HybridEP sync twice without any
 * clamp: inside the dispatch (the receive buffers' size) and after the exchange (the experts'
 * counts on the host: mcore_moe_host.c flex_second_sync); there A is the exchange, h_A ~ 0.
 * The backward under the moe_act recompute
 * syncs again at the re-run activation; the host's backward issue time there is already a
 * floor under each layer's backward (below), so nothing is added. */

/* The two floors (seconds) for recipe r's forward compute (recipe_time.fwd_s) and its backward
 * with recompute (bwd_s + recompute_s), given h and g. Pure, for tests; with
 * x = max(0, h.post_sync - g.post_sync), the host's time after the sync that the GPU does not
 * cover:
 *   fwd_floor = max(h.fwd - g.fwd_comm, g.fwd + x)     (one sync; two: above)
 *   bwd_floor = max(h.bwd - g.bwd_comm, 0)                       without recompute
 *             = max(h.bwd + h.fwd - g.bwd_comm, g.bwd + x)       with it
 * the exposed communication already counts as time. */
void mcore_moe_host_floors(const mcore_moe_host_times *h, const mcore_moe_gpu *g,
                           double *fwd_floor_s, double *bwd_floor_s);
/* The same with the activation's second sync (above): h_act_s, g_act_s the host's and the GPU's
 * (with the exchange) time from the dispatcher's sync to it; both 0 gives the one-sync floors. */
void mcore_moe_host_floors_act_sync(const mcore_moe_host_times *h, const mcore_moe_gpu *g,
                                    double h_act_s, double g_act_s, double *fwd_floor_s,
                                    double *bwd_floor_s);

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
