/*
 * test_cohere_norm.c — Command-R's CohereLayerNorm and logit scale as transformers runs them
 * (elementwise_norm.c's header: modeling_cohere.py 59-65, a bias-free LayerNorm in fp32 eager
 * ops; CohereForCausalLM.forward's logits * logit_scale), each against a number worked by hand
 * from bench/realruns/configs/command-r7b.json (cohere2: h 4096, one norm a layer shared by the
 * parallel attention and MLP, vocabulary 256,000):
 *   the layer's norm: 60 bytes an element in 9 kernels forward, 144 in 19 backward;
 *   the final norm the same, once; the logits' scale one 4-byte-an-element kernel each way;
 *   none of it under Megatron or compiled code, and no fused "layernorm" lump left for Cohere.
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

#define NEAR(x, want) (fabs((x) - (want)) <= 1e-9 * fabs(want) + 1e-6)

static void load(const char *name, model_spec *m)
{
    const char *d = getenv("PLAN_DATA_DIR");
    char path[512], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/%s.json", REALRUNS_CONFIGS_DIR, name);
    if (model_load(path, d ? d : "data", m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void hf_one_gpu(layout *l)
{
    *l = layout_default(FRAMEWORK_FSDP2);
    l->mbs = 1;
    l->impl = IMPL_HF;
}

static double bytes_with_prefix(const elementwise_kernel *k, int n, const char *prefix, int *launches)
{
    double s = 0;
    if (launches) *launches = 0;
    for (int i = 0; i < n; i++)
        if (!strncmp(k[i].name, prefix, strlen(prefix))) {
            s += k[i].count * k[i].bytes;
            if (launches) *launches += k[i].count;
        }
    return s;
}

/* Command-R7B over 4096 tokens: one norm a layer, 60 x 4096 x 4096 = 1,006,632,960 B in 9
 * launches forward, 144 x 4096 x 4096 = 2,415,919,104 B in 19 backward; no fused lump. */
static void test_cohere_layer_norm_kernels(void **state)
{
    (void)state;
    model_spec m;
    load("command-r7b", &m);
    layout l;
    hf_one_gpu(&l);
    static elementwise_list e;
    elementwise_layer(&m, &l, 4096, false, &e);
    int n;
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "cnorm.", &n), 1006632960.0));
    assert_int_equal(n, 9);
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "cnorm.", &n), 2415919104.0));
    assert_int_equal(n, 19);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "layernorm", NULL) == 0);
    assert_true(bytes_with_prefix(e.bwd, e.n_bwd, "layernorm", NULL) == 0);
}

/* The head: the final CohereLayerNorm (the same 60 / 144 bytes an element over 4096 x 4096) and
 * logits * logit_scale over 4096 x 256,000 logits, 4 bytes each way: 4,194,304,000 B. */
static void test_cohere_head(void **state)
{
    (void)state;
    model_spec m;
    load("command-r7b", &m);
    layout l;
    hf_one_gpu(&l);
    static elementwise_list e;
    elementwise_head(&m, &l, 4096, &e);
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "cnorm.", NULL), 1006632960.0));
    assert_true(NEAR(bytes_with_prefix(e.fwd, e.n_fwd, "logits.mul_scale", NULL), 4194304000.0));
    assert_true(NEAR(bytes_with_prefix(e.bwd, e.n_bwd, "logits.bwd.mul_scale", NULL),
                     4194304000.0));
}

/* Not Hugging Face's eager code: compiled, or another model's LayerNorm (StarCoder2's
 * nn.LayerNorm stays the fused lump). */
static void test_cohere_norm_scope(void **state)
{
    (void)state;
    model_spec m;
    load("command-r7b", &m);
    layout l;
    hf_one_gpu(&l);
    l.compile = true;
    static elementwise_list e;
    elementwise_layer(&m, &l, 4096, false, &e);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "cnorm.", NULL) == 0);
    model_spec sc;
    load("starcoder2-7b", &sc);
    hf_one_gpu(&l);
    elementwise_layer(&sc, &l, 4096, false, &e);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "cnorm.", NULL) == 0);
    assert_true(bytes_with_prefix(e.fwd, e.n_fwd, "layernorm", NULL) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cohere_layer_norm_kernels),
        cmocka_unit_test(test_cohere_head),
        cmocka_unit_test(test_cohere_norm_scope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
