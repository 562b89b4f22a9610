/*
 * fuzz_input_file.h — for the harnesses of readers that take a path (profiles, results and
 * calibrate CSVs): the input is written to one temporary file per process, rewritten for each
 * run and removed at exit, so the reader runs exactly as on a user's file (the checks of
 * costmodel/input_file.h included).
 */
#ifndef PLAN_FUZZ_INPUT_FILE_H
#define PLAN_FUZZ_INPUT_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_path[256];

static void fuzz_input_file_remove(void) { unlink(fuzz_path); }

/* The path holding data; aborts when it cannot be written (not an input's fault). */
static const char *fuzz_input_file(const uint8_t *data, size_t size, const char *suffix)
{
    if (!fuzz_path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(fuzz_path, sizeof fuzz_path, "%s/plan-fuzz-%ld%s", dir && *dir ? dir : "/tmp",
                 (long)getpid(), suffix);
        atexit(fuzz_input_file_remove);
    }
    FILE *f = fopen(fuzz_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
    return fuzz_path;
}

#endif
