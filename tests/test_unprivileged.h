/*
 * test_unprivileged.h — lets a "permission denied" test run as root too. Root reads a file of
 * mode 0 anyway, so such a test used to skip when the suite ran as root (as CI does) and the
 * message went unguarded. As root, test_drop_root() switches the real and effective user and
 * group ids to nobody (65534) and keeps the saved ids 0, so test_restore_root() can switch back;
 * a process the test starts (popen) runs wholly as nobody (exec sets the saved ids to the
 * effective ones). Header-only (static inline). The file's own #define _GNU_SOURCE (setresuid)
 * must come before every include.
 */
#ifndef PLAN_TESTS_TEST_UNPRIVILEGED_H
#define PLAN_TESTS_TEST_UNPRIVILEGED_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#define TEST_NOBODY_ID 65534

/* Not root: true, nothing changed (the caller tests as itself). Root: the ids become nobody's;
 * true when every path in `need` (NULL-terminated: the executable, the data directory, the
 * scratch directory) is then reachable, else the ids are restored and false (the caller skips,
 * e.g. a checkout under a 0700 home). */
static inline bool test_drop_root(const char *const *need)
{
    if (geteuid() != 0) return true;
    if (setresgid(TEST_NOBODY_ID, TEST_NOBODY_ID, 0) != 0 ||
        setresuid(TEST_NOBODY_ID, TEST_NOBODY_ID, 0) != 0) {
        perror("test: cannot become nobody");
        if (setresgid(0, 0, 0) != 0) perror("setresgid");
        return false;
    }
    for (; need && *need; need++)
        if (access(*need, R_OK) != 0 && access(*need, X_OK) != 0) {
            fprintf(stderr, "test: nobody cannot reach %s: skipped\n", *need);
            if (setresuid(0, 0, 0) != 0 || setresgid(0, 0, 0) != 0) perror("test: restore");
            return false;
        }
    return true;
}

/* Back to root when test_drop_root switched away from it (a no-op otherwise). */
static inline void test_restore_root(void)
{
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) == 0 && s == 0 && e != 0)
        if (setresuid(0, 0, 0) != 0 || setresgid(0, 0, 0) != 0) perror("test: restore root");
}

#endif
