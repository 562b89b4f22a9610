/*
 * offload.c — Megatron CPU offload's host-link time and memory (see offload.h).
 */
#include "offload.h"

#include <math.h>

double offload_optimizer_fraction(const layout *l)
{
    if (l->framework != FRAMEWORK_MEGATRON || l->optimizer_offload_pct <= 0) return 0;
    return l->optimizer_offload_pct >= 100 ? 1.0 : l->optimizer_offload_pct / 100.0;
}

double offload_optimizer_step_s(const system_spec *sys, double local_params, double gpu_full_s,
                                double f)
{
    double host = f * local_params;
    double link = sys->pcie_bandwidth_bytes_per_s > 0 ? sys->pcie_bandwidth_bytes_per_s : 1;
    double adam = sys->host_adam_params_per_s > 0 ? sys->host_adam_params_per_s : 1;
    double d2h_s = 4.0 * host / link, h2d_s = 4.0 * host / link;
    double cpu_s = host / adam;
    return fmax((1 - f) * gpu_full_s, d2h_s) + fmax(cpu_s, h2d_s);
}

double offload_optimizer_host_bytes(const system_spec *sys, double local_params, double f)
{
    return sys->gpus_per_node * 16.0 * f * local_params;
}

int offload_activation_layers(const model_spec *m, const layout *l)
{
    if (!l->activation_offload || l->pp > 1) return 0;
    return m->layers > 1 ? m->layers - 1 : 0;
}

double offload_activation_exposed_s(const system_spec *sys, double bytes, double compute_s)
{
    double link = sys->pcie_bandwidth_bytes_per_s > 0 ? sys->pcie_bandwidth_bytes_per_s : 1;
    return fmax(0, bytes / link - compute_s);
}
