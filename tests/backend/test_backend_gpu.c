/*
 * test_backend_gpu.c — the backend on real GPUs: cuBLAS GEMMs of every form match a naive fp32
 * reference (with a poisoned output, so every element must be written); NCCL collectives give
 * the exact expected values for every group size from 2 to the local GPU count; times are
 * positive and stable; plan steps run (FSDP and Megatron TP+DP paths) and a plan that cannot fit
 * fails with an out-of-memory report naming it; pipelines (1F1B, TP x PP, interleaved) run with
 * every received activation and gradient equal to what was sent, a measured bubble and a trace;
 * an MoE model runs with expert parallelism over every GPU.
 *
 * Plain C with no test framework, so the binary runs on GPU machines that lack cmocka. Exits 77
 * (skipped) where no GPU is found.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static int failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
        }                                                                                      \
    } while (0)

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void measure_case(bk_ctx *c, const char *model, layout l, int gbs, int seq, bool expect_oom)
{
    char err[CM_ERRLEN];
    model_spec m;
    system_spec s;
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK ||
        system_load("h200-x4", data_dir(), &s, err, sizeof err) != CM_OK) {
        CHECK(0, "load: %s", err);
        return;
    }
    training_spec t = training_default();
    t.global_batch = gbs;
    t.seq_len = seq;
    static work_plan w;
    if (work_plan_build(&m, &s, &t, &l, &w, err, sizeof err) != CM_OK) {
        CHECK(0, "work_plan_build: %s", err);
        return;
    }
    static bk_measure_result r;
    bk_timing tm = bk_timing_default();
    tm.repeats = 3;
    cm_status st = bk_measure(c, &w, model, 2, &tm, &r, err, sizeof err);
    if (expect_oom) {
        CHECK(st == CM_ENOMEM, "%s: want out of memory, got %d (%s)", model, st, err);
        CHECK(strstr(err, "does not fit") && strstr(err, model) && strstr(err, "short"),
              "OOM message: %s", err);
        printf("ok   OOM report: %s\n", err);
        return;
    }
    CHECK(st == CM_OK, "bk_measure %s: %s", model, err);
    if (st != CM_OK) return;
    CHECK(r.step_s > 0 && r.compute_s > 0, "%s: step %g compute %g", model, r.step_s, r.compute_s);
    CHECK(r.step_s >= 0.5 * r.compute_s, "%s: step %g below compute %g", model, r.step_s,
          r.compute_s);
    CHECK(r.peak_used_bytes > r.pool_bytes, "%s: peak %g <= pools %g", model, r.peak_used_bytes,
          r.pool_bytes);
    printf("ok   measure %s tp%d dp%d %s: step %.4f s (pred %.4f), compute %.4f s (pred %.4f), "
           "peak %.2f GiB (pred %.2f)\n",
           model, l.tp, r.dp_measured, layout_sharding_name(l.sharding), r.step_s,
           w.est.time.step_s, r.compute_s, w.est.time.compute_s, r.peak_used_bytes / 1073741824.0,
           w.est.memory.total_bytes / 1073741824.0);
}


/* A pipeline (or MoE) step: the schedule runs, the transfers arrive intact, the bubble is
 * measured, and the instrumented step's trace is valid. */
