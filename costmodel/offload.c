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
    int most = m->layers > 1 ? m->layers - 1 : 0;
    if (l->activation_offload_layers > 0 && l->activation_offload_layers < most)
        return l->activation_offload_layers;
    return most;
}

#define OFFLOAD_MAX_LAYERS 1024 /* more decoder layers than any model has */

void offload_activation_wait_s(const system_spec *sys, const offload_activation_pass *p,
                               double *fwd_wait_s, double *bwd_wait_s)
{
    *fwd_wait_s = *bwd_wait_s = 0;
    int n = p->n, k = p->n_off;
    if (n > OFFLOAD_MAX_LAYERS) n = OFFLOAD_MAX_LAYERS;
    if (k > n - 1) k = n - 1;
    if (k <= 0) return;
    double link = sys->pcie_bandwidth_bytes_per_s > 0 ? sys->pcie_bandwidth_bytes_per_s : 1;
    double copy_end[OFFLOAD_MAX_LAYERS];

    /* forward. t: the compute stream's clock; q: when the copy stream is free. Layer i's copy
     * is queued at the start of layer i+1 (fwd_step), after layer i's forward; layer n-k+i's
     * forward waits for it (release_activation_forward_gpu_memory). */
    double t = 0, q = 0, busy = 0;
    for (int j = 0; j < n; j++) {
        int i = j - (n - k);
        if (i >= 0 && copy_end[i] > t) t = copy_end[i];
        t += p->fwd_s[j];
        busy += p->fwd_s[j];
        if (j < k) { /* this layer's copy, queued as the next layer starts */
            q = (q > t ? q : t) + p->bytes[j] / link;
            copy_end[j] = q;
        }
    }
    *fwd_wait_s = t - busy;

    /* backward, layers n-1 down to 0. At layer j's start (bwd_step) the reload of layer
     * i = j - (n-1-k) is queued; layer j < k waits for its own reload (the saved tensors'
     * pop). */
    t = 0, q = 0, busy = 0;
    for (int j = n - 1; j >= 0; j--) {
        int i = j - (n - 1 - k);
        if (i >= 0 && i < k) {
            q = (q > t ? q : t) + p->bytes[i] / link;
            copy_end[i] = q;
        }
        if (j < k && copy_end[j] > t) t = copy_end[j];
        t += p->bwd_s[j];
        busy += p->bwd_s[j];
    }
    *bwd_wait_s = t - busy;
}
