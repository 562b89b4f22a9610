/*
 * estimate_cache.c — making, sizing and freeing the search's layer-cost cache
 * (estimate_cache_internal.h; what it holds and how estimate_search.c uses it is said there and
 * in that file). Split from estimate_search.c (issue 21, speed6) to keep that file to its job;
 * also the check of a listed layout against the last one's (estimate_cache_layout_ok, speed12),
 * and the overlap variants' shared memory (estimate_search_share_memory, moved here in speed13),
 * and the rules a memory-knob try or an overlap variant could break (moved here in speed23).
 */
#include "estimate_cache_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "layout_codec.h"
#include "precision.h"

estimate_cache *estimate_cache_new(void) { return estimate_cache_new_for(0); }

/* The tables' sizes for a search of `layouts` layouts: a priced slot for every 16 layouts (a
 * few keys come back per pipeline size), within bounds, so a small search does not fault in
 * megabytes of table it never reaches; a stored recipe for every 8 priced slots: 4096 (12 MB,
 * touched as used) at most. */
static size_t priced_slots_for(long layouts)
{
    size_t n = PRICED_SLOTS_MIN;
    while (n < PRICED_SLOTS_MAX && (long)n * 16 < layouts) n *= 2;
    return n;
}
static size_t stored_for(size_t n_priced)
{
    size_t n = n_priced / 8;
    return n < STORED_MIN ? STORED_MIN : n > STORED_MAX ? STORED_MAX : n;
}

/* A table of n entries of size bytes, zeroed (calloc), whose 2 MiB-aligned interior is asked
 * of Linux in huge pages where it is large enough (speed27: the priced slots of DeepSeek-V3's
 * search at 16384 GPUs, 18 MB read at random, missed the TLB on most lookups: the slot's first
 * read was ~8% of the search's time). madvise(2) MADV_HUGEPAGE only advises: where it is
 * refused or unknown the table is the same memory in small pages. */