static void pipeline_case(bk_ctx *c, const char *model, layout l, int gbs, int seq)
{
    char err[CM_ERRLEN];
    model_spec m;
    system_spec s;
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK ||
        system_load("h200-x4", data_dir(), &s, err, sizeof err) != CM_OK) {
        CHECK(0, "load: %s", err);
        return;
    }
    training_spec t = training_default();
    t.global_batch = gbs;
    t.seq_len = seq;
    static work_plan w;
    if (work_plan_build(&m, &s, &t, &l, &w, err, sizeof err) != CM_OK) {
        CHECK(0, "work_plan_build: %s", err);
        return;
    }
    static bk_measure_result r;
    bk_timing tm = bk_timing_default();
    tm.repeats = 3;
    trace_list tr;
    trace_init(&tr, l.pp);
    cm_status st = bk_measure_traced(c, &w, model, 2, &tm, &tr, &r, err, sizeof err);
    CHECK(st == CM_OK, "bk_measure %s pp%d vpp%d tp%d ep%d: %s", model, l.pp, l.vpp, l.tp, l.ep,
          err);
    if (st != CM_OK) {
        trace_free(&tr);
        return;
    }
    CHECK(r.stages_run == l.pp, "%s: %d stages ran of %d", model, r.stages_run, l.pp);
    CHECK(r.step_s > 0 && r.compute_s > 0, "%s: step %g compute %g", model, r.step_s, r.compute_s);
    if (l.pp > 1) {
        CHECK(r.pp_checked > 0 && r.pp_wrong_bytes == 0,
              "%s pp%d: %d transfers checked, %llu bytes differ", model, l.pp, r.pp_checked,
              r.pp_wrong_bytes);
        CHECK(r.bubble_s > 0, "%s pp%d: bubble %g", model, l.pp, r.bubble_s);
        CHECK(r.p2p_s > 0, "%s pp%d: p2p %g", model, l.pp, r.p2p_s);
        for (int k = 0; k < l.pp; k++)
            CHECK(r.stage_busy_s[k] > 0, "%s: stage %d busy %g", model, k, r.stage_busy_s[k]);
    }
    if (l.ep > 1) CHECK(r.component_s[WC_EP] > 0, "%s: ep all-to-all %g", model, r.component_s[WC_EP]);
    /* the trace: chunks of every stage, items nested, valid JSON */
    int ops = 0, sends = 0, items = 0;
    for (int i = 0; i < tr.n; i++) {
        const trace_span *sp = &tr.span[i];
        CHECK(sp->end_s >= sp->start_s && sp->start_s >= 0, "span %s %g..%g", sp->name,
              sp->start_s, sp->end_s);
        if (sp->tid == TRACE_TID_COMPUTE && (sp->name[0] == 'F' || sp->name[0] == 'B') &&
            sp->name[1] >= '0' && sp->name[1] <= '9')
            ops++;
        else if (sp->tid == TRACE_TID_SEND_FWD || sp->tid == TRACE_TID_SEND_BWD)
            sends++;
        else if (sp->tid == TRACE_TID_COMPUTE)
            items++;
    }
    int m_ = w.microbatches * l.vpp;
    CHECK(ops == 2 * m_ * l.pp, "%s: %d chunk spans, want %d", model, ops, 2 * m_ * l.pp);
    if (l.pp > 1) CHECK(sends > 0, "%s: no send spans", model);
    CHECK(items > ops, "%s: %d item spans", model, items);
    json_t *j = trace_json(&tr);
    CHECK(j && json_array_size(json_object_get(j, "traceEvents")) > (size_t)tr.n,
          "%s: trace json", model);
    json_decref(j);
    int spans = tr.n;
    trace_free(&tr);
    printf("ok   pipeline %s tp%d pp%d vpp%d dp%d ep%d, %d micro-batches: step %.4f s (pred %.4f), "
           "bubble %.4f s (pred %.4f), blocked on sends %.4f s (pred pp %.4f), one transfer "
           "%.3f ms (pred %.3f), %d transfers exact, ep raw %.4f s (pred %.4f), %d trace spans\n",
           model, l.tp, l.pp, l.vpp, r.dp_measured, l.ep, w.microbatches, r.step_s,
           w.est.time.step_s, r.bubble_s, w.est.time.bubble_s, r.pp_exposed_s, w.est.time.pp_s,
           r.p2p_s * 1e3, w.p2p_pred_s * 1e3, r.pp_checked, r.component_s[WC_EP],
           w.pred_component_s[WC_EP], spans);
}

