#!/bin/sh
# speed11_identical_any.sh OLD_PLAN NEW_PLAN — the precision searches a speed change must leave
# as they were (issues 13 and 21, speed11; search_identical.sh covers bf16 and two small
# --precision any searches): --precision any (the default once the search picks the precision
# itself) on 16384 GPUs, on Blackwell (mxfp8 and nvfp4 too), with bf16 first/last layers and
# with --fp8-param-gather pinned, as JSON with the whole ranked list (top 64), less the run
# time and the per-knob counts (the threads' interleaving moves them; one-thread runs below
# keep them). Prints one line per command; exit 1 if any differs.
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
n=0
cmp_run() { # cmp_run THREADS JQ_DELETE ARGS...
    th=$1 del=$2; shift 2
    n=$((n + 1))
    PLAN_THREADS=$th "$old" "$@" 2>&1 | jq -S "del($del)" >"$d/$n.old"
    PLAN_THREADS=$th "$new" "$@" 2>&1 | jq -S "del($del)" >"$d/$n.new"
    if cmp -s "$d/$n.old" "$d/$n.new"; then echo "same    PLAN_THREADS=$th plan $*"
    else echo "DIFFERS PLAN_THREADS=$th plan $*"; diff "$d/$n.old" "$d/$n.new" | head -5; rc=1; fi
}
all=".search.seconds, .search.stats"
one=".search.seconds, .search.stats.layer_costs"
for args in "--model 405b --gpus 16384 --precision any" \
            "--model deepseek-v3 --gpus 16384 --precision any" \
            "--model 70b --gpus 1024 --system b200 --precision any" \
            "--model deepseek-v3 --gpus 2048 --system b200 --precision any" \
            "--model 405b --gpus 4096 --precision fp8 --bf16-first-layers 2 --bf16-last-layers 1" \
            "--model deepseek-v3 --gpus 1024 --precision fp8 --fp8-param-gather --bf16-first-layers 1 --bf16-last-layers 1" \
            "--model mixtral-8x7b --gpus 256 --system gb200-nvl72 --precision any"; do
    # shellcheck disable=SC2086
    cmp_run 2 "$all" $args --format json --top 64
done
for args in "--model deepseek-v3 --gpus 16384 --precision any" \
            "--model 70b --gpus 1024 --system b200 --precision any"; do
    # shellcheck disable=SC2086
    cmp_run 1 "$one" $args --format json --top 64
done
rm -rf "$d"
exit $rc
