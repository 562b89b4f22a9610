/*
 * nccl_memory.h — device memory NCCL holds per GPU in a multi-GPU torch run, outside torch's
 * allocator: the world communicator, one more communicator per further process group, and the
 * buffers of each point-to-point connection (pipeline send/recv, all-to-all).
 *
 * Measured, not cited: bench/realruns/nccl_memory_fit.py derives the three figures of
 * data/systems/h100.json and h200.json ("framework" section) from the multi-GPU real runs
 * (bench/results/mgpu_2026-11-27, NCCL 2.28.9, NVLink, NCCL_NVLS_ENABLE=0, torch 2.11):
 *   world communicator  context_after_nccl_bytes - cuda_context_bytes over >= 2 ranks: 0.881 GB
 *                       (a one-rank communicator, nccl_communicator_bytes, is 0.585 GB);
 *   per further group   0.453 GB (tp, tp x dp, pp and ep runs; 0.41-0.51);
 *   per p2p peer        0.417 GB (pp 4 middle minus pp 2: 0.401; ep 4 minus ep 2 per peer:
 *                       0.402; cp 2's alltoall rotation: 0.449).
 * The model reproduces every layout's NCCL bytes within 0.12 GB (the script prints the check).
 */
#ifndef PLAN_NCCL_MEMORY_H
#define PLAN_NCCL_MEMORY_H

#include "layout.h"
#include "system.h"

/* Process groups a torch layout builds beside the world group: one per model-parallel mesh
 * dimension in use (tp, pp, ep: DeviceMesh.get_group of a multi-dimensional mesh creates a
 * communicator per dimension), the data-parallel shard group when it spans fewer ranks than
 * the world, cp when it does; under HSDP both the shard and the replica group (each spans
 * fewer ranks than the world, whatever tp is). A group over every rank on a
 * one-dimensional mesh is the default group (FSDP2 alone; cp alone). */
int nccl_memory_groups(const layout *l);
/* Peers the busiest rank exchanges point-to-point with: pipelining's previous and next stage
 * (1 at pp 2, else 2: 1F1B's middle stages, interleaved's wrap from the last stage to the
 * first), every other rank of the ep group (all-to-all dispatch) and, under torchtitan, of the
 * cp group (the alltoall rotation of ring attention). */
int nccl_memory_p2p_peers(const layout *l);
/* NCCL bytes per GPU for torch layout l on sys; -1 when sys lacks the multi-rank figures or
 * the layout runs on one GPU (memory.c keeps its one-rank communicator count then). */
double nccl_memory_bytes(const system_spec *sys, const layout *l);
/* The same with one_rank_groups further communicators of a single rank (training_spec's: a
 * program whose device mesh has size-1 dimensions beyond the layout's), each
 * sys->nccl_one_rank_group_bytes. Measured (bench/results/mem26_2026-11-29): adding one size-1
 * dimension to bench/realruns/parallel_run.py's TP mesh, (dp, tp) -> (rep, dp, tp) at rep 1
 * (6796bf1, nothing else changed in that path), raised nonalloc_end_bytes by 406,847,488 B at
 * tp 2, 409,010,176 B at tp 4 and 406,847,488 B at tp 2 x dp 2 (medians, H200 and H100 hosts,
 * NCCL 2.28.9, torch 2.11; DeviceMesh splits every dimension's group from the default one
 * when init_process_group had a device_id, torch/distributed/device_mesh.py
 * _init_process_groups). */
double nccl_memory_bytes_with(const system_spec *sys, const layout *l, int one_rank_groups);

#endif
