/*
 * cli.h — the options every subcommand shares (model, system, training, layout flags, format)
 * parsed with getopt_long, and loading the specs they name. Each subcommand is
 * cmd_<verb>(argc, argv) in the dispatch table of main.c, git-builtin style.
 */
#ifndef PLAN_CLI_H
#define PLAN_CLI_H

#include <stdbool.h>

#include "estimate.h"
#include "layout.h"
#include "model.h"
#include "system.h"
#include "emit.h"

typedef enum { FORMAT_HUMAN = 0, FORMAT_JSON = 1 } cli_format;

/* --nvls: not given (the system file's node.nvls stands), on or off. */
typedef enum { CLI_NVLS_UNSET = 0, CLI_NVLS_ON, CLI_NVLS_OFF } cli_nvls;

#define CLI_MAX_GIVEN 64

typedef struct {
    const char *model;
    bool model_given;         /* --model was given (plan and plan estimate require it) */
    const char *system;
    const char *calibration;
    int gpus;                 /* 0: not given */
    int top;
    cli_format format;
    bool framework_given;
    training_spec training;
    layout layout;
    bool dp_given;
    bool sharding_given;
    bool sp_given;
    bool reshard_given;         /* --no-reshard-after-forward / --reshard-after-forward given */
    bool vpp_given;             /* --vpp given */
    bool no_overlap;            /* --no-overlap: overlap knobs off, and not searched */
    emit_format emit;         /* --emit: print this config instead of the report */
    bool simulate;            /* --simulate: also run the step simulator (plan estimate) */
    bool ops;                 /* --ops: print the layer recipe's priced operations (estimate) */
    bool no_simulate;         /* --no-simulate: search ranks by the closed form only */
    const char *trace;        /* --trace FILE: write the simulated step as a Chrome trace */
    bool precision_auto;      /* --precision auto (or its older name any) was given: the
                                 search's default anyway (cli_precision_mask); the commands
                                 that price one layout refuse it (layout.precision holds bf16) */
    bool precision_given;     /* --precision named one format: the search uses it alone */
    bool precision_any;       /* --precision any: auto's formats and NVFP4 (precision_choice.h) */
    cli_nvls nvls;            /* --nvls on|off (issue 22) */
    double power_limit_w;     /* --power-limit W (0: not given; issue 22) */
    bool gemm_headroom_on;    /* --gemm-headroom on: GEMMs at the rate the step's power allows */
    bool gemm_headroom_bubble; /* --gemm-headroom bubble (plan estimate's default): from the
                                  pipeline bubble's idle time alone */
    bool gemm_headroom_given; /* --gemm-headroom was on the command line */
    bool exact_model;         /* --exact-model: only frameworks whose own model code builds the
                                 model as it is (planner/exact_model.h) */
    /* the shared options given, by long name (the first CLI_MAX_GIVEN; a command's own options
     * are not listed): cli_given_other */
    const char *given[CLI_MAX_GIVEN];
    int n_given;
} cli_options;

/* The first shared option given that is not in allowed (long names, NULL-terminated), or NULL:
 * for a command that takes only some of them (compare-systems ignored --tp, --format json or
 * --system silently). */
const char *cli_given_other(const cli_options *o, const char *const *allowed);

/* Exit status for bad input (issue 2: "exit status 2"). */
#define CLI_EXIT_USAGE 2
/* Exit status of the measuring commands when the machine has no CUDA GPU. */
#define CLI_EXIT_NO_GPU 3

/* Parse argv (after the subcommand name). Returns 0 on success, or prints one line to stderr
 * and returns CLI_EXIT_USAGE. Sets *help when --help was asked. */
int cli_parse(int argc, char **argv, cli_options *o, bool *help);

/* A command's own options beside the shared ones: their getopt_long rows (val from
 * CLI_OWN_OPT up, or a short option letter), the short letters ("o:"), and the function that
 * takes each one: value "" for an option that takes none, NULL when the option needs one and
 * was given none. It returns 0, or
 * prints one line (cli_error) and returns CLI_EXIT_USAGE. */
