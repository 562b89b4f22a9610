/*
 * system.h — the system spec: one GPU type, how GPUs are joined inside a node, and the network
 * between nodes, with the achieved-efficiency terms that turn peak figures into times.
 *
 * Presets live in data/systems/, one JSON file each (schema and sources in
 * data/systems/README.md); this module reads their fields. A calibration profile (issue 4) has the same shape, overlays
 * a preset field by field and never edits it; reading and writing profiles, with their
 * "calibration" and "step" sections and "calibration_of", is costmodel/profile.h, which uses
 * the field reader here.
 */
#ifndef PLAN_SYSTEM_H
#define PLAN_SYSTEM_H

#include <stdbool.h>
#include <stddef.h>

#include "attention_rate.h"
#include "fp8_shape.h"
#include "grouped_rate.h"

#include "status.h"

#define HYBRIDEP_ALGBW_MAX_POINTS 8

/* A measured MoE exchange rate by EP size: "algorithm bandwidth" of a dispatch and a combine
 * kernel at each measured EP size, EP increasing (node.hybridep_algbw,
 * network.hybridep_rdma_algbw; moe_dispatch.c reads them); n 0: not measured. */
typedef struct {
    int n;
    double ep[HYBRIDEP_ALGBW_MAX_POINTS];
    double dispatch_bytes_per_s[HYBRIDEP_ALGBW_MAX_POINTS];
    double combine_bytes_per_s[HYBRIDEP_ALGBW_MAX_POINTS];
} system_ep_rates;

/* One fitted collective (issue 4): t = alpha + bytes * bus_factor / busbw for this operation,
 * group size and span, with the fit's standard deviations. op is a collective_op. */
typedef struct {
    int op;
    int group_size;
    int spans_nodes;
    double alpha_s, alpha_sd;
    double busbw_bytes_per_s, busbw_sd;
    double rms_rel_residual;
    int points;
} system_collective_fit;

#define SYSTEM_MAX_COLLECTIVE_FITS 64

/* Step-level corrections (issue 4): what a measured training step shows and the
 * microbenchmarks of the other calibration terms cannot (`plan measure --refine` fits them,
 * costmodel/refine.h). Applied in one place, estimate_layout() in estimate.c. A profile's
 * optional "step" section sets them; without one (every preset) active is false and no
 * prediction changes. Order = the JSON names of system_step_name(). */
typedef enum {
    STEP_COMPUTE_SCALE = 0,    /* x the modelled compute (GEMM, attention, elementwise, bubble):
                                  in-step compute rate against the modelled one (default 1) */
    STEP_COMM_SCALE,           /* x the exposed TP/CP/EP/PP communication (default 1) */
    STEP_OVERLAP_EFFICIENCY,   /* fraction of the DP/FSDP traffic the model hides behind compute
                                  that really hides (default 1; 0: none hides) */
    STEP_LAYER_OVERHEAD,       /* seconds per layer per micro-batch, any framework: launches,
                                  host work, synchronisation (default 0) */
    STEP_FSDP2_COMPUTE_SCALE,  /* x the compute of torch FSDP2 plans on top of compute_scale: its
                                  eager kernels and copy-in/out against their modelled rate
                                  (default 1) */
    STEP_NTERMS
} system_step_term;

typedef struct {
    bool active;                              /* a "step" section was read (or fitted) */
    double value[STEP_NTERMS];
    double cov[STEP_NTERMS][STEP_NTERMS];     /* covariance of the fitted values (0: none) */
    double rms_rel_residual;                  /* scatter of measured steps about the fit */
    int plans;                                /* measured plans the fit used */
} system_step;

