/*
 * estimate_feasible.c — whether a priced layout can run: the verdict and the one-line reason
 * every printer shows (no inter-node network for a multi-node plan, out of memory, the
 * allocator's fragmentation, a step that could not be priced, host memory for CPU offload).
 * Split from estimate.c (issue 14: that file was at the 800-line limit) as the one concept there
 * that reads the step only as a finished figure: estimate_time_assemble calls it last, with the
 * estimate's memory and step in place.
 */
#include "estimate_internal.h"
#include "units.h"

#include <stdio.h>

#include "collective.h"
#include "memory.h"
#include "offload.h"

bool estimate_time_priced(const estimate *e)
{
    /* any step holding one unpriced transfer is at least COLL_UNPRICED_S; no real step comes
     * within ten orders of magnitude of it */
    return e->time.step_s < COLL_UNPRICED_S * 1e-10;
}

/* The feasibility verdict of out (its memory and step in place); local_params: the parameters
 * this GPU updates (estimate_optimizer_local_s), for CPU offload's host memory. */
void estimate_feasibility(const system_spec *sys, const layout *l, double local_params,
                          estimate *out)
{
    out->feasible = true;
    const memory_breakdown *mb = &out->memory;
    if (out->gpus > sys->gpus_per_node && system_inter_bandwidth_per_gpu(sys) <= 0) {
        /* Every plan on more than one node has a group that crosses nodes (data-parallel
         * replicas reduce gradients, pipeline stages send activations), whatever the framework
         * and sharding; an HSDP plan once "fit" here because only its shard group was priced
         * (issue 18). */
        out->feasible = false;
        snprintf(out->infeasible_reason, sizeof out->infeasible_reason,
                 "the plan spans %d nodes but system '%s' has no inter-node network "
                 "(nics_per_node is 0): use at most %d GPUs, or a system with a network",
                 (out->gpus + sys->gpus_per_node - 1) / sys->gpus_per_node, sys->name,
                 sys->gpus_per_node);
    } else if (mb->total_bytes > mb->capacity_bytes) {
        out->feasible = false;
        snprintf(out->infeasible_reason, sizeof out->infeasible_reason,
                 "out of memory on pipeline stage %d: needs %.1f GiB of %.1f GiB (%.1f GiB over)",
                 mb->stage, mb->total_bytes / UNITS_GIB_BYTES, mb->capacity_bytes / UNITS_GIB_BYTES,
                 (mb->total_bytes - mb->capacity_bytes) / UNITS_GIB_BYTES);
    } else if (!memory_fits(mb) && mb->replay_oom) {
        /* the allocator replay of the step ran out of memory on this device (memory.h) */
        out->feasible = false;
        snprintf(out->infeasible_reason, sizeof out->infeasible_reason,
                 "likely out of memory on stage %d (allocator fragmentation): %.1f of %.1f GiB "
                 "at the peak, but torch's caching allocator, replayed, strands free memory in "
                 "split segments (%.1f GiB needed); use a smaller micro-batch or "
                 "--expandable-segments",
                 mb->block_stage, mb->total_bytes / UNITS_GIB_BYTES,
                 mb->capacity_bytes / UNITS_GIB_BYTES, mb->need_bytes / UNITS_GIB_BYTES);
    } else if (!memory_fits(mb)) {
        /* fits by the byte count, but the allocator cannot be sure to place the largest
         * block (memory.h, fragmentation) */
        out->feasible = false;
        snprintf(out->infeasible_reason, sizeof out->infeasible_reason,
                 "likely out of memory on stage %d (allocator fragmentation): %.1f of %.1f GiB "
                 "leaves %.2f GiB, less than the %.2f GiB fp32 logits block, and the cache "
                 "(%.1f GiB reserved) cannot keep it; use a smaller micro-batch or "
                 "--expandable-segments",
                 mb->block_stage, mb->total_bytes / UNITS_GIB_BYTES,
                 mb->capacity_bytes / UNITS_GIB_BYTES,
                 (mb->capacity_bytes - mb->total_bytes) / UNITS_GIB_BYTES,
                 mb->largest_block_bytes / UNITS_GIB_BYTES,
                 (mb->reserved_bytes + mb->framework_bytes) / UNITS_GIB_BYTES);
    } else if (!estimate_time_priced(out)) {
        out->feasible = false;
        snprintf(out->infeasible_reason, sizeof out->infeasible_reason,
                 "a communication group spans nodes but system '%s' has no inter-node network",
                 sys->name);
    } else if (l->offload || offload_optimizer_fraction(l) > 0 || mb->host_activation_bytes > 0) {
        double host_need = l->offload ? sys->gpus_per_node * 16.0 * local_params
                           : offload_optimizer_fraction(l) > 0
                               ? offload_optimizer_host_bytes(sys, local_params,
                                                              offload_optimizer_fraction(l))
                               : 0;
        /* Megatron's activation offload parks each GPU's activations in (pinned) host memory,
         * every GPU of the node at once */
        host_need += sys->gpus_per_node * mb->host_activation_bytes;
        if (host_need > sys->host_memory_bytes) {
            out->feasible = false;
            snprintf(out->infeasible_reason, sizeof out->infeasible_reason,
                     "CPU offload needs %.0f GiB of host memory per node, the node has %.0f GiB",
                     host_need / UNITS_GIB_BYTES, sys->host_memory_bytes / UNITS_GIB_BYTES);
        }
    }
}
