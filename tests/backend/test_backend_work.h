/*
 * test_backend_work.h — what the three files of the test_backend_work program share
 * (test_backend_work.c: the layout-to-work translation and main; test_backend_trace.c: the
 * measured-step trace writer; test_backend_calib.c: the calibrate sweep and its CSV): the model
 * and system under test, loading them, a relative comparison and a Megatron layout. Private
 * to those files.
 */
#ifndef PLAN_TESTS_BACKEND_TEST_BACKEND_WORK_H
#define PLAN_TESTS_BACKEND_TEST_BACKEND_WORK_H

#include "calib.h"
#include "sim.h"
#include "trace.h"
#include "work.h"

/* The model and system load() set. */
extern model_spec M;
extern system_spec S;

/* Loads presets `model` and `sys` (PLAN_DATA_DIR) into M and S, or the test fails. */
void load(const char *model, const char *sys);
/* Fails unless |a - b| <= rel * |b|. */
void near(double a, double b, double rel);
/* A Megatron layout with the distributed optimizer: TP tp (sequence parallel sp), DP dp. */
layout megatron(int tp, int dp, bool sp);

/* test_backend_trace.c */
void test_trace_writer(void **state);
/* test_backend_calib.c */
void test_calib_ops(void **state);
void test_calib_sweep(void **state);
void test_csv_schema(void **state);
/* test_backend_fp8.c */
void test_fp8_work(void **state);
void test_fp8_blockwise_work(void **state);

#endif
