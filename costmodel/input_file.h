/*
 * input_file.h — opening a file the user named as input (a model config.json, a system or
 * profile JSON, a sweep file, a trainer YAML, a results or calibrate CSV) so that an odd file
 * cannot hang or exhaust the process and every refusal names its real cause (issue 18).
 *
 * The file is opened non-blocking (a FIFO without a writer does not block), checked to be a
 * regular file (a directory, FIFO, socket or device such as /dev/zero is refused) and no larger
 * than a cap the caller gives; open errors are named by their cause ("no such file",
 * "permission denied"). `what` names the kind of file in messages ("system file"); `hint`, when
 * not NULL, is appended after "; " to the open and type errors (what to give instead).
 */
#ifndef PLAN_INPUT_FILE_H
#define PLAN_INPUT_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "status.h"

/* Caps by kind of file: far above any real file of that kind, far below what hurts. */
#define INPUT_FILE_JSON_MAX_BYTES (64L << 20)  /* system, profile, sweep, measurement JSON */
#define INPUT_FILE_YAML_MAX_BYTES (4L << 20)   /* trainer YAML */
#define INPUT_FILE_CSV_MAX_BYTES (256L << 20)  /* results and calibrate CSVs */

/* Reads the whole file into *text (malloc'ed, NUL-terminated; *len without the NUL). */
cm_status input_file_read(const char *path, const char *what, const char *hint, long max_bytes,
                          char **text, size_t *len, char *err, size_t errlen);

/* The same checks, then a stream on the file for a reader that parses as it goes; the stream
 * ends at max_bytes + 1 bytes at most only when the file grows while it is read, so a reader
 * that must be bounded counts what it reads (input_file_over_cap). */
cm_status input_file_open(const char *path, const char *what, const char *hint, long max_bytes,
                          FILE **out, char *err, size_t errlen);

/* For a reader of a stream from input_file_open: after `read_bytes` bytes, is it over the cap?
 * Fills the message when it is. */
int input_file_over_cap(const char *path, const char *what, long max_bytes, size_t read_bytes,
                        char *err, size_t errlen);

/* Copies a name read from an input (a file name, a config's display name) into a fixed field
 * of n bytes as valid UTF-8: cut before a character that does not fit, never inside one, and
 * each byte that is not part of a UTF-8 character (a file name in another encoding) as '?'.
 * A name cut inside a character dropped the whole "model" object from the JSON output and made
 * the emitted YAML unreadable (robust22). */
void input_text_copy(char *dst, size_t n, const char *src);

#endif
