/*
 * test_shard_grads.c — ZeRO-2 under Megatron (--shard-grads; costmodel/shard_grads.h):
 * Megatron-FSDP's optim_grads against the distributed optimizer it extends. Its rules; the
 * memory it changes (fp32 main gradients sharded over dp x cp, two unsharded gradient buckets
 * in flight; weights and optimizer state as the distributed optimizer's); the time it moves
 * (a reduce-scatter in every micro-batch's backward, so its exposed data-parallel time grows
 * with the micro-batches where the distributed optimizer's step-end reduce-scatter does not);
 * the emitters and plan check reading the strategy back.
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
#include <jansson.h>

#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "layout_codec.h"
#include "memory.h"
#include "shard_grads.h"

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

typedef struct {
    model_spec m;
    system_spec sys;
    training_spec t;
    estimate e;
} planned;

static planned *new_planned(void)
{
    planned *p = malloc(sizeof *p);
    assert_non_null(p);
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &p->m, err, sizeof err) != CM_OK ||
        system_load("h100", data_dir(), &p->sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    p->t = training_default();
    return p;
}

/* Llama-3.1-8B at TP 2 x PP 2 x DP 8 on 32 H100s (DP across nodes), seq 4096. */
static layout example(bool zero2)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2; l.pp = 2; l.dp = 8; l.sp = true;
    l.sharding = SHARDING_DISTOPT;
    l.overlap_grad_reduce = l.overlap_param_gather = true;
    l.shard_grads = zero2;
    return l;
}

static void test_rules(void **state)
{
    (void)state;
    planned *p = new_planned();
    char err[CM_ERRLEN];
    layout l = example(true);
    assert_int_equal(layout_check(&p->m, &p->sys, &p->t, &l, 32, err, sizeof err), CM_OK);
    layout_violation v[8];
    l.overlap_grad_reduce = l.overlap_param_gather = false; /* Megatron-FSDP forces it */
    assert_int_equal(layout_check_all(&p->m, &p->sys, &p->t, &l, 32, v, 8), 1);
    assert_string_equal(v[0].rule, "shard-grads-overlap-grad-reduce");
    l = example(true);
    l.sharding = SHARDING_FSDP; /* optim_grads_params is ZeRO-3 already */
    assert_true(layout_check_all(&p->m, &p->sys, &p->t, &l, 32, v, 8) >= 1);
    assert_string_equal(v[0].rule, "shard-grads-megatron-distopt");
    l = example(true);
    l.rank_order = RANK_ORDER_PP_DP; /* Megatron-FSDP refuses --use-tp-pp-dp-mapping */
    assert_int_equal(layout_check_all(&p->m, &p->sys, &p->t, &l, 32, v, 8), 1);
    assert_string_equal(v[0].rule, "rank-order-not-with-megatron-fsdp");
    free(p);
}

/* Memory by hand from the distributed optimizer's breakdown of the same stage: the main
 * gradients 4 bytes a parameter there, 4 / (dp x cp) here, plus two unsharded fp32 buckets of
 * one decoder layer; weights and optimizer state unchanged. */
static void test_memory(void **state)
{
    (void)state;
    planned *p = new_planned();
    layout a = example(false), b = example(true);
    memory_breakdown ma = memory_stage(&p->m, &p->sys, &p->t, &a, 0);
    memory_breakdown mb = memory_stage(&p->m, &p->sys, &p->t, &b, 0);
    assert_true(REL(mb.gradients_bytes, ma.gradients_bytes / 8) < 1e-9);
    assert_true(REL(mb.weights_bytes, ma.weights_bytes) < 1e-12);
    assert_true(REL(mb.optimizer_bytes, ma.optimizer_bytes) < 1e-12);
    double lp = memory_layer_params(&p->m, &b, false);
    assert_true(REL(mb.comm_buffer_bytes - ma.comm_buffer_bytes, 2.0 * 4.0 * lp) < 1e-9);
    assert_true(mb.total_bytes < ma.total_bytes);
    free(p);
}

/* Time: the distributed optimizer reduce-scatters once a step (its exposed DP time the same at 8
 * and 16 micro-batches); ZeRO-2 reduce-scatters in every micro-batch, so doubling the
 * micro-batches doubles its DP time but for what is queued after the step's last backward, paid
 * once (shard_grads.h): 0.115 s at 8, 0.210 s at 16 for this layout on H100s. */
