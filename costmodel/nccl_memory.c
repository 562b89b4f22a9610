/* nccl_memory.c — NCCL's device memory per GPU in a torch run (nccl_memory.h). */
#include "nccl_memory.h"

int nccl_memory_groups(const layout *l)
{
    int gpus = layout_gpus(l);
    int g = (l->tp > 1) + (l->pp > 1) + (l->ep > 1);
    /* HSDP: FSDP2 on a 2-D (replicate, shard) mesh, one communicator per dimension, both
     * over fewer ranks than the world (torch device_mesh.py _init_process_groups: a group per
     * mesh dimension; measured: parallel_run.py --replicate 2 on 4 GPUs holds 0.93 GB for the
     * two beside its size-1 tp dimension's, the same as tp 2 x dp 2's two groups,
     * bench/results/mem26_2026-11-29) */
    if (l->shard_size > 0 && l->shard_size < l->dp * l->cp)
        g += 2;
    else if (l->dp > 1 && l->dp * l->cp < gpus)
        g++;
    if (l->cp > 1 && l->cp < gpus) g++;
    return g;
}

int nccl_memory_p2p_peers(const layout *l)
{
    int p = 0;
    if (l->pp > 1) p += l->pp == 2 ? 1 : 2;
    if (l->ep > 1) p += l->ep - 1;
    if (l->cp > 1 && l->framework == FRAMEWORK_TORCHTITAN) p += l->cp - 1;
    return p;
}

double nccl_memory_bytes(const system_spec *sys, const layout *l)
{
    return nccl_memory_bytes_with(sys, l, 0);
}

double nccl_memory_bytes_with(const system_spec *sys, const layout *l, int one_rank_groups)
{
    if (layout_gpus(l) < 2 || sys->nccl_world_communicator_bytes <= 0) return -1;
    return sys->nccl_world_communicator_bytes + nccl_memory_groups(l) * sys->nccl_group_bytes +
           nccl_memory_p2p_peers(l) * sys->nccl_p2p_peer_bytes +
           (one_rank_groups > 0 ? one_rank_groups : 0) * sys->nccl_one_rank_group_bytes;
}
