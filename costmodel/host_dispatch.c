/*
 * host_dispatch.c — the host's issue time of an eager step as a floor under the GPU time (see
 * host_dispatch.h for the mechanism and where the constant comes from).
 */
#include "host_dispatch.h"

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

void host_dispatch_floor(const system_spec *sys, const layout *l, const recipe *r,
                         recipe_time *x)
{
    if (!host_dispatch_applies(sys, l)) return;
    double lf, lb, lr;
    host_dispatch_launches(r, l, &lf, &lb, &lr);
    double c = sys->host_eager_launch_s;
    if (lf * c > x->fwd_s) x->fwd_s = lf * c;
    double gpu_b = x->bwd_s + x->recompute_s, host_b = (lb + lr) * c;
    if (host_b > gpu_b) x->bwd_s += host_b - gpu_b;
}
