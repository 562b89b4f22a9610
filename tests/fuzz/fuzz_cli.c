/*
 * fuzz_cli.c — libFuzzer harness for the shared argument parser cli_parse() (getopt_long).
 * The input is split into arguments at NUL and newline bytes (at most 64), after "plan"; the
 * parser runs twice on each input so state left in getopt by one call cannot leak into the
 * next. The parser writes its one-line errors to stderr: run with -close_fd_mask=2.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[66];
    int argc = 0;
    argv[argc++] = "plan";
    char *p = buf, *end = buf + size;
    while (p < end && argc < 65) {
        argv[argc++] = p;
        while (p < end && *p && *p != '\n') p++;
        *p++ = '\0';
    }
    argv[argc] = NULL;
    for (int round = 0; round < 2; round++) {
        cli_options o;
        bool help;
        /* getopt permutes argv; give it a fresh copy of the pointers each time */
        char *args[66];
        memcpy(args, argv, sizeof args);
        if (cli_parse(argc, args, &o, &help) == 0) {
            volatile long sink = o.gpus + o.top + o.layout.tp + o.layout.pp + o.layout.dp +
                                 o.training.seq_len + (long)o.emit + (o.model ? o.model[0] : 0);
            (void)sink;
        }
    }
    free(buf);
    return 0;
}