typedef struct {
    char name[64];
    char description[256];
    char gpu_name[64];

    /* GPU */
    double peak_bf16_flops_per_s;            /* dense, per GPU, FLOP/s */
    double peak_fp8_flops_per_s;
    double peak_fp4_flops_per_s;             /* dense FP4 (NVFP4/MXFP4), 0 where unsupported */
    double hbm_bytes;                  /* capacity per GPU */
    double hbm_bandwidth_bytes_per_s;
    double gemm_efficiency_max;        /* achieved/peak on large bf16 GEMMs */
    double gemm_overhead_s;            /* fixed cost per GEMM kernel */
    double hbm_efficiency;             /* achieved/peak HBM bandwidth of streaming kernels */
    double multi_tensor_efficiency;    /* the same for torch's foreach multi_tensor_apply kernels
                                          (clip_grad_norm_, foreach AdamW: estimate_optimizer.c);
                                          0: not measured, hbm_efficiency */
    double fill_efficiency;            /* the same for a write-only stream (FillFunctor over a
                                          large contiguous buffer: torch.zeros of a stacked
                                          expert weight, expert_loop.c); 0: not measured,
                                          hbm_efficiency */
    double eager_elementwise_efficiency; /* the same for eager PyTorch elementwise (FSDP2 path) */
    double eager_kernel_gap_s;         /* idle time between back-to-back eager kernels (optional) */
    double eager_elementwise_efficiency_alone; /* the same with nothing beside them (one GPU:
                                           no NCCL or FSDP2 copy kernels); 0: not measured */
    double loss_parallel_efficiency;   /* the same for torch's loss_parallel kernels (whole
                                          fp32 logit shards, elementwise.c); 0: not measured,
                                          eager_elementwise_efficiency */
    double strided_cat_efficiency;     /* the same for eager torch.cat's CatArrayBatchedCopy
                                          into a strided output (the SP all-gather's
                                          rearranging copy at batch > 1, elementwise.c); 0: not
                                          measured, eager_elementwise_efficiency */
    double tp_chunk_gemm_efficiency;   /* a GEMM run as tp row chunks (tokens / tp rows each,
                                          torchtitan's async TP fused ops) over the same GEMM
                                          whole, time ratio whole / chunks; 0: not measured, 1 */
    double inductor_elementwise_efficiency; /* the same for the kernels torch.compile's Inductor
                                           generates for a native block (elementwise.c
                                           inductor_native_layer); 0: not measured, hbm_efficiency */
    /* transformers' eager attention's kernels over the b x heads x s x keys scores
     * (hf_eager_attn.c), by the kernel PyTorch launches, measured at the scores' shapes
     * (bench/realruns/odd_stride_probe.py); 0: not measured, the eager rates above */
    double score_vectorized_efficiency; /* vectorized_elementwise_kernel, contiguous operands */
    double score_offsets_efficiency;    /* elementwise_kernel<128, 4>: a broadcast or strided
                                           operand (the mask, a slice of rows of s + 1) */
    double score_cat_array_efficiency;  /* CatArrayBatchedCopy of torch.cat with an expanded
                                           input (a 32-bit-indexable output) */
    double score_reduce_row_efficiency; /* reduce_kernel over a row of the scores (max) */
    double score_softmax_unaligned_fwd_efficiency; /* bf16 softmax over rows whose bytes are
                                           not a multiple of 16 (s + 1 columns), forward */
    double score_softmax_unaligned_bwd_efficiency; /* and backward (its kernel) */
    double score_softmax_fp32_fwd_efficiency; /* fp32 softmax over 16-byte aligned rows */
    double score_softmax_fp32_bwd_efficiency; /* and backward (its kernel) */
    double score_unrolled_efficiency;   /* unrolled_elementwise_kernel: bf16 -> fp32 casts */
    double softmax_rows_efficiency;     /* PyTorch's row softmax kernels over fp32 rows that L2
                                           cannot hold (the HF loss's log_softmax), against all
                                           the bytes their passes move (softmax_rows.h); 0: not
                                           measured, the list's bytes at the eager rate */
    double l2_bytes;                    /* the GPU's L2 cache (0: not given; softmax_rows.c) */
    double index_accum_step_s;          /* indexing_backward_kernel: one duplicate of a run,
                                           the latency floor of a warp's read-modify-write step
                                           (hf_experts.h moe_index_accum_s); 0: not measured */
    double index_accum_bytes_per_s;     /* and the rate that the steps of all warps in flight
                                           share (each step 3 x 128 features read or written) */
    double gemm_align1_nn_flops_per_s;  /* bf16 batched GEMM with an operand's leading dimension
                                           odd (2-byte aligned): cuBLAS's cutlass align1
                                           kernels; P @ V with P a slice of rows of s + 1 */
    double gemm_align1_tn_flops_per_s;  /* the same with that operand transposed (P^T @ dO) */
    double gemm_odd_out_fwd_flops_per_s;   /* bf16 Linear y = x W^T of odd out-features (rows of
                                              y 2-byte aligned): the forward GEMM's rate */
    double gemm_odd_out_dgrad_flops_per_s; /* its input gradient dy @ W (dy's rows odd) */
    double gemm_odd_out_wgrad_flops_per_s; /* its weight gradient dy^T @ x */
    double gemm_out_2mod4_fwd_flops_per_s;   /* the same three GEMMs where out-features are 2
                                                mod 4 (rows 4-byte aligned); 0: not measured */
    double gemm_out_2mod4_dgrad_flops_per_s;
    double gemm_out_2mod4_wgrad_flops_per_s;
    double gemm_out_4mod8_fwd_flops_per_s;   /* ... and 4 mod 8 (rows 8-byte aligned) */
    double gemm_out_4mod8_dgrad_flops_per_s;
    double gemm_out_4mod8_wgrad_flops_per_s;
    double sdpa_dropout_fwd_s_per_score; /* SDPA's flash kernels with dropout_p > 0: the time a
                                          * computed score adds forward (its mask drawn) */
    double sdpa_dropout_bwd_s_per_score; /* and backward (drawn again); 0: not measured, not
                                          * priced (attention_rate.h attention_dropout_add_s) */
    double sdpa_math_fwd_s_per_score;    /* SDPA's math backend (hf_sdpa_math.h), forward, a
                                          * score of the whole s x s (fp32, head dim 64) */
    double sdpa_math_bwd_s_per_score;    /* and backward; 0: not measured (flash pricing kept) */
    double sdpa_masked_dropout_fwd_s_per_score; /* the same with an explicit attention mask
                                                 * (transformers' window mask): a score of the
                                                 * full s x s the masked kernel computes, forward */
    double sdpa_masked_dropout_bwd_s_per_score; /* and backward; 0: not measured, not priced */
    double expert_split_launch_s;       /* a bandwidth-bound kernel split into one launch per
                                           local expert: the fixed cost of each extra launch */
    double expert_split_bytes_per_s;    /* ... and its traffic's extra cost, bytes / this
                                           (mcore_expert_gemm.h; 0: not measured, not priced) */
    double mla_rope_unfused_efficiency; /* the same for Megatron's unfused MLA RoPE path
                                           (narrow strided slices of q and kv, their cats:
                                           mcore_unfused.h); 0: not measured,
                                           eager_elementwise_efficiency */
    double torchao_cast_efficiency_rowwise; /* the same for torchao float8's casts in a
                                           torch.compile'd block, against the bytes
                                           precision.c counts (rb_quantize_flush), rowwise /
                                           tensorwise; 0: not measured,
                                           eager_elementwise_efficiency */
    double torchao_cast_efficiency_tensorwise;
    double fp8_rowwise_over_tensorwise_gemm; /* the rowwise FP8 GEMMs' rate over the
                                           per-tensor ones' in torchao's compiled block
                                           (precision_gemm_ratio); 0: not measured,
                                           RATIO_ROWWISE / RATIO_PER_TENSOR (H100) */
    double attention_efficiency;       /* achieved/peak of fused (flash) attention, fwd+bwd */
    attn_table attention_rates;        /* measured rates by shape ("attention_rates"; n 0: none,
                                          attention_efficiency stands), attention_rate.h */
    grouped_table grouped_gemm_rates;  /* torch._grouped_mm's rate by expert shape
                                          ("grouped_gemm_rates"; n 0: the flat GEMM rate
                                          stands), grouped_rate.h */
    int sm_count;                      /* streaming multiprocessors (0: not given; overlap.c) */
    /* Burst figures derated to the power cap (burst_sustain.h; 0: the figures are sustained):
     * the family's reference sustained/burst ratio, its cap and highest SM clock, this GPU's
     * highest SM clock; and the fraction applied at load (1 where none). */
    double sustained_ref_ratio;
    double sustained_ref_power_w;
    double sustained_ref_clock_mhz;
    double max_sm_clock_mhz;
    double sustained_over_burst;
    /* Transformer Engine before 2.12 swizzles a block-scaled (MXFP8, NVFP4) GEMM operand's
     * scale-inverse tensor into the tensor cores' layout in a kernel of its own before every
     * GEMM (precision_scale_swizzle_s): that kernel's shortest duration and the rate at which
     * it moves the scales (read + write); 0: none, the quantizers write GEMM-ready scales
     * (TE 2.12 on, the presets' software) */
    double scale_swizzle_kernel_s;
    double scale_swizzle_bytes_per_s;
    double tdp_w;                      /* board power the efficiency figures hold at (0: not
                                          given) */
    double power_limit_w;              /* power cap in use (0: the TDP); scales the sustained
                                          GEMM rate, system_gemm_power_scale() */
    /* Power headroom of GEMMs inside a step (gemm_headroom.h; 0: not measured, no headroom):
     * board power with nothing running, effective power of memory-bound kernels under the cap,
     * exponent of GEMM rate on GEMM power (rate ~ power^exponent), and the GEMM rate at the
     * highest clock over the sustained (capped, back-to-back) rate. */
    double idle_power_w;
    double memory_bound_power_w;
    double comm_power_w; /* board power of NCCL collectives running alone (exposed communication);
                            0: not measured, exposed communication counts as idle */
    double gemm_power_exponent;
    double gemm_burst_ratio;
    /* Set while pricing, not read from files: --gemm-headroom on, and the multipliers on the
     * sustained GEMM rate (system_gemm_power_scale) and on the attention kernels' rate
     * (compute_attention_rate_scale) in force; 0 means 1. */
    bool gemm_headroom_on;
    bool gemm_headroom_bubble; /* the pipeline bubble's idle time alone (plan estimate's default;
                                  gemm_headroom.h) */
    double gemm_headroom_rate;
    double attention_rate_scale;

    /* node (the host) and the scale-up (NVLink) domain, which may span hosts (NVL72: 4 GPUs
     * per host, 72 per domain) */
    int gpus_per_node;
    int scaleup_domain_gpus;            /* GPUs of one NVLink domain; 0 = gpus_per_node, see
                                           system_domain_gpus() */
    bool scaleup_mesh;                  /* node.fabric "mesh": GPUs joined point to point
                                           (AMD xGMI), a group of n uses n-1 of the domain-1
                                           links; else a switch (NVSwitch) */
    double nvls_busbw_bytes_per_s;      /* NVLink SHARP all-reduce busbw inside the domain; 0 =
                                           the system has no NVLS */
    bool nvls_enabled;                  /* node.nvls 1 or --nvls: price all-reduce inside the
                                           domain with NVLS (off by default) */
    double intra_bandwidth_bytes_per_s; /* NVLink, per GPU, per direction */
    double intra_latency_s;
    double intra_busbw_efficiency;
    double call_latency_s;              /* fixed cost of one NCCL call (launch, protocol set-up) */
    /* HybridEP's measured NVLink exchange rates by EP size (node.hybridep_algbw; moe_dispatch.c
     * flex_pass_s): "algorithm bandwidth", the bytes a rank receives (one row per token and
     * receiving rank, its own rows included) over the kernel's time; n 0: not measured */
    system_ep_rates hybridep_algbw;

    /* network */
    /* HybridEP's measured exchange rates across nodes by EP size (network.hybridep_rdma_algbw;
     * moe_dispatch.c flex_pass_s): DeepEP's "logical" convention, the bytes of every token's
     * copy to each node it reaches, its own node's included, over the kernel's time */
    system_ep_rates hybridep_rdma_algbw;
    int nics_per_node;
    double nic_bandwidth_bytes_per_s;   /* per NIC, per direction */
    double inter_latency_s;
    double inter_busbw_efficiency;

    /* host (CPU offload) */
    double pcie_bandwidth_bytes_per_s;  /* per GPU, per direction */
    double host_memory_bytes;           /* per node */
    double host_adam_params_per_s;      /* CPU Adam throughput per GPU's share of the host */
    /* the host's times from here to host_ckpt_dtensor_detach_s: host_paced.c
     * host_paced_host_scaled lists each (a new one joins it there) */
    double host_eager_launch_s;         /* host time per kernel of an eager PyTorch step
                                           (host_dispatch.h); 0: not measured, no floor */
    double host_dtensor_fwd_ratio;      /* the same per op on DTensors (DTensor TP), over plain */
    double host_dtensor_bwd_ratio;      /* tensors, forward and backward (bench/dtensor_dispatch.py);
                                           0: not measured, 1 */
    double host_dtensor_fwd_s;          /* host time per DTensor dispatch of a real DTensor TP */
    double host_dtensor_bwd_s;          /* layer, forward and backward, = _s + _rank_s x tp */
    double host_dtensor_fwd_rank_s;     /* (measured at TP 2 and 4, bench/results/tphost_ */
    double host_dtensor_bwd_rank_s;     /* 2026-11-27); 0: not measured, the ratios above */
    double host_dtensor_optim_tensor_s; /* host time per parameter tensor of a fused AdamW
                                         * step over DTensors (dtensor_step_host.h); 0: none */
    double host_compiled_dtensor_fwd_layer_s;      /* host time of one torch.compile'd decoder */
    double host_compiled_dtensor_fwd_layer_rank_s; /* block of a DTensor TP step (torchtitan */
    double host_compiled_dtensor_bwd_layer_s;      /* compile + TP > 1), forward and backward, */
    double host_compiled_dtensor_bwd_layer_rank_s; /* = _s + _rank_s x tp (host_dispatch.c);
                                                    * 0: not measured, no host floor */
    double host_fsdp_tp_fwd_scale;      /* a DTensor TP layer's host issue time with FSDP2 */
    double host_fsdp_tp_bwd_scale;      /* sharding over > 1 rank / at dp 1, forward and
                                           backward (host_dispatch.c); 0: not measured, 1 */
    double host_cp_ring_fwd_call_s;     /* PyTorch's ring attention (context_parallel): the host's */
    double host_cp_ring_fwd_step_s;     /* time to issue one layer's attention through the ring, */
    double host_cp_ring_bwd_call_s;     /* forward and backward, = call + step x cp (measured at */
    double host_cp_ring_bwd_step_s;     /* CP 2 and 4, bench/cp_ring_micro.py); 0: not measured */
    double host_chunk_cat_block_s;      /* host time per 2 KiB block of torch._chunk_cat's fp32
                                           output chunk (FSDP2's reduce-scatter copy-in,
                                           fsdp_copies.h); 0: not measured, none */
    double host_chunk_cat_block_large_s; /* the same per block past host_chunk_cat_knee_blocks */
    double host_chunk_cat_knee_blocks;  /* (large units; 0: one rate for all) */
    double host_clip_tensor_s;          /* host time per parameter tensor of clip_grad_norm_ */
    double host_adamw_foreach_tensor_s; /* and of foreach AdamW.step on FSDP2's DTensors, and */
    double host_multi_tensor_launch_s;  /* per multi_tensor_apply launch (optimizer_host.h) */
    double host_eager_inner_launch_s;   /* per launch issued from C++ inside one eager op's
                                         * dispatch after its first (cub sort passes, index_put_'s
                                         * kernels; host_dispatch.c); 0: each at eager_launch_s */
    double host_gemm_new_shape_s;       /* host time cuBLAS adds to a GEMM whose shape the process
                                         * has not run before (its algorithm heuristic, cached per
                                         * shape): torchtitan's per-expert loop (expert_loop.h);
                                         * 0: not measured, none */
    double host_cuda_graph_replay_s;    /* host time of one graphed micro-batch's replay call
                                           (torchtitan's CUDA graphs, cuda_graphs.h); 0: none */
    double host_mcore_moe_fwd_s;        /* Megatron-Core MoE layer, per micro-batch: the */
    double host_mcore_moe_fwd_ep_s;     /* host's forward issue time without the experts' GEMMs */
    double host_mcore_moe_post_sync_s;  /* at EP 1 and EP > 1, the part after the dispatcher's */
    double host_mcore_moe_post_sync_ep_s; /* sync, the backward (mcore_moe_host.h); 0: not */
    double host_mcore_moe_bwd_s;        /* measured, none */
    double host_mcore_moe_bwd_ep_s;
    double host_mcore_attn_fwd_s;       /* Megatron-Core transformer layer, per micro-batch: the */
    double host_mcore_attn_bwd_s;       /* attention block's host time beside the MoE block's */
    double host_mcore_qk_norm_fwd_s;    /* (norms, QKV, core attention, projection, residual */
    double host_mcore_qk_norm_bwd_s;    /* adds), and what q/k norms add (mcore_moe_host.h) */
    double host_te_gemm_s;              /* host time of one GEMM as Transformer Engine's grouped
                                           GEMM issues it per local expert (bench/te_gemm_host.cu) */
    double host_eager_op_fwd_s;         /* host time of one bare eager PyTorch op with autograd, */
    double host_eager_op_bwd_s;         /* forward and its backward node (bench/realruns/
                                           launch_overhead.py tiny_*_op_s); 0: not measured, none
                                           (Megatron's unfused kernels, mcore_unfused.h) */
    double host_sac_fwd_launch_s;       /* torchtitan's op-level selective checkpointing in an */
    double host_sac_replay_launch_s;    /* eager block: the host's extra time per forward kernel,
                                           in the forward and in the backward's replay of the
                                           forward (bench/compiled_kernels.py --modes eager,sac;
                                           host_dispatch.c); 0: not measured, none */
    double host_ckpt_fwd_saved_tensor_s; /* torch.utils.checkpoint (non-reentrant) around a */
    double host_ckpt_bwd_saved_tensor_s; /* DTensor TP block: its saved-tensor hooks' host time
                                            per tensor the block saves, in the forward (pack)
                                            and in the backward (the recompute's pack and the
                                            unpack; bench/results/tpck27_2026-11-29,
                                            host_dispatch.c); 0: not measured, none */
    double host_ckpt_dtensor_detach_s;   /* one DTensor detach: autograd's unpack of each saved
                                            DTensor under those hooks (bench/results/
                                            tpck27b_2026-11-29, host_dispatch.c); 0: none */

    /* per-GPU memory the framework takes outside the model's tensors: CUDA context, cuBLAS
     * workspaces, NCCL buffers, allocator fragmentation. */
    double framework_reserved_bytes;
    /* The same measured piece by piece for a torch FSDP2 process (issue 14; 0: not measured,
     * framework_reserved_bytes stands): the CUDA context, each NCCL communicator, and the
     * library workspaces and kernels loaded by the first steps (cuBLAS, cuDNN). */
    double cuda_context_bytes;
    double nccl_communicator_bytes;
    double library_workspace_bytes;
    /* NCCL over >= 2 ranks (nccl_memory.h): the world communicator, each further process
     * group, each point-to-point peer; 0 when not measured (one-rank count above instead) */
    double nccl_world_communicator_bytes;
    double nccl_group_bytes;
    double nccl_p2p_peer_bytes;
    double nccl_one_rank_group_bytes; /* one further communicator of a single rank (nccl_memory.h) */

    /* Calibration (a profile overlaid with --calibration or a profile file as --system). */
    double gemm_efficiency_sd;          /* standard deviation of the fitted efficiency */
    double fp8_gemm_ratio;              /* FP8 GEMMs' fraction of the FP8 peak over bf16's of the
                                           bf16 peak, fitted from plan calibrate (fit.h); 0: not
                                           calibrated, precision.c's measured table stands */
    double fp8_gemm_ratio_sd;
    double fp8_blockwise_gemm_ratio;    /* the same ratio for blockwise FP8 GEMMs (1x128 by 128x128
                                           scales, plan calibrate's gemm_fp8_blockwise rows); 0:
                                           not calibrated (precision.c) */
    double fp8_blockwise_gemm_ratio_sd;
    fp8_shape_table fp8_gemm_shapes;    /* the same ratios by GEMM shape ("fp8_gemm_shapes",
                                           plan fit; n 0: the single ratios stand), fp8_shape.h */
    int n_collective_fits;
    system_collective_fit collective_fits[SYSTEM_MAX_COLLECTIVE_FITS];
    system_step step;                   /* step-level corrections (inactive unless a profile has
                                           a "step" section) */
} system_spec;

