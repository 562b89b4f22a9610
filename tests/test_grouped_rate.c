/*
 * test_grouped_rate.c — torch._grouped_mm's measured rate table (issue 20,
 * costmodel/grouped_rate.h): how a system file's shapes are read, interpolated and refused, the
 * experts' grouped GEMMs priced from it (and only torch._grouped_mm's), and the h200 preset's
 * measured table. Every expected number is worked in the comments. No GPU.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "compute.h"
#include "grouped_rate.h"
#include "recipe_builder.h"
#include "system.h"

/* M-grouped n 1024, k 2048 on groups {2, 8} x rows {256, 4096}: ratios [[0.1, 0.8],
 * [0.4, 1.0]]; K-grouped n 1024, k 2048 one point 0.5; M-grouped n 4096, k 4096 one point
 * 0.9 (a second shape, for the nearest-shape choice). */
static const char *GRID =
    "{\"grouped_gemm_rates\": {\"shapes\": ["
    "{\"form\": \"M\", \"n\": 1024, \"k\": 2048, \"groups\": [2, 8], \"rows_per_group\": "
    "[256, 4096], \"ratio\": [[0.1, 0.8], [0.4, 1.0]]},"
    "{\"form\": \"K\", \"n\": 1024, \"k\": 2048, \"groups\": [4], \"rows_per_group\": [1024], "
    "\"ratio\": [[0.5]]},"
    "{\"form\": \"M\", \"n\": 4096, \"k\": 4096, \"groups\": [4], \"rows_per_group\": [1024], "
    "\"ratio\": [[0.9]]}]}}";

static cm_status load(const char *text, grouped_table *t, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    assert_non_null(root);
    cm_status st = grouped_table_from_json(json_object_get(root, "grouped_gemm_rates"), "t.json",
                                           t, err, errlen);
    json_decref(root);
    return st;
}

/* ratios are stored as floats */
static int near(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fabs(b);
}

static void test_lookup(void **state)
{
    (void)state;
    static grouped_table t;
    char err[512];
    assert_int_equal(load(GRID, &t, err, sizeof err), CM_OK);
    assert_int_equal(t.n, 3);
    double r;
    /* a grid point */
    assert_true(grouped_table_ratio(&t, GROUPED_M, 2, 256, 1024, 2048, &r));
    assert_true(near(r, 0.1));
    assert_true(grouped_table_ratio(&t, GROUPED_M, 8, 4096, 1024, 2048, &r));
    assert_true(near(r, 1.0));
    /* the middle in log2 (G 4 between 2 and 8, rows 1024 between 256 and 4096): the mean of
     * the four corners, (0.1 + 0.8 + 0.4 + 1.0) / 4 = 0.575 */
    assert_true(grouped_table_ratio(&t, GROUPED_M, 4, 1024, 1024, 2048, &r));
    assert_true(near(r, 0.575));
    /* G 2, rows 1024 (half-way in log2 rows): (0.1 + 0.8) / 2 = 0.45 */
    assert_true(grouped_table_ratio(&t, GROUPED_M, 2, 1024, 1024, 2048, &r));
    assert_true(near(r, 0.45));
    /* clamped at the edges: G 128 -> 8, rows 16 -> 256: 0.4 */
    assert_true(grouped_table_ratio(&t, GROUPED_M, 128, 16, 1024, 2048, &r));
    assert_true(near(r, 0.4));
    /* the nearest shape: n 1536, k 2048 is 0.585 from (1024, 2048), 2.42 from (4096, 4096) */
    assert_true(grouped_table_ratio(&t, GROUPED_M, 2, 256, 1536, 2048, &r));
    assert_true(near(r, 0.1));
    /* n 4096, k 2048: 2 from the first (log2 4), 1 from the second: 0.9 */
    assert_true(grouped_table_ratio(&t, GROUPED_M, 2, 256, 4096, 2048, &r));
    assert_true(near(r, 0.9));
    /* the K form has its own shapes */
    assert_true(grouped_table_ratio(&t, GROUPED_K, 2, 256, 1024, 2048, &r));
    assert_true(near(r, 0.5));
    /* no shape of the form */
    static grouped_table only_m;
    assert_int_equal(load("{\"grouped_gemm_rates\": {\"shapes\": [{\"form\": \"M\", \"n\": 8, "
                          "\"k\": 8, \"groups\": [1], \"rows_per_group\": [1], \"ratio\": [[1]]}]}}",
                          &only_m, err, sizeof err),
                     CM_OK);
    assert_false(grouped_table_ratio(&only_m, GROUPED_K, 2, 256, 1024, 2048, &r));
    /* refused: a ratio 0, rows not ascending, a ratio row of the wrong length, a bad form */
    assert_int_equal(load("{\"grouped_gemm_rates\": {\"shapes\": [{\"form\": \"M\", \"n\": 8, "
                          "\"k\": 8, \"groups\": [1], \"rows_per_group\": [1], \"ratio\": [[0]]}]}}",
                          &only_m, err, sizeof err),
                     CM_EPARSE);
    assert_int_equal(load("{\"grouped_gemm_rates\": {\"shapes\": [{\"form\": \"M\", \"n\": 8, "
                          "\"k\": 8, \"groups\": [1], \"rows_per_group\": [4, 2], "
                          "\"ratio\": [[1, 1]]}]}}",
                          &only_m, err, sizeof err),
                     CM_EPARSE);
    assert_int_equal(load("{\"grouped_gemm_rates\": {\"shapes\": [{\"form\": \"M\", \"n\": 8, "
                          "\"k\": 8, \"groups\": [1], \"rows_per_group\": [2, 4], "
                          "\"ratio\": [[1]]}]}}",
                          &only_m, err, sizeof err),
                     CM_EPARSE);
    assert_int_equal(load("{\"grouped_gemm_rates\": {\"shapes\": [{\"form\": \"X\", \"n\": 8, "
                          "\"k\": 8, \"groups\": [1], \"rows_per_group\": [1], \"ratio\": [[1]]}]}}",
                          &only_m, err, sizeof err),
                     CM_EPARSE);
}

