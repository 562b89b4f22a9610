/*
 * test_attention_rate.c — the measured attention-rate table (costmodel/attention_rate.h): how a
 * system file's points are read, interpolated and refused, with numbers checkable by hand.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "attention_rate.h"

static attn_table T;

/* rates are stored as floats: equal to 1e-6 relative */
static int near(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fabs(b);
}

static cm_status load(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    assert_non_null(root);
    cm_status st = attn_table_from_json(json_object_get(root, "attention_rates"), "t.json", &T,
                                        err, errlen);
    json_decref(root);
    return st;
}

/* A 2 x 2 grid at head dim 128 (rows 16, 64; seq 1024, 4096) and one point at head dim 64. */
static const char *GRID =
    "{\"attention_rates\": {\"points\": ["
    "[128, \"causal\", 16, 1024, 100, 50],"
    "[128, \"causal\", 64, 1024, 200, 100],"
    "[128, \"causal\", 16, 4096, 300, 150],"
    "[128, \"causal\", 64, 4096, 400, 200],"
    "[64, \"causal\", 16, 1024, 80, 40]]}}";

static void test_interpolation(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(load(GRID, err, sizeof err), CM_OK);
    assert_int_equal(T.n, 5);
    double f, b;
    /* a grid point is its own rate */
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 128, 64, 4096, &f, &b));
    assert_true(near(f, 400e12) && near(b, 200e12));
    /* halfway in log2 on both axes (rows 32, seq 2048): the mean of the four corners */
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 128, 32, 2048, &f, &b));
    assert_true(near(f, 250e12) && near(b, 125e12));
    /* outside the grid: clamped to its edge (rows 1000 -> 64, seq 512 -> 1024) */
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 128, 1000, 512, &f, &b));
    assert_true(near(f, 200e12));
    /* the nearest measured head dim, the larger on a tie: 80 takes 64's single point whatever
     * the shape, 96 (as far from 64 as from 128) takes 128's grid */
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 80, 64, 4096, &f, &b));
    assert_true(near(f, 80e12) && near(b, 40e12));
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 96, 16, 1024, &f, &b));
    assert_true(near(f, 100e12));
    /* no point for that mask: the caller keeps the single efficiency */
    assert_false(attn_table_rates(&T, ATTN_MASK_WINDOW, 128, 16, 1024, &f, &b));
}

static void test_refused(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(load("{\"attention_rates\": {\"points\": [[128, \"diagonal\", 16, 1024, 1, "
                          "1]]}}", err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "point 0"));
    assert_int_equal(load("{\"attention_rates\": {\"points\": [[128, \"causal\", -16, 1024, 1, "
                          "1]]}}", err, sizeof err), CM_EPARSE);
    assert_int_equal(load("{\"attention_rates\": [1, 2]}", err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "\"points\""));
    /* no section: an empty table */
    assert_int_equal(load("{}", err, sizeof err), CM_OK);
    assert_int_equal(T.n, 0);
}

/* attn_table_overlay: a profile's table measured with other software (costmodel/profile.c)
 * replaces the groups it holds and keeps the base's others. Base: GRID (causal 128: 4 points,
 * causal 64: 1 point); overlay: causal 128 at rows 16, seq 1024 and 4096 (70 / 35 and 210 /
 * 105 TFLOP/s) and a no-mask 128 point. After: causal 128 is the overlay's two points only
 * (seq 2048 halfway in log2: (70 + 210) / 2 = 140 forward, whatever the rows), causal 64 keeps
 * GRID's 80 / 40, the no-mask group is the overlay's. */
static void test_overlay(void **state)
{
    (void)state;
    char err[256];
    static attn_table over;
    json_error_t je;
    json_t *root = json_loads("{\"points\": [[128, \"causal\", 16, 1024, 70, 35],"
                              "[128, \"causal\", 16, 4096, 210, 105],"
                              "[128, \"none\", 16, 1024, 90, 45]]}",
                              0, &je);
    assert_non_null(root);
    assert_int_equal(attn_table_from_json(root, "p.json", &over, err, sizeof err), CM_OK);
    json_decref(root);
    assert_int_equal(load(GRID, err, sizeof err), CM_OK);
    double f, b;
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 128, 64, 4096, &f, &b)); /* memo'd */
    assert_true(near(f, 400e12));
    unsigned long id = T.id;
    assert_true(attn_table_overlay(&T, &over));
    assert_true(T.id != id); /* a new identity: the memo of the old table is not read */
    assert_int_equal(T.n, 4);
    assert_int_equal(T.ngroups, 3);
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 128, 64, 4096, &f, &b));
    assert_true(near(f, 210e12) && near(b, 105e12));
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 128, 64, 2048, &f, &b));
    assert_true(near(f, 140e12) && near(b, 70e12));
    assert_true(attn_table_rates(&T, ATTN_MASK_CAUSAL, 64, 16, 1024, &f, &b));
    assert_true(near(f, 80e12) && near(b, 40e12));
    assert_true(attn_table_rates(&T, ATTN_MASK_NONE, 128, 16, 1024, &f, &b));
    assert_true(near(f, 90e12) && near(b, 45e12));
    /* an empty overlay changes nothing; one that would not fit is refused, the table kept */
    over.n = over.ngroups = 0;
    assert_true(attn_table_overlay(&T, &over));
    assert_int_equal(T.n, 4);
    over.n = ATTN_MAX_POINTS;
    over.ngroups = 1;
    over.g[0] = (attn_group){.mask = ATTN_MASK_WINDOW, .head_dim = 128, .first = 0,
                             .n = ATTN_MAX_POINTS};
    assert_false(attn_table_overlay(&T, &over));
    assert_int_equal(T.n, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpolation),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_overlay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
