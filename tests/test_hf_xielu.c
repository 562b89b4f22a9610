/*
 * test_hf_xielu.c — Apertus's xIELU activation as transformers 5.17.0 runs it without the fused
 * `xielu` package (costmodel/hf_xielu.h, bench/results/xielu25_2026-11-29). Worked by hand from
 * bench/realruns/configs/apertus-8b.json (ffn 21504, hidden_act xielu) at seq 4096, mbs 2 on one
 * GPU under FSDP2 with Hugging Face's code: E = 8192 tokens x 21504 = 176,160,768 elements of
 * the up projection's output.
 *   Saved per layer beyond a GeLU MLP: the bool mask (1), alpha_p * x, expm1's result and
 *     expm1(.) - x (2 each): 7 E = 1,233,125,376 bytes (the probe's saved_tensors_hooks list:
 *     1937.8 MB against GeLU's 704.6 MB).
 *   Forward: 12 kernels over E, 3 + 4 + 6 + 2 x 4 + 2 x 6 + 4 + 4 + 6 + 4 + 7 = 58 bytes an
 *     element: 10,217,324,544 bytes; backward 25 kernels, 2 x 5 + 2 x 4 + 2 x 4 + 5 x 6 + 2 x 2
 *     + 4 + 4 + 2 x 3 + 4 + 7 + 5 + 5 x 6 = 120: 21,139,292,160 bytes (the probe's profile: 12
 *     and 25 such kernels); three and five launches on the one-element parameters beside them.
 *   The backward's peak: 5 E = 880,803,840 bytes more than GeLU's.
 * Nothing of it with hidden_act gelu, under torch.compile or under Megatron.
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
#include "hf_xielu.h"
#include "memory.h"

#define E (8192.0 * 21504.0)

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(model_spec *m)
{
    char path[512], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/apertus-8b.json", REALRUNS_CONFIGS_DIR);
    if (model_load(path, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* the config, and the same with hidden_act gelu (transformers' GeLUActivation) */
static void load_pair(model_spec *m, model_spec *g)
{
    load(m);
    *g = *m;
    snprintf(g->hidden_act, sizeof g->hidden_act, "gelu");
}

static void setup(layout_framework fw, training_spec *t, layout *l)
{
    *t = training_default();
    t->seq_len = 4096;
    t->global_batch = 2;
    *l = layout_default(fw);
    l->mbs = 2;
    if (fw == FRAMEWORK_FSDP2) l->impl = IMPL_HF;
}

/* bytes and launches of the kernels named xielu.* (params: the one-element ones too) */
static void xielu_pass(const elementwise_kernel *k, int n, bool params, double *bytes, int *launches)
{
    *bytes = 0, *launches = 0;
    for (int i = 0; i < n; i++) {
        if (strncmp(k[i].name, "xielu.", 6)) continue;
        bool p = strstr(k[i].name, ".params") != NULL;
        if (p != params) continue;
        *bytes += k[i].count * k[i].bytes;
        *launches += k[i].count;
    }
}

static void test_config(void **state)
{
    (void)state;
    model_spec m;
    load(&m);
    assert_string_equal(m.hidden_act, "xielu");
    assert_int_equal(m.activation, MODEL_ACT_GELU);
    assert_int_equal(m.ffn, 21504);
}

static void test_saved_bytes(void **state)
{
    (void)state;
    model_spec m, g;
    load_pair(&m, &g);
    training_spec t;
    layout l;
    setup(FRAMEWORK_FSDP2, &t, &l);
    double dx = memory_layer_activation_bytes(&m, &t, &l, 0);
    double dg = memory_layer_activation_bytes(&g, &t, &l, 0);
    assert_true(dx - dg == 1233125376.0);
    assert_true(hf_xielu_transient_bytes(&m, &t, &l) == 880803840.0);
    assert_true(hf_xielu_transient_bytes(&g, &t, &l) == 0);
}

static void test_kernels(void **state)
{
    (void)state;
    model_spec m;
    load(&m);
    training_spec t;
    layout l;
    setup(FRAMEWORK_FSDP2, &t, &l);
    static elementwise_list e;
    elementwise_layer(&m, &l, 8192, false, &e);
    double b;
    int n;
    xielu_pass(e.fwd, e.n_fwd, false, &b, &n);
    assert_true(b == 58 * E);
    assert_int_equal(n, 12);
    xielu_pass(e.bwd, e.n_bwd, false, &b, &n);
    assert_true(b == 120 * E);
    assert_int_equal(n, 25);
    xielu_pass(e.fwd, e.n_fwd, true, &b, &n);
    assert_int_equal(n, 3);
    xielu_pass(e.bwd, e.n_bwd, true, &b, &n);
    assert_int_equal(n, 5);
    for (int i = 0; i < e.n_fwd; i++) assert_true(strcmp(e.fwd[i].name, "mlp.act") != 0);
    for (int i = 0; i < e.n_bwd; i++) assert_true(strcmp(e.bwd[i].name, "mlp.bwd.act") != 0);
}

static void test_not_elsewhere(void **state)
{
    (void)state;
    model_spec m, g;
    load_pair(&m, &g);
    training_spec t;
    layout l;
    static elementwise_list e;
    double b;
    int n;
    setup(FRAMEWORK_FSDP2, &t, &l);
    elementwise_layer(&g, &l, 8192, false, &e); /* a GeLU MLP: its one kernel */
    xielu_pass(e.fwd, e.n_fwd, false, &b, &n);
    assert_int_equal(n, 0);
    l.compile = true; /* Inductor fuses the Python ops */
    assert_false(hf_xielu_applies(&m, &l));
    setup(FRAMEWORK_MEGATRON, &t, &l);
    assert_false(hf_xielu_applies(&m, &l));
    elementwise_layer(&m, &l, 8192, false, &e);
    xielu_pass(e.fwd, e.n_fwd, false, &b, &n);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_saved_bytes),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_not_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
