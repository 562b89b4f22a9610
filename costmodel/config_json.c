/*
 * config_json.c — typed reads of a Hugging Face config.json (see config_json.h).
 */
#include "config_json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- JSON helpers: a key may be absent or null (HF writes null for "not used"). ---- */

const json_t *cj_get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

/* First present key among a NULL-terminated list; *used gets its name. */
const json_t *cj_first_of(const json_t *o, const char *const *keys, const char **used)
{
    for (; *keys; keys++) {
        const json_t *v = cj_get(o, *keys);
        if (v) {
            if (used) *used = *keys;
            return v;
        }
    }
    return NULL;
}

/* First present key among a NULL-terminated list, as a number (our own _plan block). */
bool cj_get_num(const json_t *o, double *out, const char *const *keys)
{
    const json_t *v = cj_first_of(o, keys, NULL);
    if (v && json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    return false;
}

const char *cj_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING: return "a string";
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "a number";
    }
}



/*
 * Integer field from the first present key of keys. Absent: a required field fails naming the
 * key, an optional one takes dflt. Present, the value must be a JSON number with an integer
 * value in [min, max]; the range is checked on the JSON value itself (a 64-bit integer or a
 * double), before anything is narrowed to int, so 2^32 + 4096 is an error, not 4096.
 */
cm_status cj_read_int(const json_t *o, const char *const *keys, const char *what,
                          bool required, long dflt, long min, long max, long *out, const cj_src *s)
{
    const char *key = keys[0];
    const json_t *v = cj_first_of(o, keys, &key);
    if (!v) {
        if (required)
            return cm_fail(s->err, s->errlen, CM_EPARSE,
                           "%s: no %s (expected key \"%s\"): add it to the config.json", s->path,
                           what, keys[0]);
        *out = dflt;
        return CM_OK;
    }
    if (!json_is_number(v))
        return cm_fail(s->err, s->errlen, CM_EPARSE,
                       "%s: %s is %s, expected an integer (the %s): write it as a plain number",
                       s->path, key, cj_json_kind(v), what);
    char shown[32];
    bool too_small, too_large;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        snprintf(shown, sizeof shown, "%" JSON_INTEGER_FORMAT, x);
        too_small = x < min;
        too_large = x > max;
        if (!too_small && !too_large) *out = (long)x;
    } else {
        double x = json_real_value(v);
        snprintf(shown, sizeof shown, "%.17g", x);
        if (!isfinite(x) || x != floor(x))
            return cm_fail(s->err, s->errlen, CM_EPARSE,
                           "%s: %s must be an integer, got %s: fix \"%s\"", s->path, what, shown,
                           key);
        too_small = x < (double)min;
        too_large = x > (double)max;
        if (!too_small && !too_large) *out = (long)x;
    }
    if (too_small)
        return cm_fail(s->err, s->errlen, CM_EPARSE,
                       "%s: %s must be %s, got %s: fix \"%s\"", s->path, what,
                       min > 0 ? "a positive integer" : "zero or a positive integer", shown, key);
    if (too_large)
        return cm_fail(s->err, s->errlen, CM_EPARSE,
                       "%s: %s %s is too large (at most %ld): fix \"%s\"", s->path, what, shown,
                       max, key);
    return CM_OK;
}

/* Optional real field: absent -> dflt; present it must be a finite number in [min, max]. */
cm_status cj_read_real(const json_t *o, const char *const *keys, const char *what,
                           double dflt, double min, double max, double *out, const cj_src *s)
{
    const char *key = keys[0];
    const json_t *v = cj_first_of(o, keys, &key);
    if (!v) {
        *out = dflt;
        return CM_OK;
    }
    if (!json_is_number(v))
        return cm_fail(s->err, s->errlen, CM_EPARSE,
                       "%s: %s is %s, expected a number (the %s): write it as a plain number",
                       s->path, key, cj_json_kind(v), what);
    double x = json_number_value(v);
    if (!isfinite(x) || x < min || x > max)
        return cm_fail(s->err, s->errlen, CM_EPARSE,
                       "%s: %s must be between %g and %g, got %g: fix \"%s\"", s->path, what, min,
                       max, x, key);
    *out = x;
    return CM_OK;
}

/* Optional boolean (0/1 accepted, as some converters write them). */
cm_status cj_read_bool(const json_t *o, const char *key, bool dflt, bool *out, const cj_src *s)
{
    const json_t *v = cj_get(o, key);
    if (!v) {
        *out = dflt;
        return CM_OK;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return CM_OK;
    }
    if (json_is_number(v)) {
        *out = json_number_value(v) != 0;
        return CM_OK;
    }
    return cm_fail(s->err, s->errlen, CM_EPARSE,
                   "%s: %s is %s, expected true or false: write it without quotes", s->path, key,
                   cj_json_kind(v));
}

/* Optional string; present it must be a string. */
cm_status cj_read_str(const json_t *o, const char *const *keys, const char **out,
                          const cj_src *s)
{
    const char *key = keys[0];
    const json_t *v = cj_first_of(o, keys, &key);
    *out = NULL;
    if (!v) return CM_OK;
    if (!json_is_string(v))
        return cm_fail(s->err, s->errlen, CM_EPARSE, "%s: %s is %s, expected a string", s->path,
                       key, cj_json_kind(v));
    *out = json_string_value(v);
    return CM_OK;
}

const char *cj_get_str(const json_t *o, const char *key)
{
    const json_t *v = cj_get(o, key);
    return (v && json_is_string(v)) ? json_string_value(v) : NULL;
}
