/*
 * report_sec_systems.c — "Which cluster" in `plan report` (issue 22): the user's models on the
 * systems of --systems at the largest GPU count asked, each with the plan `plan` recommends
 * there, its step time, tokens/s, GPU-hours and cost per million tokens. The tables are
 * planner/system_compare.h's, built by the caller; this file only lays them out.
 */
#include "report_sections.h"

#include <stdio.h>
#include <string.h>

#include "report_text.h"
#include "system_compare.h"
#include "units.h"

/* The takeaway of one model's table, from its numbers: the fastest system and how much faster
 * than the slowest that fits, and the cheapest per token. */
static void takeaway(const system_compare_table *tab, char *buf, size_t len)
{
    int q = system_compare_fastest(tab), c = system_compare_cheapest(tab);
    if (q < 0) {
        snprintf(buf, len, "Fits on none of these systems at %d GPUs.", tab->gpus);
        return;
    }
    int slow = q;
    for (int i = 0; i < tab->n; i++)
        if (tab->rows[i].fits && tab->rows[i].tokens_per_s < tab->rows[slow].tokens_per_s)
            slow = i;
    char a[80], b[80], cc[80];
    doc_plain(a, sizeof a, tab->rows[q].system);
    doc_plain(b, sizeof b, tab->rows[slow].system);
    doc_plain(cc, sizeof cc, tab->rows[c].system);
    size_t o = (size_t)snprintf(buf, len, "Fastest: %s, %.2fx the tokens/s of %s.", a,
                                tab->rows[q].tokens_per_s / tab->rows[slow].tokens_per_s, b);
    if (o >= len) return;
    if (tab->rows[c].cost_per_mtok > 0)
        snprintf(buf + o, len - o, " Cheapest per token: %s at $%.3f per million tokens.", cc,
                 tab->rows[c].cost_per_mtok);
    else
        snprintf(buf + o, len - o, " Fewest GPU-hours per token: %s (%.4f per million).", cc,
                 tab->rows[c].gpu_hours_per_mtok);
}

void report_section_systems(doc *d, const report *r)
{
    if (!r->nwhich_cluster) return;
    doc_h(d, 2, "systems", "Which cluster");
    doc_p(d, "The same models on each system of `--systems`, at the largest GPU count given, with the "
             "plan `plan --model M --gpus N --system S --precision bf16` recommends on each. GPU-hours per million "
             "tokens = N x 10^6 / (tokens/s) / 3600; cost = GPU-hours x the price per GPU-hour "
             "given with `--price-per-gpu-hour` (none given: no cost). The NVLink domain is the "
             "scale-up domain the placement keeps TP, CP and EP inside.");
    static const char *const hdr[] = {"system", "GPU", "NVLink domain", "recommended plan",
                                      "step s", "tokens/s", "tokens/s per GPU",
                                      "memory GiB", "GPU-h per M tokens", "$ per M tokens"};
    for (int k = 0; k < r->nwhich_cluster; k++) {
        const system_compare_table *tab = &r->which_cluster[k];
        char model[80];
        doc_plain(model, sizeof model, tab->display);
        char id[96], raw[96];
        snprintf(raw, sizeof raw, "systems-%s", tab->model);
        doc_safe_id(id, sizeof id, raw);
        doc_h(d, 3, id, "%s on %d GPUs", model, tab->gpus);
        doc_table(d, "llllrrrrrr", hdr);
        for (int i = 0; i < tab->n; i++) {
            const system_compare_row *x = &tab->rows[i];
            char name[80], gpu[80], dom[32], lay[400], step[32] = "", tps[32] = "",
                 tpg[32] = "", mem[32] = "", gh[32] = "", cost[32] = "-";
            doc_plain(name, sizeof name, x->system);
            doc_plain(gpu, sizeof gpu, x->gpu);
            snprintf(dom, sizeof dom, "%d (%d per host)", x->domain_gpus, x->gpus_per_node);
            if (x->fits) {
                report_fmt_layout_short(&x->best, lay, sizeof lay);
                snprintf(step, sizeof step, "%.2f", x->step_s);
                snprintf(tps, sizeof tps, "%.0f", x->tokens_per_s);
                snprintf(tpg, sizeof tpg, "%.0f", x->tokens_per_s / tab->gpus);
                snprintf(mem, sizeof mem, "%.1f", x->best.memory.total_bytes / UNITS_GIB_BYTES);
                snprintf(gh, sizeof gh, "%.4f", x->gpu_hours_per_mtok);
                if (x->price_per_gpu_hour > 0)
                    snprintf(cost, sizeof cost, "%.3f", x->cost_per_mtok);
            } else {
                char why[300];
                doc_plain(why, sizeof why, x->why_not);
                snprintf(lay, sizeof lay, "does not fit: %s", why);
            }
            const char *cells[] = {name, gpu, dom, lay, step, tps, tpg, mem, gh, cost};
            doc_row(d, cells);
        }
        doc_table_end(d);
        char t[400];
        takeaway(tab, t, sizeof t);
        doc_p(d, "%s", t);
    }
}
