/*
 * attention_rate.h — the attention core's achieved FLOP rate by shape, from a measured table.
 *
 * One efficiency for every shape (system.attention_efficiency) is right for long sequences at
 * head dim 128 and wrong where small models run: few heads x short sequences, head dim 64 or 96,
 * and Hugging Face's explicit sliding-window mask (a different SDPA path than is_causal). A
 * system preset may carry a measured table ("attention_rates", written by
 * bench/attention_sweep.py --table); the attention core's time is then its FLOPs over the rate
 * interpolated at its shape. Without a table the single efficiency stands.
 */
#ifndef PLAN_ATTENTION_RATE_H
#define PLAN_ATTENTION_RATE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef enum {
    ATTN_MASK_CAUSAL = 0, /* is_causal (flash skips the blocks above the diagonal) */
    ATTN_MASK_NONE,       /* no mask: every score */
    ATTN_MASK_WINDOW,     /* an explicit boolean (sliding-window causal) mask tensor */
    ATTN_MASK_SLIDING,    /* the fused kernel's own sliding window (cuDNN via Transformer
                             Engine's window_size) of ATTN_SLIDING_KEYS keys, which skips the
                             blocks outside it; rates over the window's FLOPs (flops.c:
                             w - w^2/(2s) keys per query), as NVIDIA's cuDNN benchmark counts */
    ATTN_MASKS
} attn_mask;

#define ATTN_MAX_POINTS 512
/* The window the "sliding" points were measured at (NVIDIA/cudnn-frontend's gpt_oss SDPA
 * benchmark: sliding_window_size 128); other windows keep the causal rate over their FLOPs */
#define ATTN_SLIDING_KEYS 128

typedef struct {
    float head_dim;
    float log2_rows;        /* log2(batch x heads): the (batch, head) pairs one launch covers */
    float log2_seq;
    float fwd_flops_per_s;  /* forward FLOPs (4 b h s^2 d, x0.5 causal/window) / forward time */
    float bwd_flops_per_s;  /* 2.5 x those / backward time */
    unsigned char mask;     /* attn_mask */
} attn_point;

/* The points of one (mask, head dim), p[first .. first + n) of the table. */
typedef struct {
    unsigned char mask;
    float head_dim;
    int first, n;
} attn_group;

/* The points grouped by (mask, head dim), groups in the order the file first names them and
 * each group's points in file order (attn_table_from_json sorts them so), so a lookup reads its
 * group's points alone. */
typedef struct {
    int n;
    attn_point p[ATTN_MAX_POINTS];
    int ngroups;
    attn_group g[ATTN_MAX_POINTS];
    unsigned long id;       /* which load filled it (attn_table_rates' memo; copies share it) */
} attn_table;

struct json_t;

/* Read the "attention_rates" section of a system file (NULL section: an empty table).
 * Its "points" are rows [head_dim, mask ("causal"|"none"|"window"), batch_x_heads, seq,
 * fwd_tflops, bwd_tflops]. */
cm_status attn_table_from_json(const struct json_t *section, const char *path, attn_table *t,
                               char *err, size_t errlen);

/* Replaces every (mask, head dim) group of t that `over` holds by over's points and keeps t's
 * other groups (over's groups first, then t's in their order): a calibration profile's table
 * measured with other software than the preset's (costmodel/profile.c). False, t unchanged,
 * when the two would hold more than ATTN_MAX_POINTS points. */
bool attn_table_overlay(attn_table *t, const attn_table *over);

/* The forward and backward rates at a shape: the points of the mask and the nearest measured
 * head dim, bilinear in (log2 rows, log2 seq) between the measured grid's neighbours, clamped
 * at its edges. False when the table has no point for the mask. */
bool attn_table_rates(const attn_table *t, attn_mask mask, double head_dim, double rows,
                      double seq, double *fwd_flops_per_s, double *bwd_flops_per_s);

#endif
