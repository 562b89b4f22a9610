/*
 * estimate_costs.h — the pieces estimate_layout() composes, for callers that compose them
 * differently: the step simulator (sim.c) lays them on per-stage timelines instead of adding
 * them up in closed form.
 *
 * Every figure comes from the same functions the closed form uses (the priced layer recipe of
 * layer_recipe.h, stage_cost and the data-parallel and optimizer terms of estimate.c), so the
 * two never disagree about what a layer, a send or a collective costs, only about how the
 * pieces overlap. estimate_layout()'s results do not depend on anything here.
 */
#ifndef PLAN_ESTIMATE_COSTS_H
#define PLAN_ESTIMATE_COSTS_H

#include "estimate.h"

/* One transformer layer, one micro-batch, one GPU. */
typedef struct {
    double fwd_s;         /* forward compute: GEMMs, attention core, elementwise */
    double bwd_s;         /* backward compute */
    double recompute_s;   /* forward work recomputed in the backward (selective or full) */
    double wgrad_s;       /* the weight-gradient GEMMs within bwd_s (pp_schedule.h's W) */
    double fwd_comm_s;    /* exposed TP/SP, CP and EP communication of the forward */
    double bwd_comm_s;    /* the same in the backward (with the recomputed forward's) */
    double tp_s, cp_s, ep_s; /* the exposed communication by dimension, forward + backward */
    double ep_unpaired_fwd_s, ep_unpaired_bwd_s; /* Megatron's EP A2A overlap: what a forward
                                  (backward) run without a partner micro-batch exposes beyond
                                  fwd_comm_s (bwd_comm_s) (recipe_price.c; estimate.c
                                  ep_unpaired_path_s charges them, sim.c runs them) */
    double gather_s;      /* FSDP all-gather of the layer's parameters (0 without FSDP) */
    double reduce_s;      /* FSDP reduce-scatter of its gradients (0 without FSDP) */
    double dense_params;  /* its parameters on this GPU reduced over the dp*cp group */
    double expert_params; /* those reduced over the expert data-parallel group */
    double lp_dense_params, lp_expert_params; /* the Linear weights among them all-gathered in
                                                 low precision (--fp8-param-gather) */
} estimate_layer_costs;

/* One pipeline stage (all of its virtual chunks), per micro-batch unless said otherwise. */
typedef struct {
    int layers;           /* transformer layers on the stage */
    int first_layer;      /* global index of its first layer (vpp 1; see estimate_costs) */
    int moe_layers;       /* layers among them with an MoE MLP */
    double fwd_s, bwd_s;  /* compute; bwd_s includes recompute; the last stage has the head */
    double tp_s, cp_s, ep_s; /* exposed communication */
    double fsdp_s;        /* exposed FSDP traffic under the closed form's one-unit prefetch */
    double pp_s;          /* p2p the closed form charges: 2 * vpp sends */
    double total_s;       /* the closed form's per-micro-batch time of this stage */
    double dense_params, expert_params; /* parameters on one GPU (memory_stage_params) */
    double lp_dense_params, lp_expert_params; /* memory_stage_lp_params */
    double grad_sync_s;   /* DP gradient reduction of all of them, one collective per group */
    double param_sync_s;  /* distributed optimizer: all-gather of the updated parameters */
    double optimizer_s;   /* optimizer step on this stage */
} estimate_stage;

typedef struct {
    int pp, vpp, microbatches;
    int layers;               /* transformer layers in the model */
    estimate_layer_costs dense; /* a layer with a dense MLP */
    estimate_layer_costs moe;   /* a layer with an MoE MLP (== dense for dense models) */
    int first_moe_layer;      /* layers at or after this index are MoE (== layers if none) */
    /* Megatron's bf16 first/last layers (precision.h): layers below bf16_layers_start and from
     * layers - bf16_layers_end on cost these (== dense/moe when there are none) */
    estimate_layer_costs dense_bf16, moe_bf16;
    int bf16_layers_start, bf16_layers_end;
    double head_fwd_s, head_bwd_s; /* output layer and loss, on the last stage */
    /* FSDP2's compute-stream copies of the first stage's root unit (the embedding) with a
     * pipeline, per micro-batch (estimate.c root_copies_cost): 0 without FSDP2 or pipeline */
    double first_root_fwd_s, first_root_bwd_s;
    /* FSDP root unit of the first and of the last stage (with one stage: one unit, [0]): one
     * all-gather, and one reduce-scatter, per micro-batch; exposed (estimate.c root_traffic). */
    double root_gather_s[2], root_reduce_s[2];
    double p2p_s;             /* one send of a micro-batch's activations or gradients */
    int worst_stage;          /* the stage the closed form times every stage as */
} estimate_costs;

/* The costs of global layer i (dense or MoE, low precision or bf16). */
const estimate_layer_costs *estimate_costs_layer(const estimate_costs *c, int i);

/*
 * Fill costs, and stages[0 .. l->pp-1] when stages is non-NULL (the caller owns it). Checks
 * the layout like estimate_layout(); err names the broken rule.
 */
cm_status estimate_stage_costs(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const layout *l, estimate_costs *costs,
                               estimate_stage *stages, char *err, size_t errlen);

/* DP gradient reduction of dense_params + expert_params parameters' gradients (DDP all-reduce,
 * distributed-optimizer reduce-scatter) and, in *gather_s, the distributed optimizer's all-gather
 * of the updated parameters (the lp_* Linear weights among them in low precision with
 * --fp8-param-gather, 0 and 0 otherwise). 0 under FSDP, whose traffic is per layer. */
double estimate_dp_sync_s(const system_spec *sys, const training_spec *t, const layout *l,
                          double dense_params, double expert_params, double lp_dense_params,
                          double lp_expert_params, double *gather_s);

/* Optimizer step of pipeline stage `stage`. */
double estimate_optimizer_s(const model_spec *m, const system_spec *sys, const layout *l,
                            int stage);

#endif
