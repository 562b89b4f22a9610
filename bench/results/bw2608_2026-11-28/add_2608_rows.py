#!/usr/bin/env python3
"""Append the 26.08 rows (Megatron-Bridge docs/performance-summary.md@4ab94dfad, "26.08 NeMo
Container") of DeepSeek-V3, GPT-OSS 120B, Qwen3-30B-A3B and Qwen3-235B-A22B on DGX-GB300 /
DGX-GB200 to tests/data/published_megatron_bridge_blackwell.csv, copying the layout of the same
models' 26.06 rows (the knobs are unchanged at v0.6.0, see README.md) and writing each row's
figures and note from the 26.08 table and the v0.6.0 recipes. Run once from the repository root;
refuses to run twice."""
import csv, io, os, sys

CSV = "tests/data/published_megatron_bridge_blackwell.csv"
TAG = "v0.6.0 (51885cf13)"
PR = "src/megatron/bridge/perf_recipes"
SRC = "docs/performance-summary.md@4ab94dfad 26.08 "

FULLITER = ("full-iteration CUDA graph (cuda_graph_impl full_iteration; moe_pad_experts_for_cuda_graph_inference "
            "with moe_expert_rank_capacity_factor 1.5 and paged stashing so dropless MoE can be captured) priced as "
            "--cuda-graph-full-iteration (no MoE host time, costmodel/mcore_moe_host.h); plan prices the experts at the "
            "routed token count, not the padded one; CuTe DSL fused grouped MLP (use_transformer_engine_op_fuser + "
            "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: GEMM, activation and quantization in one kernel)")
FP8ATTN = (" and FP8 attention (fp8_dot_product_attention) not expressible: plan prices the activation and quantize "
           "kernels apart and attention in bf16, both on the slow side")
NOFP8ATTN = (" not expressible: plan prices the activation and quantize kernels apart, on the slow side "
             "(fp8_dot_product_attention stays False in this recipe: attention in bf16, as plan prices it)")
SINKS = ("; learnable softmax sinks run in cuDNN's fused attention (Transformer Engine FusedAttention with cuDNN "
         ">= 9.13.1; its unfused fallback would not fit in memory), priced as plain attention; YaRN's unfused RoPE "
         "and the experts' per-expert fc2 bias are priced (costmodel/mcore_unfused.h)")
ROUTER = "; not expressible: moe_router_fusion (plan prices one fused router kernel either way)"
SAME = "; knobs unchanged from the 26.06 row (v0.5.0)"

