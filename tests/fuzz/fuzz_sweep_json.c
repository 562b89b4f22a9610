/*
 * fuzz_sweep_json.c — libFuzzer harness for the sweep file of `plan bench --sweep`
 * (sweep_file_parse, what sweep_file_read runs on the file's text). An accepted sweep must hold
 * only known frameworks and in-range counts: the properties cmd_bench relies on (an unknown
 * framework was once a write through an uninitialised index).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli_number.h"
#include "layout.h"
#include "sweep_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sweep_file s;
    char err[CM_ERRLEN];
    if (sweep_file_parse((const char *)data, size, "fuzz", &s, err, sizeof err) == CM_OK) {
        for (int i = 0; i < s.frameworks.n; i++) {
            layout_framework fw;
            if (!layout_parse_framework(s.frameworks.names[i], &fw)) abort();
        }
        for (int i = 0; i < s.ngpus; i++)
            if (s.gpus[i] < 1 || s.gpus[i] > CLI_MAX_GPUS) abort();
        if (s.seq < 0 || s.seq > CLI_MAX_SEQ || s.gbs < 0 || s.gbs > CLI_MAX_GBS) abort();
    }
    sweep_file_free(&s);
    return 0;
}
