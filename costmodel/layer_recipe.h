/*
 * layer_recipe.h — the one list of the operations of a transformer layer (and of the loss head)
 * for a layout, per GPU and micro-batch: every GEMM with its shape per phase, the attention
 * core, every elementwise kernel of the implementation (elementwise.c), every TP/SP, CP and EP
 * collective, FSDP's unit transfers and FSDP2's copies (fsdp_copies.c), the MoE router,
 * dispatch, grouped experts and shared experts, MLA's projections where the model has them;
 * each with the stream it runs on and what hides it.
 *
 * The estimate prices it (estimate.c: layer_cost and head_cost are recipe_layer/recipe_head +
 * recipe_price), the simulator takes its per-layer durations from that price
 * (estimate_stage_costs), and the backend runs it (backend/work.c turns each item into a work
 * item with the item's predicted time). Adding an operation is a change here only.
 *
 * Two levels:
 *  - ops (recipe_op): what the estimate adds up. Each op carries its forward and backward time
 *    as the closed form composes them (a Linear's compute_gemm_fwd_bwd_s; the attention core's
 *    flash model; the grouped experts' up and down GEMMs as one term), so that recipe_price
 *    reproduces estimate_layout()'s sums bit for bit;
 *  - items (recipe_item, only when asked for): the kernels and collectives each op launches, in
 *    the order the backend issues them per phase (forward; recomputed forward; backward), with
 *    their shapes and the cost model's time of each. An item's time is its share of its op's
 *    (the attention core's flash time is split evenly over the batched GEMMs the backend runs
 *    in its place), so items and ops agree up to rounding.
 */
#ifndef PLAN_LAYER_RECIPE_H
#define PLAN_LAYER_RECIPE_H

#include <stdbool.h>

#include "collective.h"
#include "elementwise.h"
#include "layout.h"
#include "model.h"
#include "system.h"

/* Which of the estimate's sums an op's time joins. */
typedef enum {
    RECIPE_GEMM = 0,     /* a Linear (or the routed experts' grouped Linears): fwd, dgrad, wgrad */
    RECIPE_ATTENTION,    /* the attention core (flash, or unfused batched GEMMs and softmax) */
    RECIPE_ELEMENTWISE,  /* one memory-bound kernel of elementwise.c, all its launches */
    RECIPE_FSDP_COPY,    /* FSDP2's compute-stream copies: all-gather copy-out, RS copy-in */
    RECIPE_TP,           /* TP/SP collectives of one block (attention or MLP): enter + leave */
    RECIPE_CP,           /* CP exchange (Megatron ring, or Ulysses all-to-all) */
    RECIPE_EP,           /* MoE dispatch or combine all-to-all */
    RECIPE_FSDP_GATHER,  /* FSDP unit all-gather, FSDP2's copy-in ahead of it, offload upload */
    RECIPE_FSDP_REDUCE,  /* FSDP unit reduce-scatter, offload download */
    RECIPE_KINDS
} recipe_kind;

typedef enum {
    RECIPE_STREAM_COMPUTE = 0, /* in order with the compute kernels (TP/EP collectives too:
                                  Megatron runs them in the compute stream; with
                                  --tp-comm-overlap the TP op's time is what TE's userbuffer
                                  overlap leaves exposed, layer_recipe.c) */
    RECIPE_STREAM_COMM,        /* on a communication stream beside the compute stream */
} recipe_stream;

typedef enum {
    RECIPE_OVERLAP_NONE = 0,  /* nothing hides it: on the critical path */
    RECIPE_OVERLAP_ATTENTION, /* hidden behind the same pass's attention core (CP ring) */
    RECIPE_OVERLAP_LAYER,     /* prefetched behind the neighbouring layer's compute (FSDP: the
                                 gather behind the previous layer, the reduce behind the next
                                 layer's backward; estimate.c stage_cost) */
    RECIPE_OVERLAP_MICROBATCH,/* hidden behind the paired micro-batch's opposite pass (Megatron
                                 --overlap-moe-expert-parallel-comm, combined 1F1B: micro-batch
                                 i+1's forward runs beside micro-batch i's backward, layer by
                                 layer): a forward op behind the backward's compute, a backward
                                 or recompute op behind the forward's */
    RECIPE_OVERLAP_SHARED,    /* hidden behind the same pass's shared-expert MLP (Megatron
                                 --moe-shared-expert-overlap: the shared experts run on another
                                 stream beside the dispatcher's exchange) */
} recipe_overlap;

/* Which block of the layer an op belongs to, for Megatron's EP A2A overlap, which pairs each
 * exchange with one block's compute of the other micro-batch (recipe_price.c): the attention
 * block (with the router: Megatron's pre_dispatch_computation), the MLP / MoE block, or
 * neither (the layer's elementwise and quantize lumps, shared pro rata). */
