# plan 0.1.0: DeepSeek-V3 on 1024 x H100-SXM5-80GB (8 per node), seq 4096, global batch 1024 sequences
# megatron  TP 1 · PP 16 · DP 64 · CP 1 · EP 64 (ETP 1) · VPP 1 | micro-batch 1 · SP off · distributed optimizer · recompute none · fp8-blockwise
# predicted: 10.01 s/step, 419044 tokens/s, MFU 10.4%, 140.3 of 79.2 GiB per GPU (pipeline stage 1)
# WARNING: does not fit: out of memory on pipeline stage 1: needs 140.3 GiB of 79.2 GiB (61.1 GiB over)
import torch
from megatron.bridge.recipes import deepseek_v3_pretrain_1024gpu_h100_bf16_config

cfg = deepseek_v3_pretrain_1024gpu_h100_bf16_config()
cfg.model.tensor_model_parallel_size = 1
cfg.model.pipeline_model_parallel_size = 16
cfg.model.mtp_num_layers = 1
cfg.model.virtual_pipeline_model_parallel_size = None
cfg.model.pipeline_model_parallel_layout = "Et*3|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*3|t*3,m,L"
cfg.model.num_layers_in_first_pipeline_stage = None
cfg.model.num_layers_in_last_pipeline_stage = None
cfg.model.account_for_embedding_in_pipeline_split = False
cfg.model.account_for_loss_in_pipeline_split = False
cfg.model.context_parallel_size = 1
cfg.model.expert_model_parallel_size = 64
cfg.model.expert_tensor_parallel_size = 1
cfg.model.moe_token_dispatcher_type = "alltoall"
cfg.model.moe_flex_dispatcher_backend = None
cfg.model.overlap_moe_expert_parallel_comm = False
cfg.model.delay_wgrad_compute = False
cfg.model.moe_shared_expert_overlap = False
cfg.model.sequence_parallel = False
cfg.model.tp_comm_overlap = False
cfg.model.recompute_granularity = None
cfg.model.recompute_method = None
cfg.model.recompute_num_layers = None
cfg.optimizer.use_precision_aware_optimizer = False
cfg.optimizer.main_grads_dtype = torch.float32
cfg.optimizer.exp_avg_dtype = torch.float32
cfg.optimizer.exp_avg_sq_dtype = torch.float32
cfg.model.seq_length = 4096
cfg.dataset.seq_length = 4096
cfg.train.micro_batch_size = 1
cfg.train.global_batch_size = 1024
cfg.optimizer.clip_grad = 1.0
from megatron.bridge.training.mixed_precision import get_mixed_precision_config
cfg.mixed_precision = get_mixed_precision_config("bf16_with_fp8_subchannel_scaling_mixed")
cfg.mixed_precision.grad_reduce_in_fp32 = True
cfg.mixed_precision.fp8_param = False
cfg.mixed_precision.fp8_param_gather = False
cfg.mixed_precision.first_last_layers_bf16 = False
cfg.optimizer.use_distributed_optimizer = True
cfg.ddp.use_distributed_optimizer = True
cfg.ddp.overlap_grad_reduce = False
cfg.ddp.overlap_param_gather = False
from megatron.bridge.training.comm_overlap import CommOverlapConfig
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, tp_comm_overlap_cfg=getattr(cfg.comm_overlap, "tp_comm_overlap_cfg", None), overlap_grad_reduce=False, overlap_param_gather=False, overlap_moe_expert_parallel_comm=False, delay_wgrad_compute=False)
