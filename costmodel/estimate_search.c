/*
 * estimate_search.c — the planner's form of estimate_layout (estimate.h): the same figures,
 * computed with less work for a search that evaluates hundreds of thousands of layouts.
 *
 * Three savings, none of which changes a figure:
 *  - memory first: a layout that does not fit is not timed (estimate.c's memory half alone,
 *    with the model's parameter counts counted once per cache: estimate_model_counts, and
 *    memory.c's per-layer activation bytes and per-stage parameters remembered across the
 *    list's neighbours: memory_memo.h);
 *  - a layer-cost cache: a decoder layer's recipe (layer_recipe.h) depends on the layout's
 *    sizes, precision, implementation and TP overlap but not on its recompute setting (only
 *    the ops' recompute flags and the host's pacing do: recipe_set_recompute), nor on DDP
 *    versus the distributed optimizer, the DP overlap knobs or the virtual pipeline size, and
 *    under Megatron without FSDP not on dp or pp (estimate_cache_key.c says why). The cache
 *    keeps a few built recipes keyed by the layout with those fields cleared, and each
 *    recompute setting's
 *    priced layers in a larger table (the same key a pipeline size later finds them there).
 *    Built recipes also stay in a larger store (stored_recipe) for the key's next build.
 *    An MoE model's dense layers are keyed without the expert fields (KIND_DENSE), and the
 *    loss head is priced only where it is read (a timed layout, or a first stage that is also
 *    the last: ensure_head), then kept beside its key's layers;
 *  - a lower bound: without calibrated step terms, step_s >= (micro-batches + (pp-1)/vpp) x
 *    the first stage's micro-batch time, because the step is micro-batches x the worst stage's
 *    micro-batch time plus non-negative data-parallel, bubble and optimizer terms, the bubble is
 *    (pp-1)/vpp x the worst stage's micro-batch or, when the last stage is the slowest, of the
 *    slower of the first and a middle stage (estimate_worst_stage's fill_s), and either is at
 *    least as slow as the first (estimate.c estimate_time_assemble). A layout whose bound exceeds the caller's
 *    threshold is not assembled (ESTIMATE_PRUNED). The first stage is priced by its decoder
 *    layers first (estimate_stage_layers_total, never above the whole stage's figure), the
 *    whole stage only where that part alone does not settle it: the same decisions.
 */
#include "estimate_cache_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "layout_codec.h"
#include "offload.h"
#include "overlap.h"
#include "precision.h"

/* The priced slots' hash: the key's, the kind's and the recompute setting's. */
static unsigned long slot_hash(const lookup_key *key, int kind, int rc)
{
    return (key->hash ^ (unsigned long)(rc + 3 * kind + 1)) * 1099511628211ul;
}

static cache_entry *entry_of(estimate_cache *c, int kind, const lookup_key *key)
{
    for (int i = 0; i < CACHE_ENTRIES; i++) {
        cache_entry *e = &c->e[kind][i];
        if (e->used && e->hash == key->hash && estimate_same_layout(&e->key, &key->k))
            return e;
    }
    return NULL;
}

static priced_slot *slot_of(estimate_cache *c, const lookup_key *key, int kind, int rc,
                            unsigned long hash)
{
    priced_slot *slot = &c->priced[hash & (c->n_priced - 1)];
    if (slot->used && slot->hash == hash && slot->rc == rc && slot->kind == kind &&
        estimate_same_layout(&slot->key, &key->k))
        return slot;
    return NULL;
}

/* The priced slot of key, kind and rc asked of the memory ahead of its read (kind_cost): the
 * table outgrows the caches, and the dense and MoE kinds' slots then arrive together instead of
 * one after the other (speed27). The bytes a hit reads: the slot's head, key and layer. */
static void prefetch_slot(const estimate_cache *c, const lookup_key *key, int kind, int rc)
{
#if defined(__GNUC__)
    const char *p = (const char *)&c->priced[slot_hash(key, kind, rc) & (c->n_priced - 1)];
    for (size_t off = 0; off < offsetof(priced_slot, head_priced); off += 64)
        __builtin_prefetch(p + off);
#else
    (void)c, (void)key, (void)kind, (void)rc;
#endif
}

static cache_entry *new_entry(estimate_cache *c, int kind, const lookup_key *key)
{
    cache_entry *e = &c->e[kind][c->next[kind]];
    c->next[kind] = (c->next[kind] + 1) % CACHE_ENTRIES;
    e->used = true;
    e->key = key->k;
    e->hash = key->hash;
    e->priced = e->head_priced = 0;
    e->r_rc = -1;
    return e;
}

