/*
 * host_dispatch.c — the host's issue time of an eager step as a floor under the GPU time (see
 * host_dispatch.h for the mechanism and where the constant comes from).
 *
 * The host issues a pass's launches one after another while the GPU drains its queue: the pass
 * takes at least the GPU's time and at least the host's (launches x host time per launch);
 * with a queue that never runs dry, the larger of the two (the host runs ahead during long
 * GEMMs and the short kernels after them catch up). That is the floor priced here. (The
 * opposite bound, every launch at least the host's time, sum of max(kernel, host), was tried
 * on bench/realruns and over-predicts every GPU-bound run by 10-25%: the queue does hide the
 * host there.) Launches the op list does not price on the GPU (the per-tensor copies of
 * FSDP2's all-gather copy-out, the separate Linear modules of a merged GEMM op, the attention
 * output's .contiguous()) count on the host side.
 */
#include "host_dispatch.h"

#include <string.h>

/* Parameter tensors of one decoder layer as the model code holds them (each a copy-out after
 * every all-gather at world size 1: split_with_sizes_copy per tensor; bench/realruns/results/
 * kernels-h100.json shows 21 device-to-device copies per Llama layer): q, k, v, o, two norms,
 * Qwen3's q/k norms, the MLP's gate, up, down (the MoE block: router and the experts' two 3D
 * tensors, transformers 5). */
static double layer_tensors(const model_spec *m, bool moe)
{
    double n = 4 + 2 + (m->qk_norm ? 2 : 0);
    if (moe) n += 1 + 2 + (m->shared_experts ? 3 : 0);
    else n += m->activation == MODEL_ACT_SWIGLU ? 3 : 2;
    return n;
}

/* Linear modules behind one GEMM op of the recipe (the recipe merges q, k, v into "qkv" and
 * gate, up into "mlp_up"; Hugging Face and the native model run them as separate modules). */
static double modules_of(const recipe_op *o, const model_spec *m)
{
    if (!strcmp(o->name, "qkv")) return 3;
    if ((!strcmp(o->name, "mlp_up") || !strcmp(o->name, "shared_up")) &&
        m->activation == MODEL_ACT_SWIGLU)
        return 2;
    return 1;
}

void host_dispatch_launches(const recipe *r, const layout *l, double *fwd, double *bwd,
                            double *recompute)
{
    double f = 0, b = 0, re = 0;
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        double of = 0, ob = 0;
        switch (o->kind) {
        case RECIPE_GEMM: of = 1, ob = 2; break;
        case RECIPE_ATTENTION: of = 1, ob = 4; break;
        case RECIPE_ELEMENTWISE:
            if (o->phase == RECIPE_FWD) of = o->launches;
            else ob = o->launches;
            break;
        case RECIPE_FSDP_GATHER:
            of = 1, ob = l->reshard_after_forward ? 1 : 0;
            break;
        case RECIPE_FSDP_REDUCE: ob = 1; break;
        default:
            of = o->fwd_s > 0 ? 1 : 0, ob = o->bwd_s > 0 ? 1 : 0;
            break;
        }
        f += of;
        b += ob;
        if (o->recompute) re += of;
    }
    *fwd = f;
    *bwd = b;
    *recompute = re;
}

bool host_dispatch_applies(const system_spec *sys, const layout *l)
{
    return l->framework == FRAMEWORK_FSDP2 && !l->compile && sys->host_eager_launch_s > 0;
}


void host_dispatch_floor(const system_spec *sys, const model_spec *m, const layout *l,
                         const recipe *r, bool layer, bool moe, recipe_time *x)
{
    if (!host_dispatch_applies(sys, l)) return;
    double c = sys->host_eager_launch_s;
    double f = 0, b = 0, re = 0; /* host-side launches */
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        double lf = 0, lb = 0;
        switch (o->kind) {
        case RECIPE_GEMM: {
            double k = modules_of(o, m);
            lf = k, lb = 2 * k;
            break;
        }
        case RECIPE_ATTENTION: /* + the output's .contiguous() copy, and its backward */
            lf = 2, lb = 5;
            break;
        case RECIPE_ELEMENTWISE:
            if (o->phase == RECIPE_FWD) lf = o->launches;
            else lb = o->launches;
            break;
        case RECIPE_FSDP_COPY:
            lf = o->fwd_s > 0, lb = o->bwd_s > 0;
            break;
        default: /* collectives: counted with the FSDP unit below */
            break;
        }
        f += lf * c;
        b += lb * c;
        if (o->recompute) re += lf * c;
    }
    if (layer && l->sharding == SHARDING_FSDP) {
        /* FSDP2 per unit: copy-in, the all-gather and one copy-out per tensor for each gather;
         * the reduce-scatter's copy-in and the collective */
        double gather = (2 + layer_tensors(m, moe)) * c;
        f += gather;
        b += (l->reshard_after_forward ? gather : 0) + 2 * c;
    }
    if (f > x->fwd_s) x->fwd_s = f;
    double gpu_b = x->bwd_s + x->recompute_s, host_b = b + re;
    if (host_b > gpu_b) x->bwd_s += host_b - gpu_b;
}
