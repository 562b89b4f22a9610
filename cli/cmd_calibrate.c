/*
 * cmd_calibrate.c — `plan calibrate`: microbenchmarks of the local GPUs at the shapes the plans
 * use (bf16 cuBLAS GEMMs and, on FP8 GPUs, the same shapes as FP8 cuBLASLt GEMMs; NCCL all-reduce, all-gather, reduce-scatter, all-to-all, send/recv over
 * every group size from 2 to the local GPU count, 1 KiB to --max-bytes). One CSV row per
 * measurement (schema: backend/calib.h), a short table on stdout, progress on stderr.
 *
 * Everything up to the first GPU call (options, the sweep, --list) works in a build without the
 * CUDA backend, so it is tested on any machine.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "units.h"
#include "cli.h"
#include "whole_file.h"
#include "cli_number.h"
#include "commands.h"
#include "model.h"
#ifdef PLAN_HAVE_BACKEND
#include "backend.h"
#endif

#define MAX_SHAPES 40
#define MAX_SIZES 32

static void usage(void)
{
    printf("usage: plan calibrate [options]\n"
           "  --ops LIST        gemm,gemm_fp8,gemm_fp8_blockwise,all_reduce,all_gather,\n"
           "                    reduce_scatter,all_to_all,send_recv (or all, collectives;\n"
           "                    default all; gemm_fp8: e4m3 operands with per-tensor scales,\n"
           "                    bf16 result, on FP8 GPUs; gemm_fp8_blockwise: 1x128 by 128x128\n"
           "                    block scales, on Hopper)\n"
           "  --max-bytes N     largest collective message, with K/M/G suffix (default 1G)\n"
           "  --gpus N          use the first N local GPUs (default all)\n"
           "  --model M         model whose GEMM shapes are measured (default 8b)\n"
           "  --tokens N        GEMM rows: tokens per micro-batch (default 4096)\n"
           "  --repeats N       timed repeats per measurement; the median is kept (default 7)\n"
           "  --shape MxNxK     time this GEMM (y[M,N] = x[M,K] W[N,K]^T) instead of the model's\n"
           "                    shapes; repeatable\n"
           "  --warmup-ms N     run each GEMM back to back this long before timing (default 0)\n"
           "  --timing MODE     GEMM repeats: loop (CUDA events around the host's launches)\n"
           "                    or host-ahead (the GPU starts once the host has issued every\n"
           "                    launch of the repeat: its back-to-back time alone; default loop)\n"
           "  -o, --output FILE CSV output (default plan-calibrate.csv; - for stdout)\n"
           "  --list            print the measurements that would run, and stop\n"
           "Needs NVIDIA GPUs (the CUDA backend); exit status 3 when none is found.\n");
}

static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0)) return -1; /* !(v > 0): NaN too */
    double mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1024.0, end++;
    else if (*end == 'M' || *end == 'm') mul = 1048576.0, end++;
    else if (*end == 'G' || *end == 'g') mul = UNITS_GIB_BYTES, end++;
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    if (*end) return -1;
    v *= mul;
    if (v < 1024 || v > 16.0 * UNITS_GIB_BYTES) return -1;
    *out = (size_t)v;
    return 0;
}

#ifdef PLAN_HAVE_BACKEND
/* Relative error an FP8 GEMM may show against the fp32 product of its dequantized operands: the
 * bf16 result's rounding (2^-9 per element) and the summation order, as for bf16. */
#define FP8_CHECK_MAX 1e-2

/* The FP8 GEMMs (e4m3, per-tensor scales, bf16 result) at the same shapes as bf16: a check on
 * small shapes first, then each shape timed and checked on sampled rows. *status 1 on a failed
 * check; CM error on a failed call. */