/* l's key of the kind. */
static void kind_key(const estimate_cache *c, const model_spec *m, const layout *l, int kind,
                     lookup_key *key)
{
    if (kind == KIND_DENSE && model_is_moe(m)) {
        lookup_key whole;
        estimate_key_of(c, l, &whole);
        estimate_key_dense(&whole, key);
    } else {
        estimate_key_of(c, l, key);
    }
}

/* The recipe of l's key of the kind (layer_recipe.h recipe_layer) into r: from the store
 * where it holds the key, its recompute flags and pacing set for l's (recipe_set_recompute:
 * the only part of a recipe the recompute setting changes, as the entries' re-pricing
 * assumes), else built and stored. With price (not NULL), r's price goes there where
 * making r prices it anyway (a Megatron MoE layer's host pacing: layer_recipe.h's _priced
 * forms), and *priced says so. */
static void make_recipe(estimate_cache *c, const model_spec *m, const system_spec *sys,
                        const training_spec *t, const layout *l, int kind,
                        const lookup_key *key, recipe *r, layer_time *price, bool *priced)
{
    bool moe = kind == KIND_MOE;
    stored_recipe *st = &c->stored[(key->hash ^ (unsigned long)kind) & (c->n_stored - 1)];
    if (st->used && st->hash == key->hash && st->kind == kind &&
        estimate_same_layout(&st->key, &key->k)) {
        int n_ops;
        memcpy(&n_ops, st->bytes + offsetof(recipe, n_ops), sizeof n_ops);
        memcpy(r, st->bytes, offsetof(recipe, op) + (size_t)n_ops * sizeof r->op[0]);
        if (st->rc != (int)l->recompute) {
            if (price) {
                recipe_set_recompute_priced(sys, m, l, r, moe, price);
                *priced = true;
            } else {
                recipe_set_recompute(sys, m, l, r, moe, true);
            }
        }
        c->hits++;
        return;
    }
    if (price) {
        recipe_layer_priced(m, sys, t, l, moe, r, price);
        *priced = true;
    } else {
        recipe_layer(m, sys, t, l, moe, r, NULL);
    }
    c->builds++;
    if (r->n_ops > STORED_OPS) return;
    st->used = true;
    st->kind = kind;
    st->rc = (int)l->recompute;
    st->hash = key->hash;
    st->key = key->k;
    memcpy(st->bytes, r, offsetof(recipe, op) + (size_t)r->n_ops * sizeof r->op[0]);
}

/* A new entry for l's key of the kind, its recipe built for l. Megatron-FSDP's recipe is its
 * DDP form's with the unit's gather and reduce-scatter after it (layer_recipe.h
 * recipe_layer_fsdp_from): built from that entry, made first where it is not held, since the
 * shard group (dp, in the key) is all that tells the FSDP keys of one (tp, cp, ep, mbs, ...)
 * apart. *priced: whether e->x[l's recompute setting] was priced on the way
 * (set_recompute_priced). */
static cache_entry *build_entry(estimate_cache *c, const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *l, int kind,
                                const lookup_key *key, bool *priced)
{
    *priced = false;
    bool moe = kind == KIND_MOE;
    if (l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_FSDP) {
        layout ld = *l;
        ld.sharding = SHARDING_DDP;
        lookup_key kd;
        kind_key(c, m, &ld, kind, &kd);
        cache_entry *ed = entry_of(c, kind, &kd);
        if (!ed) {
            ed = new_entry(c, kind, &kd);
            make_recipe(c, m, sys, t, &ld, kind, &kd, &ed->r, NULL, NULL);
            ed->r_rc = (int)ld.recompute;
        }
        cache_entry *e = new_entry(c, kind, key); /* the next slot: not ed's */
        recipe_layer_fsdp_from_priced(m, sys, t, l, moe, &ed->r, &e->r, &e->x[l->recompute]);
        /* l's recompute flags and recipe_layer's ops (test_recipe same_fsdp): the MTP head
         * takes it (head_cost; speed13) */
        e->r_rc = (int)l->recompute;
        *priced = true;
        return e;
    }
    cache_entry *e = new_entry(c, kind, key);
    make_recipe(c, m, sys, t, l, kind, key, &e->r, &e->x[l->recompute], priced);
    e->r_rc = (int)l->recompute; /* make_recipe sets the flags for l's */
    return e;
}

