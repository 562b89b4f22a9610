/*
 * estimate_cache_internal.h — the search's layer-cost cache (estimate.h estimate_cache) as
 * estimate_search.c, which fills and reads it, and estimate_cache.c, which makes, sizes and
 * frees it, both see it. Nothing else includes this: the cache is opaque to its users.
 */
#ifndef PLAN_ESTIMATE_CACHE_INTERNAL_H
#define PLAN_ESTIMATE_CACHE_INTERNAL_H

#include "estimate_internal.h"
#include "memory_memo.h"
#include "precision.h"

#include <stddef.h>
#include <string.h>

enum { PROBE_FSDP, PROBE_OTHER, PROBE_MEGATRON, PROBE_MASKS };
/* estimate_cache_key's cases (estimate_cache_key.c key_case): FSDP sharding; another sharding
 * outside Megatron; Megatron without FSDP on several GPUs; the same alone (layout_gpus 1) */
enum { KEY_FSDP, KEY_OTHER, KEY_MEGATRON, KEY_MEGATRON_ALONE, KEY_CASES };
/* twin_fits' keys (estimate_search.c fit_key): the layout's own, and its three twins' */
enum { FIT_SELF, FIT_DDP_TWIN, FIT_NO_RECOMPUTE_TWIN, FIT_NO_GATHER_TWIN, FIT_MASKS };
enum { LAYOUT_WORDS = (sizeof(layout) + sizeof(unsigned long) - 1) / sizeof(unsigned long) };
enum { CACHE_ENTRIES = 8, PRICED_SLOTS_MIN = 1 << 10, PRICED_SLOTS_MAX = 1 << 15,
       TWIN_SLOTS = 256 };

/* The two layer kinds the cache holds apart: a dense layer's recipe reads none of the expert
 * fields (ep, etp, the dispatcher: only the MoE branches of layer_recipe.c, moe_dispatch.c,
 * elementwise.c's routing kernels and host_dispatch.c's EP sync do), so for an MoE model its
 * key leaves them out and the ep x etp layouts of one (tp, cp, mbs, ...) share it. The loss
 * head (with Megatron's MTP layers, recipe_mtp.c: MoE layers for DeepSeek-V3) keeps the whole
 * key: it is held with the MoE kind, or the dense kind of a dense model. */
enum { KIND_DENSE, KIND_MOE, KINDS };

typedef struct {
    bool used;
    layout key;              /* the cleared layout (estimate_cache_key), padding zeroed */
    unsigned long hash;      /* the key's (lookup_key) */
    recipe r;                /* the kind's layer */
    int r_rc;                /* the recompute setting r's flags hold (recipe_set_recompute;
                                Megatron-FSDP's too since speed13), or -1 (not yet set); the
                                loss head's MTP layer takes r where it is l's (head_cost) */
    unsigned priced;         /* bit rc: x[rc] holds the layer priced under recompute rc */
    layer_time x[3];
    unsigned head_priced;    /* bit rc: head[rc] holds the loss head under recompute rc (it
                                depends on it through Megatron's MTP layers, recipe_mtp.c) */
    layer_time head[3];
} cache_entry;

/* A key's layer priced under one recompute setting, kept after its recipe leaves the entries above:
 * the search meets a key again one pipeline size later (the key holds no dp or pp for Megatron
 * without FSDP, estimate_cache_key), long after eight other keys. Direct-mapped by the hash (of
 * key, kind and recompute); a slot is overwritten by the next key that maps to it. */
typedef struct {
    bool used;
    int rc, kind;
    unsigned long hash;
    layout key;
    layer_time x;
    bool head_priced; /* head holds the loss head's costs (head_cost) */
    layer_time head;
} priced_slot;

/* A built recipe kept for its key after it leaves the entries above (issue 21): the
 * search needs a key's recipe again one pipeline size later, a thousand or more lookups on,
 * where Megatron-FSDP's layers (their DDP form's recipe, build_entry) or a recompute setting
 * not yet priced find it here instead of building it again. Direct-mapped by the key's hash
 * and kind; only recipes of at most STORED_OPS ops (a DeepSeek-V3 MoE layer has 21), their
 * fields and ops alone. rc: the recompute setting its flags and pacing were set for. */
enum { STORED_OPS = 32, STORED_MIN = 1 << 7, STORED_MAX = 1 << 12 };
typedef struct {
    bool used;
    int kind, rc;
    unsigned long hash;
    layout key;
    unsigned char bytes[offsetof(recipe, op) + STORED_OPS * sizeof(recipe_op)];
} stored_recipe;