struct json_t;

/* Fill sys from the JSON object of a system file at path: from zero with every required field
 * (name: the system's name, NULL for the file's "name" or its path). Reads the scalar fields
 * only; the sections only a profile has are costmodel/profile.h's. */
cm_status system_from_json(const struct json_t *root, const char *path, const char *name,
                           system_spec *sys, char *err, size_t errlen);
/* Overlay the scalar fields root gives (any subset) on sys. */
cm_status system_overlay_fields(const struct json_t *root, const char *path, system_spec *sys,
                                char *err, size_t errlen);
/* The JSON object in the system or profile file at path (the caller json_decref's it), or NULL
 * with *st and err saying why. */
struct json_t *system_read_json(const char *path, cm_status *st, char *err, size_t errlen);
/* A number v of a system file ("section"."key"), checked against [lo, hi] (and to be whole when
 * is_int), into *x. */
cm_status system_field_number(const struct json_t *v, const char *path, const char *section,
                              const char *key, double lo, double hi, bool is_int, double *x,
                              char *err, size_t errlen);

/* The file of a preset name: data_dir/systems/NAME.json, or CM_EINVAL listing the presets. */
cm_status system_preset_path(const char *name, const char *data_dir, char *path, size_t pathlen,
                             char *err, size_t errlen);
