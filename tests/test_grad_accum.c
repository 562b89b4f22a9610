/*
 * test_grad_accum.c — two terms of the 2021 Megatron-LM the A100 golden rows ran (tests/
 * golden.c), with numbers checkable by hand on the a100-80g preset (HBM 2.039e12 B/s, fused
 * kernels at hbm_efficiency 0.88 = 1.79432e12 B/s, eager kernels at 0.51 = 1.03989e12 B/s plus
 * a 1.5 us gap):
 *   - weight gradients summed across micro-batches outside the GEMM (costmodel/grad_accum.h):
 *     6 bytes a parameter for each micro-batch after the first;
 *   - the unfused attention core's dropout on the s x s probabilities, PyTorch's eager kernel
 *     (layer_recipe.c): 5 bytes a score forward and 5 backward at the eager rate;
 * and one term of the code after it: the TP all-reduce of the input gradient beside the wgrad
 * GEMM (recipe_tp.c), which the 2021 code ran synchronously; and the eager kernels of Megatron's
 * own attention layer around the unfused core (elementwise_legacy.c), and the 2022 local DDP's
 * division of its gradient buffer (grad_accum.h).
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
#include "estimate.h"
#include "grad_accum.h"
#include "layer_recipe.h"
#include "memory.h"
#include "sim.h"
#include "system.h"

static system_spec S;

static void load_a100(void)
{
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir) skip();
    char err[CM_ERRLEN];
    assert_int_equal(system_load("a100-80g", dir, &S, err, sizeof err), CM_OK);
}

/* SC'21 Table 1's 1.7B GPT: 24 layers, hidden 2304, 24 heads of 96, FFN 9216, vocab 51200 */
static model_spec gpt_1_7b(bool dropout)
{
    model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "gpt-1.7b");
    m.layers = 24, m.hidden = 2304, m.heads = m.kv_heads = 24, m.head_dim = 96;
    m.ffn = 9216, m.vocab = 51200, m.max_positions = 2048;
    m.tied_embeddings = m.learned_positions = true;
    m.activation = MODEL_ACT_GELU;
    m.norm = MODEL_NORM_LAYER;
    m.qkv_bias = m.out_bias = true;
    m.dropout = dropout;
    char err[CM_ERRLEN];
    assert_int_equal(model_validate(&m, err, sizeof err), CM_OK);
    return m;
}

static void test_step_s(void **state)
{
    (void)state;
    load_a100();
    training_spec t = training_default();
    t.grad_accum_unfused = true;
    /* 1e9 parameters, 4 micro-batches: 3 x 6e9 B / 1.79432e12 B/s = 10.0317 ms */
    assert_true(fabs(grad_accum_step_s(&S, &t, 1e9, 4) - 10.0317e-3) < 1e-6);
    assert_true(grad_accum_step_s(&S, &t, 1e9, 1) == 0); /* one micro-batch: nothing to sum */
    t.grad_accum_unfused = false; /* fused into the wgrad GEMM (today's Megatron) */
    assert_true(grad_accum_step_s(&S, &t, 1e9, 4) == 0);
}

/* The estimate adds exactly that to the step's compute: 1.7B at TP 1, DP 4, micro-batch 2,
 * global batch 32 -> 4 micro-batches, over the first stage's parameters. */
static void test_estimate(void **state)
{
    (void)state;
    load_a100();
    model_spec m = gpt_1_7b(true);
    training_spec t = training_default();
    t.seq_len = 2048, t.global_batch = 32, t.attention = ATTENTION_UNFUSED;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 4, l.mbs = 2, l.sharding = SHARDING_DDP, l.recompute = RECOMPUTE_FULL;
    l.overlap_grad_reduce = l.overlap_param_gather = l.tp_comm_overlap = false;
    estimate off, on;
    char err[CM_ERRLEN];
    assert_int_equal(estimate_layout(&m, &S, &t, &l, &off, err, sizeof err), CM_OK);
    t.grad_accum_unfused = true;
    assert_int_equal(estimate_layout(&m, &S, &t, &l, &on, err, sizeof err), CM_OK);
    double pd, pe;
    memory_stage_params(&m, &l, 0, &pd, &pe);
    assert_true(pd + pe > 1.6e9 && pd + pe < 1.7e9); /* the whole 1.65B model on one stage */
    double want = 3 * 6.0 * (pd + pe) / (2.039e12 * 0.88); /* ~16.6 ms */
    assert_true(fabs((on.time.compute_s - off.time.compute_s) - want) < 1e-9);
    assert_true(fabs(on.time.step_s - off.time.step_s - want) < 1e-9);
}

