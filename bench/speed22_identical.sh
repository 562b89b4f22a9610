#!/bin/sh
# speed22_identical.sh OLD_BUILD NEW_BUILD OUT_DIR — does a change to the search machinery
# (issues 13 and 21: speed) keep the output? Rerunnable after merges: give it two meson build
# directories (e.g. main's and a branch's); where a directory holds build.ninja it is brought up
# to date first (`nice ninja -C DIR`; NO_BUILD=1 skips that), then DIR/cli/plan is run.
#
# The hard rule it checks: the printed plans and numbers byte for byte the same; only the
# counts of layouts pruned by memory / by the lower bound / timed whole (the --search-stats
# table, the JSON's search.stats) may move, and the search's seconds. For each search of the
# list below:
#  - one thread, human output with --search-stats: compared whole ("same"); where that
#    differs, compared again with the statistics table left out ("counts only" = allowed);
#  - one thread, JSON --top 64 less .search.seconds: the same two steps with .search.stats;
#  - two threads, human output and JSON --top 64, the counts left out (the threads'
#    interleaving moves them run to run, speed11_identical_any.sh).
# Then `plan bench --preset guide` (CSV) and `plan report` of the guide (Markdown, its PNG
# charts too), byte for byte. speed23: the bound before the memory leaves layouts unchecked for
# memory, so the feasible count (the "Top N of F feasible layouts" and "Searched N layouts (F
# feasible...)" lines, the JSON's search.feasible and search.unchecked) is a count too: left
# out with the statistics in the "counts only" step, and in the two-thread runs' second step.
# det26: `plan` prints that count only where it is exact ("Top N of M layouts searched" where
# it is not; the JSON's search.feasible null, search.unchecked and search.stats only with
# --search-stats, which searches on one thread): masked as a count line too.
# Writes OUT_DIR/identical.txt (one line a comparison) and the
# diffs' first lines; exit 1 if anything other than counts differs.
set -u
[ $# -eq 3 ] || { echo "usage: speed22_identical.sh OLD_BUILD NEW_BUILD OUT_DIR" >&2; exit 2; }
old_dir=$(realpath "$1") new_dir=$(realpath "$2") out=$3
here=$(dirname "$(realpath "$0")")
mkdir -p "$out" || exit 2
out=$(realpath "$out")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-$here/../data}")
for b in "$old_dir" "$new_dir"; do
    if [ "${NO_BUILD:-0}" != 1 ] && [ -f "$b/build.ninja" ]; then
        nice ninja -C "$b" cli/plan >/dev/null || { echo "build failed: $b" >&2; exit 2; }
    fi
    [ -x "$b/cli/plan" ] || { echo "no $b/cli/plan" >&2; exit 2; }