/* The layer of the kind (MoE or not) of l, priced, from the cache when it has it, into *x.
 * peek: only from the cache (false where it is not priced there, nothing built or priced). */
static bool kind_cost(estimate_cache *c, const model_spec *m, const system_spec *sys,
                      const training_spec *t, const layout *l, int kind, const lookup_key *key,
                      bool peek, layer_time *x)
{
    int rc = (int)l->recompute;
    unsigned long hash = slot_hash(key, kind, rc);
    cache_entry *e = entry_of(c, kind, key);
    if (e && (e->priced & (1u << rc))) {
        c->hits++;
        *x = e->x[rc];
        return true;
    }
    priced_slot *slot = slot_of(c, key, kind, rc, hash);
    if (slot) {
        c->hits++;
        *x = slot->x;
        return true;
    }
    if (peek) return false;
    bool priced = false;
    if (!e) {
        e = build_entry(c, m, sys, t, l, kind, key, &priced);
    } else { /* the recipe held, not yet priced under rc */
        recipe_set_recompute_priced(sys, m, l, &e->r, kind == KIND_MOE, &e->x[rc]);
        if (e->r_rc >= 0) e->r_rc = rc;
        priced = true;
        c->hits++;
    }
    if (!priced) recipe_price(&e->r, &e->x[rc]);
    e->priced |= 1u << rc;
    slot = &c->priced[hash & (c->n_priced - 1)];
    *slot = (priced_slot){.used = true, .rc = rc, .kind = kind, .hash = hash, .key = key->k,
                          .x = e->x[rc], .head_priced = (e->head_priced >> rc) & 1u,
                          .head = e->head[rc]};
    *x = e->x[rc];
    return true;
}

/* The dense and MoE layer costs of l (MoE = dense for a dense model), from the cache when it
 * has them: the cache's last costs of l's slot (speed13: not copied; valid until that slot's
 * next lookup), or own where l's layers are priced outside it. The loss head's are head_cost's:
 * only a layout that is timed, or whose first stage is its last, needs them. */
static const layer_kinds *layer_costs(estimate_cache *c, const model_spec *m,
                                      const system_spec *sys, const training_spec *t,
                                      const layout *l, layer_kinds *own, bool peek)
{
    if (estimate_search_uncached(l)) {
        if (peek) return NULL;
        estimate_layer_times(m, sys, t, l, own);
        return own;
    }
    /* the probe: l with recompute_layers, optimizer_offload_pct, the uneven split's pp_first_layers
     * and pp_last_layers and the DP overlap knobs cleared, the sharding DDP unless FSDP (as
     * estimate_cache_key), and under Megatron without FSDP --fp8-param-gather cleared (as
     * estimate_cache_key: Megatron's recipes read it in the FSDP unit alone); its padding zeroed,
     * so equal bytes are equal fields. All in one masking (estimate_cache.c probe_masks). */
    int v = l->tp_comm_overlap ? 1 : 0, rc = (int)l->recompute,
        fsdp = l->framework == FRAMEWORK_MEGATRON && l->sharding == SHARDING_FSDP;
    layout probe;
    estimate_key_masked_copy(&probe, l,
                c->probe_mask[l->sharding == SHARDING_FSDP         ? PROBE_FSDP
                              : l->framework == FRAMEWORK_MEGATRON ? PROBE_MEGATRON
                                                                   : PROBE_OTHER]);
    int p = (int)probe.precision * 2 + (probe.fp8_param_gather ? 1 : 0);
    layer_kinds *kinds = &c->last_kinds[v][rc][fsdp][p];
    if (c->have_last[v][rc][fsdp][p] &&
        estimate_same_layout(&probe, &c->last[v][rc][fsdp][p])) {
        c->hits += model_is_moe(m) ? 2 : 1;
        return kinds;
    }
    lookup_key whole;
    layer_time dx, mx; /* into kinds once both are there (a peek may find one alone) */
    if (model_is_moe(m)) {
        lookup_key dense;
        estimate_key_moe_pair(c, l, &whole, &dense);
        prefetch_slot(c, &dense, KIND_DENSE, rc);
        prefetch_slot(c, &whole, KIND_MOE, rc);
        if (!kind_cost(c, m, sys, t, l, KIND_DENSE, &dense, peek, &dx) ||
            !kind_cost(c, m, sys, t, l, KIND_MOE, &whole, peek, &mx))
            return NULL;
    } else {
        estimate_key_of(c, l, &whole);
        if (!kind_cost(c, m, sys, t, l, KIND_DENSE, &whole, peek, &dx)) return NULL;
        mx = dx;
    }
    kinds->dense = kinds->dense_bf16 = dx;
    kinds->moe = kinds->moe_bf16 = mx;
    c->last[v][rc][fsdp][p] = probe;
    c->have_last[v][rc][fsdp][p] = true;
    return kinds;
}

