/*
 * test_elementwise.c — the elementwise kernel list (costmodel/elementwise.c) against numbers
 * worked by hand from its table (bench/BACKEND.md, "Eager elementwise kernels"): bytes per
 * element of each eager kernel (bf16 2, fp32 4, read + written) times tokens x width.
 * Llama-3.1-8B: T 4096 tokens, h 4096, q 4096 (32 x 128), kv 1024 (8 x 128), f 14336, V 128256.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elementwise.h"

#define T 4096.0

static model_spec llama8b(void)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "8b");
    m.layers = 32;
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 14336;
    m.vocab = 128256;
    m.activation = MODEL_ACT_SWIGLU;
    m.norm = MODEL_NORM_RMS;
    return m;
}

static layout one_gpu(layout_framework fw)
{
    layout l = layout_default(fw);
    l.sharding = SHARDING_FSDP;
    return l;
}

static double named(const elementwise_kernel *k, int n, const char *name, int *count)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) {
            *count = k[i].count;
            return k[i].bytes;
        }
    fail_msg("no kernel %s", name);
    return 0;
}

/* LlamaRMSNorm: to(fp32) 6 + pow 8 + mean 4 + x*rstd 8 + to(bf16) 6 + weight*x 4 = 36 bytes
 * per element forward in 6 launches; backward 4+6+2+6+8+12+4+4+8+8+12+12+6 = 92 in 13. */
static void test_rmsnorm_bytes(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list e;
    elementwise_head(&m, &l, T, &e); /* the final norm is the head's only norm */
    double f = 0, b = 0;
    int nf = 0, nb = 0;
    for (int i = 0; i < e.n_fwd; i++)
        if (!strncmp(e.fwd[i].name, "rmsnorm.", 8)) f += e.fwd[i].bytes, nf += e.fwd[i].count;
    for (int i = 0; i < e.n_bwd; i++)
        if (!strncmp(e.bwd[i].name, "rmsnorm.", 8)) b += e.bwd[i].bytes, nb += e.bwd[i].count;
    assert_true(f == 603979776.0); /* 36 x 4096 x 4096 */
    assert_int_equal(nf, 6);
    assert_true(b == 1543503872.0); /* 92 x 4096 x 4096 */
    assert_int_equal(nb, 13);
    int c;
    assert_true(named(e.fwd, e.n_fwd, "rmsnorm.to_fp32", &c) == 6 * T * 4096); /* 100.7 MB */
    assert_true(named(e.bwd, e.n_bwd, "rmsnorm.bwd.pow1_copy", &c) == 8 * T * 4096);
}

/* One Llama-3.1-8B layer: forward 84Th + 20T(q+kv) + 10Tf = 1409286144 + 419430400 +
 * 587202560 = 2415919104 bytes in 26 launches (2 x 6 norm, 2 x 5 RoPE, 2 residual adds, silu,
 * mul); backward 214Th + 34T(q+kv) + 18Tf = 3590324224 + 713031680 + 1056964608 = 5360320512
 * bytes in 54 launches (2 x 13 norm, 2 x 10 RoPE, 5 gradient adds, 2 muls, silu_backward). */
static void test_llama8b_layer(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list e;
    elementwise_layer(&m, &l, T, false, &e);
    assert_true(e.eager);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 2415919104.0);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 26);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 5360320512.0);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 54);
    /* RoPE on q: q*cos and rot*sin 4 bytes per element each, 33.5 MB of q */
    int c;
    assert_true(named(e.fwd, e.n_fwd, "rope.q.mul", &c) == 4 * T * 4096);
    assert_int_equal(c, 2);
    assert_true(named(e.bwd, e.n_bwd, "grad.add", &c) == 6 * T * 4096);
    assert_int_equal(c, 5);

    /* Time at the h200 rate: bytes / (4.8e12 x 0.51) + 1.5 us per launch. */
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    s.hbm_efficiency = 0.9;
    double t = elementwise_pass_s(&s, &e, e.fwd, e.n_fwd);
    assert_true(fabs(t - (2415919104.0 / 2.448e12 + 26 * 1.5e-6)) < 1e-12); /* 1.0259 ms */
}

/* Sequence parallelism (and tensor parallelism) over 2 GPUs halves every kernel's bytes:
 * norms and residuals run over T/2 tokens, RoPE and SwiGLU over q/2, kv/2 and f/2. */
static void test_sharding_halves(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    l.tp = 2;
    l.sp = true;
    elementwise_list e;
    elementwise_layer(&m, &l, T, false, &e);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 2415919104.0 / 2);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 5360320512.0 / 2);
}

/* Loss head: logits.float() 6 + log_softmax 8 bytes per logit forward, zeros 4 +
 * log_softmax backward 12 + to(bf16) 6 backward, plus the final norm (36, 92 per element):
 * forward 14 x 4096 x 128256 + 603979776 = 7958691840, backward 22 x 4096 x 128256 +
 * 1543503872 = 13100908544. */
static void test_loss_head(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = one_gpu(FRAMEWORK_FSDP2);
    elementwise_list e;
    elementwise_head(&m, &l, T, &e);
    assert_true(elementwise_bytes(e.fwd, e.n_fwd) == 7958691840.0);
    assert_true(elementwise_bytes(e.bwd, e.n_bwd) == 13100908544.0);
    assert_int_equal(elementwise_launches(e.fwd, e.n_fwd), 8);
    assert_int_equal(elementwise_launches(e.bwd, e.n_bwd), 16);
}

/* Megatron keeps Transformer Engine's fused lump: norms 2 x 4h, residual adds 12h, SwiGLU 6f,
 * RoPE 4(q+kv) per token = 188416 x 4096 = 771751936 bytes forward, twice that backward; the
 * loss 10 bytes per logit each way, at hbm_efficiency with no launch gap. */
static void test_megatron_fused(void **state)
{
    (void)state;
    model_spec m = llama8b();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    elementwise_list e;
    elementwise_layer(&m, &l, T, false, &e);
    assert_false(e.eager);
    assert_int_equal(e.n_fwd, 1);
    assert_int_equal(e.n_bwd, 1);
    assert_true(e.fwd[0].bytes == 771751936.0);
    assert_true(e.bwd[0].bytes == 2 * 771751936.0);
    elementwise_head(&m, &l, T, &e);
    assert_true(e.fwd[0].bytes == 10 * T * 128256 && e.bwd[0].bytes == 10 * T * 128256);
    system_spec s;
    memset(&s, 0, sizeof s);
    s.hbm_bandwidth_bytes_per_s = 4.8e12;
    s.hbm_efficiency = 0.9;
    s.eager_elementwise_efficiency = 0.51;
    s.eager_kernel_gap_s = 1.5e-6;
    assert_true(fabs(elementwise_kernel_s(&s, &e, &e.fwd[0]) - 10 * T * 128256 / 4.32e12) < 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm_bytes),   cmocka_unit_test(test_llama8b_layer),
        cmocka_unit_test(test_sharding_halves), cmocka_unit_test(test_loss_head),
        cmocka_unit_test(test_megatron_fused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
