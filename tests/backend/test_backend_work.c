/*
 * test_backend_work.c — the layout-to-work translation (backend/work.c) and the calibrate sweep
 * (backend/calib.c), without a GPU.
 *
 * The central check: the cost model's prediction of every work item, summed over layers and
 * micro-batches, equals estimate_layout()'s compute time (and its TP time, which the estimate
 * leaves exposed), so the backend measures exactly the work the estimate prices.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <csv.h>

#include "calib.h"
#include "work.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static model_spec M;
static system_spec S;

static void load(const char *model, const char *sys)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, data_dir(), &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static work_plan W;

static void build(const layout *l, const training_spec *t)
{
    char err[CM_ERRLEN];
    if (work_plan_build(&M, &S, t, l, &W, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static double items_compute(const work_plan *w)
{
    return w->pred_component_s[WC_GEMM] + w->pred_component_s[WC_ATTENTION] +
           w->pred_component_s[WC_ELEMENTWISE];
}

static void near(double a, double b, double rel)
{
    if (!(fabs(a - b) <= rel * fabs(b))) fail_msg("%.12g != %.12g (rel %.3g)", a, b, rel);
}

static layout fsdp2(int dp)
{
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    l.dp = dp;
    return l;
}

static layout megatron(int tp, int dp, bool sp)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.tp = tp;
    l.dp = dp;
    l.sp = sp;
    return l;
}

static void test_sums_match_estimate(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 8;
    layout cases[8];
    int n = 0;
    cases[n++] = fsdp2(4);
    cases[n++] = megatron(2, 2, true);
    cases[n++] = megatron(4, 1, false);
    cases[n] = megatron(2, 2, true), cases[n].recompute = RECOMPUTE_FULL, n++;
    cases[n] = megatron(2, 2, true), cases[n].recompute = RECOMPUTE_SELECTIVE, n++;
    cases[n] = megatron(1, 4, false), cases[n].sharding = SHARDING_DDP, n++;
    cases[n] = megatron(1, 2, false), cases[n].cp = 2, n++;
    cases[n] = fsdp2(2), cases[n].cp = 2, n++;
    for (int i = 0; i < n; i++) {
        for (int att = 0; att < 2; att++) {
            training_spec tt = t;
            tt.attention = att ? ATTENTION_UNFUSED : ATTENTION_FLASH;
            build(&cases[i], &tt);
            if (fabs(items_compute(&W) - W.est.time.compute_s) > 1e-9 * W.est.time.compute_s)
                fail_msg("case %d attention %d: items %.12g, estimate %.12g", i, att,
                         items_compute(&W), W.est.time.compute_s);
            near(W.pred_component_s[WC_TP], W.est.time.tp_s, 1e-9);
            assert_int_equal(W.layers, 32);
            assert_true(W.has_head);
        }
    }
}

static void test_shapes_8b(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 4;
    layout l = megatron(4, 1, true);
    build(&l, &t);
    /* QKV: (4096 + 2*1024)/4 outputs from 4096 inputs, 4096 tokens; MLP up: 2*14336/4 */
    const work_item *qkv = NULL, *up = NULL, *qk = NULL;
    int gathers = 0;
    for (int i = 0; i < W.layer_fwd.n; i++) {
        const work_item *it = &W.layer_fwd.item[i];
        if (!strcmp(it->name, "qkv")) qkv = it;
        if (!strcmp(it->name, "mlp_up")) up = it;
        if (!strcmp(it->name, "attn.qk")) qk = it;
        if (it->kind == WORK_COLL && it->op == COLL_ALL_GATHER) gathers++;
    }
    assert_non_null(qkv);
    assert_non_null(up);
    assert_non_null(qk);
    assert_true(qkv->m == 4096 && qkv->n == 1536 && qkv->k == 4096 && qkv->form == GEMM_FWD);
    assert_true(up->n == 7168 && up->k == 4096);
    /* attention: 32/4 heads per rank, causal half of the keys, head dim 128 */
    assert_true(qk->batch == 8 && qk->m == 4096 && qk->n == 2048 && qk->k == 128);
    assert_int_equal(gathers, 2); /* SP: all-gather before QKV and before MLP up */
    /* every forward GEMM has a dgrad and a wgrad of the same FLOPs in backward */
    double ff = 0, bf = 0;
    for (int i = 0; i < W.layer_fwd.n; i++)
        if (W.layer_fwd.item[i].component == WC_GEMM) ff += W.layer_fwd.item[i].flops;
    for (int i = 0; i < W.layer_bwd.n; i++)
        if (W.layer_bwd.item[i].component == WC_GEMM) bf += W.layer_bwd.item[i].flops;
    near(bf, 2 * ff, 1e-12);
}

