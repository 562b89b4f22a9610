/*
 * estimate.h — the prediction for one layout: per-GPU memory of the fullest pipeline stage and
 * the step-time breakdown, with FLOPs, MFU/HFU, tokens/s and feasibility.
 *
 * estimate_layout() is the one entry point the planner, bench, report and backend call. It is
 * closed-form (no per-micro-batch loop), so the planner can evaluate millions of layouts.
 */
#ifndef PLAN_ESTIMATE_H
#define PLAN_ESTIMATE_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"
#include "system.h"
#include "memory.h"

typedef struct {
    double step_s;
    double compute_s;          /* GEMMs, attention, elementwise, recompute, on the slowest stage */
    double comm_exposed_s;     /* communication not hidden behind compute, all dimensions */
    double bubble_s;           /* pipeline fill and drain */
    double optimizer_s;        /* the optimizer step (and offload transfers) */
    double tp_s, cp_s, ep_s, pp_s, dp_s; /* exposed communication by dimension */
    double microbatch_s;       /* slowest stage, one micro-batch forward + backward */
    double step_sd_s;          /* 1-sigma band from the calibration fits' covariance (0 if none) */
    double gemm_headroom_rate; /* GEMM rate over the sustained one from the step's power headroom
                                  (gemm_headroom.h); 0: not priced (no fit, or none to gain) */
} time_breakdown;

/* The step simulator's figures for the same layout (costmodel/sim.h), when it ran. They add
 * up: step_s = compute_busy_s + bubble_s + grad_sync_s + optimizer_s + param_gather_s. */
typedef struct {
    double step_s;
    double compute_busy_s; /* the busiest stage's compute stream: forward and backward (with the
                              exposed TP/CP/EP and FSDP waits inside them) and blocking sends */
    double bubble_s;       /* that stage's idle time until the last backward ends anywhere */
    double grad_sync_s;    /* gradient reduction still running after the last backward */
    double optimizer_s;    /* the slowest stage's optimizer step */
    double param_gather_s; /* parameter all-gather after the optimizer, where not overlapped */
    int critical_stage;    /* the busiest stage */
} time_simulated;

typedef struct {
    char model_name[64];
    double params_total, params_active;
    layout layout;
    training_spec training;
    int gpus;
    int microbatches;
    memory_breakdown memory;
    time_breakdown time;
    double model_flops_per_step;
    double hardware_flops_per_step;
    double tokens_per_s;       /* whole job */
    double mfu, hfu;           /* fractions of the dense bf16 peak */
    bool feasible;
    char infeasible_reason[256];
    bool simulated;            /* time_sim is filled (sim_estimate); estimate_layout leaves false */
    time_simulated time_sim;
} estimate;

/* Is the step time a number? Not for a plan with a group that crosses nodes of a system
 * without an inter-node network: collective.c prices such a transfer COLL_UNPRICED_S, the plan
 * is infeasible (infeasible_reason says why), and printers show "infeasible: <reason>" in place
 * of the step time and the figures derived from it (issue 18). */
bool estimate_time_priced(const estimate *e);

/* Check the layout (err names the broken rule) and fill out. A layout that is valid but does
 * not fit in memory is returned with feasible = false and the reason, status CM_OK. */
cm_status estimate_layout(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, estimate *out, char *err, size_t errlen);

/*
 * The search's form (estimate_search.c): n layouts that differ only in Megatron's overlap knobs
 * (tp_comm_overlap, overlap_grad_reduce, overlap_param_gather; ls[0] is checked whole, the
 * others for the knobs' rules; n = 1: one layout), each estimated into outs[i] with the same
 * figures estimate_layout gives, but:
 *  - a variant that does not fit in memory is not timed (outs[i] holds identity and memory,
 *    feasible false, no reason text, zero time: call estimate_layout for it when it is shown);
 *  - with a cache (estimate_cache_new, one per thread; m, sys and t's shape must stay the same
 *    while it is used) the decoder layers' costs are shared across recompute, DDP/distributed-
 *    optimizer and DP-overlap variants;
 *  - with prune_above_s > 0, when a lower bound on every fitting variant's step time exceeds
 *    it, nothing is timed and *how is ESTIMATE_PRUNED (the layouts fit; the outs of the first
 *    variant of each tp_comm_overlap value hold memory only, the others are left as they
 *    were: estimate_search_share_memory fills them, for a caller that reads them).
 *    prune_above_s = ESTIMATE_PRUNE_ALL_S: every variant that estimate_search_prunable allows
 *    is taken as over it, no bound taken (a caller that needs no time: planner/search.c
 *    search_options.fits_only); one it does not allow is timed as always.
 * The caller has checked the training spec (training_check) once.
 */
typedef struct estimate_cache estimate_cache;
#define ESTIMATE_PRUNE_ALL_S 1e-300
estimate_cache *estimate_cache_new(void);
/* The same, sized for a search of about `layouts` layouts (its table of priced layers). */
estimate_cache *estimate_cache_new_for(long layouts);
/* Its tables grown (their entries kept) to the sizes estimate_cache_new_for(layouts) picks,
 * for a search that learns its length as it goes (planner/search.c); never shrunk. */
