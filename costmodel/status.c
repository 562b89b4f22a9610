/* status.c — fills the caller's error buffer; see status.h. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

cm_status cm_fail(char *err, size_t errlen, cm_status code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