static void test_dp_traffic(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    training_spec t = training_default();
    t.global_batch = 4;
    layout l = fsdp2(4);
    build(&l, &t);
    assert_true(W.fsdp && W.dp_active);
    near(W.gather_bytes, 2 * W.layer_params, 1e-12);
    near(W.reduce_bytes, 4 * W.layer_params, 1e-12); /* FSDP2 reduces in fp32 */
    assert_int_equal(W.reduce_op, COLL_REDUCE_SCATTER);
    assert_true(W.gather_in_bwd);
    near(W.optimizer_params, 8030261248.0 / 4, 1e-12);
    assert_int_equal(W.microbatches, 1);

    l = megatron(1, 4, false);
    l.sharding = SHARDING_DDP;
    build(&l, &t);
    assert_int_equal(W.reduce_op, COLL_ALL_REDUCE);
    assert_true(W.gather_bytes == 0 && !W.fsdp);
    near(W.optimizer_params, 8030261248.0, 1e-12);

    l = megatron(2, 2, true);
    build(&l, &t);
    assert_int_equal(W.reduce_op, COLL_REDUCE_SCATTER);
    assert_int_equal(W.gather_op, COLL_ALL_GATHER);
    assert_false(W.gather_each_micro);
    assert_true(W.optimizer_bf16_copy);
}

static void test_rejects_and_slices(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    load("mixtral-8x7b", "h200-x4");
    training_spec t = training_default();
    layout l = megatron(1, 8, false);
    assert_int_not_equal(work_plan_build(&M, &S, &t, &l, &W, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "MoE"));

    bool whole;
    layout big = megatron(8, 1, true);
    assert_int_equal(work_local_dp(&big, 4, &whole, err, sizeof err), 0);
    assert_non_null(strstr(err, "tp*cp = 8"));
    layout wide = fsdp2(8);
    assert_int_equal(work_local_dp(&wide, 4, &whole, err, sizeof err), 4);
    assert_false(whole);
    layout fits = megatron(2, 2, true);
    assert_int_equal(work_local_dp(&fits, 4, &whole, err, sizeof err), 2);
    assert_true(whole);
    fits.pp = 2;
    work_local_dp(&fits, 4, &whole, err, sizeof err);
    assert_false(whole); /* one pipeline stage is measured */
    /* Megatron order: tp innermost, then cp, then dp */
    layout o = megatron(2, 2, true);
    o.cp = 2;
    assert_int_equal(work_rank(&o, 1, 0, 0), 1);
    assert_int_equal(work_rank(&o, 0, 1, 0), 2);
    assert_int_equal(work_rank(&o, 0, 0, 1), 4);
}

