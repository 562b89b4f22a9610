/*
 * test_fsdp_prefetch.c — fsdp_prefetch_exposed_add (costmodel/fsdp_prefetch.c, slow26) adds the
 * same terms in the same order as the per-layer walk it replaced (estimate.c at 6df9211: three
 * kind look-ups and two fmax a layer), so the stage's fsdp_s is the same bit for bit (==, not
 * within a tolerance): uniform stages, a dense first layer before MoE ones inside and at the
 * stage's edge, Megatron's bf16 first/last layers, reshard on and off, a share of recompute.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "estimate_internal.h"

/* the walk as estimate.c wrote it before slow26 */
static double reference(const model_spec *m, const layout *l, const layer_kinds *kinds, int start,
                        int n, double rf, double sum_s)
{
    for (int j = 0; j < n; j++) {
        const layer_time *x = estimate_layer_kind_of(m, l, kinds, start + j);
        const layer_time *below = j > 0 ? estimate_layer_kind_of(m, l, kinds, start + j - 1) : x;
        const layer_time *above = j + 1 < n ? estimate_layer_kind_of(m, l, kinds, start + j + 1) : x;
        double ag_bwd = l->reshard_after_forward ? below->gather_s : 0;
        sum_s += fmax(0, x->gather_s - below->fwd_s) +
                 fmax(0, ag_bwd + above->reduce_s - (x->bwd_s + rf * x->recompute_s));
    }
    return sum_s;
}

static void kind(layer_time *x, double fwd, double bwd, double rec, double ag, double rs)
{
    memset(x, 0, sizeof *x);
    x->fwd_s = fwd, x->bwd_s = bwd, x->recompute_s = rec, x->gather_s = ag, x->reduce_s = rs;
}

/* estimate.c stage_layers_cost's first_moe: -1 where some layer is bf16 */
static int first_moe_of(const model_spec *m, const layout *l, int start, int n)
{
    if (l->precision != PRECISION_BF16 &&
        (l->bf16_layers_start > 0 || l->bf16_layers_end > 0 || start + n > m->layers))
        return -1;
    return m->experts <= 0 ? start + n : m->dense_first > start ? m->dense_first : start;
}

static void test_same_sum(void **state)
{
    (void)state;
    layer_kinds k;
    /* gathers and reduce-scatters around the compute so that both fmax terms are live */
    kind(&k.dense, 0.0123, 0.0311, 0.0101, 0.0171, 0.0337);
    kind(&k.moe, 0.0457, 0.0913, 0.0299, 0.0619, 0.1013);
    kind(&k.dense_bf16, 0.0151, 0.0377, 0.0123, 0.0171, 0.0337);
    kind(&k.moe_bf16, 0.0531, 0.1071, 0.0347, 0.0619, 0.1013);
    int checked = 0;
    for (int experts = 0; experts <= 8; experts += 8)
        for (int dense_first = 0; dense_first <= 5; dense_first += (dense_first ? 4 : 1))
            for (int prec = 0; prec < 2; prec++)
                for (int ends = 0; ends < 2; ends++)
                    for (int reshard = 0; reshard < 2; reshard++) {
                        model_spec m;
                        layout l;
                        memset(&m, 0, sizeof m);
                        memset(&l, 0, sizeof l);
                        m.layers = 61, m.experts = experts, m.dense_first = dense_first;
                        l.precision = prec ? PRECISION_FP8 : PRECISION_BF16;
                        l.bf16_layers_start = l.bf16_layers_end = ends;
                        l.reshard_after_forward = reshard;
                        int starts[] = {0, 1, 2, 4, 5, 6, 30, 45}, ns[] = {1, 2, 3, 5, 16, 31};
                        for (size_t a = 0; a < sizeof starts / sizeof *starts; a++)
                            for (size_t b = 0; b < sizeof ns / sizeof *ns; b++) {
                                int start = starts[a], n = ns[b];
                                if (start + n > m.layers) continue;
                                int fm = first_moe_of(&m, &l, start, n);
                                for (double rf = 0.5; rf <= 1; rf += 0.5) {
                                    double s0 = 0.1 * (a + 1);
                                    double want = reference(&m, &l, &k, start, n, rf, s0);
                                    double got =
                                        fsdp_prefetch_exposed_add(&m, &l, &k, start, n, fm, rf, s0);
                                    if (got != want)
                                        fail_msg("experts %d dense_first %d fp8 %d ends %d reshard "
                                                 "%d start %d n %d rf %g: %.17g, walk %.17g",
                                                 experts, dense_first, prec, ends, reshard, start,
                                                 n, rf, got, want);
                                    checked++;
                                }
                            }
                    }
    assert_true(checked > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_same_sum)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
