/*
 * test_model_input.c — hostile and unlucky config.json files (issue 18, "Silent wrong values"
 * and "Misleading messages" for the model reader): every value is range-checked on the JSON
 * number before it is narrowed to int, wrong types and non-positive sizes are named by key, and
 * the file itself is checked (directory, permission, FIFO, size) before it is read. Each case
 * once passed silently or with a misleading message; here through the library and through
 * `plan estimate` (PLAN_EXE).
 */
#define _GNU_SOURCE /* setresuid (test_unprivileged.h) */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"
#include "plan_run.h"
#include "test_unprivileged.h"

/* A valid small Llama-shaped config with one value replaced: %s is the "hidden_size" entry. */
static const char *const fmt_hidden =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, %s, \"num_attention_heads\": 32, "
    "\"num_key_value_heads\": 8, \"intermediate_size\": 14336, \"vocab_size\": 1000}";

static cm_status load_text(const char *text, model_spec *m, char *err)
{
    return model_load_json_string(text, strlen(text), "t", m, err, CM_ERRLEN);
}

static cm_status load_hidden(const char *entry, model_spec *m, char *err)
{
    char text[1024];
    snprintf(text, sizeof text, fmt_hidden, entry);
    return load_text(text, m, err);
}

static void expect_error(cm_status st, const char *err, const char *needle)
{
    if (st == CM_OK) fail_msg("accepted; wanted an error containing '%s'", needle);
    if (!strstr(err, needle)) fail_msg("error lacks '%s': %s", needle, err);
}

/* 2^32 + 4096 used to plan as 4096 (narrowed to int before the check); 2^31 as negative. */
static void test_huge_dimensions(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    expect_error(load_hidden("\"hidden_size\": 4294971392", &m, err), err, "too large");
    assert_non_null(strstr(err, "hidden_size"));
    expect_error(load_hidden("\"hidden_size\": 4294971392.0", &m, err), err, "too large");
    expect_error(load_hidden("\"hidden_size\": 2147483648", &m, err), err, "too large");
    expect_error(load_hidden("\"hidden_size\": 1e300", &m, err), err, "too large");
    /* beyond 64 bits the JSON parser itself refuses the number, naming it */
    expect_error(load_hidden("\"hidden_size\": 18446744073709555712", &m, err), err,
                 "too big integer");
    const char *layers = "{\"num_hidden_layers\": 4294967298, \"hidden_size\": 4096, "
                         "\"num_attention_heads\": 32, \"vocab_size\": 1000}";
    expect_error(load_text(layers, &m, err), err, "num_hidden_layers");
    const char *vocab = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                        "\"num_attention_heads\": 32, \"vocab_size\": 4294968296}";
    expect_error(load_text(vocab, &m, err), err, "too large");
    /* a sane value still loads */
    assert_int_equal(load_hidden("\"hidden_size\": 4096", &m, err), CM_OK);
    assert_int_equal(m.hidden, 4096);
}

/* Negative KV heads used to become MHA (the default); zero or negative sizes name their key. */
static void test_non_positive(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    const char *kv = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                     "\"num_attention_heads\": 32, \"num_key_value_heads\": -8, "
                     "\"vocab_size\": 1000}";
    expect_error(load_text(kv, &m, err), err, "num_key_value_heads");
    assert_non_null(strstr(err, "-8"));
    expect_error(load_hidden("\"hidden_size\": 0", &m, err), err, "hidden_size");
    const char *ffn = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                      "\"num_attention_heads\": 32, \"intermediate_size\": -1, "
                      "\"vocab_size\": 1000}";
    expect_error(load_text(ffn, &m, err), err, "intermediate_size");
    const char *experts = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                          "\"num_attention_heads\": 32, \"vocab_size\": 1000, "
                          "\"num_local_experts\": -8, \"num_experts_per_tok\": 2}";
    expect_error(load_text(experts, &m, err), err, "num_local_experts");
    const char *head = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                       "\"num_attention_heads\": 32, \"vocab_size\": 1000, \"head_dim\": -128}";
    expect_error(load_text(head, &m, err), err, "head_dim");
    expect_error(load_hidden("\"hidden_size\": 4096.5", &m, err), err, "must be an integer");
}

