/*
 * test_fragmentation.c — the caching allocator's largest block (costmodel/memory.h, issue 14):
 * a plan must leave room for its largest single allocation, one fp32 logits buffer of a
 * micro-batch, unless segments can grow (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,
 * which torchtitan's launcher sets). The case is bench/realruns' Qwen3-4B on one H100: seq 4096
 * micro-batch 1 without checkpointing ran out of memory (the model had said it fits, 77.3 of
 * 79.2 GiB), the same with checkpointing ran (76.2 GiB). The block counts only where the
 * allocator's reserved peak does not fit (frag18, retry18): Qwen3-0.6B seq 8192 micro-batch 4 on
 * one H200 ran with 6.7 GiB free on the device for 18.55 GiB buffers, served from the cache.
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

#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "memory.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

/* a bench/realruns config (NAME.json) and a system preset */
static void load_named(const char *config, const char *system, model_spec *m, system_spec *sys)
{
    char err[CM_ERRLEN], path[512];
    snprintf(path, sizeof path, "%s/%s.json", REALRUNS_CONFIGS_DIR, config);
    if (model_load(path, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(system, data_dir(), sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void load(model_spec *m, system_spec *sys)
{
    load_named("qwen3-4b", "h100", m, sys);
}

/* bench/realruns/fidelity.py's layout of run q3-4b-s4k-b1: FSDP2 on one GPU, Hugging Face
 * eager, torch's default (foreach) AdamW. */
static void run_layout(layout *l, training_spec *t, bool ckpt)
{
    *t = training_default();
    t->seq_len = 4096;
    t->global_batch = 1;
    *l = layout_default(FRAMEWORK_FSDP2);
    l->dp = 1;
    l->mbs = 1;
    l->optimizer_impl = OPTIMIZER_IMPL_FOREACH;
    l->recompute = ckpt ? RECOMPUTE_FULL : RECOMPUTE_NONE;
}

/* Block by hand: 4 B x 4096 tokens x 151936 vocab = 2,489,319,424 B (2.32 GiB); halved by
 * TP 2 (vocab-parallel) and by CP 2 (the sequence is split). */
static void test_largest_block_by_hand(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    assert_int_equal(m.vocab, 151936);
    layout l;
    training_spec t;
    run_layout(&l, &t, false);
    assert_true(fabs(memory_largest_block_bytes(&m, &t, &l) - 2489319424.0) < 1);
    l.tp = 2;
    assert_true(fabs(memory_largest_block_bytes(&m, &t, &l) - 1244659712.0) < 1);
    l.tp = 1;
    l.cp = 2;
    assert_true(fabs(memory_largest_block_bytes(&m, &t, &l) - 1244659712.0) < 1);
}

/* The run that went out of memory is infeasible, with the reason; the one that ran is not. */
static void test_qwen3_4b_h100(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    estimate e;
    char err[CM_ERRLEN];
    run_layout(&l, &t, false);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    const memory_breakdown *mb = &e.memory;
    /* it fits by the byte count, not with the block: capacity - total < block */
    assert_true(mb->total_bytes <= mb->capacity_bytes);
    assert_true(mb->capacity_bytes - mb->total_bytes < 2489319424.0);
    assert_true(fabs(mb->largest_block_bytes - 2489319424.0) < 1);
    assert_true(mb->need_bytes > mb->capacity_bytes);
    assert_false(e.feasible);
    assert_non_null(strstr(e.infeasible_reason, "allocator fragmentation"));
    /* the verdict is the allocator replay's (res22): out of memory after the cache's release */
    assert_true(mb->replay_oom);
    assert_non_null(strstr(e.infeasible_reason, "strands free memory in split segments"));

    /* expandable segments: the block needs no room of its own */
    t.expandable_segments = true;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_true(e.feasible);
    assert_true(e.memory.need_bytes == e.memory.total_bytes);

    /* checkpointed: the run that ran, with more free memory than its block */
    run_layout(&l, &t, true);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_true(e.feasible);
    assert_true(e.memory.capacity_bytes - e.memory.total_bytes > 2489319424.0);
}

/* frag18: the block is in the training peak and, where the reserved peak fits, served from the
 * cache (memory.c, stage_totals). Qwen3-0.6B seq 8192 micro-batch 4, FSDP2 on one H200: ran
 * (peak allocated 124.3 GiB, reserved 131.8 GiB of 138.5 usable, no allocator retry) though
 * capacity - total (11.1 GiB) is less than its 18.55 GiB fp32 logits buffer
 * (4 B x 32768 tokens x 151936 = 19,914,555,392 B). The H100 Qwen3-4B run above stays
 * infeasible: its reserved peak (92.1 GiB predicted, 96.2 measured on an H200) exceeds 79.2. */
static void test_block_served_from_cache(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    load_named("qwen3-0.6b", "h200", &m, &sys);
    layout l;
    training_spec t;
    estimate e;
    run_layout(&l, &t, false);
    t.seq_len = 8192;
    t.global_batch = 4;
    l.mbs = 4;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    const memory_breakdown *mb = &e.memory;
    assert_true(fabs(mb->largest_block_bytes - 19914555392.0) < 1);
    assert_true(mb->capacity_bytes - mb->total_bytes < mb->largest_block_bytes);
    assert_true(mb->reserved_bytes + mb->framework_bytes <= mb->capacity_bytes);
    assert_true(mb->need_bytes == mb->total_bytes);
    assert_true(e.feasible);

    /* the H100 Qwen3-4B run: its reserved peak reaches the device (the allocator replay,
     * alloc_step.h, releases its cache there, as the run did: 77.9 GiB reserved on the H100,
     * resv20) and a cudaMalloc still fails: out of memory, as the run went (res22: the replay's
     * threshold is 78.05 GiB of the 77.88 usable, bench/results/res22_2026-11-29/margins.txt) */
    load(&m, &sys);
    run_layout(&l, &t, false);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_true(e.memory.replay_oom);
    assert_true(e.memory.need_bytes > e.memory.capacity_bytes);
    assert_false(e.feasible);
    assert_false(e.feasible);

    /* the same Qwen3-0.6B layout under Megatron (reserved = allocated, no measured cache
     * model) keeps the block */
    if (model_load(REALRUNS_CONFIGS_DIR "/qwen3-0.6b.json", data_dir(), &m, err, sizeof err) !=
        CM_OK)
        fail_msg("%s", err);
    if (system_load("h200", data_dir(), &sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
    run_layout(&l, &t, false);
    t.seq_len = 8192;
    t.global_batch = 4;
    l.mbs = 4;
    l.framework = FRAMEWORK_MEGATRON;
    memory_breakdown mg = memory_peak(&m, &sys, &t, &l);
    assert_true(mg.need_bytes > mg.total_bytes);
}

/* torchtitan launches with expandable segments (run_train.sh): no block term. */
static void test_torchtitan_expandable(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    run_layout(&l, &t, false);
    l.framework = FRAMEWORK_TORCHTITAN;
    memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
    assert_true(mb.largest_block_bytes > 0);
    assert_true(mb.need_bytes == mb.total_bytes);
}

/* The trainer YAML of a plan predicted with expandable segments says so, and plan check reads
 * it back with them (else the check would price the block the plan did not). */
static void test_yaml_round_trip(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    load(&m, &sys);
    layout l;
    training_spec t;
    estimate e;
    char err[CM_ERRLEN], *text = NULL;
    run_layout(&l, &t, false);
    t.expandable_segments = true;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = "qwen3-4b"};
    assert_int_equal(emit_yaml(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
    check_config cfg;
    check_report rep;
    assert_int_equal(check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err), CM_OK);
    assert_true(cfg.training.expandable_segments);
    free(text);
    /* without the knob the YAML does not state it */
    t.expandable_segments = false;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    text = NULL;
    assert_int_equal(emit_yaml(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_null(strstr(text, "expandable_segments"));
    assert_int_equal(check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err), CM_OK);
    assert_false(cfg.training.expandable_segments);
    free(text);
}

/* res22: ho21b's native Qwen2.5-3B s8k micro-batch 2 on one H200 was priced to fit (130.0 of
 * 139.8 GiB; the frag18 rule: 130.0 + its 9.27 GiB block under the device) and went out of
 * memory in its second step: "Tried to allocate 9.27 GiB ... 8.63 GiB is free ... 119.64 GiB is
 * allocated by PyTorch, and 10.23 GiB is reserved by PyTorch but unallocated"
 * (bench/results/ho21_2026-11-29/b/results.jsonl). The allocator replay runs out in step 1's
 * log-softmax gradient with 119.6 GiB allocated and 10.4 GiB stranded: infeasible. The runs
 * nearest the edge that ran stay feasible (their replay thresholds 2.5-3.0 GiB under the
 * device's usable memory: bench/results/res22_2026-11-29/margins.txt): Mistral-7B s4k
 * checkpointed on an H200 (136.3 GiB at its peak) and Qwen3-4B s4k checkpointed on an H100. */
static void test_second_step_fragmentation(void **state)
{
    (void)state;
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    load_named("qwen2.5-3b", "h200", &m, &sys);
    layout l;
    training_spec t;
    estimate e;
    run_layout(&l, &t, false);
    t.seq_len = 8192;
    t.global_batch = 2;
    l.mbs = 2;
    l.impl = IMPL_NATIVE;
    l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_true(e.memory.total_bytes < e.memory.capacity_bytes);
    assert_true(e.memory.capacity_bytes - e.memory.total_bytes > e.memory.largest_block_bytes);
    assert_true(e.memory.replay_oom);
    assert_false(e.feasible);

    load_named("mistral-7b-v0.3", "h200", &m, &sys);
    run_layout(&l, &t, true);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_false(e.memory.replay_oom);
    assert_true(e.feasible);

    load(&m, &sys);
    run_layout(&l, &t, true);
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_false(e.memory.replay_oom);
    assert_true(e.feasible);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_largest_block_by_hand),
        cmocka_unit_test(test_block_served_from_cache),
        cmocka_unit_test(test_second_step_fragmentation),
        cmocka_unit_test(test_qwen3_4b_h100),
        cmocka_unit_test(test_torchtitan_expandable),
        cmocka_unit_test(test_yaml_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
