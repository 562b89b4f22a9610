/*
 * work.h — the translation of a layout into the GPU work of one training step: per layer the
 * forward and backward GEMMs at the TP-sharded shapes, the attention core, the elementwise
 * bytes, the TP/SP and CP collectives, the per-layer data-parallel gathers and reductions
 * (FSDP units, Megatron buckets), the output layer and the optimizer's parameter count.
 *
 * Pure C on top of the cost model (no CUDA header), so that the translation is unit-tested on
 * machines without a GPU and `plan measure --dry-run` can print it. Every item carries the
 * cost model's own prediction for it (compute.h, collective.h), computed with the same
 * formulas estimate.c's layer_cost() and stage_cost() use: the items' predictions summed over
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
#include "estimate.h"
#include "layout.h"
#include "model.h"
#include "status.h"
#include "system.h"

typedef enum {
    WORK_GEMM = 0,   /* C[m,n] = A[m,k] B[k,n] in bf16, fp32 accumulate; `batch` copies */
    WORK_STREAM,     /* memory-bound kernel moving `bytes` (half read, half written) */
    WORK_COLL,       /* NCCL collective of nccl-tests size `bytes` over group `group` */
} work_kind;

/* Which part of the step time an item belongs to (the report's rows). */
typedef enum {
    WC_GEMM = 0,      /* projection and MLP GEMMs, output layer */
    WC_ATTENTION,     /* attention core (batched GEMMs standing in for flash attention) */
    WC_ELEMENTWISE,   /* norms, residuals, activations, rotary, loss */
    WC_TP,            /* TP/SP collectives (exposed: in the compute stream) */
    WC_CP,            /* CP exchange */
    WC_DP,            /* FSDP gathers / reductions, DP gradient sync (comm stream) */
    WC_OPTIMIZER,
    WC_FRAMEWORK,     /* framework copies the cost model does not price (FSDP2 copy-in/out) */
    WC_COUNT
} work_component;

/* Process groups, placed in Megatron's order (tp innermost, then cp, dp, pp). */
typedef enum { GROUP_TP = 0, GROUP_CP, GROUP_DP, GROUP_COUNT } work_group;

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
    /* STREAM / COLL */
    double bytes;
    collective_op op;
    work_group group;
    bool fp32;                 /* collective in fp32 (gradient reductions) */
    double flops;
    double pred_s;             /* the cost model's time for this item */
} work_item;

#define WORK_MAX_ITEMS 64

typedef struct {
    work_item item[WORK_MAX_ITEMS];
    int n;
} work_list;

typedef struct {
    /* Identity */
    layout layout;
    training_spec training;
    int stage;                 /* the pipeline stage measured (the first) */
    int layers;                /* transformer layers on that stage */
    int microbatches;          /* per step, on that stage */
    double tokens;             /* per GPU per micro-batch (mbs * seq / cp) */

    /* One layer's work; the head (output GEMM + loss) when the stage is the last. */
    work_list layer_fwd, layer_bwd; /* bwd includes the recomputed forward */
    work_list head_fwd, head_bwd;
    bool has_head;

    /* Data-parallel traffic per layer unit, on its own stream. */
    bool dp_active;            /* group > 1 and some traffic */
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
    double root_params;        /* embedding + output layer parameters on this stage */

    /* Optimizer: Adam over this GPU's parameters (its shard, or everything under DDP). */
    double optimizer_params;
    bool optimizer_bf16_copy;  /* Megatron: writes the bf16 model copy of the shard */

    /* Group sizes as planned and as measured on the local GPUs. */
    int group_size[GROUP_COUNT];
    layout_group group_place[GROUP_COUNT];

    /* Predictions */
    estimate est;
    double pred_component_s[WC_COUNT]; /* raw (not overlap-adjusted) item sums per step */
} work_plan;

/*
 * Build the work of one step of layout l. Supports dense models with ordinary (GQA) attention;
 * MoE and MLA are rejected with an error saying so. The estimate is computed too (est).
 */
cm_status work_plan_build(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, work_plan *out, char *err, size_t errlen);

/* The local slice of a plan that needs more GPUs than `local_gpus`: how many data-parallel
 * ranks are measured (the tp*cp group must fit). Returns 0 when even one tp*cp group does not
 * fit, with err saying so. *whole is set when the layout fits completely. */
int work_local_dp(const layout *l, int local_gpus, bool *whole, char *err, size_t errlen);

/* Megatron rank order: the global rank of (tp_idx, cp_idx, dp_idx) within pipeline stage 0. */
int work_rank(const layout *l, int tp_idx, int cp_idx, int dp_idx);

const char *work_component_name(work_component c);
const char *work_group_name(work_group g);

/* Sum of pred_s over a list. */
double work_list_pred_s(const work_list *w);

/* Lay out one line per item ("fwd  qkv  gemm m=4096 n=1536 k=4096  pred 0.12 ms"). */
void work_plan_print(const work_plan *w, void *file);

#endif
