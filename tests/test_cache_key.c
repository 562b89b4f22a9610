/*
 * test_cache_key.c — the layer-cost cache's keys made by word masks
 * (costmodel/estimate_cache_key.c, speed27) are estimate_cache_key's fields with the padding
 * zeroed, and their hashes FNV-1a's over those bytes: estimate_key_of and
 * estimate_key_moe_pair against estimate_cache_key, estimate_key_mask, estimate_key_hash and
 * estimate_key_dense (the definitions), byte for byte, over layouts of every framework,
 * sharding, recompute setting and rank order, alone and not, with random values in the other
 * fields and random padding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "estimate_cache_internal.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned next_u(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* a layout of random bytes (padding too), then fields set to a case's values */
static layout random_layout(int fw, int sh, int rc, int alone)
{
    layout l;
    unsigned char *b = (unsigned char *)&l;
    for (size_t i = 0; i < sizeof l; i++) b[i] = (unsigned char)next_u();
    const int sizes[] = {1, 2, 4, 8};
    l.framework = (layout_framework)fw;
    l.sharding = (layout_sharding)sh;
    l.recompute = (layout_recompute)rc;
    l.tp = alone ? 1 : sizes[next_u() % 4];
    l.pp = alone ? 1 : sizes[next_u() % 4];
    l.dp = alone ? 1 : sizes[next_u() % 4];
    l.cp = alone ? 1 : sizes[next_u() % 4];
    l.ep = sizes[next_u() % 4];
    l.etp = (int)(next_u() % 3);
    l.vpp = 1 + (int)(next_u() % 3);
    l.pp_schedule = (layout_pp_schedule)(next_u() % 3);
    l.rank_order = (layout_rank_order)(next_u() % RANK_ORDER_COUNT);
    l.moe_dispatcher = (layout_moe_dispatcher)(next_u() % 2);
    bool *flags[] = {&l.sp, &l.reshard_after_forward, &l.offload, &l.activation_offload,
                     &l.compile, &l.tp_comm_overlap, &l.overlap_grad_reduce,
                     &l.overlap_param_gather, &l.async_tp, &l.fp8_param_gather,
                     &l.moe_fp8_dispatch, &l.optimizer_bf16_states, &l.shard_grads};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) *flags[i] = next_u() & 1;
    return l;
}

static void test_keys_match(void **state)
{
    (void)state;
    estimate_cache *c = estimate_cache_new();
    assert_non_null(c);
    const int fws[] = {FRAMEWORK_MEGATRON, FRAMEWORK_FSDP2, FRAMEWORK_TORCHTITAN};
    int n = 0, alone_megatron = 0;
    for (int fw = 0; fw < 3; fw++)
        for (int sh = 0; sh < 3; sh++)
            for (int rc = 0; rc < 3; rc++)
                for (int alone = 0; alone < 2; alone++)
                    for (int r = 0; r < 200; r++) {
                        layout l = random_layout(fws[fw], sh, rc, alone);
                        lookup_key want, got;
                        want.k = estimate_cache_key(&l);
                        estimate_key_mask(c, &want.k);
                        want.hash = estimate_key_hash(&want.k);
                        estimate_key_of(c, &l, &got);
                        assert_memory_equal(&want.k, &got.k, sizeof want.k);
                        assert_true(want.hash == got.hash);
                        lookup_key want_dense, pair_whole, pair_dense;
                        estimate_key_dense(&want, &want_dense);
                        estimate_key_moe_pair(c, &l, &pair_whole, &pair_dense);
                        assert_memory_equal(&want.k, &pair_whole.k, sizeof want.k);
                        assert_true(want.hash == pair_whole.hash);
                        assert_memory_equal(&want_dense.k, &pair_dense.k, sizeof want.k);
                        assert_true(want_dense.hash == pair_dense.hash);
                        n++;
                        alone_megatron += fws[fw] == FRAMEWORK_MEGATRON && sh != SHARDING_FSDP &&
                                          layout_gpus(&l) == 1;
                    }
    assert_int_equal(n, 3 * 3 * 3 * 2 * 200);
    assert_true(alone_megatron > 0); /* the alone case (dp 1 in the key) was met */
    estimate_cache_free(c);
}

/* The other masks against the field stores they replace: the last costs' probe (as
 * estimate_search.c layer_costs built it before speed27), the Megatron-FSDP bound's memo key
 * (estimate_search_bound.c before speed27), the bf16 layout (precision_bf16_layout) and
 * twin_fits' keys (estimate_search.c before speed27). */
static void test_masks_match(void **state)
{
    (void)state;
    estimate_cache *c = estimate_cache_new();
    assert_non_null(c);
    const int fws[] = {FRAMEWORK_MEGATRON, FRAMEWORK_FSDP2, FRAMEWORK_TORCHTITAN};
    for (int fw = 0; fw < 3; fw++)
        for (int sh = 0; sh < 3; sh++)
            for (int r = 0; r < 300; r++) {
                layout l = random_layout(fws[fw], sh, (int)(next_u() % 3), r & 1);
                l.precision = (layout_precision)(next_u() % PRECISION_COUNT);
                layout want = l, got;
                want.recompute_layers = 0;
                want.optimizer_offload_pct = 0;
                want.pp_first_layers = want.pp_last_layers = 0;
                if (want.sharding != SHARDING_FSDP) want.sharding = SHARDING_DDP;
                want.overlap_grad_reduce = want.overlap_param_gather = false;
                if (l.framework == FRAMEWORK_MEGATRON && l.sharding != SHARDING_FSDP)
                    want.fp8_param_gather = false;
                estimate_key_mask(c, &want);
                estimate_key_masked_copy(&got, &l,
                                         c->probe_mask[l.sharding == SHARDING_FSDP ? PROBE_FSDP
                                                       : l.framework == FRAMEWORK_MEGATRON
                                                           ? PROBE_MEGATRON
                                                           : PROBE_OTHER]);
                assert_memory_equal(&want, &got, sizeof want);
                want = l;
                want.fp8_param_gather = false;
                estimate_key_masked_copy(&got, &l, c->fsdp_lb_mask);
                assert_memory_equal(&want, &got, sizeof want);
                want = precision_bf16_layout(&l);
                estimate_key_masked_copy(&got, &l, c->bf16_mask);
                assert_memory_equal(&want, &got, sizeof want);
                /* twin_fits' keys (estimate_search.c fit_key): the twin's fields set, the DP
                 * overlap knobs cleared, the padding zeroed, and the hash */
                for (int which = 0; which < FIT_MASKS; which++) {
                    want = l;
                    if (which == FIT_DDP_TWIN) {
                        want.sharding = SHARDING_DDP;
                        want.optimizer_bf16_states = false;
                    }
                    if (which == FIT_NO_RECOMPUTE_TWIN) want.recompute = RECOMPUTE_NONE;
                    if (which == FIT_NO_GATHER_TWIN) want.fp8_param_gather = false;
                    want.overlap_grad_reduce = want.overlap_param_gather = false;
                    estimate_key_mask(c, &want);
                    lookup_key fk;
                    estimate_key_masked(&l, c->fit_mask[which], &fk);
                    assert_memory_equal(&want, &fk.k, sizeof want);
                    assert_true(estimate_key_hash(&want) == fk.hash);
                }
            }
    estimate_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys_match),
                                       cmocka_unit_test(test_masks_match)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
