/* plan_run.c — see plan_run.h. */
#include "plan_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int plan_run(plan_run_result *r, const char *args)
{
    char errpath[] = "/tmp/plan_test_err_XXXXXX";
    int fd = mkstemp(errpath);
    if (fd < 0) return -1;
    close(fd);
    const char *exe = getenv("PLAN_EXE");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", exe ? exe : "plan", args, errpath);
    FILE *p = popen(cmd, "r");
    if (!p) {
        unlink(errpath);
        return -1;
    }
    size_t n = fread(r->out, 1, sizeof r->out - 1, p);
    r->out[n] = '\0';
    int st = pclose(p);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    FILE *e = fopen(errpath, "r");
    n = e ? fread(r->err, 1, sizeof r->err - 1, e) : 0;
    r->err[n] = '\0';
    if (e) fclose(e);
    unlink(errpath);
    return 0;
}
