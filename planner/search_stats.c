/*
 * search_stats.c — per-knob counts of the search (see search_stats.h).
 */
#include "search_stats.h"

#include <string.h>

_Static_assert(KNOB_COUNT <= 32, "the tally keeps the knobs on in the key's low 32 bits");

static const char *const knob_names[KNOB_COUNT] = {
    [KNOB_TP] = "tp > 1",
    [KNOB_PP] = "pp > 1",
    [KNOB_CP] = "cp > 1",
    [KNOB_EP] = "ep > 1",
    [KNOB_ETP] = "etp != tp",
    [KNOB_VPP] = "vpp > 1",
    [KNOB_MBS] = "micro-batch > 1",
    [KNOB_MBS_WIDE] = "micro-batch not in 1,2,4,8,16",
    [KNOB_SP_OFF] = "sequence parallel off (tp > 1)",
    [KNOB_DISTOPT] = "distributed optimizer",
    [KNOB_FSDP] = "fsdp sharding",
    [KNOB_HSDP] = "hsdp shard group",
    [KNOB_NO_RESHARD] = "fsdp no reshard after forward",
    [KNOB_RECOMPUTE_SELECTIVE] = "recompute selective",
    [KNOB_RECOMPUTE_FULL] = "recompute full",
    [KNOB_RECOMPUTE_PARTIAL] = "recompute full, some layers",
    [KNOB_FSDP2_OFFLOAD] = "fsdp2 cpu offload",
    [KNOB_OPTIMIZER_OFFLOAD] = "megatron optimizer cpu offload",
    [KNOB_ACTIVATION_OFFLOAD] = "megatron activation offload",
    [KNOB_PRECISION] = "precision not bf16",
    [KNOB_RANK_ORDER] = "rank order tp-cp-ep-pp-dp",
    [KNOB_OVERLAP] = "overlap-knob variants",
};

const char *search_knob_name(search_knob k)
{
    return k >= 0 && k < KNOB_COUNT ? knob_names[k] : "?";
}

/* Which knobs l has on, as bit k for knob k, every knob at once (the search counts every
 * layout it evaluates); the overlap knob's count is the caller's. */
static unsigned long knobs_mask(const layout *l)
{
    bool pow2_small = l->mbs <= 16 && (l->mbs & (l->mbs - 1)) == 0;
#define ON(k, cond) ((unsigned long)(cond) << (k))
    return ON(KNOB_TP, l->tp > 1) | ON(KNOB_PP, l->pp > 1) | ON(KNOB_CP, l->cp > 1) |
           ON(KNOB_EP, l->ep > 1) | ON(KNOB_ETP, layout_etp(l) != l->tp) |
           ON(KNOB_VPP, l->vpp > 1) | ON(KNOB_MBS, l->mbs > 1) | ON(KNOB_MBS_WIDE, !pow2_small) |
           ON(KNOB_SP_OFF, l->tp > 1 && !l->sp) |
           ON(KNOB_DISTOPT, l->sharding == SHARDING_DISTOPT) |
           ON(KNOB_FSDP, l->sharding == SHARDING_FSDP) | ON(KNOB_HSDP, l->shard_size > 0) |
           ON(KNOB_NO_RESHARD, l->sharding == SHARDING_FSDP && !l->reshard_after_forward) |
           ON(KNOB_RECOMPUTE_SELECTIVE, l->recompute == RECOMPUTE_SELECTIVE) |
           ON(KNOB_RECOMPUTE_FULL, l->recompute == RECOMPUTE_FULL) |
           ON(KNOB_RECOMPUTE_PARTIAL, l->recompute == RECOMPUTE_FULL && l->recompute_layers > 0) |
           ON(KNOB_FSDP2_OFFLOAD, l->offload) |
           ON(KNOB_OPTIMIZER_OFFLOAD, l->optimizer_offload_pct > 0) |
           ON(KNOB_ACTIVATION_OFFLOAD, l->activation_offload) |
           ON(KNOB_PRECISION, l->precision != PRECISION_BF16) |
           ON(KNOB_RANK_ORDER, l->rank_order != RANK_ORDER_DP_PP); /* KNOB_OVERLAP: the caller's */
#undef ON
}

static int kind_of(estimate_outcome how)
{
    return how == ESTIMATE_PRUNED    ? STAT_BOUND
           : how == ESTIMATE_TIMED   ? STAT_TIMED
           : how == ESTIMATE_BOUNDED ? STAT_UNCHECKED
                                     : STAT_MEMORY;
}

/* count layouts of one outcome kind, each with the knobs of mask on and n overlap variants */
static void add_counts(search_stats *s, unsigned long mask, int kind, int n, long count)
{
    s->layouts[STAT_LISTED] += count;
    s->layouts[kind] += count;
    for (int k = 0; k < KNOB_COUNT; k++) {
        long add = k == KNOB_OVERLAP ? count * (n - 1) : ((mask >> k) & 1u) ? count : 0;
        s->knob[k][STAT_LISTED] += add;
        s->knob[k][kind] += add;
    }
}