/* The dropout on the probabilities: 1.7B, micro-batch 16, seq 2048, TP 1: 16 x 24 x 2048^2 =
 * 1.6106e9 scores; 5 B each at 1.03989e12 B/s + 1.5 us = 7.7456 ms forward and the same
 * backward, the difference between the model with and without dropout. */
static void test_attention_dropout(void **state)
{
    (void)state;
    load_a100();
    training_spec t = training_default();
    t.seq_len = 2048, t.global_batch = 512, t.attention = ATTENTION_UNFUSED;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.mbs = 16, l.dp = 32;
    static recipe with, without;
    model_spec md = gpt_1_7b(true), mn = gpt_1_7b(false);
    recipe_layer(&md, &S, &t, &l, false, &with, NULL);
    recipe_layer(&mn, &S, &t, &l, false, &without, NULL);
    const recipe_op *a = NULL, *b = NULL;
    for (int i = 0; i < with.n_ops; i++)
        if (!strcmp(with.op[i].name, "attn.core")) a = &with.op[i];
    for (int i = 0; i < without.n_ops; i++)
        if (!strcmp(without.op[i].name, "attn.core")) b = &without.op[i];
    assert_non_null(a);
    assert_non_null(b);
    assert_true(fabs((a->fwd_s - b->fwd_s) - 7.74565e-3) < 1e-7);
    assert_true(fabs((a->bwd_s - b->bwd_s) - 7.74565e-3) < 1e-7);
}


static double op_bwd(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return r->op[i].bwd_s;
    return -1;
}

/* The unfused sums as a layer-recipe op (grad_accum.h), 1.7B at TP 1, DP 4, micro-batch 2,
 * global batch 32 (4 micro-batches), p = memory_layer_params (12h^2 + 13h = 63,730,944 for this
 * GPT layer), fused kernels at 1.79432e12 B/s:
 *   Megatron-FSDP (--no-gradient-accumulation-fusion): copy bf16 param.grad into the main-grad
 *   bucket every micro-batch, (2 + 2) p with --grad-reduce-in-bf16 = 142.07 us, (2 + 4) p in
 *   fp32 = 213.11 us; the distributed optimizer (fused): no op; the 2021 path: 6 p x 3 / 4 =
 *   159.83 us a micro-batch. The simulator takes the same layer costs: with the 2021 term on,
 *   its busiest stage's compute grows by 24 layers x 4 micro-batches x that op. */
static void test_layer_op(void **state)
{
    (void)state;
    load_a100();
    model_spec m = gpt_1_7b(false);
    training_spec t = training_default();
    t.seq_len = 2048, t.global_batch = 32;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 4, l.mbs = 2, l.sharding = SHARDING_FSDP;
    double p = memory_layer_params(&m, &l, 0);
    assert_true(p == 12.0 * 2304 * 2304 + 13.0 * 2304);
    double rate = 2.039e12 * 0.88;
    static recipe r;
    t.grad_reduce_bf16 = true;
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    assert_true(fabs(op_bwd(&r, "grad_accum") - 4.0 * p / rate) < 1e-12);
    assert_true(fabs(op_bwd(&r, "grad_accum") - 142.07e-6) < 1e-8);
    t.grad_reduce_bf16 = false;
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    assert_true(fabs(op_bwd(&r, "grad_accum") - 6.0 * p / rate) < 1e-12);
    l.sharding = SHARDING_DISTOPT;
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    assert_true(op_bwd(&r, "grad_accum") < 0); /* fused: no op */
    t.grad_accum_unfused = true;
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    double one = 6.0 * p * 3 / 4 / rate;
    assert_true(fabs(op_bwd(&r, "grad_accum") - one) < 1e-12);
    assert_true(fabs(one - 159.83e-6) < 1e-8);

    /* the simulator sees it: serialized, PP 1 */
    l.overlap_grad_reduce = l.overlap_param_gather = l.tp_comm_overlap = false;
    sim_workspace *w = sim_alloc();
    assert_non_null(w);
    sim_options o = {.serialize = true, .trace = false};
    char err[CM_ERRLEN];
    estimate on, off;
    assert_int_equal(estimate_layout(&m, &S, &t, &l, &on, err, sizeof err), CM_OK);
    assert_int_equal(sim_estimate(w, &m, &S, &t, &l, &o, &on, err, sizeof err), CM_OK);
    t.grad_accum_unfused = false;
    assert_int_equal(estimate_layout(&m, &S, &t, &l, &off, err, sizeof err), CM_OK);
    assert_int_equal(sim_estimate(w, &m, &S, &t, &l, &o, &off, err, sizeof err), CM_OK);
    assert_true(on.simulated && off.simulated);
    double d = on.time_sim.compute_busy_s - off.time_sim.compute_busy_s;
    assert_true(fabs(d - 24 * 4 * one) < 1e-9);
    sim_free(w);
}

