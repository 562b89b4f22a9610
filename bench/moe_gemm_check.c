/*
 * moe_gemm_check.c — the cost model's expert GEMMs against the H100 measurement of
 * bench/moe_grouped_gemm.py (bench/results/moe_grouped_gemm_h100.tsv): for every row of the
 * grouped (torch._grouped_mm), bmm and loop methods, the recipe's price of G experts of
 * m x n x k on the h100 preset (compute_grouped_gemm_s, as costmodel/layer_recipe.c prices
 * Megatron's "experts" op; G x compute_gemm_s for the loop) beside the measured time, and the
 * median and spread of the error per method.
 * The loop rows are launch-bound in eager Python (about 25 us a call): the recipe's grouped
 * price is not meant for them; they are printed to show the gap. The measurement timed eager
 * calls back to back, so no row can be faster than one eager dispatch: the same file's fastest
 * rows (one small matmul, 18-25 us) show that floor. The summary counts rows measured at
 * >= FLOOR_US (default 50, twice the floor) as kernel time; --floor-us 0 counts every row.
 *
 * usage: moe_gemm_check TSV [--rows] [--floor-us N]   (PLAN_DATA_DIR: data/, meson sets it)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compute.h"

#define MAX_ROWS 1024

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n ? v[(int)(q * (n - 1) + 0.5)] : NAN;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: moe_gemm_check TSV [--rows]\n");
        return 2;
    }
    bool rows = false;
    double floor_us = 50;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--rows")) rows = true;
        else if (!strcmp(argv[i], "--floor-us") && i + 1 < argc) floor_us = atof(argv[++i]);
    }
    system_spec sys;
    char err[CM_ERRLEN];
    if (system_load("h100", cli_data_dir(), &sys, err, sizeof err) != CM_OK) {
        fprintf(stderr, "moe_gemm_check: %s\n", err);
        return 1;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static const char *methods[] = {"grouped", "bmm", "loop"};
    static double errs[3][MAX_ROWS], small[3][MAX_ROWS];
    int n[3] = {0}, ns[3] = {0};
    char line[512];
    if (rows) printf("%-14s %3s %5s %-9s %-8s %10s %10s %7s\n", "model", "G", "T", "gemm",
                     "method", "meas_us", "pred_us", "err%");
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || !strncmp(line, "model", 5)) continue;
        char model[64], gemm[32], method[16], gs[16];
        double t_rows, mm, nn, kk, secs, tf;
        if (sscanf(line, "%63s %15s %lf %31s %lf %lf %lf %15s %lf %lf", model, gs, &t_rows, gemm,
                   &mm, &nn, &kk, method, &secs, &tf) != 10)
            continue;
        int mi = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(method, methods[i])) mi = i;
        if (mi < 0 || n[mi] >= MAX_ROWS) continue;
        int g = atoi(gs);
        /* grouped and bmm: one kernel (the Megatron recipe's price); loop: G kernels */
        double pred = mi == 2 ? g * compute_gemm_s(&sys, mm, nn, kk)
                              : compute_grouped_gemm_s(&sys, g, mm, nn, kk);
        double e = (pred - secs) / secs; /* (predicted - measured) / measured */
        if (secs * 1e6 >= floor_us) {
            errs[mi][n[mi]++] = e;
            if (t_rows <= 256) small[mi][ns[mi]++] = e;
        }
        if (rows)
            printf("%-14s %3d %5.0f %-9s %-8s %10.1f %10.1f %+7.1f\n", model, g, t_rows, gemm,
                   method, secs * 1e6, pred * 1e6, 100 * e);
    }
    fclose(f);
    printf("rows measured at >= %.0f us (eager dispatch floor ~20 us)\n", floor_us);
    printf("%-8s %5s %12s %12s %12s %18s\n", "method", "rows", "median_err%", "p10_err%",
           "p90_err%", "median_err%_T<=256");
    for (int i = 0; i < 3; i++) {
        double med = quantile(errs[i], n[i], 0.5), p10 = quantile(errs[i], n[i], 0.1);
        double p90 = quantile(errs[i], n[i], 0.9), sm = quantile(small[i], ns[i], 0.5);
        printf("%-8s %5d %+12.1f %+12.1f %+12.1f %+18.1f\n", methods[i], n[i], 100 * med,
               100 * p10, 100 * p90, 100 * sm);
    }
    return 0;
}
