#!/bin/sh
# speed14_identical.sh OLD_PLAN NEW_PLAN OUT_DIR — speed13_identical.sh for a change that may
# move the search's per-knob counts and nothing else (speed14: the seeded prune threshold turns
# timed layouts into pruned ones). Runs speed13_identical.sh (every identity check; its runs
# that keep the counts are then expected to differ), and runs those same commands again with
# the counts (.search.stats) left out, which must be the same. Exit 1 if anything but a
# counts-kept run differs, or any of these differs less its counts. OUT_DIR/stats_less.txt.
old=$(realpath "$1") new=$(realpath "$2") out=$3
here=$(dirname "$(realpath "$0")")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
sh "$here/speed13_identical.sh" "$old" "$new" "$out" >"$out/speed13_identical.txt" 2>&1
rc=0
# the counts-kept runs: speed12_identical_default.sh's, search_identical.sh's, speed11's
# one-thread runs and stats_whole's
if cat "$out"/identical_*.txt "$out"/search_identical.txt "$out"/report_cmp.txt \
    "$out"/stats_whole.txt | grep '^DIFFERS' | grep -v -e '--search-stats' -e '(with stats)' \
    -e '^DIFFERS PLAN_THREADS=1'; then rc=1; fi
d=$(mktemp -d)
: >"$out/stats_less.txt"
while read -r args; do
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$old" $args --format json --top 64 2>&1 | jq -S 'del(.search.seconds, .search.stats)' >"$d/o"
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$new" $args --format json --top 64 2>&1 | jq -S 'del(.search.seconds, .search.stats)' >"$d/n"
    if [ -s "$d/o" ] && cmp -s "$d/o" "$d/n"; then echo "same    PLAN_THREADS=1 plan $args (less the counts)"
    else echo "DIFFERS PLAN_THREADS=1 plan $args (less the counts)"; diff "$d/o" "$d/n" | head -5; rc=1; fi \
        >>"$out/stats_less.txt"
done <<'LIST'
--model deepseek-v3 --gpus 2048 --search-stats
--model 70b --gpus 1024 --search-stats
--model deepseek-v3 --gpus 1024 --system b200 --search-stats
--model 70b --gpus 1024
--model deepseek-v3 --gpus 16384
--model deepseek-v3 --gpus 1024 --precision any
--model mixtral-8x7b --gpus 512 --precision fp8
--model 405b --gpus 8192 --system h200 --seq 8192
--model 405b --gpus 16384 --search-stats
--model deepseek-v3 --gpus 16384 --search-stats
--model deepseek-v3 --gpus 16384 --precision any
--model 70b --gpus 1024 --system b200 --precision any
LIST
rm -rf "$d"
cat "$out/stats_less.txt"
grep -h '^same' "$out"/*.txt | grep -vc 'less the counts' | sed 's/^/same (speed13 checks): /'
grep -h '^DIFFERS' "$out"/identical_*.txt "$out"/search_identical.txt "$out"/report_cmp.txt \
    "$out"/stats_whole.txt | sed 's/^/expected (counts kept): /'
exit $rc
