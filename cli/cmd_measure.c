/*
 * cmd_measure.c — `plan measure`: run one plan's training step on the local GPUs (backend/
 * bk_measure.c) and set the measured step time, per-component times and peak memory beside
 * estimate_layout()'s prediction, with the error of each.
 *
 * Takes `plan estimate`'s flags (cli_parse) plus its own: --steps N, --local-gpus N, --dry-run
 * (print the step's work, work.h, without a GPU), --host-pace on|off (issue the step at the
 * host's pace the cost model prices, bk_step.c; off: the GPU alone). A plan larger than the
 * local GPUs is measured as the slice that fits (one stage, the tp*cp group, as many dp ranks
 * as fit) and the report says which parts stay predicted.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "units.h"
#include "commands.h"
#include "estimate.h"
#include "output.h"
#include "precision.h"
#include "work.h"
#include "bk_pools.h"
#ifdef PLAN_HAVE_BACKEND
#include "backend.h"
#endif


static void usage(void)
{
    printf("usage: plan measure --model M [--gpus N] [layout flags of plan estimate] [options]\n"
           "  --steps N         timed training steps after one warm-up (default 3)\n"
           "  --local-gpus N    use the first N local GPUs (default all); under mpirun/srun the\n"
           "                    GPUs each process drives (default: the node's GPUs / its processes)\n"
           "  --dry-run         print the step's work (GEMMs, collectives, ...) and stop\n"
           "  --host-pace on|off  issue each item after the host time the cost model gives its\n"
           "                    launches (eager PyTorch: Python, dispatcher, autograd, FSDP2\n"
           "                    hooks; the optimizer's host work) as a real step must (default on\n"
           "                    where the model prices host work); off: the GPU alone\n"
           "  --refine          plan refine: measure the best k plans and fit the step terms\n"
           "  --format human|json\n"
           "Layout flags: see plan estimate --help. The step runs gbs/(dp*mbs) micro-batches:\n"
           "pass --gbs to choose how many (e.g. --gbs 4 with dp 4 and mbs 1: one).\n"
           "Several processes: mpirun -np N plan measure ... (or srun); process 0 prints.\n"
           "Exit status: 0 measured, 2 bad input, 3 no GPU, 4 out of memory, 1 other errors.\n");
}

/* Pull measure's own options out of argv (the rest goes to cli_parse). */
static int take_own(int *argc, char **argv, int *steps, int *local, bool *dry, bool *pace)
{
    int j = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        int *dst = NULL;
        const char *name = NULL;
        if (!strcmp(a, "--dry-run")) {
            *dry = true;
            continue;
        }
        if (!strncmp(a, "--host-pace", 11) && (a[11] == '\0' || a[11] == '=')) {
            const char *v = a[11] == '=' ? a + 12 : (i + 1 < *argc ? argv[++i] : "");
            if (strcmp(v, "on") && strcmp(v, "off")) {
                fprintf(stderr, "plan: error: --host-pace takes on or off, got '%s'\n", v);
                return CLI_EXIT_USAGE;
            }
            *pace = !strcmp(v, "on");
            continue;
        }
        if (!strncmp(a, "--steps", 7) && (a[7] == '\0' || a[7] == '=')) dst = steps, name = "steps";
        if (!strncmp(a, "--local-gpus", 12) && (a[12] == '\0' || a[12] == '='))
            dst = local, name = "local-gpus";
        if (dst) {
            const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : (i + 1 < *argc ? argv[++i] : NULL);
            char *end;
            long x = v ? strtol(v, &end, 10) : 0;
            if (!v || *v == '\0' || *end || x < 1 || x > 1024) {
                fprintf(stderr, "plan: error: --%s needs an integer between 1 and 1024, got '%s'\n",
                        name, v ? v : "");
                return CLI_EXIT_USAGE;
            }
            *dst = (int)x;
            continue;
        }
        argv[j++] = argv[i];
    }
    *argc = j;
    return 0;
}

/* The arena --dry-run would allocate on each GPU of the whole layout (backend/bk_pools.h),
 * beside the estimate's phases. */