static cm_status calibrate_fp8(bk_ctx *ctx, const calib_shape *shapes, int nshapes,
                               const bk_timing *tm, FILE *out, FILE *human, FILE *progress,
                               int *status, char *err, size_t errlen)
{
    static const long small[2][4] = {{320, 192, 256, 2}, {64, 2048, 128, 3}};
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        double rel;
        cm_status st = bk_gemm_check_fp8(ctx, 0, small[i][0], small[i][1], small[i][2],
                                         (int)small[i][3], &rel, err, errlen);
        if (st != CM_OK) return st;
        if (!(rel <= worst)) worst = rel;
    }
    fprintf(human, "\nFP8 GEMM check vs fp32 reference of the dequantized operands (320x192x256 "
                   "batch 2, 64x2048x128 batch 3): rel. error %.2e %s\n",
            worst, worst < FP8_CHECK_MAX ? "ok" : "FAILED");
    if (!(worst < FP8_CHECK_MAX)) *status = 1;
    fprintf(human, "\n%-16s %6s %6s %6s %10s %8s %9s %8s\n", "gemm (fp8 e4m3)", "m", "n", "k",
            "time ms", "TFLOP/s", "check", "host us");
    for (int i = 0; i < nshapes; i++) {
        const calib_shape *s = &shapes[i];
        fprintf(progress, "calibrate: gemm_fp8 %s\n", s->name);
        bk_gemm_result g;
        cm_status st = bk_gemm_time_fp8(ctx, 0, s->m, s->n, s->k, 1, tm, &g, err, errlen);
        if (st != CM_OK) return st;
        bool ok = g.check_error < FP8_CHECK_MAX;
        if (!ok) *status = 1;
        calib_row r = {.op = "gemm_fp8", .dtype = "e4m3", .name = s->name, .m = s->m, .n = s->n,
                       .k = s->k, .bytes = 1.0 * (s->m * s->k + s->n * s->k) + 2.0 * s->m * s->n,
                       .group_size = 1, .span = "intra", .time_s = g.time_s,
                       .tflops = g.flops_per_s / 1e12, .check_error = g.check_error,
                       .spread = g.spread};
        calib_csv_row(out, &r);
        fprintf(human, "%-16s %6ld %6ld %6ld %10.4f %8.1f %9.2e %8.1f%s\n", s->name, s->m, s->n,
                s->k, g.time_s * 1e3, g.flops_per_s / 1e12, g.check_error, g.host_s * 1e6,
                ok ? "" : " FAILED");
    }
    return CM_OK;
}

/* Blockwise FP8 GEMMs (DeepSeek-V3: A's scales per 1x128 block, B's per 128x128 block, as the
 * forward and dgrad of --fp8-recipe blockwise run) at the same shapes: checks first (every
 * output element, random power-of-two block scales; also the 1x128 by 1x128 wgrad case), then
 * each shape timed and checked on sampled rows. */
static cm_status calibrate_fp8_block(bk_ctx *ctx, const calib_shape *shapes, int nshapes,
                                     const bk_timing *tm, FILE *out, FILE *human,
                                     FILE *progress, int *status, char *err, size_t errlen)
{
    static const long small[2][3] = {{256, 384, 512}, {384, 256, 1024}};
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        double rel;
        cm_status st = bk_gemm_check_fp8_block(ctx, 0, i == 0, small[i][0], small[i][1],
                                               small[i][2], &rel, err, errlen);
        if (st != CM_OK) return st;
        if (!(rel <= worst)) worst = rel;
    }
    fprintf(human, "\nBlockwise FP8 GEMM check vs fp32 reference applying each block's scale "
                   "(256x384x512 1x128 by 128x128, 384x256x1024 1x128 by 1x128): rel. error "
                   "%.2e %s\n",
            worst, worst < FP8_CHECK_MAX ? "ok" : "FAILED");
    if (!(worst < FP8_CHECK_MAX)) *status = 1;
    fprintf(human, "\n%-16s %6s %6s %6s %10s %8s %9s %8s\n", "gemm (fp8 block)", "m", "n", "k",
            "time ms", "TFLOP/s", "check", "host us");
    for (int i = 0; i < nshapes; i++) {
        const calib_shape *s = &shapes[i];
        fprintf(progress, "calibrate: gemm_fp8_blockwise %s\n", s->name);
        bk_gemm_result g;
        cm_status st = bk_gemm_time_fp8_block(ctx, 0, true, s->m, s->n, s->k, tm, &g, err,
                                              errlen);
        if (st != CM_OK) return st;
        bool ok = g.check_error < FP8_CHECK_MAX;
        if (!ok) *status = 1;
        /* operands, result and the fp32 scales (1x128 of A, 128x128 of B) */
        double scales = 4.0 * ((double)s->m * ((s->k + 127) / 128) +
                               (double)((s->n + 127) / 128) * ((s->k + 127) / 128));
        calib_row r = {.op = "gemm_fp8_blockwise", .dtype = "e4m3", .name = s->name, .m = s->m,
                       .n = s->n, .k = s->k,
                       .bytes = 1.0 * (s->m * s->k + s->n * s->k) + 2.0 * s->m * s->n + scales,
                       .group_size = 1, .span = "intra", .time_s = g.time_s,
                       .tflops = g.flops_per_s / 1e12, .check_error = g.check_error,
                       .spread = g.spread};
        calib_csv_row(out, &r);
        fprintf(human, "%-16s %6ld %6ld %6ld %10.4f %8.1f %9.2e %8.1f%s\n", s->name, s->m, s->n,
                s->k, g.time_s * 1e3, g.flops_per_s / 1e12, g.check_error, g.host_s * 1e6,
                ok ? "" : " FAILED");
    }
    return CM_OK;
}
#endif

