#!/bin/sh
# bench/bridge_cases.sh OUTDIR [PLAN] — writes the Megatron-Bridge scripts that `plan --emit
# bridge` prints for the cases bench/bridge_execute.py runs through Megatron-Bridge (issue 17):
#   rec-*    every preset's recommended Megatron plan (plan --framework megatron) at 8, 64 and
#            512 GPUs (skipped where no Megatron layout fits);
#   lay-*    a spread of given layouts (plan estimate): TP/PP/VPP/CP/EP, uneven first/last
#            stages, every precision recipe, FP8 parameter gather, bf16 first/last layers,
#            recompute variants, Megatron-FSDP (with PP too), DDP, HSDP-style optimizer
#            instances, MoE dispatchers (alltoall, allgather, DeepEP, HybridEP), capacity
#            factor, EP A2A overlap, shared-expert overlap, DeepSeek-V3 with its MTP layer;
#   hf-*     the recommended Megatron plan of each real Hugging Face config under
#            tests/data/hf at 64 GPUs (Bridge's fallback: a recipe's loop with AutoBridge).
# Each file is the emitter's output unchanged; the file name is the case name.
set -u
out=${1:?usage: bench/bridge_cases.sh OUTDIR [PLAN]}
plan=${2:-build/cli/plan}
mkdir -p "$out"
n=0; skip=0
emit() { # name, then plan arguments
    name=$1; shift
    if "$plan" "$@" --emit bridge >"$out/$name.py" 2>"$out/$name.err" ||
       { [ $? -eq 1 ] && [ -s "$out/$name.py" ]; }; then
        rm -f "$out/$name.err"; n=$((n + 1))
    else
        echo "skip $name: $(head -1 "$out/$name.err")" >&2
        rm -f "$out/$name.py" "$out/$name.err"; skip=$((skip + 1))
    fi
}
for p in 1b 3b 7b 8b 13b 30b 70b 405b 175b qwen2.5-7b mixtral-8x7b mixtral-8x22b \
         deepseek-v2-lite qwen3-30b-a3b deepseek-v3; do
    for g in 8 64 512; do emit "rec-$p-$g" --model "$p" --gpus "$g" --framework megatron; done
