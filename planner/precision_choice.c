/*
 * precision_choice.c — which precision the search chose and what it buys (precision_choice.h).
 * The search ranks every format it tried in one list, so the recommendation may be bf16 or a
 * low-precision layout; this prices the recommended layout in the other precision by the
 * closed form (estimate_layout, as `plan estimate --precision ...` would) so the output can
 * say "fp8 buys this layout 1.47x and 5.9 GiB" or "bf16 ranks first, and why".
 */
#include "precision_choice.h"

#include <string.h>

#include "precision.h"
#include "units.h"

unsigned precision_choice_auto_mask(const system_spec *sys)
{
    unsigned bf16 = 1u << PRECISION_BF16;
    if (!(sys->peak_fp8_flops_per_s > 0)) return bf16;
    return bf16 | (1u << PRECISION_FP8) | (1u << PRECISION_MXFP8);
}

unsigned precision_choice_any_mask(const system_spec *sys)
{
    unsigned auto_mask = precision_choice_auto_mask(sys);
    if (auto_mask == 1u << PRECISION_BF16) return auto_mask;
    return auto_mask | (1u << PRECISION_NVFP4);
}

/* The formats of mask some framework can run on sys (precision_check of a probe layout under
 * each framework): what the search could actually try. */
static unsigned runnable(const system_spec *sys, unsigned mask)
{
    unsigned out = 0;
    for (int p = 0; p < PRECISION_COUNT; p++) {
        if (!(mask & (1u << p))) continue;
        bool ok = p == PRECISION_BF16;
        for (int fw = 0; fw < LAYOUT_NFRAMEWORKS && !ok; fw++) {
            layout probe = layout_default((layout_framework)fw);
            probe.precision = (layout_precision)p;
            ok = precision_check(sys, &probe, NULL, 0) == CM_OK;
        }
        if (ok) out |= 1u << p;
    }
    return out;
}

void precision_choice_compare(const model_spec *m, const system_spec *sys, const estimate *best,
                              unsigned mask, bool pinned, layout_fp8_recipe fp8_recipe,
                              precision_choice *pc)
{
    memset(pc, 0, sizeof *pc);
    pc->searched = runnable(sys, mask ? mask : 1u << PRECISION_BF16);
    pc->pinned = pinned;
    pc->chosen_low = precision_is_low(&best->layout);
    if (!precision_choice_worth_saying(pc)) return;
    char why[CM_ERRLEN] = "";
    if (pc->chosen_low) {
        layout b = precision_bf16_layout(&best->layout);
        pc->have_other = estimate_layout(m, sys, &best->training, &b, &pc->other, why,
                                         sizeof why) == CM_OK;
        if (best->layout.fp8_param_gather) { /* what the FP8 parameters buy on their own */
            layout q = best->layout;
            q.fp8_param_gather = false;
            pc->have_no_param_gather = estimate_layout(m, sys, &best->training, &q,
                                                       &pc->no_param_gather, NULL, 0) == CM_OK;
        }
        return;
    }
    /* bf16 ranked first: the same layout in FP8 (the search's recipe), or why not */
    layout l8 = best->layout;
    l8.precision = PRECISION_FP8;
    l8.fp8_recipe = fp8_recipe;
    if (precision_check(sys, &l8, why, sizeof why) != CM_OK ||
        precision_check_model(m, &l8, why, sizeof why) != CM_OK ||
        estimate_layout(m, sys, &best->training, &l8, &pc->other, why, sizeof why) != CM_OK) {
        snprintf(pc->unavailable, sizeof pc->unavailable, "%s", why);
        return;
    }
    pc->have_other = true;
}

bool precision_choice_worth_saying(const precision_choice *pc)
{
    return (pc->searched & ~(1u << PRECISION_BF16)) != 0;
}

static void format_list(unsigned mask, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int p = 0; p < PRECISION_COUNT; p++) {
        if (!(mask & (1u << p))) continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len > used ? len - used : 0, "%s%s", used ? ", " : "",
                 precision_name((layout_precision)p));
    }
}

/* One row of the comparison: label, step time, tokens/s, memory, fit. */
static void figures_row(FILE *f, const char *label, const estimate *e)
{
    if (!estimate_time_priced(e)) {
        fprintf(f, "  %-28s step time not priced (%s)\n", label, e->infeasible_reason);
        return;
    }
    fprintf(f, "  %-28s %8.3f s/step %10.0f tokens/s %7.1f GiB per GPU%s\n", label, e->time.step_s,
            e->tokens_per_s, e->memory.total_bytes / UNITS_GIB_BYTES,
            e->feasible ? "" : " (does not fit)");
}

/* "fp8-delayed params" as the layout line shows it */
static void full_label(const layout *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", precision_label(l), l->fp8_param_gather ? " params" : "");
}