static int parse_pos(const char *flag, const char *s, int lo, int hi, int *out)
{
    return cli_parse_int(flag, s, lo, hi, out); /* strict: cli_number.h */
}

int cmd_calibrate(int argc, char **argv)
{
    enum { O_OPS = 1000, O_MAX, O_GPUS, O_MODEL, O_TOKENS, O_REPEATS, O_LIST, O_SHAPE, O_WARM,
           O_TIMING };
    static const struct option opts[] = {
        {"ops", required_argument, NULL, O_OPS},
        {"max-bytes", required_argument, NULL, O_MAX},
        {"gpus", required_argument, NULL, O_GPUS},
        {"model", required_argument, NULL, O_MODEL},
        {"tokens", required_argument, NULL, O_TOKENS},
        {"repeats", required_argument, NULL, O_REPEATS},
        {"output", required_argument, NULL, 'o'},
        {"list", no_argument, NULL, O_LIST},
        {"shape", required_argument, NULL, O_SHAPE},
        {"warmup-ms", required_argument, NULL, O_WARM},
        {"timing", required_argument, NULL, O_TIMING},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned mask = CALIB_ALL;
    size_t max_bytes = 1u << 30;
    int gpus = 0, tokens = 4096, repeats = 7, list = 0, rc = 0, warm_ms = 0;
    bool host_ahead = false;
    calib_shape user[MAX_SHAPES];
    int nuser = 0;
    const char *model = "8b", *outpath = "plan-calibrate.csv";
    char err[CM_ERRLEN];
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_OPS:
            if (calib_parse_ops(optarg, &mask, err, sizeof err) != CM_OK) return cli_error(err);
            break;
        case O_MAX:
            if (parse_bytes(optarg, &max_bytes))
                return cli_error("--max-bytes needs a size from 1K to 16G (e.g. 1G, 64M, 4096)");
            break;
        case O_GPUS: rc = parse_pos("gpus", optarg, 1, 1024, &gpus); break;
        case O_MODEL: model = optarg; break;
        case O_TOKENS: rc = parse_pos("tokens", optarg, 1, 1 << 24, &tokens); break;
        case O_REPEATS: rc = parse_pos("repeats", optarg, 1, 64, &repeats); break;
        case 'o': outpath = optarg; break;
        case O_LIST: list = 1; break;
        case O_WARM: rc = parse_pos("warmup-ms", optarg, 0, 60000, &warm_ms); break;
        case O_TIMING:
            if (strcmp(optarg, "loop") == 0) host_ahead = false;
            else if (strcmp(optarg, "host-ahead") == 0) host_ahead = true;
            else return cli_error("--timing needs loop or host-ahead");
            break;
        case O_SHAPE: {
            long a, b, k;
            char tail;
            if (nuser >= MAX_SHAPES ||
                sscanf(optarg, "%ldx%ldx%ld%c", &a, &b, &k, &tail) != 3 || a < 1 || b < 1 ||
                k < 1 || a > 1000000 || b > 1000000 || k > 1000000)
                return cli_error("--shape needs MxNxK with positive sizes, e.g. 8192x8192x8192");
            snprintf(user[nuser].name, sizeof user[nuser].name, "%ldx%ldx%ld", a, b, k);
            user[nuser].m = a;
            user[nuser].n = b;
            user[nuser].k = k;
            nuser++;
            break;
        }
        case 'h': usage(); return 0;
        case ':': {
            char msg[160];
            snprintf(msg, sizeof msg, "option '%s' needs a value", argv[optind - 1]);
            return cli_error(msg);
        }
        default: {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown option '%s': see plan calibrate --help",
                     argv[optind - 1]);
            return cli_error(msg);
        }
        }
        if (rc) return rc;
    }
    if (optind < argc) {
        char msg[200];
        snprintf(msg, sizeof msg, "unexpected argument '%s' (see plan calibrate --help)",
                 argv[optind]);
        return cli_error(msg);
    }
    model_spec m;
    if (model_load(model, cli_data_dir(), &m, err, sizeof err) != CM_OK) return cli_error(err);
    calib_shape shapes[MAX_SHAPES];
    int nshapes = (mask & CALIB_GEMMS) ? calib_gemm_shapes(&m, tokens, shapes, MAX_SHAPES) : 0;
    if (nuser && (mask & CALIB_GEMMS)) {
        memcpy(shapes, user, sizeof(calib_shape) * nuser);
        nshapes = nuser;
    }
    size_t sizes[MAX_SIZES];
    int nsizes = calib_sizes(max_bytes, sizes, MAX_SIZES);

    if (list) {
        static const unsigned fbit[3] = {CALIB_GEMM, CALIB_GEMM_FP8, CALIB_GEMM_FP8_BLOCK};
        static const char *fname[3] = {"gemm", "gemm_fp8", "gemm_fp8_blockwise"};
        for (int f = 0; f < 3; f++)
            for (int i = 0; (mask & fbit[f]) && i < nshapes; i++)
                printf("%s %-16s m=%ld n=%ld k=%ld\n", fname[f], shapes[i].name, shapes[i].m,
                       shapes[i].n, shapes[i].k);
        for (int op = 0; op < COLL_COUNT; op++) {
            if (!(mask & CALIB_COLL(op))) continue;
            printf("%s group sizes 2..%s, %d sizes %zu..%zu bytes\n", collective_get(op)->name,
                   gpus ? "--gpus" : "local GPUs", nsizes, sizes[0], sizes[nsizes - 1]);
        }
        return 0;
    }
