/*
 * cmd_report.c — `plan report`: writes the FSDP2-vs-Megatron decision guide for a system and a
 * list of models and GPU counts, as one self-contained HTML file or as Markdown with PNG charts
 * beside it (planner/report.h does the work; this file parses, loads and reports).
 *
 * Bad input (an unknown model or system, a bad GPU count, an output path that cannot be written,
 * an unknown extension) is one line on stderr and exit status 2, before any search runs.
 */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_csv.h"
#include "chart.h"
#include "cli.h"
#include "cli_number.h"
#include "commands.h"
#include "profile.h"
#include "report.h"
#include "system_list.h"

/* The defaults give a first-time user a useful guide from `plan report -o guide.html` alone:
 * the models people ask about (Llama 3.1 8B and 70B, a small and a large MoE) at one node, a
 * typical multi-node job and a large one. */
#define DEFAULT_MODELS "8b,70b,mixtral-8x7b,deepseek-v3"
#define DEFAULT_GPUS "8,64,256"

static void usage(void)
{
    printf("usage: plan report -o guide.html|guide.md [--system h100] [--calibration FILE]\n"
           "                   [--models " DEFAULT_MODELS "] [--gpus " DEFAULT_GPUS "]\n"
           "                   [--bench results.csv] [--seq N] [--gbs N] [--format html|md]\n"
           "Writes the FSDP2-vs-Megatron decision guide for the system: the answer per model first\n"
           "(the plan `plan --model M --gpus N` recommends, how much faster than the other\n"
           "framework, the memory headroom), then thresholds (model size\n"
           "at which Megatron overtakes FSDP2, when MoE needs EP, where memory forces sharding,\n"
           "recompute or offload), the frameworks compared, performance per model and GPU count\n"
           "with charts, the feature matrix, the recommended YAML per model, migration notes and\n"
           "troubleshooting. HTML is one self-contained file (inline SVG charts); Markdown writes\n"
           "its charts as PNG files beside it (<stem>-<chart>.png). --bench adds the measured\n"
           "step times of a plan bench CSV; --calibration overlays measured terms on the system.\n"
           "Runs that take over a second show their progress on stderr (searches done / total).\n"
           "--systems h100,h200,b200,gb200-nvl72 adds \"Which cluster\": each model on each of\n"
           "those systems at the largest --gpus count, with tokens/s, GPU-hours and, with\n"
           "--price-per-gpu-hour P[,P...] (one for all or one per system), cost per million\n"
           "tokens (the table of plan compare-systems).\n");
}

/* Progress on stderr once the run has gone on for a second: one line rewritten in place on a
 * terminal, else a line at most every two seconds (logs stay short). The count covers every
 * search of the run: the "which cluster" ones (--systems, run first) and the report's. */
typedef struct {
    struct timespec t0;
    double last_s;
    bool tty, shown;
    long before;    /* searches done before report_build (which cluster) */
    long extra;     /* which-cluster searches in all, added to report_build's totals */
} progress_state;

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) + 1e-9 * (t.tv_nsec - t0->tv_nsec);
}

static void show_progress(long done, long total, void *arg)
{
    progress_state *ps = arg;
    double s = since(&ps->t0);
    if (s < 1 || s - ps->last_s < (ps->tty ? 0.1 : 2)) return;
    ps->last_s = s;
    ps->shown = true;
    fprintf(stderr, "%splan report: %ld/%ld searches, %.0f s%s", ps->tty ? "\r" : "",
            ps->before + done, ps->extra + total, s, ps->tty ? "" : "\n");
    fflush(stderr);
}

/* Split a comma-separated list in place (items point into s). */
static int split(char *s, char **items, int max, const char *flag)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == max) {
            char msg[128];
            snprintf(msg, sizeof msg, "--%s takes at most %d values", flag, max);
            return -cli_error(msg);
        }
        items[n++] = tok;
    }
    if (!n) {
        char msg[128];
        snprintf(msg, sizeof msg, "--%s needs a comma-separated list", flag);
        return -cli_error(msg);
    }
    return n;
}

