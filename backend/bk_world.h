/*
 * bk_world.h — the processes of one backend run: one process alone, or the processes an MPI
 * launcher (Open MPI's mpirun, or Slurm's srun with PMIx) started on one or several nodes.
 *
 * A run is multi-process when plan was built with MPI (the `mpi` feature) and a launcher's
 * environment is present (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE or SLURM_NTASKS > 1); then
 * MPI_Init runs on the first bk_world_init and every process drives `per_proc` GPUs of its node.
 * Without MPI or a launcher the world is this process alone and every call below is the
 * one-process identity (a sum of one value is that value), so callers have one code path.
 *
 * MPI carries only host values: NCCL's unique ids (bootstrap, as NCCL's documentation shows for
 * MPI programs), timings reduced to the slowest GPU, memory figures, agreement on errors, and the
 * pipeline check's buffers. GPU traffic goes through NCCL.
 *
 * Plain C and MPI, no CUDA: tests/backend/test_world runs it under mpirun on machines without GPUs.
 */
#ifndef PLAN_BK_WORLD_H
#define PLAN_BK_WORLD_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef struct {
    bool mpi;        /* started by an MPI launcher and MPI_Init'ed */
    int procs, proc; /* processes in the run, this one's index (0: prints the report) */
    int node_procs, node_proc; /* processes on this node, this one's index among them */
    int nodes;       /* distinct nodes (hosts) */
} bk_world;

/* Whether this binary was built with MPI. */
bool bk_world_has_mpi(void);

/* Whether the environment says an MPI launcher started this process with more than one process
 * (without MPI support: whether it would have, so a caller can say MPI is missing). */
bool bk_world_launched(void);

/* Initialise once (later calls return the same world). A launcher without MPI support in this
 * build is an error naming the fix. */
cm_status bk_world_init(bk_world *out, char *err, size_t errlen);

/* Finalise MPI (once, at the end of a run; a no-op for one process). */
void bk_world_finalize(void);

/* End every process of the run now with `code` (MPI_Abort), or exit(code) alone. */
void bk_world_abort(int code);

/* Host-value collectives over all processes (in place). */
void bk_world_max(double *v, int n);
void bk_world_min(double *v, int n);
void bk_world_sum(double *v, int n);
void bk_world_bcast(void *buf, size_t bytes, int root);
void bk_world_barrier(void);
/* Point to point, for the pipeline check: `bytes` from process `from` to process `to`. */
void bk_world_send(const void *buf, size_t bytes, int to);
void bk_world_recv(void *buf, size_t bytes, int from);

#endif
