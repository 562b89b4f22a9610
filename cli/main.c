/*
 * main.c — `plan`: the dispatch table of subcommands (git-builtin style). With no subcommand,
 * or when the first argument is an option, `plan` searches (cmd_search).
 *
 * The GPU libraries (CUDA runtime, cuBLAS, cuBLASLt, NCCL, MPI) take about half a second to
 * load, so `plan` itself links none of them: a CUDA build also makes `plan-gpu`, the same
 * commands linked with the backend, and `plan` hands a command that runs GPUs over to it (exec,
 * same arguments). Every other command starts in milliseconds, and `plan` runs on machines
 * without CUDA; --help, --dry-run and --list stay in `plan`, which answers them without GPUs.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "whole_file.h"

#ifndef PLAN_VERSION
#define PLAN_VERSION "unknown"
#endif

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
    /* Runs GPUs: always ("always"), or when one of its arguments is this flag. */
    const char *gpu_when;
} command;

static const command commands[] = {
    {"search", cmd_search, "rank every layout for a model and GPU count (the default)", NULL},
    {"estimate", cmd_estimate, "memory and step time of one given layout", NULL},
    {"simulate", cmd_simulate, "event-driven simulation of one layout's step; --trace step.json", NULL},
    {"check", cmd_check, "check a trainer YAML or torchtitan command against the rules; estimate it",
     NULL},
    {"bench", cmd_bench, "sweeps that write CSV rows; --compare two result files; --preset guide",
     "--measure"},
    {"fit", cmd_fit, "fit a calibration profile (GEMM, collectives) from a plan calibrate CSV", NULL},
    {"report", cmd_report, "the FSDP2-vs-Megatron decision guide (HTML or Markdown, charts)", NULL},
    {"compare-systems", cmd_compare_systems,
     "which cluster: one model on several systems, step time, tokens/s, $ per M tokens", NULL},
    {"calibrate", cmd_calibrate, "measure GEMMs and NCCL collectives on the local GPUs (CSV)",
     "always"},
    {"measure", cmd_measure, "run one layout's training step on the local GPUs vs its estimate",
     "always"},
    {"refine", cmd_refine, "measure the best plans on the local GPUs and refit the step terms",
     "always"},
};

static void usage(void)
{
    printf("plan %s — parallelism planner for large-model training\n\n"
           "usage: plan --model 30b --gpus 64 [options]     recommend a layout\n"
           "       plan <command> [options]\n\ncommands:\n",
           PLAN_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        printf("  %-16s %s\n", commands[i].name, commands[i].help);
    printf("\nplan <command> --help shows a command's options. Among them, for search,\n"
           "estimate, simulate, measure and bench: --exact-model keeps only the frameworks\n"
           "whose own model code builds the model as it is (FSDP2 always; Megatron-LM and\n"
           "torchtitan unless they lack one of its forms).\n");
}

/* Does this invocation of c need the GPU backend? Not for the answers given without GPUs. */
static bool needs_gpu(const command *c, int argc, char **argv)
{
    if (!c->gpu_when) return false;
    bool flagged = !strcmp(c->gpu_when, "always");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
            !strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "--list"))
            return false;
        if (!strcmp(argv[i], c->gpu_when)) flagged = true;
    }
    return flagged;
}

/* Hands this run over to plan-gpu beside this executable when this build made one. Returns
 * only when there is none (the command then says the build has no backend) or exec failed. */
static int exec_gpu(char **argv)
{
#ifdef PLAN_GPU_EXE
    char self[PATH_MAX], path[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 0;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return 0;
    *slash = '\0';
    snprintf(path, sizeof path, "%s/%s", self, PLAN_GPU_EXE);
    if (access(path, X_OK) != 0) return 0;
    fflush(NULL);
    execv(path, argv);
    fprintf(stderr, "plan: error: could not start %s (%s): run it directly, or rebuild\n", path,
            strerror(errno));
    return 1;
#else
    (void)argv;
    return 0;
#endif
}

/* A command's exit status, unless what it printed did not reach standard output (a full disk,
 * /dev/full, a closed pipe): then one line and a failure, never a silent success. */
static int checked_stdout(int rc)
{
    char err[CM_ERRLEN];
    if (whole_file_check_stdout(err, sizeof err) != CM_OK) {
        fprintf(stderr, "plan: error: %s\n", err);
        return rc ? rc : 1;
    }
    return rc;
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
    if (argc < 2 || argv[1][0] == '-') return checked_stdout(cmd_search(argc, argv));
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            if (needs_gpu(&commands[i], argc - 1, argv + 1) && exec_gpu(argv)) return 1;
            return checked_stdout(commands[i].fn(argc - 1, argv + 1));
        }
    char msg[200];
    snprintf(msg, sizeof msg, "unknown command '%s': run plan --help for the list", argv[1]);
    return cli_error(msg);
}
