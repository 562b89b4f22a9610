/*
 * estimate_cache_key.c — the layer-cost cache's keys (estimate_cache_internal.h): which fields
 * of a layout a layer recipe does not read (cleared), the key's bytes (padding zeroed), its
 * hash, and the masked probe of the cache's last costs. Apart from estimate_search.c, which
 * looks the keys up (speed27: that file had reached its 800 lines).
 */
#include "estimate_cache_internal.h"

#include <stddef.h>
#include <string.h>

/* The fields a layer recipe does not read, cleared (estimate_search.c's header comment): the
 * key's definition. The search builds it from masks (estimate_key_masks below, faster);
 * tests/test_cache_key.c holds the two to the same bytes, so a field cleared here must be
 * cleared there too. */
layout estimate_cache_key(const layout *l)
{
    layout k = *l;
    k.recompute = RECOMPUTE_NONE;
    k.recompute_layers = 0;
    if (k.sharding != SHARDING_FSDP) k.sharding = SHARDING_DDP;
    k.overlap_grad_reduce = k.overlap_param_gather = false;
    k.vpp = 1;
    k.pp_first_layers = k.pp_last_layers = 0; /* how many layers a stage, not what one costs */
    k.optimizer_offload_pct = 0; /* the optimizer step only */
    /* the pipeline schedule: read by the bubble (estimate.c, pp_schedule.c), the stage split
     * (pp_split.c), the memory (memory.c, memory_phases.c, memory_memo.c, memory_params.c and
     * memory_holes.c through layout_head_stage) and the rules, never by a layer's or the loss
     * head's recipe (layer_recipe.c, recipe_head_mtp: the head's FSDP2 root copies take the
     * last stage, pp - 1); torchtitan's layouts are listed under each schedule (speed26) */
    k.pp_schedule = PP_SCHEDULE_DEFAULT;
    /* the rank order places the DP, expert-DP and PP groups only (layout_place.c), which no
     * recipe prices without FSDP, and Megatron-FSDP refuses the other order */
    if (k.sharding != SHARDING_FSDP) k.rank_order = RANK_ORDER_DP_PP;
    /* Megatron without FSDP: the recipes read dp and pp only as layout_gpus(l) == 1 (alone:
     * elementwise.c). What they read of the layout (layer_recipe.c, recipe_builder.c,
     * recipe_price.c, host_dispatch.c, elementwise.c, moe_dispatch.c, overlap.c's TP terms,
     * async_tp.c, recompute_modules.c, precision.c's rules, attention_rate.c): tp, cp, ep,
     * etp, mbs, sp, the precision fields, the implementation, recompute (flags only) and
     * tp_comm_overlap; dp only in the FSDP branches (the shard group) and through
     * layout_gpus; pp only in recipe_head's FSDP2 root copies (fsdp_copies_apply: FSDP2 or
     * torchtitan with FSDP). The training spec's global batch, which follows dp under
     * --gbs-policy nearest, is read by none of them. */
    if (k.framework == FRAMEWORK_MEGATRON && k.sharding != SHARDING_FSDP) {
        k.dp = layout_gpus(l) == 1; /* 1: alone, 0: not */
        k.pp = 1;
        /* --fp8-param-gather: read by a recipe only in the FSDP unit's all-gather
         * (layer_recipe.c rb_fsdp_unit, precision_param_gather_bytes); the distributed
         * optimizer's FP8 gather is the DP sync's (dp_sync.c) and its memory memory.c's, so
         * the variant with it shares the one without's recipes (speed12) */
        k.fp8_param_gather = false;
    }
    return k;
}

/* The bytes of a field, width bytes at offset, set in mask (0xff) or cleared (0). A byte loop,
 * not memset: GCC's -Warray-bounds under -fsanitize=address took the inlined memset of a field
 * at offset 0 for one past a zero-sized object (the CI's sanitizer build). */
static void field_bytes(unsigned long mask[LAYOUT_WORDS], size_t offset, size_t width, int value)
{
    unsigned char *bytes = (unsigned char *)mask;
    for (size_t i = 0; i < width && offset + i < LAYOUT_WORDS * sizeof(unsigned long); i++)
        bytes[offset + i] = (unsigned char)value;
}

