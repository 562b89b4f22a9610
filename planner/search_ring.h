/*
 * search_ring.h — the chunks of listed layouts between the search's enumerating thread and its
 * workers (issue 21): the enumeration fills a chunk, publishes it and takes a free one; a
 * worker takes the oldest published chunk, evaluates it and frees it. The enumerating thread
 * evaluates a chunk itself while none is free, and joins the workers when the list ends, so a
 * few chunks (not the whole list) are ever held. search.c says what a chunk's evaluation is.
 */
#ifndef PLAN_SEARCH_RING_H
#define PLAN_SEARCH_RING_H

#include "layout.h"

/* Layouts a chunk holds: neighbours in the list share layer costs and memory figures (each
 * worker's caches), so a chunk is long enough to keep them together (callgrind, DeepSeek-V3
 * at 16384 on two threads). */
enum { SEARCH_CHUNK_LAYOUTS = 1024 };

typedef struct {
    long seq0; /* the list position of v[0] */
    int n;
    layout v[SEARCH_CHUNK_LAYOUTS];
} search_chunk;

typedef struct search_ring search_ring;

/* Evaluates a chunk's layouts on a worker (the caller's). */
typedef void (*search_chunk_run)(void *worker, const search_chunk *ch);

/* A ring of n_slots chunks, all free but the first (search_ring_first's, being filled); NULL
 * without the memory. */
search_ring *search_ring_new(int n_slots, search_chunk_run run);
void search_ring_free(search_ring *g);
search_chunk *search_ring_first(search_ring *g);

/* Publishes the filled chunk and returns a free one to fill next (its seq0 set to next_seq0,
 * empty); while no chunk is free, evaluates the oldest published one on self. */
search_chunk *search_ring_publish(search_ring *g, search_chunk *filled, void *self,
                                  long next_seq0);

/* A worker thread's loop: evaluates published chunks on worker until the list has ended and
 * none is left. */
void search_ring_work(search_ring *g, void *worker);

/* The list ended: the last chunk published (if it holds any layouts), then chunks evaluated on
 * self until none is left. Returns when every published chunk has been taken. */
void search_ring_finish(search_ring *g, search_chunk *last, void *self);

/* How many threads evaluate a search's list: PLAN_THREADS, else the cores online (at most
 * 16). */
int search_ring_threads(void);

#endif
