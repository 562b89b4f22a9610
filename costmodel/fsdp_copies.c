/*
 * fsdp_copies.c — FSDP2's copies around each unit's collectives (see fsdp_copies.h for the
 * sources). Bytes: bf16 2, fp32 4, read plus written; n = ceil(p / g) elements per rank, g n the
 * padded unsharded unit (FSDP2 pads dim 0 to a multiple of g, _get_dim0_padded_size).
 */
#include "fsdp_copies.h"

#include "compute.h"

#include <math.h>
#include <string.h>

static double all_launches_s(const system_spec *sys, const elementwise_kernel *k);

bool fsdp_copies_apply(const layout *l)
{
    return layout_is_pytorch(l) && l->sharding == SHARDING_FSDP;
}

static ew_access shape(ew_pattern p, int eo, int ea, double rows, double n)
{
    ew_access a = {.pattern = p, .esize = {eo, ea, 0}, .n = {1, (long)rows, (long)n}};
    for (int k = 0; k < 2; k++) a.stride[k][1] = (long)n, a.stride[k][2] = 1;
    return a;
}

void fsdp_copies_unit(double params, int shard_group, fsdp_copies *out)
{
    memset(out, 0, sizeof *out);
    double g = shard_group > 0 ? shard_group : 1;
    double n = ceil(params / g);
    if (n <= 0) return;
    out->params = g * n;
    /* multi_tensor_apply: a block per 65536-element chunk, a launch per 320 blocks */
    int launches = (int)ceil(ceil(n / FSDP_FOREACH_CHUNK) / FSDP_FOREACH_MAX_BLOCKS);
    out->cast_in = (elementwise_kernel){"fsdp.copy_in.cast", 6.0 * n / launches, launches,
                                        shape(EW_FOREACH_COPY, 2, 4, 1, n), 0};
    out->slot_in = (elementwise_kernel){"fsdp.copy_in.slot", 4.0 * n / launches, launches,
                                        shape(EW_FOREACH_COPY, 2, 2, 1, n), 0};
    out->copy_out = (elementwise_kernel){"fsdp.copy_out", 4.0 * g * n, 1,
                                         shape(EW_SPLIT_COPY, 2, 2, g, n), 0};
    out->rs_cast = (elementwise_kernel){"fsdp.rs_copy_in", 6.0 * g * n, 1,
                                        shape(EW_CHUNK_CAT, 4, 2, g, n), 0};
    /* the unsharded gradient: g n elements (one launch per parameter tensor in torch; priced
     * as one, the ~10 launch gaps of a layer left out) */
    out->acc_cast = (elementwise_kernel){"fsdp.acc_cast", 6.0 * g * n, 1,
                                         shape(EW_UNROLLED, 4, 2, 1, g * n), 0};
    out->acc_add = (elementwise_kernel){"fsdp.acc_add", 10.0 * g * n, 1,
                                        shape(EW_UNROLLED, 4, 4, 1, g * n), 0};
    out->acc_add.access.esize[2] = 2;
    for (int d = 1; d < 3; d++) out->acc_add.access.stride[2][d] = out->acc_add.access.stride[0][d];
    out->rs_copy = (elementwise_kernel){"fsdp.rs_copy_in", 8.0 * g * n, 1,
                                        shape(EW_CHUNK_CAT, 4, 4, g, n), 0};
}

void fsdp_copies_of(const layout *l, double params, fsdp_copies *out)
{
    fsdp_copies_unit(params, layout_shard_group(l), out);
    out->one_gpu = layout_gpus(l) == 1;
}

bool fsdp_pipelined(const layout *l) { return fsdp_copies_apply(l) && l->pp > 1; }

double fsdp_pipelined_copy_out_s(const system_spec *sys, const fsdp_copies *c, int m)
{
    if (m < 1) m = 1;
    return all_launches_s(sys, &c->copy_out) / m;
}

double fsdp_pipelined_grad_s(const system_spec *sys, const fsdp_copies *c, int m)
{
    if (m < 1) m = 1;
    return (all_launches_s(sys, &c->acc_cast) + (m - 1) * all_launches_s(sys, &c->acc_add) +
            all_launches_s(sys, &c->rs_copy)) / m;
}

static double all_launches_s(const system_spec *sys, const elementwise_kernel *k)
{
    return k->count > 0 ? k->count * elementwise_eager_kernel_s(sys, k) : 0;
}

double fsdp_copy_in_s(const system_spec *sys, const fsdp_copies *c)
{
    if (c->one_gpu) return 0; /* no all-gather at one rank (fsdp_copies.h) */
    return all_launches_s(sys, &c->cast_in) + all_launches_s(sys, &c->slot_in);
}

double fsdp_copy_out_s(const system_spec *sys, const fsdp_copies *c)
{
    /* one rank: the unshard's per-tensor cast (6 bytes) and copy (4 bytes), streaming */
    if (c->one_gpu) return compute_stream_s(sys, 10.0 * c->params);
    return all_launches_s(sys, &c->copy_out);
}

double fsdp_rs_copy_in_s(const system_spec *sys, const fsdp_copies *c)
{
    return all_launches_s(sys, &c->rs_cast);
}

double fsdp_rs_one_rank_s(const system_spec *sys, const fsdp_copies *c)
{
    return c->one_gpu ? compute_stream_s(sys, 8.0 * c->params) : 0;
}

double fsdp_rs_copy_in_host_s(const system_spec *sys, double params, int shard_group)
{
    double g = shard_group > 0 ? shard_group : 1;
    double n = ceil(params / g);
    if (n <= 0) return 0;
    double blocks = ceil(4.0 * n / FSDP_CHUNK_CAT_BLOCK_BYTES);
    double knee = sys->host_chunk_cat_knee_blocks;
    if (sys->host_chunk_cat_block_large_s <= 0 || blocks <= knee)
        return sys->host_chunk_cat_block_s * blocks;
    /* past the knee each further block costs the larger rate (fsdp_copies.h) */
    return sys->host_chunk_cat_block_s * knee + sys->host_chunk_cat_block_large_s * (blocks - knee);
}

int fsdp_gathers_per_microbatch(const layout *l) { return l->reshard_after_forward ? 2 : 1; }

double fsdp_root_params(const model_spec *m, const layout *l, int stage)
{
    double r = 0;
    if (stage == 0) r += model_embedding_params(m);
    if (stage == l->pp - 1) r += model_output_params(m);
    return r;
}
