/*
 * test_backend_calib.c — the calibrate sweep (backend/calib.c), without a GPU; part of the
 * test_backend_work program (test_backend_work.h): the op list plan calibrate parses, the GEMM
 * shapes and message sizes it sweeps, and the schema of the CSV it writes (read back with
 * libcsv). Apart from the work-list tests because calibrate measures single ops, not a step.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <csv.h>

#include "test_backend_work.h"

void test_calib_ops(void **state)
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
    /* issue 16: "all" also holds the FP8 GEMMs, which "collectives" leaves out like bf16's */
    assert_int_equal(mask, CALIB_ALL & ~CALIB_GEMMS);
    assert_int_equal(mask & (CALIB_GEMM | CALIB_GEMM_FP8), 0u);
    assert_int_equal(calib_parse_ops("gemm_fp8", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_GEMM_FP8);
    assert_int_equal(calib_parse_ops("gemm,gemm-fp8,send_recv", &mask, err, sizeof err), CM_OK);
    assert_int_equal(mask, CALIB_GEMM | CALIB_GEMM_FP8 | CALIB_COLL(COLL_SEND_RECV));
    assert_int_equal(CALIB_ALL & CALIB_GEMM_FP8, CALIB_GEMM_FP8);
    /* the FP8 bit is none of the collectives' */
    for (int op = 0; op < COLL_COUNT; op++) assert_int_equal(CALIB_COLL(op) & CALIB_GEMM_FP8, 0u);
    assert_int_not_equal(calib_parse_ops("gemm,broadcast", &mask, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "broadcast"));
    assert_int_not_equal(calib_parse_ops("", &mask, err, sizeof err), CM_OK);
}

void test_calib_sweep(void **state)
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

void test_csv_schema(void **state)
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
