/*
 * gather_moe.c — the routing kernels of bench/realruns/prun_moe.py's MoE block, forward and
 * backward (gather_moe.h says why). T tokens on this GPU, k = top_k, S = T k routed copies it
 * sends, R the copies its E_l local experts receive, h hidden, E experts; bf16 2, fp32 4, int64
 * 8 bytes; bytes are read plus written per launch, each operand once (a broadcast operand at its
 * own size).
 *
 * Forward, MoE.forward then Experts._forward_device (--permute device, the default since
 * 2026-11-28; the host-built permutation of older records runs the same gathers):
 *   router: .float() 6TE, softmax 8TE, topk (as titan_moe.c), with norm_topk_prob the row sum
 *     (read 4S, write 4T) and the divide (read 4S + 4T, write 4S); flat.argsort(stable) (an iota
 *     and a cub radix sort of S int64 keys, 40S); order // k 16S; xs = x[order // k], a gather of
 *     S rows (4Sh + 8S); the counts: zeros(E), ones_like(flat) and scatter_add_ (8E + 8S + 24S);
 *     under EP the two split-size row sums (8E each).
 *   regroup [source rank][local expert] -> [local expert][source rank]: arange and
 *     repeat_interleave (its cumsum and fill, 8R), the key (seg % E_l) * ep + seg // E_l (four
 *     int64 kernels, 72R), its argsort(stable) (40R), inv[idx] = arange (8R + 24R);
 *     xe = recv[idx], a gather of R rows (4Rh + 8R).
 *   grouped experts only (padded): the padded counts, their cumsums and the shifts (13 launches
 *     over E_l and R: 48R), x.new_zeros(R + 16 E_l, h) (2(R + 16 E_l)h), index_copy of the R
 *     rows (4Rh + 8R); after the GEMMs [pos], a gather of R rows (4Rh + 8R).
 *   out_local[inv], a gather of R rows; unsort[order] = arange (8S + 24S); back[unsort], a
 *     gather of S rows; the combine y.float() (6Sh), * topw.unsqueeze(-1) (read 4Sh + 4S, write
 *     4Sh), .sum(1) (read 4Sh, write 4Th), .to(bf16) (6Th).
 * Backward, in autograd's order (tools/autograd/derivatives.yaml: index's backward is
 * index_put_ with accumulate into zeros, index_copy's for `source` grad.index_select):
 *   .to's 6Th; the product's two gradients, g * topw (read 4Th + 4S, write 4Sh) and g * y
 *     (read 4Th + 4Sh, write 4Sh) with its sum over h (read 4Sh, write 4S); .float()'s cast
 *     back 6Sh; back[unsort]'s index backward over S rows; out_local[inv]'s over R rows;
 *     padded: [pos]'s over R + 16 E_l rows and index_copy's index_select (4Rh + 8R); recv[idx]'s
 *     over R rows; x[order // k]'s over T rows with S updates; the router as titan_moe.c.
 * Each index backward is moe_index_backward (hf_experts.c): zeros, the sort, the accumulate.
 *
 * Measured (bench/results/epg27_2026-11-29: parallel_run.py --layout ep --ep 2 --experts
 * grouped, OLMoE and Qwen3-30B-A3B cut to 4 layers, s4096 b2, one profiled step per rank, H200,
 * torch 2.11): the backward of a middle layer runs 5 indexing_backward_kernel of 309-351 us, each
 * after a zero fill of 80-95 us and 14 sort launches, and the combine's gradients 453 + 379 us
 * (elementwise_kernel<128, 2>, the broadcast operand) + 137 us (the sum); the forward's gathers
 * 5 index kernels (750 us in all), index_copy 437 us, the combine's product 413 us.
 */
#include "gather_moe.h"

#include <math.h>
#include <string.h>

#include "hf_experts.h"

/* index_copy's kernel (index_elementwise_kernel<128, 4>): `rows` rows of `w` bf16 elements
 * written through an index, each read once, on TensorIterator's offset path (EW_OFFSETS:
 * elementwise.c prices a "moe." kernel of that pattern at gpu.score_offsets_efficiency, the
 * elementwise_kernel<128, 4> template's measured rate); measured 364-471 us for OLMoE's 65,536
 * rows of 2048 (537 MB, 1.1-1.5 TB/s). */
static void index_copy_add(moe_kernel_pass p, const char *name, double rows, double w)
{
    if (*p.n >= ELEMENTWISE_MAX || rows <= 0 || w <= 0) return;
    long R = (long)llround(rows), W = (long)llround(w);
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, 0}, .n = {1, R, W}};
    for (int k = 0; k < 2; k++) a.stride[k][1] = W, a.stride[k][2] = 1;
    p.k[*p.n] = (elementwise_kernel){name, 4 * rows * w + 8 * rows, 1, a, 0};
    (*p.n)++;
}

