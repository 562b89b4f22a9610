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

static bool knob_on(search_knob k, const layout *l)
{
    bool pow2_small = l->mbs <= 16 && (l->mbs & (l->mbs - 1)) == 0;
    switch (k) {
    case KNOB_TP: return l->tp > 1;
    case KNOB_PP: return l->pp > 1;
    case KNOB_CP: return l->cp > 1;
    case KNOB_EP: return l->ep > 1;
    case KNOB_ETP: return layout_etp(l) != l->tp;
    case KNOB_VPP: return l->vpp > 1;
    case KNOB_MBS: return l->mbs > 1;
    case KNOB_MBS_WIDE: return !pow2_small;
    case KNOB_SP_OFF: return l->tp > 1 && !l->sp;
    case KNOB_DISTOPT: return l->sharding == SHARDING_DISTOPT;
    case KNOB_FSDP: return l->sharding == SHARDING_FSDP;
    case KNOB_HSDP: return l->shard_size > 0;
    case KNOB_NO_RESHARD: return l->sharding == SHARDING_FSDP && !l->reshard_after_forward;
    case KNOB_RECOMPUTE_SELECTIVE: return l->recompute == RECOMPUTE_SELECTIVE;
    case KNOB_RECOMPUTE_FULL: return l->recompute == RECOMPUTE_FULL;
    case KNOB_RECOMPUTE_PARTIAL: return l->recompute == RECOMPUTE_FULL && l->recompute_layers > 0;
    case KNOB_FSDP2_OFFLOAD: return l->offload;
    case KNOB_OPTIMIZER_OFFLOAD: return l->optimizer_offload_pct > 0;
    case KNOB_ACTIVATION_OFFLOAD: return l->activation_offload;
    case KNOB_PRECISION: return l->precision != PRECISION_BF16;
    case KNOB_OVERLAP:
    case KNOB_COUNT: break;
    }
    return false;
}

void search_stats_count(search_stats *s, const layout *l, int n, estimate_outcome how)
{
    int kind = how == ESTIMATE_PRUNED ? STAT_BOUND : how == ESTIMATE_TIMED ? STAT_TIMED
                                                                            : STAT_MEMORY;
    s->layouts[STAT_LISTED]++;
    s->layouts[kind]++;
    for (int k = 0; k < KNOB_COUNT; k++) {
        long add = k == KNOB_OVERLAP ? n - 1 : knob_on((search_knob)k, l);
        if (!add) continue;
        s->knob[k][STAT_LISTED] += add;
        s->knob[k][kind] += add;
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
