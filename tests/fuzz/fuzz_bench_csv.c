/*
 * fuzz_bench_csv.c — libFuzzer harness for the `plan bench` results reader (bench_csv_read,
 * what `plan bench --compare` and `plan report --bench` run): the input, as a file, is read;
 * accepted rows are joined with themselves as --compare does.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench_csv.h"
#include "fuzz_input_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size, ".csv");
    bench_row *rows;
    char err[512];
    int n = bench_csv_read(path, &rows, err, sizeof err);
    if (n < 0) return 0;
    int same = 0;
    for (int i = 0; i < n && i < 64; i++)
        same += bench_row_same_layout(&rows[i], &rows[0]) + bench_row_same_config(&rows[i], &rows[0]);
    free(rows);
    if (n > 0 && same < 2) abort(); /* a row is the same layout and config as itself */
    return 0;
}
