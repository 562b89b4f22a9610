/*
 * test_profile_cli.c — end-to-end tests of calibration profiles given as --system whose
 * "calibration_of" names another profile (costmodel/profile.c): a chain that ends at a preset
 * loads; a profile naming itself, two naming each other, and a chain deeper than
 * PROFILE_MAX_CHAIN are one clear line on stderr and exit 2 (they used to recurse until the
 * stack overflowed). The profiles are written into a temporary directory that is also the
 * working directory, since a "calibration_of" file name is relative to it.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan_run.h"

static plan_run_result R;
static char dir[] = "/tmp/plan_profile_chain_XXXXXX";

/* A profile in dir naming base, with a collective fit so that it is a real overlay. */
static void write_profile(const char *name, const char *base)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"name\": \"%s\", \"calibration_of\": \"%s\", \"calibration\": {\"collectives\": "
            "[{\"op\": \"all_reduce\", \"group_size\": 4, \"span\": \"intra\", \"alpha_s\": "
            "2e-5, \"busbw_bytes_per_s\": 3e11}]}}\n",
            name, base);
    assert_int_equal(fclose(f), 0);
}

static void remove_profile(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

/* plan ARGS must fail with exit 2 and one stderr line holding needle. */
static void bad(const char *args, const char *needle)
{
    assert_int_equal(plan_run(&R, args), 0);
    if (R.status != 2) fail_msg("plan %s: exit %d, wanted 2 (stderr: %s)", args, R.status, R.err);
    size_t lines = 0;
    for (const char *c = R.err; *c; c++) lines += *c == '\n';
    if (lines != 1) fail_msg("plan %s: %zu lines on stderr: %s", args, lines, R.err);
    if (!strstr(R.err, needle)) fail_msg("plan %s: stderr lacks '%s': %s", args, needle, R.err);
    assert_string_equal(R.out, "");
}

static void test_chain_to_preset(void **state)
{
    (void)state;
    write_profile("outer.json", "inner.json");
    write_profile("inner.json", "h200-x4");
    assert_int_equal(plan_run(&R, "--system outer.json --model 8b --gpus 4 --format json"), 0);
    if (R.status != 0) fail_msg("exit %d: %s", R.status, R.err);
    assert_non_null(strstr(R.out, "inner.json+outer.json")); /* the system's name */
    remove_profile("outer.json");
    remove_profile("inner.json");
}

static void test_two_profiles_naming_each_other(void **state)
{
    (void)state;
    write_profile("a.json", "b.json");
    write_profile("b.json", "a.json");
    bad("--system a.json --model 8b --gpus 4",
        "calibration_of cycle: a.json -> b.json -> a.json; fix the calibration_of field");
    bad("estimate --system b.json --model 8b --gpus 4 --tp 2",
        "calibration_of cycle: b.json -> a.json -> b.json");
    remove_profile("a.json");
    remove_profile("b.json");
}

/* Given by its full path, a profile naming itself by its bare file name is the same file. */
static void test_profile_naming_itself(void **state)
{
    (void)state;
    write_profile("self.json", "self.json");
    char args[PATH_MAX + 64], want[2 * PATH_MAX];
    snprintf(args, sizeof args, "--system %s/self.json --model 8b --gpus 4", dir);
    snprintf(want, sizeof want, "calibration_of cycle: %s/self.json -> self.json;", dir);
    bad(args, want);
    remove_profile("self.json");
}

static void test_chain_too_deep(void **state)
{
    (void)state;
    char name[32], base[32];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "p%d.json", i);
        snprintf(base, sizeof base, "p%d.json", i + 1);
        write_profile(name, i == 11 ? "h200-x4" : base);
    }
    bad("--system p0.json --model 8b --gpus 4", "calibration_of chain deeper than 8 profiles");
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "p%d.json", i);
        remove_profile(name);
    }
}

int main(void)
{
    if (!mkdtemp(dir) || chdir(dir) != 0) {
        perror(dir);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_to_preset),
        cmocka_unit_test(test_two_profiles_naming_each_other),
        cmocka_unit_test(test_profile_naming_itself),
        cmocka_unit_test(test_chain_too_deep),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (chdir("/") == 0) rmdir(dir);
    return failed;
}
