#!/bin/sh
# speed12_identical_default.sh OLD_PLAN NEW_PLAN — the default search (no --precision: auto,
# bf16 and FP8 on Hopper, also MXFP8 on Blackwell) must print the same plans, byte for byte,
# after a speed change (issues 13 and 21, speed12): the human output and the JSON (whole
# ranked list, top 64; less the run time and the per-knob counts, which the threads'
# interleaving moves) for dense and MoE models, each framework alone, Hopper and Blackwell
# systems, and two one-thread runs with the per-knob counts kept (less the layer-cost cache's
# built/reused counts). Prints one line per command; exit 1 if any differs.
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
n=0
human() { # human ARGS...: the printed output, less the search's own timing line
    n=$((n + 1))
    "$old" "$@" 2>&1 | sed 's/ in [0-9.]* s;/ in X s;/' >"$d/$n.old"
    "$new" "$@" 2>&1 | sed 's/ in [0-9.]* s;/ in X s;/' >"$d/$n.new"
    if cmp -s "$d/$n.old" "$d/$n.new"; then echo "same    plan $*"
    else echo "DIFFERS plan $*"; diff "$d/$n.old" "$d/$n.new" | head -5; rc=1; fi
}
json() { # json THREADS JQ_DELETE ARGS...
    th=$1 del=$2; shift 2
    n=$((n + 1))
    PLAN_THREADS=$th "$old" "$@" --format json --top 64 2>&1 | jq -S "del($del)" >"$d/$n.old"
    PLAN_THREADS=$th "$new" "$@" --format json --top 64 2>&1 | jq -S "del($del)" >"$d/$n.new"
    if cmp -s "$d/$n.old" "$d/$n.new"; then echo "same    PLAN_THREADS=$th plan $* --format json --top 64"
    else echo "DIFFERS PLAN_THREADS=$th plan $* --format json --top 64"; diff "$d/$n.old" "$d/$n.new" | head -5; rc=1; fi
}
while read -r args; do
    # shellcheck disable=SC2086
    human $args
    # shellcheck disable=SC2086
    json 2 '.search.seconds, .search.stats' $args
done <<'LIST'
--model 405b --gpus 16384
--model deepseek-v3 --gpus 16384
--model deepseek-v3 --gpus 2048
--model 8b --gpus 8
--model 70b --gpus 1024
--model mixtral-8x7b --gpus 256
--model qwen3-30b-a3b --gpus 128
--model 70b --gpus 512 --framework fsdp2
--model 70b --gpus 512 --framework torchtitan
--model deepseek-v3 --gpus 1024 --framework torchtitan
--model 405b --gpus 2048 --framework megatron
--model 70b --gpus 256 --system b200
--model deepseek-v3 --gpus 1024 --system b200
--model mixtral-8x7b --gpus 144 --system gb200-nvl72
--model 70b --gpus 512 --system h200 --gbs-policy nearest --gbs 1000
--model deepseek-v3 --gpus 2048 --bf16-first-layers 2 --bf16-last-layers 1
--model 8b --gpus 64 --no-overlap
LIST
json 1 '.search.seconds, .search.stats.layer_costs' --model deepseek-v3 --gpus 2048 --search-stats
json 1 '.search.seconds, .search.stats.layer_costs' --model 70b --gpus 1024 --search-stats
json 1 '.search.seconds, .search.stats.layer_costs' --model deepseek-v3 --gpus 1024 --system b200 --search-stats
rm -rf "$d"
exit $rc