/* The codec's fields are bools or int-sized (integers, enums, a bit set): the bytes each
 * holds, below. */
_Static_assert(sizeof(layout_framework) == sizeof(int) && sizeof(layout_sharding) == sizeof(int) &&
                   sizeof(layout_recompute) == sizeof(int) &&
                   sizeof(layout_precision) == sizeof(int) &&
                   sizeof(layout_fp8_recipe) == sizeof(int) && sizeof(layout_impl) == sizeof(int) &&
                   sizeof(layout_optimizer_impl) == sizeof(int) &&
                   sizeof(layout_moe_dispatcher) == sizeof(int) &&
                   sizeof(layout_pp_schedule) == sizeof(int) && sizeof(unsigned) == sizeof(int) &&
                   sizeof(layout_rank_order) == sizeof(int),
               "the layer-cost key takes the codec's non-bool fields as int-sized");

/* A layout seen to fit (estimate_search.c twin_fits), direct-mapped by its key's hash. */
typedef struct {
    bool used;
    unsigned long hash;
    layout key;
} twin_slot;

/* A Megatron layout's memory without recompute, kept for its selective-recompute twin
 * (estimate_search.c memory_of: under flash attention the two are the same breakdown),
 * direct-mapped by the key's hash (fit_key's: the DP overlap knobs cleared). */
enum { MEMORY_TWIN_SLOTS = 64 };

/* Megatron-FSDP bounds remembered (estimate_search_bound.c estimate_search_fsdp_layers_lb): a
 * layout, its --fp8-param-gather twin (search.c emit lists it next), and each one's first
 * full-recompute layer-count try (search.c memory_knobs). */
enum { FSDP_LB_MEMO = 4 };
typedef struct {
    bool used;
    unsigned long hash;
    const system_spec *sys;
    training_spec t;
    layout key;
    memory_breakdown memory;
} memory_twin_slot;

