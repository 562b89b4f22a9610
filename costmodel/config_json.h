/*
 * config_json.h — typed reads of a Hugging Face config.json (model.c): a key may be absent or
 * null (transformers writes null for "not used"); every value is checked on the JSON value
 * itself (type, integer, range) before it is stored, and a failure names the key and the file.
 */
#ifndef PLAN_CONFIG_JSON_H
#define PLAN_CONFIG_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "status.h"

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Where a value came from, for messages. */
typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} cj_src;

const json_t *cj_get(const json_t *o, const char *key);
const json_t *cj_first_of(const json_t *o, const char *const *keys, const char **used);
bool cj_get_num(const json_t *o, double *out, const char *const *keys);
const char *cj_json_kind(const json_t *v);
cm_status cj_read_int(const json_t *o, const char *const *keys, const char *what,
                          bool required, long dflt, long min, long max, long *out, const cj_src *s);
cm_status cj_read_real(const json_t *o, const char *const *keys, const char *what,
                           double dflt, double min, double max, double *out, const cj_src *s);
cm_status cj_read_bool(const json_t *o, const char *key, bool dflt, bool *out, const cj_src *s);
cm_status cj_read_str(const json_t *o, const char *const *keys, const char **out,
                          const cj_src *s);
const char *cj_get_str(const json_t *o, const char *key);

#endif
