#!/bin/sh
# speed21_identical_extra.sh OLD_PLAN NEW_PLAN — the commands issue 21's speed21 brief names
# beyond speed13_identical.sh's lists, byte for byte (search seconds and the report's timing
# aside): the human output and the JSON (--top 64, every count) of each search on one and two
# threads, with torchtitan's pacing searched (speed21 changed its host queue), and
# `plan bench --preset guide`. On two threads the per-knob counts are left out (the threads'
# interleaving moves them, as speed11_identical_any.sh says) and --search-stats' human tables
# are not compared. One line per run; exit 1 if any differs.
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
cmp_runs() { # label: compares $d/o and $d/n
    if [ -s "$d/o" ] && cmp -s "$d/o" "$d/n"; then echo "same    $1"
    else echo "DIFFERS $1"; diff "$d/o" "$d/n" | head -5; rc=1; fi
}
while read -r args; do
    for th in 1 2; do
        del=".search.seconds"
        [ $th = 2 ] && del=".search.seconds, .search.stats"
        case "$th $args" in
        "2 "*--search-stats*) ;;
        *)
        # shellcheck disable=SC2086
        PLAN_THREADS=$th "$old" $args | sed 's/ in [0-9.]* s;/ in S s;/' >"$d/o"
        # shellcheck disable=SC2086
        PLAN_THREADS=$th "$new" $args | sed 's/ in [0-9.]* s;/ in S s;/' >"$d/n"
        cmp_runs "PLAN_THREADS=$th plan $args"
        ;;
        esac
        # shellcheck disable=SC2086
        PLAN_THREADS=$th "$old" $args --format json --top 64 | jq -S "del($del)" >"$d/o"
        # shellcheck disable=SC2086
        PLAN_THREADS=$th "$new" $args --format json --top 64 | jq -S "del($del)" >"$d/n"
        cmp_runs "PLAN_THREADS=$th plan $args --format json --top 64"
    done
done <<'LIST'
--model 405b --gpus 16384
--model deepseek-v3 --gpus 16384
--model 30b --gpus 64
--model 8b --gpus 64 --framework torchtitan
--model 8b --gpus 8
--model 70b --gpus 256 --framework torchtitan --search-stats
--model qwen3-30b-a3b --gpus 64 --framework torchtitan --search-stats
--model 8b --gpus 4 --framework fsdp2 --search-stats
LIST
"$old" bench --preset guide >"$d/o" 2>&1
"$new" bench --preset guide >"$d/n" 2>&1
cmp_runs "plan bench --preset guide"
rm -rf "$d"
exit $rc