int main(void)
{
    int n = bk_device_count();
    if (n == 0) {
        printf("no CUDA GPU: skipped\n");
        return 77;
    }
    char err[CM_ERRLEN];
    bk_ctx *c;
    if (bk_open(&c, 0, err, sizeof err) != CM_OK) {
        printf("FAIL bk_open: %s\n", err);
        return 1;
    }
    printf("device: %s\n", bk_device_name(c));
    /* GEMMs of each form against the reference, square-ish and odd shapes, batched. */
    long shapes[3][4] = {{320, 192, 256, 2}, {1000, 520, 712, 1}, {64, 2048, 128, 3}};
    for (int f = 0; f < 3; f++)
        for (int s = 0; s < 3; s++) {
            double rel = 1;
            cm_status st = bk_gemm_check(c, 0, (work_gemm_form)f, shapes[s][0], shapes[s][1],
                                         shapes[s][2], (int)shapes[s][3], &rel, err, sizeof err);
            CHECK(st == CM_OK, "gemm check: %s", err);
            CHECK(rel < 1e-2, "gemm form %d %ldx%ldx%ld: rel err %g", f, shapes[s][0],
                  shapes[s][1], shapes[s][2], rel);
            printf("ok   gemm form %d %ldx%ldx%ld batch %ld rel err %.2e\n", f, shapes[s][0],
                   shapes[s][1], shapes[s][2], shapes[s][3], rel);
        }
    /* Times positive and stable: the same GEMM timed twice. */
    bk_timing tm = bk_timing_default();
    bk_gemm_result a, b;
    CHECK(bk_gemm_time(c, 0, GEMM_FWD, 4096, 4096, 4096, 1, &tm, &a, err, sizeof err) == CM_OK,
          "%s", err);
    CHECK(bk_gemm_time(c, 0, GEMM_FWD, 4096, 4096, 4096, 1, &tm, &b, err, sizeof err) == CM_OK,
          "%s", err);
    CHECK(a.time_s > 0 && b.time_s > 0 && fabs(a.time_s - b.time_s) < 0.2 * a.time_s,
          "gemm 4096^3 unstable: %g vs %g s", a.time_s, b.time_s);
    printf("ok   gemm 4096^3 %.1f / %.1f TFLOP/s\n", a.flops_per_s / 1e12, b.flops_per_s / 1e12);
    /* Collectives: exact results for every op and group size. */
    size_t sizes[3] = {1024 + 6, 1 << 20, 64u << 20};
    for (int g = 2; g <= bk_ngpus(c); g++)
        for (int op = 0; op < COLL_COUNT; op++)
            for (int i = 0; i < 3; i++) {
                bk_coll_result r;
                cm_status st = bk_coll_time(c, (collective_op)op, g, sizes[i], &tm, &r, err,
                                            sizeof err);
                CHECK(st == CM_OK, "%s", err);
                CHECK(r.wrong == 0, "%s n=%d %zu bytes: %llu wrong elements",
                      collective_get(op)->name, g, sizes[i], r.wrong);
                CHECK(r.time_s > 0 && r.busbw_bytes_per_s > 0, "%s: time %g",
                      collective_get(op)->name, r.time_s);
                if (i == 2)
                    printf("ok   %-14s n=%d 64 MiB: %.1f us, busbw %.1f GB/s, exact\n",
                           collective_get(op)->name, g, r.time_s * 1e6, r.busbw_bytes_per_s / 1e9);
            }
    /* Plan steps: FSDP2 over every GPU; Megatron TP2 + distributed optimizer; DDP; a plan that
     * cannot fit. A 1B model at short sequence keeps this quick. */
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    l.dp = bk_ngpus(c);
    measure_case(c, "1b", l, 2 * l.dp, 1024, false);
    if (bk_ngpus(c) >= 2) {
        layout t = layout_default(FRAMEWORK_MEGATRON);
        t.sharding = SHARDING_DISTOPT;
        t.tp = 2;
        t.sp = true;
        t.dp = bk_ngpus(c) / 2;
        measure_case(c, "1b", t, 2 * t.dp, 1024, false);
        t.sharding = SHARDING_DDP;
        t.sp = false;
        measure_case(c, "1b", t, t.dp, 1024, false);
    }
    /* Pipelines: 1F1B over two stages (x DP), TP 2 x PP 2, interleaved; PP over 4 stages. */
    if (bk_ngpus(c) >= 2) {
        layout p = layout_default(FRAMEWORK_MEGATRON);
        p.sharding = SHARDING_DISTOPT;
        p.pp = 2;
        p.dp = bk_ngpus(c) / 2;
        pipeline_case(c, "1b", p, 4 * p.dp, 1024);
        p.vpp = 2;
        pipeline_case(c, "1b", p, 4 * p.dp, 1024);
        if (bk_ngpus(c) >= 4) {
            layout q = layout_default(FRAMEWORK_MEGATRON);
            q.sharding = SHARDING_DISTOPT;
            q.tp = 2;
            q.sp = true;
            q.pp = 2;
            pipeline_case(c, "1b", q, 4, 1024);
            q.tp = 1;
            q.sp = false;
            q.pp = 4;
            q.sharding = SHARDING_DDP;
            pipeline_case(c, "1b", q, 8, 1024);
            /* MoE: Mixtral's shape with 8 layers at a short sequence, EP over every GPU */
            layout e = layout_default(FRAMEWORK_MEGATRON);
            e.sharding = SHARDING_DISTOPT;
            e.dp = bk_ngpus(c);
            e.ep = 4;
            char path[512];
            snprintf(path, sizeof path, "%s/../tests/models/mixtral-8x7b-8l.json", data_dir());
            pipeline_case(c, path, e, 2 * e.dp, 1024);
        }
    }
    layout huge = layout_default(FRAMEWORK_FSDP2);
    huge.sharding = SHARDING_FSDP;
    huge.dp = bk_ngpus(c);
    measure_case(c, "405b", huge, huge.dp, 4096, true);
    bk_close(c);
    printf("%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
