/*
 * softmax_rows.h — PyTorch's row softmax kernels (cunn_SoftMaxForward, cunn_SoftMaxBackward)
 * over rows too long to stay in L2 between their passes: the Hugging Face loss's fp32
 * log_softmax over the vocabulary.
 *
 * Why (issue 14): elementwise.c lists the loss's log_softmax at the bytes it must move (read
 * the fp32 logits, write the fp32 output: 8 a logit; backward 12). The kernels move more.
 * aten/src/ATen/native/cuda/SoftMax.cu (pytorch/pytorch 000cace5, the same kernels in
 * torch 2.11's profiles) cunn_SoftMaxForward reads the row three times: ilpReduce for the
 * max, ilpReduce again for the sum of exp, WriteFpropResultsVectorized reading it a third
 * time to write; cunn_SoftMaxBackward reads gradOutput for its sum, then gradOutput and
 * output to write gradInput. host_softmax takes the shared-memory variant only for rows under
 * sharedMemPerBlock (48 KiB: 12k fp32), so every vocabulary runs the multi-pass kernel, a
 * block per row (forward 1024 threads: SoftMaxForward_getBlockSize; backward 512:
 * SoftMax_getBlockSize(4, v)). Where the rows resident on the GPU at once (2048 threads an
 * SM, CUDA C Programming Guide's compute capability table for 8.x-10.x, over the block) hold
 * more bytes than L2, the re-reads come from HBM: 16 bytes a logit each way. In the H200
 * profiles of real HF steps (bench/results/loss22_2026-11-29/loss_softmax_rates.py: nine
 * steps at vocabularies of 128k-262k) both kernels run at 16 bytes a logit at 0.84-0.89 of
 * 4.8 TB/s (gpu.softmax_rows_efficiency, median 0.851); priced at 8 and 12 bytes at the eager
 * rate the forward was 27% short (Gemma-2-27B s8k: 5.9 ms against 8.1-8.7 ms). At a 32k
 * vocabulary the forward's rows fit L2 and it moves 8 bytes a logit from HBM (16 would be
 * above peak): the list's bytes and the eager rate stand there.
 */
#ifndef PLAN_SOFTMAX_ROWS_H
#define PLAN_SOFTMAX_ROWS_H

#include "elementwise.h"
#include "system.h"

/* HBM bytes a launch of k's row softmax kernel moves beyond k->bytes (the passes' re-reads
 * of rows that L2 cannot hold: forward two of the input, backward one of gradOutput); 0 when
 * k is no fp32 row softmax, the rows fit L2, or the system lacks gpu.l2_bytes or sm_count. */
double softmax_rows_reread_bytes(const system_spec *sys, const elementwise_kernel *k);

/* Seconds of one launch of k where softmax_rows_reread_bytes is positive and the system
 * carries gpu.softmax_rows_efficiency: all of its bytes at that measured rate, one GPU or many
 * (the multi-GPU FSDP2 step ran these kernels at their one-GPU rate: softmax_rows.c); -1
 * otherwise (price it as before). */
double softmax_rows_kernel_s(const system_spec *sys, const elementwise_list *e,
                             const elementwise_kernel *k);

#endif