/* Can path be created or overwritten? Checked before the searches so a typo fails at once. */
static int check_writable(const char *path)
{
    char dir[PATH_MAX], msg[PATH_MAX + 128];
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else snprintf(dir, sizeof dir, ".");
    if (!dir[0]) snprintf(dir, sizeof dir, "/");
    if (access(path, F_OK) == 0 ? access(path, W_OK) != 0 : access(dir, W_OK | X_OK) != 0) {
        snprintf(msg, sizeof msg, "cannot write '%s': check the directory exists and is "
                                  "writable",
                 path);
        return cli_error(msg);
    }
    return 0;
}

int cmd_report(int argc, char **argv)
{
    cli_keep_freed_memory(); /* its searches reuse each other's freed memory */
    enum { O_CAL = 1000, O_BENCH, O_SEQ, O_GBS, O_FORMAT, O_SYSTEMS, O_PRICES };
    static const struct option opts[] = {
        {"system", required_argument, NULL, 's'},   {"calibration", required_argument, NULL, O_CAL},
        {"models", required_argument, NULL, 'm'},   {"model", required_argument, NULL, 'm'},
        {"gpus", required_argument, NULL, 'g'},     {"bench", required_argument, NULL, O_BENCH},
        {"seq", required_argument, NULL, O_SEQ},    {"gbs", required_argument, NULL, O_GBS},
        {"format", required_argument, NULL, O_FORMAT}, {"output", required_argument, NULL, 'o'},
        {"systems", required_argument, NULL, O_SYSTEMS},
        {"price-per-gpu-hour", required_argument, NULL, O_PRICES},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    const char *system = "h100", *calibration = NULL, *bench_path = NULL, *out = NULL;
    const char *format = NULL, *systems_arg = NULL, *prices_arg = NULL;
    char models_arg[4096] = DEFAULT_MODELS, gpus_arg[1024] = DEFAULT_GPUS;
    training_spec t = training_default();
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:m:g:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': system = optarg; break;
        case O_CAL: calibration = optarg; break;
        case 'm': snprintf(models_arg, sizeof models_arg, "%s", optarg); break;
        case 'g': snprintf(gpus_arg, sizeof gpus_arg, "%s", optarg); break;
        case O_BENCH: bench_path = optarg; break;
        case 'o': out = optarg; break;
        case O_FORMAT: format = optarg; break;
        case O_SYSTEMS: systems_arg = optarg; break;
        case O_PRICES: prices_arg = optarg; break;
        case O_SEQ:
        case O_GBS:
            if (c == O_SEQ ? cli_parse_int("seq", optarg, 1, CLI_MAX_SEQ, &t.seq_len)
                           : cli_parse_int("gbs", optarg, 1, CLI_MAX_GBS, &t.global_batch))
                return CLI_EXIT_USAGE;
            break;
        case 'h': usage(); return 0;
        case ':': {
            char msg[160];
            snprintf(msg, sizeof msg, "option '%s' needs a value (see plan report --help)",
                     argv[optind - 1]);
            return cli_error(msg);
        }
        default: {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown option '%s' for plan report: see plan report "
                                      "--help",
                     argv[optind - 1]);
            return cli_error(msg);
        }
        }
    }
    if (optind < argc) {
        char msg[200];
        snprintf(msg, sizeof msg, "unexpected argument '%s' for plan report (the output file "
                                  "is -o FILE)",
                 argv[optind]);
        return cli_error(msg);
    }
    if (!out) return cli_error("plan report needs an output file: -o guide.html or -o guide.md");
    int fmt = report_format_from_path(out);
    if (format) {
        if (!strcmp(format, "html")) fmt = REPORT_HTML;
        else if (!strcmp(format, "md") || !strcmp(format, "markdown")) fmt = REPORT_MARKDOWN;
        else return cli_error("--format must be html or md");
    }
    if (fmt < 0)
        return cli_error("cannot tell the format from the output name: end it in .html or .md, "
                         "or give --format html|md");
    char err[CM_ERRLEN];
    if (training_check(&t, err, sizeof err) != CM_OK) return cli_error(err);

    /* GPU counts */
    char *items[REPORT_MAX_MODELS > REPORT_MAX_GPUS ? REPORT_MAX_MODELS : REPORT_MAX_GPUS];
    int gpus[REPORT_MAX_GPUS];
    int ng = split(gpus_arg, items, REPORT_MAX_GPUS, "gpus");
    if (ng < 0) return -ng;
    for (int i = 0; i < ng; i++) {
        if (cli_parse_int("gpus", items[i], 1, CLI_MAX_GPUS, &gpus[i])) return CLI_EXIT_USAGE;
    }

    /* system (+ calibration) and models */
    const char *dir = cli_data_dir();
    system_spec sys;
    if (profile_load_system(system, dir, &sys, err, sizeof err) != CM_OK) return cli_error(err);
    if (calibration && profile_overlay(calibration, &sys, err, sizeof err) != CM_OK)
        return cli_error(err);
    model_spec *models = calloc(REPORT_MAX_MODELS, sizeof *models);
    if (!models) return cli_error("out of memory");
    int nm = split(models_arg, items, REPORT_MAX_MODELS, "models");
    if (nm < 0) {
        free(models);
        return -nm;
    }
    for (int i = 0; i < nm; i++)
        if (model_load(items[i], dir, &models[i], err, sizeof err) != CM_OK) {
            free(models);
            return cli_error(err);
        }

    bench_row *rows = NULL;
    int nrows = 0;
    if (bench_path && (nrows = bench_csv_read(bench_path, &rows, err, sizeof err)) < 0) {
        free(models);
        return cli_error(err);
    }
    int rc = check_writable(out);
    if (rc) {
        free(models);
        free(rows);
        return rc;
    }
    if (prices_arg && !systems_arg) {
        free(models);
        free(rows);
        return cli_error("--price-per-gpu-hour goes with --systems (the systems to compare)");
    }
    report_options o = {.sys = &sys, .system_name = system, .calibration_path = calibration,
                        .training = t, .models = models, .nmodels = nm, .gpus = gpus,
                        .ngpus = ng, .bench = rows, .nbench = nrows, .bench_path = bench_path};
    progress_state ps = {.tty = isatty(STDERR_FILENO)};
    clock_gettime(CLOCK_MONOTONIC, &ps.t0);
    long planned = report_planned_searches(&o);
    /* "which cluster": each model on each system at the largest GPU count asked */
    system_compare_table *which = NULL;
    if (systems_arg) {
        cli_system_list *sl = malloc(sizeof *sl);
        which = calloc(nm, sizeof *which);
        rc = !sl || !which ? cli_error("out of memory")
                           : cli_system_list_load(systems_arg, prices_arg, CLI_NVLS_UNSET, 0, sl);
        int gmax = gpus[0];
        for (int i = 1; i < ng; i++) gmax = gpus[i] > gmax ? gpus[i] : gmax;
        if (!rc) ps.extra = (long)nm * sl->n; /* one search per model and system */
        for (int i = 0; !rc && i < nm; i++) {
            if (system_compare_run(&models[i], &t, gmax, sl->sys, sl->name_ptrs, sl->prices,
                                   sl->n, &which[i], err, sizeof err) != CM_OK)
                rc = cli_error(err);
            ps.before += sl->n;
            show_progress(0, planned, &ps);
        }
        free(sl);
        if (rc) {
            free(which);
            free(models);
            free(rows);
            return rc;
        }
    }

    o.which_cluster = which;
    o.nwhich_cluster = which ? nm : 0;
    o.progress = show_progress;
    o.progress_arg = &ps;
    report *r = NULL;
    cm_status st = report_build(&o, &r, err, sizeof err);
    if (ps.shown && ps.tty) fputs("\n", stderr);
    free(models);
    free(rows);
    if (st != CM_OK) return cli_error(err);
    st = report_write(r, (report_format)fmt, out, err, sizeof err);
    report_stats s = report_get_stats(r);
    report_free(r);
    free(which);
    chart_cleanup();
    if (st != CM_OK) return cli_error(err);
    if (fmt == REPORT_MARKDOWN && s.images)
        printf("plan report: wrote %s and %d PNG charts beside it (%ld searches, %ld layouts, "
               "%.1f s)\n",
               out, s.images, ps.before + s.searches, s.layouts, s.seconds);
    else
        printf("plan report: wrote %s (%d charts%s; %ld searches, %ld layouts, %.1f s)\n", out,
               s.charts, s.charts_available ? "" : ", none: built without cairo",
               ps.before + s.searches, s.layouts, s.seconds);
    return 0;
}
