/*
 * alloc_step_compiled.c — native_llama.py's TransformerBlock under torch.compile (realrun.py
 * --impl native --compile: each block compiled, fullgraph, before fully_shard) in the allocator
 * replay (alloc_step.h): the buffers Inductor's generated code allocates and frees, in its
 * order. Read from the wrapper code torch 2.11.0+cu130 (triton 3.6.0) generated for
 * Llama-3.2-1B at s4k b4 and b2 on one H200 (bench/results/ccomp24_2026-11-29: the forward's and
 * the backward's call(), kept as inductor_fwd_call.txt / inductor_bwd_call.txt). Inductor frees
 * a buffer after its last use and hands its storage to a later buffer of the same dtype and
 * storage size ("bufN = bufM; del bufM  # reuse"; torch/_inductor/codegen/wrapper.py
 * buffer_reuse_key: device, dtype, storage size, alignment), so three reuses of the backward
 * happen only when the attention width equals the hidden size (q == h). The complex RoPE
 * products are ATen fallbacks (complex64: 8 bytes a pair, 4 a value). Covered: GQA (q > kv)
 * without Qwen3's q/k norms; other blocks compile to other graphs, not read.
 */
#include "alloc_step_internal.h"

/* Forward from the block's input x (the caller keeps it: the graph saves its primal) to its
 * output; saves rstd, the norm's output, the rotated q, the repeated k and v, the attention's
 * output and log-sum-exp, wo's output, the second rstd and norm output, w1's, w3's and the
 * SwiGLU product. */
int alloc_step_compiled_layer_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv, f = d->f;
    int r1 = A(c, 4.0 * t);            /* buf0: rstd */
    int n1 = A(c, 2.0 * t * h);        /* buf2: attention_norm's output */
    int xq = A(c, 2.0 * t * q);        /* buf3, later the rotated q (buf22 reuses it) */
    int xk = A(c, 2.0 * t * kv);       /* buf4 */
    int xv = A(c, 2.0 * t * kv);       /* buf5 */
    int cq = A(c, 4.0 * t * q);        /* buf6: q as fp32 pairs */
    int ck = A(c, 4.0 * t * kv);       /* buf9: k as fp32 pairs */
    F(c, xk);
    int pq = A(c, 4.0 * t * q);        /* buf14: q * freqs (complex, ATen) */
    F(c, cq);
    int pk = A(c, 4.0 * t * kv);       /* buf18: k * freqs */
    F(c, ck);
    F(c, pq);                          /* the rotated q written into buf3 */
    int keys = A(c, 2.0 * t * q);      /* buf23: the rotated k repeated */
    F(c, pk);
    int values = A(c, 2.0 * t * q);    /* buf24: v repeated */
    F(c, xv);
    int out = A(c, 2.0 * t * q), lse = A(c, 4.0 * t * d->a); /* cuDNN attention */
    int o = A(c, 2.0 * t * h);         /* buf30: wo's output */
    int r2 = A(c, 4.0 * t);            /* buf31 */
    int n2 = A(c, 2.0 * t * h);        /* buf33: ffn_norm's output */
    int g = A(c, 2.0 * t * f), u = A(c, 2.0 * t * f), p = A(c, 2.0 * t * f); /* buf34-36 */
    int y = A(c, 2.0 * t * h);         /* buf37, the residual sum in place (buf38) */
    int keep_these[] = {r1, n1, xq, keys, values, out, lse, o, r2, n2, g, u, p};
    for (unsigned i = 0; i < sizeof keep_these / sizeof keep_these[0]; i++)
        keep(c, sv, keep_these[i]);
    return y;
}

/* Backward from the output's gradient dy (consumed) to the input's; frees the saved tensors
 * where the graph drops them (c->layer_saved holds them; the input x, saved by the caller,
 * stays for the caller's release); weight gradients appended to wg. */
