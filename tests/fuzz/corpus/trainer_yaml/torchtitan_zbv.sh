# plan 0.1.0: Llama-3.1-8B on 64 x H100-SXM5-80GB (8 per node), seq 4096, global batch 1024 sequences
# torchtitan  TP 2 · PP 2 (ZBVZeroBubble, 2 stages/rank) · DP 16 · CP 1 | micro-batch 1 · SP on · FSDP2 no-reshard · recompute selective
# predicted: 8.25 s/step, 508530 tokens/s, MFU 38.7%, 23.8 of 79.2 GiB per GPU (pipeline stage 1)
# torchtitan (pytorch/torchtitan b5bcd76): --module/--config pick a Trainer.Config function; the
# --section.option overrides after them set this plan's layout (torchtitan/config/README.md).
# model: meta-llama/Llama-3.1-8B
# batch in tokens: micro-batch 1 x sequence 4096 = 4096 per data-parallel rank per forward; 1024 sequences = 4194304 per step
# PLACEHOLDER, not from the plan: --training.steps. Check or edit it, then: plan check FILE --system h100
torchrun --nproc-per-node 8 --nnodes "${NNODES:-8}" --node-rank "${NODE_RANK:-0}" \
  --master-addr "${MASTER_ADDR:-localhost}" --master-port "${MASTER_PORT:-29500}" -m torchtitan.train \
  --module llama3 \
  --config llama3_8b \
  --parallelism.data_parallel_replicate_degree 1 \
  --parallelism.data_parallel_shard_degree 16 \
  --parallelism.fsdp_reshard_after_forward never \
  --parallelism.tensor_parallel_degree 2 \
  --parallelism.enable_sequence_parallel \
  --parallelism.pipeline_parallel_degree 2 \
  --parallelism.pipeline_parallel_schedule ZBVZeroBubble \
  --parallelism.pipeline_parallel_layers_per_stage 8 \
  --parallelism.pipeline_parallel_first_stage_less_layers 0 \
  --parallelism.pipeline_parallel_last_stage_less_layers 0 \
  --parallelism.num_pp_microbatches 64 \
  --parallelism.context_parallel_degree 1 \
  --parallelism.expert_parallel_degree 1 \
  --training.num_tokens_per_microbatch_per_dp_rank 4096 \
  --training.num_tokens_per_train_step 4194304 \
  --training.max_context_length 4096 \
  --compile.no-enable \
  --optimizer.implementation fused \
  --training.steps 100 \
  activation-checkpoint:selective
