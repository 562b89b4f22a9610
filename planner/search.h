/*
 * search.h — enumerate every valid layout for a GPU count under each framework, evaluate each
 * with the cost model, and keep the best by predicted step time (tie-break: memory headroom).
 */
#ifndef PLAN_SEARCH_H
#define PLAN_SEARCH_H

#include "estimate.h"
#include "search_stats.h"

#define SEARCH_KEEP_MAX 256

typedef struct {
    int gpus;
    int keep;                   /* how many ranked plans to keep (>= the --top asked for) */
    bool frameworks[LAYOUT_NFRAMEWORKS]; /* which frameworks to search (index = layout_framework) */
    /* Optional: called with every layout the cost model evaluated, feasible or not, so a caller
     * can collect its own statistics from one search instead of running several (plan report:
     * best plan without expert parallelism, smallest fit per sharding and recompute). A layout
     * that does not fit in memory comes untimed, without a reason text (estimate.h's search
     * form); one that fits comes whole. No layout is pruned while a visitor is set, unless
     * it gives visit_bound and visit_fit. */
    void (*visit)(const estimate *e, void *arg);
    void *visit_arg;
    /* Optional, both or neither: a visitor that needs the step time only of the layouts that
     * can change what it collects. visit_bound(l) says what step time per sequence of its
     * batch l must beat for that (0: none, the visitor needs no time of l; negative: it needs
     * l timed); a layout that fits but cannot beat it, the kept plans or its sharding's best
     * is then not timed (as without a visitor) and its variants go to visit_fit instead of
     * visit: their memory half, feasible true, no time. */
    double (*visit_bound)(const layout *l, void *arg);
    void (*visit_fit)(const estimate *e, void *arg);
    /* Re-rank the best `simulate` plans (0: off) by the step simulator (costmodel/sim.h): they
     * are simulated, with each framework's best, and reordered by simulated step time. */
    int simulate;
    /* Precisions to search (issue 16), as a mask of 1 << layout_precision; 0: bf16 alone (the
     * library's default; the commands' --precision auto passes precision_choice_auto_mask,
     * planner/precision_choice.h, and --precision bf16 leaves 0). Formats the system or framework
     * cannot train in (precision_check) are skipped. fp8_recipe: the recipe of fp8 layouts (0:
     * the framework's default). */
    unsigned precisions;
    layout_fp8_recipe fp8_recipe;
    /* Keep the Megatron overlap knobs (tp_comm_overlap, overlap_grad_reduce,
     * overlap_param_gather) off instead of searching them (plan --no-overlap). */
    bool no_overlap;
    /* The MoE token dispatcher the Megatron layouts with EP use (--moe-dispatcher); the search
     * does not choose it: its figures depend on the network the user names. */
    layout_moe_dispatcher moe_dispatcher;
    /* Low precision under Megatron (precision.h): --fp8-param-gather is searched off and on
     * where it applies (distributed optimizer, Megatron-FSDP) unless fp8_param_gather pins it
     * on; the bf16 first/last layers and DeepEP's FP8 dispatch are the user's, given to the
     * layouts they apply to (Megatron low precision; DeepEP with EP). */
    bool fp8_param_gather;
    int bf16_layers_start, bf16_layers_end;
    bool moe_fp8_dispatch;
    /* Time every layout that fits instead of skipping those whose lower bound cannot enter the
     * result (the result is the same either way: tests/test_search_prune.c). */
    bool no_prune;
    /* For a caller that reads of the result only `evaluated` and whether a plan fits (ranked
     * non-empty), and whose visitor reads of a layout's variants their layouts less
     * recompute_layers and activation_offload_layers, and whether any of them fits (not
     * which): plan report's classes-only points (report_analysis.c, speed16). Once a plan is
     * ranked, no layout that the cost model could prune is timed or bounded (it goes to
     * visit_fit where it fits, as a pruned one does); a layout that fits makes no partial-
     * recompute or fewest-offload-layers try (search.c memory_knobs). What such a caller reads
     * is the whole search's: a pruned layout fits and is feasible once timed (the pruning's
     * contract), so it reaches the visitor as a timed one would; those tries change only
     * recompute_layers or activation_offload_layers and which variants fit, and are taken only
     * where some variant fits, as some variant of the layout they start from does; evaluated
     * counts the variants either way; the first plan that fits is timed and ranked. The plans
     * are then some that fit, not the best, and `feasible` may count fewer variants. */
    bool fits_only;
    /* --gbs-policy nearest: a data-parallel size that does not divide the global batch runs
     * the largest multiple of it below (each estimate's training.global_batch says which),
     * and plans are ranked by time per sequence. false: the batch must divide evenly. */
    bool gbs_nearest;
    /* Leave out the memory knobs (Megatron optimizer/activation CPU offload, partial full
     * recompute) that the search otherwise tries where a layout needs them (search.c). */
    bool no_memory_knobs;
    /* Expert tensor parallelism folded (Megatron-Core's parallel folding, issue 20): every
     * divisor of tp as the MoE layers' etp, not only tp and 1 (plan --etp-fold). */
    bool etp_fold;
    /* Leave search_result.stats' per-knob counts (layouts listed, out on memory, out on the
     * bound, timed) at zero: for a caller that prints none of them (plan's human output
     * without --search-stats; speed22: the tally was 2% of DeepSeek-V3's search at 16384
     * GPUs). The layer-cost counts are kept. false: counted. */
    bool no_stats;
    /* speed23: take a layout's step-time lower bound before its memory, and leave a layout
     * whose bound already exceeds the plans kept unchecked for memory
     * (estimate_cache_bound_first): the plans, their ranking and the best per framework and
     * sharding are the same, but `feasible` counts only the layouts checked, and `unchecked`
     * says how many were not. Ignored with a visitor, fits_only or no_prune. false: memory
     * first, every layout's feasibility known. */
    bool bound_first;
    /* speed24: every layout that does not fit gets its whole memory breakdown. false: without
     * a visitor, a layout's breakdown stops at a candidate stage over the device by more than
     * the closest to fitting held (estimate_cache_unfit_stop_over): the same result, counts
     * and figures (tests/test_memory_verdict.c). For tests. */
    bool unfit_memory_whole;
    /* plan --exact-model: of the frameworks asked, search only those whose own model code
     * builds the model as it is (exact_model.h: FSDP2 always; Megatron-LM and torchtitan when
     * their form lists are empty); the others are left out and search_result.excluded says
     * which. false: every framework asked is searched, whatever it lacks. */
    bool exact_model;
    /* det26: evaluate on one thread whatever PLAN_THREADS says: for a caller that prints the
     * per-knob counts (plan --search-stats), which count the work the search did, and on
     * several threads that work depends on which chunks each worker saw before (each prunes
     * by its own partial result and bounds before the memory only from its own cache). The
     * plans are the same either way (merge_parts). false: PLAN_THREADS, else every core. */
    bool one_thread;
} search_options;

