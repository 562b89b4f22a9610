/*
 * titan_moe.c — the routing kernels of torchtitan's MoE block (eager), forward and backward:
 * what the GPU runs around the grouped expert GEMMs and what the host issues for it (see
 * titan_moe.h for why).
 *
 * Sources, op by op: torchtitan torchtitan/models/moe/moe.py at 08dc75ae (TokenChoiceTopKRouter,
 * TokenReorderer, MoE.forward), torchtitan/models/moe/utils.py at 2bc7eb82 (_permute,
 * _unpermute: run around the grouped GEMMs with and without EP, indices_padding_wrapper or
 * ExpertParallel's dispatch/combine), the weights applied after the experts
 * (score_before_experts=False, torchtitan's Qwen3 and DeepSeek-V3 settings); autograd's
 * backward formulas from PyTorch tools/autograd/derivatives.yaml. T tokens on this GPU, k =
 * top_k, S = T k routed copies it sends, R the copies its local experts receive, h hidden, E
 * experts; bf16 2, fp32 4, int64 8 bytes; bytes are read plus written per launch.
 *   Router: the gate Linear (the recipe's "router" GEMM), scores.to(fp32) 6TE, softmax 8TE,
 *     topk (gatherTopK + sort, read 4TE, write fp32 values and int64 indices 12S), route_norm
 *     (a row sum 4S + 4T, + 1e-20 8T, a divide 8S + 4T), * route_scale 8S, histc (a zero fill
 *     and the histogram, 8S + 4E), tokens_per_expert.add_ 12E.
 *   Reorderer: histc again, argsort(stable) (an iota and a cub radix sort of int64 keys and
 *     values, 20S each), top_scores.view(-1)[idx] 16S, idx // k 16S; x[idx // k] gathers S
 *     rows (4Sh + 8S).
 *   EP (ep > 1): the split sizes' two row sums (8E each); the all-to-alls are moe_dispatch.c's.
 *   _permute: generate_permute_indices (one Triton kernel, 8R), x.new_zeros(h) 2h, vstack
 *     copies the R rows (4Rh), x[permuted_indices] gathers them (4Rh + 8R); the grouped GEMMs'
 *     offsets: cumsum (8 per local expert, one launch).
 *   _unpermute: out_unpermuted[permuted_indices] = out, index_put (4Rh + 8R).
 *   Unsort: zeros (2Sh), routed_output_unsorted[idx] = routed_output (4Sh + 8S); the weighted
 *     sum: .float() (6Sh), bmm(top_scores [T,1,k], [T,k,h]) (read 4Sh + 4S, write 4Th),
 *     .to(bf16) 6Th.
 * 31 launches forward at ep > 1 (29 without EP) while the argsort fits one cub tile (S <= 4864);
 * above, the argsort is its iota and 20 cub kernels (hf_experts.c moe_sort_kernels): 50 at
 * Qwen3-30B-A3B's seq 4096.
 *   Backward, in autograd's order: .to's 6Th; bmm's two products (the gradient of the [T,k,h]
 *     operand: read 4Th + 4S, write 4Sh; of the scores: read 4Th + 4Sh, write 4S); .float()'s
 *     cast back 6Sh; index_put's: a gather of the S rows (4Sh + 8S); _unpermute's: the slice's
 *     zeros ((R + 1) h 2) and copy (4Rh), the index_put's gather (4Rh + 8R); _permute's
 *     gather: index_put_ with accumulate into zeros (moe_index_backward over R + 1 rows of h
 *     bf16), vstack's a view; x[idx // k]: the same over T rows with S updates; the scores'
 *     gather: over S fp32 values; the router: * route_scale 8S, route_norm's backward (four
 *     kernels over S fp32 values, 12S each), topk's (a zero fill 4TE and a scatter 12S, as one
 *     pair), softmax's 12TE, the cast to the bf16 logits 6TE.
 * 29 launches backward at one sort tile; above it each index backward is 14 launches (moe_
 * index_backward), 59 in all at Qwen3-30B-A3B's seq 4096 (the H100 traces of
 * bench/results/epstep_2026-11-27 count 14 per IndexBackward0).
 *
 * Every kernel is priced by its bytes at the eager elementwise rate (elementwise.c), as
 * hf_experts.c prices transformers' list. bench/results/ep_2026-11-27 (the profiled step of
 * bench/realruns/parallel_run.py --layout ep --experts grouped, which runs the same gathers,
 * index backward kernels and an fp32 weighted sum, plus per-expert index building on the host)
 * shows what this list stands for on the GPU: 2.3 ms per step of unpermute kernels forward, 6.0
 * ms of index backward kernels, 2.5 ms of the weighted sum's backward (H200, 4 layers).
 */
#include "titan_moe.h"