typedef enum { RECIPE_BLOCK_OTHER = 0, RECIPE_BLOCK_ATTENTION, RECIPE_BLOCK_MLP } recipe_block;
/* An EP op's part in the MoE exchange: its dispatch or its combine (forward direction). */
typedef enum { RECIPE_EP_NONE = 0, RECIPE_EP_DISPATCH, RECIPE_EP_COMBINE } recipe_ep_part;

/* An op's phase: RECIPE_FWD for a forward operation (its backward counterpart, if any, priced
 * in bwd_s); RECIPE_BWD for a backward-only one. Items carry RECIPE_RECOMPUTE too. */
typedef enum { RECIPE_FWD = 0, RECIPE_BWD, RECIPE_RECOMPUTE, RECIPE_PHASES } recipe_phase;

typedef struct {
    const char *name;      /* static string */
    recipe_kind kind;
    recipe_phase phase;
    recipe_stream stream;
    recipe_overlap overlap;
    bool recompute;        /* its forward runs again before the backward (full: every forward
                              op but the FSDP transfers and FSDP2's copies; selective: the
                              attention core) */
    int recompute_launches;/* how many of its forward launches the recompute re-runs: all of
                              them, or fewer where torch's non-reentrant checkpoint stops early
                              (layer_recipe.c recompute_stops_early); 0 when !recompute */
    double fwd_s;          /* forward time (FSDP gather: one gather) */
    double bwd_s;          /* backward time (GEMM: dgrad + wgrad) */
    double fwd_bwd_s;      /* GEMM only: forward + backward as compute_gemm_fwd_bwd_s sums them
                              (the closed form subtracts the forward after summing) */
    int launches;          /* kernels one pass of it launches (elementwise: its count; else 1;
                              host_dispatch.c counts GEMM and attention backward launches) */
    int inner_launches;    /* elementwise: how many of them C++ issues inside a dispatch another
                              began (elementwise_kernel.inner); 0 otherwise */
    double leave_fwd_s;    /* TP op: the part of fwd_s the block's leaving collective (SP
                              reduce-scatter or all-reduce) adds */
    bool recompute_enter_only; /* TP op: the recompute stops early, before the block's last
                                  GEMM, so re-runs the entering all-gather alone */
    double sac_enter_s;    /* TP op under torchtitan's per-op SAC with async TP: the re-run
                              gather's exposed time, fused with the recomputed consumers only
                              (wk; w3), not the forward's whole first GEMM (recipe_tp.c
                              rb_tp_sac_regather); < 0: as in the forward */
    bool recompute_sac_enter; /* set by recipe_set_recompute where sac_enter_s applies */
    bool recompute_stops_here; /* GEMM: torch's non-reentrant checkpoint stops early in this
                                  op's autograd save (its saved inputs are the block's last):
                                  the recompute runs its module's input hook and its Linear's
                                  decomposition up to the GEMM, not the GEMM (host only) */
    recipe_block block;    /* the layer block it belongs to */
    recipe_ep_part ep_part;/* EP op: dispatch or combine */
    double beside_s;       /* eager elementwise op of a layout over several GPUs: what its time
                              (fwd_s or bwd_s, by its phase) holds over the same kernels priced
                              alone (gpu.eager_elementwise_efficiency, measured beside FSDP's
                              collectives, against _alone), as built: recipe_eager_beside
                              keeps recipe.eager_beside_keep of it in fwd_s / bwd_s */
    double host_extra_fwd_s; /* GEMM: host time per forward launch beyond the host's per-launch
                                cost (torchtitan's per-expert loop: cuBLAS's heuristic for the
                                row counts new to the process, expert_loop.h); 0: none */
    double host_extra_bwd_s; /* the same per backward launch */
} recipe_op;

/* Items: what the backend launches. Forms and groups as backend/work.h's. */
typedef enum { RECIPE_ITEM_GEMM = 0, RECIPE_ITEM_STREAM, RECIPE_ITEM_COLL } recipe_item_kind;
typedef enum { RECIPE_FORM_FWD = 0, RECIPE_FORM_DGRAD, RECIPE_FORM_WGRAD } recipe_gemm_form;
typedef enum { RECIPE_GROUP_TP = 0, RECIPE_GROUP_CP, RECIPE_GROUP_EP } recipe_group;

