# plan 0.1.0: llama-3.2-3b on 64 x H100-SXM5-80GB (8 per node), seq 4096, global batch 1024 sequences
# megatron  TP 1 · PP 1 · DP 64 · CP 1 · VPP 1 | micro-batch 4 · SP off · distributed optimizer · recompute none · overlap grad-reduce param-gather
# predicted: 2.45 s/step, 1714530 tokens/s, MFU 57.9%, 66.7 of 79.2 GiB per GPU (pipeline stage 0)
import torch
from megatron.bridge.recipes import llama31_8b_pretrain_2gpu_h100_bf16_config
from megatron.bridge import AutoBridge

cfg = llama31_8b_pretrain_2gpu_h100_bf16_config()
# Megatron-Bridge has no recipe for llama-3.2-3b: the Llama 3.1 8B recipe's training loop with this checkpoint's model
cfg.model = AutoBridge.from_hf_pretrained("tests/data/hf/llama-3.2-3b.json").to_megatron_provider(load_weights=False)
cfg.model.tensor_model_parallel_size = 1
cfg.model.pipeline_model_parallel_size = 1
cfg.model.virtual_pipeline_model_parallel_size = None
cfg.model.pipeline_model_parallel_layout = None
cfg.model.num_layers_in_first_pipeline_stage = None
cfg.model.num_layers_in_last_pipeline_stage = None
cfg.model.account_for_embedding_in_pipeline_split = False
cfg.model.account_for_loss_in_pipeline_split = False
cfg.model.context_parallel_size = 1
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
cfg.train.micro_batch_size = 4
cfg.train.global_batch_size = 1024
cfg.optimizer.clip_grad = 1.0
from megatron.bridge.training.mixed_precision import get_mixed_precision_config
cfg.mixed_precision = get_mixed_precision_config("bf16_mixed")
cfg.mixed_precision.grad_reduce_in_fp32 = True
cfg.optimizer.use_distributed_optimizer = True
cfg.ddp.use_distributed_optimizer = True
cfg.ddp.overlap_grad_reduce = True
cfg.ddp.overlap_param_gather = True
from megatron.bridge.training.comm_overlap import CommOverlapConfig
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, tp_comm_overlap_cfg=getattr(cfg.comm_overlap, "tp_comm_overlap_cfg", None), overlap_grad_reduce=True, overlap_param_gather=True)
