#!/bin/sh
# speed7_identical_grid.sh OLD_PLAN NEW_PLAN — search_identical.sh's check over a grid: six
# models (405b, deepseek-v3, 70b, 8b, mixtral-8x7b, 30b) on 64, 512 and 16384 GPUs, plan's
# default text output (the search's run time line removed) and the JSON of a torchtitan-only
# search (--framework torchtitan, less its run time and per-knob counts) on one thread: with
# two, the JSON's ranked tail of a torchtitan-only search (--top 64) differs from run to run of
# one and the same binary (19c9ed6 too: 70b on 64 GPUs gave four different files in four runs;
# the top plans and the text output do not move), so it says nothing about a change. Prints one
# line per command; exit 1 if any differs.
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
check() { # check NAME FILTER ARGS...
    name=$1 filter=$2; shift 2
    "$old" "$@" 2>&1 | sh -c "$filter" >"$d/$name.old"
    "$new" "$@" 2>&1 | sh -c "$filter" >"$d/$name.new"
    if cmp -s "$d/$name.old" "$d/$name.new"; then echo "same    plan $*"
    else echo "DIFFERS plan $*"; diff "$d/$name.old" "$d/$name.new" | head -5; rc=1; fi
}
n=0
for model in 405b deepseek-v3 70b 8b mixtral-8x7b 30b; do
    for gpus in 64 512 16384; do
        n=$((n + 1))
        check "t$n" "grep -v '^Searched '" --model "$model" --gpus "$gpus"
        PLAN_THREADS=1 check "j$n" "jq -S 'del(.search.seconds, .search.stats)'" --model "$model" \
            --gpus "$gpus" --framework torchtitan --format json --top 64
    done
done
rm -rf "$d"
exit $rc
