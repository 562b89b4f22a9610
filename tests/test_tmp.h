/*
 * test_tmp.h — a private scratch directory per test process, so that tests run in parallel (two
 * `meson test` runs, or two build directories at once) never write the same file: the first
 * call makes a fresh directory with mkdtemp ($TMPDIR or /tmp, plan_test_XXXXXX) and registers
 * its removal at exit; test_tmp_path(name) names a file inside it. Header-only (static inline),
 * so a test includes it without a new library.
 */
#ifndef PLAN_TESTS_TEST_TMP_H
#define PLAN_TESTS_TEST_TMP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char test_tmp_dir_buf[512];

static inline void test_tmp_remove(void)
{
    /* created by this process; the name has no quote (mkdtemp's suffix is alphanumeric) */
    char cmd[sizeof test_tmp_dir_buf + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmp_dir_buf);
    if (system(cmd) != 0) fprintf(stderr, "test: could not remove %s\n", test_tmp_dir_buf);
}

/* The directory; exits the test with a message when it cannot be made. */
static inline const char *test_tmp_dir(void)
{
    if (test_tmp_dir_buf[0]) return test_tmp_dir_buf;
    const char *base = getenv("TMPDIR");
    snprintf(test_tmp_dir_buf, sizeof test_tmp_dir_buf, "%s/plan_test_XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(test_tmp_dir_buf)) {
        perror(test_tmp_dir_buf);
        exit(1);
    }
    atexit(test_tmp_remove);
    return test_tmp_dir_buf;
}

/* dir/name, in one of 16 rotating buffers (enough for the paths one call needs at once). */
static inline const char *test_tmp_path(const char *name)
{
    static char paths[16][600];
    static unsigned next;
    char *p = paths[next++ % 16];
    snprintf(p, sizeof paths[0], "%s/%s", test_tmp_dir(), name);
    return p;
}

#endif