void search_stats_count(search_stats *s, const layout *l, int n, estimate_outcome how)
{
    add_counts(s, knobs_mask(l), kind_of(how), n, 1);
}

/* The tally's key: the knobs on, the kind and the variant count (1..6), never 0 (empty). */
enum { TALLY_KIND_SHIFT = 32, TALLY_N_SHIFT = 40 };

void search_stats_tally_count(search_stats_tally *t, search_stats *s, const layout *l, int n,
                              estimate_outcome how)
{
    unsigned long key = knobs_mask(l) | (unsigned long)kind_of(how) << TALLY_KIND_SHIFT |
                        (unsigned long)n << TALLY_N_SHIFT;
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ul) >> 54) & (SEARCH_STATS_TALLY - 1);
    while (t->key[i] && t->key[i] != key) i = (i + 1) & (SEARCH_STATS_TALLY - 1);
    if (!t->key[i]) {
        if (4 * (t->used + 1) > 3 * SEARCH_STATS_TALLY) { /* nearly full: add it up first */
            search_stats_tally_flush(t, s);
            search_stats_tally_count(t, s, l, n, how);
            return;
        }
        t->key[i] = key;
        t->used++;
    }
    t->count[i]++;
}

void search_stats_tally_flush(search_stats_tally *t, search_stats *s)
{
    for (int i = 0; i < SEARCH_STATS_TALLY; i++) {
        if (!t->key[i]) continue;
        unsigned long key = t->key[i];
        add_counts(s, key & ((1ul << TALLY_KIND_SHIFT) - 1),
                   (int)((key >> TALLY_KIND_SHIFT) & 0xff), (int)(key >> TALLY_N_SHIFT),
                   t->count[i]);
        t->key[i] = 0;
        t->count[i] = 0;
    }
    t->used = 0;
}

void search_stats_add(search_stats *into, const search_stats *from)
{
    for (int i = 0; i < STAT_KINDS; i++) {
        into->layouts[i] += from->layouts[i];
        for (int k = 0; k < KNOB_COUNT; k++) into->knob[k][i] += from->knob[k][i];
    }
    into->layer_builds += from->layer_builds;
    into->layer_hits += from->layer_hits;
}

/* One row: the counts, and the unchecked column where the search has one. */
static void print_row(FILE *f, const char *name, const long *c, bool unchecked)
{
    fprintf(f, "  %-34s %10ld %10ld %10ld %10ld", name, c[STAT_LISTED], c[STAT_MEMORY],
            c[STAT_BOUND], c[STAT_TIMED]);
    if (unchecked) fprintf(f, " %10ld", c[STAT_UNCHECKED]);
    fputc('\n', f);
}

void search_stats_print(FILE *f, const search_stats *s)
{
    bool unchecked = s->layouts[STAT_UNCHECKED] > 0;
    fprintf(f, "\nSearch statistics (layouts listed; out on memory, out on the lower bound, "
               "timed whole%s):\n",
            unchecked ? "; unchecked: out on the lower bound before the memory check" : "");
    fprintf(f, "  %-34s %10s %10s %10s %10s", "knob on", "listed", "memory", "bound", "timed");
    if (unchecked) fprintf(f, " %10s", "unchecked");
    fputc('\n', f);
    print_row(f, "all layouts", s->layouts, unchecked);
    for (int k = 0; k < KNOB_COUNT; k++)
        if (s->knob[k][STAT_LISTED]) print_row(f, knob_names[k], s->knob[k], unchecked);
    long lookups = s->layer_builds + s->layer_hits;
    if (lookups)
        fprintf(f, "  layer costs: %ld recipes built for %ld lookups (%.0f%% reused)\n",
                s->layer_builds, lookups, 100.0 * s->layer_hits / lookups);
}

static json_t *counts_json(const long *c)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "listed", (json_int_t)c[STAT_LISTED],
                     "memory", (json_int_t)c[STAT_MEMORY], "bound", (json_int_t)c[STAT_BOUND],
                     "timed", (json_int_t)c[STAT_TIMED], "unchecked",
                     (json_int_t)c[STAT_UNCHECKED]);
}

json_t *search_stats_json(const search_stats *s)
{
    json_t *knobs = json_object();
    for (int k = 0; k < KNOB_COUNT; k++)
        if (s->knob[k][STAT_LISTED])
            json_object_set_new(knobs, knob_names[k], counts_json(s->knob[k]));
    return json_pack("{s:o, s:o, s:{s:I, s:I}}", "layouts", counts_json(s->layouts), "knobs",
                     knobs, "layer_costs", "built", (json_int_t)s->layer_builds, "reused",
                     (json_int_t)s->layer_hits);
}