int alloc_step_compiled_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv, f = d->f;
    saved *sv = c->layer_saved;
    /* the forward's keep order */
    int r1 = sv->h[0], n1 = sv->h[1], xq = sv->h[2], keys = sv->h[3], values = sv->h[4];
    int out = sv->h[5], lse = sv->h[6], o = sv->h[7], r2 = sv->h[8], n2 = sv->h[9];
    int g = sv->h[10], u = sv->h[11], p = sv->h[12];
    int x = sv->n > 13 ? sv->h[13] : -1; /* the block's input, kept by the caller */
    bool same = q == h; /* the reuse key's storage sizes agree */
    wg[(*nwg)++] = A(c, 2.0 * h * f);  /* buf0: w2's gradient */
    alloc_step_drop_saved(c, sv, p);
    int gp = A(c, 2.0 * t * f);        /* buf1 */
    int gg = A(c, 2.0 * t * f);        /* buf2; w3's input gradient into u's storage (buf5) */
    F(c, gp);
    alloc_step_drop_saved(c, sv, g);
    wg[(*nwg)++] = A(c, 2.0 * f * h);  /* buf3 */
    int gna = A(c, 2.0 * t * h);       /* buf4 */
    F(c, gg);
    wg[(*nwg)++] = A(c, 2.0 * f * h);  /* buf6 */
    alloc_step_drop_saved(c, sv, n2);
    int gnb = A(c, 2.0 * t * h);       /* buf7 */
    alloc_step_drop_saved(c, sv, u);
    int gh = A(c, 2.0 * t * h);        /* buf12: through ffn_norm, plus the residual */
    F(c, dy);
    int go = A(c, 2.0 * t * q);        /* buf14: wo's input gradient */
    int dq = A(c, 2.0 * t * q), dk = A(c, 2.0 * t * q), dv = A(c, 2.0 * t * q); /* cuDNN */
    alloc_step_drop_saved(c, sv, lse);
    alloc_step_drop_saved(c, sv, xq);
    alloc_step_drop_saved(c, sv, keys);
    alloc_step_drop_saved(c, sv, values);
    if (!same) F(c, go);
    int gvs = A(c, 2.0 * t * kv);      /* buf35: dv summed over the repeats */
    int gxv = dv;                      /* buf37: wv's input gradient, in dv's storage */
    if (!same) {
        F(c, dv);
        gxv = A(c, 2.0 * t * h);
    }
    int c19 = A(c, 4.0 * t * kv);      /* buf19: dk summed, fp32 pairs */
    int conj = A(c, 4.0 * d->s * d->hd); /* buf22: the conjugate freqs cloned (complex64) */
    int m24 = A(c, 4.0 * t * kv);      /* buf24: times the conjugate */
    F(c, c19);
    int gk = A(c, 2.0 * t * kv);       /* buf38 */
    F(c, m24);
    int gxk = dk;                      /* buf40, in dk's storage */
    if (!same) {
        F(c, dk);
        gxk = A(c, 2.0 * t * h);
    }
    int c26 = A(c, 4.0 * t * q);       /* buf26 */
    int m29 = A(c, 4.0 * t * q);       /* buf29 */
    F(c, conj);
    F(c, c26);
    int gq = dq;                       /* buf41: the rotary backward into dq's storage */
    F(c, m29);
    int gxq = go;                      /* buf43, in go's storage */
    if (!same) gxq = A(c, 2.0 * t * h);
    int gx = A(c, 2.0 * t * h);        /* buf48: the input's gradient */
    int ws = A(c, 2.0 * 1024 * 4.0 * h); /* workspace_0: two norms' weight partial sums */
    F(c, ws);
    F(c, gxv);
    F(c, gna);
    F(c, gxk);
    F(c, gxq);
    F(c, gnb);
    alloc_step_drop_saved(c, sv, o);
    if (x >= 0) alloc_step_drop_saved(c, sv, x);
    alloc_step_drop_saved(c, sv, r1);
    alloc_step_drop_saved(c, sv, r2);
    wg[(*nwg)++] = A(c, 2.0 * h);      /* buf11: ffn_norm's weight */
    wg[(*nwg)++] = A(c, 2.0 * h * q);  /* buf13: wo's */
    F(c, gh);
    alloc_step_drop_saved(c, sv, out);
    wg[(*nwg)++] = A(c, 2.0 * kv * h); /* buf36: wv's */
    F(c, gvs);
    wg[(*nwg)++] = A(c, 2.0 * kv * h); /* buf39: wk's */
    F(c, gk);
    wg[(*nwg)++] = A(c, 2.0 * q * h);  /* buf42: wq's */
    F(c, gq);
    alloc_step_drop_saved(c, sv, n1);
    wg[(*nwg)++] = A(c, 2.0 * h);      /* buf47: attention_norm's */
    return gx;
}
