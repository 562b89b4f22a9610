/*
 * test_world.c — the processes of a backend run (backend/bk_world.c), without GPUs. Run alone
 * it checks the one-process world (every collective leaves its value as it is); run under
 * `mpirun -np N` it checks what multi-process plan measure / calibrate rely on: N processes with
 * distinct indices 0..N-1, the per-node split, max/min/sum over all processes, a broadcast from
 * process 0 (how NCCL's unique id travels) and a point-to-point ring of a 3 MiB buffer (how the
 * pipeline check moves a send buffer to the receiver's process). Plain C: each failed check
 * prints and the exit status is 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_world.h"

static int failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "test_world: process %d: FAILED %s: ", w.proc, #cond);             \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

int main(void)
{
    char err[512];
    bk_world w;
    if (bk_world_init(&w, err, sizeof err) != CM_OK) {
        fprintf(stderr, "test_world: %s\n", err);
        return 1;
    }
    const char *env = getenv("OMPI_COMM_WORLD_SIZE");
    int expect = env && atoi(env) > 1 ? atoi(env) : 1;
    CHECK(w.procs == expect, "procs %d, launcher says %d", w.procs, expect);
    CHECK(w.mpi == (expect > 1), "mpi %d with %d processes", (int)w.mpi, expect);
    CHECK(w.proc >= 0 && w.proc < w.procs, "proc %d of %d", w.proc, w.procs);
    CHECK(w.node_proc >= 0 && w.node_proc < w.node_procs, "node proc %d of %d", w.node_proc,
          w.node_procs);
    CHECK(w.nodes >= 1 && w.nodes <= w.procs, "nodes %d", w.nodes);
    int n = w.procs;

    /* sum of 0..n-1 and of ones; max n-1; min 0: each index appears once. */
    double v[2] = {w.proc, 1};
    bk_world_sum(v, 2);
    CHECK(v[0] == n * (n - 1) / 2.0 && v[1] == n, "sum %g %g", v[0], v[1]);
    double mx = w.proc, mn = w.proc + 10.5;
    bk_world_max(&mx, 1);
    bk_world_min(&mn, 1);
    CHECK(mx == n - 1, "max %g", mx);
    CHECK(mn == 10.5, "min %g", mn);

    /* Broadcast of a 128-byte record (the size of ncclUniqueId) from process 0. */
    unsigned char id[128];
    for (int i = 0; i < 128; i++) id[i] = w.proc == 0 ? (unsigned char)(i * 7 + 3) : 0;
    bk_world_bcast(id, sizeof id, 0);
    int bad = 0;
    for (int i = 0; i < 128; i++) bad += id[i] != (unsigned char)(i * 7 + 3);
    CHECK(bad == 0, "%d broadcast bytes differ", bad);

    /* Ring: every process sends 3 MiB to the next one, which checks every byte. Even indices
     * send first, odd ones receive first, so blocking sends cannot deadlock. */
    if (n > 1) {
        size_t bytes = 3u << 20;
        unsigned char *a = malloc(bytes), *b = malloc(bytes);
        if (!a || !b) return 1;
        for (size_t i = 0; i < bytes; i++) a[i] = (unsigned char)(i * 31u + (unsigned)w.proc);
        int to = (w.proc + 1) % n, from = (w.proc + n - 1) % n;
        if (w.proc % 2 == 0) {
            bk_world_send(a, bytes, to);
            bk_world_recv(b, bytes, from);
        } else {
            bk_world_recv(b, bytes, from);
            bk_world_send(a, bytes, to);
        }
        size_t wrong = 0;
        for (size_t i = 0; i < bytes; i++) wrong += b[i] != (unsigned char)(i * 31u + (unsigned)from);
        CHECK(wrong == 0, "%zu of %zu ring bytes differ", wrong, bytes);
        free(a);
        free(b);
    }
    double f = failures;
    bk_world_sum(&f, 1);
    bk_world_barrier();
    if (w.proc == 0)
        printf("test_world: %d process%s, %d node%s: %s\n", n, n > 1 ? "es" : "", w.nodes,
               w.nodes > 1 ? "s" : "", f == 0 ? "ok" : "FAILED");
    bk_world_finalize();
    return failures ? 1 : 0;
}