typedef struct {
    char name[32];
    recipe_phase phase;
    int op;                /* index of its op in recipe.op */
    recipe_item_kind kind;
    /* GEMM: C[m,n] in `form` (work.h), batch copies; weight: B is a layer weight */
    recipe_gemm_form form;
    double m, n, k;
    int batch;
    bool weight_operand;
    bool looped;           /* GEMM: the batch's GEMMs are launched one by one (a kernel per
                              expert: torchtitan's per-expert loop, the fsdp2 path's per-expert
                              Linears), as the recipe prices them (layer_recipe.c `kernels`) */
    bool low_precision;    /* GEMM: a Linear the layout runs in its low-precision format (priced
                              so: precision.h says which; the backend runs it in FP8) */
    /* STREAM / COLL */
    double bytes;
    ew_access access;
    bool param_operands;   /* STREAM: FSDP2's one-GPU unit copies (recipe_fsdp.c
                              rb_fsdp_copies): operands the size of a unit's parameters,
                              which the backend takes from its weight and gradient regions, not
                              the activation pool */
    collective_op coll;
    recipe_group group;
    double pred_s;         /* the cost model's time of this one launch */
} recipe_item;

#define RECIPE_MAX_OPS (2 * ELEMENTWISE_MAX + 32)
#define RECIPE_MAX_ITEMS 1024 /* torchtitan's per-expert loop: ~730 backward items at 64 local experts */

typedef struct {
    int n;
    bool overflow;         /* more than RECIPE_MAX_ITEMS: the list is cut */
    recipe_item item[RECIPE_MAX_ITEMS];
} recipe_items;

typedef struct {
    int n_ops;
    double tokens;         /* per GPU (mbs * seq / cp) */
    int local_experts;     /* MoE layer: experts / ep on this GPU */
    double expert_rows;    /* rows per local expert: tokens*k*ep*etp/(E*tp) */
    double host_fwd_s;     /* eager FSDP2: the forward and backward (+ recompute) as the host's */
    double host_bwd_s;     /* issue queue paces them (host_dispatch.h); 0: no floor */
    double host_serial_fwd_s; /* DTensor TP's loss head: the step's host work outside the layers */
    double host_serial_bwd_s; /* that no GPU work overlaps (dtensor_step_host.h), added whole */
    bool host_hides_tp;    /* the floors are a compiled block's host time (host_dispatch.c):
                              the pass's exposed TP collectives run under them */
    double host_rs_copy_in_s; /* FSDP2: the host's own time before the backward's reduce-scatter
                                 copy-in launches (fsdp_rs_copy_in_host_s) */
    double shared_fwd_s, shared_bwd_s; /* MoE layer: the shared experts' GEMMs, the compute
                                          RECIPE_OVERLAP_SHARED hides behind */
    double ep_overlap_slowdown;        /* compute beside an overlapped EP exchange runs this
                                          much slower (recipe_price.c, moe_dispatch.h); 1
                                          without the overlap */
    double ep_overlap_comm_slowdown;   /* and the exchange beside the compute this much */
    double eager_beside_keep;          /* the part of its eager ops' beside_s their times
                                          keep (recipe_eager_beside, eager_beside.c); 1: all */
    bool fsdp_bwd_gather;              /* FSDP re-gathers the unit for its backward
                                          (reshard after forward): the backward's collectives
                                          are that gather and the reduce-scatter */
    recipe_op op[RECIPE_MAX_OPS];
} recipe;

/* One layer's priced sums: the closed form's per-layer figures (estimate_costs.h). */
typedef struct {
    double fwd_s, bwd_s, recompute_s; /* compute */
    double wgrad_s;                   /* the part of bwd_s that is the Linears' weight
                                         gradients (zero-bubble schedules defer it, pp_schedule.h) */
    double tp_s;                      /* exposed TP/SP communication, fwd + bwd + recompute */
    double cp_s;                      /* exposed CP communication */
    double ep_s;                      /* exposed EP all-to-all */
    double ep_unpaired_s;             /* under the EP A2A overlap: what one forward and one
                                         backward run apart (no paired micro-batch) expose
                                         beyond ep_s (recipe_price.c); 0 otherwise */
    double ep_unpaired_fwd_s;         /* the forward's part of it (the step simulator charges
                                         an unpaired forward and backward apart, sim.c) */
    double gather_s;                  /* FSDP all-gather of the unit (one gather), with
                                         FSDP2's copy-in ahead of it */
    double reduce_s;                  /* FSDP reduce-scatter of its gradients */
    double fwd_comm_s, bwd_comm_s;    /* tp_s + cp_s + ep_s split by pass, and the FSDP
                                         contention below */
    double tp_fwd_s, tp_bwd_s;        /* tp_s split by pass (the backward's with the recompute's):
                                         what a host floor hides (recipe_price_floor) */
    /* what FSDP's collectives and the compute they hide behind add to each pass by slowing each
     * other (overlap.h overlap_contended) */
    double fsdp_contention_fwd_s, fsdp_contention_bwd_s;
    /* the host's issue queue (host_dispatch.h): how far the host runs ahead of the GPU over
     * the forward and the backward (GPU time - host issue time, >= 0), and what its floor added
     * to the backward (host issue time - GPU time, >= 0); estimate.c lets the lead of the
     * forward and the loss head hide the backward's excess (stage_layers_cost) */
    double host_lead_fwd_s, host_lead_bwd_s, host_exposed_bwd_s;
    /* fwd_s and bwd_s before the host's floor and serial time (recipe_price_floor): the GPU's
     * own sums, which a Megatron-FSDP layer shares with its DDP form (the search's lower
     * bound, estimate_search.c) */
    double gpu_fwd_s, gpu_bwd_s;
} recipe_time;

