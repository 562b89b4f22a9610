/*
 * pp_split.c — which decoder layers each pipeline stage holds (issues 19 and 21): the split
 * the estimate prices, the step simulator runs and the emitters write. One place, so the three
 * agree; layout.h declares the functions.
 *
 * Megatron (and FSDP2, which has no pipeline): the layers in equal parts, a remainder on
 * stages 1..r, or --pp-first-layers / --pp-last-layers on the end stages with the middle ones
 * equal (written as --pipeline-model-parallel-layout, its chunks layout_chunk_layers).
 *
 * torchtitan splits virtual stages (pp x vpp of them; a single-stage schedule has one a rank)
 * by torchtitan b5bcd76 torchtitan/distributed/pipeline_parallel.py
 * _generate_llm_fqn_per_model_part (lines 357-467): the embedding counts as
 * `first_stage_less_layers` (a) layers and the norm + output as `last_stage_less_layers` (b)
 * (config/configs.py:197-207, both 1 by default), E = layers + a + b effective layers go
 * E / S to each of the S stages and one more to the first E % S of them, and stage 0 gives
 * a of its share to the embedding, stage S-1 b of its share to the head. The stages sit on the
 * ranks in a loop (stage c*pp + r on rank r) or, for ZBVZeroBubble and DualPipeV, in a V
 * (rank r holds stages r and 2pp-1-r): _get_pp_rank_to_stage_indices_mapping (lines 532-569).
 * torchtitan 9dec370 (the published 2024-12 runs) split with
 * generate_split_points instead (the first stage base = layers / S, the remainder on stages
 * 1..r): for Llama 3.1 405B's 126 layers on 8 or 16 stages both give 15/16x6/15 and 7/8x14/7.
 *
 * plan's fields for torchtitan: pp_first_layers / pp_last_layers are the decoder layers of the
 * first and last VIRTUAL stage, the other stages sharing the rest as evenly as it goes with the
 * extra ones on the earliest, which is torchtitan's rule for any (a, b) (shown in
 * layout_titan_split_keys); 0 / 0 is torchtitan's default, a = b = 1 (which may leave an end
 * stage with no decoder layer: 126 layers on 128 stages give 0/1x126/0).
 */
#include "layout.h"
#include "schedule.h"

/* With pp_first_layers / pp_last_layers (Megatron): the given stage(s) hold that many, the
 * others the rest in equal parts (layout_check requires them to divide). */
static bool uneven_split(const layout *l)
{
    return l->pp >= 2 && (l->pp_first_layers > 0 || l->pp_last_layers > 0);
}

static bool titan_split(const layout *l)
{
    return l->framework == FRAMEWORK_TORCHTITAN && l->pp >= 2;
}

static int vstages(const layout *l) { return l->pp * (l->vpp > 1 ? l->vpp : 1); }

int layout_titan_generate(int layers, int stages, int a, int b, int stage)
{
    if (stages <= 1) return layers;
    int e = layers + a + b, per = e / stages, extra = e % stages;
    int n = per + (stage < extra ? 1 : 0);
    if (stage == 0) n -= a;
    else if (stage == stages - 1) n -= b;
    return n;
}

int layout_vstage_layers(const model_spec *m, const layout *l, int k)
{
    int S = vstages(l), L = m->layers;
    if (!titan_split(l)) return layout_chunk_layers(m, l, k % l->pp, k / l->pp);
    int f = l->pp_first_layers, z = l->pp_last_layers;
    if (f <= 0 && z <= 0) return layout_titan_generate(L, S, 1, 1, k);
    if (k == 0 && f > 0) return f;
    if (k == S - 1 && z > 0) return z;
    int n = S - (f > 0) - (z > 0), rest = L - (f > 0 ? f : 0) - (z > 0 ? z : 0);
    if (n <= 0) return 0;
    int idx = k - (f > 0 ? 1 : 0); /* among the stages the fields leave free */
    return rest / n + (idx < rest % n ? 1 : 0);
}

bool layout_titan_split_keys(const model_spec *m, const layout *l, int *a_out, int *b_out,
                             int *stages_out)
{
    int S = vstages(l), L = m->layers, a = 1, b = 1;
    int f = l->pp_first_layers, z = l->pp_last_layers;
    if (f > 0 || z > 0) {
        int f_eff = layout_vstage_layers(m, l, 0), z_eff = layout_vstage_layers(m, l, S - 1);
        if (S == 2) {
            /* two stages: per = z + b, stage 0 per + extra - a */
            b = f_eff - z_eff - 1 > 0 ? f_eff - z_eff - 1 : 0;
            int per = z_eff + b;
            a = per >= f_eff ? per - f_eff : per + 1 - f_eff;
        } else {
            /* the free stages' base q and remainder r: torchtitan's per is q, its extra
             * stages are stage 0 (when it has more than q + 1 - a) and the free ones with q+1 */
            int n = S - (f > 0) - (z > 0), rest = L - (f > 0 ? f : 0) - (z > 0 ? z : 0);
            if (n <= 0 || rest < 0) return false;
            int q = rest / n, r = rest % n;
            if (f > 0) a = r > 0 ? q + 1 - f : (f <= q ? q - f : q + 1 - f);
            else a = 0;
            b = z > 0 ? q - z : 0;
        }
    }
    if (a_out) *a_out = a;
    if (b_out) *b_out = b;
    if (stages_out) *stages_out = S;
    if (a < 0 || b < 0) return false;
    /* torchtitan's own checks (pipeline_parallel.py:386-420): stages <= E, each "less" at
     * most E / S; then the split it generates must be the one priced */
    int e = L + a + b;
    if (S > e || a > e / S || b > e / S) return false;
    for (int k = 0; k < S; k++) {
        int n = layout_titan_generate(L, S, a, b, k);
        if (n < 0 || n != layout_vstage_layers(m, l, k)) return false;
    }
    return true;
}

