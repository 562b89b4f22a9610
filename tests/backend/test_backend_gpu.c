/*
 * test_backend_gpu.c — the backend on real GPUs: cuBLAS GEMMs of every form match a naive fp32
 * reference (with a poisoned output, so every element must be written), and so do FP8 (e4m3,
 * per-tensor scaled) cuBLASLt GEMMs against the product of their dequantized operands, and plan
 * steps of --precision fp8 layouts run their Linears in FP8; NCCL collectives give
 * the exact expected values for every group size from 2 to the local GPU count; times are
 * positive and stable; plan steps run (FSDP and Megatron TP+DP paths) and a plan that cannot fit
 * fails with an out-of-memory report naming it; pipelines (1F1B, TP x PP, interleaved) run with
 * every received activation and gradient equal to what was sent, a measured bubble and a trace;
 * an MoE model runs with expert parallelism over every GPU; every eager kernel of a small Llama
 * layer's elementwise list, of the loss head's and of FSDP2's copies computes what a CPU
 * reference of the same op computes (broadcast and strided operands, casts, cat, reductions,
 * softmax, foreach / split / chunk_cat copies).
 *
 * Blockwise FP8 (DeepSeek-V3's 1x128 by 128x128 scales, and 1x128 by 1x128 as its wgrad runs)
 * on Hopper: every output element against an fp32 product applying each block's random
 * power-of-two scale, timed (stable, sampled rows checked, faster than bf16), and a Megatron plan
 * step with --fp8-recipe blockwise whose GEMMs run blockwise and beat bf16's.
 *
 * Plain C with no test framework, so the binary runs on GPU machines that lack cmocka. Exits 77
 * (skipped) where no GPU is found. PLAN_GPU_TEST_FP8_ONLY=1 runs only the GEMM checks and the
 * one-GPU plan steps of bf16, FP8 and blockwise FP8 (for runs with little device time).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cp_ring_torch.h"
#include "elementwise.h"
#include "fsdp_copies.h"
#include "precision.h"

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

/* Runs one plan step; returns its measured GEMM component (s), or -1. */
static double measure_case(bk_ctx *c, const char *model, layout l, int gbs, int seq,
                           bool expect_oom)
{
    char err[CM_ERRLEN];
    model_spec m;
    system_spec s;
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK ||
        system_load("h200-x4", data_dir(), &s, err, sizeof err) != CM_OK) {
        CHECK(0, "load: %s", err);
        return -1;
    }
    training_spec t = training_default();
    t.global_batch = gbs;
    t.seq_len = seq;
    static work_plan w;
    if (work_plan_build(&m, &s, &t, &l, &w, err, sizeof err) != CM_OK) {
        CHECK(0, "work_plan_build: %s", err);
        return -1;
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
        return -1;
    }
    CHECK(st == CM_OK, "bk_measure %s: %s", model, err);
    if (st != CM_OK) return -1;
    CHECK(r.step_s > 0 && r.compute_s > 0, "%s: step %g compute %g", model, r.step_s, r.compute_s);
    CHECK(r.step_s >= 0.5 * r.compute_s, "%s: step %g below compute %g", model, r.step_s,
          r.compute_s);
    CHECK(r.peak_used_bytes > r.pool_bytes, "%s: peak %g <= pools %g", model, r.peak_used_bytes,
          r.pool_bytes);
    printf("ok   measure %s tp%d dp%d %s %s: step %.4f s (pred %.4f), compute %.4f s (pred "
           "%.4f), gemm %.4f s (pred %.4f), peak %.2f GiB (pred %.2f)\n",
           model, l.tp, r.dp_measured, layout_sharding_name(l.sharding), precision_label(&l),
           r.step_s, w.est.time.step_s, r.compute_s, w.est.time.compute_s,
           r.component_s[WC_GEMM], w.pred_component_s[WC_GEMM],
           r.peak_used_bytes / 1073741824.0, w.est.memory.total_bytes / 1073741824.0);
    return r.component_s[WC_GEMM];
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

/* ---- eager kernels against a CPU reference ---------------------------------------------- */

