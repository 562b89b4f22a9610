/*
 * fsdp_copies.h — the copies torch FSDP2 makes around each FSDP unit's collectives, per GPU:
 * the one list the estimate (estimate.c) and the backend (backend/work.c, bk_measure.c) price
 * and run.
 *
 * From torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py (bf16 params, fp32 reduce,
 * MixedPrecisionPolicy), for a unit of p parameters on this GPU sharded over g ranks
 * (n = ceil(p / g) elements per rank):
 *  - all-gather copy-in, on the all-gather copy-in stream (foreach_all_gather):
 *    _get_param_all_gather_inputs' torch._foreach_copy_ casts the fp32 shards into a flat bf16
 *    buffer (multi_tensor_apply CopyFunctor<BFloat16, float>: read 4n, write 2n), then
 *    all_gather_copy_in's torch._foreach_copy_ copies them into this rank's slot of the
 *    all-gather output (UnaryOpFunctor Copy<BFloat16, BFloat16>: read 2n, write 2n). Both in
 *    launches of at most 320 chunks of 65536 elements (MultiTensorApply.cuh kChunkSize,
 *    depth_to_max_blocks), ceil(ceil(n / 65536) / 320) each;
 *  - all-gather copy-out, on the compute stream (foreach_all_gather_copy_out ->
 *    split_with_sizes_copy): the gathered [g, n] bf16 buffer into the unsharded parameters,
 *    one split_with_sizes_copy_out_contiguous_no_cast_kernel (read 2gn, write 2gn);
 *  - reduce-scatter copy-in, on the compute stream (foreach_reduce ->
 *    foreach_reduce_scatter_copy_in -> chunk_cat, before reduce_scatter_stream.wait_stream):
 *    the bf16 unsharded gradients cast into the fp32 [g, n] reduce-scatter input, one
 *    chunk_cat_cuda_kernel<float, BFloat16> (read 2gn, write 4gn).
 * Every all-gather has a copy-in and a copy-out; every reduce-scatter a copy-in. A unit is
 * gathered in each forward and, when resharded after forward, again in its backward, and
 * reduced once per backward. The root unit (embedding, final norm, output layer) likewise:
 * fully_shard(root, reshard_after_forward=True) reshards it after forward too (torch 2.11
 * keeps the root unsharded only when reshard_after_forward is left to auto, _fsdp_state.py
 * _lazy_init), as bench/fsdp2_step.py does: its profile has 66 all-gathers for 33 units.
 *
 * They are eager PyTorch kernels, priced like the model's own (elementwise_eager_kernel_s:
 * eager_elementwise_efficiency plus eager_kernel_gap_s per launch). The copy-out and the
 * reduce-scatter copy-in run on the compute stream and are compute time; the copy-in runs on its
 * own stream ahead of the all-gather, which waits for it (all_gather_stream.wait_stream), so it
 * is part of the gather's time and hides behind compute where the gather does. It still moves
 * HBM bytes beside the compute kernels; that contention is not modelled apart: the measured
 * eager efficiency (0.51) was taken in the concurrent step, the same kernels alone reach 0.59 (0.62
 * without the loss's log_softmax, bench/eager_rates.py).
 *
 * A shard group of one rank (one GPU) runs none of this around its gathers: FSDPParamGroup.unshard
 * returns before foreach_all_gather when the all-gather group's size is 1, and wait_for_unshard
 * (FSDP2's pre-forward and pre-backward, on the compute stream) fills each parameter's unsharded
 * bf16 tensor from its fp32 shard itself (pytorch/pytorch torch/distributed/fsdp/_fully_shard/
 * _fsdp_param_group.py at 002a76fb, the world_size == 1 branches). Measured in real one-GPU
 * Hugging Face steps (torch 2.11, bench/results/host23_2026-11-29, torch.profiler): each
 * parameter tensor of a unit gets one bfloat16_copy kernel (aten::to) and one Memcpy DtoD
 * (aten::copy_) under FSDP::pre_forward / pre_backward, all on the compute stream (146 + 146 for
 * Llama-3.2-1B's 16 x 9 + 2 tensors); no copy-in stream, no collective. The two move 10 bytes a
 * parameter (read 4 write 2, read 2 write 2) at the streaming rate: a DeepSeek-V2-Lite MoE unit
 * (584.7 M parameters) 0.85 + 0.56 ms = 4.15 TB/s, a Llama-3.2-1B layer 3.7 TB/s
 * (fsdp_copy_out_s prices them at compute_stream_s, gpu.hbm_efficiency). The reduce-scatter's
 * copy-in (chunk_cat) runs at one rank as at several.
 */
