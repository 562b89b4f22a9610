/*
 * bk_world.c — see bk_world.h. MPI calls follow the MPI 3.1 standard (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED for the processes of one node); Open MPI's mpirun and Slurm's srun
 * (--mpi=pmix) set the environment variables read by bk_world_launched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_world.h"

#ifdef PLAN_HAVE_MPI
#include <mpi.h>
#endif

static bk_world world = {.mpi = false, .procs = 1, .proc = 0, .node_procs = 1, .node_proc = 0,
                         .nodes = 1};
static bool started;
#ifdef PLAN_HAVE_MPI
static bool finalized;
#endif

bool bk_world_has_mpi(void)
{
#ifdef PLAN_HAVE_MPI
    return true;
#else
    return false;
#endif
}

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : 0;
}

bool bk_world_launched(void)
{
    /* Open MPI's mpirun; PMIx launchers (srun --mpi=pmix, prterun); PMI-1/2 launchers. */
    if (env_int("OMPI_COMM_WORLD_SIZE") > 1) return true;
    if (getenv("PMIX_RANK") && env_int("SLURM_NTASKS") > 1) return true;
    if (env_int("PMI_SIZE") > 1) return true;
    if (getenv("PMIX_RANK") && !getenv("SLURM_NTASKS")) return true;
    return false;
}

cm_status bk_world_init(bk_world *out, char *err, size_t errlen)
{
    if (started) {
        *out = world;
        return CM_OK;
    }
    if (!bk_world_launched()) {
        started = true;
        *out = world;
        return CM_OK;
    }
#ifndef PLAN_HAVE_MPI
    (void)err;
    (void)errlen;
    return cm_fail(err, errlen, CM_EINVAL,
                   "started by an MPI launcher (mpirun/srun), but this plan was built without "
                   "MPI: install Open MPI (libopenmpi-dev) and rebuild (meson setup -Dmpi="
                   "enabled), or run one process that drives all local GPUs");
#else
    int provided = 0, inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return cm_fail(err, errlen, CM_EIO, "MPI_Init_thread failed: check the launcher (mpirun "
                                            "or srun --mpi=pmix) and the MPI installation");
    world.mpi = true;
    MPI_Comm_size(MPI_COMM_WORLD, &world.procs);
    MPI_Comm_rank(MPI_COMM_WORLD, &world.proc);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.proc, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &world.node_procs);
    MPI_Comm_rank(node, &world.node_proc);
    MPI_Comm_free(&node);
    int first = world.node_proc == 0;
    MPI_Allreduce(&first, &world.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    started = true;
    *out = world;
    return CM_OK;
#endif
}

void bk_world_finalize(void)
{
#ifdef PLAN_HAVE_MPI
    if (world.mpi && !finalized) {
        MPI_Finalize();
        finalized = true;
    }
#endif
}

void bk_world_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
#ifdef PLAN_HAVE_MPI
    if (world.mpi && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code);
}

#ifdef PLAN_HAVE_MPI
static void reduce(double *v, int n, MPI_Op op)
{
    if (world.mpi && !finalized && n > 0)
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op, MPI_COMM_WORLD);
}
void bk_world_max(double *v, int n) { reduce(v, n, MPI_MAX); }
void bk_world_min(double *v, int n) { reduce(v, n, MPI_MIN); }
void bk_world_sum(double *v, int n) { reduce(v, n, MPI_SUM); }

/* MPI counts are ints: large buffers go in pieces of 1 GiB. */
#define PIECE ((size_t)1 << 30)

void bk_world_bcast(void *buf, size_t bytes, int root)
{
    if (!world.mpi || finalized) return;
    for (size_t o = 0; o < bytes; o += PIECE) {
        size_t n = bytes - o < PIECE ? bytes - o : PIECE;
        MPI_Bcast((char *)buf + o, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
    }
}

void bk_world_barrier(void)
{
    if (world.mpi && !finalized) MPI_Barrier(MPI_COMM_WORLD);
}

void bk_world_send(const void *buf, size_t bytes, int to)
{
    if (!world.mpi || finalized) return;
    for (size_t o = 0; o < bytes; o += PIECE) {
        size_t n = bytes - o < PIECE ? bytes - o : PIECE;
        MPI_Send((const char *)buf + o, (int)n, MPI_BYTE, to, 7, MPI_COMM_WORLD);
    }
}

void bk_world_recv(void *buf, size_t bytes, int from)
{
    if (!world.mpi || finalized) return;
    for (size_t o = 0; o < bytes; o += PIECE) {
        size_t n = bytes - o < PIECE ? bytes - o : PIECE;
        MPI_Recv((char *)buf + o, (int)n, MPI_BYTE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}
#else
/* One process: every collective over one value leaves it as it is. */
void bk_world_max(double *v, int n) { (void)v, (void)n; }
void bk_world_min(double *v, int n) { (void)v, (void)n; }
void bk_world_sum(double *v, int n) { (void)v, (void)n; }
void bk_world_bcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; }
void bk_world_barrier(void) {}
void bk_world_send(const void *buf, size_t bytes, int to) { (void)buf, (void)bytes, (void)to; }
void bk_world_recv(void *buf, size_t bytes, int from) { (void)buf, (void)bytes, (void)from; }
#endif
