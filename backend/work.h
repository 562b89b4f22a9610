/*
 * work.h — the translation of a layout into the GPU work of one training step: per layer the
 * forward and backward GEMMs at the TP-sharded shapes, the attention core, the elementwise
 * bytes, the TP/SP and CP collectives, the per-layer data-parallel gathers and reductions
 * (FSDP units, Megatron buckets), the output layer and the optimizer's parameter count; for
 * MoE layers the router, the expert-parallel dispatch and combine all-to-alls, the grouped
 * expert GEMMs at the cost model's rows per expert and the shared experts; for pipelines the
 * stage split, the 1F1B (or interleaved 1F1B) order of each stage and the activation transfers
 * between stages, with the order one host thread issues them in.
 *
 * Pure C on top of the cost model (no CUDA header), so that the translation is unit-tested on
 * machines without a GPU and `plan measure --dry-run` can print it. A layer's items are the
 * cost model's layer recipe (layer_recipe.h), the list estimate.c prices, each with the
 * recipe's prediction for it (compute.h, collective.h): the items' predictions summed over
 * layers and micro-batches equal estimate_layout()'s compute time (tests/test_backend_work.c
 * checks this), so a measured item can be set beside its predicted value one for one.
 *
 * The attention core is executed by the backend as cuBLAS batched GEMMs (QK^T and PV, causal
 * half: the key dimension halved), not a fused flash kernel; its prediction is the flash model
 * of compute.h split evenly over those GEMMs. That difference is reported, not hidden.
 */
#ifndef PLAN_BACKEND_WORK_H
#define PLAN_BACKEND_WORK_H

#include <stdbool.h>
#include <stddef.h>

#include "collective.h"
#include "elementwise.h"
#include "estimate.h"
#include "schedule.h"
#include "layout.h"
#include "model.h"
#include "status.h"
#include "system.h"

typedef enum {
    WORK_GEMM = 0,   /* C[m,n] = A[m,k] B[k,n] in bf16, fp32 accumulate; `batch` copies */
    WORK_STREAM,     /* memory-bound eager/fused kernel of `bytes`, run with the access
                        pattern PyTorch's kernel for it has (`access`, elementwise.h) */
    WORK_COLL,       /* NCCL collective of nccl-tests size `bytes` over group `group` */
} work_kind;

/* Which part of the step time an item belongs to (the report's rows). */
typedef enum {
    WC_GEMM = 0,      /* projection and MLP GEMMs, output layer */
    WC_ATTENTION,     /* attention core (batched GEMMs standing in for flash attention) */
    WC_ELEMENTWISE,   /* norms, residuals, activations, rotary, loss */
    WC_TP,            /* TP/SP collectives (exposed: in the compute stream) */
    WC_CP,            /* CP exchange */
    WC_EP,            /* MoE dispatch / combine all-to-alls (exposed: in the compute stream) */
    WC_PP,            /* pipeline send/recv of activations and their gradients */
    WC_DP,            /* FSDP gathers / reductions, DP gradient sync (comm stream) */
    WC_OPTIMIZER,
    WC_FRAMEWORK,     /* FSDP2's copies around its collectives (fsdp_copies.h): copy-in,
                         copy-out, reduce-scatter copy-in, of the layer units and the root;
                         on one GPU the recipe's items for them (work_item.param_operands) */
    WC_COUNT
} work_component;

/* Process groups, placed in Megatron's order (tp innermost, then cp, dp, pp); the expert groups
 * are carved out of a stage's tp*cp*dp ranks with etp innermost, then ep, then expert-dp
 * (megatron/core/parallel_state.py). Pipeline transfers have their own communicators. */
typedef enum { GROUP_TP = 0, GROUP_CP, GROUP_DP, GROUP_EP, GROUP_EDP, GROUP_COUNT } work_group;

/* GEMM operand forms, as a framework's Linear runs them (row-major names; every form costs
 * 2mnk FLOPs):
 * FWD   C[m,n] = A[m,k] B[n,k]^T   (y = x W^T: m tokens, n out features, k in features)
 * DGRAD C[m,n] = A[m,k] B[k,n]     (dx = dy W: m tokens, n in features, k out features)
 * WGRAD C[m,n] = A[k,m]^T B[k,n]   (dW = dy^T x: m out, n in, k tokens)
 * Attention: scores = Q K^T is FWD, out = P V is DGRAD, dV = P^T dO and dK = dS^T Q are WGRAD. */