#ifndef PLAN_FSDP_COPIES_H
#define PLAN_FSDP_COPIES_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"
#include "system.h"

typedef struct {
    elementwise_kernel cast_in;  /* fsdp.copy_in.cast: fp32 shard -> flat bf16 (foreach) */
    elementwise_kernel slot_in;  /* fsdp.copy_in.slot: bf16 -> all-gather input slot (foreach) */
    elementwise_kernel copy_out; /* fsdp.copy_out: split_with_sizes_copy of the gathered unit */
    elementwise_kernel rs_cast;  /* fsdp.rs_copy_in: chunk_cat bf16 grads -> fp32 [g, n] */
    /* Gradient accumulation without sync (torch pipelining, below): the first micro-batch's
     * bf16 unsharded gradient cast to fp32 (to_accumulated_grad_if_needed: a direct_copy, read
     * 2, write 4 bytes an element), each later one added into it (accumulate_unsharded_grad_
     * if_needed: fp32 += bf16, read 6, write 4), and the last backward's reduce-scatter copy-in
     * of the fp32 sum (chunk_cat of fp32: read 4, write 4) */
    elementwise_kernel acc_cast; /* fsdp.acc_cast */
    elementwise_kernel acc_add;  /* fsdp.acc_add */
    elementwise_kernel rs_copy;  /* fsdp.rs_copy_in of the fp32 sum */
    double params;               /* the unsharded unit (g n parameters) */
    bool one_gpu;                /* FSDP2's one-rank unshard instead (header comment) */
} fsdp_copies;

/* multi_tensor_apply's limits (aten/src/ATen/native/cuda/MultiTensorApply.cuh). */
#define FSDP_FOREACH_CHUNK 65536
#define FSDP_FOREACH_MAX_BLOCKS 320

/* Whether layout l runs FSDP2's copies (torch FSDP2 with FSDP sharding). */
bool fsdp_copies_apply(const layout *l);

/* The copies of one unit of `params` parameters on this GPU over a shard group of g ranks. */
void fsdp_copies_unit(double params, int shard_group, fsdp_copies *out);

/* The copies of a unit of `params` parameters as layout l runs them: fsdp_copies_unit over l's
 * shard group, and on one GPU FSDP2's one-rank unshard (one_gpu; header comment). Measured on one
 * GPU only: a one-rank FSDP mesh beside TP or PP (parallel_run.py's dp 1) runs the same branch of
 * FSDP2 but keeps the multi-rank list here (its real runs were not profiled for it), and so does
 * the backend (backend/bk_dp.c runs fsdp_copies_unit's kernels). On one GPU the layer recipe
 * gives the one-GPU copies items (recipe_fsdp.c rb_fsdp_copies), which the backend runs. */
void fsdp_copies_of(const layout *l, double params, fsdp_copies *out);

/* Per all-gather: copy-in (copy-in stream, ahead of the gather) and copy-out (compute stream);
 * per reduce-scatter: its copy-in (compute stream). One GPU (one_gpu, header comment): no
 * copy-in (0), and the copy-out is the unshard's cast and copy of every parameter, 10 bytes each
 * at the streaming rate. */
double fsdp_copy_in_s(const system_spec *sys, const fsdp_copies *c);
double fsdp_copy_out_s(const system_spec *sys, const fsdp_copies *c);
double fsdp_rs_copy_in_s(const system_spec *sys, const fsdp_copies *c);

/* One GPU (one_gpu): the reduce-scatter of a one-rank group is a device copy of the fp32
 * reduce-scatter input into its output (read 4, write 4 bytes a parameter), a Memcpy DtoD
 * (aten::copy_) on FSDP2's reduce-scatter stream. It runs beside the compute stream but the
 * compute stream's next kernel does not run with it: in the profiled one-GPU DeepSeek-V2-Lite
 * L8 s2k b4 step of bench/results/host23_2026-11-29 (call1, one H200, torch 2.11) each of the
 * seven decoder units' copies took 1.098-1.103 ms (584.7 M parameters, 4.68 GB: 4.25 TB/s), and
 * in the four where the compute stream had work the next unit's first unshard cast (q_proj,
 * 6.3 M elements, ~10 us alone) started with the copy and lasted 1.099-1.105 ms; in
 * Llama-3.2-1B s2k b2's profile a 4096-block cast that overlapped a 116 us copy lasted 120 us
 * (bench/results/moebwd23_2026-11-29). So the copy is compute-stream time in the backward:
 * 8 bytes a parameter at the streaming rate (compute_stream_s, gpu.hbm_efficiency). Several
 * ranks: 0 (the collective is NCCL's, priced as communication). */