static void arena_dry(const work_plan *w, FILE *f)
{
    bk_pool_shape sh;
    bk_pools_whole_shape(w, &sh);
    bk_pools p;
    bk_pools_size(w, &sh, &p);
    const double G = UNITS_GIB_BYTES;
    const memory_breakdown *mb = &w->est.memory;
    fprintf(f,
            "memory arena per GPU (bk_pools.c; elementwise scratch left out): %.2f GiB = "
            "persistent %.2f (weights + optimizer states) + phase region %.2f (the estimate's "
            "phases beyond its persistent part: training peak %.2f, end of backward %.2f, "
            "optimizer step %.2f GiB; the step touches %.2f GiB of it: pipeline %.2f, "
            "activation regions x %.2f y %.2f z %.2f ring %.2f, communication buffers %.2f, "
            "gradients %.2f); the estimate's peak %.2f GiB = %.2f + its framework %.2f GiB "
            "(the backend measures its own)\n",
            p.total_bytes / G, (double)p.persist_bytes / G, (double)p.phase_bytes / G,
            p.phase_train_bytes / G, p.phase_bwd_end_bytes / G, p.phase_opt_bytes / G,
            (double)p.touched_bytes / G, (double)p.pp_bytes / G, (double)p.x_sz / G,
            (double)p.y_sz / G, (double)p.z_sz / G, (double)p.cp_sz / G,
            (double)p.comm_bytes / G, (double)p.g_bytes / G, mb->total_bytes / G,
            (mb->total_bytes - mb->framework_bytes) / G, mb->framework_bytes / G);
}

#ifdef PLAN_HAVE_BACKEND

/* The measured peak's parts: the backend's own context, libraries and communicators, and the
 * arena's persistent part and phase region beside the estimate's phases. */
static void arena_text(const memory_breakdown *mb, const bk_measure_result *r, FILE *f)
{
    const double G = UNITS_GIB_BYTES;
    fprintf(f,
            "  (measured memory: %.2f GiB context+cuBLAS+NCCL (the estimate's framework %.2f); "
            "arena %.2f GiB = persistent %.2f + phase region %.2f, of which %.2f GiB beyond "
            "the estimate's tensors at its peak)\n"
            "  (phase region: the estimate's training peak %.2f, end of backward %.2f, optimizer "
            "step %.2f GiB beyond weights and optimizer states; the step touches %.2f GiB at "
            "once)\n",
            r->baseline_used_bytes / G, mb->framework_bytes / G, r->pool_bytes / G,
            r->persist_bytes / G, r->phase_bytes / G, r->extra_bytes / G,
            r->phase_train_bytes / G, r->phase_bwd_end_bytes / G, r->phase_opt_bytes / G,
            r->touched_bytes / G);
}

static void row(FILE *f, const char *name, double pred, double meas, const char *unit, double div)
{
    if (pred > 0)
        fprintf(f, "  %-26s %11.4f %11.4f %+9.1f%%\n", name, pred / div, meas / div,
                100 * units_rel_error(pred, meas));
    else
        fprintf(f, "  %-26s %11.4f %11.4f %10s\n", name, pred / div, meas / div, "");
    (void)unit;
}

static json_t *items_json(const work_list *l, const double *meas, double reps, const char *phase)
{
    json_t *a = json_array();
    for (int i = 0; i < l->n; i++) {
        const work_item *it = &l->item[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f}", "phase", phase, "name", it->name,
                              "component", work_component_name(it->component), "predicted_s",
                              it->pred_s, "measured_s", meas[i], "per_step", reps);
        if (it->kind == WORK_GEMM) {
            json_object_set_new(o, "m", json_real(it->m));
            json_object_set_new(o, "n", json_real(it->n));
            json_object_set_new(o, "k", json_real(it->k));
            json_object_set_new(o, "batch", json_integer(it->batch));
            json_object_set_new(o, "tflops", json_real(it->flops / meas[i] / 1e12));
        } else {
            json_object_set_new(o, "bytes", json_real(it->bytes));
        }
        if (it->kind == WORK_STREAM)
            json_object_set_new(o, "pattern", json_string(ew_pattern_name(it->access.pattern)));
        if (it->kind == WORK_COLL)
            json_object_set_new(o, "collective", json_string(collective_get(it->op)->name));
        json_array_append_new(a, o);
    }
    return a;
}