/* A string hidden size used to read as "no hidden size". */
static void test_wrong_types(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    expect_error(load_hidden("\"hidden_size\": \"4096\"", &m, err), err,
                 "hidden_size is a string, expected an integer");
    expect_error(load_hidden("\"hidden_size\": [4096]", &m, err), err,
                 "hidden_size is an array, expected an integer");
    expect_error(load_hidden("\"hidden_size\": true", &m, err), err,
                 "hidden_size is a boolean, expected an integer");
    const char *kv = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                     "\"num_attention_heads\": 32, \"num_key_value_heads\": \"8\", "
                     "\"vocab_size\": 1000}";
    expect_error(load_text(kv, &m, err), err, "num_key_value_heads is a string");
    const char *tie = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                      "\"num_attention_heads\": 32, \"vocab_size\": 1000, "
                      "\"tie_word_embeddings\": \"false\"}";
    expect_error(load_text(tie, &m, err), err, "tie_word_embeddings is a string");
    const char *theta = "{\"num_hidden_layers\": 2, \"hidden_size\": 4096, "
                        "\"num_attention_heads\": 32, \"vocab_size\": 1000, "
                        "\"rope_theta\": \"1e6\"}";
    expect_error(load_text(theta, &m, err), err, "rope_theta is a string, expected a number");
}

static char tmpdir[] = "/tmp/plan_model_input_XXXXXX";

static int make_tmpdir(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A directory used to be reported as "not valid JSON". */
static void test_directory(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    assert_int_equal(model_load_json(tmpdir, NULL, &m, err, sizeof err), CM_EIO);
    if (!strstr(err, "is a directory")) fail_msg("%s", err);
}

/* Permission denied used to be reported as "no such file". Root reads anything, so as root the
 * read runs as nobody (test_unprivileged.h). */
static void test_permission(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN], path[512];
    snprintf(path, sizeof path, "%s/secret.json", tmpdir);
    write_file(path, "{}");
    assert_int_equal(chmod(path, 0), 0);
    assert_int_equal(chmod(tmpdir, 0711), 0); /* nobody may reach the file, not read it */
    const char *need[] = {tmpdir, NULL};
    if (!test_drop_root(need)) skip();
    cm_status st = model_load_json(path, NULL, &m, err, sizeof err);
    test_restore_root();
    assert_int_equal(st, CM_EIO);
    if (!strstr(err, "permission denied")) fail_msg("%s", err);
    assert_int_equal(model_load_json("/nonexistent/config.json", NULL, &m, err, sizeof err),
                     CM_EIO);
    assert_non_null(strstr(err, "no such file"));
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "model_load_json blocked on a FIFO\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

/* A FIFO used to block forever (open waits for a writer); the alarm turns that into a
 * failure. */
static void test_fifo(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN], path[512];
    snprintf(path, sizeof path, "%s/fifo.json", tmpdir);
    assert_int_equal(mkfifo(path, 0600), 0);
    signal(SIGALRM, on_alarm);
    alarm(10);
    cm_status st = model_load_json(path, NULL, &m, err, sizeof err);
    alarm(0);
    assert_int_equal(st, CM_EIO);
    if (!strstr(err, "not a regular file")) fail_msg("%s", err);
}

/* A file over the cap (here a sparse 5 MiB one) is refused before it is read. */
static void test_size_cap(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN], path[512];
    snprintf(path, sizeof path, "%s/big.json", tmpdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, MODEL_CONFIG_MAX_BYTES + 1), 0);
    close(fd);
    assert_int_equal(model_load_json(path, NULL, &m, err, sizeof err), CM_EIO);
    if (!strstr(err, "over the limit")) fail_msg("%s", err);
}

/* The same causes reach the command line as one line on stderr, exit 2. */
static void test_cli(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    static plan_run_result r;
    char args[1024], path[512];
    snprintf(args, sizeof args, "estimate --model %s/ --gpus 8", tmpdir);
    assert_int_equal(plan_run(&r, args), 0);
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "is a directory")) fail_msg("%s", r.err);

    snprintf(path, sizeof path, "%s/string.json", tmpdir);
    char text[1024];
    snprintf(text, sizeof text, fmt_hidden, "\"hidden_size\": \"4096\"");
    write_file(path, text);
    snprintf(args, sizeof args, "estimate --model %s --gpus 8", path);
    assert_int_equal(plan_run(&r, args), 0);
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "hidden_size is a string, expected an integer")) fail_msg("%s", r.err);

    snprintf(path, sizeof path, "%s/huge.json", tmpdir);
    snprintf(text, sizeof text, fmt_hidden, "\"hidden_size\": 4294971392");
    write_file(path, text);
    snprintf(args, sizeof args, "estimate --model %s --gpus 8", path);
    assert_int_equal(plan_run(&r, args), 0);
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "too large")) fail_msg("%s", r.err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_dimensions), cmocka_unit_test(test_non_positive),
        cmocka_unit_test(test_wrong_types),     cmocka_unit_test(test_directory),
        cmocka_unit_test(test_permission),      cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_size_cap),        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