const layer_kinds *estimate_search_layer_costs(estimate_cache *c, const model_spec *m,
                                               const system_spec *sys, const training_spec *t,
                                               const layout *l, layer_kinds *own)
{
    return layer_costs(c, m, sys, t, l, own, false);
}

const layer_kinds *estimate_search_layer_costs_held(estimate_cache *c, const model_spec *m,
                                                    const layout *l)
{
    return layer_costs(c, m, NULL, NULL, l, NULL, true);
}

/* The loss head's costs of l (it depends on the recompute setting through Megatron's MTP
 * layers, recipe_mtp.c), from the cache when it has them: the entry or the priced slot of l's
 * whole key (the MoE kind's, or a dense model's) and recompute setting. */
static void head_cost(estimate_cache *c, const model_spec *m, const system_spec *sys,
                      const training_spec *t, const layout *l, layer_time *head)
{
    if (estimate_search_uncached(l)) {
        estimate_head_cost(m, sys, t, l, &head->fwd_s, &head->bwd_s);
        return;
    }
    int kind = model_is_moe(m) ? KIND_MOE : KIND_DENSE;
    int rc = (int)l->recompute;
    lookup_key key;
    estimate_key_of(c, l, &key);
    unsigned long hash = slot_hash(&key, kind, rc);
    cache_entry *e = entry_of(c, kind, &key);
    if (e && (e->head_priced & (1u << rc))) {
        *head = e->head[rc];
        return;
    }
    priced_slot *slot = slot_of(c, &key, kind, rc, hash);
    if (slot && slot->head_priced) {
        *head = slot->head;
        return;
    }
    *head = (layer_time){0};
    /* Megatron's MTP modules run a layer of the decoder's last kind with l's recompute
     * setting (recipe_mtp.c): the entry's recipe where its flags are l's (r_rc) and its kind
     * is that layer's, the very ops recipe_layer would build (make_recipe) */
    bool last_moe = model_layer_is_moe(m, m->layers - 1);
    const recipe *mtp = e && e->r_rc == rc && last_moe == (kind == KIND_MOE) &&
                                layout_mtp_layers(m, l) > 0
                            ? &e->r
                            : NULL;
    estimate_head_cost_mtp(m, sys, t, l, mtp, &head->fwd_s, &head->bwd_s);
    if (e) {
        e->head[rc] = *head;
        e->head_priced |= 1u << rc;
    }
    if (slot) {
        slot->head = *head;
        slot->head_priced = true;
    }
}

/* The head of the variants with l's tp_comm_overlap, priced once: the last stage alone holds
 * it (estimate_stage_cost), so a layout pruned on a first stage that is not its last never
 * needs it. */
static void ensure_head(estimate_cache *c, const model_spec *m, const system_spec *sys,
                        const training_spec *t, const layout *l, layer_time *head, bool *have)
{
    if (*have) return;
    if (c) head_cost(c, m, sys, t, l, head);
    else estimate_head_cost(m, sys, t, l, &head->fwd_s, &head->bwd_s);
    *have = true;
}

