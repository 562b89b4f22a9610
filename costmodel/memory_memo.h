/*
 * memory_memo.h — per-layer and per-stage figures of memory.c, remembered across the layouts
 * of a search (issue 21: the memory half of every listed layout was a third of a search).
 *
 * A search evaluates the memory of every layout it lists, and neighbouring layouts of the list
 * differ in a field or two (search_layouts.c: the sharding and recompute loops are innermost,
 * then sequence parallelism and the micro-batch): a layer's activation bytes do not read the
 * sharding, dp or pp, and a stage's layer and parameter counts read neither the micro-batch
 * nor the recompute or sharding setting. The memo keeps the last few of each, keyed by every
 * field its computation reads (listed at each key), so a hit returns the very double the
 * computation would: the figures are identical with and without it (tests/test_memory_memo.c
 * compares whole breakdowns over the searches' layouts). One memo serves one model and one
 * thread.
 */
#ifndef PLAN_MEMORY_MEMO_H
#define PLAN_MEMORY_MEMO_H

#include "alloc_step.h"
#include "memory.h"

/* direct-mapped by the key's hash: a slot holds the last key that maps to it */
enum { MEMORY_MEMO_ACT = 64, MEMORY_MEMO_STAGES = 64 };

/* What memory_layer_activation_bytes reads (memory.c): the training spec's sequence length,
 * attention kind and MoE load (moe_load_factor), and of the layout the micro-batch, cp, tp,
 * sp, recompute (and its modules), framework, compile, implementation, precision and FP8
 * recipe (precision_rules_of), the expert TP (layout_etp) and DeepEP's FP8 dispatch
 * (moe_dispatch_elem_bytes), and the training spec's moe_pad_index_copy; ints and doubles
 * only, so no padding. */
typedef struct {
    double moe_imbalance, moe_capacity_factor;
    int seq_len, attention;
    int mbs, cp, tp, sp, recompute, recompute_modules, framework, compile, impl, precision,
        fp8_recipe, etp, moe_fp8_dispatch, moe_pad_index_copy;
} memory_act_key;

/* What a stage's layer counts and parameters read (layout_stage_layers, layout_stage_start,
 * memory.c stage_params_counted): tp, ep, etp, pp, the uneven split, the framework (Megatron's
 * MTP modules on the last stage), the stage and the stage holding the head (layout_head_stage:
 * rank 0 under the V schedules). */
typedef struct {
    int tp, ep, etp, pp, pp_first_layers, pp_last_layers, framework, stage, head_stage;
    int vpp, v_shape, pad; /* torchtitan's split is of the virtual stages (pp_split.c) */
} memory_stage_key;

typedef struct {
    int n_layers, start, moe_layers;
    double dense_params, expert_params;
    /* memory_stage_lp_params of a --fp8-param-gather layout (precision_param_gather) with
     * these bf16 first/last layers: it reads the key's fields, the knob and those two alone */
    bool have_lp;
    int lp_bf16_start, lp_bf16_end;
    double lp[2]; /* dense, expert */
} memory_stage_figures;

/* One candidate stage of a Megatron full-recompute layout (memory.c stage_memory), kept for
 * the layout's memory-knob tries (search.c memory_knobs: recompute_layers 1, then a bisection,
 * straight after the layout itself): recompute_layers changes only the sum of the stage's
 * activations (memory.c stage_act_sum), so a try takes everything else from here, the same
 * doubles. Keyed by the whole layout with recompute_layers 0, the training spec, the system
 * and the stage (a byte-for-byte match: equal bytes are equal fields). */
typedef struct {
    bool used;
    const system_spec *sys;
    layout key;
    training_spec t;
    int stage, act_off, n_layers, micro, moe_layers;
    bool head;
    memory_breakdown r; /* the state part, the logits, torch's phases and the largest block */
    double act_full, ckpt, mtp_act, in_flight, act_layer_max, working, phase_relief_bytes;
} memory_full_snap;

/* The allocator replay of a covered single-GPU layout (alloc_step.h), keyed by what it reads
 * beyond the model: a search of one GPU asks it for a handful of micro-batch, recompute and
 * implementation choices */
enum { MEMORY_MEMO_REPLAY = 64 };
typedef struct {
    bool used, ok;
    alloc_step_key key;
    alloc_step_reserved r;
} memory_replay_slot;

typedef struct {
    const model_spec *model;  /* the model it was made for (memory_memo_init) */
    memory_replay_slot replay[MEMORY_MEMO_REPLAY];
    memory_full_snap full[3]; /* the first stage, the second, the last (peak_of's candidates) */
    memory_model_counts counts;
    bool act_used[MEMORY_MEMO_ACT], stage_used[MEMORY_MEMO_STAGES];
    memory_act_key act_key[MEMORY_MEMO_ACT];
    bool act_have[MEMORY_MEMO_ACT][2];    /* [dense, MoE layer] held */
    double act_bytes[MEMORY_MEMO_ACT][2];
    memory_stage_key stage_key[MEMORY_MEMO_STAGES];
    memory_stage_figures stage[MEMORY_MEMO_STAGES];
    /* speed24: set by a caller that reads of the next lookups only whether the layout fits and,
     * where it does not, whether it exceeds the device by more than stop_over_bytes (>= 0):
     * once a candidate stage's need exceeds the device by more than that, so does the
     * layout's (its need is the largest of the stages', memory.c peak_of), so the later stages
     * are not made and partial is set; the breakdown then holds the stages made so far, its
     * need at most the whole's but more than stop_over_bytes over the device. Never set where
     * another figure of a layout that does not fit is read (its optimizer or activation
     * bytes, its exact excess). */
    bool verdict_only, partial;
    double stop_over_bytes;
} memory_memo;

/* An empty memo for m, with m's counts (memory_model_counts_of). */
void memory_memo_init(memory_memo *memo, const model_spec *m);

/* The slot of l's activation key (its dense and MoE layers share one), emptied if another
 * key held it; then memory_layer_activation_bytes(m, t, l, moe_layer), remembered there. */
int memory_memo_activation_slot(memory_memo *memo, const training_spec *t, const layout *l);
double memory_memo_activation_bytes(memory_memo *memo, int slot, const model_spec *m,
                                    const training_spec *t, const layout *l, int moe_layer);

/* The stage figures held for (l, stage), or NULL; memory_memo_stage_put keeps new ones. */
memory_stage_figures *memory_memo_stage_find(memory_memo *memo, const layout *l, int stage);
memory_stage_figures *memory_memo_stage_put(memory_memo *memo, const layout *l, int stage,
                                            const memory_stage_figures *f);

/* alloc_step_replay of a covered l (alloc_step_covered), through memo when not NULL (m must be
 * its model); false when not covered or the replay failed. */
bool memory_memo_replay(memory_memo *memo, const model_spec *m, const training_spec *t,
                        const layout *l, double allocator_capacity_bytes,
                        alloc_step_reserved *out);

/* memory_peak with the memo (m must be the memo's model): the same figures. */
memory_breakdown memory_peak_memo(const model_spec *m, memory_memo *memo,
                                  const system_spec *sys, const training_spec *t,
                                  const layout *l);

#endif