static void items_human(FILE *f, const work_list *l, const double *meas, const char *phase)
{
    for (int i = 0; i < l->n; i++) {
        const work_item *it = &l->item[i];
        fprintf(f, "  %-4s %-22s %10.3f %10.3f %+8.1f%%", phase, it->name, it->pred_s * 1e3,
                meas[i] * 1e3, 100 * units_rel_error(it->pred_s, meas[i]));
        if (it->kind == WORK_GEMM) fprintf(f, "  %7.1f TFLOP/s", it->flops / meas[i] / 1e12);
        if (it->kind == WORK_STREAM)
            fprintf(f, "  %7.0f GB/s %s", it->bytes / meas[i] / 1e9,
                    ew_pattern_name(it->access.pattern));
        fputc('\n', f);
    }
}
#endif

int cmd_measure(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* plan measure --refine: another name of plan refine */
        if (!strcmp(argv[i], "--refine")) return cmd_refine(argc, argv);
    int steps = 3, local = 0;
    bool dry = false, help = false, pace = true;
    int rc = take_own(&argc, argv, &steps, &local, &dry, &pace);
    if (rc) return rc;
    cli_options o;
    rc = cli_parse(argc, argv, &o, &help);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    /* The same defaults as plan estimate (cmd_estimate.c). */
    if ((rc = cli_one_layout_precision(&o))) return rc;
    layout l = o.layout;
    cli_layout_defaults(&o, &l);
    long mp = (long)l.tp * l.pp * l.cp;
    if (!o.dp_given) {
        if (o.gpus && o.gpus % mp) {
            char msg[200];
            snprintf(msg, sizeof msg, "--gpus %d is not divisible by tp*pp*cp = %ld: change the sizes",
                     o.gpus, mp);
            return cli_error(msg);
        }
        l.dp = o.gpus ? (int)(o.gpus / mp) : 1;
    }
    model_spec m;
    system_spec sys;
    if ((rc = cli_load_specs(&o, &m, &sys))) return rc;
    if ((rc = cli_exact_model_check(&o, &m))) return rc; /* as plan estimate */
    char err[CM_ERRLEN];
    if (layout_check(&m, &sys, &o.training, &l, o.gpus, err, sizeof err) != CM_OK)
        return cli_error(err);
    /* The backend runs per-tensor scaled FP8 GEMMs (cuBLASLt, bk_gemm.c): delayed and
     * tensorwise scaling pass one scale per operand; blockwise scales and the Blackwell formats
     * are not built. */
    if (precision_is_low(&l) && !dry &&
        (l.precision != PRECISION_FP8 || precision_fp8_recipe(&l) == FP8_RECIPE_BLOCKWISE ||
         precision_fp8_recipe(&l) == FP8_RECIPE_ROWWISE))
        return cli_error("the backend runs FP8 GEMMs with per-tensor scales only (fp8 with "
                         "--fp8-recipe delayed or tensorwise); blockwise, rowwise, mxfp8 and "
                         "nvfp4 GEMMs are not built: measure one of those, or use --dry-run to "
                         "see the low-precision work list");
    static work_plan w;
    if (work_plan_build(&m, &sys, &o.training, &l, &w, err, sizeof err) != CM_OK)
        return cli_error(err);
    w.host_pace = w.host_priced && pace;
    char name[256];
    output_layout_line(&w.est, name, sizeof name);
    if (dry) {
        if (o.format == FORMAT_JSON) {
            json_t *j = json_object();
            json_object_set_new(j, "plan", output_estimate_json(&w.est, &m, &sys));
            json_t *pc = json_object();
            for (int c = 0; c < WC_COUNT; c++)
                json_object_set_new(pc, work_component_name(c), json_real(w.pred_component_s[c]));
            json_object_set_new(j, "predicted_components_s", pc);
            json_object_set_new(j, "layers", json_integer(w.layers));
            json_object_set_new(j, "microbatches", json_integer(w.microbatches));
            json_object_set_new(j, "items_per_layer",
                                json_integer(w.layer_fwd.n + w.layer_bwd.n));
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
            fputc('\n', stdout);
            json_decref(j);
        } else {
            printf("%s: %s\n", m.display, name);
            work_plan_print(&w, stdout);
            arena_dry(&w, stdout);
        }
        return 0;
    }
#ifndef PLAN_HAVE_BACKEND
    (void)steps;
    (void)local;
    return cli_error("this plan was built without the CUDA backend (nvcc, cuBLAS and NCCL were "
                     "not found at meson setup): see backend/README.md; --dry-run works here");
#else
    if (bk_device_count() == 0) {
        fprintf(stderr, "plan: error: no CUDA GPU found: plan measure runs the plan on local "
                        "GPUs (--dry-run prints the work without one)\n");
        return 3;
    }
    bk_ctx *ctx;
    if (bk_open(&ctx, local, err, sizeof err) != CM_OK) {
        fprintf(stderr, "plan: error: %s\n", err);
        bk_world_abort(1); /* under MPI the other processes would wait for this one */
    }
    /* Several processes (mpirun / srun): each runs its GPUs' share of the same step; process 0
     * prints the report. */
    bool root = bk_is_root(ctx);
    int procs = bk_processes(ctx), proc = bk_process(ctx);
    if (o.trace && procs > 1) {
        if (root)
            fprintf(stderr, "plan: error: --trace needs the whole step in one process: run plan "
                            "measure without mpirun/srun on one node\n");
        bk_close(ctx);
        bk_world_finalize();
        return CLI_EXIT_USAGE;
    }
    if (root)
        fprintf(stderr, "measure: %s on %s (NCCL_NVLS_ENABLE=%s)\n", name, bk_device_name(ctx),
                getenv("NCCL_NVLS_ENABLE"));
    static bk_measure_result r;
    bk_timing tm = bk_timing_default();
    tm.repeats = 5;
    tm.warmup = 2;
    static trace_list tr; /* --trace: the measured step, in plan simulate's trace format */
    trace_init(&tr, l.pp);
    cm_status st = bk_measure_traced(ctx, &w, name, steps, &tm, o.trace ? &tr : NULL, &r, err,
                                     sizeof err);
    if (st == CM_OK && o.trace) st = trace_write(&tr, o.trace, err, sizeof err);
    trace_free(&tr);
    char dev[256];
    snprintf(dev, sizeof dev, "%s", bk_device_name(ctx));
    bk_close(ctx);
    if (st != CM_OK) {
        if (procs > 1) fprintf(stderr, "plan: error: process %d of %d: %s\n", proc, procs, err);
        else fprintf(stderr, "plan: error: %s\n", err);
        int code = st == CM_ENOMEM ? 4 : (st == CM_EINVAL ? CLI_EXIT_USAGE : 1);
        /* Out of memory and bad plans are agreed by every process; anything else may leave
         * the others waiting inside NCCL. */
        if (st == CM_ENOMEM || st == CM_EINVAL) bk_world_finalize();
        else bk_world_abort(code);
        return code;
    }
    bk_world_finalize();
    if (!root) return 0;
    const time_breakdown *pt = &w.est.time;
    double pred_compute = w.pred_component_s[WC_GEMM] + w.pred_component_s[WC_ATTENTION] +
                          w.pred_component_s[WC_ELEMENTWISE];
    /* What the slice leaves predicted. */
    char slice[512];
    if (r.whole)
        snprintf(slice, sizeof slice, "the whole layout ran (%d GPUs)", r.gpus_used);
    else
        snprintf(slice, sizeof slice,
                 "a slice ran: %d of %d GPUs (%s %d of %d, tp %d x cp %d, %d of %d "
                 "data-parallel ranks; DP collectives at the planned message sizes over %d "
                 "ranks); still predicted: %s%s",
                 r.gpus_used, w.est.gpus, r.stages_run > 1 ? "pipeline stages:" : "pipeline stage",
                 r.stages_run > 1 ? r.stages_run : 0, l.pp, l.tp, l.cp, r.dp_measured, l.dp,
                 r.dp_measured * l.cp,
                 r.stages_run < l.pp ? "pipeline bubble and PP send/recv, " : "",
                 "bandwidth of the full-size DP groups");
    /* The step the estimate predicts for what ran: without the pipeline terms when one stage
     * ran alone. */
    double pred_step = r.stages_run == l.pp ? pt->step_s : pt->step_s - pt->bubble_s - pt->pp_s;
    double pred_mem = w.est.memory.total_bytes;
    if (o.format == FORMAT_JSON) {
        json_t *j = json_object();
        json_object_set_new(j, "plan", output_estimate_json(&w.est, &m, &sys));
        json_object_set_new(j, "device", json_string(dev));
        json_object_set_new(j, "whole", json_boolean(r.whole));
        json_object_set_new(j, "measured_part", json_string(slice));
        json_object_set_new(j, "gpus_used", json_integer(r.gpus_used));
        json_object_set_new(j, "host_paced", json_boolean(r.host_paced));
        json_object_set_new(j, "host_pace", json_string(r.host_pace_note));
        json_t *pr = json_pack("{s:f, s:f, s:f, s:f, s:f}", "step_s", pred_step, "compute_s",
                               pt->compute_s, "comm_exposed_s", pt->comm_exposed_s - pt->pp_s,
                               "optimizer_s", pt->optimizer_s, "memory_bytes", pred_mem);
        json_t *me = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "step_s", r.step_s,
                               "step_spread", r.step_spread, "compute_s", r.compute_s,
                               "comm_exposed_s", r.exposed_comm_s, "optimizer_s", r.optimizer_s,
                               "peak_memory_bytes", r.peak_used_bytes, "baseline_memory_bytes",
                               r.baseline_used_bytes, "pool_bytes", r.pool_bytes, "extra_bytes",
                               r.extra_bytes);
        json_object_set_new(me, "step_unpaced_s", json_real(r.step_unpaced_s));
        /* the arena's parts (backend/bk_pools.h) and the estimate's phases it is sized by */
        json_object_set_new(me, "persistent_bytes", json_real(r.persist_bytes));
        json_object_set_new(me, "phase_region_bytes", json_real(r.phase_bytes));
        json_object_set_new(me, "touched_bytes", json_real(r.touched_bytes));
        json_object_set_new(pr, "framework_bytes", json_real(w.est.memory.framework_bytes));
        json_object_set_new(pr, "phase_train_bytes", json_real(r.phase_train_bytes));
        json_object_set_new(pr, "phase_backward_end_bytes", json_real(r.phase_bwd_end_bytes));
        json_object_set_new(pr, "phase_optimizer_bytes", json_real(r.phase_opt_bytes));
        json_object_set_new(me, "step_unpaced_spread", json_real(r.step_unpaced_spread));
        json_t *pc = json_object(), *mc = json_object(), *er = json_object();
        for (int c = 0; c < WC_COUNT; c++) {
            json_object_set_new(pc, work_component_name(c), json_real(w.pred_component_s[c]));
            json_object_set_new(mc, work_component_name(c), json_real(r.component_s[c]));
        }
        json_object_set_new(pr, "components_s", pc);
        json_object_set_new(me, "components_s", mc);
        json_object_set_new(pr, "copies_compute_s", json_real(w.pred_copies_compute_s));
        json_object_set_new(me, "copies_compute_s", json_real(r.copies_compute_s));
        json_object_set_new(er, "step", json_real(units_rel_error(pred_step, r.step_s)));
        json_object_set_new(er, "compute", json_real(units_rel_error(pt->compute_s, r.compute_s)));
        json_object_set_new(er, "optimizer", json_real(units_rel_error(pt->optimizer_s, r.optimizer_s)));
        json_object_set_new(er, "memory", json_real(units_rel_error(pred_mem, r.peak_used_bytes)));
        json_object_set_new(j, "predicted", pr);
        json_object_set_new(j, "measured", me);
        json_object_set_new(j, "error", er);
        json_t *items = json_array();
        /* launches per step of each list, as bk_time_items counts them into the components:
         * the dense list runs on the stage's dense layers only (none in an all-MoE model, whose
         * layers all run the MoE list), the head's only where the stage has the head */
        double micro = w.microbatches, dense = w.layers - w.moe_layers;
        double head = w.has_head ? micro : 0;
        json_object_set_new(j, "pipeline", bk_measure_extra_json(&w, &r));
        json_t *parts[6] = {
            items_json(&w.layer_fwd, r.layer_fwd_s, micro * dense, "fwd"),
            items_json(&w.layer_bwd, r.layer_bwd_s, micro * dense, "bwd"),
            items_json(&w.head_fwd, r.head_fwd_s, head, "head_fwd"),
            items_json(&w.head_bwd, r.head_bwd_s, head, "head_bwd"),
            items_json(&w.moe_fwd, r.moe_fwd_s, micro * w.moe_layers, "moe_fwd"),
            items_json(&w.moe_bwd, r.moe_bwd_s, micro * w.moe_layers, "moe_bwd"),
        };
        for (int i = 0; i < 6; i++) {
            json_array_extend(items, parts[i]);
            json_decref(parts[i]);
        }
        json_object_set_new(j, "items", items);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(j);
        return 0;
    }
    FILE *f = stdout;
    printf("%s on %s\n%s\n%s\n", m.display, dev, name, slice);
    printf("host pacing: %s\n", r.host_pace_note);
    printf("\n  %-26s %11s %11s %10s\n", "per step (s)", "predicted", "measured", "error");
    row(f, "step time", pred_step, r.step_s, "s", 1);
    if (r.host_paced) row(f, "  the GPU alone (unpaced)", pred_step, r.step_unpaced_s, "s", 1);
    row(f, "compute", pt->compute_s, r.compute_s, "s", 1);
    row(f, "  gemm", w.pred_component_s[WC_GEMM], r.component_s[WC_GEMM], "s", 1);
    row(f, "  attention (*)", w.pred_component_s[WC_ATTENTION], r.component_s[WC_ATTENTION], "s",
        1);
    row(f, "  elementwise", w.pred_component_s[WC_ELEMENTWISE], r.component_s[WC_ELEMENTWISE],
        "s", 1);
    row(f, "exposed communication", pt->comm_exposed_s - pt->pp_s, r.exposed_comm_s, "s", 1);
    row(f, "  tp collectives (raw)", w.pred_component_s[WC_TP], r.component_s[WC_TP], "s", 1);
    row(f, "  cp exchange (raw)", w.pred_component_s[WC_CP], r.component_s[WC_CP], "s", 1);
    row(f, "  dp/fsdp traffic (raw)", w.pred_component_s[WC_DP], r.component_s[WC_DP], "s", 1);
    row(f, "optimizer", pt->optimizer_s, r.optimizer_s, "s", 1);
    static char extra[8192]; /* EP, PP, bubble rows (bk_measure_extra_text) */
    bk_measure_extra_text(&w, &r, extra, sizeof extra);
    fputs(extra, f);
    if (r.component_s[WC_FRAMEWORK] > 0 || w.pred_component_s[WC_FRAMEWORK] > 0) {
        row(f, "fsdp2 copies (raw)", w.pred_component_s[WC_FRAMEWORK],
            r.component_s[WC_FRAMEWORK], "s", 1);
        row(f, "  of which compute stream", w.pred_copies_compute_s, r.copies_compute_s, "s", 1);
    }
    printf("  %-26s %11s %11s\n", "", "", "");
    row(f, "peak memory per GPU (GiB)", pred_mem, r.peak_used_bytes, "GiB", UNITS_GIB_BYTES);
    arena_text(&w.est.memory, &r, f);
    printf("  step spread %.1f%% over %d steps; compute = isolated item times x counts "
           "(%.4f s predicted by the items) + FSDP2's compute-stream copies; exposed comm = "
           "step - compute - optimizer\n",
           100 * r.step_spread, steps, pred_compute);
    printf("  (*) attention runs as cuBLAS batched GEMMs (causal half), predicted as flash "
           "attention\n");
    printf("\n  %-4s %-22s %10s %10s %9s   per item, ms\n", "", "item", "predicted", "measured",
           "error");
    items_human(f, &w.layer_fwd, r.layer_fwd_s, "fwd");
    items_human(f, &w.layer_bwd, r.layer_bwd_s, "bwd");
    items_human(f, &w.head_fwd, r.head_fwd_s, "head");
    items_human(f, &w.head_bwd, r.head_bwd_s, "head");
    items_human(f, &w.moe_fwd, r.moe_fwd_s, "mfwd");
    items_human(f, &w.moe_bwd, r.moe_bwd_s, "mbwd");
    if (r.gather_s > 0 || r.reduce_s > 0)
        printf("  unit dp.gather %.3f ms, dp.reduce %.3f ms (isolated, per layer)\n",
               r.gather_s * 1e3, r.reduce_s * 1e3);
    return 0;
#endif
}
