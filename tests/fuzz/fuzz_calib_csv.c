/*
 * fuzz_calib_csv.c — libFuzzer harness for the `plan calibrate` CSV reader of `plan fit`
 * (calib_csv_read): the input, as a file, is read; every accepted observation must be a
 * positive finite number (issue 18: NaN rows once became a NaN profile), and the fits run on
 * what was read, as plan fit does.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calib_csv.h"
#include "fuzz_input_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_positive(double x)
{
    if (!(isfinite(x) && x > 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size, ".csv");
    calib_csv c;
    char err[CM_ERRLEN];
    if (calib_csv_read(path, &c, err, sizeof err) == CM_OK) {
        system_spec sys;
        memset(&sys, 0, sizeof sys);
        sys.peak_bf16_flops_per_s = 989e12;
        sys.hbm_bandwidth_bytes_per_s = 3.35e12;
        sys.gemm_efficiency_max = 0.7;
        for (int i = 0; i < c.ngemm; i++) {
            check_positive(c.gemm[i].m);
            check_positive(c.gemm[i].n);
            check_positive(c.gemm[i].k);
            check_positive(c.gemm[i].time_s);
        }
        fit_gemm_result g;
        if (c.ngemm >= 3 && c.ngemm <= 64 &&
            fit_gemm(&sys, c.gemm, c.ngemm, &g, err, sizeof err) == CM_OK &&
            !(isfinite(g.efficiency) && isfinite(g.overhead_s)))
            abort();
        for (int k = 0; k < c.ncolls; k++) {
            for (int i = 0; i < c.colls[k].n; i++) {
                check_positive(c.colls[k].obs[i].bytes);
                check_positive(c.colls[k].obs[i].time_s);
            }
            system_collective_fit f;
            if (c.colls[k].n <= 64 &&
                fit_collective((collective_op)c.colls[k].op, c.colls[k].group_size,
                               c.colls[k].spans_nodes, c.colls[k].obs, c.colls[k].n, &f, err,
                               sizeof err) == CM_OK &&
                !(isfinite(f.alpha_s) && isfinite(f.busbw_bytes_per_s) && f.busbw_bytes_per_s > 0))
                abort();
        }
    }
    calib_csv_free(&c);
    return 0;
}
