/*
 * pp_layout_parse.c — Megatron's pipeline layout string, read back (see the header). The
 * string is unrolled as Megatron unrolls it, in two passes: every "(...)*n" (no nesting), then
 * every "x*n"; the flat text is then split at "|".
 */
#include "pp_layout_parse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLAT_MAX (1 << 20) /* unrolled characters: far beyond any pipeline */

typedef struct {
    char *buf;
    size_t n;
} text;

static int put(text *o, const char *s, size_t len)
{
    if (o->n + len >= FLAT_MAX) return -1;
    memcpy(o->buf + o->n, s, len);
    o->n += len;
    o->buf[o->n] = '\0';
    return 0;
}

/* Reads "*digits" at s (returns the count, 1 without a '*', -1 when malformed); *end after. */
static long count_at(const char *s, const char **end)
{
    *end = s;
    if (*s != '*') return 1;
    if (!isdigit((unsigned char)s[1])) return -1;
    char *e;
    long n = strtol(s + 1, &e, 10);
    *end = e;
    return n >= 0 && n <= FLAT_MAX ? n : -1;
}

/* pass 1: "(X)*n" -> X n times; pass 2: "c*n" -> c n times */
static int unroll(const char *in, text *out, int groups, char *err, size_t errlen)
{
    out->n = 0;
    out->buf[0] = '\0';
    for (const char *s = in; *s;) {
        if (groups && *s == '(') {
            const char *close = strchr(s, ')');
            const char *open2 = strchr(s + 1, '(');
            if (!close || (open2 && open2 < close)) {
                snprintf(err, errlen, "the pipeline layout has an unclosed or nested '('");
                return -1;
            }
            const char *end;
            long times = count_at(close + 1, &end);
            if (times < 0 || *(close + 1) != '*') {
                snprintf(err, errlen, "a '(...)' in the pipeline layout needs '*count' after it");
                return -1;
            }
            for (long k = 0; k < times; k++)
                if (put(out, s + 1, (size_t)(close - s - 1)) < 0) goto too_long;
            s = end;
        } else if (!groups && *s != '*' && s[1] == '*') {
            const char *end;
            long times = count_at(s + 1, &end);
            if (times < 0) {
                snprintf(err, errlen, "a '*' in the pipeline layout needs a count after it");
                return -1;
            }
            for (long k = 0; k < times; k++)
                if (put(out, s, 1) < 0) goto too_long;
            s = end;
        } else {
            if (put(out, s, 1) < 0) goto too_long;
            s++;
        }
    }
    return 0;
too_long:
    snprintf(err, errlen, "the pipeline layout unrolls to more than %d characters", FLAT_MAX);
    return -1;
}

int pp_layout_parse(const char *in, int pp, int *rank_layers, int max, int *vpp, char *err,
                    size_t errlen)
{
    if (pp < 1 || pp > max) {
        snprintf(err, errlen, "pipeline size %d is out of range for the layout", pp);
        return -1;
    }
    /* commas are cosmetic (parse_str_to_list removes them first) */
    size_t len = strlen(in);
    char *clean = malloc(len + 1);
    text a = {malloc(FLAT_MAX), 0}, b = {malloc(FLAT_MAX), 0};
    int rc = -1;
    if (!clean || !a.buf || !b.buf) {
        snprintf(err, errlen, "out of memory reading the pipeline layout");
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < len; i++)
        if (in[i] != ',' && !isspace((unsigned char)in[i])) clean[k++] = in[i];
    clean[k] = '\0';
    if (unroll(clean, &a, 1, err, errlen) < 0 || unroll(a.buf, &b, 0, err, errlen) < 0) goto out;
    for (int r = 0; r < pp; r++) rank_layers[r] = 0;
    long stage = 0;
    for (const char *s = b.buf; *s; s++) {
        if (*s == '|') {
            stage++;
        } else if (*s == 't') {
            rank_layers[stage % pp]++;
        } else if (*s != 'E' && *s != 'L' && *s != 'm') {
            snprintf(err, errlen, "the pipeline layout holds '%c': Megatron knows E, t, m, L",
                     isprint((unsigned char)*s) ? *s : '?');
            goto out;
        }
    }
    if ((stage + 1) % pp) {
        snprintf(err, errlen,
                 "the pipeline layout has %ld stages, which the pipeline size %d does not divide",
                 stage + 1, pp);
        goto out;
    }
    *vpp = (int)((stage + 1) / pp);
    rc = 0;
out:
    free(clean);
    free(a.buf);
    free(b.buf);
    return rc;
}