/* A preset name under data_dir/systems/ or a path to a full system JSON, fields only. A name or
 * path the user gives, which may be a calibration profile, goes through profile_load_system. */
cm_status system_load(const char *name_or_path, const char *data_dir, system_spec *sys,
                      char *err, size_t errlen);

/* The calibration's fit for this collective operation (a collective_op), group size and span,
 * or NULL: the one place that looks a fit up. */
const system_collective_fit *system_collective_fit_find(const system_spec *sys, int op,
                                                        int group_size, bool spans_nodes);
/* Put f into the calibration, replacing the fit of the same operation, group size and span;
 * false when the table (SYSTEM_MAX_COLLECTIVE_FITS) is full. */
bool system_collective_fit_put(system_spec *sys, const system_collective_fit *f);

/* The step terms: JSON name ("compute_scale"), default and the physical range a profile (and a
 * fit) must keep to. */
const char *system_step_name(system_step_term t);
double system_step_default(system_step_term t);
void system_step_range(system_step_term t, double *lo, double *hi);
/* Active step terms at their defaults, no covariance. */
void system_step_reset(system_step *s);

/* Network bandwidth available to one GPU when its group leaves the NVLink domain. */
double system_inter_bandwidth_per_gpu(const system_spec *sys);
/* GPUs of one scale-up (NVLink) domain: node.scaleup_domain_gpus, or gpus_per_node when the
 * preset gives none (every host-sized preset), so those place groups exactly as before. */
