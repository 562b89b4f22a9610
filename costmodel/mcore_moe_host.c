/*
 * mcore_moe_host.c — the host time of a Megatron-Core MoE layer as floors under its passes
 * (mcore_moe_host.h says why). What the host issues per layer and micro-batch, read from the
 * sources:
 *  - Megatron-LM 2a75ac1, megatron/core/transformer/moe/moe_layer.py MoELayer.forward: route
 *    (router.py TopKRouter: gating GEMM, score function, top-k, aux/z loss and
 *    MoEAuxLossAutoScaler), preprocess, dispatch, routed_experts_compute, combine, postprocess;
 *  - token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess (500-621: token counts per
 *    expert, their all-gather over the TP x EP group, split sizes) and
 *    _maybe_dtoh_and_synchronize (920-958: the counts copied to the host on a side stream and
 *    d2h_event.synchronize() once per forward, before the EP all-to-all where EP > 1); the flex
 *    dispatcher's DeepEP manager reads tokens_per_expert.sum().item() and HybridEP's sums the
 *    counts on the host unless a token budget is set (1128-1180, 1440-1450), and TEGroupedMLP
 *    .forward takes tokens_per_expert.tolist() (experts.py 790): a sync per forward with every
 *    dispatcher, and for DeepEP / HybridEP a second one after the exchange (flex_second_sync
 *    below, moe11); the backward reuses the host's split sizes (no sync);
 *  - Transformer Engine v2.12 (5671fd3), pytorch/module/grouped_linear.py: the forward's one
 *    general_grouped_gemm over the local experts (202), the backward's dgrad (403) and wgrad
 *    (456); cpp_extensions/gemm.py 288 te_general_grouped_gemm ->
 *    common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm, a host loop over the GEMMs (984),
 *    each a full cublas_gemm (layouts, descriptor, preference, cublasLtMatmulAlgoGetHeuristic
 *    at 765, cublasLtMatmul, destroys) on compute stream i % 4: 2 GEMMs per local expert in the
 *    forward (fc1, fc2), 4 in the backward.
 * Constants: system host.mcore_moe_* and host.te_gemm_s (data/systems/h100.json "sources").
 * Megatron-Core's unfused eager ops where a model defeats its fusions (YaRN RoPE, the experts'
 * output bias: mcore_unfused.h) add their host time at host.eager_op_*_s (unfused_host below).
 * The attention block (moe7, 2026-11-28): between two of the dispatcher's syncs the host also
 * issues the next layer's attention block (TransformerLayer._forward_attention at 2a75ac1
 * transformer_layer.py 569: input norm, QKV, core attention, projection, bias-dropout-add,
 * the MLP's norm; the residual adds), and the backward's autograd nodes for it: measured as a
 * whole TransformerLayer minus its MoELayer on one H100 (bench/mcore_layer_host.py, local spec
 * with one SDPA call as the fused core attention; host.mcore_attn_*, and q/k norms' extra
 * host.mcore_qk_norm_*). TE's modules run more Python per module than the local spec's (TE
 * #2053: te.Linear 90-100 us per forward against torch Linear's 33-37 us on GH200), so this
 * is on the low side for TE. Not priced here: Transformer Engine's per-expert Python in FP8
 * (quantize_weight per expert on the first micro-batch), Megatron's per-parameter gradient
 * hooks. CUDA graphs: a full-iteration graph
 * (layout.h cuda_graph_full_iteration) replays the whole step, no host term; the per-layer TE
 * graphs of the router and preprocess (cuda_graph_modules moe_router, moe_preprocess) are not
 * a layout knob, so such runs pay the whole forward's host time (an over-estimate of their
 * router part; the sync and what follows it stay outside those graphs).
 */
#include "mcore_moe_host.h"

#include <math.h>
#include <string.h>

#include "mcore_unfused.h"

