/*
 * hf_experts.c — the routing kernels of a Hugging Face transformers 5.x MoE block (impl hf,
 * eager), forward and backward: what the GPU runs around the grouped expert GEMMs and what the
 * host issues for it (see hf_experts.h for why this path and not the per-expert loop).
 *
 * Sources, op by op. T tokens on this GPU, k = top_k, S = T k routed copies, h hidden, E experts,
 * f the expert FFN width; bf16 2, fp32 4, int32 4, int64 8 bytes per element; bytes are read plus
 * written per launch.
 *   Router (transformers 5.x Qwen3MoeTopKRouter.forward; Mixtral's has the same form):
 *     F.linear (priced as the recipe's "router" GEMM), softmax(logits, dtype=float) = a bf16 ->
 *     fp32 cast 6TE and softmax_warp_forward 8TE, topk (gatherTopK + bitonicSortKVInPlace, read
 *     4TE, write fp32 values and int64 indices 12S), router_top_value /= sum(-1): a row sum
 *     (4S + 4T) and an in-place divide (8S + 4T); `.to(router_logits.dtype)` is fp32 -> fp32, no
 *     kernel, so the routing weights stay fp32.
 *   Experts (src/transformers/integrations/moe.py of transformers 5.17.0 as installed on the
 *     H200 machines, grouped_mm_experts_forward, the default experts implementation there for
 *     Mixtral and Qwen3-MoE, lines 377-481 of that file; read on the device, not copied here): one
 *     torch.sort(expert_ids) (the values' copy, the indices' iota and a cub radix sort of int64
 *     keys and values, 40S in all); perm // top_k (16S); hidden_states[perm // top_k] gathers S
 *     rows (4Sh + 8S); sample_weights[perm] (16S); the offsets: expert_ids_g.int() 12S, histc
 *     (a zero fill and kernelHistogram1D, 4S + 4E), cumsum (cub scan init + scan, 8E); the EP
 *     sentinel mask (expert_ids_g >= E, 9S) and clamp_ (16S); masked_fill_ of the gathered rows
 *     (4Sh + S); two torch._grouped_mm (layer_recipe.c prices the GEMMs; each is
 *     HF_EXPERTS_GROUPED_MM_KERNELS launches), each followed by an out-of-place masked_fill of
 *     its output ([S, 2f]: 8Sf + S, [S, h]: 4Sh + S); SwiGLU on the chunked halves
 *     (elementwise.c "experts.act" / "experts.mul"); out * sample_weights_g.unsqueeze(-1): bf16
 *     times fp32 promotes to an fp32 [S, h] (read 2Sh + 4S, write 4Sh); inv_perm[perm] =
 *     arange(S) (an iota and an index_put_ without accumulation, 32S); out[inv_perm] gathers it
 *     back (8Sh + 8S); .view(T, k, h).sum(dim=1) (read 4Sh, write 4Th); .to(bf16) 6Th. (The
 *     8b584a67 version ran two argsorts, a token_idx copy and a second [S, h] gather instead.)
 *   Backward (PyTorch tools/autograd/derivatives.yaml): _to_copy back to fp32 6Th; sum's
 *     backward expands the gradient, the view's backward materialises it (read 4Th, write 4Sh);
 *     each gather's backward (index -> index_put_ with accumulate=True into zeros, aten/src/
 *     ATen/native/cuda/Indexing.cu index_put_with_sort_kernel): a zero fill of the source, an
 *     iota and a cub sort of the S indices, and indexing_backward_kernel reading the S gradient
 *     rows and reading + writing a destination row per update (rows w wide: zeros rows w e,
 *     sort 40S, update 3 S w e + 8S): for out[inv_perm] (S rows of h, fp32),
 *     hidden_states[perm // top_k] (T rows of h, bf16, k updates per row) and
 *     sample_weights[perm] (S values); each masked_fill's backward masks the gradient the same
 *     way (the same bytes); the product's backward: grad * w (fp32, 8Sh + 4S), its cast to
 *     out_g's bf16 (6Sh), grad * out (10Sh) and its sum over h to the [S, 1] weight gradient
 *     (4Sh + 4S); the router's: the divide and row sum backward and the gradient accumulation
 *     of router_top_value (four kernels over S fp32 values, 12S each), topk's backward (a zero
 *     fill 4TE and a scatter 12S), softmax backward 12TE and the cast to the bf16 logits 6TE;
 *     chunk's backward cats the gate and up gradients into [S, 2f] bf16 (8Sf).
 * Launches one op's dispatch issues from C++ after its first (the sort's copy, iota and cub
 * passes; topk's second kernel; histc's and cumsum's second; index_put_'s index kernels and
 * sort, whose update kernel counts as the dispatch's own) are marked inner
 * (elementwise_kernel.inner): the host pays them host.eager_inner_launch_s each, not an eager
 * op (host_dispatch.c). Measured in the profiled Qwen3-30B-A3B step of bench/results/
 * moe19_2026-11-29 (op_launches.py): aten::sort 22 launches a call, the index backward's
 * aten::_index_put_impl_ 13, histc and cumsum 2, topk 2. This list (before host23 added the
 * out-of-place masked_fills' clones, 2 forward and 3 backward): 28 launches forward, 30
 * backward at the toy shape of tests/test_hf_experts.c (every sort one cub tile); the profiled
 * step launched 129 kernels forward and 211 backward per layer, FSDP2's copies included
 * (layer_gpu.py there).
 * Before the 5.17 update (8b584a67's list):
 * 25 launches forward, 31 backward, plus 2 x 2 grouped-GEMM launches forward and 4 x 2 backward,
 * at seq 64 where every sort is one cub tile; above 4864 sorted items each argsort is an iota and
 * 20 cub kernels and each index backward 14 launches (moe_sort_kernels, moe_index_backward).
 * Checked against results/kernels-h100.json (qwen3-30b-a3b, per layer, seq 64): 6
 * prepare_grouped_gemm_data + 6 CUTLASS grouped kernels, 5 arange (token_idx, 2 argsort iotas
 * of the forward, 2+ of the index backward sorts), 3 cub single-tile sorts plus a radixSortKV
 * and the topk's bitonic sort, a histogram, a scan, 2 vectorized gathers + 2 index kernels, 3
 * indexing_backward kernels, softmax forward and backward, one CatArrayBatchedCopy_vectorized.
 * With this list the host queue (host_dispatch.c) issues 235 launches for a Qwen3-30B-A3B layer
 * (forward + backward, FSDP2's copies included) against the 301 measured there (without it:
 * 172); for Llama-3.2-1B's dense layer it issues 131 of the 166 measured: the same share
 * (0.78 and 0.79) of what a profiler sees.
 *
 * Other transformers MoE models (DeepSeek's sigmoid router with group-limited top-k, shared
 * experts) run the same experts path; their router's few [T, E]-sized kernels are priced as
 * this softmax router's, and shared experts as the recipe's dense shared_up / shared_down.
 *
 * Every kernel is priced by its bytes at the eager elementwise rate (elementwise.c); the cub
 * sorts and scans of S int64 keys are small beside the [S, h] gathers. No device-to-host sync
 * happens on this path (histc with explicit bounds, cumsum and _grouped_mm's offsets stay on
 * the device), so the host's issue queue (host_dispatch.c) runs ahead as for dense layers.
 */