double fsdp_rs_one_rank_s(const system_spec *sys, const fsdp_copies *c);

/* The host's own time in the reduce-scatter copy-in of a unit of `params` parameters over
 * `shard_group` ranks, before its kernel launches. torch._chunk_cat's CUDA path
 * (aten/src/ATen/native/cuda/TensorShape.cu at PyTorch 2.x: get_chunk_cat_metadata, pack_vecs)
 * builds on the host one int64 per BYTES_PER_BLOCK = 16 x 128 = 2048 bytes of the fp32 output
 * chunk (block_idx_to_tensor_idx, a fresh std::vector, so its pages are faulted in each call),
 * copies it into a pinned buffer and sends it to the GPU: host_chunk_cat_block_s per block, n =
 * ceil(params / g) elements per rank, 4n / 2048 blocks. Measured in bench/results/ep_2026-11-27
 * (the system presets' sources). The rate per block is not one constant: measured alone on one
 * H100 host (bench/realruns/host_probe.py, bench/results/smallrows_2026-11-27) the call takes
 * 6.9 ns a block up to about 2e5 blocks (a Llama-3.2-1B layer: 0.82 ms) and 13.2 ns for each
 * block past that (Qwen3-30B-A3B and Mixtral-8x7B layers: 14.8 and 36.1 ms): the
 * host_chunk_cat_block_s up to host_chunk_cat_knee_blocks, host_chunk_cat_block_large_s
 * beyond (0: one rate for all). */
#define FSDP_CHUNK_CAT_BLOCK_BYTES 2048.0
double fsdp_rs_copy_in_host_s(const system_spec *sys, double params, int shard_group);

/* All-gathers of a unit per micro-batch: the forward's, and the backward's when resharded. */
int fsdp_gathers_per_microbatch(const layout *l);

/*
 * torch.distributed.pipelining with FSDP2 (torchtitan's pipeline layouts): the stage's backward
 * runs with set_requires_gradient_sync(False) and set_reshard_after_backward(False) for every
 * micro-batch, and the last one's post_backward is called by hand to reduce-scatter the summed
 * gradients (torch/distributed/pipelining/stage.py, _PipelineStageBase.backward_maybe_with_nosync,
 * pytorch 1fd7abc); torchtitan does not reshard after forward under pipelining
 * (torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy, b5bcd76c6). So a unit is
 * gathered once per step (its first micro-batch's forward) and reduced once (its last
 * micro-batch's backward); in between FSDP2 keeps the unsharded gradients in fp32
 * (_fsdp_param.py to_accumulated_grad_if_needed / accumulate_unsharded_grad_if_needed).
 * Measured on 4 x H100 (bench/results/pp_timeline_2026-11-27/profile_rank3, Llama-3.1-8B-L16
 * PP 4, 8 micro-batches): the last stage's profile holds 266 = 7 x 38 fp32 += bf16 adds (7 later
 * micro-batches, 38 parameters) and 5 chunk_cats (4 layers + the root unit) per step.
 * fsdp_pipelined says whether a layout runs this way.
 */
bool fsdp_pipelined(const layout *l);
/* Per micro-batch of a step of m, each once-per-step copy spread evenly (exact for the
 * bottleneck stage's m x its micro-batch: each happens once on it): the gather's copy-out
 * (forward) and the gradient accumulation plus the final reduce-scatter copy-in (backward). */
double fsdp_pipelined_copy_out_s(const system_spec *sys, const fsdp_copies *c, int m);
double fsdp_pipelined_grad_s(const system_spec *sys, const fsdp_copies *c, int m);

/* Parameters of the root unit on pipeline stage s (embedding on the first, final norm and
 * output layer on the last). */
double fsdp_root_params(const model_spec *m, const layout *l, int stage);

#endif
