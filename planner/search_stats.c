/*
 * search_stats.c — per-knob counts of the search (see search_stats.h).
 */
#include "search_stats.h"

#include <string.h>

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
    [KNOB_OVERLAP] = "overlap-knob variants",
};

const char *search_knob_name(search_knob k)
{
    return k >= 0 && k < KNOB_COUNT ? knob_names[k] : "?";
}

/* Which knobs l has on (1) or off (0), every knob at once (the search counts every layout it
 * evaluates); the overlap knob's count is the caller's. */
static void knobs_on(const layout *l, long on[KNOB_COUNT])
{
    bool pow2_small = l->mbs <= 16 && (l->mbs & (l->mbs - 1)) == 0;
    on[KNOB_TP] = l->tp > 1;
    on[KNOB_PP] = l->pp > 1;
    on[KNOB_CP] = l->cp > 1;
    on[KNOB_EP] = l->ep > 1;
    on[KNOB_ETP] = layout_etp(l) != l->tp;
    on[KNOB_VPP] = l->vpp > 1;
    on[KNOB_MBS] = l->mbs > 1;
    on[KNOB_MBS_WIDE] = !pow2_small;
    on[KNOB_SP_OFF] = l->tp > 1 && !l->sp;
    on[KNOB_DISTOPT] = l->sharding == SHARDING_DISTOPT;
    on[KNOB_FSDP] = l->sharding == SHARDING_FSDP;
    on[KNOB_HSDP] = l->shard_size > 0;
    on[KNOB_NO_RESHARD] = l->sharding == SHARDING_FSDP && !l->reshard_after_forward;
    on[KNOB_RECOMPUTE_SELECTIVE] = l->recompute == RECOMPUTE_SELECTIVE;
    on[KNOB_RECOMPUTE_FULL] = l->recompute == RECOMPUTE_FULL;
    on[KNOB_RECOMPUTE_PARTIAL] = l->recompute == RECOMPUTE_FULL && l->recompute_layers > 0;
    on[KNOB_FSDP2_OFFLOAD] = l->offload;
    on[KNOB_OPTIMIZER_OFFLOAD] = l->optimizer_offload_pct > 0;
    on[KNOB_ACTIVATION_OFFLOAD] = l->activation_offload;
    on[KNOB_PRECISION] = l->precision != PRECISION_BF16;
    on[KNOB_OVERLAP] = 0;
}

void search_stats_count(search_stats *s, const layout *l, int n, estimate_outcome how)
{
    int kind = how == ESTIMATE_PRUNED ? STAT_BOUND : how == ESTIMATE_TIMED ? STAT_TIMED
                                                                            : STAT_MEMORY;
    s->layouts[STAT_LISTED]++;
    s->layouts[kind]++;
    long add[KNOB_COUNT];
    knobs_on(l, add);
    add[KNOB_OVERLAP] = n - 1;
    for (int k = 0; k < KNOB_COUNT; k++) {
        s->knob[k][STAT_LISTED] += add[k];
        s->knob[k][kind] += add[k];
    }
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

void search_stats_print(FILE *f, const search_stats *s)
{
    fprintf(f, "\nSearch statistics (layouts listed; out on memory, out on the lower bound, "
               "timed whole):\n");
    fprintf(f, "  %-34s %10s %10s %10s %10s\n", "knob on", "listed", "memory", "bound",
            "timed");
    fprintf(f, "  %-34s %10ld %10ld %10ld %10ld\n", "all layouts", s->layouts[STAT_LISTED],
            s->layouts[STAT_MEMORY], s->layouts[STAT_BOUND], s->layouts[STAT_TIMED]);
    for (int k = 0; k < KNOB_COUNT; k++) {
        const long *c = s->knob[k];
        if (!c[STAT_LISTED]) continue;
        fprintf(f, "  %-34s %10ld %10ld %10ld %10ld\n", knob_names[k], c[STAT_LISTED],
                c[STAT_MEMORY], c[STAT_BOUND], c[STAT_TIMED]);
    }
    long lookups = s->layer_builds + s->layer_hits;
    if (lookups)
        fprintf(f, "  layer costs: %ld recipes built for %ld lookups (%.0f%% reused)\n",
                s->layer_builds, lookups, 100.0 * s->layer_hits / lookups);
}

static json_t *counts_json(const long *c)
{
    return json_pack("{s:I, s:I, s:I, s:I}", "listed", (json_int_t)c[STAT_LISTED], "memory",
                     (json_int_t)c[STAT_MEMORY], "bound", (json_int_t)c[STAT_BOUND], "timed",
                     (json_int_t)c[STAT_TIMED]);
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
