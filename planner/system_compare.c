/*
 * system_compare.c — the "which cluster" table (system_compare.h): one search per system, the
 * recommended plan of each, GPU-hours and cost per million tokens.
 */
#include "system_compare.h"

#include <string.h>

#include "output.h"
#include "precision.h"
#include "precision_choice.h"
#include "search.h"
#include "units.h"

double system_compare_gpu_hours_per_mtok(int gpus, double tokens_per_s)
{
    if (!(tokens_per_s > 0)) return 0;
    return gpus * (1e6 / tokens_per_s) / 3600.0;
}

cm_status system_compare_run(const model_spec *m, const training_spec *t, int gpus,
                             const system_spec *systems, const char *const *names,
                             const double *prices, int n, system_compare_table *out, char *err,
                             size_t errlen)
{
    return system_compare_run_precision(m, t, gpus, systems, names, prices, n, false, out, err,
                                        errlen);
}

cm_status system_compare_run_precision(const model_spec *m, const training_spec *t, int gpus,
                                       const system_spec *systems, const char *const *names,
                                       const double *prices, int n, bool low_precision,
                                       system_compare_table *out, char *err, size_t errlen)
{
    if (n < 1 || n > SYSTEM_COMPARE_MAX)
        return cm_fail(err, errlen, CM_EINVAL, "compare 1 to %d systems, not %d",
                       SYSTEM_COMPARE_MAX, n);
    memset(out, 0, sizeof *out);
    snprintf(out->model, sizeof out->model, "%s", m->name);
    snprintf(out->display, sizeof out->display, "%s", m->display);
    out->gpus = gpus;
    search_result *r = search_result_new();
    if (!r) return cm_fail(err, errlen, CM_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const system_spec *sys = &systems[i];
        system_compare_row *row = &out->rows[out->n++];
        snprintf(row->system, sizeof row->system, "%s", names[i]);
        snprintf(row->gpu, sizeof row->gpu, "%s", sys->gpu_name);
        row->gpus_per_node = sys->gpus_per_node;
        row->domain_gpus = system_domain_gpus(sys);
        row->price_per_gpu_hour = prices ? prices[i] : 0;
        /* what `plan --model M --gpus N --system S` searches and recommends */
        search_options so = {.gpus = gpus, .keep = 32, .simulate = 32,
                             .moe_dispatcher = MOE_DISPATCH_ALLTOALL,
                             .precisions = low_precision ? precision_choice_auto_mask(sys) : 0};
        /* a refined profile ranks by its calibrated closed form, as cmd_search.c does */
        if (sys->step.active) so.simulate = 0;
        so.frameworks[FRAMEWORK_FSDP2] = so.frameworks[FRAMEWORK_MEGATRON] = true;
        cm_status st = search_run(m, sys, t, &so, r, err, errlen);
        if (st != CM_OK) {
            search_result_free(r);
            return st;
        }
        if (r->count == 0) {
            const char *why = "no valid layout (global batch or heads not divisible)";
            for (int fw = 0; fw < 2; fw++)
                if (r->has_closest[fw]) {
                    why = r->closest[fw].infeasible_reason;
                    break;
                }
            snprintf(row->why_not, sizeof row->why_not, "%s", why);
            continue;
        }
        row->fits = true;
        row->best = r->ranked[0];
        row->step_s = row->best.time.step_s;
        row->tokens_per_s = row->best.tokens_per_s;
        row->gpu_hours_per_mtok = system_compare_gpu_hours_per_mtok(gpus, row->tokens_per_s);
        row->cost_per_mtok = row->gpu_hours_per_mtok * row->price_per_gpu_hour;
    }
    search_result_free(r);
    return CM_OK;
}

int system_compare_cheapest(const system_compare_table *tab)
{
    bool all_priced = true;
    for (int i = 0; i < tab->n; i++)
        if (tab->rows[i].fits && tab->rows[i].price_per_gpu_hour <= 0) all_priced = false;
    int best = -1;
    for (int i = 0; i < tab->n; i++) {
        const system_compare_row *x = &tab->rows[i];
        if (!x->fits) continue;
        double v = all_priced ? x->cost_per_mtok : x->gpu_hours_per_mtok;
        double b = best < 0 ? 0
                   : all_priced ? tab->rows[best].cost_per_mtok
                                : tab->rows[best].gpu_hours_per_mtok;
        if (best < 0 || v < b) best = i;
    }
    return best;
}

int system_compare_fastest(const system_compare_table *tab)
{
    int best = -1;
    for (int i = 0; i < tab->n; i++)
        if (tab->rows[i].fits &&
            (best < 0 || tab->rows[i].tokens_per_s > tab->rows[best].tokens_per_s))
            best = i;
    return best;
}

