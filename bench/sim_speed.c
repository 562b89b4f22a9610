/*
 * sim_speed.c — the step simulator's speed benchmark (issue 8's target: a 405B plan with 16
 * pipeline stages and 128 micro-batches simulated in under 10 ms). Each case is built from the
 * cost model and simulated many times; prints the median wall time of sim_estimate (build the
 * input from the cost model + simulate) and of sim_run alone, and with the trace recorded and
 * turned into JSON. Results: bench/README.md.
 *
 * usage: sim_speed [repeats]   (PLAN_DATA_DIR must point at data/, meson sets it)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sim.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 51;
    if (repeats < 1 || repeats > 100000) repeats = 51;
    static const struct {
        const char *what, *model;
        layout_framework fw;
        layout_sharding sh;
        int tp, pp, dp, vpp;
    } cases[] = {
        {"405b 1F1B (target)", "405b", FRAMEWORK_MEGATRON, SHARDING_DISTOPT, 8, 16, 8, 1},
        {"70b interleaved v5", "70b", FRAMEWORK_MEGATRON, SHARDING_DISTOPT, 8, 16, 8, 5},
        {"405b megatron-fsdp", "405b", FRAMEWORK_MEGATRON, SHARDING_FSDP, 8, 1, 128, 1},
        {"8b fsdp2", "8b", FRAMEWORK_FSDP2, SHARDING_FSDP, 1, 1, 64, 1},
    };
    double *t_all = malloc(sizeof(double) * repeats), *t_run = malloc(sizeof(double) * repeats),
           *t_trace = malloc(sizeof(double) * repeats);
    sim_workspace *w = sim_alloc();
    if (!t_all || !t_run || !t_trace || !w) return 1;
    printf("%-20s %6s %6s %4s %5s %8s %12s %12s %14s %10s\n", "case", "stages", "chunks", "vpp",
           "micro", "ops", "estimate_us", "run_us", "run+trace_us", "events");
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        model_spec m;
        system_spec sys;
        char err[CM_ERRLEN];
        if (model_load(cases[c].model, cli_data_dir(), &m, err, sizeof err) != CM_OK ||
            system_load("h100", cli_data_dir(), &sys, err, sizeof err) != CM_OK) {
            fprintf(stderr, "sim_speed: %s\n", err);
            return 1;
        }
        training_spec t = training_default();
        layout l = layout_default(cases[c].fw);
        l.sharding = cases[c].sh;
        l.tp = cases[c].tp;
        l.pp = cases[c].pp;
        l.dp = cases[c].dp;
        l.vpp = cases[c].vpp;
        l.sp = l.tp > 1;
        estimate e;
        if (estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err) != CM_OK) {
            fprintf(stderr, "sim_speed: %s\n", err);
            return 1;
        }
        sim_options o = {.serialize = false, .trace = false};
        time_simulated r;
        int events = 0;
        for (int i = 0; i < repeats; i++) {
            double a = now();
            if (sim_estimate(w, &m, &sys, &t, &l, &o, &e, err, sizeof err) != CM_OK) {
                fprintf(stderr, "sim_speed: %s\n", err);
                return 1;
            }
            double b = now();
            sim_run(w, sim_input_of(w), &o, &r, err, sizeof err);
            double d = now();
            sim_options ot = {.serialize = false, .trace = true};
            sim_run(w, sim_input_of(w), &ot, &r, err, sizeof err);
            json_t *j = sim_trace_json(w);
            double f = now();
            events = sim_trace_events(w);
            json_decref(j);
            t_all[i] = b - a;
            t_run[i] = d - b;
            t_trace[i] = f - d;
        }
        qsort(t_all, repeats, sizeof *t_all, cmp);
        qsort(t_run, repeats, sizeof *t_run, cmp);
        qsort(t_trace, repeats, sizeof *t_trace, cmp);
        printf("%-20s %6d %6d %4d %5d %8d %12.1f %12.1f %14.1f %10d\n", cases[c].what, l.pp,
               l.pp * l.vpp, l.vpp, e.microbatches, sim_op_count(w), 1e6 * t_all[repeats / 2],
               1e6 * t_run[repeats / 2], 1e6 * t_trace[repeats / 2], events);
        if (c == 0 && t_all[repeats / 2] > 10e-3)
            printf("  target missed: the 405B case took more than 10 ms\n");
    }
    sim_free(w);
    free(t_all);
    free(t_run);
    free(t_trace);
    return 0;
}