/* The experts' GEMMs: a torch._grouped_mm call at the table's ratio (its time the flat model's
 * math term over the ratio, the launch inside the measurement), the others as before. */
static void test_price(void **state)
{
    (void)state;
    static system_spec s;
    memset(&s, 0, sizeof s);
    s.peak_bf16_flops_per_s = 989.4e12;
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.hbm_efficiency = 0.9;
    s.gemm_efficiency_max = 0.68;
    s.gemm_overhead_s = 2.5e-6;
    char err[512];
    assert_int_equal(load(GRID, &s.grouped_gemm_rates, err, sizeof err), CM_OK);
    builder b = {.sys = &s};
    /* 4 experts x 1024 rows x n 1024 x k 2048 at 0.575: 4 x 2 x 1024 x 1024 x 2048 FLOPs =
     * 17.18 GFLOP over 989.4e12 x 0.68 x 0.575 = 386.9 TFLOP/s: 44.4 us */
    double want = 4 * 2.0 * 1024 * 1024 * 2048 / (989.4e12 * 0.68 * 0.575 *
                                                  system_gemm_power_scale(&s));
    double got = rb_moe_experts_s(&b, 4, 1, 1024, 1024, 2048, 0, GROUPED_M);
    assert_true(fabs(got - want) < 1e-6 * want);
    assert_true(got > 44e-6 && got < 45e-6);
    /* the weight gradient (m = k of the forward, rows as the contraction): K shape's 0.5 */
    want = 4 * 2.0 * 2048 * 1024 * 1024 / (989.4e12 * 0.68 * 0.5 * system_gemm_power_scale(&s));
    got = rb_moe_experts_s(&b, 4, 1, 2048, 1024, 1024, 0, GROUPED_K);
    assert_true(fabs(got - want) < 1e-6 * want);
    /* not a torch._grouped_mm call, or one GEMM per expert: the flat model as before */
    double one = compute_gemm_s(&s, 1024, 1024, 2048);
    got = rb_moe_experts_s(&b, 4, 1, 1024, 1024, 2048, 0, GROUPED_NONE);
    assert_true(fabs(got - (4 * (one - 2.5e-6) + 2.5e-6)) < 1e-15);
    got = rb_moe_experts_s(&b, 4, 4, 1024, 1024, 2048, 0, GROUPED_M);
    assert_true(fabs(got - 4 * one) < 1e-15);
    /* forward + dgrad + wgrad: M at (m 1024, n 1024, k 2048): 0.575; M at (m 1024, n 2048,
     * k 1024): nearest (1024, 2048) at distance 2, (4096, 4096) at 3: 0.575 again; K at
     * (n 1024, k 2048): 0.5 */
    double f = 2.0 * 1024 * 1024 * 2048 * 4 / (989.4e12 * 0.68 * system_gemm_power_scale(&s));
    want = f / 0.575 + f / 0.575 + f / 0.5;
    got = rb_moe_experts_fwd_bwd_s(&b, 4, 1, 1024, 1024, 2048, false, 0, GROUPED_M);
    assert_true(fabs(got - want) < 1e-6 * want);
    /* without a table: the flat model */
    s.grouped_gemm_rates.n = 0;
    got = rb_moe_experts_s(&b, 4, 1, 1024, 1024, 2048, 0, GROUPED_M);
    assert_true(fabs(got - (4 * (one - 2.5e-6) + 2.5e-6)) < 1e-15);
}