void gather_moe_routing(const model_spec *m, const layout *l, double tokens, double received,
                        bool padded, elementwise_list *out)
{
    out->eager = true;
    out->inductor = false;
    out->alone = layout_gpus(l) == 1;
    out->n_fwd = out->n_bwd = 0;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double T = tokens, k = m->top_k, S = T * k, h = m->hidden, E = m->experts, R = received;
    double local = l->ep > 1 ? E / l->ep : E;

    /* forward: router, sort, the token gather, the counts */
    moe_kernel_add(f, "moe.router.to_fp32", 6 * T * E, 1);
    moe_kernel_add(f, "moe.router.softmax", 8 * T * E, 1);
    moe_kernel_add_inner(f, "moe.router.topk", (4 * T * E + 12 * S) / 2, 2, 1);
    if (m->norm_topk_prob) moe_kernel_add(f, "moe.router.renorm", (16 * S + 8 * T) / 2, 2);
    int sorts = 1 + moe_sort_kernels(S, 64);
    moe_kernel_add_inner(f, "moe.argsort", 40 * S / sorts, sorts, sorts - 1);
    moe_kernel_add(f, "moe.token_idx", 16 * S, 1);
    moe_kernel_add(f, "moe.gather.rows", 4 * S * h + 8 * S, 1);
    moe_kernel_add(f, "moe.counts", (8 * E + 32 * S) / 3, 3);
    if (l->ep > 1) moe_kernel_add(f, "moe.ep.splits", 8 * E, 2);
    /* the regroup by local expert and its gather */
    moe_kernel_add_inner(f, "moe.regroup.seg", 8 * R / 3, 3, 1);
    moe_kernel_add(f, "moe.regroup.key", 72 * R / 4, 4);
    int rsorts = 1 + moe_sort_kernels(R, 64);
    moe_kernel_add_inner(f, "moe.regroup.argsort", 40 * R / rsorts, rsorts, rsorts - 1);
    moe_kernel_add(f, "moe.regroup.inv", 32 * R / 2, 2);
    moe_kernel_add(f, "moe.permute.rows", 4 * R * h + 8 * R, 1);
    if (padded) {
        moe_kernel_add_inner(f, "moe.pad.index", 48 * R / 13, 13, 1);
        moe_kernel_add(f, "moe.pad.zeros", 2 * (R + 16 * local) * h, 1);
        moe_kernel_add_inner(f, "moe.pad.index_copy.clone", 4 * (R + 16 * local) * h, 1, 1);
        index_copy_add(f, "moe.pad.index_copy", R, h);
        moe_kernel_add(f, "moe.unpad.rows", 4 * R * h + 8 * R, 1);
    }
    /* the way back: gathers, then the weighted sum over k in fp32 */
    moe_kernel_add(f, "moe.unpermute.rows", 4 * R * h + 8 * R, 1);
    moe_kernel_add(f, "moe.unsort.idx", 32 * S / 2, 2);
    moe_kernel_add(f, "moe.unsort.rows", 4 * S * h + 8 * S, 1);
    moe_kernel_add(f, "moe.combine.to_fp32", 6 * S * h, 1);
    moe_kernel_add(f, "moe.combine.mul", 8 * S * h + 4 * S, 1);
    moe_kernel_add(f, "moe.combine.sum", 4 * S * h + 4 * T * h, 1);
    moe_kernel_add(f, "moe.combine.to_bf16", 6 * T * h, 1);

    /* backward, in autograd's order */
    moe_kernel_add(b, "moe.bwd.combine.to_fp32", 6 * T * h, 1);
    moe_kernel_add(b, "moe.bwd.combine.mul", 4 * T * h + 4 * S + 4 * S * h, 1);
    moe_kernel_add(b, "moe.bwd.combine.mul_y", 4 * T * h + 8 * S * h, 1);
    moe_kernel_add(b, "moe.bwd.combine.sum", 4 * S * h + 4 * S, 1);
    moe_kernel_add(b, "moe.bwd.combine.to_bf16", 6 * S * h, 1);
    moe_index_backward(b, "moe.bwd.unsort.zeros", "moe.bwd.unsort.sort", "moe.bwd.unsort", S, h,
                       2, S);
    moe_index_backward(b, "moe.bwd.unpermute.zeros", "moe.bwd.unpermute.sort", "moe.bwd.unpermute",
                       R, h, 2, R);
    if (padded) {
        moe_index_backward(b, "moe.bwd.unpad.zeros", "moe.bwd.unpad.sort", "moe.bwd.unpad",
                           R + 16 * local, h, 2, R);
        moe_kernel_add(b, "moe.bwd.pad.rows", 4 * R * h + 8 * R, 1);
    }
    moe_index_backward(b, "moe.bwd.permute.zeros", "moe.bwd.permute.sort", "moe.bwd.permute", R,
                       h, 2, R);
    moe_index_backward(b, "moe.bwd.gather.zeros", "moe.bwd.gather.sort", "moe.bwd.gather", T, h,
                       2, S);
    if (m->norm_topk_prob) moe_kernel_add(b, "moe.bwd.router.renorm", 12 * S, 4);
    moe_kernel_add_inner(b, "moe.bwd.router.topk", (4 * T * E + 12 * S) / 2, 2, 1);
    moe_kernel_add(b, "moe.bwd.router.softmax", 12 * T * E, 1);
    moe_kernel_add(b, "moe.bwd.router.to_bf16", 6 * T * E, 1);
}

bool gather_moe_copy_kernel(const char *name)
{
    size_t len = strlen(name);
    return !strncmp(name, "moe.", 4) && ((len > 6 && !strcmp(name + len - 6, ".clone")) ||
                                         (len > 5 && !strcmp(name + len - 5, ".rows")));
}