/* estimate_cache_key's fields as masks (the cache's key_mask, key_set; dense_mask, dense_set):
 * each field it clears is cleared in every case's mask, each it sets to a value is cleared in
 * the mask and holds the value in the set words, all within held_mask. */
void estimate_key_masks(estimate_cache *c)
{
    for (int k = 0; k < KEY_CASES; k++) {
        unsigned long *km = c->key_mask[k];
        layout set;
        memset(&set, 0, sizeof set);
        memcpy(km, c->held_mask, sizeof c->held_mask);
        field_bytes(km, offsetof(layout, recompute), sizeof(layout_recompute), 0);
        field_bytes(km, offsetof(layout, recompute_layers), sizeof(int), 0);
        field_bytes(km, offsetof(layout, overlap_grad_reduce), sizeof(bool), 0);
        field_bytes(km, offsetof(layout, overlap_param_gather), sizeof(bool), 0);
        field_bytes(km, offsetof(layout, vpp), sizeof(int), 0);
        set.vpp = 1;
        field_bytes(km, offsetof(layout, pp_first_layers), sizeof(int), 0);
        field_bytes(km, offsetof(layout, pp_last_layers), sizeof(int), 0);
        field_bytes(km, offsetof(layout, optimizer_offload_pct), sizeof(int), 0);
        field_bytes(km, offsetof(layout, pp_schedule), sizeof(layout_pp_schedule), 0);
        if (k != KEY_FSDP) { /* to SHARDING_DDP and RANK_ORDER_DP_PP: zero bytes */
            field_bytes(km, offsetof(layout, sharding), sizeof(layout_sharding), 0);
            field_bytes(km, offsetof(layout, rank_order), sizeof(layout_rank_order), 0);
        }
        if (k == KEY_MEGATRON || k == KEY_MEGATRON_ALONE) {
            field_bytes(km, offsetof(layout, dp), sizeof(int), 0);
            set.dp = k == KEY_MEGATRON_ALONE;
            field_bytes(km, offsetof(layout, pp), sizeof(int), 0);
            set.pp = 1;
            field_bytes(km, offsetof(layout, fp8_param_gather), sizeof(bool), 0);
        }
        memcpy(c->key_set[k], &set, sizeof set);
        for (int w = 0; w < LAYOUT_WORDS; w++) c->key_set[k][w] &= c->held_mask[w];
    }
    layout dset;
    memset(&dset, 0, sizeof dset);
    memset(c->dense_mask, 0xff, sizeof c->dense_mask);
    field_bytes(c->dense_mask, offsetof(layout, ep), sizeof(int), 0);
    dset.ep = 1;
    field_bytes(c->dense_mask, offsetof(layout, etp), sizeof(int), 0);
    field_bytes(c->dense_mask, offsetof(layout, moe_dispatcher), sizeof(layout_moe_dispatcher), 0);
    memcpy(c->dense_set, &dset, sizeof dset);
    for (int w = 0; w < LAYOUT_WORDS; w++) c->dense_set[w] &= c->held_mask[w];
}

/* l's case of estimate_cache_key (KEY_*). */
static int key_case(const layout *l)
{
    if (l->sharding == SHARDING_FSDP) return KEY_FSDP;
    if (l->framework != FRAMEWORK_MEGATRON) return KEY_OTHER;
    return layout_gpus(l) == 1 ? KEY_MEGATRON_ALONE : KEY_MEGATRON;
}

/* FNV-1a over the key's 8-byte words and its tail. */
unsigned long estimate_key_hash(const layout *k)
{
    const unsigned char *b = (const unsigned char *)k;
    unsigned long h = 1469598103934665603ul;
    size_t i = 0;
    for (; i + sizeof(unsigned long) <= sizeof *k; i += sizeof(unsigned long)) {
        unsigned long w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 1099511628211ul;
    }
    for (; i < sizeof *k; i++) h = (h ^ b[i]) * 1099511628211ul;
    return h ^ (h >> 29);
}

/* Every byte of k no codec field holds (padding, whatever it held) zeroed: the words masked
 * (the tail of a layout whose size is not a multiple of a word masked bytewise). */
void estimate_key_mask(const estimate_cache *c, layout *k)
{
    estimate_key_masked_copy(k, k, c->held_mask); /* word by word: in place is safe */
}

