/* pp_schedule.c — closed-form bubble and in-flight micro-batches per schedule (pp_schedule.h). */
#include "pp_schedule.h"

#include <math.h>

/* The bubble in units of "stage-micro-batches of compute" (F + I + W = 1 unit): how many
 * micro-batches' worth of the busiest stage's time the pipeline stands idle. */
static double bubble_units(const layout *l, const pp_stage_work *w)
{
    if (l->pp < 2) return 0;
    double p1 = l->pp - 1;
    double total = w ? w->fwd_s + w->input_s + w->weight_s : 0;
    switch (layout_pp_schedule_of(l)) {
    case PP_SCHEDULE_INTERLEAVED_1F1B: {
        double u = p1 / l->vpp;
        /* torch's runtime (torchtitan): each warm-up send of rank 0 waits on its NCCL stream
         * behind the receive placed before it, so the warm-up lengthens by (v-1) p (p-2) chunk
         * forwards (pp_schedule.h) */
        if (l->framework == FRAMEWORK_TORCHTITAN && l->vpp > 1 && total > 0)
            u += (double)(l->vpp - 1) * l->pp * (l->pp - 2) * (w->fwd_s / l->vpp) / total;
        return u;
    }
    case PP_SCHEDULE_ZBV:
        if (total <= 0) return 0;
        return p1 * fmax(0, w->fwd_s + w->input_s - 2.0 * w->weight_s) / 2.0 / total;
    case PP_SCHEDULE_DUALPIPEV:
        if (total <= 0) return 0;
        return p1 * fmax(0, w->fwd_s + 2.0 * w->input_s - w->weight_s) / 2.0 / total;
    case PP_SCHEDULE_GPIPE:
    case PP_SCHEDULE_1F1B:
    default: return p1;
    }
}

double pp_schedule_bubble_s(const layout *l, double t_mb_s, const pp_stage_work *w)
{
    return bubble_units(l, w) * t_mb_s;
}

double pp_schedule_bubble_fraction(const layout *l, int microbatches, const pp_stage_work *w)
{
    return microbatches > 0 ? bubble_units(l, w) / microbatches : 0;
}

double pp_schedule_in_flight(const layout *l, int microbatches, int stage)
{
    int m = microbatches < 1 ? 1 : microbatches;
    double held;
    switch (layout_pp_schedule_of(l)) {
    case PP_SCHEDULE_GPIPE: held = m; break;
    case PP_SCHEDULE_ZBV: held = l->pp < m ? l->pp : m; break;
    /* one chunk (half a stage) more: an overlapped pair's forward starts while its backward's
     * chunk is still held (schedule_peak_in_flight counts it from the order) */
    case PP_SCHEDULE_DUALPIPEV: held = (l->pp < m ? l->pp : m) + 0.5; break;
    case PP_SCHEDULE_INTERLEAVED_1F1B:
        if (l->vpp > 1 && l->pp > 1 && stage > 0) {
            /* Rank r runs 2 (p - 1 - r) + (v - 1) p warm-up chunk forwards, then one more
             * before its first backward (torch ScheduleInterleaved1F1B: warmup_ops =
             * (n_local_stages - 1) * pp_group_size + 2 * (pp_group_size - 1 - rank);
             * Megatron get_num_warmup_microbatches the same), each chunk 1/v of the rank's
             * layers, at most the m v chunks there are. Stage 0 is the form below. */
            double chunks = 2.0 * (l->pp - 1 - stage) + (double)(l->vpp - 1) * l->pp + 1;
            /* m = p: every forward runs first (Megatron's all_warmup_microbatches) */
            if (chunks > (double)m * l->vpp || m == l->pp) chunks = (double)m * l->vpp;
            held = chunks / l->vpp;
            break;
        }
        /* fall through */
    case PP_SCHEDULE_1F1B:
    default: {
        int h = l->pp - stage;
        if (h > m) h = m;
        if (h < 1) h = 1;
        held = h;
        if (stage == 0 && l->vpp > 1 && l->pp > 1)
            held *= 1.0 + (double)(l->pp - 1) / ((double)l->pp * l->vpp);
    }
    }
    return held;
}
