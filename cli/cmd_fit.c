/*
 * cmd_fit.c — `plan fit CALIB.csv [--system BASE] -o profile.json`: fits the GEMM roofline (bf16,
 * and FP8's ratio to it where the CSV has gemm_fp8 rows) and every measured collective (op x group size x span) of a `plan calibrate` CSV with GSL
 * (costmodel/fit.c) and writes a calibration profile that overlays BASE (`--calibration
 * profile.json`, or `--system profile.json` after `plan fit --full`).
 * In place of the CSV it takes nccl-tests output (text log or -J JSON, costmodel/nccl_tests.h):
 * its collectives are fitted the same way, so a cluster measured with nccl-tests alone gets a
 * profile.
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
#include "nccl_tests.h"
#include "profile.h"

/* The runs of an nccl-tests file as the reader's collectives (same op, group and span merge).
 * The span is the system's: does the run leave its NVLink domain (nccl_tests.h). */
static cm_status read_nccl_tests(calib_csv *r, const char *path, const system_spec *sys,
                                 char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    nccl_tests_file nf;
    cm_status st = nccl_tests_read(path, &nf, err, errlen);
    if (st != CM_OK) return st;
    for (int i = 0; i < nf.nruns && st == CM_OK; i++) {
        const nccl_tests_run *run = &nf.runs[i];
        int inter = nccl_tests_spans_domains(run, sys);
        int k;
        for (k = 0; k < r->ncolls; k++)
            if (r->colls[k].op == (int)run->op && r->colls[k].group_size == run->ranks &&
                r->colls[k].spans_nodes == inter)
                break;
        if (k == CALIB_CSV_MAX_GROUPS) break;
        if (k == r->ncolls)
            r->colls[r->ncolls++] = (calib_csv_collective){.op = run->op,
                                                           .group_size = run->ranks,
                                                           .spans_nodes = inter};
        calib_csv_collective *c = &r->colls[k];
        fit_collective_obs *o = realloc(c->obs, (size_t)(c->n + run->n) * sizeof *o);
        if (!o) {
            st = cm_fail(err, errlen, CM_ENOMEM, "out of memory reading '%s'", path);
            break;
        }
        memcpy(o + c->n, run->obs, (size_t)run->n * sizeof *o);
        c->obs = o;
        c->n += run->n;
        c->cap = c->n;
    }
    if (st == CM_OK)
        printf("nccl-tests output %s: %d test(s) read, %d of other operations skipped\n", path,
               nf.nruns, nf.skipped_runs);
    nccl_tests_free(&nf);
    return st;
}