static void *table_new(size_t n, size_t size)
{
    void *p = calloc(n, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (p && n * size >= 2 * huge) {
        uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
        uintptr_t end = ((uintptr_t)p + n * size) & ~(huge - 1);
        if (end > start) (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    return p;
}

/* The priced and stored tables grown to the sizes for `layouts` (each entry moved to its slot
 * in the larger table; two that meet there keep the later). Where the memory is not there the
 * tables stay as they are: they are caches, a smaller one only builds more. */
void estimate_cache_expect(estimate_cache *c, long layouts)
{
    size_t np = priced_slots_for(layouts);
    if (np > c->n_priced) {
        priced_slot *p = table_new(np, sizeof *p);
        if (p) {
            for (size_t i = 0; i < c->n_priced; i++)
                if (c->priced[i].used) p[c->priced[i].hash & (np - 1)] = c->priced[i];
            free(c->priced);
            c->priced = p;
            c->n_priced = np;
        }
    }
    size_t ns = stored_for(c->n_priced);
    if (ns > c->n_stored) {
        stored_recipe *st = table_new(ns, sizeof *st);
        if (st) {
            for (size_t i = 0; i < c->n_stored; i++) {
                const stored_recipe *o = &c->stored[i];
                if (o->used) st[(o->hash ^ (unsigned long)o->kind) & (ns - 1)] = *o;
            }
            free(c->stored);
            c->stored = st;
            c->n_stored = ns;
        }
    }
}

/* The bytes of the field at offset, width bytes, cleared in mask. */
static void clear_field(unsigned long *mask, size_t offset, size_t width)
{
    memset((unsigned char *)mask + offset, 0, width);
}

/* c->probe_mask and c->fit_mask from c->held_mask: the fields estimate_search.c's layer_costs
 * probe and fit_key clear (their comments list them; each one's cleared value, 0, false,
 * SHARDING_DDP, RECOMPUTE_NONE, is zero bytes) */
static void probe_masks(estimate_cache *c)
{
    _Static_assert(SHARDING_DDP == 0, "the probe clears the sharding to zero bytes");
    for (int i = 0; i < PROBE_MASKS; i++) {
        unsigned long *pm = c->probe_mask[i];
        memcpy(pm, c->held_mask, sizeof c->held_mask);
        clear_field(pm, offsetof(layout, recompute_layers), sizeof(int));
        clear_field(pm, offsetof(layout, optimizer_offload_pct), sizeof(int));
        clear_field(pm, offsetof(layout, pp_first_layers), sizeof(int));
        clear_field(pm, offsetof(layout, pp_last_layers), sizeof(int));
        clear_field(pm, offsetof(layout, overlap_grad_reduce), sizeof(bool));
        clear_field(pm, offsetof(layout, overlap_param_gather), sizeof(bool));
        if (i != PROBE_FSDP) clear_field(pm, offsetof(layout, sharding), sizeof(layout_sharding));
        if (i == PROBE_MEGATRON) clear_field(pm, offsetof(layout, fp8_param_gather), sizeof(bool));
    }
    /* precision_bf16_layout's fields (precision.c), each set to zero bytes */
    _Static_assert(PRECISION_BF16 == 0 && FP8_RECIPE_DEFAULT == 0,
                   "the bf16 layout's fields are zero bytes");
    memset(c->bf16_mask, 0xff, sizeof c->bf16_mask);
    clear_field(c->bf16_mask, offsetof(layout, precision), sizeof(layout_precision));
    clear_field(c->bf16_mask, offsetof(layout, fp8_recipe), sizeof(layout_fp8_recipe));
    clear_field(c->bf16_mask, offsetof(layout, fp8_param_gather), sizeof(bool));
    clear_field(c->bf16_mask, offsetof(layout, moe_fp8_dispatch), sizeof(bool));
    clear_field(c->bf16_mask, offsetof(layout, bf16_layers_start), sizeof(int));
    clear_field(c->bf16_mask, offsetof(layout, bf16_layers_end), sizeof(int));
    memset(c->fsdp_lb_mask, 0xff, sizeof c->fsdp_lb_mask);
    clear_field(c->fsdp_lb_mask, offsetof(layout, fp8_param_gather), sizeof(bool));
    _Static_assert(RECOMPUTE_NONE == 0, "a twin clears the recompute setting to zero bytes");
    for (int i = 0; i < FIT_MASKS; i++) {
        unsigned long *fm = c->fit_mask[i];
        memcpy(fm, c->held_mask, sizeof c->held_mask);
        clear_field(fm, offsetof(layout, overlap_grad_reduce), sizeof(bool));
        clear_field(fm, offsetof(layout, overlap_param_gather), sizeof(bool));
        if (i == FIT_DDP_TWIN) {
            clear_field(fm, offsetof(layout, sharding), sizeof(layout_sharding));
            clear_field(fm, offsetof(layout, optimizer_bf16_states), sizeof(bool));
        }
        if (i == FIT_NO_RECOMPUTE_TWIN)
            clear_field(fm, offsetof(layout, recompute), sizeof(layout_recompute));
        if (i == FIT_NO_GATHER_TWIN)
            clear_field(fm, offsetof(layout, fp8_param_gather), sizeof(bool));
    }
}

estimate_cache *estimate_cache_new_for(long layouts)
{
    estimate_cache *c = calloc(1, sizeof(estimate_cache));
    if (!c) return NULL;
    c->n_priced = priced_slots_for(layouts);
    c->priced = table_new(c->n_priced, sizeof *c->priced);
    c->n_stored = stored_for(c->n_priced);
    c->stored = table_new(c->n_stored, sizeof *c->stored);
    c->unfit_stop_over_bytes = INFINITY; /* nothing stopped until the caller says */
    if (!c->priced || !c->stored) {
        free(c->priced);
        free(c->stored);
        free(c);
        return NULL;
    }
    bool held[sizeof(layout)] = {false};
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const layout_field *f = &layout_fields[i];
        if (f->training) continue; /* the same for every lookup of a cache (estimate.h) */
        size_t width = f->kind == LAYOUT_KIND_BOOL ? sizeof(bool) : sizeof(int);
        for (size_t b = 0; b < width; b++) held[f->offset + b] = true;
    }
    for (size_t b = 0; b < sizeof(layout); b++)
        if (held[b]) ((unsigned char *)c->held_mask)[b] = 0xff;
    probe_masks(c);
    estimate_key_masks(c);
    return c;
}
void estimate_cache_free(estimate_cache *c)
{
    if (c) {
        free(c->priced);
        free(c->stored);
    }
    free(c);
}

void estimate_cache_counts(const estimate_cache *c, long *builds, long *hits)
{
    *builds = c ? c->builds : 0;
    *hits = c ? c->hits : 0;
}

void estimate_cache_skip_pruned_memory(estimate_cache *c, bool skip)
{
    if (c) c->skip_pruned_memory = skip;
}

void estimate_cache_bound_first(estimate_cache *c, bool first)
{
    if (c) c->bound_first = first;
}

void estimate_cache_unfit_memory_whole(estimate_cache *c, bool whole)
{
    if (c) c->unfit_memory_whole = whole;
}

void estimate_cache_unfit_stop_over(estimate_cache *c, double over_bytes)
{
    if (c) c->unfit_stop_over_bytes = over_bytes > 0 ? over_bytes : 0;
}

void estimate_cache_check_per_layout(estimate_cache *c, bool several)
{
    if (c) c->check_per_layout = several;
}

bool estimate_cache_layout_ok(estimate_cache *c, const model_spec *m, const system_spec *sys,
                              const training_spec *t, const layout *l)
{
    if (!c || !c->check_per_layout) return layout_check(m, sys, t, l, 0, NULL, 0) == CM_OK;
    /* compared byte for byte, padding and all: equal bytes are equal fields (a layout and
     * its precisions are copies of one, search.c emit, so their padding agrees) */
    layout b; /* precision_bf16_layout(l)'s bytes, by one masking (c->bf16_mask) */
    estimate_key_masked_copy(&b, l, c->bf16_mask);
    if (!c->have_check || c->check_m != m || !estimate_same_layout(&b, &c->check_key) ||
        memcmp(t, &c->check_t, sizeof *t)) {
        c->check_ok = layout_check_base(m, t, &b) == CM_OK;
        c->check_key = b;
        c->check_t = *t;
        c->check_m = m;
        c->have_check = true;
    }
    return c->check_ok && layout_check_precision(m, sys, l) == CM_OK;
}

void estimate_search_share_memory(const layout *ls, int n, estimate *outs)
{
    int first[2] = {-1, -1};
    for (int i = 0; i < n; i++) { /* the other variants: their group's memory half */
        int k = ls[i].tp_comm_overlap;
        if (first[k] < 0) {
            first[k] = i;
            continue;
        }
        outs[i] = outs[first[k]];
        outs[i].layout = ls[i];
    }
}

/* The rules of layout.c that read the fields a memory-knob try changes (check_rules: sizes,
 * torchtitan-recompute-every-block, optimizer-offload-fraction,
 * optimizer-offload-needs-distopt, activation-offload-pp1-no-recompute): no other rule reads
 * recompute_layers, optimizer_offload_pct or activation_offload. */
bool estimate_search_knob_rules_hold(const layout *l)
{
    if (l->recompute_layers < 0 || l->recompute_layers > (1 << 20)) return false;
    if (l->recompute_layers > 0 && l->framework == FRAMEWORK_TORCHTITAN) return false;
    if (l->optimizer_offload_pct < 0 || l->optimizer_offload_pct > 100) return false;
    if (l->optimizer_offload_pct > 0 &&
        (l->framework != FRAMEWORK_MEGATRON || l->sharding != SHARDING_DISTOPT))
        return false;
    if (l->activation_offload && (l->framework != FRAMEWORK_MEGATRON || l->pp != 1 ||
                                  l->recompute != RECOMPUTE_NONE))
        return false;
    return true;
}

/* ls[1..n) differ from ls[0] in the overlap knobs only: their rules (layout.c) are all left */
bool estimate_search_variants_ok(const layout *ls, int n)
{
    for (int i = 1; i < n; i++) {
        if (ls[i].overlap_param_gather &&
            (ls[i].sharding == SHARDING_DDP || !ls[i].overlap_grad_reduce))
            return false;
        if (ls[i].tp_comm_overlap && (ls[i].framework != FRAMEWORK_MEGATRON || ls[i].tp == 1 ||
                                      !ls[i].sp))
            return false;
    }
    return true;
}
