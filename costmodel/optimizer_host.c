/* optimizer_host.c — host time of torch's clip and AdamW step (see optimizer_host.h). */
#include "optimizer_host.h"

#include "host_dispatch.h"
#include "impl.h"
#include "memory.h"

#include <math.h>

#define MULTI_TENSOR_ELEMENTS_PER_LAUNCH (65536.0 * 320.0)

double optimizer_host_tensors(const model_spec *m, const layout *l, int stage)
{
    int n = layout_stage_layers(m, l, stage);
    int start = layout_stage_start(m, l, stage);
    double t = 0;
    for (int i = start; i < start + n; i++)
        t += host_dispatch_layer_tensors(m, memory_layer_is_moe(m, i));
    if (stage == 0) t += 1;                                   /* embedding */
    if (stage == l->pp - 1) t += m->tied_embeddings ? 1 : 2;  /* final norm, lm_head */
    return t;
}

double optimizer_host_s(const system_spec *sys, const model_spec *m, const layout *l, int stage,
                        double local_params)
{
    if (!layout_is_pytorch(l) || sys->host_clip_tensor_s <= 0 || local_params <= 0) return 0;
    bool foreach = layout_optimizer_impl_of(l) == OPTIMIZER_IMPL_FOREACH;
    double per_tensor = sys->host_clip_tensor_s + (foreach ? sys->host_adamw_foreach_tensor_s : 0);
    double ops = 2 + (foreach ? 8 : 0);
    double launches = ops * ceil(local_params / MULTI_TENSOR_ELEMENTS_PER_LAUNCH);
    return optimizer_host_tensors(m, l, stage) * per_tensor +
           launches * sys->host_multi_tensor_launch_s;
}