static void usage(void)
{
    printf("usage: plan fit CALIBRATE.csv [--system BASE] [--collectives-only] -o PROFILE.json\n"
           "Fits the GEMM roofline (efficiency, fixed cost) and each collective (latency,\n"
           "bus bandwidth per op, group size and span) of a plan calibrate CSV, prints the fits\n"
           "with their uncertainty, and writes a profile to use as --calibration PROFILE.json.\n"
           "In place of the CSV, FILE may be nccl-tests output (the text log, or the -J JSON):\n"
           "its all_reduce, all_gather, reduce_scatter, alltoall and sendrecv tests are fitted.\n");
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
        default: { /* name the option, as the other commands do */
            char msg[200];
            snprintf(msg, sizeof msg, "plan fit: %s '%.100s' (see plan fit --help)",
                     c == ':' ? "this option needs a value:" : "unknown option",
                     argv[optind - 1]);
            return cli_error(msg);
        }
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
    if (nccl_tests_detect(csv_path)) {
        if (read_nccl_tests(&r, csv_path, &sys, err, sizeof err) != CM_OK) {
            calib_csv_free(&r);
            return cli_error(err);
        }
        goto fit;
    }
    if (calib_csv_read(csv_path, &r, err, sizeof err) != CM_OK) {
        calib_csv_free(&r);
        return cli_error(err);
    }

fit:
    printf("Fits of %s over the %s preset\n\n", csv_path, sys.name);
    fit_gemm_result g = {0}, g8 = {0}, gb = {0};
    if ((r.ngemm_fp8 > 0 || r.ngemm_fp8_block > 0) && r.ngemm == 0) {
        calib_csv_free(&r);
        return cli_error("the CSV has FP8 GEMM rows but no bf16 ones: the FP8 ratio is FP8's "
                         "efficiency over bf16's in the same run; run plan calibrate with "
                         "--ops gemm,gemm_fp8");
    }
    if (r.ngemm > 0) {
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
    if (r.ngemm_fp8 > 0) {
        /* FP8 against its own peak; the ratio of the two fractions carries whichever bf16
         * efficiency the profile applies over to FP8 (precision.h), so it is applied even
         * with --collectives-only */
        if (fit_gemm_fp8(&sys, r.gemm_fp8, r.ngemm_fp8, g.overhead_s, &g8, err, sizeof err) !=
            CM_OK) {
            calib_csv_free(&r);
            return cli_error(err);
        }
        fit_apply_fp8_ratio(&sys, &g, &g8);
        printf("FP8 GEMM (%d shapes, e4m3, per-tensor scales): efficiency %.3f +- %.3f of the "
               "FP8 peak (fixed cost held at bf16's %.2f us), rms relative residual %.1f%%\n"
               "  ratio to bf16's efficiency %.3f +- %.3f (precision.c's measured table: "
               "0.9135; applied to --precision fp8)\n",
               g8.points, g8.efficiency, g8.efficiency_sd, g8.overhead_s * 1e6,
               100 * g8.rms_rel_residual, sys.fp8_gemm_ratio, sys.fp8_gemm_ratio_sd);
    }
    if (r.ngemm_fp8_block > 0) {
        /* blockwise FP8 (1x128 by 128x128 scales) the same way: its own ratio, which
         * --fp8-recipe blockwise takes (precision.c) */
        if (fit_gemm_fp8(&sys, r.gemm_fp8_block, r.ngemm_fp8_block, g.overhead_s, &gb, err,
                         sizeof err) != CM_OK) {
            calib_csv_free(&r);
            return cli_error(err);
        }
        fit_apply_fp8_blockwise_ratio(&sys, &g, &gb);
        printf("Blockwise FP8 GEMM (%d shapes, 1x128 by 128x128 scales): efficiency %.3f +- %.3f "
               "of the FP8 peak, rms relative residual %.1f%%\n"
               "  ratio to bf16's efficiency %.3f +- %.3f (precision.c's measured table: "
               "0.8265; applied to --fp8-recipe blockwise)\n",
               gb.points, gb.efficiency, gb.efficiency_sd, 100 * gb.rms_rel_residual,
               sys.fp8_blockwise_gemm_ratio, sys.fp8_blockwise_gemm_ratio_sd);
    }
    if (r.ngemm_fp8 > 0 || r.ngemm_fp8_block > 0) {
        /* the same ratios shape by shape: an FP8 GEMM takes its nearest measured shape's
         * (fp8_shape.h) */
        int ns = fit_apply_fp8_shapes(&sys, r.gemm, r.ngemm, r.gemm_fp8, r.ngemm_fp8,
                                      r.gemm_fp8_block, r.ngemm_fp8_block);
        printf("FP8 ratios by shape: %d shapes (calibration.fp8_gemm_shapes; an FP8 GEMM takes "
               "the nearest measured shape's)\n",
               ns);
        for (int i = 0; i < sys.fp8_gemm_shapes.n; i++) {
            const fp8_shape_point *p = &sys.fp8_gemm_shapes.p[i];
            printf("  %6.0f x %6.0f x %6.0f  ratio %5.3f  blockwise %5.3f\n", p->m, p->n, p->k,
                   p->ratio, p->blockwise_ratio);
        }
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
    if (g8.points > 0) /* what the FP8 ratio was fitted from, for the reader (not read back) */
        json_object_set_new(
            extra, "fp8_gemm_fit",
            json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "points", g8.points,
                      "fp8_efficiency", g8.efficiency, "fp8_efficiency_sd", g8.efficiency_sd,
                      "fp8_overhead_s", g8.overhead_s, "fp8_rms_rel_residual",
                      g8.rms_rel_residual, "bf16_efficiency", g.efficiency, "bf16_efficiency_sd",
                      g.efficiency_sd, "bf16_overhead_s", g.overhead_s));
    if (gb.points > 0)
        json_object_set_new(
            extra, "fp8_blockwise_gemm_fit",
            json_pack("{s:i, s:f, s:f, s:f, s:f}", "points", gb.points, "efficiency",
                      gb.efficiency, "efficiency_sd", gb.efficiency_sd, "rms_rel_residual",
                      gb.rms_rel_residual, "bf16_efficiency", g.efficiency));
    cm_status st = profile_write(out, &sys, extra, err, sizeof err);
    json_decref(extra);
    if (st != CM_OK) return cli_error(err);
    printf("\nwrote %s (use it as --calibration %s on top of --system %s)\n", out, out, base);
    return 0;
}
