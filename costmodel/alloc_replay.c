/*
 * alloc_replay.c — the caching allocator's replay (alloc_replay.h): blocks in segments, a
 * best-fit search over the free blocks of the request's pool and stream, splitting and merging
 * as c10/cuda/CUDACachingAllocator.cpp (001074d2) does. The free blocks are kept in one dense
 * array (a linear best-fit scan: a step's few thousand requests over a few thousand blocks).
 */
#include "alloc_replay.h"

#include <stdlib.h>

enum {
    MIN_BLOCK_BYTES = 512,       /* kMinBlockSize */
};
static const uint64_t small_size_bytes = 1048576;       /* kSmallSize */
static const uint64_t small_buffer_bytes = 2097152;     /* kSmallBuffer */
static const uint64_t large_buffer_bytes = 20971520;    /* kLargeBuffer */
static const uint64_t min_large_alloc_bytes = 10485760; /* kMinLargeAlloc */
static const uint64_t round_large_bytes = 2097152;      /* kRoundLarge */

typedef struct {
    uint64_t addr, size;
    int stream, prev, next; /* prev/next: neighbours in the segment, -1 at its ends */
    int free_at;            /* index in the free array, -1 while allocated or unused */
    int seg;                /* its segment */
    bool small, live;       /* small pool; slot in use */
} block;

typedef struct {
    uint64_t bytes;
    int stream;
} segment;

struct alloc_replay {
    block *b;
    int n, cap;
    int *slots, nslots;     /* unused block slots */
    int *free_list, nfree;  /* free (cached) blocks */
    segment *seg;
    int nseg, segcap;
    uint64_t next_addr, reserved, allocated, peak_allocated, peak_reserved, capacity;
    bool out_of_memory, released;
    uint64_t oom_need; /* the most a failed cudaMalloc needed: reserved after release + segment */
};

alloc_replay *alloc_replay_new(void)
{
    return calloc(1, sizeof(alloc_replay));
}

void alloc_replay_delete(alloc_replay *a)
{
    if (!a) return;
    free(a->b);
    free(a->slots);
    free(a->free_list);
    free(a->seg);
    free(a);
}

static bool grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return true;
    int c = *cap ? *cap * 2 : 256;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

/* A block slot, or -1. The slot and free arrays share the block array's capacity. */
static int new_block(alloc_replay *a)
{
    if (a->nslots > 0) return a->slots[--a->nslots];
    int cap = a->cap;
    if (!grow((void **)&a->b, &cap, a->n + 1, sizeof(block))) return -1;
    if (cap != a->cap) {
        int *s = realloc(a->slots, (size_t)cap * sizeof(int));
        if (!s) return -1;
        a->slots = s;
        int *f = realloc(a->free_list, (size_t)cap * sizeof(int));
        if (!f) return -1;
        a->free_list = f;
        a->cap = cap;
    }
    return a->n++;
}

static void release_block(alloc_replay *a, int i)
{
    a->b[i].live = false;
    a->slots[a->nslots++] = i;
}

static void free_push(alloc_replay *a, int i)
{
    a->b[i].free_at = a->nfree;
    a->free_list[a->nfree++] = i;
}

static void free_remove(alloc_replay *a, int i)
{
    int at = a->b[i].free_at, last = a->free_list[--a->nfree];
    a->free_list[at] = last;
    a->b[last].free_at = at;
    a->b[i].free_at = -1;
}

/* round_size (no roundup_power2_divisions: the default configuration) */
static uint64_t round_size(uint64_t bytes)
{
    if (bytes < MIN_BLOCK_BYTES) return MIN_BLOCK_BYTES;
    return MIN_BLOCK_BYTES * ((bytes + MIN_BLOCK_BYTES - 1) / MIN_BLOCK_BYTES);
}

static uint64_t allocation_size(uint64_t bytes)
{
    if (bytes <= small_size_bytes) return small_buffer_bytes;
    if (bytes < min_large_alloc_bytes) return large_buffer_bytes;
    return round_large_bytes * ((bytes + round_large_bytes - 1) / round_large_bytes);
}

