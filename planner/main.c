/*
 * main.c — `plan`: the dispatch table of subcommands (git-builtin style). With no subcommand,
 * or when the first argument is an option, `plan` searches (cmd_search).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

#ifndef PLAN_VERSION
#define PLAN_VERSION "unknown"
#endif

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"search", cmd_search, "rank every layout for a model and GPU count (the default)"},
    {"estimate", cmd_estimate, "memory and step time of one given layout"},
    {"simulate", cmd_simulate, "event-driven simulation of one layout's step; --trace step.json"},
    {"check", cmd_check, "check a trainer YAML against the framework rules; estimate it"},
    {"bench", cmd_bench, "sweeps that write CSV rows; --compare two result files; --preset guide"},
    {"fit", cmd_fit, "fit a calibration profile (GEMM, collectives) from a plan calibrate CSV"},
    {"report", cmd_report, "the FSDP2-vs-Megatron decision guide (HTML or Markdown, charts)"},
    {"calibrate", cmd_calibrate, "measure GEMMs and NCCL collectives on the local GPUs (CSV)"},
    {"measure", cmd_measure, "run one layout's training step on the local GPUs vs its estimate"},
    {"refine", cmd_refine, "measure the best plans on the local GPUs and refit the step terms"},
};

static void usage(void)
{
    printf("plan %s — parallelism planner for large-model training\n\n"
           "usage: plan --model 30b --gpus 64 [options]     recommend a layout\n"
           "       plan <command> [options]\n\ncommands:\n",
           PLAN_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        printf("  %-10s %s\n", commands[i].name, commands[i].help);
    printf("\nplan <command> --help shows a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        printf("plan %s\n", PLAN_VERSION);
        return 0;
    }
    if (argc >= 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
                      !strcmp(argv[1], "-h"))) {
        usage();
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-') return cmd_search(argc, argv);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    char msg[200];
    snprintf(msg, sizeof msg, "unknown command '%s': run plan --help for the list", argv[1]);
    return cli_error(msg);
}
