/*
 * system_list.h — the systems of a "which cluster" comparison (issue 22) from the command line:
 * --systems h100,h200,gb200-nvl72 and --price-per-gpu-hour 2.5 (one price for all) or one
 * price per system, with --nvls and --power-limit applied to each. Shared by
 * `plan compare-systems` and `plan report --systems`.
 */
#ifndef PLAN_CLI_SYSTEM_LIST_H
#define PLAN_CLI_SYSTEM_LIST_H

#include "cli.h"
#include "system_compare.h"

typedef struct {
    int n;
    char names[SYSTEM_COMPARE_MAX][64];
    const char *name_ptrs[SYSTEM_COMPARE_MAX];
    system_spec sys[SYSTEM_COMPARE_MAX];
    double prices[SYSTEM_COMPARE_MAX]; /* per GPU-hour; 0: not given */
} cli_system_list;

/* Load the systems (presets or files) and prices; --nvls on turns NVLS on where a system has
 * it (and leaves the others as they are), --power-limit needs every system's TDP. prices_arg may
 * be NULL. Prints one line and returns CLI_EXIT_USAGE on bad input. */
int cli_system_list_load(const char *systems_arg, const char *prices_arg, cli_nvls nvls,
                         double power_limit_w, cli_system_list *out);

#endif