static uint16_t f2bf(float f) /* round to nearest even, as __float2bfloat16 */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float get(const void *p, int es, long i)
{
    return es == 2 ? bf2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void put(void *p, int es, long i, float v)
{
    if (es == 2) ((uint16_t *)p)[i] = f2bf(v);
    else ((float *)p)[i] = v;
}

/* The kernels' semantics (kernels.h): binary a * b, unary a, output-only 0 (with the casts);
 * cat copies; reductions sum; log_softmax and its backward; the copies copy. */
static void ew_reference(const ew_access *a, const void *A, const void *B, void *O)
{
    int eo = a->esize[0], ea = a->esize[1], eb = a->esize[2];
    int nin = (ea ? 1 : 0) + (eb ? 1 : 0);
    long n0 = a->n[0], n1 = a->n[1], n2 = a->n[2];
    switch (a->pattern) {
    case EW_VECTORIZED:
    case EW_UNROLLED:
    case EW_OFFSETS:
        for (long i0 = 0; i0 < n0; i0++)
            for (long i1 = 0; i1 < n1; i1++)
                for (long i2 = 0; i2 < n2; i2++) {
                    long off[3];
                    for (int k = 0; k < 3; k++)
                        off[k] = i0 * a->stride[k][0] + i1 * a->stride[k][1] + i2 * a->stride[k][2];
                    float x = ea ? get(A, ea, off[1]) : 0.0f, y = eb ? get(B, eb, off[2]) : 0.0f;
                    put(O, eo, off[0], nin == 2 ? x * y : (nin == 1 ? x : 0.0f));
                }
        break;
    case EW_CAT:
        for (int k = 0; k < 2; k++)
            for (long i0 = 0; i0 < n0; i0++)
                for (long i1 = 0; i1 < n1; i1++)
                    for (long i2 = 0; i2 < n2; i2++) {
                        long oo = i0 * a->stride[0][0] + i1 * a->stride[0][1] +
                                  (i2 + k * n2) * a->stride[0][2];
                        long io = i0 * a->stride[1 + k][0] + i1 * a->stride[1 + k][1] +
                                  i2 * a->stride[1 + k][2];
                        put(O, eo, oo, get(k ? B : A, eo, io));
                    }
        break;
    case EW_REDUCE_ROW:
        for (long r = 0; r < n1; r++) {
            double s = 0;
            for (long j = 0; j < n2; j++) s += get(A, ea, r * n2 + j);
            put(O, eo, r, (float)s);
        }
        break;
    case EW_REDUCE_COL: /* [n0, n1, n2] -> [n0, n2] */
        for (long o = 0; o < n0; o++)
            for (long c = 0; c < n2; c++) {
                double s = 0;
                for (long r = 0; r < n1; r++) s += get(A, ea, (o * n1 + r) * n2 + c);
                put(O, eo, o * n2 + c, (float)s);
            }
        break;
    case EW_SOFTMAX_FWD:
        for (long r = 0; r < n1; r++) {
            double mx = -INFINITY, se = 0;
            for (long j = 0; j < n2; j++) mx = fmax(mx, get(A, ea, r * n2 + j));
            for (long j = 0; j < n2; j++) se += exp(get(A, ea, r * n2 + j) - mx);
            for (long j = 0; j < n2; j++)
                put(O, eo, r * n2 + j, (float)(get(A, ea, r * n2 + j) - mx - log(se)));
        }
        break;
    case EW_SOFTMAX_BWD:
        for (long r = 0; r < n1; r++) {
            double s = 0;
            for (long j = 0; j < n2; j++) s += get(A, ea, r * n2 + j);
            for (long j = 0; j < n2; j++)
                put(O, eo, r * n2 + j,
                    (float)(get(A, ea, r * n2 + j) - exp(get(B, eb, r * n2 + j)) * s));
        }
        break;
    case EW_FOREACH_COPY:
    case EW_SPLIT_COPY:
    case EW_CHUNK_CAT:
        for (long i = 0; i < n0 * n1 * n2; i++) put(O, eo, i, get(A, ea, i));
        break;
    case EW_INDEX_ACCUM: /* row r sums source rows r n0 .. r n0 + n0 - 1 in order, rounded to
                            the output's type after each (a read-modify-write per step) */
        for (long r = 0; r < n1; r++)
            for (long j = 0; j < n2; j++) {
                put(O, eo, r * n2 + j, get(A, ea, r * n0 * n2 + j));
                for (long c = 1; c < n0; c++)
                    put(O, eo, r * n2 + j,
                        get(O, eo, r * n2 + j) + get(A, ea, (r * n0 + c) * n2 + j));
            }
        break;
    default:
        break;
    }
}

/* Run kernel k on the GPU and on the CPU over the same random operands; exact for copies and
 * elementwise ops (the same float product, the same rounding), within a few bf16 / fp32 ulps for
 * sums taken in another order. */
static void ew_case(bk_ctx *c, const char *name, const ew_access *a)
{
    static uint32_t seed = 12345;
    size_t bytes[3];
    void *buf[3];
    for (int k = 0; k < 3; k++) {
        bytes[k] = (size_t)ew_operand_elems(a, k) * (size_t)a->esize[k];
        buf[k] = bytes[k] ? malloc(bytes[k]) : NULL;
    }
    void *ref = bytes[0] ? malloc(bytes[0]) : NULL;
    if (!bytes[0] || !ref) {
        CHECK(0, "%s: no output", name);
        goto out;
    }
    for (int k = 1; k < 3; k++) /* inputs uniform in [-1, 1] */
        for (long i = 0; i < ew_operand_elems(a, k); i++) {
            seed = seed * 1664525u + 1013904223u;
            put(buf[k], a->esize[k], i, (float)(seed >> 8) / 8388608.0f - 1.0f);
        }
    memset(buf[0], 0xff, bytes[0]); /* NaN: what the kernel leaves must be what the CPU leaves */
    memset(ref, 0xff, bytes[0]);
    char err[CM_ERRLEN];
    if (bk_ew_run(c, 0, a, buf[1], buf[2], buf[0], err, sizeof err) != CM_OK) {
        CHECK(0, "%s: %s", name, err);
        goto out;
    }
    ew_reference(a, buf[1], buf[2], ref);
    bool exact = a->pattern != EW_REDUCE_ROW && a->pattern != EW_REDUCE_COL &&
                 a->pattern != EW_SOFTMAX_FWD && a->pattern != EW_SOFTMAX_BWD;
    long n = ew_operand_elems(a, 0), bad = 0, first = -1;
    int es = a->esize[0];
    for (long i = 0; i < n; i++) {
        if (!memcmp((char *)buf[0] + i * es, (char *)ref + i * es, (size_t)es)) continue;
        float g = get(buf[0], es, i), r = get(ref, es, i);
        double tol = es == 2 ? 1.6e-2 * fabs(r) + 1e-3 : 1e-4 * fabs(r) + 1e-4;
        if (exact || !(fabs(g - r) <= tol)) {
            if (first < 0) first = i;
            bad++;
        }
    }
    CHECK(bad == 0, "%s (%s): %ld of %ld elements differ, first at %ld: %g vs %g", name,
          ew_pattern_name(a->pattern), bad, n, first, first >= 0 ? get(buf[0], es, first) : 0.0,
          first >= 0 ? get(ref, es, first) : 0.0);
out:
    for (int k = 0; k < 3; k++) free(buf[k]);
    free(ref);
}

/* Every kernel of a small Llama layer (hidden 64, 4 heads of 16, 2 KV heads, FFN 96, 24
 * tokens), its loss head (vocab 200), FSDP2's copies of a 4 x 70001-parameter unit over 4 ranks
 * (odd sizes: vector tails, unaligned chunks), and a column reduction over 1000 rows (the
 * staging path). */
static void eager_kernels(bk_ctx *c)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 16;
    m.ffn = 96;
    m.vocab = 200;
    m.activation = MODEL_ACT_SWIGLU;
    m.norm = MODEL_NORM_RMS;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    static elementwise_list el;
    int before = failures, ran = 0;
    for (int head = 0; head < 2; head++) {
        if (head) elementwise_head(&m, &l, 24, &el);
        else elementwise_layer(&m, &l, 24, false, &el);
        for (int i = 0; i < el.n_fwd; i++, ran++) ew_case(c, el.fwd[i].name, &el.fwd[i].access);
        for (int i = 0; i < el.n_bwd; i++, ran++) ew_case(c, el.bwd[i].name, &el.bwd[i].access);
    }
    fsdp_copies fc;
    fsdp_copies_unit(4.0 * 70001, 4, &fc);
    /* and torch pipelining's fp32 gradient sums with their fp32 chunk_cat (meas13) */
    const elementwise_kernel *ks[7] = {&fc.cast_in, &fc.slot_in,  &fc.copy_out, &fc.rs_cast,
                                       &fc.acc_cast, &fc.acc_add, &fc.rs_copy};
    for (int i = 0; i < 7; i++, ran++) ew_case(c, ks[i]->name, &ks[i]->access);
    /* PyTorch's ring attention merges and accumulators at CP 2 (cp_ring_torch.c): the fp32
     * accumulators take bf16 halves (cp.dkv.add_half: an offsets kernel with fp32 and bf16
     * inputs, which the launcher refused before meas10) */
    static elementwise_list ring;
    memset(&ring, 0, sizeof ring);
    cp_ring_torch_kernels(24.0 * 64, 24.0 * 32, 2, false, true, &ring);
    for (int i = 0; i < ring.n_fwd; i++, ran++) ew_case(c, ring.fwd[i].name, &ring.fwd[i].access);
    for (int i = 0; i < ring.n_bwd; i++, ran++) ew_case(c, ring.bwd[i].name, &ring.bwd[i].access);
    ew_access col = {.pattern = EW_REDUCE_COL, .esize = {2, 2, 0}, .n = {1, 1000, 256}};
    col.stride[1][1] = 256, col.stride[1][2] = 1, col.stride[0][2] = 1;
    ew_case(c, "sum over 1000 rows", &col);
    ran++;
    /* a narrow weight's gradient (Qwen3's QK-norm, w = head_dim): hundreds of staging rows for
     * the last block to sum */
    ew_access narrow = {.pattern = EW_REDUCE_COL, .esize = {2, 2, 0}, .n = {1, 20000, 128}};
    narrow.stride[1][1] = 128, narrow.stride[1][2] = 1, narrow.stride[0][2] = 1;
    ew_case(c, "sum over 20000 rows of 128", &narrow);
    ran++;
    /* a sum over a middle dimension (repeat_kv's backward: [t * kv_heads, n_rep, d]), with d a
     * multiple of 4 (vector loads) and not (column by column) */
    long mids[2][3] = {{3000, 4, 64}, {777, 3, 30}};
    for (int i = 0; i < 2; i++, ran++) {
        ew_access mid = {.pattern = EW_REDUCE_COL, .esize = {2, 2, 0},
                         .n = {mids[i][0], mids[i][1], mids[i][2]}};
        mid.stride[1][0] = mids[i][1] * mids[i][2], mid.stride[1][1] = mids[i][2];
        mid.stride[1][2] = 1, mid.stride[0][0] = mids[i][2], mid.stride[0][2] = 1;
        ew_case(c, i ? "sum over a middle dimension (odd)" : "sum over a middle dimension", &mid);
    }
    /* index_put_ with accumulate over runs of duplicates (GPT-OSS's bias gathers' backward:
     * hf_experts.c moe_index_backward_runs): 5 rows of 300 (a partial 128-feature slice), runs of
     * 7, bf16 and fp32 */
    for (int es = 2; es <= 4; es += 2, ran++) {
        ew_access ia = {.pattern = EW_INDEX_ACCUM, .esize = {es, es, 0}, .n = {7, 5, 300}};
        ew_case(c, es == 2 ? "index accumulation (bf16)" : "index accumulation (fp32)", &ia);
    }
    if (failures == before)
        printf("ok   eager kernels: %d of a layer, the loss head, FSDP2's copies, the CP "
               "ring's merges and the index accumulation match the CPU\n", ran);
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
    if (getenv("PLAN_GPU_TEST_EW_ONLY")) { /* only the eager kernels against the CPU */
        eager_kernels(c);
        bk_close(c);
        printf(failures ? "FAILED: %d\n" : "all passed\n", failures);
        return failures ? 1 : 0;
    }
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
    /* FP8 GEMMs (issue 16): e4m3 operands with per-tensor scales against the fp32 product of the
     * dequantized operands (output poisoned), square-ish, rectangular and batched; then timed
     * twice (stable, checked on sampled rows) and faster than bf16 at the same shape. */
    if (bk_has_fp8(c)) {
        long f8[3][4] = {{320, 192, 256, 2}, {1024, 512, 768, 1}, {64, 2048, 128, 3}};
        for (int s = 0; s < 3; s++) {
            double rel = 1;
            cm_status st = bk_gemm_check_fp8(c, 0, f8[s][0], f8[s][1], f8[s][2], (int)f8[s][3],
                                             &rel, err, sizeof err);
            CHECK(st == CM_OK, "fp8 gemm check: %s", err);
            CHECK(rel < 1e-2, "fp8 gemm %ldx%ldx%ld: rel err %g", f8[s][0], f8[s][1], f8[s][2],
                  rel);
            printf("ok   fp8 gemm %ldx%ldx%ld batch %ld rel err %.2e\n", f8[s][0], f8[s][1],
                   f8[s][2], f8[s][3], rel);
        }
        bk_gemm_result f1, f2;
        CHECK(bk_gemm_time_fp8(c, 0, 4096, 4096, 4096, 1, &tm, &f1, err, sizeof err) == CM_OK,
              "%s", err);
        CHECK(bk_gemm_time_fp8(c, 0, 4096, 4096, 4096, 1, &tm, &f2, err, sizeof err) == CM_OK,
              "%s", err);
        CHECK(f1.time_s > 0 && fabs(f1.time_s - f2.time_s) < 0.2 * f1.time_s,
              "fp8 gemm 4096^3 unstable: %g vs %g s", f1.time_s, f2.time_s);
        CHECK(f1.check_error < 1e-2 && f2.check_error < 1e-2, "fp8 4096^3 rows: rel err %g, %g",
              f1.check_error, f2.check_error);
        /* Hopper's FP8 peak is twice bf16's: well above 1.3x unless the GEMM fell back */
        CHECK(a.time_s / f1.time_s > 1.3, "fp8 4096^3 only %.2fx bf16's rate",
              a.time_s / f1.time_s);
        printf("ok   fp8 gemm 4096^3 %.1f / %.1f TFLOP/s (%.2fx bf16), rows rel err %.2e\n",
               f1.flops_per_s / 1e12, f2.flops_per_s / 1e12, a.time_s / f1.time_s,
               f1.check_error);
    } else {
        printf("skip fp8 gemm: %s has no FP8 tensor cores\n", bk_device_name(c));
    }
    /* Blockwise FP8 (Hopper): 1x128 by 128x128 (fwd/dgrad) at two shapes, 1x128 by 1x128
     * (wgrad) at one, every element checked; 4096^3 timed twice, rows checked, above bf16. */
    if (bk_has_fp8_block(c)) {
        long bs[3][4] = {{256, 384, 512, 1}, {512, 1024, 768, 1}, {384, 256, 1024, 0}};
        for (int s = 0; s < 3; s++) {
            double rel = 1;
            cm_status st = bk_gemm_check_fp8_block(c, 0, bs[s][3] != 0, bs[s][0], bs[s][1],
                                                   bs[s][2], &rel, err, sizeof err);
            CHECK(st == CM_OK, "blockwise fp8 gemm check: %s", err);
            CHECK(rel < 1e-2, "blockwise fp8 gemm %ldx%ldx%ld (%s): rel err %g", bs[s][0],
                  bs[s][1], bs[s][2], bs[s][3] ? "1x128 x 128x128" : "1x128 x 1x128", rel);
            printf("ok   blockwise fp8 gemm %ldx%ldx%ld %s rel err %.2e\n", bs[s][0], bs[s][1],
                   bs[s][2], bs[s][3] ? "1x128 x 128x128" : "1x128 x 1x128", rel);
        }
        bk_gemm_result b1, b2;
        CHECK(bk_gemm_time_fp8_block(c, 0, true, 4096, 4096, 4096, &tm, &b1, err, sizeof err) ==
                  CM_OK,
              "%s", err);
        CHECK(bk_gemm_time_fp8_block(c, 0, true, 4096, 4096, 4096, &tm, &b2, err, sizeof err) ==
                  CM_OK,
              "%s", err);
        CHECK(b1.time_s > 0 && fabs(b1.time_s - b2.time_s) < 0.2 * b1.time_s,
              "blockwise fp8 gemm 4096^3 unstable: %g vs %g s", b1.time_s, b2.time_s);
        CHECK(b1.check_error < 1e-2 && b2.check_error < 1e-2,
              "blockwise fp8 4096^3 rows: rel err %g, %g", b1.check_error, b2.check_error);
        /* FP8 tensor cores at twice bf16's peak, less the main-loop promotion of the block
         * scales: above 1.2x bf16 unless something fell back */
        CHECK(a.time_s / b1.time_s > 1.2, "blockwise fp8 4096^3 only %.2fx bf16's rate",
              a.time_s / b1.time_s);
        printf("ok   blockwise fp8 gemm 4096^3 %.1f / %.1f TFLOP/s (%.2fx bf16), rows rel err "
               "%.2e\n",
               b1.flops_per_s / 1e12, b2.flops_per_s / 1e12, a.time_s / b1.time_s,
               b1.check_error);
    } else {
        printf("skip blockwise fp8 gemm: %s is not Hopper (sm_90)\n", bk_device_name(c));
    }
    const bool fp8_only = getenv("PLAN_GPU_TEST_FP8_ONLY") != NULL;
    /* Collectives: exact results for every op and group size. */
    size_t sizes[3] = {1024 + 6, 1 << 20, 64u << 20};
    for (int g = 2; !fp8_only && g <= bk_ngpus(c); g++)
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
    /* Eager kernels: each access pattern's kernel computes the op's values. */
    if (!fp8_only) eager_kernels(c);
    /* Plan steps: FSDP2 over every GPU; Megatron TP2 + distributed optimizer; DDP; a plan that
     * cannot fit. A 1B model at short sequence keeps this quick. */
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    l.dp = bk_ngpus(c);
    double gemm_bf16 = measure_case(c, "1b", l, 2 * l.dp, 1024, false);
    /* The same plan with its Linears in FP8 (torchao tensorwise), and Megatron with TE's delayed
     * scaling: the layer's FP8 GEMMs run in FP8 (a shape cuBLASLt refuses is an error) and the
     * GEMM component drops below bf16's. */
    if (bk_has_fp8(c)) {
        layout f = l;
        f.precision = PRECISION_FP8;
        f.fp8_recipe = FP8_RECIPE_TENSORWISE;
        double gemm_fp8 = measure_case(c, "1b", f, 2 * f.dp, 1024, false);
        CHECK(gemm_fp8 > 0 && gemm_fp8 < gemm_bf16, "fp8 step's GEMMs %g s, bf16's %g s",
              gemm_fp8, gemm_bf16);
        layout d = layout_default(FRAMEWORK_MEGATRON);
        d.sharding = SHARDING_DISTOPT;
        d.dp = bk_ngpus(c);
        d.precision = PRECISION_FP8;
        d.fp8_recipe = FP8_RECIPE_DELAYED;
        measure_case(c, "1b", d, 2 * d.dp, 1024, false);
    }
    /* Megatron with --fp8-recipe blockwise: the Linears run as blockwise FP8 GEMMs (a shape
     * cuBLASLt refuses is an error) and the GEMM component stays below bf16's */
    if (bk_has_fp8_block(c)) {
        layout d = layout_default(FRAMEWORK_MEGATRON);
        d.sharding = SHARDING_DISTOPT;
        d.dp = bk_ngpus(c);
        double gemm_mbf16 = measure_case(c, "1b", d, 2 * d.dp, 1024, false);
        d.precision = PRECISION_FP8;
        d.fp8_recipe = FP8_RECIPE_BLOCKWISE;
        double gemm_blk = measure_case(c, "1b", d, 2 * d.dp, 1024, false);
        CHECK(gemm_blk > 0 && gemm_blk < gemm_mbf16, "blockwise fp8 step's GEMMs %g s, bf16's %g s",
              gemm_blk, gemm_mbf16);
        printf("ok   megatron 1b step GEMMs: bf16 %.4f s, blockwise fp8 %.4f s\n", gemm_mbf16,
               gemm_blk);
    }
    if (fp8_only) {
        bk_close(c);
        printf("%s (%d failures; PLAN_GPU_TEST_FP8_ONLY: collectives, eager kernels, pipelines "
               "and the OOM case not run)\n",
               failures ? "FAILED" : "passed", failures);
        return failures ? 1 : 0;
    }
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
