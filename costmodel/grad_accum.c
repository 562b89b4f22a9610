/* grad_accum.c — unfused weight-gradient accumulation across micro-batches; see grad_accum.h. */
#include "grad_accum.h"

#include "compute.h"
#include "shard_grads.h"

/* Megatron-FSDP (grad_accum.h, path 2): plan emits it with --no-gradient-accumulation-fusion. */
static bool mfsdp_unfused(const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && layout_grads_sharded(l); /* both strategies */
}

bool grad_accum_unfused(const training_spec *t, const layout *l)
{
    return mfsdp_unfused(l) || t->grad_accum_unfused;
}

double grad_accum_layer_bytes(const training_spec *t, const layout *l, double params)
{
    if (!(params > 0)) return 0;
    if (mfsdp_unfused(l)) return (2.0 + (t->grad_reduce_bf16 ? 2.0 : 4.0)) * params;
    if (!t->grad_accum_unfused) return 0;
    int micro = layout_microbatches(l, t);
    if (micro <= 1) return 0;
    return GRAD_ACCUM_UNFUSED_BYTES_PER_PARAM * params * (micro - 1) / micro;
}

double grad_accum_step_s(const system_spec *sys, const training_spec *t, double params,
                         int micro)
{
    if (!t->grad_accum_unfused || micro <= 1 || !(params > 0)) return 0;
    return (micro - 1) * compute_stream_s(sys, GRAD_ACCUM_UNFUSED_BYTES_PER_PARAM * params);
}

double grad_buffer_divide_s(const system_spec *sys, const training_spec *t, double params)
{
    if (!t->grad_buffer_divide || !(params > 0)) return 0;
    return compute_stream_s(sys, 8.0 * params);
}