struct estimate_cache {
    /* the last layout_check_base (estimate_cache.c estimate_cache_layout_ok): its model, bf16
     * layout (compared byte for byte), training spec and verdict; first in the struct, beside
     * the masks, since every listed layout reads them (speed27: at the end, past the entries'
     * recipes, the first read missed the caches) */
    bool check_per_layout; /* estimate_cache_check_per_layout */
    bool have_check, check_ok;
    const model_spec *check_m;
    layout check_key;
    training_spec check_t;
    /* every byte but those precision_bf16_layout sets, to zero bytes (estimate_cache.c
     * estimate_cache_layout_ok: the bf16 layout by one masking) */
    unsigned long bf16_mask[LAYOUT_WORDS];
    /* 0xff for each byte of a layout a codec field holds, 0 for the rest (padding): a key is
     * the layout's words masked with it */
    unsigned long held_mask[(sizeof(layout) + sizeof(unsigned long) - 1) / sizeof(unsigned long)];
    /* held_mask less the bytes of the fields the last costs' probe clears (estimate_search.c
     * layer_costs): [PROBE_FSDP] a layout with FSDP sharding keeps its sharding and
     * --fp8-param-gather; [PROBE_OTHER] another clears its sharding to DDP (0); [PROBE_MEGATRON]
     * Megatron without FSDP clears --fp8-param-gather too. Every cleared field's cleared value
     * is all zero bytes, so the probe is the layout's words masked (speed27: the fields cleared
     * one by one and the words masked after stalled each masked word's load on those stores) */
    unsigned long probe_mask[PROBE_MASKS][LAYOUT_WORDS];
    /* estimate_cache_key's bytes masked, as words: a case's key is the layout's words ANDed with
     * key_mask and ORed with key_set (the fields it sets to a value: vpp 1, and under Megatron
     * without FSDP pp 1 and dp 1 alone / 0), within held_mask; an MoE model's dense kind's key
     * is the whole key's ANDed with dense_mask and ORed with dense_set (ep 1, etp and the
     * dispatcher 0). estimate_cache_key.c key_masks; test_layer_cache checks them against
     * estimate_cache_key (speed27: its field stores stalled the key's word loads) */
    unsigned long key_mask[KEY_CASES][LAYOUT_WORDS], key_set[KEY_CASES][LAYOUT_WORDS];
    unsigned long dense_mask[LAYOUT_WORDS], dense_set[LAYOUT_WORDS];
    /* fit_key's (estimate_search.c): held_mask less the DP overlap knobs, and for each twin
     * less the fields twin_fits sets to zero bytes in it (DDP's: the sharding to SHARDING_DDP
     * and optimizer_bf16_states; no recompute's: recompute; no gather's: fp8_param_gather) */
    unsigned long fit_mask[FIT_MASKS][LAYOUT_WORDS];
    /* every byte but fp8_param_gather's (estimate_search_bound.c fsdp_lb_memo_key: the memo's
     * key keeps the padding) */
    unsigned long fsdp_lb_mask[LAYOUT_WORDS];
    bool have_counts;
    /* layouts seen to fit (twin_fits), and whether a pruned layout may skip its memory
     * breakdown (estimate_cache_skip_pruned_memory) */
    bool skip_pruned_memory;
    bool bound_first; /* estimate_cache_bound_first */
    bool unfit_memory_whole; /* estimate_cache_unfit_memory_whole */
    double unfit_stop_over_bytes; /* estimate_cache_unfit_stop_over */
    twin_slot twin[TWIN_SLOTS];
    memory_twin_slot memory_twin[MEMORY_TWIN_SLOTS]; /* memory_of's (speed19) */
    estimate_model_counts counts; /* the model's, counted on first use (one model a cache) */
    memory_memo memo;             /* memory.c's per-layer and per-stage figures (the same model) */
    priced_slot *priced;          /* n_priced of them, a power of two */
    size_t n_priced;
    stored_recipe *stored;        /* n_stored of them, a power of two */
    size_t n_stored;
    cache_entry e[KINDS][CACHE_ENTRIES];
    int next[KINDS];              /* round-robin eviction */
    /* the last layer costs (layer_costs) of each [tp_comm_overlap][recompute][Megatron-FSDP], keyed
     * by the layout with the fields that estimate_cache_key clears and the list's neighbours vary
     * (the sharding loop's DDP and distributed optimizer and their DP overlap knobs, the uneven
     * split that follows each layout, the memory knobs' tries) cleared: a layout equal to one byte
     * for byte has its key, so its costs. A layout's overlap variants alternate the first index;
     * the recompute loop, innermost, the second; a Megatron-FSDP layout's bound reads its DDP
     * form's costs (fsdp_layers_lower_bound) between its own. The last index, 2 x precision +
     * fp8_param_gather (the probe's: cleared where no recipe reads it), keeps a searched
     * precision's apart from the others', which follow each layout in the list (search.c emit:
     * before speed12 they took turns in one slot and never hit). */
    bool have_last[2][3][2][2 * PRECISION_COUNT];
    layout last[2][3][2][2 * PRECISION_COUNT];
    layer_kinds last_kinds[2][3][2][2 * PRECISION_COUNT];
    long builds, hits;
    /* estimate_search_fsdp_layers_lb's last answers (speed22), keyed by the layout's bytes
     * with --fp8-param-gather cleared (estimate_search_bound.c says why), round-robin */
    struct {
        bool used;
        const model_spec *m;
        const system_spec *sys;
        layout key;
        double lb_s;
    } fsdp_lb[FSDP_LB_MEMO];
    int fsdp_lb_next;
};

/* Whether a and b hold the same bytes, as !memcmp(a, b, sizeof(layout)): the words XORed and
 * ORed together, inline (speed27: memcmp's call was 5% of DeepSeek-V3's search at 16384 GPUs,
 * nearly all of it comparing keys equal or nearly so, where it cannot stop early). */
static inline bool estimate_same_layout(const layout *a, const layout *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    unsigned long d = 0;
    size_t i = 0;
    for (; i + sizeof(unsigned long) <= sizeof(layout); i += sizeof(unsigned long)) {
        unsigned long wx, wy;
        memcpy(&wx, x + i, sizeof wx);
        memcpy(&wy, y + i, sizeof wy);
        d |= wx ^ wy;
    }
    for (; i < sizeof(layout); i++) d |= (unsigned long)(x[i] ^ y[i]);
    return d == 0;
}

/* The layer-cost cache's keys (estimate_cache_key.c). A lookup's key: estimate_cache_key with
 * every byte no codec field holds zeroed (layout_codec.h: a field added there is part of it),
 * compared bytewise (equal bytes are equal fields), and its hash. */
typedef struct {
    layout k;
    unsigned long hash;
} lookup_key;
/* l with the fields no layer recipe reads cleared (its comment lists them and why): the
 * definition the masked keys below are tested against (tests/test_cache_key.c) */
