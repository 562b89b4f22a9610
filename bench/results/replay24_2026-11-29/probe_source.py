"""replay24: transformers' Qwen2-MoE block source (with line numbers) and one layer's parameter order"""
import inspect, json, sys
import torch, transformers
from transformers.models.qwen2_moe import modeling_qwen2_moe as M
print("torch", torch.__version__, "transformers", transformers.__version__, "file", M.__file__)
for name in ("Qwen2MoeMLP", "Qwen2MoeExperts", "Qwen2MoeTopKRouter", "Qwen2MoeSparseMoeBlock"):
    obj = getattr(M, name, None)
    if obj is None:
        print("##", name, "absent"); continue
    lines, start = inspect.getsourcelines(obj)
    print("##", name, "lines", start, start + len(lines) - 1)
    for i, ln in enumerate(lines):
        print("%5d %s" % (start + i, ln.rstrip()))
cfg = transformers.AutoConfig.for_model("qwen2_moe", hidden_size=64, intermediate_size=96,
      moe_intermediate_size=32, shared_expert_intermediate_size=96, num_experts=4,
      num_experts_per_tok=2, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
      vocab_size=128)
with torch.device("meta"):
    layer = M.Qwen2MoeDecoderLayer(cfg, 0)
print("## layer params", [(n, list(p.shape)) for n, p in layer.named_parameters()])
try:
    from transformers.integrations import moe as moe_int
    src, st = inspect.getsourcelines(moe_int)
    print("## integrations/moe.py", len(src), "lines")
except Exception as e:
    print("moe integration", e)
