/*
 * search_ring.c — the chunks between the search's enumerating thread and its workers
 * (search_ring.h): a mutex, one condition variable (a chunk published or freed, or the list
 * ended) and each chunk's state; published chunks are taken oldest first.
 */
#include "search_ring.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef enum { SLOT_FREE, SLOT_FILLING, SLOT_FULL, SLOT_WORKING } slot_state;

struct search_ring {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a chunk was published or freed, or the list ended */
    search_chunk_run run;
    search_chunk *slot;
    slot_state *state;
    int n_slots;
    int *fifo; /* the published chunks' slots, oldest first (a ring of n_slots) */
    int head, count;
    bool done; /* the list ended: no more chunks */
};

search_ring *search_ring_new(int n_slots, search_chunk_run run)
{
    search_ring *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->run = run;
    g->n_slots = n_slots;
    g->slot = malloc((size_t)n_slots * sizeof *g->slot);
    g->state = calloc((size_t)n_slots, sizeof *g->state);
    g->fifo = calloc((size_t)n_slots, sizeof *g->fifo);
    bool mu = g->slot && g->state && g->fifo && pthread_mutex_init(&g->mu, NULL) == 0;
    if (!mu || pthread_cond_init(&g->cv, NULL) != 0) {
        if (mu) pthread_mutex_destroy(&g->mu);
        free(g->slot);
        free(g->state);
        free(g->fifo);
        free(g);
        return NULL;
    }
    g->state[0] = SLOT_FILLING;
    g->slot[0].seq0 = 0;
    g->slot[0].n = 0;
    return g;
}

void search_ring_free(search_ring *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->slot);
    free(g->state);
    free(g->fifo);
    free(g);
}

search_chunk *search_ring_first(search_ring *g) { return &g->slot[0]; }

/* Takes the oldest published chunk (the lock held): its slot, or -1 if none. */
static int take(search_ring *g)
{
    if (g->count == 0) return -1;
    int s = g->fifo[g->head];
    g->head = (g->head + 1) % g->n_slots;
    g->count--;
    g->state[s] = SLOT_WORKING;
    return s;
}

/* Publishes the chunk (the lock held). */
static void put(search_ring *g, const search_chunk *ch)
{
    int s = (int)(ch - g->slot);
    g->state[s] = SLOT_FULL;
    g->fifo[(g->head + g->count++) % g->n_slots] = s;
    pthread_cond_broadcast(&g->cv);
}

/* Evaluates chunk s on worker (the lock held on entry and on return, released meanwhile). */
static void run(search_ring *g, int s, void *worker)
{
    pthread_mutex_unlock(&g->mu);
    g->run(worker, &g->slot[s]);
    pthread_mutex_lock(&g->mu);
    g->state[s] = SLOT_FREE;
    pthread_cond_broadcast(&g->cv); /* the enumerating thread may wait for a free chunk */
}

search_chunk *search_ring_publish(search_ring *g, search_chunk *filled, void *self,
                                  long next_seq0)
{
    pthread_mutex_lock(&g->mu);
    put(g, filled);
    search_chunk *next = NULL;
    while (!next) {
        for (int k = 0; k < g->n_slots && !next; k++)
            if (g->state[k] == SLOT_FREE) {
                g->state[k] = SLOT_FILLING;
                next = &g->slot[k];
            }
        if (next) break;
        int s = take(g);
        if (s >= 0) run(g, s, self);
        else pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    next->seq0 = next_seq0;
    next->n = 0;
    return next;
}

/* Evaluates published chunks on worker until the list has ended and none is left (the lock
 * held on entry and on return). */
static void work(search_ring *g, void *worker)
{
    for (;;) {
        int s = take(g);
        if (s >= 0) {
            run(g, s, worker);
        } else {
            if (g->done) return;
            pthread_cond_wait(&g->cv, &g->mu);
        }
    }
}

void search_ring_work(search_ring *g, void *worker)
{
    pthread_mutex_lock(&g->mu);
    work(g, worker);
    pthread_mutex_unlock(&g->mu);
}

void search_ring_finish(search_ring *g, search_chunk *last, void *self)
{
    pthread_mutex_lock(&g->mu);
    if (last->n > 0) put(g, last);
    else g->state[last - g->slot] = SLOT_FREE;
    g->done = true;
    pthread_cond_broadcast(&g->cv);
    work(g, self);
    pthread_mutex_unlock(&g->mu);
}

int search_ring_threads(void)
{
    const char *env = getenv("PLAN_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}
