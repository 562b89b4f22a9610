/*
 * estimate_internal.h — the pieces of estimate.c that its search form (estimate_search.c)
 * composes differently: the memory half, a stage's per-micro-batch time from given layer costs,
 * and the step assembled from the worst stage. Not for use outside costmodel/.
 */
#ifndef PLAN_ESTIMATE_INTERNAL_H
#define PLAN_ESTIMATE_INTERNAL_H

#include "estimate.h"
#include "layer_recipe.h"
#include "memory.h"
#include "memory_memo.h"

/* One layer's per-micro-batch times: its recipe (layer_recipe.h) priced. */
typedef recipe_time layer_time;

typedef struct {
    double compute_s, tp_s, cp_s, ep_s, pp_s, fsdp_s;
    double ep_unpaired_s; /* the layers' ep_unpaired_s (layer_recipe.h), summed */
    double ep_unpaired_rest_s; /* estimate_worst_stage: the other stages' ep_unpaired_s summed
                                * (the first, p - 2 copies of a middle one and the last, less
                                * this one), which the step's fill and drain cross once each
                                * (estimate.c ep_unpaired_path_s) */
    int stage;            /* the pipeline rank this is the cost of */
    double fwd_s, bwd_s; /* compute only, for overlap of DP traffic */
    double wgrad_s;      /* the weight-gradient part of bwd_s (pp_schedule.h's W) */
    double fsdp_raw_s;   /* all FSDP traffic, hidden or not (the step terms' overlap) */
    double fsdp_contention_s; /* the part of fsdp_s that is compute slowed beside the FSDP
                               * collectives (recipe_price.c), not communication on its own */
    int layers;          /* transformer layers on the stage */
    double fill_s;       /* estimate_worst_stage, when the last stage is the slowest: the
                          * micro-batch time of the stages the fill and drain run through
                          * (estimate_time_assemble's bubble); 0: the slowest stage's */
} stage_time;

/* The four layer kinds a stage may hold: dense or MoE MLP, in l's precision or as one of
 * Megatron's bf16 first/last layers (precision.h; == the low-precision ones without them). */
typedef struct {
    layer_time dense, moe, dense_bf16, moe_bf16;
} layer_kinds;

/* The kind of global layer i (memory_layer_is_moe, precision_layer_bf16). */
const layer_time *estimate_layer_kind_of(const model_spec *m, const layout *l,
                                         const layer_kinds *k, int i);
/* sum_s plus the FSDP traffic prefetched one unit ahead that stage layers start..start+n-1
 * leave exposed, added layer by layer in layer order (fsdp_prefetch.c): layer j's gather hides
 * behind layer j-1's forward, its backward hides layer j-1's gather (resharded after the
 * forward) and layer j+1's reduce-scatter; at the ends a layer pairs with its own. first_moe:
 * where no layer is bf16, the first MoE layer (start + n: none), else -1; rf: the share of
 * the recompute time in the backward. */
double fsdp_prefetch_exposed_add(const model_spec *m, const layout *l, const layer_kinds *kinds,
                                 int start, int n, int first_moe, double rf, double sum_s);

/* Identity and memory of l into out (zeroed first); no time. */
void estimate_memory_part(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, estimate *out);
/* The model's counts the memory part reads (a search counts them once per model). */
typedef struct {
    double params_total, params_active;
    memory_model_counts memory;
} estimate_model_counts;
void estimate_model_counts_of(const model_spec *m, estimate_model_counts *c);
/* estimate_memory_part with m's counts given: the same figures. */
void estimate_memory_part_counted(const model_spec *m, const estimate_model_counts *c,
                                  const system_spec *sys, const training_spec *t,
                                  const layout *l, estimate *out);
/* estimate_memory_part_counted with the search's memo of per-layer and per-stage memory
 * figures (memory_memo.h, m's): the same figures. known (not NULL): l's memory breakdown,
 * already known to the caller (memory_peak's figures, e.g. a twin's equal ones), taken as is. */
void estimate_memory_part_memo(const model_spec *m, const estimate_model_counts *c,
                               memory_memo *memo, const system_spec *sys,
                               const training_spec *t, const layout *l,
                               const memory_breakdown *known, estimate *out);
/* Stage `stage`'s micro-batch from its layers' costs; head: the loss head's fwd_s/bwd_s
 * (NULL: priced here). */
stage_time estimate_stage_cost(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const layout *l, int stage,
                               const layer_kinds *kinds, const layer_time *head);
double estimate_stage_total(const stage_time *s);
/* estimate_stage_total of stage `stage` without what estimate_stage_cost adds after its
 * decoder layers (the first FSDP unit's exposed traffic, the head, the root units, the
 * pipeline sends: each >= 0). Its sums are a prefix of the same additions in the same order,
 * and IEEE rounding is monotone (x <= y gives fl(x + c) <= fl(y + c), and fl(x + c) >= x for
 * c >= 0), so it is <= estimate_stage_total(estimate_stage_cost(...)) in floating point too:
 * a lower bound that is cheaper than the stage. */
double estimate_stage_layers_total(const model_spec *m, const system_spec *sys,
                                   const training_spec *t, const layout *l, int stage,
                                   const layer_kinds *kinds);
/* The slowest of the candidate stages (first, second, last); kinds/head NULL: priced here. */
stage_time estimate_worst_stage(const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *l,
                                const layer_kinds *kinds, const layer_time *head);
/* The step, its band, throughput and feasibility, from the worst stage (out holds the memory
 * half). */
void estimate_time_assemble(const model_spec *m, const system_spec *sys, const training_spec *t,
                            const layout *l, const stage_time *worst_stage, estimate *out);
/* out->feasible and out->infeasible_reason from its memory and step (estimate_feasible.c);
 * local_params: the parameters this GPU updates, for CPU offload's host memory. */
void estimate_feasibility(const system_spec *sys, const layout *l, double local_params,
                          estimate *out);
/* A dense and (MoE models) an MoE decoder layer's costs, priced (moe = dense otherwise), and
 * the same as bf16 first/last layers where l has them (== the others otherwise). */
void estimate_layer_times(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, layer_kinds *kinds);
void estimate_head_cost(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, double *fwd_s, double *bwd_s);
/* estimate_head_cost with its MTP modules' layer given (layer_recipe.h recipe_head_mtp) */
void estimate_head_cost_mtp(const model_spec *m, const system_spec *sys,
                            const training_spec *t, const layout *l, const recipe *mtp_layer,
                            double *fwd_s, double *bwd_s);

/* The optimizer step of pipeline stage `stage` (estimate_optimizer.c); *local_params: the
 * parameters this GPU updates. */
double estimate_optimizer_local_s(const model_spec *m, const system_spec *sys, const layout *l,
                                  int stage, double *local_params);

#endif
