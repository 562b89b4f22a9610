/*
 * status.h — the status codes and error-message convention shared by every module.
 *
 * Library code never prints or exits (DESIGN.md, Conventions): a function that can fail returns
 * a cm_status and writes one line into the caller's buffer saying what was wrong and how to fix
 * it. Only main() talks to the terminal.
 */
#ifndef PLAN_STATUS_H
#define PLAN_STATUS_H

#include <stddef.h>

typedef enum {
    CM_OK = 0,
    CM_EINVAL = 1,   /* bad value or combination given by the user */
    CM_EIO = 2,      /* a file could not be read */
    CM_EPARSE = 3,   /* a file was read but its content is malformed */
    CM_ENOMEM = 4,
    CM_ERULE = 5,    /* a framework rule (DESIGN.md "Framework rules") is violated */
} cm_status;

/* Size of the error buffers callers pass in. */
#define CM_ERRLEN 512

/* printf-style helper that fills err (if non-NULL) and returns code. */
cm_status cm_fail(char *err, size_t errlen, cm_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
