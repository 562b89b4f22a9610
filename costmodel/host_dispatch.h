/*
 * host_dispatch.h — the host (CPU) side of an eager PyTorch step (issue 14): every kernel of an
 * eager model is issued by Python and the dispatcher (module call, autograd recording, the
 * operator's dispatch, FSDP2's hooks), and the GPU cannot run a kernel before the host has
 * issued it. When a pass's kernels are short (small models, few tokens) the host, not the GPU,
 * sets the pace: a pass takes max(GPU time, launches x host time per launch).
 *
 * The host time per launch is the system's host.eager_launch_s: measured as the forward +
 * backward time of a real Hugging Face FSDP2 step at a shape where the GPU work is negligible,
 * divided by the CUDA kernels it launched (bench/realruns/launch_overhead.py). It applies to
 * the eager FSDP2 implementations (hf, native); torch.compile'd blocks issue a few fused
 * kernels per block from generated code and are left out, and so is Megatron (TE's fused
 * kernels, large per-kernel work). Except a compiled DTensor TP step (torchtitan, compile, TP >
 * 1): its blocks keep FSDP2's hooks and the compiled call's DTensor wrapping on the host, and at
 * the real runs' shapes that host time sets the step (bench/results/tp11_2026-11-28): each block
 * pass is floored at the measured host time of one compiled block (host.compiled_dtensor_*),
 * the head, clip and optimizer stay priced as eager DTensor work.
 */
#ifndef PLAN_HOST_DISPATCH_H
#define PLAN_HOST_DISPATCH_H

#include <stdbool.h>

#include "layer_recipe.h"
#include "layout.h"
#include "model.h"
#include "system.h"

/* Kernels one micro-batch of r's ops launches in the forward, the backward and the recomputed
 * forward: a Linear 1 forward and 2 backward (dgrad, wgrad); the attention core 1 forward and
 * 4 backward (cuDNN's flash backward: memset, dot(dO, O), the backward kernel, dQ to bf16: the
 * kernel list in bench/realruns/results/launch-h100.json); an elementwise op its count; FSDP
 * copies and collectives one each per pass they run in. */
void host_dispatch_launches(const recipe *r, const layout *l, double *fwd, double *bwd,
                            double *recompute);
/* The same counts for one op (host_dispatch_launches is their sum over r's ops). */
void host_dispatch_op_launches(const recipe_op *o, const layout *l, double *fwd, double *bwd,
                               double *recompute);

/* Parameter tensors of one decoder layer as the model code holds them (q, k, v, o, two norms,
 * Qwen3's q/k norms, the MLP's or the MoE block's weights): FSDP2's copy-out per tensor, and the
 * per-tensor host work of an optimizer over them. moe: the layer's MLP is the MoE block (its
 * router and two 3D expert tensors, transformers 5 / torchtitan). */
double host_dispatch_layer_tensors(const model_spec *m, bool moe);

/* Whether the host floor applies to l on sys (eager FSDP2 and a measured host time; not under
 * torchtitan's CUDA graphs, cuda_graphs.h). */
bool host_dispatch_applies(const system_spec *sys, const layout *l);

/* Sets r->host_fwd_s and r->host_bwd_s: the forward and the backward (with the recompute's
 * forward) of r's ops paced by the host's issue queue (host_dispatch.c); recipe_price() takes
 * them as a floor under the compute. layer: r is a decoder layer (an FSDP unit of its own;
 * moe: its MLP is the MoE block), else the loss head. Zeros where host_dispatch_applies() is
 * false. Called by recipe_layer() and recipe_head() once r's ops are complete. */
void host_dispatch_pace(const system_spec *sys, const model_spec *m, const layout *l, recipe *r,
                        bool layer, bool moe);

/* The host's issue time of one micro-batch of r, op by op: what host_dispatch_pace's queue
 * charges the host for each op's launches (its kernels, the Linear modules behind a merged GEMM
 * op, the attention output's copy, DTensor dispatches) in each pass, recorded by the same queue
 * walk (one source of truth; the backend's --host-pace spins these before each item). Where the
 * queue is host-bound (the GPU never catches up), the sum over a pass equals r->host_fwd_s (the
 * forward: pass FWD + gather_fwd_s) or r->host_bwd_s (RECOMPUTE + BWD + gather_bwd_s +
 * reduce_s); the head's sums equal them always. */
typedef struct {
    double op_s[RECIPE_PHASES][RECIPE_MAX_OPS]; /* op i's launches in pass p (FWD, RECOMPUTE,
                                                   BWD), r's op order */
    double pass_s[RECIPE_PHASES]; /* host time of a pass not tied to one op (DTensor TP's norm
                                     hooks; the head's hooks and loss) */
    double gather_fwd_s;  /* FSDP2's all-gather launches of the layer's unit before its forward:
                             copy-in, one cast per tensor on one GPU, the collective, the copy-out
                             per tensor */
    double gather_bwd_s;  /* the same before its backward (reshard after forward) */
    double reduce_s;      /* the reduce-scatter's: chunk_cat's host work, copy-in, collective */
    double serial_fwd_s, serial_bwd_s; /* the head: r->host_serial_fwd_s, host_serial_bwd_s */
    bool sync[RECIPE_PHASES][RECIPE_MAX_OPS]; /* the host waits for the GPU after op i's launches
                                                 in pass p (torchtitan EP's split sizes copied
                                                 to the host after the router, q_sync) */
} host_dispatch_host;

/* Fills out for r as host_dispatch_pace prices it (layer, moe as there). Returns false (out all
 * zeros) where the host's issue queue does not pace r: host_dispatch_applies() is false, or a
 * Megatron MoE layer (mcore_moe_host.h, priced per layer, not per op). */
bool host_dispatch_host_of(const system_spec *sys, const model_spec *m, const layout *l,
                           const recipe *r, bool layer, bool moe, host_dispatch_host *out);

#endif