static void test_calib_ops(void **state)
{
    (void)state;
    unsigned mask;
    char err[CM_ERRLEN];
    assert_int_equal(calib_parse_ops("gemm,allreduce", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_GEMM | CALIB_COLL(COLL_ALL_REDUCE));
    assert_int_equal(calib_parse_ops("all-to-all,send_recv", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_COLL(COLL_ALL_TO_ALL) | CALIB_COLL(COLL_SEND_RECV));
    assert_int_equal(calib_parse_ops("all", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_ALL);
    assert_int_equal(calib_parse_ops("collectives", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_ALL & ~CALIB_GEMM);
    assert_int_not_equal(calib_parse_ops("gemm,broadcast", &mask, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "broadcast"));
    assert_int_not_equal(calib_parse_ops("", &mask, err, sizeof err), CM_OK);
}

static void test_calib_sweep(void **state)
{
    (void)state;
    load("8b", "h200-x4");
    calib_shape s[40];
    int n = calib_gemm_shapes(&M, 4096, s, 40);
    assert_int_equal(n, 17); /* 4 GEMMs x TP 1,2,4,8 + 8192^3 */
    assert_string_equal(s[0].name, "qkv.tp1");
    assert_true(s[0].n == 6144 && s[0].k == 4096 && s[0].m == 4096);
    assert_string_equal(s[15].name, "mlp_down.tp8");
    assert_true(s[15].n == 4096 && s[15].k == 1792);
    assert_true(s[16].m == 8192 && s[16].n == 8192 && s[16].k == 8192);
    size_t sz[32];
    int k = calib_sizes(1u << 30, sz, 32);
    assert_int_equal(k, 11);
    assert_true(sz[0] == 1024 && sz[10] == (1u << 30));
    k = calib_sizes(100000, sz, 32);
    assert_true(sz[k - 1] == 100000 && sz[k - 2] == 65536);
}

struct parsed {
    int fields, rows;
    char first[64];
    char row0[16][64];
};

static void cb_field(void *s, size_t len, void *data)
{
    struct parsed *p = data;
    if (p->rows == 0 && p->fields == 0) snprintf(p->first, sizeof p->first, "%.*s", (int)len, (char *)s);
    if (p->rows == 1 && p->fields < 16) snprintf(p->row0[p->fields], 64, "%.*s", (int)len, (char *)s);
    p->fields++;
}

static void cb_row(int c, void *data)
{
    (void)c;
    struct parsed *p = data;
    if (p->rows == 0) assert_int_equal(p->fields, calib_csv_ncolumns);
    else assert_int_equal(p->fields, calib_csv_ncolumns);
    p->rows++;
    p->fields = 0;
}

static void test_csv_schema(void **state)
{
    (void)state;
    static const char *expect[] = {"op", "dtype", "name", "m", "n", "k", "bytes", "group_size",
                                   "span", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s",
                                   "tflops", "check_error", "spread"};
    assert_int_equal(calib_csv_ncolumns, 15);
    for (int i = 0; i < 15; i++) assert_string_equal(calib_csv_columns[i], expect[i]);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(calib_csv_header(f), 0);
    calib_row r = {.op = "all_reduce", .dtype = "bf16", .name = "", .bytes = 67108864,
                   .group_size = 4, .span = "intra", .time_s = 3.1e-4,
                   .algbw_bytes_per_s = 2.1e11, .busbw_bytes_per_s = 3.2e11};
    assert_int_equal(calib_csv_row(f, &r), 0);
    rewind(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    struct csv_parser p;
    struct parsed out = {0};
    assert_int_equal(csv_init(&p, 0), 0);
    assert_int_equal(csv_parse(&p, buf, n, cb_field, cb_row, &out), n);
    csv_fini(&p, cb_field, cb_row, &out);
    csv_free(&p);
    assert_int_equal(out.rows, 2);
    assert_string_equal(out.first, "op");
    assert_string_equal(out.row0[0], "all_reduce");
    assert_string_equal(out.row0[6], "67108864");
    assert_string_equal(out.row0[7], "4");
    near(atof(out.row0[11]), 3.2e11, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums_match_estimate), cmocka_unit_test(test_shapes_8b),
        cmocka_unit_test(test_dp_traffic),          cmocka_unit_test(test_rejects_and_slices),
        cmocka_unit_test(test_calib_ops),           cmocka_unit_test(test_calib_sweep),
        cmocka_unit_test(test_csv_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