static void test_time_per_microbatch(void **state)
{
    (void)state;
    planned *p = new_planned();
    char err[CM_ERRLEN];
    double dp[2][2];
    for (int z = 0; z < 2; z++) {
        for (int k = 0; k < 2; k++) {
            layout l = example(z == 1);
            training_spec t = p->t;
            t.seq_len = 4096;
            t.global_batch = 8 * (k ? 16 : 8);
            if (estimate_layout(&p->m, &p->sys, &t, &l, &p->e, err, sizeof err) != CM_OK)
                fail_msg("%s", err);
            assert_int_equal(p->e.microbatches, k ? 16 : 8);
            dp[z][k] = p->e.time.dp_s;
        }
    }
    assert_true(dp[1][0] > dp[0][0]);
    assert_true(REL(dp[0][1], dp[0][0]) < 0.05);
    assert_true(dp[1][1] > 1.6 * dp[1][0] && dp[1][1] < 2.0 * dp[1][0]);
    free(p);
}

/* The queue's stall by hand (shard_grads.h), in ms: a 405B layer at TP 8 (398.5M parameters,
 * capacity 1e9 = 2.509 layers), reduce-scatter 34.6, backward 20, forward 10. One layer a chunk:
 * the stream bound 34.6 - 20 - 10 = 4.6. Eight: the queue bound 20 + (8 - 2.509) 34.6 - 160 =
 * 49.99 over the stream's 36.8. A reduce-scatter shorter than the backward: 0. A small unit
 * (100M): capacity 1e9 = 10 layers, eight fit in the queue, the stream bound 8 x 4.6. */
static void test_stall_by_hand(void **state)
{
    (void)state;
    assert_true(fabs(shard_grads_bwd_stall_s(34.6, 20, 10, 1, 398.5e6) - 4.6) < 1e-9);
    double q = 1e9 / 398.5e6;
    assert_true(fabs(shard_grads_bwd_stall_s(34.6, 20, 10, 8, 398.5e6) -
                     (20 + (8 - q) * 34.6 - 160)) < 1e-9);
    assert_true(shard_grads_bwd_stall_s(15, 20, 10, 8, 398.5e6) == 0);
    assert_true(fabs(shard_grads_bwd_stall_s(34.6, 20, 10, 8, 100e6) - 8 * 4.6) < 1e-9);
    assert_true(fabs(shard_grads_tail_s(34.6, 8, 398.5e6) - q * 34.6) < 1e-9);
    assert_true(fabs(shard_grads_tail_s(34.6, 1, 398.5e6) - 34.6) < 1e-9);
}

static __attribute__((noinline)) char *render(const planned *p, emit_format f)
{
    emit_context ctx = {.model_ref = "8b"};
    char *text = NULL, err[CM_ERRLEN] = "";
    cm_status st = emit_render(f, &p->e, &p->m, &p->sys, &ctx, &text, err, sizeof err);
    if (st != CM_OK) fail_msg("emit %d: status %d (%s)", (int)f, st, err);
    return text;
}

static void test_emit_and_check(void **state)
{
    (void)state;
    planned *p = new_planned();
    char err[CM_ERRLEN];
    layout l = example(true);
    if (estimate_layout(&p->m, &p->sys, &p->t, &l, &p->e, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    char *args = render(p, EMIT_MEGATRON_ARGS);
    assert_non_null(strstr(args, "--data-parallel-sharding-strategy optim_grads "));
    assert_non_null(strstr(args, "--use-megatron-fsdp"));
    assert_null(strstr(args, "\n--grad-reduce-in-bf16")); /* priced in fp32 */
    free(args);
    char *bridge = render(p, EMIT_BRIDGE);
    assert_non_null(strstr(bridge, "cfg.ddp.data_parallel_sharding_strategy = \"optim_grads\"\n"));
    assert_non_null(strstr(bridge, "cfg.mixed_precision.grad_reduce_in_fp32 = True\n"));
    free(bridge);
    char *yaml = render(p, EMIT_YAML);
    assert_non_null(strstr(yaml, "data_parallel_sharding_strategy: optim_grads\n"));
    check_config cfg;
    check_report rep;
    if (check_read_yaml(yaml, strlen(yaml), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    if (check_layout(&p->m, &p->sys, &cfg, 0, &rep, err, sizeof err) <= 0) fail_msg("%s", err);
    assert_int_equal(rep.nviolations, 0);
    assert_true(cfg.layout.shard_grads);
    assert_int_equal(cfg.layout.sharding, SHARDING_DISTOPT);
    free(yaml);
    /* the JSON layout carries it, and only when on */
    json_t *j = layout_to_json(&l);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "shard_grads")));
    json_decref(j);
    l.shard_grads = false;
    j = layout_to_json(&l);
    assert_null(json_object_get(j, "shard_grads"));
    json_decref(j);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_stall_by_hand),
        cmocka_unit_test(test_time_per_microbatch),
        cmocka_unit_test(test_emit_and_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