# (26.06 run id, system label, tokens/s/GPU, TFLOP/s/GPU, note)
ROWS = [
    ("deepseek-v3-mxfp8-gb300-256gpu-2606", "DGX-GB300", 6288, 1635,
     f"recipe {TAG} {PR}/deepseek/gb300/deepseek_v3.py deepseek_v3_pretrain_256gpu_gb300_fp8mx_config (lines 133-185) "
     "with deepseek/common.py _deepseek_v3_common and _enable_deepseek_full_iteration_mxfp8(fp8_dot_product_attention=True, "
     "fp8_output_proj=True) (lines 31-77): MBS 1, layout Et*4|(t*4|)*14tmL over pp 2 x vp 8 = 32/29, HybridEP (32 SMs, "
     "_common.py line 87) with the EP A2A overlap (overlap_moe_expert_parallel_comm, delay_wgrad_compute), no recompute "
     "(recompute_modules []), precision-aware optimizer with bf16 main grads and moments (the base recipe "
     "recipes/deepseek/h100/deepseek_v3.py lines 206-210; the GB300 recipe does not call _enable_deepseek_precision_aware_optimizer); "
     + FULLITER + FP8ATTN + ROUTER + ", fp8_output_proj" + SAME),
    ("deepseek-v3-mxfp8-gb200-256gpu-2606", "DGX-GB200", 4912, 1276,
     f"recipe {TAG} {PR}/deepseek/gb200/deepseek_v3.py deepseek_v3_pretrain_256gpu_gb200_fp8mx_config (lines 134-189) "
     "with deepseek/common.py _enable_deepseek_full_iteration_mxfp8(fp8_output_proj=True) (lines 49-77): PP 4 VP 4 EP 64, "
     "layout (4,4) 16/13 (set_deepseek_v3_pipeline_model_parallel_layout), recompute mla_up_proj, HybridEP with the EP A2A "
     "overlap, precision-aware optimizer (bf16 main grads and moments, base recipe lines 206-210); "
     + FULLITER + NOFP8ATTN + ROUTER + ", fp8_output_proj" + SAME),
    ("gpt-oss-120b-mxfp8-gb300-64gpu-2606", "DGX-GB300", 33024, 1077,
     f"recipe {TAG} {PR}/gpt_oss/gb300/gpt_oss.py gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config (lines 216-254) with "
     "gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs (lines 23-49): EP 16, MBS 4, HybridEP (32 SMs) with the "
     "EP A2A overlap, no recompute (base recipe recompute_granularity None); "
     + FULLITER + FP8ATTN + SINKS + ROUTER + SAME),
    ("gpt-oss-120b-mxfp8-gb200-64gpu-2606", "DGX-GB200", 28672, 934,
     f"recipe {TAG} {PR}/gpt_oss/gb200/gpt_oss.py gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config (lines 221-264) with "
     "gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs (lines 23-49): EP 64, MBS 4, HybridEP (32 SMs) with the "
     "EP A2A overlap, no recompute (recompute_modules ['layernorm', 'moe_act'] at line 235 is reset to [] at line 241); "
     + FULLITER + FP8ATTN + SINKS + ROUTER + SAME),
    ("qwen3-30b-a3b-mxfp8-gb300-8gpu-2606", "DGX-GB300", 44544, 1029,
     f"recipe {TAG} {PR}/qwen/gb300/qwen3_moe.py qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config (lines 301-350) with "
     "qwen/common.py _enable_hybridep_full_iteration_mxfp8 (lines 36-60): MBS 8, HybridEP (32 SMs) with the EP A2A overlap, "
     "no recompute; the base recipe's precision-aware optimizer keeps fp32 main grads, params and moments "
     "(recipes/qwen/h100/qwen3_moe.py lines 157, 190-193: plain Adam states, as priced); "
     + FULLITER + FP8ATTN + ROUTER + SAME),
    ("qwen3-30b-a3b-mxfp8-gb200-8gpu-2606", "DGX-GB200", 39936, 923,
     f"recipe {TAG} {PR}/qwen/gb200/qwen3_moe.py qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config (lines 302-351) with "
     "qwen/common.py _enable_hybridep_full_iteration_mxfp8 (lines 36-60): MBS 4, HybridEP (32 SMs) with the EP A2A overlap, "
     "no recompute; the base recipe's precision-aware optimizer keeps fp32 main grads, params and moments "
     "(recipes/qwen/h100/qwen3_moe.py lines 157, 190-193: plain Adam states, as priced); "
     + FULLITER + FP8ATTN + ROUTER + SAME),
    ("qwen3-235b-a22b-mxfp8-gb300-256gpu-2606", "DGX-GB300", 8816, 1306,
     f"recipe {TAG} {PR}/qwen/gb300/qwen3_moe.py qwen3_235b_a22b_pretrain_256gpu_gb300_fp8mx_config (lines 461-510) with "
     "qwen/common.py _enable_hybridep_full_iteration_mxfp8 (lines 36-60): PP 4 VP 12 EP 32 MBS 2, HybridEP with the EP A2A "
     "overlap, no recompute; account_for_embedding/loss_in_pipeline_split (recipes/qwen/h100/qwen3_moe.py lines 261-262): "
     "94 layers + embedding + loss over pp x vp virtual stages: 23/24/24/23; "
     + FULLITER + FP8ATTN + ROUTER + SAME),
    ("qwen3-235b-a22b-mxfp8-gb200-256gpu-2606", "DGX-GB200", 7280, 1077,
     f"recipe {TAG} {PR}/qwen/gb200/qwen3_moe.py qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config (lines 462-511) with "
     "qwen/common.py _enable_hybridep_full_iteration_mxfp8 (lines 36-60): PP 8 VP 3 EP 32 MBS 1, HybridEP with the EP A2A "
     "overlap, no recompute; account_for_embedding/loss_in_pipeline_split (recipes/qwen/h100/qwen3_moe.py lines 261-262): "
     "94 layers + embedding + loss over pp x vp virtual stages: 11/12/../12/11; "
     + FULLITER + FP8ATTN + ROUTER + SAME),
]

text = open(CSV, newline="").read()
rows = list(csv.DictReader(io.StringIO(text)))
fields = list(csv.DictReader(io.StringIO(text)).fieldnames)
if any(r["release"] == "26.08" for r in rows):
    sys.exit("add_2608_rows.py: the 26.08 rows are already there")
byid = {r["run_id"]: r for r in rows}
out = io.StringIO()
w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
for src_id, label, tok, tfl, note in ROWS:
    r = dict(byid[src_id])
    r["run_id"] = src_id[: -len("-2606")] + "-2608"
    r["release"] = "26.08"
    r["source"] = SRC + label
    r["tokens_per_s_per_gpu"] = str(tok)
    r["tflops_per_gpu"] = str(tfl)
    r["note"] = note
    w.writerow(r)
if not text.endswith("\n"):
    text += "\n"
tmp = CSV + ".tmp"
open(tmp, "w", newline="").write(text + out.getvalue())
os.replace(tmp, CSV)
print(f"appended {len(ROWS)} rows to {CSV}")
