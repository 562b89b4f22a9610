/*
 * test_model.c — every preset's parameter counts equal the published counts (exact integers
 * from the checkpoints' safetensors totals where published; rounded figures to their
 * precision otherwise; data/models/PARAMS.md lists the sources), and bad model files give
 * clear errors.
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
#include <unistd.h>

#include "model.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : PLAN_DATA_DIR_DEFAULT;
}

static const char *const presets[] = {"1b", "3b", "7b", "8b", "13b", "30b", "70b", "175b",
                                      "405b", "mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b",
                                      "deepseek-v3", "qwen2.5-7b", "deepseek-v2-lite", NULL};

static void check_count(const char *name, const char *what, double computed, double published,
                        double precision)
{
    double tol = precision > 1 ? precision : 0.5;
    printf("  %-14s %-6s computed %17.0f published %17.0f (precision %.0f)\n", name, what,
           computed, published, precision);
    if (fabs(computed - published) >= tol)
        fail_msg("%s %s: computed %.0f, published %.0f", name, what, computed, published);
}

static void test_preset_counts(void **state)
{
    (void)state;
    for (const char *const *p = presets; *p; p++) {
        model_spec m;
        char err[CM_ERRLEN];
        cm_status st = model_load(*p, data_dir(), &m, err, sizeof err);
        if (st != CM_OK) fail_msg("%s: %s", *p, err);
        assert_true(m.published_params_total > 0);
        check_count(*p, "total", model_params_total(&m), m.published_params_total,
                    m.published_precision);
        double active = model_params_active(&m);
        if (m.published_active_excludes_embedding) active -= model_embedding_params(&m);
        check_count(*p, "active", active, m.published_params_active, m.published_precision);
    }
}

/* Exact hand-checkable counts for a Llama-3.1-8B-shaped model: 32 layers, h 4096, 32 heads,
 * 8 KV heads, head dim 128, FFN 14336, vocab 128256, untied. Per layer: attention
 * 4096*4096*2 + 4096*1024*2 = 41,943,040; MLP 3*4096*14336 = 176,160,768; norms 8192.
 * 32 * 218,112,000 + 2 * 525,336,576 + 4096 = 8,030,261,248 (the safetensors total). */
static void test_llama8b_hand(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    assert_int_equal(model_load("8b", data_dir(), &m, err, sizeof err), CM_OK);
    assert_true(model_attention_params(&m) == 41943040.0);
    assert_true(model_dense_mlp_params(&m) == 176160768.0);
    assert_true(model_params_total(&m) == 8030261248.0);
}

static void test_unknown_preset(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    assert_int_equal(model_load("nosuchmodel", data_dir(), &m, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "unknown model 'nosuchmodel'"));
    assert_non_null(strstr(err, "30b")); /* the list of presets */
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_bad_files(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    char path[] = "/tmp/plan_test_model_XXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "{\"hidden_size\": 4096, ");
    assert_int_equal(model_load_json(path, NULL, &m, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "not valid JSON"));
    write_file(path, "{\"hidden_size\": 4096, \"num_attention_heads\": 32, \"vocab_size\": 1000}");
    assert_int_equal(model_load_json(path, NULL, &m, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "layer count"));
    write_file(path, "{\"num_hidden_layers\": -3, \"hidden_size\": 4096, "
                     "\"num_attention_heads\": 32, \"vocab_size\": 1000}");
    assert_int_equal(model_load_json(path, NULL, &m, err, sizeof err), CM_EPARSE);
    assert_non_null(strstr(err, "positive integer"));
    write_file(path, "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                     "\"num_attention_heads\": 32, \"num_key_value_heads\": 5, "
                     "\"vocab_size\": 1000}");
    assert_int_equal(model_load_json(path, NULL, &m, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "multiple of"));
    assert_int_equal(model_load_json("/nonexistent/config.json", NULL, &m, err, sizeof err),
                     CM_EIO);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_counts),
        cmocka_unit_test(test_llama8b_hand),
        cmocka_unit_test(test_unknown_preset),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
