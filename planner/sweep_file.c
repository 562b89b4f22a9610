/*
 * sweep_file.c — see sweep_file.h.
 */
#include "sweep_file.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli_number.h"
#include "input_file.h"
#include "layout.h"

static cm_status read_names(const json_t *root, const char *key, const char *label,
                            sweep_file_list *out, char *err, size_t errlen)
{
    const json_t *a = json_object_get(root, key);
    if (!a) return CM_OK;
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > SWEEP_FILE_MAX_LIST)
        return cm_fail(err, errlen, CM_EPARSE,
                       "sweep file '%s': \"%s\" must be a list of 1 to %d names", label, key,
                       SWEEP_FILE_MAX_LIST);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_string(v))
            return cm_fail(err, errlen, CM_EPARSE, "sweep file '%s': \"%s\" holds a non-string",
                           label, key);
        const char *name = json_string_value(v);
        layout_framework fw;
        if (!strcmp(key, "frameworks") && !layout_parse_framework(name, &fw))
            return cm_fail(err, errlen, CM_EINVAL,
                           "sweep file '%s': unknown framework '%.40s' in \"frameworks\": the "
                           "frameworks are fsdp2, megatron and torchtitan",
                           label, name);
        if (!(out->names[out->n] = strdup(name)))
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory reading '%s'", label);
        out->n++;
    }
    return CM_OK;
}

static cm_status read_int(const json_t *root, const char *key, long hi, const char *label,
                          int *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(root, key);
    if (!v) return CM_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > hi)
        return cm_fail(err, errlen, CM_EINVAL,
                       "sweep file '%s': \"%s\" must be an integer between 1 and %ld", label, key,
                       hi);
    *out = (int)json_integer_value(v);
    return CM_OK;
}

static cm_status from_json(const json_t *root, const char *label, sweep_file *out, char *err,
                           size_t errlen)
{
    cm_status st;
    if ((st = read_names(root, "models", label, &out->models, err, errlen)) != CM_OK ||
        (st = read_names(root, "systems", label, &out->systems, err, errlen)) != CM_OK ||
        (st = read_names(root, "frameworks", label, &out->frameworks, err, errlen)) != CM_OK)
        return st;
    const json_t *g = json_object_get(root, "gpus");
    if (g) {
        if (!json_is_array(g) || json_array_size(g) == 0 || json_array_size(g) > SWEEP_FILE_MAX_LIST)
            return cm_fail(err, errlen, CM_EPARSE,
                           "sweep file '%s': \"gpus\" must be a list of 1 to %d GPU counts", label,
                           SWEEP_FILE_MAX_LIST);
        for (size_t i = 0; i < json_array_size(g); i++) {
            const json_t *v = json_array_get(g, i);
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > CLI_MAX_GPUS)
                return cm_fail(err, errlen, CM_EINVAL,
                               "sweep file '%s': \"gpus\" must hold integers between 1 and %ld",
                               label, CLI_MAX_GPUS);
            out->gpus[out->ngpus++] = (int)json_integer_value(v);
        }
    }
    if ((st = read_int(root, "seq", CLI_MAX_SEQ, label, &out->seq, err, errlen)) != CM_OK)
        return st;
    return read_int(root, "gbs", CLI_MAX_GBS, label, &out->gbs, err, errlen);
}

void sweep_file_free(sweep_file *s)
{
    sweep_file_list *lists[3] = {&s->models, &s->systems, &s->frameworks};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < lists[k]->n; i++) free(lists[k]->names[i]);
    memset(s, 0, sizeof *s);
}

cm_status sweep_file_parse(const char *text, size_t len, const char *label, sweep_file *out,
                           char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root || !json_is_object(root)) {
        cm_status st = cm_fail(err, errlen, CM_EPARSE,
                               "sweep file '%s' is not a JSON object (%s): see plan bench --help",
                               label, root ? "not an object" : je.text);
        json_decref(root);
        return st;
    }
    cm_status st = from_json(root, label, out, err, errlen);
    json_decref(root);
    if (st != CM_OK) sweep_file_free(out);
    return st;
}

cm_status sweep_file_read(const char *path, sweep_file *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    cm_status st = input_file_read(path, "sweep file", NULL, INPUT_FILE_JSON_MAX_BYTES, &text,
                                   &len, err, errlen);
    if (st != CM_OK) return st;
    st = sweep_file_parse(text, len, path, out, err, errlen);
    free(text);
    return st;
}
