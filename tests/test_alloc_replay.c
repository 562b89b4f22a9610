/*
 * test_alloc_replay.c — the caching allocator's replay (costmodel/alloc_replay.h) on a short
 * sequence worked by hand from c10/cuda/CUDACachingAllocator.cpp (001074d2): the 20 MiB
 * segment of a 1-10 MiB request and its split, a best fit between two free blocks, a remainder
 * of exactly 1 MiB not split, a large request rounded to 512 B then to a 2 MiB segment, the
 * small pool's 2 MiB segments, a second stream's own pool, and merging on free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_replay.h"

#define MIB (1048576ull)

static void test_hand_worked(void **state)
{
    (void)state;
    alloc_replay *a = alloc_replay_new();
    assert_non_null(a);
    /* 1. 5 MiB: under kMinLargeAlloc (10 MiB), so a kLargeBuffer (20 MiB) segment, split
     * 5 + 15 (remainder > kSmallSize) */
    int h1 = alloc_replay_malloc(a, 5 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 20 * MIB);
    assert_int_equal(alloc_replay_allocated_bytes(a), 5 * MIB);
    /* 2. 12 MiB fits the free 15 MiB: split 12 + 3, nothing reserved */
    int h2 = alloc_replay_malloc(a, 12 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 20 * MIB);
    /* 3. 3.5 MiB does not fit the 3 MiB remainder: a second 20 MiB segment, split 3.5 + 16.5 */
    int h3 = alloc_replay_malloc(a, 7 * MIB / 2, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 40 * MIB);
    assert_int_equal(alloc_replay_segments(a), 2);
    /* 4. freeing the 12 MiB block merges it with its free 3 MiB neighbour: 15 MiB free */
    alloc_replay_free(a, h2);
    assert_int_equal(alloc_replay_allocated_bytes(a), 5 * MIB + 7 * MIB / 2);
    /* 5. 14 MiB: best fit is the 15 MiB block (not the 16.5 MiB one); its 1 MiB remainder is
     * not more than kSmallSize, so the request takes the whole 15 MiB */
    int h5 = alloc_replay_malloc(a, 14 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 40 * MIB);
    assert_int_equal(alloc_replay_allocated_bytes(a), 5 * MIB + 7 * MIB / 2 + 15 * MIB);
    /* 6. 100 MiB + 1 B: rounded to 100 MiB + 512 B, a segment of 102 MiB (kRoundLarge) */
    int h6 = alloc_replay_malloc(a, 100 * MIB + 1, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 142 * MIB);
    assert_int_equal(alloc_replay_allocated_bytes(a), 5 * MIB + 7 * MIB / 2 + 15 * MIB +
                                                          100 * MIB + 512);
    /* 7. 100 B: 512 B of the small pool, a kSmallBuffer (2 MiB) segment */
    int h7 = alloc_replay_malloc(a, 100, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 144 * MIB);
    /* 8. exactly 1 MiB is still small (<= kSmallSize): the small segment's remainder holds it */
    int h8 = alloc_replay_malloc(a, MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 144 * MIB);
    /* 9. 3 MiB on stream 1: stream 0's free 16.5 MiB block is not its own, a 20 MiB segment */
    int h9 = alloc_replay_malloc(a, 3 * MIB, 1);
    assert_int_equal(alloc_replay_reserved_bytes(a), 164 * MIB);
    assert_int_equal(alloc_replay_stream_reserved_bytes(a, 1), 20 * MIB);
    assert_int_equal(alloc_replay_stream_reserved_bytes(a, 0), 144 * MIB);
    /* 10. freeing stream 0's large blocks merges each segment whole (20, 20, 102 MiB free):
     * 35 MiB fits only the 102 MiB one, nothing reserved; 21 MiB then fits the 67 MiB rest */
    alloc_replay_free(a, h1);
    alloc_replay_free(a, h5);
    alloc_replay_free(a, h3);
    alloc_replay_free(a, h6);
    int h10 = alloc_replay_malloc(a, 35 * MIB, 0);
    int h11 = alloc_replay_malloc(a, 21 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 164 * MIB);
    /* 11. two 20 MiB requests take the two whole 20 MiB segments (best fit, exact); 50 MiB
     * fits no free block (the 102 MiB segment has 46 MiB left): a 50 MiB segment */
    int h12 = alloc_replay_malloc(a, 20 * MIB, 0);
    int h13 = alloc_replay_malloc(a, 20 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 164 * MIB);
    int h14 = alloc_replay_malloc(a, 50 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 214 * MIB);
    assert_int_equal(alloc_replay_segments(a), 6);
    /* allocated: 512 B + 1 MiB small, 3 MiB on stream 1, 35 + 21 + 20 + 20 + 50 MiB on
     * stream 0; the peak is now (step 6 held 123.5 MiB + 512 B) */
    assert_int_equal(alloc_replay_allocated_bytes(a), 512 + MIB + 3 * MIB + 146 * MIB);
    assert_int_equal(alloc_replay_peak_allocated_bytes(a), 512 + MIB + 3 * MIB + 146 * MIB);
    /* 12. freeing a 20 MiB block and asking 19 MiB: the 20 MiB block (best fit), whole (the
     * remainder, 1 MiB, is not split off) */
    alloc_replay_free(a, h12);
    int h15 = alloc_replay_malloc(a, 19 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 214 * MIB);
    assert_int_equal(alloc_replay_allocated_bytes(a), 512 + MIB + 3 * MIB + 146 * MIB);
    (void)h7; (void)h8; (void)h9; (void)h10; (void)h11; (void)h12; (void)h13; (void)h14; (void)h15;
    alloc_replay_delete(a);
}

/* A device of 100 MiB (malloc's retry chain): a cudaMalloc past it releases the cached blocks
 * that are whole segments, then retries; one that still does not fit is out of memory. */
static void test_capacity(void **state)
{
    (void)state;
    alloc_replay *a = alloc_replay_new();
    assert_non_null(a);
    alloc_replay_set_capacity(a, 100 * MIB);
    int h1 = alloc_replay_malloc(a, 40 * MIB, 0);
    int h2 = alloc_replay_malloc(a, 30 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 70 * MIB);
    alloc_replay_free(a, h1); /* a whole 40 MiB segment cached */
    /* 50 MiB fits no cached block; 70 + 50 > 100: the 40 MiB segment is released (30 left),
     * 30 + 50 fits */
    int h3 = alloc_replay_malloc(a, 50 * MIB, 0);
    assert_int_equal(alloc_replay_reserved_bytes(a), 80 * MIB);
    assert_int_equal(alloc_replay_peak_reserved_bytes(a), 80 * MIB);
    assert_true(alloc_replay_released(a));
    assert_false(alloc_replay_out_of_memory(a));
    /* 30 MiB more: 80 + 30 > 100 and nothing cached is a whole segment: out of memory */
    int h4 = alloc_replay_malloc(a, 30 * MIB, 0);
    assert_true(alloc_replay_out_of_memory(a));
    (void)h2; (void)h3; (void)h4;
    alloc_replay_delete(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked),
        cmocka_unit_test(test_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
