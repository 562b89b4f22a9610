/*
 * cli_number.c — see cli_number.h. strtol alone accepts " 8", "+8", "8abc" (with end checks
 * skipped) and saturates on overflow; atoi accepts everything. Here the characters are checked
 * first, so what is accepted is exactly what the message promises.
 */
#include "cli_number.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>


bool cli_number_long(const char *s, long lo, long hi, long *out)
{
    if (!s) return false;
    const char *p = s + (*s == '-');
    if (*p < '0' || *p > '9') return false; /* no sign-only, no spaces, no '+' */
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_number_double(const char *s, double *out)
{
    if (!s) return false;
    const char *p = s + (*s == '-');
    if ((*p < '0' || *p > '9') && *p != '.') return false; /* no nan, inf, hex words, spaces */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE && fabs(v) > 1) return false; /* overflow; underflow to 0 is a number */
    if (end == s || *end != '\0' || !isfinite(v)) return false;
    *out = v;
    return true;
}
