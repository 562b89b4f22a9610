#!/bin/bash
# emits Megatron flags (text and JSON) for every HF fixture and realruns config with binary $1 into dir $2
B=$1; O=$2; mkdir -p $O
for f in tests/data/hf/types/*.json tests/data/hf/*.json bench/realruns/configs/*.json; do
  [ -f "$f" ] || continue
  n=$(echo $f | tr / _)
  for lay in "--tp 1" "--tp 2 --ep 2" "--tp 2 --ep 4 --etp 1 --moe-dispatcher deepep --moe-fp8-dispatch --precision fp8" "--tp 1 --ep 8 --moe-dispatcher deepep --moe-fp8-dispatch --precision fp8"; do
    l=$(echo $lay | tr -d ' -')
    for fmt in megatron-args json; do
      PLAN_DATA_DIR=$PWD/data PLAN_HF_DIR=tests/data/hf $B estimate --model $f --gpus 8 $lay --emit $fmt > $O/$n.$l.$fmt 2>/dev/null
    done
  done
done