void estimate_cache_expect(estimate_cache *c, long layouts);
/* skip true: estimate_layout_search may leave a pruned layout's memory unmade where it knows
 * the layout fits without it (a twin with no less memory fits, estimate_search.c twin_fits),
 * and where no variant fits, fills only the first variant of each tp_comm_overlap value (the
 * others: feasible false, nothing else written; speed13): for a caller that reads no memory of
 * pruned layouts nor of a layout that fits nowhere but its first variant's.
 * false (a new cache's): every pruned layout's memory is made, as documented below. */
void estimate_cache_skip_pruned_memory(estimate_cache *c, bool skip);
/* first true (speed23): estimate_layout_search takes the lower bound of a layout's step before
 * its memory, and where it exceeds prune_above_s for every variant (and for every full-
 * recompute layer-count and optimizer-offload try planner/search.c's memory knobs would make
 * of it) answers ESTIMATE_BOUNDED without the memory (estimate_search_bound.c
 * estimate_search_bounded_first says why no plan a search keeps can change): for a search
 * that keeps no layout which cannot beat the threshold, visits none and does not count the
 * feasible ones exactly. false (a new cache's): memory first, as documented below. */
void estimate_cache_bound_first(estimate_cache *c, bool first);
/* speed24: with skip_pruned_memory (above), a layout whose memory exceeds the device by more
 * than over_bytes (estimate_cache_unfit_stop_over; negative: 0) is read for nothing else: its
 * breakdown may stop at the first candidate stage over by that much (the rest unmade; the
 * verdict and "over by more than over_bytes" are the whole's; estimate_search_bound.c
 * estimate_search_memory_verdict_only says where). whole true: never stopped. */
void estimate_cache_unfit_memory_whole(estimate_cache *c, bool whole);
void estimate_cache_unfit_stop_over(estimate_cache *c, double over_bytes);
/* The lower bound on l's step that estimate_cache_bound_first prunes by (the larger where a
 * Megatron-FSDP layout has two), its layer costs priced where c does not hold them; -1 where
 * it takes none of l. Never above the step estimate_layout gives l, nor that of l with fewer
 * full-recompute layers (recompute_layers >= 1) or an optimizer-offload fraction
 * (tests/test_bound_first.c checks it over many layouts). */
double estimate_search_first_bound_s(const model_spec *m, const system_spec *sys,
                                     const training_spec *t, const layout *l, estimate_cache *c);
/* several true: the layouts come each with its precisions in turn (a search of more than one
 * format), so estimate_layout_search checks the rules that read no precision field once a
 * layout (layout_check_base) and the precision rules per format; false (a new cache's): the
 * whole layout_check each time, the cheaper for a one-format search (speed12). The verdicts
 * are the same. */
void estimate_cache_check_per_layout(estimate_cache *c, bool several);
void estimate_cache_free(estimate_cache *c);
/* How many layer recipes the cache built and how many lookups it answered without building. */
void estimate_cache_counts(const estimate_cache *c, long *builds, long *hits);

typedef enum {
    ESTIMATE_UNTIMED = 0, /* nothing fits in memory */
    ESTIMATE_TIMED,       /* the fitting variants are estimated whole */
    ESTIMATE_PRUNED,      /* they fit, but their step exceeds prune_above_s */
    ESTIMATE_BOUNDED,     /* every variant's step exceeds prune_above_s, memory not made
                             (estimate_cache_bound_first): outs untouched */
} estimate_outcome;

cm_status estimate_layout_search(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, const layout *ls, int n,
                                 estimate *outs, estimate_cache *cache, double prune_above_s,
                                 estimate_outcome *how);
/* The same for a memory-knob try (planner/search.c memory_knobs) of a layout that passed
 * layout_check: ls[0] differs from it only in recompute_layers, optimizer_offload_pct or
 * activation_offload, so only the rules that read those three are checked again (the others
 * gave their verdict on the layout tried; layout_check was ~8% of a try). */
cm_status estimate_layout_search_try(const model_spec *m, const system_spec *sys,
                                     const training_spec *t, const layout *ls, int n,
                                     estimate *outs, estimate_cache *cache,
                                     double prune_above_s, estimate_outcome *how);
/* Whether every full-recompute layer-count try of ls (a layout's overlap variants, with
 * recompute_layers k >= 1 set) from k up is bounded above prune_above_s, so that none that fits
 * could change a search's result (estimate_search_bound.c says why). */
bool estimate_search_recompute_tries_pruned(const model_spec *m, const system_spec *sys,
                                            const training_spec *t, const layout *ls, int n,
                                            estimate_cache *c, double prune_above_s);
/* memory_peak(m, sys, t, l), through the cache's memory memo (the same figures). */
memory_breakdown estimate_cache_memory_peak(estimate_cache *c, const model_spec *m,
                                            const system_spec *sys, const training_spec *t,
                                            const layout *l);
/* outs[i] of every variant ls[i] that is not the first of its tp_comm_overlap value: that
 * first one's identity and memory (what estimate_layout_search leaves out when it prunes). */
void estimate_search_share_memory(const layout *ls, int n, estimate *outs);

#endif
