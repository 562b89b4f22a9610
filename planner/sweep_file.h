/*
 * sweep_file.h — the sweep file of `plan bench --sweep FILE`: JSON with any of "models",
 * "systems", "frameworks" (lists of names), "gpus" (list of GPU counts), "seq" and "gbs".
 * Moved out of cmd_bench.c so the fuzz harness reads it as plan bench does. Every name is
 * checked where it can be here (frameworks: issue 18, an unknown one was a write through an
 * uninitialised index); models and systems are resolved by the sweep before it writes anything.
 * Numbers are range-checked on the JSON integer, before they are narrowed to int.
 */
#ifndef PLAN_SWEEP_FILE_H
#define PLAN_SWEEP_FILE_H

#include <stddef.h>

#include "status.h"

#define SWEEP_FILE_MAX_LIST 64

typedef struct {
    char *names[SWEEP_FILE_MAX_LIST];
    int n; /* 0: the key is absent */
} sweep_file_list;

typedef struct {
    sweep_file_list models, systems, frameworks;
    int gpus[SWEEP_FILE_MAX_LIST];
    int ngpus;      /* 0: absent */
    int seq, gbs;   /* 0: absent */
} sweep_file;

/* Parses text (label names it in messages); *out owns its strings: sweep_file_free, also after
 * an error. */
cm_status sweep_file_parse(const char *text, size_t len, const char *label, sweep_file *out,
                           char *err, size_t errlen);

/* Reads path (input_file.h: a regular file, at most INPUT_FILE_JSON_MAX_BYTES) and parses it. */
cm_status sweep_file_read(const char *path, sweep_file *out, char *err, size_t errlen);

void sweep_file_free(sweep_file *s);

#endif
