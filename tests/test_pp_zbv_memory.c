/*
 * test_pp_zbv_memory.c — issues 19 and 14: what ZBVZeroBubble's split backward keeps beyond the
 * chunks in flight (pp_zbv_memory.h), against numbers worked by hand from the rank's op order
 * (schedule.h, pytorch's _calculate_single_rank_operations) and torch's _backward.py / FSDP2.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "memory.h"
#include "pp_schedule.h"
#include "pp_zbv_memory.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* p = 2, m = 8, rank 1 (virtual stages 1 and 2: neither first nor head). Its order: F0 F1 F0 F1
 * I1(0) W1(0), then F0 I0 W0 F1 I1 W1 per micro-batch. At I1(1) 4 chunks are held and both
 * chunks' W left bf16 weight gradients (W0(0), W1(0)): 2 P0 + 2 P1 = 4 with P = 1. With each
 * chunk's output gradients D = 5 the end of an I is higher: D + the other chunk's 2 P = 7. With
 * a received-input gradient of 0.5 per I as well: the last I with 4 chunks held is I1(6), after
 * 12 I's (I1(0), I0(0..5), I1(1..5)); its end holds 13 of them: 5 + 2 + 6.5 = 13.5 (the
 * cool-down's fullest, I0(7)'s end, holds 3 chunks, D0 + D1 + D0 waiting and 16 of them: 13).
 * At m = 40 (past the 4p + 4 walked, carried on) I1(38)'s end holds 77: 5 + 2 + 38.5 = 45.5,
 * the cool-down 3 chunks, 15 and 40 x 0.5: 45. */
static void test_middle_rank_by_hand(void **state)
{
    (void)state;
    pp_zbv_rank z = {.act_bytes = {10, 10}, .params = {1, 1}, .output_grad_bytes = {0, 0},
                     .head_chunk = -1};
    assert_true(fabs(pp_zbv_retained_bytes(2, 8, 1, &z) - 4.0) < 1e-12);
    z.output_grad_bytes[0] = z.output_grad_bytes[1] = 5;
    assert_true(fabs(pp_zbv_retained_bytes(2, 8, 1, &z) - 7.0) < 1e-12);
    z.input_grad_bytes = 0.5;
    assert_true(fabs(pp_zbv_retained_bytes(2, 8, 1, &z) - 13.5) < 1e-12);
    assert_true(fabs(pp_zbv_retained_bytes(2, 40, 1, &z) - 45.5) < 1e-12);
}

/* Rank 0 holds virtual stage 0 (first: its I is empty, its W the full backward, nothing kept)
 * and the head (3). At the start of I1(k), k >= 1, the loss's buffers are there with W1(k-1)'s
 * bf16 weight gradients: 2 P1 above the loss moment memory.c counts, whatever the loss. */
static void test_head_rank_by_hand(void **state)
{
    (void)state;
    pp_zbv_rank z = {.act_bytes = {10, 10}, .params = {7, 3}, .output_grad_bytes = {0, 1},
                     .loss_over_blocks_bytes = 100, .head_chunk = 1, .first = {true, false}};
    assert_true(fabs(pp_zbv_retained_bytes(2, 8, 0, &z) - 6.0) < 1e-12);
}

/* Llama-3.2-3B (data/models/3b.json), s4k, mbs 1, 7 layers and the head: per layer and token
 * q 3072 + k 1024 + v 1024 + gate 8192 + up 8192 + o 3072 + down 3072 + two norms 2 x 3072 =
 * 33,792 bf16 output gradients: 276,824,064 B a layer, 1,937,768,448 for 7; the head's logits
 * (128,256) and final norm (3,072) 1,075,838,976 more. */
static void test_output_grads_llama3b(void **state)
{
    (void)state;
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load("3b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.pp = 2;
    l.vpp = 2;
    l.mbs = 1;
    assert_true(pp_zbv_output_grad_bytes(&m, &t, &l, 7, false) == 1937768448.0);
    assert_true(pp_zbv_output_grad_bytes(&m, &t, &l, 7, true) == 1937768448.0 + 1075838976.0);
}

/* memory_stage of Llama-3-8B on pp 2 x ZBV, s4k, mbs 1, 8 micro-batches, rank 1 (virtual stages 1
 * and 2, 8 layers each): the activations are the 2 micro-batches in flight plus, at I1(6)'s
 * start, both chunks' bf16 weight gradients (2 x 2 x 8 layers' parameters) and the 12 received
 * inputs' gradients so far (4096 x 4096 x 2 B each); its end (13 of them, 8 layers' output
 * gradients 8 x 51,200 x 4096 x 2 B and one chunk's weight gradients) is lower. Before this
 * mechanism the stage held the in-flight micro-batches alone. */
static void test_stage_memory_8b(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    char err[CM_ERRLEN];
    if (model_load("8b", data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h200", data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    t.global_batch = 8;
    layout l = layout_default(FRAMEWORK_TORCHTITAN);
    l.cuda_graphs = CUDA_GRAPHS_OFF;
    l.pp = 2;
    l.vpp = 2;
    l.dp = 1;
    l.mbs = 1;
    l.pp_schedule = PP_SCHEDULE_ZBV;
    l.reshard_after_forward = false;
    l.recompute = RECOMPUTE_NONE;
    l.pp_first_layers = l.pp_last_layers = 8; /* 8 layers a virtual stage */
    assert_int_equal(layout_microbatches(&l, &t), 8);
    memory_breakdown r = memory_stage(&m, &s, &t, &l, 1);
    double per_micro = memory_layer_activation_bytes(&m, &t, &l, 0) * 16;
    double lp = memory_layer_params(&m, &l, 0);
    double ig = 4096.0 * 4096 * 2;
    double start = 4 * 8 * lp + 12 * ig;
    double end = 13 * ig + 8 * 51200.0 * 4096 * 2 + 2 * 8 * lp;
    assert_true(start > end);
    double want = pp_schedule_in_flight(&l, 8, 1) * per_micro + start;
    assert_int_equal(layout_stage_layers(&m, &l, 1), 16);
    assert_true(fabs(r.activations_bytes - want) < 1e-9 * want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_middle_rank_by_hand),
        cmocka_unit_test(test_head_rank_by_hand),
        cmocka_unit_test(test_output_grads_llama3b),
        cmocka_unit_test(test_stage_memory_8b),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