void system_compare_layout(const system_compare_row *row, char *buf, size_t len)
{
    const layout *l = &row->best.layout;
    char vpp[24] = "";
    if (l->vpp > 1) snprintf(vpp, sizeof vpp, " · VPP %d", l->vpp);
    snprintf(buf, len,
             "%s TP %d · PP %d · DP %d · CP %d · EP %d%s · mbs %d · %s · recompute %s%s%s",
             layout_framework_name(l->framework), l->tp, l->pp, l->dp, l->cp, l->ep, vpp, l->mbs,
             layout_sharding_name(l->sharding), layout_recompute_name(l->recompute),
             precision_is_low(l) ? " · " : "", precision_is_low(l) ? precision_label(l) : "");
}

void system_compare_print_text(FILE *f, const system_compare_table *tab)
{
    fprintf(f, "Which cluster: %s on %d GPUs of each system (the plan `plan` recommends on each)\n\n",
            tab->display, tab->gpus);
    fprintf(f, "%-14s %-20s %6s %8s %11s %9s %8s %9s %9s  %s\n", "system", "gpu", "domain",
            "step_s", "tokens/s", "tok/s/GPU", "mem_GiB", "GPUh/Mtok", "$/Mtok", "layout");
    for (int i = 0; i < tab->n; i++) {
        const system_compare_row *x = &tab->rows[i];
        if (!x->fits) {
            fprintf(f, "%-14s %-20s %6d  does not fit: %s\n", x->system, x->gpu, x->domain_gpus,
                    x->why_not);
            continue;
        }
        char lay[160], cost[32] = "-";
        system_compare_layout(x, lay, sizeof lay);
        if (x->price_per_gpu_hour > 0) snprintf(cost, sizeof cost, "%.3f", x->cost_per_mtok);
        fprintf(f, "%-14s %-20s %6d %8.2f %11.0f %9.0f %8.1f %9.4f %9s  %s\n", x->system, x->gpu,
                x->domain_gpus, x->step_s, x->tokens_per_s, x->tokens_per_s / tab->gpus,
                x->best.memory.total_bytes / UNITS_GIB_BYTES, x->gpu_hours_per_mtok, cost, lay);
    }
    int c = system_compare_cheapest(tab), q = system_compare_fastest(tab);
    if (q >= 0) {
        fprintf(f, "\nFastest: %s (%.0f tokens/s).", tab->rows[q].system, tab->rows[q].tokens_per_s);
        bool priced = tab->rows[c].price_per_gpu_hour > 0 && tab->rows[c].cost_per_mtok > 0;
        if (priced)
            fprintf(f, " Cheapest per token: %s ($%.3f per million tokens).\n",
                    tab->rows[c].system, tab->rows[c].cost_per_mtok);
        else
            fprintf(f, " Fewest GPU-hours per token: %s (%.4f per million tokens; give "
                       "--price-per-gpu-hour for cost).\n",
                    tab->rows[c].system, tab->rows[c].gpu_hours_per_mtok);
    } else {
        fprintf(f, "\nThe model fits on none of these systems at %d GPUs.\n", tab->gpus);
    }
}

/* A CSV field: quoted, with inner quotes doubled (the reasons are the cost model's text). */
static void csv_field(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void system_compare_print_csv(FILE *f, const system_compare_table *tab)
{
    fprintf(f, "model,gpus,system,gpu,gpus_per_node,domain_gpus,fits,framework,tp,pp,dp,cp,ep,"
               "vpp,mbs,step_s,tokens_per_s,tokens_per_s_per_gpu,memory_bytes,mfu,"
               "gpu_hours_per_mtok,price_per_gpu_hour,cost_per_mtok,why_not,precision\n");
    for (int i = 0; i < tab->n; i++) {
        const system_compare_row *x = &tab->rows[i];
        const layout *l = &x->best.layout;
        csv_field(f, tab->model);
        fprintf(f, ",%d,", tab->gpus);
        csv_field(f, x->system);
        fputc(',', f);
        csv_field(f, x->gpu);
        fprintf(f, ",%d,%d,%d,", x->gpus_per_node, x->domain_gpus, x->fits ? 1 : 0);
        if (x->fits)
            fprintf(f, "%s,%d,%d,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.4f,%.6g,%.6g,%.6g,",
                    layout_framework_name(l->framework), l->tp, l->pp, l->dp, l->cp, l->ep,
                    l->vpp, l->mbs, x->step_s, x->tokens_per_s, x->tokens_per_s / tab->gpus,
                    x->best.memory.total_bytes, x->best.mfu, x->gpu_hours_per_mtok,
                    x->price_per_gpu_hour, x->cost_per_mtok);
        else
            fprintf(f, ",,,,,,,,,,,,,,,%.6g,,", x->price_per_gpu_hour);
        csv_field(f, x->why_not);
        /* issue 16: the recommended plan's format (its system's own, under --precision auto) */
        fprintf(f, ",%s\n", x->fits ? precision_label(l) : "");
    }
}