layout estimate_cache_key(const layout *l);
/* FNV-1a over k's 8-byte words and its tail */
unsigned long estimate_key_hash(const layout *k);
/* every byte of k no codec field holds zeroed (c->held_mask) */
void estimate_key_mask(const estimate_cache *c, layout *k);
/* dst = src's words masked with mask (held_mask's shape) */
void estimate_key_masked_copy(layout *dst, const layout *src, const unsigned long *mask);
/* l's whole key (the MoE kind's, or a dense model's dense kind's) */
void estimate_key_of(const estimate_cache *c, const layout *l, lookup_key *key);
/* an MoE model's dense kind's key from its whole one: the expert fields cleared */
void estimate_key_dense(const lookup_key *whole, lookup_key *key);
/* l's words masked with mask into key, and their hash (estimate_key_hash's) */
void estimate_key_masked(const layout *l, const unsigned long *mask, lookup_key *key);
/* c's key masks (estimate_cache.c, once held_mask is set) */
void estimate_key_masks(estimate_cache *c);
/* both of l's keys of an MoE model (estimate_key_of, estimate_key_dense), hashed in one pass */
void estimate_key_moe_pair(const estimate_cache *c, const layout *l, lookup_key *whole,
                           lookup_key *dense);

/* layout_check(l) == CM_OK (estimate_search.c's check of a listed layout), its precision-blind
 * half (layout_check_base) from c where l's bf16 form is the last one checked: a search of
 * several precisions lists each layout's in turn (estimate_cache_check_per_layout). */
bool estimate_cache_layout_ok(estimate_cache *c, const model_spec *m, const system_spec *sys,
                              const training_spec *t, const layout *l);

/* Does l take its layers' and head's costs from outside the cache (bf16 first/last layers: a
 * second precision's recipes; ZeRO-2 under Megatron, never searched, whose unit reduce-scatter
 * reads the dp the cache keys of Megatron's other shardings drop: shard_grads.h)? */
static inline bool estimate_search_uncached(const layout *l)
{
    return (precision_is_low(l) && (l->bf16_layers_start > 0 || l->bf16_layers_end > 0)) ||
           (l->shard_grads && l->framework == FRAMEWORK_MEGATRON);
}

/* The dense and MoE layer costs of l (estimate_search.c): the cache's last costs of l's slot
 * (valid until that slot's next lookup), or own where l's layers are priced outside it. */
const layer_kinds *estimate_search_layer_costs(estimate_cache *c, const model_spec *m,
                                               const system_spec *sys, const training_spec *t,
                                               const layout *l, layer_kinds *own);
/* The same where the cache holds them priced (its last costs, an entry or a priced slot), NULL
 * where it would have to build or price them, or l is priced outside it (speed23). */
const layer_kinds *estimate_search_layer_costs_held(estimate_cache *c, const model_spec *m,
                                                    const layout *l);

/* The rules a memory-knob try and the overlap variants could break (estimate_cache.c). */
bool estimate_search_knob_rules_hold(const layout *l);
bool estimate_search_variants_ok(const layout *ls, int n);

/* The lower bounds a search prunes with (estimate_search_bound.c): may a bound skip l's
 * timing; the factor f (step_s >= f x the first stage's micro-batch time) of l run in
 * `microbatches` micro-batches; a Megatron-FSDP layout's first-stage decoder layers bounded
 * from its DDP form's costs (-1: none; held: only from costs the cache holds,
 * estimate_search_layer_costs_held, and -2 where it holds none). */
bool estimate_search_prunable(const system_spec *sys, const layout *l);
/* estimate_search_bound.c: whether l's memory may stop at a stage over the device by more than
 * unfit_stop_over_bytes (memory_memo.h verdict_only) */
bool estimate_search_memory_verdict_only(const estimate_cache *c, const system_spec *sys,
                                         const layout *l);
double estimate_search_bound_factor(const layout *l, int microbatches);
double estimate_search_fsdp_layers_lb(estimate_cache *c, const model_spec *m,
                                      const system_spec *sys, const training_spec *t,
                                      const layout *l, bool held);
/* estimate_layout_search's bound before the memory (speed23): true where the cache asks for
 * it and every variant of ls is bounded out without its memory. */
bool estimate_search_bounded_first(const model_spec *m, const system_spec *sys,
                                   const training_spec *t, const layout *ls, int n,
                                   estimate_cache *c, double prune_above_s);

#endif