void precision_choice_print(FILE *f, const precision_choice *pc, const estimate *best)
{
    if (!precision_choice_worth_saying(pc)) return;
    char searched[64], chosen[48], other[48];
    format_list(pc->searched, searched, sizeof searched);
    full_label(&best->layout, chosen, sizeof chosen);
    const char *how = pc->pinned ? "pinned by --precision" : "searched";
    if (!pc->chosen_low) {
        if (!pc->have_other) {
            fprintf(f, "\nPrecision: bf16 (%s: %s); FP8 is not available for this plan: %s\n", how,
                    searched, pc->unavailable);
            return;
        }
        full_label(&pc->other.layout, other, sizeof other);
        fprintf(f, "\nPrecision: bf16 ranks first (%s: %s). The same layout in %s, closed form:\n",
                how, searched, other);
        figures_row(f, "bf16", best);
        figures_row(f, other, &pc->other);
        bool faster = estimate_time_priced(&pc->other) && estimate_time_priced(best) &&
                      pc->other.time.step_s < best->time.step_s;
        if (faster && !pc->other.feasible)
            fprintf(f, "  -> %s would be %.2fx the bf16 speed, but it does not fit.\n", other,
                    best->time.step_s / pc->other.time.step_s);
        else if (faster) /* faster by the closed form, yet bf16 ranked first by the simulator */
            fprintf(f, "  -> %s is %.2fx the bf16 speed by the closed form; the step simulator "
                       "ranks bf16 first.\n",
                    other, best->time.step_s / pc->other.time.step_s);
        else if (estimate_time_priced(&pc->other) && estimate_time_priced(best))
            fprintf(f, "  -> %s buys nothing here: %.2fx the bf16 speed.\n", other,
                    best->time.step_s / pc->other.time.step_s);
        return;
    }
    fprintf(f, "\nPrecision: %s (%s: %s). What it buys this layout against bf16, closed form:\n",
            chosen, how, searched);
    figures_row(f, chosen, best);
    if (!pc->have_other) {
        fprintf(f, "  bf16: the same layout could not be priced\n");
        return;
    }
    figures_row(f, "bf16", &pc->other);
    if (estimate_time_priced(&pc->other) && estimate_time_priced(best)) {
        double d_gib = (best->memory.total_bytes - pc->other.memory.total_bytes) / UNITS_GIB_BYTES;
        fprintf(f, "  -> %.2fx the bf16 speed and %.1f GiB %s per GPU%s. MFU stays against the "
                   "bf16 peak.\n",
                pc->other.time.step_s / best->time.step_s, d_gib < 0 ? -d_gib : d_gib,
                d_gib <= 0 ? "less" : "more",
                pc->other.feasible ? "" : " (in bf16 this layout does not fit)");
    }
    if (pc->have_no_param_gather)
        figures_row(f, "without --fp8-param-gather", &pc->no_param_gather);
}

static json_t *figures_json(const estimate *e)
{
    bool priced = estimate_time_priced(e);
    return json_pack("{s:s, s:s, s:o, s:o, s:f, s:b}", "precision",
                     precision_name(e->layout.precision), "label", precision_label(&e->layout),
                     "step_s", priced ? json_real(e->time.step_s) : json_null(), "tokens_per_s",
                     priced ? json_real(e->tokens_per_s) : json_null(), "memory_bytes",
                     e->memory.total_bytes, "feasible", e->feasible);
}

json_t *precision_choice_json(const precision_choice *pc, const estimate *best)
{
    json_t *searched = json_array();
    for (int p = 0; p < PRECISION_COUNT; p++)
        if (pc->searched & (1u << p))
            json_array_append_new(searched, json_string(precision_name((layout_precision)p)));
    json_t *o = json_pack("{s:s, s:o, s:s, s:s}", "mode",
                         pc->pinned ? "pinned"
                         : (pc->searched & (1u << PRECISION_NVFP4)) ? "any" /* auto has no NVFP4 */
                                                                     : "auto",
                          "searched", searched, "chosen", precision_name(best->layout.precision),
                          "label", precision_label(&best->layout));
    bool both = pc->have_other && estimate_time_priced(&pc->other) && estimate_time_priced(best);
    /* speedup: the low-precision layout's speed over the same layout in bf16 */
    double speedup = !both ? 0
                     : pc->chosen_low ? pc->other.time.step_s / best->time.step_s
                                      : best->time.step_s / pc->other.time.step_s;
    json_object_set_new(o, "compared", pc->have_other ? figures_json(&pc->other) : json_null());
    json_object_set_new(o, "low_precision_speedup", both ? json_real(speedup) : json_null());
    json_object_set_new(o, "unavailable",
                        pc->unavailable[0] ? json_string(pc->unavailable) : json_null());
    return o;
}
