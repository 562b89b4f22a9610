#!/bin/bash
# Per Table 2 / Table 6 CP row: plan's attention core (fwd + bwd + recompute, per layer and
# micro-batch) against the layer's whole time (compute + exposed TP/CP), from `plan estimate --ops`.
# Run from the repository root after building; DATA: a copy of data/ whose systems/h100-gt500.json
# carries bench/published/sdpa_flash_h200.json's attention_rates (what test_published_torchtitan does).
DATA=${1:-/tmp/cp23data}
row() { # name, args...
  n=$1; shift
  PLAN_DATA_DIR=$DATA build/cli/plan estimate "$@" --ops 2>&1 | awk -v n=$n '
    /step time/ {step=$3}
    $1=="attn.core" && !seen {a=$4+$5+$6; seen=1}
    /^  sum:/ && !s2 {s2=1; for(i=1;i<=NF;i++){ if($i=="fwd")f=$(i+1); if($i=="bwd")b=$(i+1); if($i=="recompute")r=$(i+1); if($i=="TP")tp=$(i+1); if($i=="CP")cp=$(i+1)}}
    END {tot=f+b+r+tp+cp; printf "%-14s step %7.2f s  layer %8.1f ms  attn.core %8.1f ms  share %.3f\n", n, step, tot, a, a/tot}'
}
for cp in 1 2 4 8; do
  row t2_cp$cp --model 8b --system h100-gt500 --framework torchtitan --dp $((8/cp)) --cp $cp --mbs 1 --gbs $((8/cp)) \
    --seq $((32768*cp)) --recompute full --compile --compile-components model --precision fp8 --fp8-recipe tensorwise \
    --rms-norm-unfused --no-cuda-graphs
done
for cp in 1 2 4 8; do
  row t6_cp$cp --model 405b --system h100-gt500 --framework torchtitan --dp $((8/cp)) --tp 8 --pp 8 --cp $cp --mbs 1 \
    --gbs $((64/cp)) --seq $((32768*cp)) --pp-schedule 1F1B --recompute full --compile --compile-components model \
    --precision fp8 --fp8-recipe tensorwise --async-tp --rms-norm-unfused --no-cuda-graphs
done