#include "hf_experts.h"

#include <math.h>
#include <string.h>

bool hf_experts_applies(const layout *l)
{
    return layout_is_pytorch(l) && !l->compile && layout_impl_of(l) == IMPL_HF && l->ep == 1 &&
           l->tp == 1 && l->cp == 1;
}

typedef moe_kernel_pass pass;

void moe_kernel_add_inner(pass p, const char *name, double bytes, int count, int inner)
{
    if (*p.n >= ELEMENTWISE_MAX || count <= 0 || bytes <= 0) return;
    ew_access a = ew_contiguous(EW_VECTORIZED, 2, 2, 0, bytes / 4);
    p.k[*p.n] = (elementwise_kernel){name, bytes, count, a, inner < count ? inner : count};
    (*p.n)++;
}

void moe_kernel_add(pass p, const char *name, double bytes, int count)
{
    moe_kernel_add_inner(p, name, bytes, count, 0);
}

/* A masked_fill over `rows` rows of `w` bf16 elements with a [rows, 1] mask broadcast along the
 * rows (the sentinel mask of the gathered rows and of each grouped GEMM's output, and their
 * backwards, header comment): read and write 4 rows w bytes plus the mask. The mask's stride-0
 * operand sends TensorIterator to the offset path: the profiled Hugging Face DeepSeek-V2-Lite
 * step on one H200 (bench/results/ho21_2026-11-29/prof/gap, trace of L6 s4096 b1) runs them as
 * elementwise_kernel<128, 4, gpu_kernel_impl_nocast<masked_fill_kernel>>, 141 us for the
 * 201 MB [S, h] ones and 193 us for the 277 MB [S, 2f] ones (1.43 TB/s), where the backend's
 * vectorized copy of the same bytes took 51 and 68 us (bench/results/meas22_2026-11-29). The
 * estimate prices bytes alone; the access is what backend/kernels_ew.cu runs: the offset kernel
 * with the mask as a bf16 [rows, 1] operand (PyTorch's is bool: rows bytes either way against
 * 4 rows w). */