/* Korthikanti et al. 2022's 22B GPT (Table 3: 48 layers, hidden 6144, 64 heads, FFN 24576) at
 * TP 8, micro-batch 4, seq 2048, unfused attention, as tests/golden.c prices it */
static model_spec gpt_22b(training_spec *t, layout *l, bool sp)
{
    model_spec m = gpt_1_7b(true);
    snprintf(m.name, sizeof m.name, "gpt-22b");
    m.layers = 48, m.hidden = 6144, m.heads = m.kv_heads = 64, m.head_dim = 96, m.ffn = 24576;
    char err[CM_ERRLEN];
    assert_int_equal(model_validate(&m, err, sizeof err), CM_OK);
    *t = training_default();
    t->seq_len = 2048, t->global_batch = 4, t->attention = ATTENTION_UNFUSED;
    *l = layout_default(FRAMEWORK_MEGATRON);
    l->tp = 8, l->pp = l->dp = l->cp = 1, l->mbs = 4, l->sp = sp;
    return m;
}

/* Megatron's column-parallel Linear without SP all-reduces its input gradient asynchronously
 * beside its wgrad GEMM (recipe_tp.c tp_nccl_allreduce_block; Megatron-LM since 16c90445e7,
 * 2021-09-02); before, synchronously (training_spec.tp_dgrad_allreduce_sync, the SC'21 rows).
 * Korthikanti's 22B GPT (hidden 6144, 64 heads of 96, FFN 24576) at TP 8, micro-batch 4, seq
 * 2048, no SP, on a100-80g:
 *   all-reduce of 8192 x 6144 x 2 = 100,663,296 bytes over 8 GPUs: x 2 x 7/8 / (300e9 x 0.78)
 *     = 0.752824 ms + 14 steps x 1.5 us + 18 us per call = 0.791824 ms (forward and, sync,
 *     backward of each block);
 *   qkv wgrad 6144 x 2304 over 8192 tokens: 2.31928e11 FLOP / (312e12 x 0.75) = 0.991146 ms
 *     + 2.5 us = 0.993646 ms (fc1's, 6144 x 3072: 1.324028 ms);
 *   side by side, GEMM x1.176 and collective x1.363 (overlap.h): the collective's 1.079256 ms
 *     ends inside the GEMM's 1.168528 ms, which it stretched by 1.079256 x (1 - 1/1.176)
 *     = 0.161521 ms: what each block's backward exposes. */
static void test_tp_dgrad_allreduce(void **state)
{
    (void)state;
    load_a100();
    training_spec t;
    layout l;
    model_spec m = gpt_22b(&t, &l, false);
    static recipe r;
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    for (int i = 0; i < 2; i++) {
        const recipe_op *o = &r.op[0];
        for (int k = 0; k < r.n_ops; k++)
            if (!strcmp(r.op[k].name, i ? "tp.mlp" : "tp.attention")) o = &r.op[k];
        assert_int_equal(o->kind, RECIPE_TP);
        assert_true(fabs(o->fwd_s - 0.791824e-3) < 1e-9);
        assert_true(fabs(o->bwd_s - 0.161521e-3) < 1e-9);
    }
    t.tp_dgrad_allreduce_sync = true; /* 2021: the whole all-reduce */
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    assert_true(fabs(op_bwd(&r, "tp.attention") - 0.791824e-3) < 1e-9);
    assert_true(fabs(op_bwd(&r, "tp.mlp") - 0.791824e-3) < 1e-9);
}

