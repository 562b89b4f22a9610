/*
 * nccl_tests.h — reads the output of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf, alltoall_perf, sendrecv_perf) as collective measurements, so a user with
 * nccl-tests results from their own cluster gets a calibration profile from `plan fit` without
 * our backend.
 *
 * Two formats, as nccl-tests writes them (src/util.cu of nccl-tests 2.x):
 *  - the text table on stdout: a "# Collective test starting: NAME" line (2.13+), "#  Rank ..."
 *    lines (one per rank and process, with the host name after "on"), then one row per size:
 *    size (B), count, type, redop, root, then out-of-place time (us), algbw, busbw (GB/s, 1e9
 *    B/s), #wrong, and the same for in-place (more columns with -a per-iteration reports);
 *    several tests may follow each other in one log;
 *  - the -J FILE.json document (JSON version 3): "args" (argv: argv[0] names the test),
 *    "config" (nthreads, ngpus), "devices" (one entry per process, each with "hostname"),
 *    "results" (one object per size: "size", "out_of_place" / "in_place" with "time" or
 *    "cpu_time" in us).
 * nccl-tests' "size" is the same buffer size our collective table uses (collective.h). The
 * out-of-place time is taken (in-place where out-of-place is absent). Units become SI: us ->
 * s; bus bandwidth is not read, it follows from size and time with the bus factors.
 * Library code: nothing printed; the caller owns the result and frees it.
 */
#ifndef PLAN_NCCL_TESTS_H
#define PLAN_NCCL_TESTS_H

#include <stdbool.h>
#include <stddef.h>

#include "collective.h"
#include "fit.h"
#include "status.h"
#include "system.h"

#define NCCL_TESTS_MAX_RUNS 32
#define NCCL_TESTS_MAX_HOSTS 64

/* One test run: one operation over one set of ranks. */
typedef struct {
    collective_op op;
    int ranks;                 /* group size: the ranks the test ran on */
    int hosts;                 /* distinct host names among them (at most NCCL_TESTS_MAX_HOSTS
                                  are told apart) */
    fit_collective_obs *obs;   /* bytes (nccl-tests "size") and time in seconds */
    int n, cap;
} nccl_tests_run;

typedef struct {
    nccl_tests_run runs[NCCL_TESTS_MAX_RUNS];
    int nruns;
    int skipped_runs;          /* tests of operations the cost model has no row for (broadcast,
                                  reduce, gather, scatter, alltoallv, hypercube) */
} nccl_tests_file;

/* Does the file at path look like nccl-tests output (text log or -J JSON)? False for a
 * `plan calibrate` CSV or an unreadable file. */
bool nccl_tests_detect(const char *path);

/* Read every test of the file at path into out (zeroed first). CM_EPARSE when no usable test
 * is found, with err saying why. */
cm_status nccl_tests_read(const char *path, nccl_tests_file *out, char *err, size_t errlen);
void nccl_tests_free(nccl_tests_file *f);

/* Does the run cross the scale-up domain (the fit's "inter" span)? More ranks than a domain
 * holds always do; on rack-scale domains (NVL72) fewer never do (a multi-host run that fits in
 * a domain is assumed to have been placed inside one); on host-sized domains (DGX, HGX) a run
 * does when its ranks sit on more than one host. */
bool nccl_tests_spans_domains(const nccl_tests_run *r, const system_spec *sys);

/* The cost model's operation of an nccl-tests program name ("all_reduce_perf",
 * "./build/alltoall_perf", "all_gather"), or -1. */
int nccl_tests_op_of_name(const char *name);

#endif