typedef enum { GEMM_FWD = 0, GEMM_DGRAD, GEMM_WGRAD } work_gemm_form;

typedef struct {
    work_kind kind;
    work_component component;
    char name[32];
    /* GEMM */
    work_gemm_form form;
    double m, n, k;
    int batch;
    bool weight_operand;       /* B is a layer weight (FSDP: read from the gathered unit) */
    bool looped;               /* the batch runs as `batch` GEMMs launched one by one (the
                                  recipe's per-expert kernels, recipe_item.looped) */
    bool fp8;                  /* runs in FP8 (e4m3 operands, bf16 C): the recipe's low-precision
                                  Linears of a --precision fp8 layout (layer_recipe.h) */
    bool fp8_block;            /* the FP8 GEMM is blockwise (--fp8-recipe blockwise): A per 1x128
                                  block, B per 128x128 block (fwd, dgrad) or 1x128 (wgrad) */
    /* STREAM / COLL */
    double bytes;
    ew_access access;          /* STREAM: the kernel's pattern and operands (elementwise.h) */
    bool param_operands;       /* STREAM: operands the size of a unit's parameters (FSDP2's
                                  one-GPU copies, recipe_item.param_operands): read from the
                                  weight region, written into the gradient region */
    collective_op op;
    work_group group;
    bool fp32;                 /* collective in fp32 (gradient reductions) */
    double flops;
    double pred_s;             /* the cost model's time for this item */
    double host_s;             /* the host's issue time before it, as the cost model's issue
                                  queue charges it (host_dispatch_host_of: its op's host time in
                                  this pass, shared evenly over the op's items); 0 where no host
                                  work is priced. plan measure spins it (--host-pace) */
    bool host_sync;            /* after it the host waits for the GPU, where the cost model's
                                  issue queue does (host_dispatch_host.sync: torchtitan EP's
                                  split sizes copied to the host after the router); paced
                                  steps only */
} work_item;

/* FSDP2: one item per eager kernel launch (~60 backward + recompute); torchtitan's per-expert
 * loop (expert_loop.h) launches 3 zero fills, 3 slice copies and 3 adds per local expert in the
 * backward: 573 items at 64 local experts (Qwen3-30B-A3B at EP 2) */
#define WORK_MAX_ITEMS 1024
#define WORK_MAX_STAGES 64

typedef struct {
    work_item item[WORK_MAX_ITEMS];
    int n;
    double host_lead_s;        /* host time at the list's start that no item of it carries
                                  (DTensor hooks, an op with host time but no item in this pass) */
} work_list;