done
E="estimate"
# dense: pipeline shapes, context parallel, precision, sharding, recompute, optimizer
emit lay-8b-tp2-pp2-vpp2      $E --model 8b --gpus 16 --tp 2 --pp 2 --vpp 2
emit lay-8b-tp4-cp2           $E --model 8b --gpus 16 --tp 4 --cp 2
emit lay-8b-pp4-uneven        $E --model 8b --gpus 16 --pp 4 --pp-first-layers 7 --pp-last-layers 7
emit lay-8b-fp8-delayed       $E --model 8b --gpus 16 --tp 2 --precision fp8 --fp8-recipe delayed
emit lay-8b-fp8-tensorwise    $E --model 8b --gpus 16 --tp 2 --precision fp8 --fp8-recipe tensorwise
emit lay-8b-fp8-blockwise     $E --model 8b --gpus 16 --tp 2 --precision fp8 --fp8-recipe blockwise
emit lay-8b-fp8-paramgather   $E --model 8b --gpus 16 --tp 2 --precision fp8 --fp8-recipe tensorwise --fp8-param-gather
emit lay-8b-fp8-bf16ends      $E --model 8b --gpus 16 --pp 2 --precision fp8 --fp8-recipe tensorwise --bf16-first-layers 1 --bf16-last-layers 1
emit lay-8b-mxfp8-b200        $E --model 8b --gpus 16 --tp 2 --precision mxfp8 --system b200
emit lay-8b-nvfp4-b200        $E --model 8b --gpus 16 --tp 2 --precision nvfp4 --system b200
emit lay-8b-fsdp              $E --model 8b --gpus 16 --sharding fsdp
emit lay-8b-fsdp-pp2          $E --model 8b --gpus 16 --pp 2 --sharding fsdp
emit lay-8b-ddp               $E --model 8b --gpus 16 --tp 2 --sharding ddp
emit lay-8b-shard8            $E --model 8b --gpus 64 --shard-size 8
emit lay-8b-full-block        $E --model 8b --gpus 16 --pp 2 --recompute full --recompute-layers 4
emit lay-8b-full-uniform      $E --model 8b --gpus 16 --recompute full
emit lay-8b-selective-mods    $E --model 8b --gpus 16 --tp 2 --recompute selective --recompute-modules core_attn,mlp,layernorm
emit lay-8b-bf16-optim        $E --model 8b --gpus 16 --tp 2 --bf16-optimizer-states
emit lay-8b-tpoverlap-gradbf16 $E --model 8b --gpus 16 --tp 4 --tp-comm-overlap --grad-reduce-bf16
emit lay-8b-nooverlap         $E --model 8b --gpus 16 --tp 2 --no-overlap
emit lay-1b-pp2               $E --model 1b --gpus 8 --pp 2
emit lay-7b-tp2-pp2           $E --model 7b --gpus 16 --tp 2 --pp 2
emit lay-qwen2.5-7b-tp2-cp2   $E --model qwen2.5-7b --gpus 16 --tp 2 --cp 2
emit lay-70b-tp8-pp4-vpp5     $E --model 70b --gpus 64 --tp 8 --pp 4 --vpp 5
emit lay-70b-tp4-pp8-cp2      $E --model 70b --gpus 128 --tp 4 --pp 8 --cp 2
emit lay-70b-fsdp-pp4         $E --model 70b --gpus 64 --tp 2 --pp 4 --sharding fsdp
emit lay-405b-pp16-uneven     $E --model 405b --gpus 512 --tp 8 --pp 16 --pp-first-layers 7 --pp-last-layers 7
emit lay-175b-tp8-pp8-vpp2    $E --model 175b --gpus 128 --tp 8 --pp 8 --vpp 2
emit lay-13b-tp2-pp2          $E --model 13b --gpus 16 --tp 2 --pp 2
# MoE: expert parallel, dispatchers, overlaps, MTP
emit lay-qwen3-30b-ep8        $E --model qwen3-30b-a3b --gpus 16 --ep 8
emit lay-qwen3-30b-tp2-ep8-etp1 $E --model qwen3-30b-a3b --gpus 32 --tp 2 --ep 8 --etp 1
emit lay-qwen3-30b-pp2-ep8    $E --model qwen3-30b-a3b --gpus 32 --pp 2 --ep 8
emit lay-qwen3-30b-allgather  $E --model qwen3-30b-a3b --gpus 16 --ep 8 --moe-dispatcher allgather
emit lay-qwen3-30b-deepep     $E --model qwen3-30b-a3b --gpus 16 --ep 8 --moe-dispatcher deepep
emit lay-qwen3-30b-capacity   $E --model qwen3-30b-a3b --gpus 16 --ep 8 --moe-capacity-factor 1.25
emit lay-qwen3-30b-fp8        $E --model qwen3-30b-a3b --gpus 16 --ep 8 --precision fp8 --fp8-recipe blockwise
emit lay-v2lite-ep8-shared    $E --model deepseek-v2-lite --gpus 16 --ep 8 --moe-shared-expert-overlap
emit lay-v2lite-tp2-ep4       $E --model deepseek-v2-lite --gpus 16 --tp 2 --ep 4
emit lay-v2lite-hybridep      $E --model deepseek-v2-lite --gpus 16 --ep 8 --moe-dispatcher hybridep
emit lay-mixtral-8x7b-tp2-ep8-pp2 $E --model mixtral-8x7b --gpus 64 --tp 2 --pp 2 --ep 8
emit lay-mixtral-8x22b-tp4-pp4-ep8 $E --model mixtral-8x22b --gpus 256 --tp 4 --pp 4 --ep 8
emit lay-dsv3-pp16-ep64       $E --model deepseek-v3 --gpus 1024 --pp 16 --ep 64
emit lay-qwen3-30b-ep-overlap $E --model qwen3-30b-a3b --gpus 16 --ep 8 --moe-ep-overlap
emit lay-dsv3-deepep           $E --model deepseek-v3 --gpus 1024 --pp 16 --ep 64 --moe-dispatcher deepep
emit lay-dsv3-hybridep         $E --model deepseek-v3 --gpus 1024 --pp 16 --ep 64 --moe-dispatcher hybridep
emit lay-dsv3-fp8-blockwise    $E --model deepseek-v3 --gpus 1024 --pp 16 --ep 64 --precision fp8 --fp8-recipe blockwise
emit lay-dsv3-uneven           $E --model deepseek-v3 --gpus 1024 --pp 16 --ep 64 --pp-first-layers 3 --pp-last-layers 2
# cfg21 (2026-11-29): what the emitter writes since the last Bridge run (70362bc): activation
# offload (cpu_offloading_num_layers), with the optimizer's; Megatron-FSDP ZeRO-2 (optim_grads)
# with and without the bf16 gradient reduce; the tp-pp-dp rank order; MLA's eager RoPE (the
# dispatcher's SM count and Megatron's CUDA graphs are refused by plan for config output)
emit lay-8b-act-offload       $E --model 8b --gpus 16 --tp 2 --activation-offload-layers 8
emit lay-8b-offload-both      $E --model 8b --gpus 16 --sharding distopt --optimizer-cpu-offload --activation-offload-layers 4
emit lay-70b-zero2            $E --model 70b --gpus 64 --tp 8 --pp 2 --gbs 256 --overlap-grad-reduce --overlap-param-gather --shard-grads
emit lay-70b-zero2-bf16       $E --model 70b --gpus 64 --tp 8 --pp 2 --gbs 256 --overlap-grad-reduce --shard-grads --grad-reduce-bf16
emit lay-8b-fsdp-gradbf16     $E --model 8b --gpus 16 --sharding fsdp --grad-reduce-bf16
emit lay-30b-tp-pp-dp         $E --model 30b --gpus 64 --tp 4 --pp 2 --rank-order tp-cp-ep-pp-dp
emit lay-v2lite-norope-fusion $E --model deepseek-v2-lite --gpus 16 --ep 8 --no-rope-fusion
for f in tests/data/hf/*.json; do
    b=$(basename "$f" .json)
    emit "hf-$b-64" --model "$f" --gpus 64 --framework megatron
done
emit hf-kimi-k2-512 --model tests/data/hf/kimi-k2.json --gpus 512 --framework megatron
echo "$n cases written to $out ($skip skipped)" >&2