#ifndef PLAN_HAVE_BACKEND
    (void)repeats;
    (void)outpath;
    (void)warm_ms;
    (void)host_ahead;
    return cli_error("this plan was built without the CUDA backend (nvcc, cuBLAS and NCCL were "
                     "not found at meson setup): see backend/README.md");
#else
    if (bk_device_count() == 0) {
        fprintf(stderr, "plan: error: no CUDA GPU found: plan calibrate measures the local GPUs\n");
        return 3;
    }
    bk_ctx *ctx;
    if (bk_open(&ctx, gpus, err, sizeof err) != CM_OK) {
        fprintf(stderr, "plan: error: %s\n", err);
        bk_world_abort(1); /* under MPI the other processes would wait for this one */
    }
    /* Several processes (mpirun / srun): collectives span all of them; GEMMs run on process
     * 0's first GPU; process 0 writes the CSV and the table. */
    bool root = bk_is_root(ctx);
    /* The CSV is written whole (whole_file.h): a failed run or a full disk leaves no half file
     * and any earlier calibration under the same name as it was. */
    whole_file wf;
    if (whole_file_open(&wf, root ? outpath : "/dev/null", err, sizeof err) != CM_OK) {
        fprintf(stderr, "plan: error: %s\n", err);
        bk_close(ctx);
        return 1;
    }
    FILE *out = wf.f;
    FILE *human = !root ? out : out == stdout ? stderr : stdout;
    FILE *progress = root ? stderr : out;
    bk_timing tm = bk_timing_default();
    tm.repeats = repeats;
    tm.warmup_s = warm_ms * 1e-3;
    tm.host_ahead = host_ahead;
    calib_csv_header(out);
    fprintf(progress, "calibrate: %s, NCCL_NVLS_ENABLE=%s\n", bk_device_name(ctx),
            getenv("NCCL_NVLS_ENABLE"));
    int status = 0;
    bool hard = false; /* a failed call (not a wrong result): other processes may be waiting */
    if (nshapes && root && (mask & CALIB_GEMM)) {
        double rel[3];
        for (int f = 0; f < 3; f++) {
            if (bk_gemm_check(ctx, 0, (work_gemm_form)f, 320, 192, 256, 2, &rel[f], err,
                              sizeof err) != CM_OK) {
                fprintf(stderr, "plan: error: %s\n", err);
                status = 1;
                hard = true;
                goto end;
            }
        }
        double worst = rel[0] > rel[1] ? rel[0] : rel[1];
        if (rel[2] > worst) worst = rel[2];
        fprintf(human, "GEMM check vs fp32 reference (320x192x256, batch 2): rel. error fwd %.2e "
                       "dgrad %.2e wgrad %.2e %s\n",
                rel[0], rel[1], rel[2], worst < 1e-2 ? "ok" : "FAILED");
        if (!(worst < 1e-2)) status = 1;
        fprintf(human, "\n%-16s %6s %6s %6s %10s %8s\n", "gemm (bf16)", "m", "n", "k", "time ms",
                "TFLOP/s");
        for (int i = 0; i < nshapes; i++) {
            const calib_shape *s = &shapes[i];
            fprintf(progress, "calibrate: gemm %s\n", s->name);
            bk_gemm_result g;
            if (bk_gemm_time(ctx, 0, GEMM_FWD, s->m, s->n, s->k, 1, &tm, &g, err, sizeof err) !=
                CM_OK) {
                fprintf(stderr, "plan: error: %s\n", err);
                status = 1;
                hard = true;
                goto end;
            }
            calib_row r = {.op = "gemm", .dtype = "bf16", .name = s->name, .m = s->m, .n = s->n,
                           .k = s->k, .bytes = 2.0 * (s->m * s->k + s->n * s->k + s->m * s->n),
                           .group_size = 1, .span = "intra", .time_s = g.time_s,
                           .tflops = g.flops_per_s / 1e12, .check_error = worst,
                           .spread = g.spread};
            calib_csv_row(out, &r);
            fprintf(human, "%-16s %6ld %6ld %6ld %10.4f %8.1f\n", s->name, s->m, s->n, s->k,
                    g.time_s * 1e3, g.flops_per_s / 1e12);
        }
    }
    if (nshapes && root && (mask & CALIB_GEMM_FP8)) {
        if (!bk_has_fp8(ctx)) {
            fprintf(human, "gemm_fp8: skipped, %s has no FP8 tensor cores (sm_89 or later)\n",
                    bk_device_name(ctx));
        } else if (calibrate_fp8(ctx, shapes, nshapes, &tm, out, human, progress, &status, err,
                                 sizeof err) != CM_OK) {
            fprintf(stderr, "plan: error: %s\n", err);
            status = 1;
            hard = true;
            goto end;
        }
    }
    if (nshapes && root && (mask & CALIB_GEMM_FP8_BLOCK)) {
        if (!bk_has_fp8_block(ctx)) {
            fprintf(human, "gemm_fp8_blockwise: skipped, %s is not Hopper (sm_90: cuBLASLt's "
                           "1x128/128x128 block scaling)\n",
                    bk_device_name(ctx));
        } else if (calibrate_fp8_block(ctx, shapes, nshapes, &tm, out, human, progress, &status,
                                       err, sizeof err) != CM_OK) {
            fprintf(stderr, "plan: error: %s\n", err);
            status = 1;
            hard = true;
            goto end;
        }
    }
    int ng = bk_ngpus(ctx);
    if ((mask & ~CALIB_GEMMS) && ng < 2)
        fprintf(human, "collectives: skipped, %d GPU here (they need 2 or more)\n", ng);
    if ((mask & ~CALIB_GEMMS) && ng >= 2)
        fprintf(human, "\n%-15s %5s %12s %12s %12s %12s %6s\n", "collective", "ranks",
                "1KiB us", "max bytes", "time ms", "busbw GB/s", "check");
    for (int g = 2; g <= ng; g++)
        for (int op = 0; op < COLL_COUNT; op++) {
            if (!(mask & CALIB_COLL(op))) continue;
            double small_us = 0;
            bk_coll_result last = {0};
            unsigned long long wrong = 0;
            for (int si = 0; si < nsizes; si++) {
                fprintf(progress, "calibrate: %s n=%d %zu bytes\n", collective_get(op)->name, g,
                        sizes[si]);
                bk_coll_result cr;
                if (bk_coll_time(ctx, op, g, sizes[si], &tm, &cr, err, sizeof err) != CM_OK) {
                    fprintf(stderr, "plan: error: %s\n", err);
                    status = 1;
                    hard = true;
                    goto end;
                }
                calib_row r = {.op = collective_get(op)->name, .dtype = "bf16", .name = "",
                               .bytes = cr.bytes, .group_size = g, .span = "intra",
                               .time_s = cr.time_s, .algbw_bytes_per_s = cr.algbw_bytes_per_s,
                               .busbw_bytes_per_s = cr.busbw_bytes_per_s,
                               .check_error = (double)cr.wrong, .spread = cr.spread};
                calib_csv_row(out, &r);
                if (si == 0) small_us = cr.time_s * 1e6;
                last = cr;
                wrong += cr.wrong;
                if (cr.wrong) status = 1;
            }
            fprintf(human, "%-15s %5d %12.1f %12.0f %12.4f %12.1f %6s\n", collective_get(op)->name,
                    g, small_us, last.bytes, last.time_s * 1e3, last.busbw_bytes_per_s / 1e9,
                    wrong ? "WRONG" : "ok");
        }
end:
    if (hard) {
        whole_file_abort(&wf);
    } else if (whole_file_commit(&wf, err, sizeof err) != CM_OK) {
        fprintf(stderr, "plan: error: %s\n", err);
        status = 1;
    }
    bk_close(ctx);
    if (hard) bk_world_abort(status);
    bk_world_finalize();
    if (!root) return status;
    if (status) fprintf(stderr, "plan: error: calibration failed or found wrong results (see above)\n");
    else if (strcmp(outpath, "-")) fprintf(stderr, "calibrate: wrote %s\n", outpath);
    return status;
#endif
}