typedef struct {
    /* Identity */
    layout layout;
    training_spec training;
    int stage;                 /* the stage the per-component figures are for: the estimate's
                                  slowest (0 without a pipeline) */
    int layers;                /* transformer layers on that stage (dense + MoE) */
    int moe_layers;            /* of which MoE layers */
    int microbatches;          /* per step, on that stage */
    double tokens;             /* per GPU per micro-batch (mbs * seq / cp) */

    /* One layer's work; the head (output GEMM + loss) runs on the last stage. */
    work_list layer_fwd, layer_bwd; /* dense layers; bwd includes the recomputed forward */
    work_list head_fwd, head_bwd;   /* always built; has_head: `stage` is the last stage */
    bool has_head;

    /* MoE layers (model_is_moe): router, EP dispatch/combine, grouped experts, shared experts.
     * Layers first_moe_layer.. are MoE (DeepSeek's dense-first layers stay dense). */
    bool moe;
    int first_moe_layer;       /* global index; == model layers for dense models */
    work_list moe_fwd, moe_bwd;
    int local_experts;         /* experts / ep on each GPU */
    double expert_rows;        /* rows per local expert per micro-batch: tokens*k*ep*etp/(E*tp) */
    double loop_new_share;     /* torchtitan's per-expert loop under --moe-new-counts S: the share
                                  of each pass's per-expert row counts plan measure issues new to
                                  the process (work_rows.h), so that cuBLAS pays its heuristic for
                                  the new GEMM shapes itself; the looped items' host_s then leave
                                  out the model's price for them (host.gemm_new_shape_s). 0:
                                  every expert at expert_rows */
    double gemm_new_shape_s;   /* the model's price of a new shape (host.gemm_new_shape_s), for
                                  the report beside what cuBLAS took */
    double moe_layer_params;   /* one MoE layer's parameters on this GPU (after tp and ep) */
    double moe_dense_params;   /* of which attention, norms, router, shared experts */
    double moe_expert_params;  /* of which routed experts (reduced over the expert-dp group) */

    /* Pipeline: stage s holds stage_layers[s] layers (layout_stage_layers); interleaved (vpp >
     * 1) stage s holds virtual stages k = c*pp + s, each chunk_layers layers. */
    int pp, vpp;
    int stage_layers[WORK_MAX_STAGES];
    int chunk_layers;          /* vpp > 1: layers per virtual stage; else 0 */
    double p2p_bytes;          /* one transfer of a micro-batch's activations (per GPU) */
    double p2p_pred_s;         /* its predicted time (collective.h send_recv over the pp group) */
    double stage_optimizer_params[WORK_MAX_STAGES]; /* Adam's parameters on each stage */
    double stage_root_params[WORK_MAX_STAGES];      /* embedding / output layer on each stage,
                                                       per GPU (sharded over tp) */

    /* Data-parallel traffic per layer unit, on its own stream. */
    bool dp_active;            /* group > 1 and some traffic, or torch FSDP2 (its copies run
                                  around the collectives, at world size 1 too) */
    bool fsdp2_copy_items;     /* FSDP2 on one GPU: its compute-stream copies are the lists'
                                  items (recipe_fsdp.c rb_fsdp_copies), so the unit
                                  traffic around the layers runs none (no collective either) */
    collective_op gather_op;   /* ALL_GATHER of bf16 params (FSDP, distributed optimizer) */
    double gather_bytes;       /* nccl size (the gathered output), 0: none */
    bool gather_each_micro;    /* FSDP: every micro-batch; distopt: once per step */
    bool gather_in_bwd;        /* FSDP reshard_after_forward: gather again for backward */
    collective_op reduce_op;   /* REDUCE_SCATTER (FSDP, distopt) or ALL_REDUCE (DDP) */
    double reduce_bytes;       /* nccl size (the full gradient of the unit) */
    bool reduce_fp32;
    bool reduce_each_micro;    /* FSDP2 reduces every micro-batch; Megatron the last one */
    bool fsdp;                 /* weights come from the gathered unit buffers */
    double layer_params;       /* one layer's parameters on this GPU (after tp) */
    double root_params;        /* embedding + output layer parameters on this stage (per GPU) */

    /* Optimizer: Adam over this GPU's parameters (its shard, or everything under DDP). */
    double optimizer_params;
    bool optimizer_bf16_copy;  /* Megatron: writes the bf16 model copy of the shard */
    double optimizer_extra_bytes_per_param; /* torch's clip + AdamW move more bytes per
                                               parameter than the fused Adam kernel's 28
                                               (estimate.c optimizer_cost): the rest, run as
                                               fp32 read + write passes */

    /* Group sizes as planned and as measured on the local GPUs. */
    int group_size[GROUP_COUNT];
    layout_group group_place[GROUP_COUNT];

    /* The host's issue time (issue 14): what the cost model's host terms give each item
     * (work_item.host_s), each layer unit's FSDP2 launches, the loss head's serial host work and
     * the optimizer's, so that plan measure can issue the step at the pace the host would.
     * [0] dense, [1] MoE layers. host_priced: some host term is non-zero for this layout. */
    bool host_priced;
    bool host_pace;               /* plan measure issues at that pace: host_priced, unless
                                     --host-pace off (the GPU alone) */
    double host_gather_fwd_s[2];  /* before a layer's forward items (FSDP2's all-gather) */
    double host_gather_bwd_s[2];  /* before its backward items (the re-gather) */
    double host_reduce_s[2];      /* after its backward items (chunk_cat, reduce-scatter) */
    double host_pre_fwd_s;        /* before a micro-batch's first layer (DTensor TP) */
    double host_tail_bwd_s;       /* after a micro-batch's backward (DTensor TP) */
    double host_optimizer_s[WORK_MAX_STAGES];     /* clip + AdamW's host time, a floor under
                                                     the optimizer's GPU time (optimizer_host.h) */
    double host_optimizer_pre_s[WORK_MAX_STAGES]; /* DTensor TP's AdamW dispatch, before its
                                                     kernels (dtensor_step_host.h) */
    bool host_sync_clip; /* the host waits for the GPU before the clip's scaling and the
                            optimizer's host work: the torchtitan layouts' real step
                            (bench/realruns/prun_step.py clip: coef from float(norm)) */

    /* Predictions */
    estimate est;
    double pred_component_s[WC_COUNT]; /* raw (not overlap-adjusted) item sums per step */
    double pred_copies_compute_s;      /* of pred_component_s[WC_FRAMEWORK], the compute
                                          stream's (copy-out, reduce-scatter copy-in; on one GPU
                                          the copy items), which the estimate's compute time
                                          holds */
} work_plan;

