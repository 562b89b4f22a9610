/*
 * whole_file.h — output files written whole or not at all (DESIGN.md, Conventions).
 *
 * Every file plan writes (reports, charts, CSV, JSON profiles, traces, records) goes through
 * here: the bytes go to a temporary file beside the target, every write is checked, and the
 * target is replaced by rename() only once everything is on disk. A failed write (disk full, a
 * removed directory, an interrupted run) leaves the old file as it was and no partial file
 * behind, and the caller gets one line naming the file and the cause ("disk full" when it is).
 * "-" means standard output. A path that exists and is not a regular file (/dev/null,
 * /dev/full, a FIFO, a terminal) is written in place, with the same checks.
 */
#ifndef PLAN_WHOLE_FILE_H
#define PLAN_WHOLE_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "status.h"

typedef struct {
    FILE *f;          /* write here (fprintf, fwrite, csv_fwrite, json_dumpf ...) */
    char *path;       /* the target as given */
    char *tmp_path;   /* the temporary file, NULL when written in place */
    bool is_stdout;
    void *sink;       /* the descriptor under f and the first write error (whole_file.c) */
} whole_file;

/* Opens path ("-": stdout) for writing. On failure nothing was created. */
cm_status whole_file_open(whole_file *w, const char *path, char *err, size_t errlen);

/* Checks every write, flushes to disk and renames the temporary file over the target. On
 * failure the temporary file is removed and the target is untouched. Always releases w. */
cm_status whole_file_commit(whole_file *w, char *err, size_t errlen);

/* whole_file_commit in two steps, for one output made of several files (a Markdown report and
 * its charts): finish checks every write and syncs the temporary file (on failure it is removed
 * and w released); publish renames it over the target and releases w. Between the two,
 * whole_file_abort still removes it, so every file can be finished before any is published. */
cm_status whole_file_finish(whole_file *w, char *err, size_t errlen);
cm_status whole_file_publish(whole_file *w, char *err, size_t errlen);

/* Gives up: closes and removes the temporary file; the target is untouched. Safe on a w that
 * failed to open or was already committed. */
void whole_file_abort(whole_file *w);

/* Writes a JSON document whole (jansson's json_dumpf with flags; bytes as json_dump_file). */
cm_status whole_file_json(const json_t *j, const char *path, size_t flags, char *err,
                          size_t errlen);

/* The one message for a failed write: "writing 'path' failed: <strerror> (disk full)". */
cm_status whole_file_fail(const char *path, int errnum, char *err, size_t errlen);

/* Standard output at exit: flushed and checked, so `plan ... > /dev/full` fails loudly. */
cm_status whole_file_check_stdout(char *err, size_t errlen);

#endif