/*
 * Layouts known to fit without their memory breakdown: a pruned one needs none
 * (estimate_layout_search), so a search that prunes skips it where a twin that fits, and whose
 * memory is provably no less, has been seen. Three such twins, under Megatron (not offload, whose
 * layouts are never pruned):
 *  - the distributed optimizer's memory is at most DDP's (memory.c stage_memory): the two
 *    differ only in the optimizer state (12 bytes a parameter over the shard, sharded <= params,
 *    against 12 a parameter) and, with bf16 states (DISTOPT only), the gradients (2 against 2
 *    or 4 bytes) and the state (8 over the shard); no other term of a stage reads the sharding
 *    between these two. Twin: the same layout under DDP (without bf16 states).
 *  - selective recompute of core attention alone (recompute_modules 0) saves at most what no
 *    recompute saves: memory_layer_activation_bytes drops the unfused softmax term and is the
 *    same otherwise (recompute_modules_of frees nothing else for core attention alone), and
 *    of a stage only the activations read the setting (full recompute's branch aside), summed
 *    the same way. Twin: the same layout without recompute. In bf16, or with flash attention
 *    (speed19): low precision's bf16 first/last layers are added in as differences
 *    (stage_memory), which need not keep the order in floating point, but with flash attention
 *    the two settings' per-layer bytes are the same doubles (the softmax term is the unfused
 *    path's alone; precision_rules_of, the saved-input terms and the bf16 layers' copy,
 *    precision_bf16_layout, read no recompute field), so every sum is the same: equal memory.
 *  - --fp8-param-gather's memory is at most the same low-precision layout's without it
 *    (speed12): memory_precision_add is the only stage term that reads the knob (besides the
 *    stage's low-precision parameters it passes in, memory.c), and with it the weight copy
 *    beside each Linear weight is operand_bytes (pb) less, and the weights (the sharded
 *    weights and the two gathered units under Megatron-FSDP) lose (2 - pb) bytes a
 *    low-precision parameter, subtracted after the same sums: with 0 <= pb <= 2 each figure
 *    is no larger. Twin: the same layout without the knob, listed just before it (search.c
 *    emit).
 * A stage's total and need are sums (and maxima) of those terms in one order, each no larger,
 * so each candidate stage's figures and their peak are no larger: rounding is monotone. The
 * overlap variants' memory is their knob-off memory plus the same userbuffers in both. Every
 * layout seen to fit (computed, or known by a twin) is kept, keyed by the layout with the DP
 * overlap knobs (which no memory figure reads) cleared; twins come a few layouts before (the
 * sharding and recompute loops are the list's innermost, search_layouts.c, and a layout's
 * precisions follow it, search.c emit); only those that can be a twin (DDP, no recompute, or
 * low precision without the gather) are kept.
 */
/* The key of l (FIT_SELF) or of its twin (FIT_*_TWIN: l with the twin's fields set, each to
 * zero bytes, twin_fits): the DP overlap knobs cleared, the padding zeroed, by one masking
 * (estimate_cache.c probe_masks; speed27: the twin's copy and field stores stalled the key's
 * word loads). The fields read here are no twin's. */
static bool fit_key(const estimate_cache *c, const layout *l, int which, lookup_key *key)
{
    if (l->framework != FRAMEWORK_MEGATRON || l->optimizer_offload_pct > 0 ||
        l->activation_offload)
        return false;
    estimate_key_masked(l, c->fit_mask[which], key);
    return true;
}

static bool seen_fit(const estimate_cache *c, const layout *l, int which)
{
    lookup_key key;
    if (!fit_key(c, l, which, &key)) return false;
    const twin_slot *t = &c->twin[key.hash & (TWIN_SLOTS - 1)];
    return t->used && t->hash == key.hash && estimate_same_layout(&t->key, &key.k);
}

static bool twin_fits(const estimate_cache *c, const training_spec *t, const layout *l)
{
    if (l->framework != FRAMEWORK_MEGATRON) return false;
    /* the twin under DDP without bf16 states */
    if (l->sharding == SHARDING_DISTOPT && seen_fit(c, l, FIT_DDP_TWIN)) return true;
    /* the twin without recompute */
    if (l->recompute == RECOMPUTE_SELECTIVE && l->recompute_modules == 0 &&
        (!precision_is_low(l) || t->attention == ATTENTION_FLASH) &&
        seen_fit(c, l, FIT_NO_RECOMPUTE_TWIN))
        return true;
    if (precision_param_gather(l)) {
        double pb = precision_param_bytes(l); /* the premise: 0 <= pb <= 2 (header comment) */
        /* the twin without the gather */
        if (pb >= 0 && pb <= 2.0 && seen_fit(c, l, FIT_NO_GATHER_TWIN)) return true;
    }
    return false;
}

static void fit_put(estimate_cache *c, const layout *l)
{
    lookup_key key;
    /* only a possible twin: a DDP layout, one without recompute, or a low-precision one
     * without the parameter gather where the gather is allowed (not DDP) */
    if (l->sharding != SHARDING_DDP && l->recompute != RECOMPUTE_NONE &&
        !(precision_is_low(l) && !l->fp8_param_gather))
        return;
    if (!fit_key(c, l, FIT_SELF, &key)) return;
    twin_slot *t = &c->twin[key.hash & (TWIN_SLOTS - 1)];
    t->used = true;
    t->hash = key.hash;
    t->key = key.k;
}

/* The model's counts and the memory memo, made on first use (one model a cache). */
static void ensure_counts(estimate_cache *c, const model_spec *m)
{
    if (c->have_counts) return;
    estimate_model_counts_of(m, &c->counts);
    memory_memo_init(&c->memo, m);
    c->have_counts = true;
}