/*
 * Build the work of one step of layout l. Supports dense and MoE models with ordinary (GQA)
 * attention, any pipeline (pp <= WORK_MAX_STAGES, vpp >= 1); MLA and an expert tensor-parallel
 * size other than tp are rejected with an error saying so. The estimate is computed too (est).
 */
cm_status work_plan_build(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, work_plan *out, char *err, size_t errlen);

/* The local slice of a plan that needs more GPUs than `local_gpus`: how many data-parallel
 * ranks are measured (the tp*cp group must fit). Returns 0 when even one tp*cp group does not
 * fit, with err saying so. *whole is set when the layout fits completely. */
int work_local_dp(const layout *l, int local_gpus, bool *whole, char *err, size_t errlen);

/* Pipeline stages run on the local GPUs: pp when tp*cp*pp GPUs are there (the whole pipeline,
 * with as many dp ranks as fit), else 1 (stage 0 alone, the slice of work_local_dp). */
int work_local_pp(const layout *l, int local_gpus);

/* Megatron rank order: the global rank of (tp_idx, cp_idx, dp_idx) within pipeline stage 0. */
int work_rank(const layout *l, int tp_idx, int cp_idx, int dp_idx);

/* ---- pipeline schedule ------------------------------------------------------------------ */

/* One forward or backward of a micro-batch through one chunk (virtual stage) of a stage. */
typedef schedule_op work_pp_op;

/*
 * The order stage s (of p) runs its 2*m*v ops in: Megatron-LM's 1F1B (v == 1: p-s-1 warm-up
 * forwards, one forward one backward alternately, then the cool-down backwards) or interleaved
 * 1F1B (v > 1), the same orders as the step simulator (costmodel/sim.c). out holds 2*m*v.
 * Returns the number of ops.
 */
int work_pp_schedule(int p, int v, int m, int s, work_pp_op *out);

/* Where an op's input comes from and its output goes: stage (-1: none), and the transfer's
 * direction (0: activations forward, 1: gradients backward). */
typedef struct {
    int from_stage, to_stage;
    int dir;
} work_pp_link;

work_pp_link work_pp_links(int p, int v, int s, const work_pp_op *op);

/* One entry of the host's issue order: stage, and the index of the op in its schedule. */
typedef struct {
    int stage, index;
} work_pp_issue;

/*
 * The order one host thread issues every stage's ops in, when every GPU's work goes onto its own
 * streams and cross-stage dependencies are CUDA events: an op is issued once its input transfer
 * has been issued (the event exists) and its output has a free receive slot (the receiver has
 * issued the op that read the slot's previous content; each receiver keeps `nslots` buffers per
 * direction). Transfers into a stage arrive in the order that stage consumes them (checked).
 * out holds 2*m*v*p entries. Returns how many were written: all of them, or -1 when the
 * schedule cannot proceed with nslots buffers, -2 when a transfer would be consumed out of order.
 */
int work_pp_issue_order(int p, int v, int m, int nslots, work_pp_issue *out);

/* The fewest receive slots with which work_pp_issue_order completes (at most m*v). */
int work_pp_slots(int p, int v, int m);

/* First global layer and layer count of chunk c of stage s. */
int work_chunk_first_layer(const work_plan *w, int s, int c);
int work_chunk_layer_count(const work_plan *w, int s, int c);

const char *work_component_name(work_component c);
const char *work_group_name(work_group g);

/* Sum of pred_s over a list. */
double work_list_pred_s(const work_list *w);
/* The host issue time a list carries (host_lead_s + its items' host_s), and one layer's per
 * micro-batch with its unit's FSDP2 launches: forward, backward (recompute included). */
double work_list_host_s(const work_list *w);
void work_host_layer_s(const work_plan *w, bool moe, double *fwd_s, double *bwd_s);

/* Lay out one line per item ("fwd  qkv  gemm m=4096 n=1536 k=4096  pred 0.12 ms"). */
void work_plan_print(const work_plan *w, void *file);

#endif