#include "hf_experts.h"

bool titan_moe_applies(const layout *l)
{
    return l->framework == FRAMEWORK_TORCHTITAN && !l->compile && l->tp == 1 && l->cp == 1;
}

void titan_moe_routing(const model_spec *m, const layout *l, double tokens, double received,
                       elementwise_list *out)
{
    out->eager = true;
    out->inductor = false;
    out->alone = layout_gpus(l) == 1;
    out->n_fwd = out->n_bwd = 0;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double T = tokens, k = m->top_k, S = T * k, h = m->hidden, E = m->experts, R = received;
    double local = l->ep > 1 ? E / l->ep : E;

    /* forward: router, reorderer, token gather */
    moe_kernel_add(f, "moe.router.to_fp32", 6 * T * E, 1);
    moe_kernel_add(f, "moe.router.softmax", 8 * T * E, 1);
    moe_kernel_add(f, "moe.router.topk", (4 * T * E + 12 * S) / 2, 2);
    moe_kernel_add(f, "moe.router.renorm", (12 * S + 16 * T) / 3, 3);
    moe_kernel_add(f, "moe.router.scale", 8 * S, 1);
    moe_kernel_add(f, "moe.histc", (8 * S + 4 * E) / 2, 4);
    moe_kernel_add(f, "moe.tokens_per_expert", 12 * E, 1);
    int sorts = 1 + moe_sort_kernels(S, 64); /* the iota and the sort's kernels: 40S in all */
    moe_kernel_add(f, "moe.argsort", 40 * S / sorts, sorts);
    moe_kernel_add(f, "moe.scores.gather", 16 * S, 1);
    moe_kernel_add(f, "moe.token_idx", 16 * S, 1);
    moe_kernel_add(f, "moe.gather", 4 * S * h + 8 * S, 1);
    if (l->ep > 1) moe_kernel_add(f, "moe.ep.splits", 8 * E, 2);
    /* _permute, the GEMMs' offsets, _unpermute */
    moe_kernel_add(f, "moe.permute.idx", 8 * R, 1);
    moe_kernel_add(f, "moe.permute.zero_row", 2 * h, 1);
    moe_kernel_add(f, "moe.permute.vstack", 4 * R * h, 1);
    moe_kernel_add(f, "moe.permute", 4 * R * h + 8 * R, 1);
    moe_kernel_add(f, "moe.offsets", 8 * local, 1);
    moe_kernel_add(f, "moe.unpermute", 4 * R * h + 8 * R, 1);
    /* unsort and the weighted top-k sum */
    moe_kernel_add(f, "moe.unsort.zeros", 2 * S * h, 1);
    moe_kernel_add(f, "moe.unsort", 4 * S * h + 8 * S, 1);
    moe_kernel_add(f, "moe.combine.to_fp32", 6 * S * h, 1);
    moe_kernel_add(f, "moe.combine.bmm", 4 * S * h + 4 * S + 4 * T * h, 1);
    moe_kernel_add(f, "moe.combine.to_bf16", 6 * T * h, 1);

    /* backward, in autograd's order */
    moe_kernel_add(b, "moe.bwd.combine.to_fp32", 6 * T * h, 1);
    moe_kernel_add(b, "moe.bwd.combine.bmm", (8 * T * h + 8 * S * h + 8 * S) / 2, 2);
    moe_kernel_add(b, "moe.bwd.combine.to_bf16", 6 * S * h, 1);
    moe_kernel_add(b, "moe.bwd.unsort", 4 * S * h + 8 * S, 1);
    moe_kernel_add(b, "moe.bwd.unpermute.slice", ((R + 1) * h * 2 + 4 * R * h) / 2, 2);
    moe_kernel_add(b, "moe.bwd.unpermute", 4 * R * h + 8 * R, 1);
    moe_index_backward(b, "moe.bwd.permute.zeros", "moe.bwd.permute.sort", "moe.bwd.permute",
                       R + 1, h, 2, R);
    moe_index_backward(b, "moe.bwd.gather.zeros", "moe.bwd.gather.sort", "moe.bwd.gather", T, h,
                       2, S);
    moe_index_backward(b, "moe.bwd.scores.zeros", "moe.bwd.scores.sort", "moe.bwd.scores", S, 1,
                       4, S);
    moe_kernel_add(b, "moe.bwd.router.scale", 8 * S, 1);
    moe_kernel_add(b, "moe.bwd.router.renorm", 12 * S, 4);
    moe_kernel_add(b, "moe.bwd.router.topk", (4 * T * E + 12 * S) / 2, 2);
    moe_kernel_add(b, "moe.bwd.router.softmax", 12 * T * E, 1);
    moe_kernel_add(b, "moe.bwd.router.to_bf16", 6 * T * E, 1);
}