memory_breakdown estimate_cache_memory_peak(estimate_cache *c, const model_spec *m,
                                            const system_spec *sys, const training_spec *t,
                                            const layout *l)
{
    if (!c) return memory_peak(m, sys, t, l);
    ensure_counts(c, m);
    return memory_peak_memo(m, &c->memo, sys, t, l);
}

/*
 * A selective-recompute layout's memory from its twin without recompute (speed19): under
 * Megatron with flash attention and core attention alone recomputed (recompute_modules 0) the
 * two breakdowns are the same doubles. memory.c reads the recompute setting only in
 * memory_layer_activation_bytes (the unfused softmax term, and the modules
 * recompute_modules_of frees: none for core attention alone), in full recompute's branches
 * and in torchtitan's and torch's (layout_is_pytorch) branches; precision_rules_of,
 * precision_bf16_layout and every other figure memory.c takes read no recompute field
 * (memory_precision.c, memory_params.c, memory_phases.c, memory_logits.c, memory_pools.c,
 * nccl_memory.c, pp_schedule.c, offload.c, overlap.c, async_tp.c, cp_allgather.c). So every
 * term is computed from the same values in the same order. The twin comes a few layouts
 * before (the recompute loop is the list's innermost but for the uneven and rank-order
 * variants and the precisions, search_layouts.c, search.c emit). want: the kind of layout
 * the slot serves (NONE: kept, SELECTIVE: looked up).
 */
static memory_twin_slot *memory_twin(estimate_cache *c, const training_spec *t,
                                     const layout *l, layout_recompute want, lookup_key *key)
{
    if (l->framework != FRAMEWORK_MEGATRON || t->attention != ATTENTION_FLASH ||
        l->recompute != want || (want == RECOMPUTE_SELECTIVE && l->recompute_modules != 0))
        return NULL;
    key->k = *l;
    key->k.recompute = RECOMPUTE_NONE;
    key->k.overlap_grad_reduce = key->k.overlap_param_gather = false; /* read by no figure */
    estimate_key_mask(c, &key->k);
    key->hash = estimate_key_hash(&key->k);
    return &c->memory_twin[key->hash & (MEMORY_TWIN_SLOTS - 1)];
}

static bool memory_twin_get(estimate_cache *c, const system_spec *sys, const training_spec *t,
                            const layout *l, memory_breakdown *out)
{
    lookup_key key;
    const memory_twin_slot *s = memory_twin(c, t, l, RECOMPUTE_SELECTIVE, &key);
    if (!s || !s->used || s->hash != key.hash || s->sys != sys ||
        !estimate_same_layout(&s->key, &key.k) || memcmp(&s->t, t, sizeof *t))
        return false;
    *out = s->memory;
    return true;
}

static void memory_twin_put(estimate_cache *c, const system_spec *sys, const training_spec *t,
                            const layout *l, const memory_breakdown *mb)
{
    lookup_key key;
    memory_twin_slot *s = memory_twin(c, t, l, RECOMPUTE_NONE, &key);
    if (!s) return;
    *s = (memory_twin_slot){.used = true, .hash = key.hash, .sys = sys, .t = *t, .key = key.k,
                            .memory = *mb};
}

/* The memory of ls[i], the first variant of its tp_comm_overlap value, into outs[i]. */
static void memory_of(const model_spec *m, const estimate_model_counts *counts,
                      estimate_cache *cache, const system_spec *sys, const training_spec *t,
                      const layout *ls, const int *first, int i, estimate *outs)
{
    const layout *l = &ls[i];
    if (l->tp_comm_overlap && first[0] >= 0 && l->framework == FRAMEWORK_MEGATRON) {
        /* --tp-comm-overlap adds its userbuffers to every stage alike (memory.c), so the
         * peak stage stays: the knob-off memory plus them */
        double ub = overlap_tp_userbuffer_bytes(m, t, l);
        outs[i] = outs[first[0]];
        outs[i].layout = *l;
        outs[i].memory.comm_buffer_bytes += ub;
        outs[i].memory.other_bytes += ub;
        outs[i].memory.total_bytes += ub;
        outs[i].memory.need_bytes += ub;
    } else if (cache) {
        memory_breakdown mb;
        if (cache->memo.model == m && memory_twin_get(cache, sys, t, l, &mb)) {
            estimate_memory_part_memo(m, counts, &cache->memo, sys, t, l, &mb, &outs[i]);
            return;
        }
        cache->memo.verdict_only = estimate_search_memory_verdict_only(cache, sys, l);
        cache->memo.stop_over_bytes = cache->unfit_stop_over_bytes;
        cache->memo.partial = false;
        estimate_memory_part_memo(m, counts, &cache->memo, sys, t, l, NULL, &outs[i]);
        cache->memo.verdict_only = false;
        if (cache->memo.model == m && !cache->memo.partial)
            memory_twin_put(cache, sys, t, l, &outs[i].memory);
    } else {
        estimate_memory_part_counted(m, counts, sys, t, l, &outs[i]);
    }
}