/* Does name start with prefix? strncmp(name, prefix, strlen(prefix)) == 0, without the call:
 * set_floors runs for every pricing of a Megatron MoE layer (speed22: 4.4 M strncmp calls,
 * 1.2% of DeepSeek-V3's search at 16384 GPUs), and most names differ in the first byte. */
static bool starts_with(const char *name, const char *prefix)
{
    while (*prefix)
        if (*name++ != *prefix++) return false;
    return true;
}

/* GEMMs TE issues per local expert: fc1 and fc2 forward; their dgrad and wgrad backward. */
enum { TE_GEMMS_FWD = 2, TE_GEMMS_BWD = 4 };

bool mcore_moe_host_applies(const system_spec *sys, const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && !l->cuda_graph_full_iteration &&
           sys->host_mcore_moe_fwd_s > 0;
}

mcore_moe_host_times mcore_moe_host_of(const system_spec *sys, int ep, int local_experts)
{
    /* EP > 1 adds the count all-gather, the all-to-all calls and their waits on the other EP
     * ranks (measured at EP 2 and 4 as one figure) */
    bool a2a = ep > 1;
    double gemm = sys->host_te_gemm_s * local_experts;
    mcore_moe_host_times h;
    h.fwd_s = (a2a ? sys->host_mcore_moe_fwd_ep_s : sys->host_mcore_moe_fwd_s) +
              TE_GEMMS_FWD * gemm;
    h.post_sync_s = (a2a ? sys->host_mcore_moe_post_sync_ep_s : sys->host_mcore_moe_post_sync_s) +
                    TE_GEMMS_FWD * gemm;
    h.bwd_s = (a2a ? sys->host_mcore_moe_bwd_ep_s : sys->host_mcore_moe_bwd_s) +
              TE_GEMMS_BWD * gemm;
    return h;
}

void mcore_moe_host_floors(const mcore_moe_host_times *h, const mcore_moe_gpu *g,
                           double *fwd_floor_s, double *bwd_floor_s)
{
    /* the forward: the host issues the whole layer (the exposed exchanges run meanwhile), and
     * after the sync the GPU has nothing queued: what the host takes there beyond the GPU's
     * own post-sync work adds to the GPU's time */
    double x = fmax(0, h->post_sync_s - g->post_sync_s);
    *fwd_floor_s = fmax(h->fwd_s - g->fwd_comm_s, g->fwd_s + x);

    /* the backward: no sync, the host's lead carries; a plain floor. A recompute re-runs the
     * forward, its sync included, before the backward (Megatron's checkpointed layer,
     * transformer_block.py _checkpointed_forward; the "moe" recompute module) */
    if (!g->recompute) {
        *bwd_floor_s = fmax(0, h->bwd_s - g->bwd_comm_s);
        return;
    }
    *bwd_floor_s = fmax(h->bwd_s + h->fwd_s - g->bwd_comm_s, g->bwd_s + x);
}

void mcore_moe_host_floors_act_sync(const mcore_moe_host_times *h, const mcore_moe_gpu *g,
                                    double h_act_s, double g_act_s, double *fwd_floor_s,
                                    double *bwd_floor_s)
{
    mcore_moe_host_floors(h, g, fwd_floor_s, bwd_floor_s);
    if (!(h_act_s > 0) && !(g_act_s > 0)) return;
    /* the window up to the activation's sync, then the rest to the next dispatcher sync */
    double gall = g->fwd_s + g->fwd_comm_s;
    double xb = fmax(0, (h->post_sync_s - h_act_s) - (g->post_sync_s - g_act_s));
    *fwd_floor_s = fmax(g_act_s, h_act_s) + fmax(gall - g_act_s + xb, h->fwd_s - h_act_s) -
                   g->fwd_comm_s;
}

/* The GPU time of the layer's forward after the dispatcher's sync: the MoE block's compute
 * (experts, permutes, combine; the router is the attention block's, recipe_block) and the EP
 * exchanges; and whether the backward re-runs the experts' forward (a recompute). */
