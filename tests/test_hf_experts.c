/*
 * test_hf_experts.c — transformers' grouped_mm MoE path (costmodel/hf_experts.h): the routing
 * kernels' bytes and launches on a toy MoE layer worked by hand, their price on a toy system,
 * and the recipe's expert GEMMs priced as two grouped kernels (not one GEMM per expert) with
 * their launches for the host.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "elementwise.h"
#include "hf_experts.h"
#include "layer_recipe.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* T = 1000 tokens, top_k 2 (S = 2000 routed copies), h 100, E 10 experts, f 50. */
static model_spec toy_moe(void)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    m.hidden = 100;
    m.experts = 10;
    m.top_k = 2;
    m.expert_ffn = 50;
    return m;
}

static const elementwise_kernel *find(const elementwise_kernel *k, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) return &k[i];
    fail_msg("no kernel %s", name);
    return NULL;
}

/*
 * Forward bytes (hf_experts.c header), T 1000, S 2000, h 100, E 10:
 *   router: cast 6TE 60,000 + softmax 8TE 80,000 + topk 4TE + 12S 64,000 + renorm 12S + 8T
 *   32,000; token_idx 16T + 8S 32,000; gather 4Sh + 8S 816,000; argsorts 80S 160,000; index
 *   permutes 44S 88,000; hidden permute 816,000; offsets 16S + 12E 32,120; weight product
 *   6Sh + 4S 1,208,000; unpermute 8Sh + 8S 1,616,000; top-k sum 4Sh + 4Th 1,200,000; cast 6Th
 *   600,000: 6,804,120 bytes in 25 launches.
 * Backward: cast 6Th 600,000; expand 4Th + 4Sh 1,200,000; unpermute's index_put_ (zeros 4Sh
 *   800,000, sorts 40S 80,000, update 12Sh + 8S 2,416,000) 3,296,000; grad * w 8Sh + 4S
 *   1,608,000; its bf16 cast 6Sh 1,200,000; grad * out 10Sh 2,000,000; its sum 4Sh + 4S
 *   808,000; the weights' index_put_ (4S + 40S + 20S) 128,000; router: renorm 48S 96,000, topk
 *   4TE + 12S 64,000, softmax 12TE 120,000, cast 6TE 60,000; chunk cat 8Sf 800,000; the hidden
 *   permute's index_put_ (2Sh 400,000 + 80,000 + 6Sh + 8S 1,216,000) 1,696,000; the gather's
 *   (2Th 200,000 + 80,000 + 1,216,000) 1,496,000: 15,172,000 bytes in 31 launches.
 */
static void test_routing_bytes(void **state)
{
    (void)state;
    model_spec m = toy_moe();
    layout l = layout_default(FRAMEWORK_FSDP2);
    assert_true(hf_experts_applies(&l));
    elementwise_list e;
    hf_experts_routing(&m, &l, 1000, &e);
    assert_true(e.eager && e.alone);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 25);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 31);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 6804120.0);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 15172000.0);
    assert_true(find(e.fwd, e.n_fwd, "moe.unpermute")->bytes == 1616000.0);
    assert_true(find(e.bwd, e.n_bwd, "moe.bwd.gather")->bytes == 1216000.0);

    /* priced by bytes: HBM 2e12 B/s at the one-GPU eager efficiency 0.5, 1 us between
     * kernels: forward 6,804,120 / 1e12 s + 25 us */
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 2e12;
    s.eager_elementwise_efficiency = 0.5;
    s.eager_elementwise_efficiency_alone = 0.5;
    s.eager_kernel_gap_s = 1e-6;
    double t = elementwise_pass_s(&s, &e, e.fwd, e.n_fwd);
    assert_true(fabs(t - (6.80412e-6 + 25e-6)) < 1e-12);

    /* not HF's eager code: torch.compile, the native model, expert parallelism */
    layout c = l;
    c.compile = true;
    assert_false(hf_experts_applies(&c));
    c = l;
    c.impl = IMPL_NATIVE;
    assert_false(hf_experts_applies(&c));
    c = l;
    c.ep = 2;
    assert_false(hf_experts_applies(&c));
}

static const recipe_op *op_named(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    return NULL;
}

/* Qwen3-30B-A3B on one H100 under FSDP2: HF runs its 128 experts as two torch._grouped_mm
 * calls, which pay the GEMM fixed cost once each; the per-expert form (the native model here)
 * pays it 128 times: the forward differs by 2 x 127 x gemm_overhead_s, forward + backward by
 * 6 x 127 x it. The host issues 4 grouped-GEMM launches forward (8 backward); the routing
 * kernels replace the generic permute lumps. */
static void test_recipe_grouped(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("qwen3-30b-a3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    layout hf = layout_default(FRAMEWORK_FSDP2), nat = hf;
    nat.impl = IMPL_NATIVE;
    static recipe rh, rn;
    recipe_layer(&m, &s, &t, &hf, true, &rh, NULL);
    recipe_layer(&m, &s, &t, &nat, true, &rn, NULL);
    const recipe_op *eh = op_named(&rh, "experts"), *en = op_named(&rn, "experts");
    assert_non_null(eh);
    assert_non_null(en);
    double c = s.gemm_overhead_s;
    assert_true(c > 0);
    assert_true(fabs((en->fwd_s - eh->fwd_s) - 2 * 127 * c) < 1e-12);
    assert_true(fabs((en->fwd_bwd_s - eh->fwd_bwd_s) - 6 * 127 * c) < 1e-12);
    assert_int_equal(eh->launches, 4);
    assert_int_equal(en->launches, 1);
    assert_non_null(op_named(&rh, "moe.unpermute"));
    assert_null(op_named(&rh, "moe.permute.bwd"));
    assert_null(op_named(&rn, "moe.unpermute"));
    assert_non_null(op_named(&rn, "moe.permute.bwd"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routing_bytes),
        cmocka_unit_test(test_recipe_grouped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
