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

double cp_torch_kv_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    if (l->framework != FRAMEWORK_TORCHTITAN || l->cp < 2) return 0;
    double a = m->heads, kvh = m->mla ? a : m->kv_heads;
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
    double vd = m->mla ? m->v_head_dim : m->head_dim;
    if (!m->mla && layout_impl_of(l) == IMPL_NATIVE && a > kvh) kvh = a; /* repeat_kv */
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    return tokens * kvh * (qk + vd) * 2.0 / l->tp;
}

double cp_torch_backward_transient_bytes(const model_spec *m, const training_spec *t,
                                         const layout *l)
{
    double kv = cp_torch_kv_bytes(m, t, l);
    if (kv <= 0) return 0;
    double vd = m->mla ? m->v_head_dim : m->head_dim;
    double e = (double)l->mbs * t->seq_len / l->cp * m->heads / l->tp * vd; /* output elements */
    double k = kv / 4.0; /* key elements (k and v of 2 bytes each make kv) */
    double bytes = 4.0 * (e + 2.0 * k) + 2.0 * 8.0 * k;
    if (!l->cp_rotate_alltoall) bytes += l->cp * kv;
    return bytes;
}