/* The h200 preset carries the measured table (bench/results/grpmm27_2026-11-29): 10 expert
 * shapes x 4 forms. Qwen3-30B-A3B's up projection (n 768, k 2048) at 64 experts x 1024 rows:
 * device/grid_graph.jsonl, up_fwd 0.30362 ms and down_dgrad 0.30504 ms, mean 0.30433 ms for
 * 2 x 65536 x 768 x 2048 = 206.16 GFLOP: 677.4 TFLOP/s over the run's dense median 667.0 =
 * 1.016; at 2 experts x 256 rows (up_fwd 0.03253 / down_dgrad 0.02975 ms, mean 0.03114 ms for
 * 2 x 512 x 768 x 2048 = 1.611 GFLOP: 51.7 TFLOP/s) 51.7 / 667.0 = 0.078. */
static void test_h200(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    static system_spec s;
    char err[512];
    assert_int_equal(system_load("h200", dir ? dir : "data", &s, err, sizeof err), CM_OK);
    assert_int_equal(s.grouped_gemm_rates.n, 40);
    double r;
    assert_true(grouped_table_ratio(&s.grouped_gemm_rates, GROUPED_M, 64, 1024, 768, 2048, &r));
    assert_true(fabs(r - 1.016) < 1e-6);
    assert_true(grouped_table_ratio(&s.grouped_gemm_rates, GROUPED_M, 2, 256, 768, 2048, &r));
    assert_true(fabs(r - 0.078) < 1e-6);
    /* priced at most at the flat rate: 1.016 -> 1 (grouped experts no faster than the dense
     * GEMM's sustained rate; recipe_moe.c) */
    builder b = {.sys = &s};
    double want = 64 * compute_gemm_math_s(&s, s.peak_bf16_flops_per_s, 1, 1024, 768, 2048);
    double got = rb_moe_experts_s(&b, 64, 1, 1024, 768, 2048, 0, GROUPED_M);
    assert_true(fabs(got - want) < 1e-9 * want);
    /* and 0.078 where measured so: 12.8x the flat math term */
    want = 2 * compute_gemm_math_s(&s, s.peak_bf16_flops_per_s, 0.078, 256, 768, 2048);
    got = rb_moe_experts_s(&b, 2, 1, 256, 768, 2048, 0, GROUPED_M);
    assert_true(fabs(got - want) < 1e-6 * want);
    /* H100: no table, the flat model stands */
    static system_spec h;
    assert_int_equal(system_load("h100", dir ? dir : "data", &h, err, sizeof err), CM_OK);
    assert_int_equal(h.grouped_gemm_rates.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_price),
        cmocka_unit_test(test_h200),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