static void moe_mask_add(pass p, const char *name, double rows, double w)
{
    if (*p.n >= ELEMENTWISE_MAX || rows <= 0 || w <= 0) return;
    long R = (long)llround(rows), W = (long)llround(w);
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, 2}, .n = {1, R, W}};
    for (int k = 0; k < 2; k++) a.stride[k][1] = W, a.stride[k][2] = 1;
    a.stride[2][1] = 1; /* the mask: one element per row, broadcast along it */
    p.k[*p.n] = (elementwise_kernel){name, 4 * rows * w + rows, 1, a, 0};
    (*p.n)++;
}

/* An out-of-place masked_fill (x.masked_fill(mask, v): the grouped GEMMs' outputs, and every
 * mask's backward, grad.masked_fill(mask, 0)): at::masked_fill clones its input and fills the
 * clone in place (aten/src/ATen/native/TensorAdvancedIndexing.cpp masked_fill), so a device copy
 * of the rows (read and write 2 bytes an element; cudaMemcpyAsync, issued inside the op's
 * dispatch: an inner launch) runs before moe_mask_add's kernel. Measured in the profiled
 * DeepSeek-V2-Lite step of bench/results/host23_2026-11-29 (call1, one H200): the stacks
 * aten::masked_fill > aten::clone > aten::copy_ (Memcpy DtoD), two in the forward (0.957 GB in
 * 0.220 ms) and three in the backward (1.36 GB in 0.314 ms) of a layer, 4.33-4.35 TB/s: the
 * streaming rate (elementwise.c prices the "moe.*.clone" copies so); the forward's first mask
 * (masked_fill_) is in place, no clone. */
static void moe_mask_clone_add(pass p, const char *clone, const char *name, double rows, double w)
{
    moe_kernel_add_inner(p, clone, 4 * rows * w, 1, 1);
    moe_mask_add(p, name, rows, w);
}

/* Kernels of one cub radix sort (header comment). A single tile holds 256 threads x 19 items
 * (cub/device/dispatch/dispatch_radix_sort.cuh, SingleTilePolicy of the sm90 policy); above it
 * the onesweep path runs a histogram, an exclusive scan and one pass per 8 key bits, each with
 * a memset of its counters before it. Measured on H100 (bench/results/epstep_2026-11-27,
 * torch 2.11): argsort(stable) of 32,768 int64 expert ids = 10 cub radix kernels + 10 memsets
 * (64 bits, 8 passes); index_put_'s sort of the linear indices into 4,096-38,000 rows = 4 + 4
 * (at most 16 bits, 2 passes); at seq 64 (results/kernels-h100.json, 512 items) one
 * DeviceRadixSortSingleTileKernel each. */
int moe_sort_kernels(double items, double key_bits)
{
    if (items <= MOE_SORT_SINGLE_TILE_ITEMS) return 1;
    int passes = (int)ceil(key_bits / 8.0);
    return 2 * (2 + (passes > 0 ? passes : 1));
}

