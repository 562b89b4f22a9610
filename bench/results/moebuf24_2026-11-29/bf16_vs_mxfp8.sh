#!/bin/bash
# bf16_vs_mxfp8.sh — plan's Qwen3-30B-A3B 26.04.01 one-node layout (B200 and GB200; EP 8, MBS 4,
# HybridEP at 32 SMs) in MXFP8 and in BF16, tokens/s/GPU, to set beside a B200 measurement of the
# same recipe in both precisions (Megatron-Bridge issue #4439: 562 vs 552 TFLOP/s). Run from the
# repository root after building build/.
set -eu
C="estimate --model qwen3-30b-a3b --gpus 8 --tp 1 --pp 1 --cp 1 --vpp 1 --ep 8 --mbs 4 --gbs 512
   --seq 4096 --etp 1 --overlap-grad-reduce --overlap-param-gather --grad-reduce-bf16
   --moe-dispatcher hybridep --te-cross-entropy --moe-dispatcher-sms 32 --format json"
for sys in b200 gb200-nvl72; do
  cg=""; [ $sys = b200 ] && cg="--cuda-graph-attn"
  m=$(PLAN_DATA_DIR=data build/cli/plan $C $cg --system $sys --precision mxfp8 --fp8-param-gather |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"] / 8)')
  b=$(PLAN_DATA_DIR=data build/cli/plan $C $cg --system $sys |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"] / 8)')
  python3 -c "print('$sys mxfp8 %.0f bf16 %.0f tokens/s/GPU, ratio %.3f' % ($m, $b, $m / $b))"
done
