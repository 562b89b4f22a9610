/*
 * yaml_read.h — typed lookups in a libyaml document for plan check's trainer-YAML reader
 * (check_yaml.c). Scalars are typed the way PyYAML / OmegaConf read them (YAML 1.1 booleans,
 * plain "null"/"~"; a quoted number is an error: the trainer would get a string), and every
 * error names the file position and the key's path. Split out of check_yaml.c so that the
 * reader of the schema and these primitives each stay one concept (and under 800 lines).
 */
#ifndef PLAN_YAML_READ_H
#define PLAN_YAML_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "status.h"

typedef struct {
    yaml_document_t *doc;
    char *err;
    size_t errlen;
} yr_reader;

/* CM_EPARSE with "LINE:COL: message" (n's position) in r->err */
cm_status yr_bad(yr_reader *r, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *yr_scalar_text(const yaml_node_t *n);
bool yr_is_plain(const yaml_node_t *n);
bool yr_is_null(const yaml_node_t *n);
/* a short printable rendering of a node for messages */
void yr_shown(const yaml_node_t *n, char *out, size_t len);
/* child `key` of mapping m (the last when a key repeats, as PyYAML does); NULL if absent */
const yaml_node_t *yr_child(yr_reader *r, const yaml_node_t *m, const char *key);
/* a section: absent or null is NULL with CM_OK; anything but a mapping is malformed */
cm_status yr_section(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                     const yaml_node_t **out);
/* integer in [lo, hi]; *set says whether it was given (absent or null leaves *out alone) */
cm_status yr_get_int(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                     long lo, long hi, int *out, bool *set);
/* YAML 1.1 booleans, as PyYAML reads them */
cm_status yr_get_bool(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                      bool *out, bool *set);
/* a string (any scalar style); NULL when absent or null */
cm_status yr_get_str(yr_reader *r, const yaml_node_t *m, const char *key, const char *path,
                     const char **out);

#endif