int system_domain_gpus(const system_spec *sys);
/* Factor on the sustained GEMM and attention rates under gpu.power_limit_w below gpu.tdp_w:
 * (limit/tdp)^beta. beta is gpu.gemm_power_exponent where the GPU has one (rate ~ power^beta,
 * measured at the TDP cap: H100 0.39, bench/results/duty_2026-11-27; the same exponent fits its
 * FP8 GEMM and SDPA points, bench/results/ttpub17_2026-11-28), carried below the cap as a power
 * law; else 1/3, an assumption (dynamic power ~ f V^2 with V ~ f). data/systems/README.md
 * "Power limit". 1 without a limit or TDP. */
double system_power_cap_exponent(const system_spec *sys);
double system_power_cap_scale(const system_spec *sys);
/* system_power_cap_scale times sys->gemm_headroom_rate where the step's power headroom is being
 * priced (gemm_headroom.h): the factor on the sustained GEMM rate. */
double system_gemm_power_scale(const system_spec *sys);

/* --nvls on|off: turn NVLink SHARP pricing of in-domain all-reduces on or off. On needs a
 * system with node.nvls_busbw_bytes_per_s (CM_EINVAL with the fix otherwise). */
cm_status system_set_nvls(system_spec *sys, bool on, char *err, size_t errlen);
/* --power-limit W: the cap in use (gpu.power_limit_w). Needs gpu.tdp_w (CM_EINVAL otherwise);
 * a limit at or above the TDP changes nothing (system_gemm_power_scale). */
cm_status system_set_power_limit(system_spec *sys, double limit_w, char *err, size_t errlen);
/* One line per user-set system knob the estimate rests on (power limit with its assumption,
 * NVLS), each ending in a newline, into buf; returns how many ("" and 0 without any). */
int system_knob_notes(const system_spec *sys, char *buf, size_t buflen);

void system_list_presets(const char *data_dir, char *buf, size_t buflen);

#endif