int layout_titan_layers_per_stage(const model_spec *m, const layout *l)
{
    int a, b, S;
    if (!titan_split(l) || !layout_titan_split_keys(m, l, &a, &b, &S)) return 0;
    /* _get_pipeline_metadata (pipeline_parallel.py:219-225): S = ceil(E / k) */
    int e = m->layers + a + b, k = (e + S - 1) / S;
    return k > 0 && (e + k - 1) / k == S ? k : 0;
}

/* The rank's virtual stages' layers summed (torchtitan), the rank's count otherwise. */
int layout_stage_layers(const model_spec *m, const layout *l, int stage)
{
    if (titan_split(l)) {
        int v = l->vpp > 1 ? l->vpp : 1, n = 0;
        layout_pp_schedule kind = layout_pp_schedule_of(l);
        for (int c = 0; c < v; c++)
            n += layout_vstage_layers(m, l, schedule_vstage(kind, l->pp, c, stage));
        return n;
    }
    if (uneven_split(l)) {
        if (stage == 0 && l->pp_first_layers > 0) return l->pp_first_layers;
        if (stage == l->pp - 1 && l->pp_last_layers > 0) return l->pp_last_layers;
        int fixed = (l->pp_first_layers > 0) + (l->pp_last_layers > 0);
        int rest = m->layers - l->pp_first_layers - l->pp_last_layers;
        return l->pp > fixed ? rest / (l->pp - fixed) : 0;
    }
    int base = m->layers / l->pp, rem = m->layers % l->pp;
    if (rem == 0) return base;
    /* Stage 0 holds the embedding and the most in-flight activations, the last stage the
     * logits: the extra layers go to stages 1..rem (Megatron's --decoder-first-pipeline-num-
     * layers lets users do the same). With rem == pp-1 every stage but the first gets one. */
    return base + ((stage >= 1 && stage <= rem) ? 1 : 0);
}

/* Megatron's --pipeline-model-parallel-layout as plan writes it (emit_megatron.c): a rank's
 * layers spread over its chunks as evenly as they go, the gap left in the chunk holding the
 * embedding (rank 0's first) or the loss (the last rank's last), as "Et|(tt|)*30mL" does.
 * torchtitan: the chunk's virtual stage (loop, or V for the V schedules). */
int layout_chunk_layers(const model_spec *m, const layout *l, int rank, int chunk)
{
    if (titan_split(l))
        return layout_vstage_layers(m, l, schedule_vstage(layout_pp_schedule_of(l), l->pp, chunk,
                                                          rank));
    int n = layout_stage_layers(m, l, rank), v = l->vpp > 1 ? l->vpp : 1;
    int base = n / v, extra = n % v;
    if (rank == l->pp - 1 && l->pp > 1) return base + (chunk < extra ? 1 : 0);
    return base + (chunk >= v - extra ? 1 : 0);
}

int layout_busiest_middle_stage(const model_spec *m, const layout *l)
{
    if (!titan_split(l) || l->pp < 4) return 1;
    int best = 1, most = layout_stage_layers(m, l, 1);
    for (int s = 2; s < l->pp - 1; s++) {
        int n = layout_stage_layers(m, l, s);
        if (n > most) most = n, best = s;
    }
    return best;
}

int layout_max_stage_layers(const model_spec *m, const layout *l)
{
    if (titan_split(l)) {
        int most = 0;
        for (int s = 0; s < l->pp; s++) {
            int n = layout_stage_layers(m, l, s);
            if (n > most) most = n;
        }
        return most;
    }
    if (uneven_split(l)) { /* the first, the last and (pp > 2) the middle ones' count */
        int most = 0, first = layout_stage_layers(m, l, 0);
        int last = layout_stage_layers(m, l, l->pp - 1);
        if (first > most) most = first;
        if (last > most) most = last;
        if (l->pp > 2) {
            int mid = layout_stage_layers(m, l, 1);
            if (mid > most) most = mid;
        }
        return most;
    }
    return m->layers / l->pp + (m->layers % l->pp ? 1 : 0);
}

bool layout_split_uneven(const model_spec *m, const layout *l)
{
    if (titan_split(l)) {
        int S = vstages(l), n0 = layout_vstage_layers(m, l, 0);
        for (int k = 1; k < S; k++)
            if (layout_vstage_layers(m, l, k) != n0) return true;
        return false;
    }
    return l->pp > 1 && (uneven_split(l) || m->layers % l->pp);
}

int layout_stage_start(const model_spec *m, const layout *l, int stage)
{
    if (titan_split(l)) {
        /* the ranks before it (exact with one stage a rank; a rank's chunks are not
         * contiguous with virtual stages, which the per-layer sums here do not need) */
        int start = 0;
        for (int s = 0; s < stage && s < l->pp; s++) start += layout_stage_layers(m, l, s);
        return start;
    }
    if (!uneven_split(l)) {
        /* stage x base, and one more for each of stages 1..rem before it */
        int rem = m->layers % l->pp;
        return stage * (m->layers / l->pp) + (stage >= 1 ? (stage - 1 < rem ? stage - 1 : rem) : 0);
    }
    /* the sum of the stages before it, in closed form: stage 0, the middle ones (each the
     * same count) and, past them all, the last */
    int n = stage < l->pp ? stage : l->pp;
    if (n <= 0) return 0;
    int start = layout_stage_layers(m, l, 0);
    if (n >= 2) {
        int mids = n == l->pp ? n - 2 : n - 1;
        if (mids > 0) start += mids * layout_stage_layers(m, l, 1);
        if (n == l->pp) start += layout_stage_layers(m, l, l->pp - 1);
    }
    return start;
}
