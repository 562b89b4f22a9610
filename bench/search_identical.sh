#!/bin/sh
# search_identical.sh OLD_PLAN NEW_PLAN — a speed change must not change a result: runs the
# same searches (--format json, the whole ranked list kept) and the report (Markdown) with both
# binaries and diffs them, less the search's run time and its per-knob counts (how many layouts
# the lower bound skipped depends on the threads' interleaving; the results do not). Prints one
# line per command; exit 1 if any differs. Then, on one thread (where the lower bound's
# decisions follow the list order alone), a few searches again with their per-knob counts kept
# (less the layer-cost cache's built/reused counts, which say how the work was shared).
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
same() { # same NAME ARGS...
    name=$1; shift
    "$old" "$@" 2>&1 | jq -S 'del(.search.seconds, .search.stats)' >"$d/$name.old"
    "$new" "$@" 2>&1 | jq -S 'del(.search.seconds, .search.stats)' >"$d/$name.new"
    if cmp -s "$d/$name.old" "$d/$name.new"; then echo "same    plan $*"
    else echo "DIFFERS plan $*"; diff "$d/$name.old" "$d/$name.new" | head -5; rc=1; fi
}
n=0
for args in "--model 8b --gpus 8" "--model 30b --gpus 64" "--model 70b --gpus 1024" \
            "--model 405b --gpus 16384" "--model mixtral-8x7b --gpus 256" \
            "--model deepseek-v3 --gpus 2048" "--model deepseek-v3 --gpus 16384" \
            "--model 70b --gpus 512 --gbs-policy nearest --gbs 1000" \
            "--model 8b --gpus 64 --precision any" "--model 70b --gpus 256 --system h200"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    same "s$n" $args --format json --top 64
done
same1() { # same1 NAME ARGS...: one thread, the per-knob counts kept
    name=$1; shift
    PLAN_THREADS=1 "$old" "$@" 2>&1 | jq -S 'del(.search.seconds, .search.stats.layer_costs)' >"$d/$name.old"
    PLAN_THREADS=1 "$new" "$@" 2>&1 | jq -S 'del(.search.seconds, .search.stats.layer_costs)' >"$d/$name.new"
    if cmp -s "$d/$name.old" "$d/$name.new"; then echo "same    PLAN_THREADS=1 plan $* (with stats)"
    else echo "DIFFERS PLAN_THREADS=1 plan $* (with stats)"; diff "$d/$name.old" "$d/$name.new" | head -5; rc=1; fi
}
for args in "--model 70b --gpus 1024" "--model deepseek-v3 --gpus 16384" \
            "--model deepseek-v3 --gpus 1024 --precision any" \
            "--model mixtral-8x7b --gpus 512 --precision fp8" \
            "--model 405b --gpus 8192 --system h200 --seq 8192"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    same1 "s$n" $args --format json --top 64
done
mkdir "$d/o" "$d/n" # the same file name: the chart files are named after it
(cd "$d/o" && "$old" report -o guide.md >/dev/null 2>&1)
(cd "$d/n" && "$new" report -o guide.md >/dev/null 2>&1)
if [ -s "$d/o/guide.md" ] && diff -r "$d/o" "$d/n" >/dev/null; then
    echo "same    plan report -o guide.md (and its charts)"
else echo "DIFFERS plan report -o guide.md"; diff -r "$d/o" "$d/n" | head -5; rc=1; fi
rm -rf "$d"
exit $rc
