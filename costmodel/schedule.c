/* schedule.c — pipeline chunk order (see schedule.h for the sources). */
#include "schedule.h"

#include <stdlib.h>

int schedule_pipeline(int p, int v, int m, int s, schedule_op *out)
{
    int n = 0;
    if (v == 1) {
        int warm = p - s - 1 < m ? p - s - 1 : m;
        for (int i = 0; i < warm; i++) out[n++] = (schedule_op){i, 0, false, SCHEDULE_FULL};
        for (int i = 0; i < m - warm; i++) {
            out[n++] = (schedule_op){warm + i, 0, false, SCHEDULE_FULL};
            out[n++] = (schedule_op){i, 0, true, SCHEDULE_FULL};
        }
        for (int i = m - warm; i < m; i++) out[n++] = (schedule_op){i, 0, true, SCHEDULE_FULL};
        return n;
    }
    int total = m * v, group = p * v;
    int warm = (p - s - 1) * 2 + (v - 1) * p;
    if (m == p || warm > total) warm = total;
    int rest = total - warm;
#define MB(k) (((k) / group) * p + (k) % p)
#define CHUNK(k) (((k) % group) / p)
    for (int k = 0; k < warm; k++) out[n++] = (schedule_op){MB(k), CHUNK(k), false, SCHEDULE_FULL};
    for (int k = 0; k < rest; k++) {
        int f = warm + k;
        out[n++] = (schedule_op){MB(f), CHUNK(f), false, SCHEDULE_FULL};
        out[n++] = (schedule_op){MB(k), v - 1 - CHUNK(k), true, SCHEDULE_FULL};
    }
    for (int k = rest; k < total; k++) out[n++] = (schedule_op){MB(k), v - 1 - CHUNK(k), true, SCHEDULE_FULL};
#undef MB
#undef CHUNK
    return n;
}

int schedule_pipeline_torch(int p, int v, int m, int s, schedule_op *out)
{
    if (v == 1) return schedule_pipeline(p, v, m, s, out);
    int rounds = schedule_torch_rounds(p, m);
    if (m % rounds) return -1;
    int round = m / rounds, total = m * v, n = 0;
    int warm = (v - 1) * round + 2 * (p - s - 1);
    if (warm > total) warm = total;
    /* the next micro-batch of each chunk's forwards and backwards, as schedules.py counts them */
    int *nf = calloc((size_t)2 * v, sizeof *nf);
    if (!nf) return -1;
    int *nb = nf + v;
    for (int k = 0; k < total + warm; k++) {
        if (k < total) {
            int c = (k / round) % v;
            out[n++] = (schedule_op){nf[c]++, c, false, SCHEDULE_FULL};
        }
        if (k >= warm) {
            int c = v - 1 - ((k - warm) / round) % v;
            out[n++] = (schedule_op){nb[c]++, c, true, SCHEDULE_FULL};
        }
    }
    free(nf);
    return n;
}

int schedule_torch_rounds(int p, long m)
{
    return p > 0 && m / p > 1 ? (int)(m / p) : 1;
}

int schedule_max_ops(int v, int m) { return 3 * v * m; }

bool schedule_is_v(layout_pp_schedule kind)
{
    return kind == PP_SCHEDULE_ZBV || kind == PP_SCHEDULE_DUALPIPEV;
}

int schedule_vstage(layout_pp_schedule kind, int p, int c, int s)
{
    if (schedule_is_v(kind)) return c == 0 ? s : 2 * p - 1 - s;
    return c * p + s;
}

int schedule_stage_of(layout_pp_schedule kind, int p, int k)
{
    if (schedule_is_v(kind)) return k < p ? k : 2 * p - 1 - k;
    return k % p;
}

/* ---- the V schedules: ops are built with per-chunk counters, as schedules.py does ---- */

typedef struct {
    schedule_op *out;
    int n, m;
    int f[2], i[2], w[2]; /* next micro-batch of F, I (or full B), W per chunk */
    int wq_chunk[64], wq_mb[64], wq_head, wq_tail; /* DualPipeV's pending W, FIFO (ring) */
} vbuild;

/* Append an op unless its micro-batch is past m (schedules.py pads ZBV to 2p-1 micro-batches
 * and drops the padding as empty slots). */
static void vput(vbuild *b, int chunk, int mb, bool backward, schedule_part part)
{
    if (mb >= b->m) return;
    b->out[b->n++] = (schedule_op){mb, chunk, backward, (unsigned char)part};
}

static void v_f(vbuild *b, int c) { vput(b, c, b->f[c]++, false, SCHEDULE_FULL); }
static void v_full_b(vbuild *b, int c)
{
    vput(b, c, b->i[c]++, true, SCHEDULE_FULL);
    b->w[c]++;
}
/* DualPipeV's I queues its W; ZBV writes its W explicitly (zbv_w). */
static void v_i(vbuild *b, int c, bool queue)
{
    int mb = b->i[c]++;
    vput(b, c, mb, true, SCHEDULE_INPUT);
    if (queue) {
        b->wq_chunk[b->wq_tail % 64] = c;
        b->wq_mb[b->wq_tail % 64] = mb;
        b->wq_tail++;
    }
}
static void zbv_w(vbuild *b, int c, int mb) { vput(b, c, mb, true, SCHEDULE_WEIGHT); }
static void v_w_pending(vbuild *b)
{
    if (b->wq_head == b->wq_tail) return;
    int c = b->wq_chunk[b->wq_head % 64], mb = b->wq_mb[b->wq_head % 64];
    b->wq_head++;
    vput(b, c, mb, true, SCHEDULE_WEIGHT);
    b->w[c]++;
}