done
old=$old_dir/cli/plan new=$new_dir/cli/plan
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
rep=$out/identical.txt
: >"$rep"
rc=0 n_same=0 n_counts=0 n_diff=0
# the search's seconds, and the statistics table (from its heading to the end of the output)
mask_secs() { sed -e 's/ in [0-9.]* s;/ in S s;/'; }
drop_counts() {
    sed -E -e 's/^Top ([0-9]+) of [0-9]+ feasible layouts.*:$/Top \1 of F feasible layouts:/' \
        -e 's/^Top ([0-9]+) of [0-9]+ layouts searched:$/Top \1 of F feasible layouts:/' \
        -e 's/^Searched ([0-9]+) layouts \(.*\) in /Searched \1 layouts (F) in /'
}
drop_stats() { sed -e '/^Search statistics/,$d' | drop_counts; }
jcounts='.search.seconds, .search.stats, .search.feasible, .search.unchecked'
same() { echo "same        $1" >>"$rep"; n_same=$((n_same + 1)); }
counts() { # label OLD NEW: the count lines that moved, indented
    { echo "counts only $1"; diff "$2" "$3" | grep '^[<>]' | head -8 | sed 's/^/    /'; } >>"$rep"
    n_counts=$((n_counts + 1))
}
differs() {
    { echo "DIFFERS     $1"; diff "$2" "$3" | head -10; } >>"$rep"
    n_diff=$((n_diff + 1)) rc=1
}
while read -r args; do
    [ -z "$args" ] && continue
    label="PLAN_THREADS=1 plan $args --search-stats"
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$old" $args --search-stats 2>&1 | mask_secs >"$d/o"
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$new" $args --search-stats 2>&1 | mask_secs >"$d/n"
    if [ -s "$d/o" ] && cmp -s "$d/o" "$d/n"; then same "$label"
    else
        drop_stats <"$d/o" >"$d/o2"
        drop_stats <"$d/n" >"$d/n2"
        if [ -s "$d/o2" ] && cmp -s "$d/o2" "$d/n2"; then counts "$label" "$d/o" "$d/n"
        else differs "$label" "$d/o2" "$d/n2"; fi
    fi
    label="PLAN_THREADS=1 plan $args --format json --top 64"
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$old" $args --format json --top 64 2>&1 >"$d/oj"
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$new" $args --format json --top 64 2>&1 >"$d/nj"
    jq -S 'del(.search.seconds)' "$d/oj" >"$d/o" 2>&1
    jq -S 'del(.search.seconds)' "$d/nj" >"$d/n" 2>&1
    if [ -s "$d/o" ] && cmp -s "$d/o" "$d/n"; then same "$label"
    else
        jq -S "del($jcounts)" "$d/oj" >"$d/o2" 2>&1
        jq -S "del($jcounts)" "$d/nj" >"$d/n2" 2>&1
        if [ -s "$d/o2" ] && cmp -s "$d/o2" "$d/n2"; then
            jq -S '.search.stats, .search.feasible, .search.unchecked' "$d/oj" >"$d/o2"
            jq -S '.search.stats, .search.feasible, .search.unchecked' "$d/nj" >"$d/n2"
            counts "$label" "$d/o2" "$d/n2"
        else differs "$label" "$d/o2" "$d/n2"; fi
    fi
    label="PLAN_THREADS=2 plan $args"
    # shellcheck disable=SC2086
    PLAN_THREADS=2 "$old" $args 2>&1 | mask_secs >"$d/o"
    # shellcheck disable=SC2086
    PLAN_THREADS=2 "$new" $args 2>&1 | mask_secs >"$d/n"
    if [ -s "$d/o" ] && cmp -s "$d/o" "$d/n"; then same "$label"
    else
        drop_counts <"$d/o" >"$d/o2"
        drop_counts <"$d/n" >"$d/n2"
        if [ -s "$d/o2" ] && cmp -s "$d/o2" "$d/n2"; then counts "$label" "$d/o" "$d/n"
        else differs "$label" "$d/o2" "$d/n2"; fi
    fi
    label="PLAN_THREADS=2 plan $args --format json --top 64 (less the counts)"
    # shellcheck disable=SC2086
    PLAN_THREADS=2 "$old" $args --format json --top 64 2>&1 | jq -S 'del(.search.seconds, .search.stats)' >"$d/oj" 2>&1
    # shellcheck disable=SC2086
    PLAN_THREADS=2 "$new" $args --format json --top 64 2>&1 | jq -S 'del(.search.seconds, .search.stats)' >"$d/nj" 2>&1
    if [ -s "$d/oj" ] && cmp -s "$d/oj" "$d/nj"; then same "$label"
    else
        jq -S "del($jcounts)" "$d/oj" >"$d/o2" 2>&1
        jq -S "del($jcounts)" "$d/nj" >"$d/n2" 2>&1
        if [ -s "$d/o2" ] && cmp -s "$d/o2" "$d/n2"; then counts "$label" "$d/oj" "$d/nj"
        else differs "$label" "$d/o2" "$d/n2"; fi
    fi
done <<'LIST'
--model 405b --gpus 16384
--model deepseek-v3 --gpus 16384
--model 405b --gpus 2048 --framework megatron
--model 405b --gpus 4096 --precision fp8
--model deepseek-v3 --gpus 2048 --precision any
--model deepseek-v3 --gpus 1024 --framework torchtitan
--model deepseek-v3 --gpus 1024 --system b200
--model 70b --gpus 1024
--model 70b --gpus 256 --framework torchtitan
--model 70b --gpus 96 --gbs 480
--model 70b --gpus 512 --framework megatron --system h200 --seq 8192
--model 8b --gpus 8
--model 8b --gpus 64 --framework torchtitan
--model 8b --gpus 4 --framework fsdp2
--model 8b --gpus 32 --framework torchtitan --precision fp8
--model 30b --gpus 64
--model 30b --gpus 512 --framework megatron
--model 30b --gpus 128 --framework torchtitan
--model mixtral-8x7b --gpus 512 --precision fp8
--model mixtral-8x7b --gpus 64 --framework torchtitan
--model mixtral-8x22b --gpus 256 --framework megatron
--model qwen3-30b-a3b --gpus 64 --framework torchtitan
LIST
label="plan bench --preset guide"
"$old" bench --preset guide >"$d/o" 2>&1
"$new" bench --preset guide >"$d/n" 2>&1
if [ -s "$d/o" ] && cmp -s "$d/o" "$d/n"; then same "$label"; else differs "$label" "$d/o" "$d/n"; fi
# the guide: Markdown, its charts written beside it
label="plan report -o guide.md (the guide, and its charts)"
mkdir "$d/ro" "$d/rn"
"$old" report -o "$d/ro/guide.md" >/dev/null 2>&1
"$new" report -o "$d/rn/guide.md" >/dev/null 2>&1
if [ -s "$d/ro/guide.md" ] && diff -r "$d/ro" "$d/rn" >"$d/rdiff" 2>&1; then same "$label"
else { echo "DIFFERS     $label"; head -10 "$d/rdiff"; } >>"$rep"; n_diff=$((n_diff + 1)) rc=1; fi
echo "old $old_dir ($(git -C "$old_dir" rev-parse --short HEAD 2>/dev/null || echo '?'))," \
    "new $new_dir: $n_same same, $n_counts counts only, $n_diff differ" | tee -a "$rep"
grep -v '^same' "$rep" | head -40
exit $rc