static cm_status search_checked(const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *ls, int n, estimate *outs,
                                estimate_cache *cache, double prune_above_s,
                                estimate_outcome *how);



cm_status estimate_layout_search(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, const layout *ls, int n,
                                 estimate *outs, estimate_cache *cache, double prune_above_s,
                                 estimate_outcome *how)
{
    *how = ESTIMATE_UNTIMED;
    if (n < 1) return CM_EINVAL;
    if (!estimate_cache_layout_ok(cache, m, sys, t, &ls[0])) return CM_EINVAL;
    if (cache && cache->bound_first && estimate_search_variants_ok(ls, n) &&
        estimate_search_bounded_first(m, sys, t, ls, n, cache, prune_above_s)) {
        *how = ESTIMATE_BOUNDED;
        return CM_OK;
    }
    return search_checked(m, sys, t, ls, n, outs, cache, prune_above_s, how);
}

cm_status estimate_layout_search_try(const model_spec *m, const system_spec *sys,
                                     const training_spec *t, const layout *ls, int n,
                                     estimate *outs, estimate_cache *cache,
                                     double prune_above_s, estimate_outcome *how)
{
    *how = ESTIMATE_UNTIMED;
    if (n < 1 || !estimate_search_knob_rules_hold(&ls[0])) return CM_EINVAL;
    return search_checked(m, sys, t, ls, n, outs, cache, prune_above_s, how);
}