static double gpu_post_sync_s(const recipe *r, bool *recompute)
{
    double s = 0;
    *recompute = false;
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        if (o->kind == RECIPE_EP) {
            s += o->fwd_s;
            continue;
        }
        if (o->block != RECIPE_BLOCK_MLP || o->phase != RECIPE_FWD) continue;
        if (o->kind == RECIPE_GEMM || o->kind == RECIPE_ELEMENTWISE ||
            o->kind == RECIPE_ATTENTION)
            s += o->fwd_s;
        if (o->kind == RECIPE_GEMM && o->recompute) *recompute = true;
    }
    return s;
}

/* The flex dispatchers' second sync (mcore_moe_host.h): DeepEP and HybridEP size their receive
 * buffers from a count the host waits for inside the dispatch, before the data moves, and the
 * count of received rows is read again after it: DeepEP's get_permuted_hidden_states_by_experts
 * (num_out_tokens=tokens_per_expert.sum().item(), Megatron-LM d98e8a6
 * megatron/core/transformer/moe/token_dispatcher.py 1450), HybridEP's tokens_per_expert,
 * returned on the device (1177-1180), that TEGroupedMLP.forward turns into a list
 * (experts.py 897; HybridEP pads in the dispatch, skip_routed_expert_padding). EP > 1 without
 * an overlap of the exchange (the EP A2A overlap's schedule interleaves two micro-batches, the
 * shared experts' runs beside it: left as one sync). */
static bool flex_second_sync(const layout *l, const recipe *r)
{
    if (l->moe_dispatcher != MOE_DISPATCH_DEEPEP && l->moe_dispatcher != MOE_DISPATCH_HYBRIDEP)
        return false;
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, "ep.dispatch")) return r->op[i].overlap == RECIPE_OVERLAP_NONE;
    return false; /* EP 1: no exchange */
}

/* The second sync's window (mcore_moe_host.h): the GPU's forward from the dispatcher's sync
 * to the activation's (the dispatch exchange, the first of the two sort_chunks kernels, fc1's
 * share of the experts' GEMMs, the clamp kernels), and the host's (fc1's per-expert GEMMs and
 * the clamp ops; the dispatch calls are in the measured post-sync constant and left to the
 * rest, on the low side). fc1's share of the experts' forward: its width over fc1's and fc2's,
 * 2f / (2f + f) for the GLU the clamp applies to. */
static void act_sync_window(const system_spec *sys, const recipe *r, bool clamp,
                            double *h_act_s, double *g_act_s)
{
    double gpu = 0, clamp_launches = 0;
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        if (o->phase != RECIPE_FWD) continue;
        if (!strcmp(o->name, "ep.dispatch")) gpu += o->fwd_s;
        if (!clamp) continue; /* the flex dispatchers' window: the exchange alone */
        if (!strcmp(o->name, "moe.sort_chunks")) gpu += o->fwd_s / 2;
        else if (!strcmp(o->name, "experts")) gpu += o->fwd_s * 2.0 / 3.0;
        else if (starts_with(o->name, "moe_act.")) {
            gpu += o->fwd_s;
            clamp_launches += o->launches;
        }
    }
    *g_act_s = gpu;
    *h_act_s = clamp ? r->local_experts * sys->host_te_gemm_s +
                           clamp_launches * sys->host_eager_op_fwd_s
                     : 0; /* the flex dispatchers: the exchange's launch alone, left out */
}

/* The eager ops Megatron-Core runs unfused (mcore_unfused.h; YaRN and MLA RoPE, the experts' bias,
 * the clamps): one host op per forward kernel,
 * one backward node per forward op on a tensor that needs a gradient (RoPE's frequency table
 * has none), each at the system's measured bare-op host time; the RoPE ops come before the
 * dispatcher's sync, the experts' bias and the activation's clamps after it; under --cuda-graph-attn the RoPE ops replay
 * inside the attention block's graph (SelfAttention.forward applies the rotary embedding). */