/* How many plans `plan` re-ranks with the simulator unless told --no-simulate. */
#define SEARCH_SIMULATE_DEFAULT 32

typedef struct {
    int gpus;                   /* the GPU count searched */
    long evaluated;             /* layouts passed through the cost model */
    long feasible;              /* exact only where feasible_counted (below) */
    long unchecked;             /* listed layouts left unchecked for memory (bound_first) */
    /* det26: every listed layout's memory was checked (no bound before the memory, no
     * fits_only), so `feasible` is the number of layouts that fit, whatever the threads did
     * (tests/test_search_threads.c). false: `feasible` counts only the layouts checked, which
     * on several threads depends on their interleaving: not a figure to print. */
    bool feasible_counted;
    double seconds;
    int count;                  /* ranked plans kept, best first */
    int simulated;              /* how many of them (the first) the simulator re-ranked */
    bool no_overlap;            /* searched with the overlap knobs kept off (--no-overlap) */
    bool searched[LAYOUT_NFRAMEWORKS]; /* the frameworks this search enumerated */
    bool exact_model;           /* searched with search_options.exact_model */
    bool excluded[LAYOUT_NFRAMEWORKS]; /* asked, but left out by exact_model */
    estimate ranked[SEARCH_KEEP_MAX];
    bool has_best[LAYOUT_NFRAMEWORKS]; /* best feasible plan of each framework */
    estimate best[LAYOUT_NFRAMEWORKS];
    bool has_best_sharding[LAYOUT_NFRAMEWORKS][3]; /* best feasible plan per framework, sharding */
    estimate best_sharding[LAYOUT_NFRAMEWORKS][3];
    bool has_closest[LAYOUT_NFRAMEWORKS]; /* when nothing fits: the plan closest to fitting */
    estimate closest[LAYOUT_NFRAMEWORKS];
    search_stats stats;         /* per-knob counts (search_stats.h) */
} search_result;

/* Step time per sequence of the batch the plan runs: plans of one batch compare by step time;
 * under --gbs-policy nearest their batches differ, and the time per sequence (the inverse of
 * Calculon's sample rate) ranks them. step_s is a's (or its simulated figure), b the other. */
double search_per_batch(double step_s, const estimate *a, const estimate *b);

/* Is a better than b (step time, then memory headroom)? */
bool search_better(const estimate *a, const estimate *b);

/* Runs the search. result is large: allocate it (search_result_new) rather than on the stack. */
cm_status search_run(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const search_options *opt, search_result *result, char *err,
                     size_t errlen);
/* The re-ranking search_run does with opt->simulate = k, for a result already searched. */
cm_status search_rerank(const model_spec *m, const system_spec *sys, const training_spec *t,
                        search_result *r, int k, char *err, size_t errlen);
search_result *search_result_new(void);
void search_result_free(search_result *r);

#endif
