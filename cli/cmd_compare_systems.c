/*
 * cmd_compare_systems.c — `plan compare-systems`: "which cluster" (issue 22). The same model at
 * one GPU count on several systems, each with the plan `plan` recommends there: step time,
 * tokens/s, memory, GPU-hours and cost per million tokens (planner/system_compare.h), as text
 * or CSV.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "system_list.h"

#define DEFAULT_SYSTEMS "h100,h200,b200,gb200-nvl72"

static void usage(void)
{
    printf("usage: plan compare-systems --model M --gpus N [--systems " DEFAULT_SYSTEMS "]\n"
           "                            [--price-per-gpu-hour P[,P...]] [--csv]\n"
           "                            [--seq N] [--gbs N] [--nvls on|off] [--power-limit W]\n"
           "                            [--precision auto|bf16]\n"
           "Searches the model on each system at N GPUs (as plan --model M --gpus N --system S\n"
           "does) and prints one row per system: the recommended layout, step time, tokens/s,\n"
           "memory per GPU, GPU-hours per million tokens (= N x 1e6 / tokens_per_s / 3600) and,\n"
           "with a price per GPU-hour (one for all systems, or one per system in order), the\n"
           "cost per million tokens. --nvls on prices NVLS on the systems that have it.\n"
           "--csv writes the same table as CSV. --precision auto (the default, as plan's)\n"
           "searches bf16 and the low-precision formats each system's GPU supports, so a\n"
           "Hopper or Blackwell row may be FP8 and an A100 row bf16; --precision bf16 compares\n"
           "the systems in bf16. Exit status 0, 1 when it fits on none, 2 bad input.\n");
}

typedef struct {
    const char *systems, *prices;
    bool csv;
} own_args;

enum { OPT_SYSTEMS = CLI_OWN_OPT, OPT_PRICES, OPT_CSV };

static int take(int opt, const char *v, void *arg)
{
    own_args *a = arg;
    if (!v) return cli_error("--systems and --price-per-gpu-hour need a value");
    switch (opt) {
    case OPT_SYSTEMS: a->systems = v; break;
    case OPT_PRICES: a->prices = v; break;
    case OPT_CSV: a->csv = true; break;
    }
    return 0;
}

int cmd_compare_systems(int argc, char **argv)
{
    static const struct option opts[] = {
        {"systems", required_argument, NULL, OPT_SYSTEMS},
        {"price-per-gpu-hour", required_argument, NULL, OPT_PRICES},
        {"csv", no_argument, NULL, OPT_CSV},
        {NULL, 0, NULL, 0},
    };
    own_args a = {.systems = DEFAULT_SYSTEMS};
    cli_own_options own = {opts, "", take, &a};
    cli_options o;
    bool help;
    int rc = cli_parse_own(argc, argv, &own, &o, &help);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    if (!o.model_given || !o.gpus)
        return cli_error("plan compare-systems needs --model M and --gpus N");
    static const char *const takes[] = {"model", "gpus", "seq", "gbs", "nvls", "power-limit",
                                        "precision", "help", NULL};
    const char *other = cli_given_other(&o, takes);
    if (other) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "plan compare-systems does not take --%s: it searches each system of "
                 "--systems for its best plan (options: --model --gpus --systems "
                 "--price-per-gpu-hour --csv --seq --gbs --nvls --power-limit --precision); "
                 "plan or plan estimate takes --%s",
                 other, other);
        return cli_error(msg);
    }
    if (o.precision_given && o.layout.precision != PRECISION_BF16)
        return cli_error("plan compare-systems compares each system's best plan: --precision "
                         "auto (the default: bf16 and the formats each GPU supports) or bf16");
    char err[CM_ERRLEN];
    if (training_check(&o.training, err, sizeof err) != CM_OK) return cli_error(err);
    model_spec m;
    if (model_load(o.model, cli_data_dir(), &m, err, sizeof err) != CM_OK) return cli_error(err);
    cli_system_list *sl = malloc(sizeof *sl);
    system_compare_table *tab = malloc(sizeof *tab);
    if (!sl || !tab) {
        free(sl);
        free(tab);
        return cli_error("out of memory");
    }
    rc = cli_system_list_load(a.systems, a.prices, o.nvls, o.power_limit_w, sl);
    /* issue 16: each system's own formats (--precision auto, plan's default), or bf16 */
    if (!rc && system_compare_run_precision(&m, &o.training, o.gpus, sl->sys, sl->name_ptrs,
                                            sl->prices, sl->n, !o.precision_given, tab, err,
                                            sizeof err) != CM_OK)
        rc = cli_error(err);
    if (!rc) {
        if (a.csv) {
            system_compare_print_csv(stdout, tab);
        } else {
            system_compare_print_text(stdout, tab);
            for (int i = 0; i < sl->n; i++) {
                char notes[1024];
                if (!system_knob_notes(&sl->sys[i], notes, sizeof notes)) continue;
                for (char *line = strtok(notes, "\n"); line; line = strtok(NULL, "\n"))
                    printf("note (%s): %s\n", sl->names[i], line);
            }
        }
        rc = system_compare_fastest(tab) < 0 ? 1 : 0;
    }
    free(sl);
    free(tab);
    return rc;
}