/* The backward of x[idx] (header comment): zeros, the indices' sort, the accumulating update.
 * Above one sort tile index_put_with_sort_kernel (aten/src/ATen/native/cuda/Indexing.cu) also
 * launches the linear index's wrap (remainder), its stride product, its divide by the slice
 * size and the iota of the original positions (4 kernels, measured: IndexBackward0 in the
 * traces of bench/results/epstep_2026-11-27), and sorts keys of ceil(log2(rows)) bits; one
 * tile: the iota and the single-tile sort. 14 launches at the EP rows' sizes, 4 at seq 64. */
void moe_index_backward(pass b, const char *zeros, const char *sort, const char *update,
                        double rows, double w, double e, double updates)
{
    bool tiled = updates > MOE_SORT_SINGLE_TILE_ITEMS;
    double bits = rows > 1 ? ceil(log2(rows)) : 1;
    moe_kernel_add(b, zeros, rows * w * e, 1);
    int n = (tiled ? 4 : 1) + moe_sort_kernels(updates, bits); /* the same 40 B per index */
    /* index_put_'s sort and update run inside its one dispatch: the sort's launches are inner
     * to the update's (elementwise_kernel.inner) */
    moe_kernel_add_inner(b, sort, 40.0 * updates / n, n, n);
    moe_kernel_add(b, update, 3.0 * updates * w * e + 8.0 * updates, 1);
}

void moe_index_backward_runs(pass b, const char *zeros, const char *sort, const char *update,
                             double rows, double w, double e, double updates, double run)
{
    moe_index_backward(b, zeros, sort, update, rows, w, e, updates);
    if (*b.n <= 0 || run < 1) return;
    elementwise_kernel *k = &b.k[*b.n - 1];
    if (strcmp(k->name, update)) return;
    /* indexing_backward_kernel<scalar_t, 4>: the runs' destination rows, the source rows
     * (elementwise.h EW_INDEX_ACCUM; backend/kernels_ew.cu index_accum_kernel) */
    k->access = (ew_access){.pattern = EW_INDEX_ACCUM,
                            .esize = {(int)e, (int)e, 0},
                            .n = {llround(run), llround(rows), llround(w)}};
}

double moe_longest_run(double updates, double experts, double top_k)
{
    if (experts <= 1 || updates <= 0) return updates > 0 ? updates : 0;
    double u = updates / experts, q = 1.0 - (top_k < experts ? top_k / experts : 0);
    return u + sqrt(2.0 * u * q * log(experts));
}

double moe_index_accum_s(const system_spec *sys, const elementwise_list *e,
                         const elementwise_kernel *k)
{
    const ew_access *a = &k->access;
    if (a->pattern != EW_INDEX_ACCUM || sys->index_accum_step_s <= 0 ||
        sys->index_accum_bytes_per_s <= 0)
        return -1.0;
    double run = (double)a->n[0], rows = (double)a->n[1], w = (double)a->n[2];
    double warps = rows * ceil(w / 128.0), step_bytes = 3.0 * (w < 128 ? w : 128) * a->esize[0];
    double chain_s =
        run * (sys->index_accum_step_s + warps * step_bytes / sys->index_accum_bytes_per_s);
    double eff = e->alone && sys->eager_elementwise_efficiency_alone > 0
                     ? sys->eager_elementwise_efficiency_alone
                     : sys->eager_elementwise_efficiency;
    double bytes_s = k->bytes / (sys->hbm_bandwidth_bytes_per_s * eff);
    return (chain_s > bytes_s ? chain_s : bytes_s) + sys->eager_kernel_gap_s;
}

