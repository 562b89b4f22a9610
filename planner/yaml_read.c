/*
 * yaml_read.c — typed lookups in a libyaml document (yaml_read.h), the way the trainers' YAML
 * 1.1 reader types scalars; out of check_yaml.c, which reads a trainer config with them.
 */
#include "yaml_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cm_status yr_bad(yr_reader *r, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[CM_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return cm_fail(r->err, r->errlen, CM_EPARSE, "%lu:%lu: %s",
                       (unsigned long)n->start_mark.line + 1,
                       (unsigned long)n->start_mark.column + 1, msg);
    return cm_fail(r->err, r->errlen, CM_EPARSE, "%s", msg);
}

const char *yr_scalar_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

bool yr_is_plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool yr_is_null(const yaml_node_t *n)
{
    if (!yr_is_plain(n)) return false;
    const char *s = yr_scalar_text(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

/* A short printable rendering of a scalar for messages (control bytes become '?'). */
void yr_shown(const yaml_node_t *n, char *out, size_t len)
{
    if (n->type != YAML_SCALAR_NODE) {
        snprintf(out, len, "%s", n->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
        return;
    }
    const char *s = yr_scalar_text(n);
    size_t i = 0;
    out[i++] = '\'';
    for (; *s && i + 5 < len; s++) out[i++] = (*s >= 32 && *s < 127) ? *s : '?';
    if (*s) {
        out[i++] = '.';
        out[i++] = '.';
    }
    out[i++] = '\'';
    out[i] = '\0';
}

/* Child `key` of mapping node m (the last one when a key repeats, as PyYAML does); NULL if
 * absent. */
const yaml_node_t *yr_child(yr_reader *r, const yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE) return NULL;
    const yaml_node_t *found = NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(r->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(yr_scalar_text(k), key))
            found = yaml_document_get_node(r->doc, p->value);
    }
    return found;
}

/* A section: absent or null is NULL with CM_OK; anything but a mapping is malformed. */
cm_status yr_section(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                     const yaml_node_t **out)
{
    const yaml_node_t *n = yr_child(r, m, key);
    *out = NULL;
    if (!n || yr_is_null(n)) return CM_OK;
    if (n->type != YAML_MAPPING_NODE) {
        char v[64];
        yr_shown(n, v, sizeof v);
        return yr_bad(r, n, "%s must be a mapping of settings, got %s: fix the indentation", path,
                      v);
    }
    *out = n;
    return CM_OK;
}

/* Integer in [lo, hi]. *set says whether it was given (absent or null leaves *out alone). */
cm_status yr_get_int(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                     long lo, long hi, int *out, bool *set)
{
    const yaml_node_t *n = yr_child(r, m, key);
    if (set) *set = false;
    if (!n || yr_is_null(n)) return CM_OK;
    char v[64];
    yr_shown(n, v, sizeof v);
    if (!yr_is_plain(n))
        return yr_bad(r, n, "%s must be an integer, got %s%s: write a plain number", path, v,
                   n->type == YAML_SCALAR_NODE ? " (quoted: the trainer would read a string)"
                                               : "");
    const char *s = yr_scalar_text(n);
    /* A leading zero splits the YAML versions: 1.2 (core schema) reads 010 as decimal 10,
     * PyYAML (YAML 1.1, what the trainers load configs with) as octal 8. Neither is picked
     * silently (issue 18). */
    const char *digits = s + (*s == '-' || *s == '+');
    if (digits[0] == '0' && digits[1] >= '0' && digits[1] <= '9')
        return yr_bad(r, n, "%s is %s: with a leading zero YAML 1.2 reads it as decimal, but the "
                   "trainer's YAML 1.1 yr_reader (PyYAML) as octal: write it without the leading "
                   "zero", path, v);
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return yr_bad(r, n, "%s must be an integer, got %s: fix the value", path, v);
    if (x < lo || x > hi)
        return yr_bad(r, n, "%s must be between %ld and %ld, got %ld: fix the value", path, lo, hi,
                   x);
    *out = (int)x;
    if (set) *set = true;
    return CM_OK;
}

/* YAML 1.1 booleans, as PyYAML reads them. */
cm_status yr_get_bool(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                      bool *out, bool *set)
{
    const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    const yaml_node_t *n = yr_child(r, m, key);
    if (set) *set = false;
    if (!n || yr_is_null(n)) return CM_OK;
    if (yr_is_plain(n)) {
        for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
            if (!strcmp(yr_scalar_text(n), yes[i])) {
                *out = true;
                if (set) *set = true;
                return CM_OK;
            }
            if (!strcmp(yr_scalar_text(n), no[i])) {
                *out = false;
                if (set) *set = true;
                return CM_OK;
            }
        }
    }
    char v[64];
    yr_shown(n, v, sizeof v);
    return yr_bad(r, n, "%s must be true or false, got %s: fix the value", path, v);
}

/* A string (any scalar style); NULL when absent or null. */
cm_status yr_get_str(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                     const char **out)
{
    const yaml_node_t *n = yr_child(r, m, key);
    *out = NULL;
    if (!n || yr_is_null(n)) return CM_OK;
    if (n->type != YAML_SCALAR_NODE)
        return yr_bad(r, n, "%s must be a string, got %s: fix the value", path,
                   n->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
    *out = yr_scalar_text(n);
    return CM_OK;
}