/* Megatron's own attention layer of 2021-22 around the unfused core (elementwise_legacy.c), the
 * 22B layer at TP 8, micro-batch 4 (8192 tokens; q = k = v = 768 wide on a GPU, QKV 2304), eager
 * kernels at 2.039e12 x 0.51 = 1.03989e12 B/s plus 1.5 us:
 *   core: the context copy 4 x 8192 x 768 = 25,165,824 B forward (25.700 us), baddbmm's alpha
 *     mul on dQ and dK 4 x 8192 x 1536 = 50,331,648 B backward (49.901 us);
 *   QKV Linear: bias add 4 x 8192 x 2304 = 75,497,472 B forward (74.101 us); backward the bias
 *     gradient's column sum 2 x 8192 x 2304 = 37,748,736 B (37.801 us) and the split's cat
 *     75,497,472 B (74.101 us). */
static void test_legacy_attention_kernels(void **state)
{
    (void)state;
    load_a100();
    training_spec t;
    layout l;
    model_spec m = gpt_22b(&t, &l, true);
    static elementwise_list c, q;
    elementwise_megatron_unfused_attention(&m, &l, 8192, &c, &q);
    assert_int_equal(c.n_fwd, 1);
    assert_int_equal(c.n_bwd, 1);
    assert_true(c.fwd[0].bytes == 25165824.0 && c.bwd[0].bytes == 50331648.0);
    assert_true(fabs(elementwise_pass_s(&S, &c, c.fwd, 1) - 25.700467e-6) < 1e-11);
    assert_true(fabs(elementwise_pass_s(&S, &c, c.bwd, 1) - 49.900935e-6) < 1e-11);
    static recipe r;
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    double f = -1, b1 = -1, b2 = -1;
    for (int i = 0; i < r.n_ops; i++) {
        if (!strcmp(r.op[i].name, "qkv.bias_add")) f = r.op[i].fwd_s;
        if (!strcmp(r.op[i].name, "qkv.bias_grad")) b1 = r.op[i].bwd_s;
        if (!strcmp(r.op[i].name, "qkv.split_cat")) b2 = r.op[i].bwd_s;
    }
    assert_true(fabs(f - 74.101402e-6) < 1e-11);
    assert_true(fabs(b1 - 37.800701e-6) < 1e-11);
    assert_true(fabs(b2 - 74.101402e-6) < 1e-11);
    t.attention = ATTENTION_FLASH; /* today's layer: none of them */
    recipe_layer(&m, &S, &t, &l, false, &r, NULL);
    for (int i = 0; i < r.n_ops; i++) assert_null(strstr(r.op[i].name, "qkv."));
}

/* 2022's local DDP divides its fp32 gradient buffer by DP, 1 included (grad_accum.h
 * grad_buffer_divide_s): 8 bytes per parameter of the stage at 1.79432e12 B/s once a step,
 * before the optimizer. The 22B at TP 8, PP 1, DP 1: its parameters on a GPU
 * (memory_stage_params, about 2.76e9) x 8 / 1.79432e12 = about 12.3 ms, in the optimizer's
 * term of the closed form and of the stage costs the simulator reads. */
static void test_grad_buffer_divide(void **state)
{
    (void)state;
    load_a100();
    training_spec t;
    layout l;
    model_spec m = gpt_22b(&t, &l, true);
    l.recompute = RECOMPUTE_SELECTIVE;
    assert_true(grad_buffer_divide_s(&S, &t, 1e9) == 0);
    t.grad_buffer_divide = true;
    assert_true(fabs(grad_buffer_divide_s(&S, &t, 1e9) - 8e9 / 1.79432e12) < 1e-12);
    double pd, pe;
    memory_stage_params(&m, &l, 0, &pd, &pe);
    double want = 8.0 * (pd + pe) / 1.79432e12;
    assert_true(want > 12.0e-3 && want < 12.6e-3);
    char err[CM_ERRLEN];
    estimate on, off;
    assert_int_equal(estimate_layout(&m, &S, &t, &l, &on, err, sizeof err), CM_OK);
    t.grad_buffer_divide = false;
    assert_int_equal(estimate_layout(&m, &S, &t, &l, &off, err, sizeof err), CM_OK);
    assert_true(fabs(on.time.optimizer_s - off.time.optimizer_s - want) < 1e-9);
    assert_true(fabs(on.time.step_s - off.time.step_s - want) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_s),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_attention_dropout),
        cmocka_unit_test(test_layer_op),
        cmocka_unit_test(test_tp_dgrad_allreduce),
        cmocka_unit_test(test_legacy_attention_kernels),
        cmocka_unit_test(test_grad_buffer_divide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