/* GPT-OSS's expert biases (model_spec.expert_bias) on the grouped_mm path (transformers 5.17.0
 * integrations/moe.py as installed on the H200 machine, lines 417-457, read by bench/realruns/
 * bias_gather_probe.py; models/gpt_oss/modeling_gpt_oss.py line 68 decorates GptOssExperts
 * with use_experts_implementation(..., has_bias=True)): gate_up_proj_bias[expert_ids_g] and
 * down_proj_bias[expert_ids_g] gather an [E, 2f] and an [E, h] bf16 table into [S, 2f] and
 * [S, h] (vectorized_gather_kernel: the S rows written, the table read from L2, 8 bytes an
 * index), each added in place to its grouped GEMM's output (out.add_(bias), lines 107 and 372:
 * read 2 x 2, write 2 bytes an element); backward: the add passes the gradient through, each
 * gather's backward is index_put_ with accumulate into the [E, w] table over the S sorted
 * expert ids: E runs of about S / E duplicates (moe_index_backward_runs). */
static void hf_experts_bias(const model_spec *m, double T, pass f, pass b)
{
    if (!m->expert_bias) return;
    double S = T * m->top_k, E = m->experts, h = m->hidden, w2 = 2.0 * m->expert_ffn;
    double run = moe_longest_run(S, E, m->top_k);
    moe_kernel_add(f, "moe.bias.gather.up", 2 * S * w2 + 8 * S, 1);
    moe_kernel_add(f, "moe.bias.add.up", 6 * S * w2, 1);
    moe_kernel_add(f, "moe.bias.gather.down", 2 * S * h + 8 * S, 1);
    moe_kernel_add(f, "moe.bias.add.down", 6 * S * h, 1);
    moe_index_backward_runs(b, "moe.bwd.bias.down.zeros", "moe.bwd.bias.down.sort",
                            "moe.bwd.bias.down", E, h, 2, S, run);
    moe_index_backward_runs(b, "moe.bwd.bias.up.zeros", "moe.bwd.bias.up.sort", "moe.bwd.bias.up",
                            E, w2, 2, S, run);
}

/* The routing weights' product out * w[:, None] and its backward grad * w: [rows, h] by a
 * [rows, 1] operand broadcast along the row (header comment, elementwise.c's offset rate):
 * output eo bytes, the rows ea, the weights 4 (fp32). */
static ew_access weight_access(double rows, double h, int eo, int ea)
{
    long R = (long)llround(rows), W = (long)llround(h);
    ew_access a = {.pattern = EW_OFFSETS, .esize = {eo, ea, 4}, .n = {1, R, W}};
    for (int k = 0; k < 2; k++) a.stride[k][1] = W, a.stride[k][2] = 1;
    a.stride[2][1] = 1;
    return a;
}

static void set_half(elementwise_kernel *k, int n, const char *name, ew_access a)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) k[i].access = a;
}

void hf_experts_halves(const model_spec *m, double rows, elementwise_list *e)
{
    if (m->activation != MODEL_ACT_SWIGLU) return;
    long R = (long)llround(rows), F = (long)m->expert_ffn;
    /* out contiguous [R, F]; a, b: a contiguous operand or a half of [R, 2F] (row stride 2F) */
    ew_access act = {.pattern = EW_OFFSETS, .esize = {2, 2, 0}, .n = {1, R, F}};
    act.stride[0][1] = F, act.stride[1][1] = 2 * F;
    act.stride[0][2] = act.stride[1][2] = 1;
    ew_access mul = act;
    mul.esize[2] = 2;
    mul.stride[1][1] = F, mul.stride[2][1] = 2 * F, mul.stride[2][2] = 1;
    set_half(e->fwd, e->n_fwd, "experts.act", act);
    set_half(e->fwd, e->n_fwd, "experts.mul", mul);
    set_half(e->bwd, e->n_bwd, "experts.bwd.mul", mul);
    set_half(e->bwd, e->n_bwd, "experts.bwd.act", mul);
}

