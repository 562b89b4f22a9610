/* nccl_memory.c — NCCL's device memory per GPU in a torch run (nccl_memory.h). */
#include "nccl_memory.h"

int nccl_memory_groups(const layout *l)
{
    int gpus = layout_gpus(l);
    int g = (l->tp > 1) + (l->pp > 1) + (l->ep > 1);
    if (l->dp > 1 && l->dp * l->cp < gpus) g++;
    if (l->cp > 1 && l->cp < gpus) g++;
    if (l->shard_size > 0 && l->shard_size < gpus) g++; /* HSDP: shard and replica groups */
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
    if (layout_gpus(l) < 2 || sys->nccl_world_communicator_bytes <= 0) return -1;
    return sys->nccl_world_communicator_bytes + nccl_memory_groups(l) * sys->nccl_group_bytes +
           nccl_memory_p2p_peers(l) * sys->nccl_p2p_peer_bytes;
}