int alloc_replay_malloc(alloc_replay *a, uint64_t bytes, int stream)
{
    uint64_t size = round_size(bytes);
    bool small = size <= small_size_bytes;
    /* get_free_block: the smallest fitting block of this pool and stream, lowest address */
    int best = -1;
    for (int k = 0; k < a->nfree; k++) {
        const block *c = &a->b[a->free_list[k]];
        if (c->small != small || c->stream != stream || c->size < size) continue;
        if (best < 0 || c->size < a->b[best].size ||
            (c->size == a->b[best].size && c->addr < a->b[best].addr))
            best = a->free_list[k];
    }
    if (best >= 0) {
        free_remove(a, best);
    } else {
        /* alloc_block: a new segment */
        if (!grow((void **)&a->seg, &a->segcap, a->nseg + 1, sizeof(segment))) return -1;
        best = new_block(a);
        if (best < 0) return -1;
        uint64_t seg_bytes = allocation_size(size);
        /* a cudaMalloc beyond the device: release_cached_blocks (free every cached block that
         * is a whole segment, any stream) and retry; release_available_cached_blocks does
         * nothing without max_split_size (malloc's retry chain) */
        if (a->capacity > 0 && a->reserved + seg_bytes > a->capacity) {
            a->released = true;
            for (int k = a->nfree - 1; k >= 0; k--) {
                int i = a->free_list[k];
                if (k >= a->nfree || a->b[i].prev >= 0 || a->b[i].next >= 0) continue;
                a->reserved -= a->b[i].size;
                a->seg[a->b[i].seg].bytes = 0;
                free_remove(a, i);
                release_block(a, i);
            }
            if (a->reserved + seg_bytes > a->capacity) { /* torch raises OutOfMemoryError */
                a->out_of_memory = true;
                if (a->reserved + seg_bytes > a->oom_need) a->oom_need = a->reserved + seg_bytes;
            }
        }
        a->b[best] = (block){.addr = a->next_addr, .size = seg_bytes, .stream = stream,
                             .prev = -1, .next = -1, .free_at = -1, .seg = a->nseg,
                             .small = small, .live = true};
        a->seg[a->nseg++] = (segment){.bytes = seg_bytes, .stream = stream};
        a->next_addr += seg_bytes;
        a->reserved += seg_bytes;
        if (a->reserved > a->peak_reserved) a->peak_reserved = a->reserved;
    }
    /* should_split, then alloc_found_block's split: the remainder stays cached */
    uint64_t remaining = a->b[best].size - size;
    if (small ? remaining >= MIN_BLOCK_BYTES : remaining > small_size_bytes) {
        int r = new_block(a);
        if (r < 0) return -1;
        block *blk = &a->b[best];
        a->b[r] = (block){.addr = blk->addr + size, .size = remaining, .stream = stream,
                          .prev = best, .next = blk->next, .free_at = -1, .seg = blk->seg,
                          .small = small, .live = true};
        if (blk->next >= 0) a->b[blk->next].prev = r;
        blk->next = r;
        blk->size = size;
        free_push(a, r);
    }
    a->allocated += a->b[best].size;
    if (a->allocated > a->peak_allocated) a->peak_allocated = a->allocated;
    return best;
}

/* try_merge_blocks: absorb a free neighbour `src` into `dst`'s range */
static void merge(alloc_replay *a, int dst, int src)
{
    block *d = &a->b[dst], *s = &a->b[src];
    if (s->addr < d->addr) { /* src before dst */
        d->addr = s->addr;
        d->prev = s->prev;
        if (s->prev >= 0) a->b[s->prev].next = dst;
    } else {
        d->next = s->next;
        if (s->next >= 0) a->b[s->next].prev = dst;
    }
    d->size += s->size;
    free_remove(a, src);
    release_block(a, src);
}

void alloc_replay_free(alloc_replay *a, int handle)
{
    if (handle < 0 || handle >= a->n || !a->b[handle].live || a->b[handle].free_at >= 0) return;
    a->allocated -= a->b[handle].size;
    int p = a->b[handle].prev, n = a->b[handle].next;
    free_push(a, handle);
    if (p >= 0 && a->b[p].free_at >= 0) merge(a, handle, p);
    if (n >= 0 && a->b[n].free_at >= 0) merge(a, handle, n);
}

uint64_t alloc_replay_reserved_bytes(const alloc_replay *a) { return a->reserved; }
uint64_t alloc_replay_peak_reserved_bytes(const alloc_replay *a) { return a->peak_reserved; }
bool alloc_replay_out_of_memory(const alloc_replay *a) { return a->out_of_memory; }
bool alloc_replay_released(const alloc_replay *a) { return a->released; }
uint64_t alloc_replay_oom_need_bytes(const alloc_replay *a) { return a->oom_need; }
void alloc_replay_set_capacity(alloc_replay *a, uint64_t bytes) { a->capacity = bytes; }
uint64_t alloc_replay_allocated_bytes(const alloc_replay *a) { return a->allocated; }
uint64_t alloc_replay_peak_allocated_bytes(const alloc_replay *a) { return a->peak_allocated; }
int alloc_replay_segments(const alloc_replay *a) { return a->nseg; }

uint64_t alloc_replay_stream_reserved_bytes(const alloc_replay *a, int stream)
{
    uint64_t r = 0;
    for (int i = 0; i < a->nseg; i++)
        if (a->seg[i].stream == stream) r += a->seg[i].bytes;
    return r;
}
