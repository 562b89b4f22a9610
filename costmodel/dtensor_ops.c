/*
 * dtensor_ops.c — DTensor dispatches of torchtitan's TP plan beyond the recipe's kernels (see
 * dtensor_ops.h for the plan and why only the Linears and the norms run on DTensors).
 *
 * Sources (pytorch/pytorch):
 *  - torch/distributed/tensor/_dispatch.py (commit cf06dd72762dea9dfd1c3bd417b099835c86cf92):
 *    _custom_op_handlers maps aten.linear.default to decompose_handler, so a Linear on DTensors
 *    is dispatched as its CompositeImplicit decomposition, op by op.
 *  - aten/src/ATen/native/Linear.cpp linear(): no bias -> matmul(input, weight.t());
 *    aten/src/ATen/native/LinearAlgebra.cpp _matmul_impl / should_fold: a 3-D input times a 2-D
 *    weight is folded: input.reshape(-1, k) (a view), mm, _unsafe_view back to 3-D. Forward:
 *    t, view, mm, _unsafe_view, each through DTensor's sharding propagation; the mm is the
 *    recipe's kernel, the other 3 are extra. Backward (torch/csrc/autograd/FunctionsManual.cpp
 *    mm_mat1_backward: grad.mm(mat2.t()), mm_mat2_backward: mat1.t().mm(grad)): the
 *    _unsafe_view's view, the two mm's (the recipe's 2 kernels) each behind a t(), the reshape's
 *    view and the weight's t(): 5 extra.
 *  - torch/distributed/tensor/parallel/style.py (commit 8ed7413833958386bb4334b3205b76402ad31eed):
 *    ColwiseParallel._prepare_output_fn: outputs.to_local() (its input is already the
 *    Replicate DTensor PrepareModuleInput made): 1. RowwiseParallel: _prepare_input_fn
 *    DTensor.from_local(input, Shard(-1)), _prepare_output_fn redistribute(Partial -> Shard(1))
 *    (the reduce-scatter) and to_local(): 3. SequenceParallel._prepare_input_fn
 *    DTensor.from_local(input, Shard(1)), and PrepareModuleInput's redistribute(Shard(1) ->
 *    Replicate) (the all-gather): 2 per norm. Each is an autograd Function, so the backward
 *    runs the same number again (to_local's backward is a from_local of the gradient, a
 *    redistribute's the opposite collective).
 * Measured: host_dispatch.c prices each of these at the host time per DTensor dispatch of a real
 * TP layer (host.eager_dtensor_*_s, bench/results/tphost_2026-11-27: the layer's host time less
 * its plain launches, over these counts). A profiled forward block (bench/tphost_ops.py) issues
 * 7 aten::linear, 9 Redistribute (4 with a collective, 5 the Colwise outputs' no-op), 4
 * _FromTorchTensor and 7 _ToTorchTensor: the hooks counted here, the no-op redistributes inside
 * the per-dispatch time.
 */
#include "dtensor_ops.h"

#include <string.h>

enum {
    LINEAR_FWD_EXTRA = 3, /* t, view, _unsafe_view around the mm */
    LINEAR_BWD_EXTRA = 5, /* view, t before each of the two mm's, view, t */
    COLWISE_HOOKS = 1,    /* to_local */
    ROWWISE_HOOKS = 3,    /* from_local, redistribute (reduce-scatter), to_local */
    NORM_HOOKS = 2,       /* from_local, PrepareModuleInput's redistribute (all-gather) */
    HEAD_HOOKS = 2,       /* final norm's from_local, output Colwise's input all-gather */
};

bool dtensor_tp_applies(const layout *l)
{
    return l->framework == FRAMEWORK_TORCHTITAN && l->tp > 1;
}

static bool starts(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

bool dtensor_layer_op(const recipe_op *o)
{
    if (o->kind == RECIPE_GEMM) return true;
    if (o->kind != RECIPE_ELEMENTWISE) return false;
    return starts(o->name, "rmsnorm.") || starts(o->name, "rms_norm.") ||
           starts(o->name, "layernorm");
}

static bool rowwise(const char *name)
{
    return !strcmp(name, "attn_out") || !strcmp(name, "mlp_down") ||
           !strcmp(name, "shared_down");
}

double dtensor_linear_dispatches(const recipe_op *o, double modules, bool bwd)
{
    if (o->kind != RECIPE_GEMM || modules <= 0) return 0;
    double hooks = rowwise(o->name) ? ROWWISE_HOOKS : COLWISE_HOOKS;
    return modules * ((bwd ? LINEAR_BWD_EXTRA : LINEAR_FWD_EXTRA) + hooks);
}

/* The mm's saved inputs are packed before the mm runs (the generated VariableType code builds
 * its SavedVariables ahead of the redispatch), so the stop comes after the parallel style's
 * input hook (Rowwise: from_local of the local input; Colwise: none, its input is already the
 * DTensor PrepareModuleInput made) and the decomposition's t and view, before the mm and its
 * _unsafe_view. Counted on real TP 2 blocks under torch.utils.checkpoint (bench/results/
 * tpck27_2026-11-29, counts-*.json: the recompute of a steady Llama block dispatches 7 t and 7
 * view but 6 mm and 6 _unsafe_view on DTensors: w2's t and view run, its mm does not). */
enum { LINEAR_STOP_EXTRA = 2, ROWWISE_STOP_HOOKS = 1 };

double dtensor_linear_stop_dispatches(const recipe_op *o, double modules)
{
    if (o->kind != RECIPE_GEMM || modules <= 0) return 0;
    return modules * (LINEAR_STOP_EXTRA + (rowwise(o->name) ? ROWWISE_STOP_HOOKS : 0));
}

double dtensor_norm_dispatches(void)
{
    return NORM_HOOKS;
}

double dtensor_head_dispatches(void)
{
    return HEAD_HOOKS;
}
