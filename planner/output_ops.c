/*
 * output_ops.c — `plan estimate --ops`: the layer recipe (costmodel/layer_recipe.h) as the
 * estimate priced it, one line per operation, for a dense layer, a MoE layer where the model
 * has them, and the loss head. It answers "where does the step go" at the level a performance
 * engineer profiles: each GEMM, the attention core, each elementwise kernel, each collective,
 * with its forward and backward time per micro-batch, the stream it runs on and what hides it.
 * The sums printed under each table are recipe_price's, the same figures the estimate adds up.
 */
#include "output.h"

#include "layer_recipe.h"

static const char *stream_name(recipe_stream s)
{
    return s == RECIPE_STREAM_COMM ? "comm" : "compute";
}

static const char *overlap_name(recipe_overlap o)
{
    switch (o) {
    case RECIPE_OVERLAP_NONE: return "exposed";
    case RECIPE_OVERLAP_ATTENTION: return "behind attention";
    case RECIPE_OVERLAP_LAYER: return "behind next layer";
    case RECIPE_OVERLAP_MICROBATCH: return "behind other micro-batch";
    case RECIPE_OVERLAP_SHARED: return "behind shared experts";
    }
    return "?";
}

static void print_recipe(FILE *f, const char *title, const recipe *r)
{
    fprintf(f, "%s (per micro-batch, ms)\n", title);
    fprintf(f, "  %-28s %-11s %-8s %9s %9s %9s  %s\n", "op", "kind", "stream", "fwd", "bwd",
            "recompute", "overlap");
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        double rc = recipe_op_recompute_s(o);
        fprintf(f, "  %-28s %-11s %-8s %9.3f %9.3f %9.3f  %s\n", o->name,
                recipe_kind_name(o->kind), stream_name(o->stream), o->fwd_s * 1e3, o->bwd_s * 1e3,
                rc * 1e3, o->stream == RECIPE_STREAM_COMPUTE && o->overlap == RECIPE_OVERLAP_NONE
                              ? "-" : overlap_name(o->overlap));
    }
    recipe_time x;
    recipe_price(r, &x);
    fprintf(f, "  sum: compute fwd %.3f bwd %.3f recompute %.3f · exposed TP %.3f CP %.3f EP %.3f"
               " · FSDP gather %.3f reduce %.3f\n",
            x.fwd_s * 1e3, x.bwd_s * 1e3, x.recompute_s * 1e3, x.tp_s * 1e3, x.cp_s * 1e3,
            x.ep_s * 1e3, x.gather_s * 1e3, x.reduce_s * 1e3);
    if (r->host_fwd_s > 0 || r->host_bwd_s > 0)
        fprintf(f, "  host issue floor: fwd %.3f bwd %.3f\n", r->host_fwd_s * 1e3,
                r->host_bwd_s * 1e3);
}

void output_recipe_ops(FILE *f, const estimate *e, const model_spec *m, const system_spec *sys)
{
    recipe r;
    bool has_dense = model_moe_layers(m) < m->layers;
    if (has_dense) {
        recipe_layer(m, sys, &e->training, &e->layout, false, &r, NULL);
        print_recipe(f, "dense layer", &r);
    }
    if (model_moe_layers(m) > 0) {
        recipe_layer(m, sys, &e->training, &e->layout, true, &r, NULL);
        print_recipe(f, "MoE layer", &r);
        fprintf(f, "  %d local experts, %.0f rows per local expert\n", r.local_experts,
                r.expert_rows);
    }
    recipe_head(m, sys, &e->training, &e->layout, &r, NULL);
    print_recipe(f, "loss head", &r);
}
