/*
 * bk_loop.c — torchtitan's per-expert loop in plan measure's step at the row counts an
 * untrained router gives (issue 14; bench/results/meas27_2026-11-29).
 *
 * The real loop (torchtitan/models/moe/moe.py _run_experts_for_loop; bench/realruns/prun_moe.py
 * Experts.forward) runs each local expert's GEMMs at that expert's row count, which changes
 * every step, and a count the process has not run before is a GEMM shape cuBLAS has not chosen
 * an algorithm for: its heuristic costs the host ~110-155 us a call beyond a cached one
 * (bench/results/meas26_2026-11-29 section 3b, mm_host_probe.jsonl). The cost model prices it as
 * the share of new counts (`--moe-new-counts`) times host.gemm_new_shape_s. Here the step issues
 * it: under a share, each (layer, micro-batch) forward draws its experts' counts (work_rows.h:
 * new ones in pairs around the balanced count, so the pass's rows and buffers stay the cost
 * model's), and every looped GEMM runs by cublasGemmEx, torch.mm's call, at its expert's count.
 * A shape the loop has not issued before in this process adds its call's host time to the paced
 * issue point (the host's per-launch work is the model's pace; the heuristic is cuBLAS's own
 * time, measured, not a constant). The unpaced steps (the GPU alone) run the balanced counts:
 * the new shapes are host time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bk_run.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

cm_status bk_loop_setup(bk_run *x, char *err, size_t errlen)
{
    const work_plan *w = x->w;
    if (!(w->loop_new_share > 0) || w->local_experts < 2) return CM_OK;
    int layers = 0;
    for (int s = 0; s < w->pp; s++) layers += w->stage_layers[s];
    x->loop_layers = layers;
    x->loop_mbs = w->microbatches;
    size_t n = (size_t)layers * (size_t)x->loop_mbs * (size_t)w->local_experts;
    x->loop_rows = calloc(n, sizeof *x->loop_rows);
    x->loop_shape_cap = 1 << 16;
    x->loop_shapes = calloc((size_t)x->loop_shape_cap, sizeof *x->loop_shapes);
    x->loop_sample_cap = 1 << 16;
    x->loop_new_s = malloc(sizeof *x->loop_new_s * (size_t)x->loop_sample_cap);
    x->loop_seen_s = malloc(sizeof *x->loop_seen_s * (size_t)x->loop_sample_cap);
    if (!x->loop_rows || !x->loop_shapes || !x->loop_new_s || !x->loop_seen_s) {
        bk_loop_free(x);
        return cm_fail(err, errlen, CM_ENOMEM, "out of host memory (expert loop counts)");
    }
    work_rows_init(&x->rows, (int)lround(w->expert_rows), w->local_experts, w->loop_new_share);
    return CM_OK;
}

void bk_loop_free(bk_run *x)
{
    free(x->loop_rows);
    free(x->loop_shapes);
    free(x->loop_new_s);
    free(x->loop_seen_s);
    x->loop_rows = NULL;
    x->loop_shapes = NULL;
    x->loop_new_s = x->loop_seen_s = NULL;
}

static int *slot(const bk_run *x, int gl, int mb)
{
    if (!x->loop_rows || gl < 0 || gl >= x->loop_layers || mb < 0 || mb >= x->loop_mbs)
        return NULL;
    return x->loop_rows + ((size_t)gl * (size_t)x->loop_mbs + (size_t)mb) *
                              (size_t)x->w->local_experts;
}

const int *bk_loop_draw(bk_run *x, int gl, int mb)
{
    int *r = slot(x, gl, mb);
    if (!r) return NULL;
    if (x->pace) {
        work_rows_next(&x->rows, r, NULL);
    } else {
        for (int b = 0; b < x->w->local_experts; b++) r[b] = x->rows.c0;
    }
    return r;
}

const int *bk_loop_rows(const bk_run *x, int gl, int mb) { return slot(x, gl, mb); }

/* Has the loop issued this shape before in this process? Remembers it. */
static bool shape_seen(bk_run *x, int form, long m, long n, long k)
{
    unsigned long long key = ((unsigned long long)(form + 1) << 60) ^
                             ((unsigned long long)m << 40) ^ ((unsigned long long)n << 20) ^
                             (unsigned long long)k;
    if (!key) key = 1;
    if (x->loop_shape_n * 2 >= x->loop_shape_cap) return true; /* full: treat as seen */
    unsigned long long h = key * 0x9E3779B97F4A7C15ull;
    for (int i = (int)(h >> 48) & (x->loop_shape_cap - 1);; i = (i + 1) & (x->loop_shape_cap - 1)) {
        if (x->loop_shapes[i] == key) return true;
        if (!x->loop_shapes[i]) {
            x->loop_shapes[i] = key;
            x->loop_shape_n++;
            return false;
        }
    }
}

cm_status bk_loop_launch(bk_run *x, int d, bool first_dev, const work_item *it, const int *rows,
                         const char *A, const char *B, char *C, char *err, size_t errlen)
{
    long m = (long)it->m, n = (long)it->n, k = (long)it->k;
    size_t cum = 0; /* rows of the experts before this one */
    for (int b = 0; b < it->batch; b++) {
        long r = rows[b];
        const char *a, *bb;
        char *c;
        long mm = m, kk = k;
        switch (it->form) {
        case GEMM_WGRAD: /* dW[m,n] = A[r,m]^T B[r,n]: the rows are the contraction */
            kk = r;
            a = A + 2 * cum * (size_t)m;
            bb = B + 2 * cum * (size_t)n;
            c = C + 2 * (size_t)b * (size_t)m * (size_t)n;
            break;
        default: /* FWD y[r,n] = x[r,k] W[n,k]^T, DGRAD dx[r,n] = dy[r,k] W[k,n] */
            mm = r;
            a = A + 2 * cum * (size_t)k;
            bb = B + 2 * (size_t)b * (size_t)n * (size_t)k;
            c = C + 2 * cum * (size_t)n;
            break;
        }
        cum += (size_t)r;
        bool seen = shape_seen(x, (int)it->form, mm, n, kk);
        double t0 = now_s();
        BK_TRY(bk_gemm_launch_blas(x->c, d, it->form, mm, n, kk, a, bb, c, err, errlen));
        if (!x->pace || !first_dev) continue;
        double dt = now_s() - t0;
        if (!seen) x->pace_t += dt; /* cuBLAS's heuristic: on top of the model's pace */
        if (seen && x->loop_seen_n < x->loop_sample_cap) x->loop_seen_s[x->loop_seen_n++] = dt;
        if (!seen && x->loop_new_n < x->loop_sample_cap) x->loop_new_s[x->loop_new_n++] = dt;
    }
    return CM_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n < 1) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bk_loop_stats(const bk_run *x, int *n_new, double *new_s, double *new_mean_s, int *n_seen,
                   double *seen_s, long *exhausted)
{
    *n_new = x->loop_new_n;
    *n_seen = x->loop_seen_n;
    double sum = 0;
    for (int i = 0; x->loop_new_s && i < x->loop_new_n; i++) sum += x->loop_new_s[i];
    *new_mean_s = x->loop_new_n ? sum / x->loop_new_n : 0;
    *new_s = x->loop_new_s ? median(x->loop_new_s, x->loop_new_n) : 0;
    *seen_s = x->loop_seen_s ? median(x->loop_seen_s, x->loop_seen_n) : 0;
    *exhausted = x->rows.exhausted;
}
