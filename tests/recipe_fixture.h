/*
 * recipe_fixture.h — what the layer-recipe tests share (test_recipe.c, test_recipe_attention.c):
 * the model and system under test, loading them from the data folder, exact comparison, the two
 * layouts they start from, and finding an op of a built recipe by name. Header-only (static):
 * each test program has its own copy of M and S.
 */
#ifndef PLAN_TEST_RECIPE_FIXTURE_H
#define PLAN_TEST_RECIPE_FIXTURE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer_recipe.h"

static model_spec M;
static system_spec S;

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *model, const char *sys)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), &M, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(sys, data_dir(), &S, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void near(double a, double b, const char *what)
{
    if (!(fabs(a - b) <= 1e-9 * fabs(b) + 1e-18)) fail_msg("%s: %.15g != %.15g", what, a, b);
}

static layout fsdp2(int dp)
{
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.sharding = SHARDING_FSDP;
    l.dp = dp;
    return l;
}

static layout megatron(int tp, int pp, int dp, bool sp)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.sharding = SHARDING_DISTOPT;
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.sp = sp;
    return l;
}

static const recipe_op *op_named(const recipe *r, const char *name)
{
    for (int i = 0; i < r->n_ops; i++)
        if (!strcmp(r->op[i].name, name)) return &r->op[i];
    fail_msg("no op %s", name);
    return NULL;
}

#endif
