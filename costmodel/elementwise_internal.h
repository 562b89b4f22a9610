/*
 * elementwise_internal.h — what the files of the eager kernel lists share (elementwise.c, the
 * layer and head lists; elementwise_norm.c, the RMSNorm lists): a pass being filled and the
 * access patterns of elementwise.h's kernels. Not part of the library's interface.
 */
#ifndef PLAN_ELEMENTWISE_INTERNAL_H
#define PLAN_ELEMENTWISE_INTERNAL_H

#include <stdbool.h>

#include "elementwise.h"

typedef struct {
    elementwise_kernel *k;
    int *n;
} pass;

static inline void add(pass p, const char *name, double bytes, int count, ew_access a)
{
    if (*p.n >= ELEMENTWISE_MAX || count <= 0 || bytes <= 0) return;
    p.k[*p.n] = (elementwise_kernel){name, bytes, count, a, 0};
    (*p.n)++;
}

/* ---- access patterns (elementwise.h); element sizes: bf16 2, fp32 4 ------------------------ */

static inline long L(double x) { return x < 1 ? 1 : (long)(x + 0.5); }

/* Contiguous operands over `elems` elements; eb/ea 0: fewer inputs. */
static inline ew_access contig(ew_pattern p, int eo, int ea, int eb, double elems)
{
    ew_access a = {.pattern = p, .esize = {eo, ea, eb}, .n = {1, 1, L(elems)}};
    for (int k = 0; k < 3; k++)
        if (a.esize[k]) a.stride[k][2] = 1;
    return a;
}


static inline ew_access vec(int eo, int ea, int eb, double elems)
{
    return contig(EW_VECTORIZED, eo, ea, eb, elems);
}

/* A simple count of `bytes`: a bf16 kernel reading half of them and writing half. */
static inline ew_access lump(double bytes) { return vec(2, 2, 0, bytes / 4); }

/* [rows, w] (.) b, b broadcast: a [w] row over every row (col = false: norm weight), or a
 * [rows, 1] column over every column (col = true: rstd). */
static inline ew_access bcast(int e, double rows, double w, bool col)
{
    ew_access a = {.pattern = EW_OFFSETS, .esize = {e, e, e}, .n = {1, L(rows), L(w)}};
    for (int k = 0; k < 2; k++) a.stride[k][1] = L(w), a.stride[k][2] = 1;
    if (col) a.stride[2][1] = 1;
    else a.stride[2][2] = 1;
    return a;
}

/* Unary [rows, 1] expanded to [rows, w] (mean_backward: grad.expand() / h). */
static inline ew_access expand(int e, double rows, double w)
{
    ew_access a = {.pattern = EW_OFFSETS, .esize = {e, e, 0}, .n = {1, L(rows), L(w)}};
    a.stride[0][1] = L(w), a.stride[0][2] = 1;
    a.stride[1][1] = 1;
    return a;
}

/* A reduction of [rows, w] over w (row) or over rows (col). */
static inline ew_access reduce(ew_pattern p, int eo, int ea, double rows, double w)
{
    ew_access a = {.pattern = p, .esize = {eo, ea, 0}, .n = {1, L(rows), L(w)}};
    a.stride[1][1] = L(w), a.stride[1][2] = 1;
    if (p == EW_REDUCE_ROW) a.stride[0][1] = 1;
    else a.stride[0][2] = 1;
    return a;
}

/* LlamaRMSNorm over t rows of width w, normalised over nw, `count` times (elementwise_norm.c);
 * qk: Qwen3's per-head q/k norms, named apart. */
void ew_rms_norm(pass f, pass b, double t, double w, double nw, int count, bool qk);

/* GemmaRMSNorm (Gemma, Gemma 2, Gemma 3): the same, scaled by (1 + weight) in fp32 before the
 * cast back (elementwise_norm.c). */
void ew_gemma_rms_norm(pass f, pass b, double t, double w, double nw, int count, bool qk);

/* CohereLayerNorm (Command-R, Command-R7B): a LayerNorm without bias in fp32 eager ops
 * (elementwise_norm.c). */
void ew_cohere_layer_norm(pass f, pass b, double t, double w, double nw, int count, bool qk);
/* Whether m's norms are CohereLayerNorm run eagerly (Hugging Face code, not compiled). */
bool ew_cohere_norm(const model_spec *m, const layout *l);

#endif
