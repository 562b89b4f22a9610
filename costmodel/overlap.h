/*
 * overlap.h — what Megatron-Core's overlap knobs leave exposed (issue 15): Transformer Engine's
 * TP communication overlap (--tp-comm-overlap, userbuffers) beside the GEMMs it hides behind,
 * and the data-parallel gradient reduce / parameter gather split into Megatron's DDP buckets
 * (--overlap-grad-reduce, --overlap-param-gather). Pure arithmetic on times the caller prices
 * (compute.h GEMMs, collective.h collectives); the recipe (TP) and estimate.c (DP) use it.
 */
#ifndef PLAN_OVERLAP_H
#define PLAN_OVERLAP_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* SMs a TE userbuffer "pipeline" or "bulk" overlap gives its communication kernels (TE
 * initialize_ub default num_sm 16; ring_exchange uses copy engines and 1 SM). */
#define OVERLAP_TP_COMM_SMS 16
/* GEMMs TE pairs with a TP collective per layer, one userbuffer each (base.py methods table:
 * qkv/fc1 fprop, dgrad and wgrad, proj/fc2 fprop and dgrad). */
#define OVERLAP_TP_USERBUFFERS 10
/* Chunks of TE's "pipeline" method (default num_splits 4); ring_exchange splits into tp. */
#define OVERLAP_TP_PIPELINE_SPLITS 4

/* The GPU's SM count (system gpu.sm_count; 132, the H100/H200 count, when not given). */
int overlap_sm_count(const system_spec *sys);
/* How much longer a GEMM runs while TE's SM-based communication kernels hold
 * OVERLAP_TP_COMM_SMS of the SMs: sms / (sms - 16). */
double overlap_tp_sm_slowdown(const system_spec *sys);

/*
 * Exposed time of a TP collective of comm_s overlapped with a GEMM of gemm_s that runs as
 * `splits` chunks taking chunked_s in all (chunked_s >= gemm_s: the efficiency loss of the
 * smaller GEMMs, sm slowdown included by the caller): the two pipelines of TE's
 * CommOverlap/CommOverlapP2P, chunk i's GEMM beside chunk i+1's transfer.
 *  - ring exchange (all-gather before the GEMM, the first chunk is local): chunk GEMMs
 *    g = chunked/splits and transfers c = comm/(splits-1): g + (splits-1) max(g, c);
 *  - pipeline (reduce-scatter after the GEMM): g + (splits-1) max(g, c) + c, c = comm/splits;
 *  - bulk (a whole collective beside an independent, unsplit GEMM that runs `slowdown` times
 *    slower while the collective holds its SMs): comm + the GEMM work left when it ends.
 * Each returns (time of the pair) - gemm_s: what the overlap adds to the GEMM alone.
 */
double overlap_tp_ring_exchange_s(double gemm_s, double chunked_s, double comm_s, int splits);
double overlap_tp_pipeline_s(double gemm_s, double chunked_s, double comm_s, int splits);
double overlap_tp_bulk_s(double gemm_s, double slowdown, double comm_s);

/* The userbuffers --tp-comm-overlap registers once per GPU (0 without it): TE's initialize_ub
 * adds one buffer per overlapped GEMM (the 10 of its method table) of the shape Megatron gives
 * it, the full sequence (seq x mbs / cp) x hidden, in bf16. */
double overlap_tp_userbuffer_bytes(const model_spec *m, const training_spec *t, const layout *l);

/* Megatron DDP's bucket size in parameters: max(40M, 1M x dp), dp the data-parallel group
 * without CP (process_groups_config.py setup_process_groups_for_ddp: 'dp_group' is
 * get_data_parallel_group(with_context_parallel=False)) (distributed_data_parallel.py:
 * "larger DP sizes need larger buckets to ensure collectives do not become latency-bound");
 * without --overlap-grad-reduce the whole buffer is one bucket. */
double overlap_dp_bucket_params(const layout *l);
/* Buckets the `params` of a stage's gradient buffer make under l. */
int overlap_dp_buckets(const layout *l, double params);

/*
 * Exposed time of `buckets` bucket collectives of bucket_s each, issued as their buckets fill
 * during a pass of window_s (the last micro-batch's backward for gradients; the first
 * micro-batch's forward for the parameter all-gather): the first is ready after 1/buckets of
 * the window, they run one after another on the communication stream, and the last cannot
 * start before the pass ends: max(bucket_s, buckets * bucket_s - window_s (buckets-1)/buckets).
 */
double overlap_dp_exposed_s(double bucket_s, int buckets, double window_s);

/*
 * Contention between a collective and the compute it is overlapped with (both on the GPU at
 * once): NCCL's kernels hold SMs (24 channels, one CTA each, for the all-gather and
 * reduce-scatter of two H200s, NCCL 2.28's log) and share HBM with the GEMMs, so each side runs
 * slower while the other runs. Measured with bench/overlap_contention.py on H200s (NVLink),
 * NCCL 2.28.9, torch 2.11, 256 MiB collectives beside bf16 GEMMs of 4096 rows (4096 x 14336 x
 * 4096, 4096 x 4096 x 14336, 4096^3): three runs, two hosts, 2 and 4 ranks; medians
 * (bench/results/contention_2026-11-27/):
 *   all-gather / reduce-scatter: GEMM x1.176, collective x1.363 (18 pairs)
 *   all-to-all:                  GEMM x1.213, collective x1.522 (9 pairs)
 * (an 8192^3 GEMM kept its rate and slowed the collectives 2.5-3.5x: large GEMMs crowd the
 * collective out; the 4096-row shapes are a micro-batch's). Measured inside one node; the same
 * factors are used for collectives that cross nodes and for H100 (assumptions: not measured).
 */
#define OVERLAP_CONTENTION_AG_RS_COMPUTE 1.176
#define OVERLAP_CONTENTION_AG_RS_COMM 1.363
#define OVERLAP_CONTENTION_A2A_COMPUTE 1.213
#define OVERLAP_CONTENTION_A2A_COMM 1.522

/*
 * The share of an eager FSDP2 layer that its collectives covered in the step whose profile
 * measured gpu.eager_elementwise_efficiency (bench/fsdp2_step.py: Llama-3.1-8B, 4 x H200,
 * seq 4096, micro-batch 1, reshard after forward; bench/BACKEND.md "Eager elementwise
 * kernels"), in plan's own terms: (gather + backward gather + reduce-scatter) over (forward +
 * backward) of one decoder layer, `plan estimate --model 8b --system h200 --framework fsdp2
 * --gpus 4 --gbs 4 --seq 4096 --mbs 1 --impl hf --ops`: (1.141 + 1.141 + 1.796) / (4.340 +
 * 9.351) ms = 0.298. recipe_price.c keeps the slower rate's extra time of a layer's eager
 * kernels in proportion to its own share over this one (at most all of it);
 * tests/test_eager_beside.c checks the figure against the estimate.
 */
#define OVERLAP_EAGER_BESIDE_REF 0.298

/* Compute of comp_s (alone) and a collective of comm_s (alone) started together on two
 * streams, each slowed while the other runs (compute by sg, the collective by sc): how long
 * each stream is busy. If the collective ends first (comm_s x sc <= comp_s x sg) the compute
 * takes comp_s + comm_s x sc x (1 - 1/sg) and the collective comm_s x sc; otherwise the compute
 * takes comp_s x sg and the collective comm_s + comp_s x sg x (1 - 1/sc). The pair's time is
 * the larger of the two. */
void overlap_contended(double comp_s, double comm_s, double sg, double sc, double *comp_eff_s,
                       double *comm_eff_s);

#endif