#define CLI_OWN_OPT 2000
struct option;
typedef struct {
    const struct option *opts; /* ends with a zero row */
    const char *short_opts;
    int (*take)(int opt, const char *value, void *arg);
    void *arg;
} cli_own_options;

/* cli_parse() with a command's own options too. */
int cli_parse_own(int argc, char **argv, const cli_own_options *own, cli_options *o, bool *help);

const char *cli_data_dir(void);

/* For a command that runs many searches one after another (plan report: 85 for the guide):
 * glibc keeps the memory a search frees for the next one instead of returning it to the
 * kernel (each search allocates and frees its workers' layer-cost caches and partial results,
 * tens of MB; given back, they were faulted in again by the next search: 117 k minor faults,
 * about 0.5 s of the guide's 2.4 s as system time; speed16). Elsewhere (and with other C
 * libraries) it does nothing. */
void cli_keep_freed_memory(void);

/* The layout the flags describe, with the defaults `plan estimate` documents (sharding and SP
 * by framework, dp = gpus / (tp*pp*cp)). Prints the error line and returns CLI_EXIT_USAGE. */
int cli_layout(const cli_options *o, layout *l);
/* The framework's defaults for what o leaves unsaid (sharding, SP, and under torchtitan the
 * reshard policy and stages per rank of its schedule): the part of cli_layout() plan measure
 * shares. */
void cli_layout_defaults(const cli_options *o, layout *l);

/* Load model and system named in o; prints the error line and returns CLI_EXIT_USAGE. */
int cli_load_specs(const cli_options *o, model_spec *m, system_spec *sys);

/* The GEMMs' power headroom a command that prices one layout takes without --gemm-headroom:
 * the pipeline bubble's (gemm_headroom.h). plan estimate, plan simulate and plan check share it,
 * so that the three print one step for one layout; the search alone ranks at the sustained rate
 * (cmd_search.c refuses the flag). */
void cli_gemm_headroom_default(cli_options *o);

/* --nvls and --power-limit on a loaded system (system_set_nvls, system_set_power_limit);
 * prints the error line and returns CLI_EXIT_USAGE when the system cannot take them. */
int cli_apply_system_knobs(cli_nvls nvls, double power_limit_w, system_spec *sys);

/* The layout of o's flags, its specs, the framework-rule check and the estimate: what
 * `plan estimate` and `plan simulate` start from. Prints the error line and returns
 * CLI_EXIT_USAGE on bad input. */
int cli_estimate(const cli_options *o, model_spec *m, system_spec *sys, layout *l, estimate *e);

/* The precisions a search tries (search_options.precisions) for o's --precision: the one
 * format named, or, by default (auto), bf16 and every low-precision format when the system
 * has FP8 tensor cores (peak_fp8_flops; the search skips the formats a GPU or framework
 * cannot run), bf16 alone when it has none. */
unsigned cli_precision_mask(const cli_options *o, const system_spec *sys);

/* The commands of one layout (estimate, simulate, measure): --precision auto is refused with
 * the reason (prints the line, returns CLI_EXIT_USAGE); 0 otherwise. */
int cli_one_layout_precision(const cli_options *o);

/* --exact-model with one framework (--framework, or a one-layout command's default):
 * prints the error line (what the framework lacks; drop --exact-model or pick another
 * framework) and returns CLI_EXIT_USAGE when that framework's own model code cannot build m;
 * 0 when it can or the flag was not given. */
int cli_exact_model_check(const cli_options *o, const model_spec *m);

/* Print "plan: error: <msg>" on stderr and return CLI_EXIT_USAGE. */
int cli_error(const char *msg);

/* --flag's value as an int in [lo, hi] (cli_number.h); otherwise prints "plan: error: --flag
 * needs an integer between lo and hi, got 's'" and returns CLI_EXIT_USAGE (0 on success). */
int cli_parse_int(const char *flag, const char *s, long lo, long hi, int *out);

#endif