/* dst = src's words masked with mask (a layout's worth of words: held_mask's shape). */
void estimate_key_masked_copy(layout *dst, const layout *src, const unsigned long *mask)
{
    const unsigned char *sb = (const unsigned char *)src, *mb = (const unsigned char *)mask;
    unsigned char *db = (unsigned char *)dst;
    size_t i = 0;
    for (; i + sizeof(unsigned long) <= sizeof *dst; i += sizeof(unsigned long)) {
        unsigned long w, mw;
        memcpy(&w, sb + i, sizeof w);
        memcpy(&mw, mb + i, sizeof mw);
        w &= mw;
        memcpy(db + i, &w, sizeof w);
    }
    for (; i < sizeof *dst; i++) db[i] = sb[i] & mb[i];
}

/* l's words ANDed with mask and ORed with set into key, hashed as they go (estimate_key_hash's
 * value). */
static void masked_set_key(const layout *l, const unsigned long *mask, const unsigned long *set,
                           lookup_key *key)
{
    _Static_assert(sizeof(layout) % sizeof(unsigned long) == 0, "a layout is whole words");
    const unsigned char *src = (const unsigned char *)l;
    unsigned char *dst = (unsigned char *)&key->k;
    unsigned long h = 1469598103934665603ul;
    for (int i = 0; i < LAYOUT_WORDS; i++) {
        unsigned long w;
        memcpy(&w, src + i * sizeof w, sizeof w);
        w = (w & mask[i]) | set[i];
        memcpy(dst + i * sizeof w, &w, sizeof w);
        h = (h ^ w) * 1099511628211ul;
    }
    key->hash = h ^ (h >> 29);
}

/* l's whole key (the MoE kind's, or a dense model's dense kind's) into key: estimate_cache_key
 * masked, as the words of l ANDed and ORed with its case's masks. */
void estimate_key_of(const estimate_cache *c, const layout *l, lookup_key *key)
{
    int kc = key_case(l);
    masked_set_key(l, c->key_mask[kc], c->key_set[kc], key);
}

/* l's words masked with mask into key, hashed as they go (estimate_key_hash's value). */
void estimate_key_masked(const layout *l, const unsigned long *mask, lookup_key *key)
{
    static const unsigned long none[LAYOUT_WORDS];
    masked_set_key(l, mask, none, key);
}

/* The dense kind's key of an MoE model, from the whole one: the expert fields cleared. */
void estimate_key_dense(const lookup_key *whole, lookup_key *key)
{
    key->k = whole->k;
    key->k.ep = 1;
    key->k.etp = 0;
    key->k.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    key->hash = estimate_key_hash(&key->k);
}

/* An MoE model's whole key of l and its dense kind's (estimate_key_of, estimate_key_dense), each
 * from l's words by the masks, the two hashes taken in one pass: two FNV-1a chains side by side,
 * each word's multiply waiting on the one before it in its own chain alone (speed27: one after
 * the other, the chains' latency was a third of the lookup's time). The same values as those
 * two. */
void estimate_key_moe_pair(const estimate_cache *c, const layout *l, lookup_key *whole,
                           lookup_key *dense)
{
    int kc = key_case(l);
    const unsigned long *km = c->key_mask[kc], *ks = c->key_set[kc];
    const unsigned char *src = (const unsigned char *)l;
    unsigned char *a = (unsigned char *)&whole->k, *b = (unsigned char *)&dense->k;
    unsigned long ha = 1469598103934665603ul, hb = ha;
    for (int i = 0; i < LAYOUT_WORDS; i++) {
        unsigned long wa, wb;
        memcpy(&wa, src + i * sizeof wa, sizeof wa);
        wa = (wa & km[i]) | ks[i];
        wb = (wa & c->dense_mask[i]) | c->dense_set[i];
        memcpy(a + i * sizeof wa, &wa, sizeof wa);
        memcpy(b + i * sizeof wb, &wb, sizeof wb);
        ha = (ha ^ wa) * 1099511628211ul;
        hb = (hb ^ wb) * 1099511628211ul;
    }
    whole->hash = ha ^ (ha >> 29);
    dense->hash = hb ^ (hb >> 29);
}