/* The ops (and, when items is non-NULL, the items) of one decoder layer; moe: its MLP is the
 * MoE block. Allocates nothing; writes only the entries it fills. */
void recipe_layer(const model_spec *m, const system_spec *sys, const training_spec *t,
                  const layout *l, bool moe, recipe *r, recipe_items *items);

/* recipe_layer of a Megatron-FSDP layout l (no items) from base, the recipe of l under DDP
 * (any recompute setting): the unit's gather and reduce-scatter are the only ops FSDP adds
 * there, after all of base's (the search builds one per shard group from the DDP one). */
void recipe_layer_fsdp_from(const model_spec *m, const system_spec *sys, const training_spec *t,
                            const layout *l, bool moe, const recipe *base, recipe *r);
/* Sets r's recompute flags for l->recompute (recipe_layer calls it; ops start with the flag
 * off) and, with pace, the host's pacing that depends on them: a recipe built by recipe_layer
 * for one recompute setting re-priced under another (the search's layer-cost cache). */
void recipe_set_recompute(const system_spec *sys, const model_spec *m, const layout *l,
                          recipe *r, bool moe, bool pace);

/* The search's forms (estimate_search.c): recipe_layer (without items), recipe_layer_fsdp_from
 * and recipe_set_recompute (with pace), each with r's recipe_price into price. The same
 * recipe and price; a Megatron MoE layer's host pacing prices r without its floors on the way
 * (mcore_moe_host.h), and its price with them follows from that one: priced once, not twice. */
void recipe_layer_priced(const model_spec *m, const system_spec *sys, const training_spec *t,
                         const layout *l, bool moe, recipe *r, recipe_time *price);
void recipe_layer_fsdp_from_priced(const model_spec *m, const system_spec *sys,
                                   const training_spec *t, const layout *l, bool moe,
                                   const recipe *base, recipe *r, recipe_time *price);
void recipe_set_recompute_priced(const system_spec *sys, const model_spec *m, const layout *l,
                                 recipe *r, bool moe, recipe_time *price);

/* The loss head of the last stage: output layer GEMM, elementwise_head's kernels and, under
 * FSDP2, the compute-stream copies of the last stage's root unit. */
void recipe_head(const model_spec *m, const system_spec *sys, const training_spec *t,
                 const layout *l, recipe *r, recipe_items *items);
/* recipe_head with its MTP modules' layer given (mtp_layer: the ops recipe_layer builds for
 * l's last decoder layer kind with l's recompute setting; NULL: built here), for the search's
 * layer-cost cache, which holds it (speed12: building it again was 3-5% of a DeepSeek-V3
 * search). Read only without items. */
void recipe_head_mtp(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const layout *l, const recipe *mtp_layer, recipe *r, recipe_items *items);

/* Eager kernels beside FSDP's collectives (eager_beside.c): a PyTorch layout's eager ops keep
 * the part of their beside_s that the unit's collectives cover of the layer, relative to the
 * step that measured the slower rate (overlap.h OVERLAP_EAGER_BESIDE_REF): r->eager_beside_keep
 * set and each eager op's time (and its items' in `items`, NULL: none) cut to it. Nothing for
 * Megatron, for layers without FSDP's collectives over 2 ranks or more, or beside TP, CP or EP
 * exchanges. Idempotent; before the host's pacing reads the ops (host_dispatch.h), so that its
 * queue runs the times the price sums, and before the recompute's items copy the forward's. */
void recipe_eager_beside(recipe *r, const layout *l, recipe_items *items);

/* The closed form's sums of r's ops (estimate.c's composition, in its order), with the host's
 * issue time as a floor under the compute (r->host_fwd_s, r->host_bwd_s). */
void recipe_price(const recipe *r, recipe_time *out);
/* recipe_price's last step: r's host floors applied to out, its price without them (what
 * recipe_price gives with r->host_fwd_s = r->host_bwd_s = 0, which no other step reads). */
void recipe_price_floor(const recipe *r, recipe_time *out);

/* The time of o's forward that a recompute re-runs: its forward, the share of its launches
 * recompute_launches names (elementwise), or 0. */
double recipe_op_recompute_s(const recipe_op *o);
const char *recipe_kind_name(recipe_kind k);

#endif