static void unfused_host(const system_spec *sys, const layout *l, const recipe *r,
                         mcore_moe_host_times *h)
{
    double pre = 0, post = 0, nodes = 0;
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        if (o->kind != RECIPE_ELEMENTWISE || o->phase != RECIPE_FWD) continue;
        bool rope = starts_with(o->name, "rope.yarn.") || starts_with(o->name, "rope.mla.");
        bool bias = starts_with(o->name, "moe_bias.") || starts_with(o->name, "moe_act.");
        if (!rope && !bias) continue;
        if (rope && l->cuda_graph_attn) continue; /* replayed in the attention block's graph */
        if (rope) pre += o->launches;
        else post += o->launches;
        if (!strstr(o->name, ".table")) nodes += o->launches;
    }
    h->fwd_s += (pre + post) * sys->host_eager_op_fwd_s;
    h->post_sync_s += post * sys->host_eager_op_fwd_s;
    h->bwd_s += nodes * sys->host_eager_op_bwd_s;
}

void mcore_moe_host_add_attention(const system_spec *sys, const model_spec *m,
                                  mcore_moe_host_times *h)
{
    double fwd = sys->host_mcore_attn_fwd_s, bwd = sys->host_mcore_attn_bwd_s;
    if (m->qk_norm) {
        fwd += sys->host_mcore_qk_norm_fwd_s;
        bwd += sys->host_mcore_qk_norm_bwd_s;
    }
    h->fwd_s += fwd;
    h->bwd_s += bwd;
}

/* r's floors from t, its price without them */
static void set_floors(const system_spec *sys, const model_spec *m, const layout *l, recipe *r,
                       const recipe_time *t)
{
    mcore_moe_host_times h = mcore_moe_host_of(sys, l->ep, r->local_experts);
    unfused_host(sys, l, r, &h);
    if (!l->cuda_graph_attn) mcore_moe_host_add_attention(sys, m, &h);
    mcore_moe_gpu g = {t->fwd_s, t->fwd_comm_s, t->bwd_s + t->recompute_s, t->bwd_comm_s, 0,
                       false};
    g.post_sync_s = gpu_post_sync_s(r, &g.recompute);
    double ha = 0, ga = 0, ff, bf;
    if (mcore_clamped_glu_applies(m, l)) act_sync_window(sys, r, true, &ha, &ga);
    else if (flex_second_sync(l, r)) act_sync_window(sys, r, false, &ha, &ga);
    mcore_moe_host_floors_act_sync(&h, &g, ha, ga, &ff, &bf);
    r->host_fwd_s = ff;
    r->host_bwd_s = bf;
}

void mcore_moe_host_pace(const system_spec *sys, const model_spec *m, const layout *l, recipe *r)
{
    r->host_fwd_s = r->host_bwd_s = 0;
    if (!mcore_moe_host_applies(sys, l) || r->local_experts <= 0) return;
    recipe_time t;
    recipe_price(r, &t); /* the GPU's own time (no host floor yet) */
    set_floors(sys, m, l, r, &t);
}

void mcore_moe_host_pace_priced(const system_spec *sys, const model_spec *m, const layout *l,
                                recipe *r, recipe_time *price)
{
    r->host_fwd_s = r->host_bwd_s = 0;
    recipe_price(r, price); /* the GPU's own time (no host floor yet) */
    if (!mcore_moe_host_applies(sys, l) || r->local_experts <= 0) return;
    /* recipe_price_floor adds the serial host time (dtensor_step_host.h) once more below */
    price->fwd_s -= r->host_serial_fwd_s;
    price->bwd_s -= r->host_serial_bwd_s;
    set_floors(sys, m, l, r, price);
    recipe_price_floor(r, price); /* = recipe_price(r) now: the floors are its last step */
}
