/*
 * plan_run.h — runs the `plan` executable (path in PLAN_EXE) through the shell for the
 * end-to-end tests, capturing exit status, stdout and stderr separately.
 */
#ifndef PLAN_TESTS_PLAN_RUN_H
#define PLAN_TESTS_PLAN_RUN_H

typedef struct {
    int status;          /* exit status, -1 when killed by a signal */
    char out[1 << 20];   /* stdout, truncated to fit */
    char err[8192];      /* stderr, truncated to fit */
} plan_run_result;

/* `plan <args>`; returns 0, or -1 when the command could not be started. */
int plan_run(plan_run_result *r, const char *args);

#endif