void hf_experts_routing(const model_spec *m, const layout *l, double tokens,
                        elementwise_list *out)
{
    out->eager = true;
    out->inductor = false;
    out->alone = layout_gpus(l) == 1;
    out->n_fwd = out->n_bwd = 0;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double T = tokens, k = m->top_k, S = T * k, h = m->hidden, E = m->experts;
    double fw = (double)m->expert_ffn;

    /* forward (transformers 5.17.0 grouped_mm_experts_forward, header comment) */
    moe_kernel_add(f, "moe.router.to_fp32", 6 * T * E, 1);
    moe_kernel_add(f, "moe.router.softmax", 8 * T * E, 1);
    moe_kernel_add_inner(f, "moe.router.topk", (4 * T * E + 12 * S) / 2, 2, 1);
    moe_kernel_add(f, "moe.router.renorm", (12 * S + 8 * T) / 2, 2);
    int sort = 2 + moe_sort_kernels(S, 64); /* the values' copy, the indices' iota, cub */
    moe_kernel_add_inner(f, "moe.sort", 40 * S / sort, sort, sort - 1);
    moe_kernel_add(f, "moe.gather_idx", 16 * S, 1);
    moe_kernel_add(f, "moe.gather", 4 * S * h + 8 * S, 1);
    moe_kernel_add(f, "moe.weights.gather", 16 * S, 1);
    moe_kernel_add_inner(f, "moe.offsets", (16 * S + 12 * E) / 5, 5, 2);
    moe_kernel_add(f, "moe.sentinel", 25 * S / 2, 2);
    moe_mask_add(f, "moe.premask", S, h);
    moe_mask_clone_add(f, "moe.mask.up.clone", "moe.mask.up", S, 2 * fw);
    moe_mask_clone_add(f, "moe.mask.down.clone", "moe.mask.down", S, h);
    moe_kernel_add(f, "moe.weight_mul", 6 * S * h + 4 * S, 1);
    f.k[*f.n - 1].access = weight_access(S, h, 4, 2);
    moe_kernel_add(f, "moe.inv_perm", 32 * S / 2, 2);
    moe_kernel_add(f, "moe.unpermute", 8 * S * h + 8 * S, 1);
    moe_kernel_add(f, "moe.topk_sum", 4 * S * h + 4 * T * h, 1);
    moe_kernel_add(f, "moe.to_bf16", 6 * T * h, 1);

    /* backward, in autograd's order */
    moe_kernel_add(b, "moe.bwd.to_fp32", 6 * T * h, 1);
    moe_kernel_add(b, "moe.bwd.topk_expand", 4 * T * h + 4 * S * h, 1);
    moe_index_backward(b, "moe.bwd.unpermute.zeros", "moe.bwd.unpermute.sort",
                       "moe.bwd.unpermute", S, h, 4, S);
    moe_kernel_add(b, "moe.bwd.weight_mul", 8 * S * h + 4 * S, 1);
    b.k[*b.n - 1].access = weight_access(S, h, 4, 4);
    moe_kernel_add(b, "moe.bwd.weight_mul.to_bf16", 6 * S * h, 1);
    moe_kernel_add(b, "moe.bwd.weight_grad", 10 * S * h, 1);
    moe_kernel_add(b, "moe.bwd.weight_grad.sum", 4 * S * h + 4 * S, 1);
    moe_mask_clone_add(b, "moe.bwd.mask.down.clone", "moe.bwd.mask.down", S, h);
    moe_index_backward(b, "moe.bwd.weights.zeros", "moe.bwd.weights.sort", "moe.bwd.weights",
                       S, 1, 4, S);
    moe_kernel_add(b, "moe.bwd.chunk_cat", 8 * S * fw, 1);
    moe_mask_clone_add(b, "moe.bwd.mask.up.clone", "moe.bwd.mask.up", S, 2 * fw);
    moe_mask_clone_add(b, "moe.bwd.premask.clone", "moe.bwd.premask", S, h);
    moe_index_backward(b, "moe.bwd.gather.zeros", "moe.bwd.gather.sort", "moe.bwd.gather",
                       T, h, 2, S);
    moe_kernel_add(b, "moe.bwd.router.renorm", 12 * S, 4);
    moe_kernel_add(b, "moe.bwd.router.topk", (4 * T * E + 12 * S) / 2, 2);
    moe_kernel_add(b, "moe.bwd.router.softmax", 12 * T * E, 1);
    moe_kernel_add(b, "moe.bwd.router.to_bf16", 6 * T * E, 1);
    hf_experts_bias(m, T, f, b);
}
