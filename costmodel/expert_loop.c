/*
 * expert_loop.c — the kernels of torchtitan's per-expert loop beyond the expert GEMMs and the
 * SwiGLU (see expert_loop.h for why). Source: torchtitan torchtitan/models/moe/moe.py
 * _run_experts_for_loop: num_tokens_per_expert.tolist(), torch.split(x, counts), per expert
 * h = silu(x_e @ w1[e].T) * (x_e @ w3[e].T); h @ w2[e].T, then torch.cat of the outputs.
 * Autograd (tools/autograd/derivatives.yaml): select's backward is select_backward (zeros of
 * the input's shape, then copy_ into the selected slice); split's backward one cat of the
 * pieces' gradients; the engine sums the gradients a tensor receives from several uses in
 * place (input_buffer.cpp accumulate). local experts of an h x f weight each, W = local h f 2
 * bytes (the bf16 weight FSDP2's mixed precision computes with), per weight tensor (3 for
 * SwiGLU: w1, w3, w2; 2 otherwise):
 *   zeros      local launches, W written each
 *   copy       local launches, the expert's slice read and written (4 h f)
 *   accumulate local - 1 launches, W + W read, W written (add_)
 * and torch.cat forward and split's cat backward, each reading and writing the received rows
 * (4 R h). Measured (bench/results/epstep_2026-11-27, ep4-loop-q3moeL4 on H100, one layer's
 * backward, Qwen3-30B-A3B, 32 local experts, W = 100.7 MB): 96 zero fills 2.97 ms, 96 slice
 * copies 0.37 ms, 93 in-place adds 9.30 ms (9.7 GB and 28.1 GB: 3.3 and 3.0 TB/s): the HBM's
 * streaming rate (hbm_efficiency, 0.91 of 3.35 TB/s = 3.05 TB/s on H100, measured for c = a + b
 * on 4 GiB buffers), not the blended eager elementwise rate (0.51), so they are priced as
 * compute_stream_s prices a stream; the zero fills, which only write, at gpu.fill_efficiency
 * where the system has it: on H200 (bench/results/moe25_2026-11-29, EP 2, Qwen3-235B-A22B's
 * layer, 64 local experts, W = 805 MB) 384 fills ran at 3.39 TB/s (0.706 of 4.8) while the
 * 378 adds beside them ran at 4.40 TB/s (0.917, hbm_efficiency's c = a + b).
 * Not here: torchtitan's loop copies num_tokens_per_expert to the host (.tolist()), under EP a
 * second sync after the dispatch's (host_dispatch.c prices one per layer); parallel_run.py has
 * those counts on the host already. And parallel_run.py slices x[off:off + c] where torchtitan
 * splits, which adds a zero fill, a copy and an add of the whole [R, h] input gradient per expert
 * (1.16 + 3.59 ms in that layer); it is the script's, not torchtitan's.
 */
#include "expert_loop.h"

#include "hf_experts.h"
#include "titan_moe.h"

bool expert_loop_applies(const training_spec *t, const layout *l)
{
    return t && t->moe_expert_loop && titan_moe_applies(l);
}

void expert_loop_kernels(const model_spec *m, const layout *l, int local, double received,
                         elementwise_list *out)
{
    /* streaming kernels, not the blended eager rate (elementwise.h): each zero fill and add_
     * sweeps the whole stacked weight contiguously, as compute_stream_s's measured c = a + b */
    out->eager = false;
    out->inductor = false;
    out->alone = layout_gpus(l) == 1;
    out->n_fwd = out->n_bwd = 0;
    if (local < 1) return;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double h = m->hidden, fw = (double)m->expert_ffn, R = received;
    double W = local * h * fw * 2.0;
    int weights = m->activation == MODEL_ACT_SWIGLU ? 3 : 2;
    /* bytes per launch */
    moe_kernel_add(f, "moe.loop.cat", 4 * R * h, 1);
    moe_kernel_add(b, "moe.loop.bwd.select.zeros", W, weights * local);
    b.k[*b.n - 1].access = ew_contiguous(EW_VECTORIZED, 2, 0, 0, W / 2); /* a fill: no input */
    moe_kernel_add(b, "moe.loop.bwd.select.copy", 4.0 * h * fw, weights * local);
    moe_kernel_add(b, "moe.loop.bwd.select.accumulate", 3.0 * W, weights * (local - 1));
    moe_kernel_add(b, "moe.loop.bwd.split", 4 * R * h, 1);
}

void expert_loop_new_shape_host(const model_spec *m, const system_spec *sys, double new_share,
                                double *fwd_s, double *bwd_s)
{
    *fwd_s = *bwd_s = 0;
    double c = sys ? sys->host_gemm_new_shape_s : 0;
    if (!(c > 0) || !(new_share > 0)) return;
    bool gated = m->activation == MODEL_ACT_SWIGLU;
    /* forward: x @ w1 and h @ w2 take new shapes, x @ w3 the shape x @ w1 just ran (SwiGLU);
     * backward: each MmBackward0 runs a dgrad and a wgrad, w2's two and the first of w3/w1's
     * two are new shapes, the second's repeat them */
    double fwd_new = 2, fwd_all = gated ? 3 : 2, bwd_new = 4, bwd_all = gated ? 6 : 4;
    double share = new_share < 1 ? new_share : 1;
    *fwd_s = share * c * fwd_new / fwd_all;
    *bwd_s = share * c * bwd_new / bwd_all;
}
