/*
 * search_uneven.c — the uneven-pipeline variant of a pipeline layout (search_uneven.h). One
 * variant a layout keeps the space (and the search's time) within twice the pipeline layouts;
 * the estimate decides whether it beats the even split. Megatron states any such split
 * (--pipeline-model-parallel-layout), torchtitan the ones with fewer layers on the ends
 * (first/last_stage_less_layers), which these all are.
 */
#include "search_uneven.h"

#include <math.h>

/* The head's GEMM work in decoder layers: vocab x hidden against a layer's matrix parameters
 * (attention + MLP, active experts for MoE). Llama-3.1-8B: 128256 x 4096 / 218e6 = 2.4;
 * Llama-3.1-405B: 128256 x 16384 / 3.2e9 = 0.66. */
double search_uneven_head_layers(const model_spec *m)
{
    double layer = model_attention_params(m) +
                   (model_is_moe(m) ? model_params_active(m) / m->layers : model_dense_mlp_params(m));
    return layer > 0 ? (double)m->vocab * m->hidden / layer : 1;
}

bool search_uneven_variant(const model_spec *m, double head_layers, const layout *l,
                           layout *out)
{
    if (l->pp < 2 || l->vpp != 1 || l->pp_first_layers || l->pp_last_layers) return false;
    for (int s = 1; s <= 4; s++) {
        if ((m->layers + s) % l->pp) continue;
        int mid = (m->layers + s) / l->pp;
        int b = (int)lround(head_layers);
        if (b < 1) b = 1;
        if (b > s) b = s;
        int a = s - b;
        if (mid - a < 1 || mid - b < 1) return false;
        *out = *l;
        out->pp_first_layers = mid - a;
        out->pp_last_layers = mid - b;
        /* a variant that splits as the base does adds nothing (e.g. 80 layers on pp 2: 40/40) */
        for (int st = 0; st < l->pp; st++)
            if (layout_stage_layers(m, out, st) != layout_stage_layers(m, l, st)) return true;
        return false;
    }
    return false;
}

int search_uneven_account_vpps(const model_spec *m, int pp, const int *have, int nhave,
                               int *out, int max)
{
    if (pp < 2 || (m->layers + 2) % pp) return 0;
    int per = (m->layers + 2) / pp, n = 0;
    if (per < 3) return 0; /* the end ranks need a decoder layer each */
    for (int v = 2; v <= per && n < max; v++) {
        if (per % v) continue;
        bool seen = false;
        for (int i = 0; i < nhave; i++) seen = seen || have[i] == v;
        if (!seen) out[n++] = v;
    }
    return n;
}

void search_uneven_account_split(const model_spec *m, layout *l)
{
    int per = (m->layers + 2) / l->pp;
    l->pp_first_layers = l->pp_last_layers = per - 1;
}