/* ScheduleZBVZeroBubble._calculate_single_rank_operations for rank r (Qi et al. 2024 Sec. 6). */
static int schedule_zbv(int p, int m, int r, schedule_op *out)
{
    vbuild b = {.out = out, .m = m};
    int n_micro = 2 * p - 1 > m ? 2 * p - 1 : m;
    for (int k = 0; k < 2 * (p - r) - 1; k++) v_f(&b, 0);
    for (int k = 0; k < r; k++) {
        v_f(&b, 1);
        v_f(&b, 0);
    }
    for (int k = 0; k < p - r; k++) {
        v_f(&b, 1);
        int mb = b.i[1];
        v_i(&b, 1, false);
        zbv_w(&b, 1, mb);
    }
    while (b.f[1] < b.f[0] || b.f[0] < n_micro) {
        if (b.f[0] < n_micro) v_f(&b, 0);
        int mb = b.i[0];
        v_i(&b, 0, false);
        zbv_w(&b, 0, mb);
        v_f(&b, 1);
        mb = b.i[1];
        v_i(&b, 1, false);
        zbv_w(&b, 1, mb);
    }
    int w0 = b.i[0], w1 = b.i[1];
    for (int k = 0; k < r; k++) {
        v_i(&b, 0, false);
        v_i(&b, 1, false);
    }
    for (int k = 0; k < p - r; k++) {
        v_i(&b, 0, false);
        zbv_w(&b, 0, w0++);
    }
    while (w1 < b.i[1]) zbv_w(&b, 1, w1++);
    while (w0 < b.i[0]) zbv_w(&b, 0, w0++);
    return b.n;
}

/* ScheduleDualPipeV._calculate_single_rank_operations for rank r (deepseek-ai/DualPipe
 * dualpipev.py): its OVERLAP_F_B pairs run here as the forward, then the full backward. */
static int schedule_dualpipev(int p, int m, int r, schedule_op *out)
{
    vbuild b = {.out = out, .m = m};
    for (int k = 0; k < (p - r - 1) * 2; k++) v_f(&b, 0);
    for (int k = 0; k < r + 1; k++) {
        v_f(&b, 0);
        v_f(&b, 1);
    }
    for (int k = 0; k < p - r - 1; k++) {
        v_i(&b, 1, true);
        v_w_pending(&b);
        v_f(&b, 1);
    }
    int step4 = m - 2 * p + r + 1;
    for (int k = 0; k < step4; k++) {
        v_f(&b, 0); /* i == 0 on the last rank: not overlapped; the same order here */
        v_full_b(&b, 1);
        v_f(&b, 1);
        v_full_b(&b, 0);
    }
    for (int k = 0; k < p - r - 1; k++) {
        v_full_b(&b, 1);
        v_f(&b, 1);
        v_full_b(&b, 0);
    }
    int step6 = r + 1;
    bool zb = false;
    for (int k = 0; k < step6; k++) {
        if (k == step6 / 2 && r % 2 == 1) zb = true;
        if (zb) v_i(&b, 1, true);
        else v_full_b(&b, 1);
        if (k == step6 / 2 && r % 2 == 0) zb = true;
        if (zb) v_i(&b, 0, true);
        else v_full_b(&b, 0);
    }
    for (int k = 0; k < p - r - 1; k++) {
        v_w_pending(&b);
        if (zb) v_i(&b, 0, true);
        else v_full_b(&b, 0);
    }
    for (int k = 0; k < r + 1; k++) v_w_pending(&b);
    while (b.wq_head != b.wq_tail) v_w_pending(&b); /* none left in schedules.py's order */
    return b.n;
}

int schedule_pipeline_kind(layout_pp_schedule kind, int p, int v, int m, int s, schedule_op *out)
{
    switch (kind) {
    case PP_SCHEDULE_GPIPE: {
        if (v != 1) return -1;
        int n = 0;
        for (int i = 0; i < m; i++) out[n++] = (schedule_op){i, 0, false, SCHEDULE_FULL};
        for (int i = 0; i < m; i++) out[n++] = (schedule_op){i, 0, true, SCHEDULE_FULL};
        return n;
    }
    case PP_SCHEDULE_ZBV: return v == 2 ? schedule_zbv(p, m, s, out) : -1;
    case PP_SCHEDULE_DUALPIPEV: /* its pending-W queue holds at most p entries */
        return v == 2 && m >= 2 * p && p <= 64 ? schedule_dualpipev(p, m, s, out) : -1;
    default: return schedule_pipeline(p, v, m, s, out);
    }
}

double schedule_peak_in_flight(layout_pp_schedule kind, int p, int v, int m, int s)
{
    int cap = schedule_max_ops(v, m);
    schedule_op *ops = malloc((size_t)cap * sizeof *ops);
    if (!ops) return -1;
    int n = schedule_pipeline_kind(kind, p, v, m, s, ops);
    int held = 0, peak = 0;
    for (int i = 0; i < n; i++) {
        if (!ops[i].backward) held++;
        else if (ops[i].part != SCHEDULE_INPUT) held--; /* freed by B, or by W after its I */
        if (held > peak) peak = held;
    }
    free(ops);
    return n < 0 ? -1 : (double)peak / v;
}

int schedule_combined_unpaired(int p, int v, int m, int s)
{
    if (p < 1 || v < 1 || m < 1) return 0;
    long n = p > 1 ? 2L * (p - s - 1) + (long)(v - 1) * p + 1 : 1;
    return n < (long)m * v ? (int)n : m * v;
}