/* estimate_layout_search past ls[0]'s check */
static cm_status search_checked(const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *ls, int n, estimate *outs,
                                estimate_cache *cache, double prune_above_s,
                                estimate_outcome *how)
{
    if (!estimate_search_variants_ok(ls, n)) return CM_EINVAL;
    /* memory and the stages' micro-batch times depend on tp_comm_overlap alone among the
     * knobs (its userbuffers, its exposed TP time): once per value */
    estimate_model_counts own;
    const estimate_model_counts *counts = &own;
    if (cache) {
        ensure_counts(cache, m);
        counts = &cache->counts;
    } else {
        estimate_model_counts_of(m, &own);
    }
    int first[2] = {-1, -1};
    stage_time worst[2];
    layer_kinds kinds_own[2];
    /* each k's layer costs: the cache's (estimate_search_layer_costs; the lookups below of another k or of
     * a Megatron-FSDP layout's DDP form use other slots) or kinds_own[k] */
    const layer_kinds *kinds[2] = {&kinds_own[0], &kinds_own[1]};
    layer_time head[2];
    bool have_head[2] = {false, false}; /* head[k] priced (ensure_head) */
    bool have_kinds[2] = {false, false}; /* kinds[k] priced (layer_costs) */
    bool lazy[2] = {false, false}; /* outs[first[k]]'s memory not made yet (fits: twin_fits) */
    double bound_s = -1; /* the smallest lower bound of a variant that fits */
    for (int i = 0; i < n; i++) {
        const layout *l = &ls[i];
        int k = l->tp_comm_overlap;
        if (first[k] >= 0) continue;
        first[k] = i;
        /* a layout whose twin fits fits too (twin_fits): its breakdown waits until it is
         * timed (below), a pruned one never needs it */
        bool track = cache && cache->skip_pruned_memory && prune_above_s > 0;
        if (track && estimate_search_prunable(sys, l) && twin_fits(cache, t, l)) {
            lazy[k] = true;
            outs[i].microbatches = layout_microbatches(l, t); /* the bound's, below */
            fit_put(cache, l);
        } else {
            if (k == 1 && lazy[0]) { /* the knob-on memory is made from the knob-off one */
                memory_of(m, counts, cache, sys, t, ls, first, first[0], outs);
                lazy[0] = false;
            }
            memory_of(m, counts, cache, sys, t, ls, first, i, outs);
            if (track && memory_fits(&outs[i].memory)) fit_put(cache, l);
        }
        outs[i].feasible = false; /* untimed unless assembled below */
        if (!lazy[k] && !memory_fits(&outs[i].memory)) continue;
        if (prune_above_s > 0 && prune_above_s <= ESTIMATE_PRUNE_ALL_S &&
            estimate_search_prunable(sys, l)) {
            /* the caller needs no time (estimate.h): pruned without a bound. Sound as every
             * pruning here is: a prunable variant that fits is feasible once timed
             * (estimate_search_prunable), so the caller counts it the same either way */
            if (bound_s < 0) bound_s = INFINITY;
        } else if (prune_above_s > 0 && estimate_search_prunable(sys, l)) {
            /* the step is at least f x the first stage's micro-batch time */
            double f = estimate_search_bound_factor(l, outs[i].microbatches);
            /* Megatron-FSDP: its DDP form's bound first (estimate_search_fsdp_layers_lb, <=
             * the lb below): where it exceeds the threshold the FSDP layer is not priced; the
             * decision is the same, as the one below is then over it too */
            double lb = -1;
            double ddp = cache ? estimate_search_fsdp_layers_lb(cache, m, sys, t, l, false) : -1;
            if (ddp >= 0 && f * ddp * (1 - 1e-9) > prune_above_s) lb = f * ddp * (1 - 1e-9);
            if (lb < 0) {
                if (!have_kinds[k]) {
                    if (cache) kinds[k] = estimate_search_layer_costs(cache, m, sys, t, l, &kinds_own[k]);
                    else estimate_layer_times(m, sys, t, l, &kinds_own[k]);
                    have_kinds[k] = true;
                }
                /* the first stage's decoder layers alone first (estimate_stage_layers_total:
                 * <= the stage's total, so this lb <= the one below); only where it does not
                 * exceed the threshold is the whole stage priced. The decision is the same:
                 * every variant's lb here exceeds the threshold exactly when its whole-stage
                 * lb does. */
                lb = f * estimate_stage_layers_total(m, sys, t, l, 0, kinds[k]);
                if (lb <= prune_above_s) {
                    /* the first stage holds the head where it is the head's stage: pp 1, and
                     * the V schedules' rank 0 (layout_head_stage; speed21: before, only pp 1
                     * priced it, and a V-schedule layout's bound read head[k] unset) */
                    if (layout_head_stage(l) == 0)
                        ensure_head(cache, m, sys, t, l, &head[k], &have_head[k]);
                    stage_time s0 = estimate_stage_cost(m, sys, t, l, 0, kinds[k], &head[k]);
                    lb = f * estimate_stage_total(&s0);
                }
            }
            if (bound_s < 0 || lb < bound_s) bound_s = lb;
        } else {
            bound_s = 0; /* never pruned */
        }
    }
    if (prune_above_s > 0 && bound_s > prune_above_s) {
        /* fits, but cannot beat the threshold: the other variants' memory is not copied (a
         * search that prunes reads none of it; estimate_search_share_memory on demand) */
        *how = ESTIMATE_PRUNED;
        return CM_OK;
    }
    for (int k = 0; k < 2; k++) /* knob-off first: the knob-on memory is made from it */
        if (lazy[k]) memory_of(m, counts, cache, sys, t, ls, first, first[k], outs);
    if (bound_s < 0 && cache && cache->skip_pruned_memory) {
        /* nothing fits: a search without a visitor reads the first variant alone (its
         * closest-to-fitting slot, search.c consider), the others' feasible flags aside */
        for (int i = 0; i < n; i++) outs[i].feasible = false;
        return CM_OK;
    }
    estimate_search_share_memory(ls, n, outs);
    if (bound_s < 0) return CM_OK; /* nothing fits: every variant untimed */
    for (int i = 0; i < n; i++) {
        int k = ls[i].tp_comm_overlap;
        if (!memory_fits(&outs[i].memory)) continue;
        if (i == first[k]) {
            if (!have_kinds[k]) { /* a variant the FSDP bound passed over, not pruned */
                if (cache) kinds[k] = estimate_search_layer_costs(cache, m, sys, t, &ls[i], &kinds_own[k]);
                else estimate_layer_times(m, sys, t, &ls[i], &kinds_own[k]);
                have_kinds[k] = true;
            }
            ensure_head(cache, m, sys, t, &ls[i], &head[k], &have_head[k]);
            worst[k] = estimate_worst_stage(m, sys, t, &ls[i], kinds[k], &head[k]);
        }
        *how = ESTIMATE_TIMED;
        estimate_time_assemble(m, sys, t, &ls[i], &worst[k], &outs[i]);
    }
    return CM_OK;
}
