/*
 * fuzz_profile_json.c — libFuzzer harness for the calibration-profile reader (issue 18): the
 * input, as a file, is overlaid on the h100 preset (profile_overlay, what --calibration runs)
 * and loaded as a system (profile_load_system, what --system FILE runs: its calibration_of
 * chain is followed through presets and paths, cycles refused). An accepted system's derived
 * figures must be computable without undefined behaviour.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input_file.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir) abort();
    const char *path = fuzz_input_file(data, size, ".json");
    char err[CM_ERRLEN];
    static system_spec h100;
    static int loaded;
    if (!loaded++ && profile_load_system("h100", dir, &h100, err, sizeof err) != CM_OK) abort();
    system_spec sys = h100;
    if (profile_overlay(path, &sys, err, sizeof err) == CM_OK) {
        volatile double sink = system_inter_bandwidth_per_gpu(&sys);
        (void)sink;
    }
    if (profile_load_system(path, dir, &sys, err, sizeof err) == CM_OK) {
        volatile double sink = system_inter_bandwidth_per_gpu(&sys);
        (void)sink;
    }
    return 0;
}
