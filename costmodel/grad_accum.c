/* grad_accum.c — unfused weight-gradient accumulation across micro-batches; see grad_accum.h. */
#include "grad_accum.h"

#include "compute.h"

double grad_accum_step_s(const system_spec *sys, const training_spec *t, double params,
                         int micro)
{
    if (!t->grad_accum_unfused || micro <= 1 || !(params > 0)) return 0;
    return (micro - 1) * compute_stream_s(sys, GRAD_ACCUM_UNFUSED_BYTES_PER_PARAM * params);
}
