/*
 * grouped_rate.h — torch._grouped_mm's achieved rate by expert shape, from a measured table.
 *
 * Hugging Face's grouped_mm experts and torchtitan's GroupedExperts run each projection of all
 * local experts as one torch._grouped_mm (a CUTLASS grouped kernel on sm90). Priced at the one
 * large-GEMM rate (gemm_efficiency_max) such a call is right for large experts and far too fast
 * for small ones: a few experts of a few hundred rows fill few of the 132 SMs' tiles
 * (bench/results/grpmm27_2026-11-29: Qwen3-30B-A3B's up projection at 2 experts x 256 rows runs
 * at 50 TFLOP/s, 6.6x the flat price). A system preset may carry the measured table
 * ("grouped_gemm_rates", written by bench/results/grpmm27_2026-11-29/table.py from
 * bench/realruns/grouped_mm_grid.py --graph): per expert GEMM shape (n, k) and form, a grid over
 * local experts G x rows per expert, each point the call's rate over the dense 8192^3 torch.mm
 * rate measured in the same process (so the flat model's gemm_efficiency_max x that ratio is the
 * grouped call's rate, and the power cap scales both alike). Without a table the flat rate
 * stands.
 *
 * Forms (pytorch tools/autograd/derivatives.yaml for _grouped_mm): M-grouped, out[G m, n] =
 * a[G m, k] @ w[G, k, n] (the forward and the input gradient); K-grouped, the weight gradient
 * w'[G, k, n] = a^T @ g with the rows as each group's K.
 *
 * Lookup: the form's measured shape nearest (n, k) (the smallest |log2 n - log2 n'| +
 * |log2 k - log2 k'|, ties to the earlier), bilinear in (log2 G, log2 rows) between its grid's
 * neighbours, clamped at the grid's edges.
 */
#ifndef PLAN_GROUPED_RATE_H
#define PLAN_GROUPED_RATE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef enum {
    GROUPED_NONE = 0, /* not a torch._grouped_mm call: the flat GEMM model */
    GROUPED_M,        /* M-grouped (forward, input gradient): rows = m */
    GROUPED_K         /* K-grouped (weight gradient): rows = k */
} grouped_form;

#define GROUPED_MAX_SHAPES 48
#define GROUPED_MAX_GRID 8

typedef struct {
    unsigned char form; /* grouped_form */
    float n, k;         /* the output's columns and the contraction (M-grouped); the weight
                           gradient's [k, n] output (K-grouped) */
    int ng, nr;
    float log2_groups[GROUPED_MAX_GRID];
    float log2_rows[GROUPED_MAX_GRID];
    float ratio[GROUPED_MAX_GRID][GROUPED_MAX_GRID]; /* [group index][rows index] */
} grouped_shape;

typedef struct {
    int n;
    grouped_shape s[GROUPED_MAX_SHAPES];
} grouped_table;

struct json_t;

/* Read "grouped_gemm_rates": {"shapes": [{"form": "M"|"K", "n", "k", "groups": [...],
 * "rows_per_group": [...], "ratio": [[per rows] per groups]}]} (groups and rows ascending).
 * NULL section: an empty table. */
cm_status grouped_table_from_json(const struct json_t *section, const char *path,
                                  grouped_table *t, char *err, size_t errlen);

/* The ratio for `groups` GEMMs of rows x n x k (M-grouped: rows = m; K-grouped: the
 * contraction); false when the table has no shape of the form. */
bool grouped_table_ratio(const grouped_table *t, grouped_form form, double groups, double rows,
                         double n, double k, double *ratio);

#endif
