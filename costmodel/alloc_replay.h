/*
 * alloc_replay.h — a replay of torch's CUDA caching allocator (the default configuration, not
 * expandable segments) over a list of requests and frees: what it reserves (cudaMalloc'd
 * segments) for a given order of tensor lifetimes (issue 14: peak *reserved* memory).
 *
 * Why: torch.cuda's peak reserved is the sum of the segments the allocator ever cudaMalloc'd,
 * and which requests miss the cache depends on the sizes and the order of individual tensors,
 * not on totals (bench/results/resv20_2026-11-29: AdamW's state landing in the loss chain's
 * freed segments, step 1 reserving the chain again). The rules replayed, from pytorch/pytorch
 * c10/cuda/CUDACachingAllocator.cpp at commit 001074d2 (the file's header comment, lines
 * 53-82, its constants, lines 117-124, and the functions named):
 *  - round_size: a request is rounded up to a multiple of kMinBlockSize = 512 bytes;
 *  - get_pool: requests of at most kSmallSize = 1 MiB use the small pool, the rest the large
 *    pool; each pool serves one stream's blocks to that stream only (header, "Once freed,
 *    blocks can be re-allocated on the same stream, but not on any other stream");
 *  - get_free_block: the smallest cached block of the pool and stream that fits (the pool is a
 *    std::set ordered by BlockComparatorSize: stream, size, then address: best fit, lowest
 *    address first); max_split_size is unlimited by default, so its oversize rules are inert;
 *  - get_allocation_size, when nothing fits: a new segment of kSmallBuffer = 2 MiB for a small
 *    request, kLargeBuffer = 20 MiB for a request under kMinLargeAlloc = 10 MiB, else the
 *    request rounded up to kRoundLarge = 2 MiB;
 *  - should_split: the block is split when the remainder is at least kMinBlockSize (small
 *    pool) or more than kSmallSize (large pool); otherwise the request takes the whole block;
 *  - free_block / try_merge_blocks: a freed block merges with its free neighbours of the same
 *    segment; segments are never returned to CUDA except when a cudaMalloc fails: then
 *    release_cached_blocks frees every cached block that is a whole segment (any stream) and
 *    the cudaMalloc is retried (malloc's chain; release_available_cached_blocks returns false
 *    without max_split_size). A failed cudaMalloc is one beyond alloc_replay_set_capacity.
 * Addresses are modelled as the order of cudaMalloc (a new segment lies above every earlier
 * one), which decides only ties between equal-sized free blocks.
 *
 * GSL's workspace pattern: alloc_replay_new / _malloc / _free / _delete; the caller owns it.
 */
#ifndef PLAN_ALLOC_REPLAY_H
#define PLAN_ALLOC_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct alloc_replay alloc_replay;

/* An empty allocator (no segment), or NULL when out of host memory. */
alloc_replay *alloc_replay_new(void);
void alloc_replay_delete(alloc_replay *a);

/* Request `bytes` on `stream` (any small integer naming a CUDA stream); returns the block's
 * handle (>= 0) for alloc_replay_free, or -1 when out of host memory. */
int alloc_replay_malloc(alloc_replay *a, uint64_t bytes, int stream);
/* Free the block of a handle from alloc_replay_malloc (once). */
void alloc_replay_free(alloc_replay *a, int handle);

/* What torch.cuda.memory_stats would read: reserved_bytes.all.current and allocated_bytes.all
 * .current / .peak (rounded sizes). */
uint64_t alloc_replay_reserved_bytes(const alloc_replay *a);
uint64_t alloc_replay_allocated_bytes(const alloc_replay *a);
uint64_t alloc_replay_peak_allocated_bytes(const alloc_replay *a);
/* reserved_bytes.all.peak (below the current only after segments were released) */
uint64_t alloc_replay_peak_reserved_bytes(const alloc_replay *a);
/* The bytes cudaMalloc can give (0, the default: unlimited); past them a new segment first
 * releases the cached whole segments, and one that still does not fit is out of memory. */
void alloc_replay_set_capacity(alloc_replay *a, uint64_t bytes);
bool alloc_replay_out_of_memory(const alloc_replay *a);
/* Of the cudaMallocs that failed even after the release (out of memory), the most reserved
 * memory one would have needed: the segments kept after the release plus the new segment (0
 * when none failed); less the capacity, by how much the device was short. */
uint64_t alloc_replay_oom_need_bytes(const alloc_replay *a);
/* Did a cudaMalloc ever reach the capacity (so that the cache was released)? */
bool alloc_replay_released(const alloc_replay *a);
/* Reserved bytes of one stream's segments. */
uint64_t alloc_replay_stream_reserved_bytes(const alloc_replay *a, int stream);
/* Segments cudaMalloc'd so far. */
int alloc_replay_segments(const alloc_replay *a);

#endif
