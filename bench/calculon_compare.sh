#!/bin/sh
# calculon_compare.sh [PLAN] — Calculon's own examples (SC'23; github.com/calculon-ai/calculon
# at caa4b11) through plan with the same model, system, sequence and batch: Turing-NLG 530B
# (Calculon's models/turing-530B.json, here bench/calculon/turing-530b.json) on 5128 A100s
# at batch 2520 (Calculon's README example: its batch policy takes the largest multiple of DP
# below, so plan runs --gbs-policy nearest) and on 2240 A100s at batch 2240 (Megatron-LM SC'21
# Table 2), and GPT-3 175B on 1024 A100s at batch 1536 (Megatron-LM README). Megatron only:
# Calculon models Megatron-LM. bf16 pinned (--precision bf16), as Calculon's runs are; on
# A100 the search's default (auto) is bf16 anyway. The write-up is bench/results/calculon_compare.md.
plan=${1:-build/cli/plan}
export PLAN_DATA_DIR=${PLAN_DATA_DIR:-data}
run() {
    echo "== plan $*"
    /usr/bin/time -f "wall %e s" "$plan" --system a100-80g --seq 2048 --framework megatron \
        --precision bf16 --top 3 --search-stats "$@" 2>&1 |
        grep -E "^Recommended|step time|simulated|memory/GPU|^  [123] |Searched|Global batch|all layouts|^wall"
    "$plan" --system a100-80g --seq 2048 --framework megatron --precision bf16 --top 256 --format json "$@" |
        python3 "$(dirname "$0")/calculon_best.py"
}
run --model bench/calculon/turing-530b.json --gpus 5128 --gbs 2520 --gbs-policy nearest
run --model bench/calculon/turing-530b.json --gpus 2240 --gbs 2240
run --model 175b --gpus 1024 --gbs 1536
