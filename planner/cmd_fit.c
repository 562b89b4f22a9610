/*
 * cmd_fit.c — `plan fit CALIB.csv [--system BASE] -o profile.json`: fits the GEMM roofline and
 * every measured collective (op x group size x span) of a `plan calibrate` CSV with GSL
 * (costmodel/fit.c) and writes a calibration profile that overlays BASE (`--calibration
 * profile.json`, or `--system profile.json` after `plan fit --full`).
 */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib_csv.h"
#include "cli.h"
#include "commands.h"
#include "fit.h"
#include "profile.h"

static void usage(void)
{
    printf("usage: plan fit CALIBRATE.csv [--system BASE] [--collectives-only] -o PROFILE.json\n"
           "Fits the GEMM roofline (efficiency, fixed cost) and each collective (latency,\n"
           "bus bandwidth per op, group size and span) of a plan calibrate CSV, prints the fits\n"
           "with their uncertainty, and writes a profile to use as --calibration PROFILE.json.\n");
}

int cmd_fit(int argc, char **argv)
{
    static const struct option opts[] = {{"system", required_argument, NULL, 's'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"collectives-only", no_argument, NULL, 'C'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *base = "h100", *out = NULL;
    bool collectives_only = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': base = optarg; break;
        case 'o': out = optarg; break;
        case 'C': collectives_only = true; break;
        case 'h': usage(); return 0;
        default: return cli_error("plan fit: unknown option or missing value (see plan fit --help)");
        }
    }
    if (argc - optind != 1) return cli_error("plan fit needs one calibrate CSV: plan fit FILE.csv -o profile.json");
    if (!out) return cli_error("plan fit needs -o PROFILE.json");
    const char *csv_path = argv[optind];
    system_spec sys;
    char err[CM_ERRLEN];
    if (profile_load_system(base, cli_data_dir(), &sys, err, sizeof err) != CM_OK)
        return cli_error(err);

    calib_csv r;
    if (calib_csv_read(csv_path, &r, err, sizeof err) != CM_OK) {
        calib_csv_free(&r);
        return cli_error(err);
    }

    printf("Fits of %s over the %s preset\n\n", csv_path, sys.name);
    if (r.ngemm > 0) {
        fit_gemm_result g;
        if (fit_gemm(&sys, r.gemm, r.ngemm, &g, err, sizeof err) != CM_OK) {
            calib_csv_free(&r);
            return cli_error(err);
        }
        printf("GEMM (%d shapes): efficiency %.3f +- %.3f of peak (preset %.3f), fixed cost "
               "%.2f +- %.2f us, rms relative residual %.1f%%\n",
               g.points, g.efficiency, g.efficiency_sd, sys.gemm_efficiency_max,
               g.overhead_s * 1e6, g.overhead_sd * 1e6, 100 * g.rms_rel_residual);
        if (collectives_only)
            printf("  (not applied: --collectives-only keeps the preset's GEMM terms)\n");
        else
            fit_apply_gemm(&sys, &g);
    }
    printf("\n%-15s %5s %6s %12s %18s %9s %6s\n", "collective", "gpus", "span", "alpha_us",
           "busbw_GB/s", "rms_res", "points");
    for (int i = 0; i < r.ncolls; i++) {
        calib_csv_collective *cl = &r.colls[i];
        system_collective_fit fit;
        if (fit_collective((collective_op)cl->op, cl->group_size, cl->spans_nodes, cl->obs, cl->n, &fit,
                           err, sizeof err) != CM_OK) {
            fprintf(stderr, "plan fit: skipped: %s\n", err);
            continue;
        }
        printf("%-15s %5d %6s %6.1f +- %-4.1f %8.1f +- %-6.1f %8.1f%% %6d\n",
               collective_get((collective_op)cl->op)->name, cl->group_size,
               cl->spans_nodes ? "inter" : "intra", fit.alpha_s * 1e6, fit.alpha_sd * 1e6,
               fit.busbw_bytes_per_s / 1e9, fit.busbw_sd / 1e9, 100 * fit.rms_rel_residual,
               fit.points);
        if (fit_apply_collective(&sys, &fit, err, sizeof err) != CM_OK) break;
    }
    calib_csv_free(&r);

    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "plan fit %s --system %s%s -o %s", csv_path, base,
             collectives_only ? " --collectives-only" : "", out);
    json_t *extra = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", out, "description",
                              "calibration profile fitted by plan fit", "calibration_of", base,
                              "date", date, "command", cmd);
    cm_status st = profile_write(out, &sys, extra, err, sizeof err);
    json_decref(extra);
    if (st != CM_OK) return cli_error(err);
    printf("\nwrote %s (use it as --calibration %s on top of --system %s)\n", out, out, base);
    return 0;
}
