/*
 * cp_allgather.c — the all-gather rotate method of PyTorch's context parallelism (see
 * cp_allgather.h for the source lines and the measurement).
 */
#include "cp_allgather.h"

#include <math.h>

#include "collective.h"

cp_allgather_cost cp_allgather_price(const system_spec *sys, layout_group g, double kv_bytes,
                                     int cp, double attn_fwd_s, double attn_bwd_s)
{
    cp_allgather_cost c = {0};
    if (cp < 2 || kv_bytes <= 0) return c;
    c.gathered_bytes = cp * kv_bytes;
    c.allgather_s = collective_time_s(sys, COLL_ALL_GATHER, c.gathered_bytes, g);
    /* step 0 computes 1/cp of the rank's attention (equal steps under head-tail balancing) */
    c.exposed_fwd_s = fmax(0.0, c.allgather_s - attn_fwd_s / cp);
    c.exposed_bwd_s = fmax(0.0, c.allgather_s - attn_bwd_s / cp);
    return c;
}
