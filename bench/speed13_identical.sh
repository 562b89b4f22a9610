#!/bin/sh
# speed13_identical.sh OLD_PLAN NEW_PLAN OUT_DIR — every identity check of the speed rounds in
# one go (issues 13 and 21, speed13): speed12's default-search list (human output and JSON,
# and one-thread runs with the per-knob counts kept), search_identical.sh (JSON of ten searches
# and one-thread counts), speed11's --precision any list, and the report (the guide and six
# other option sets, Markdown with charts and HTML). Then one-thread --search-stats runs of the
# two targets with every count kept, the layer-cost cache's built/reused counts included (a
# change that only skips work must leave them). Each script's lines into OUT_DIR/<name>.txt;
# exit 1 if anything differs.
old=$(realpath "$1") new=$(realpath "$2") out=$3
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
rc=0
sh "$here/speed12_identical_default.sh" "$old" "$new" >"$out/identical_default.txt" 2>&1 || rc=1
sh "$here/search_identical.sh" "$old" "$new" >"$out/search_identical.txt" 2>&1 || rc=1
sh "$here/speed11_identical_any.sh" "$old" "$new" >"$out/identical_any.txt" 2>&1 || rc=1
sh "$here/speed10_report_cmp.sh" "$old" "$new" >"$out/report_cmp.txt" 2>&1 || rc=1
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
: >"$out/stats_whole.txt"
for args in "--model 405b --gpus 16384" "--model deepseek-v3 --gpus 16384"; do
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$old" $args --search-stats --format json --top 64 | jq -S 'del(.search.seconds)' >"$d/o"
    # shellcheck disable=SC2086
    PLAN_THREADS=1 "$new" $args --search-stats --format json --top 64 | jq -S 'del(.search.seconds)' >"$d/n"
    if cmp -s "$d/o" "$d/n"; then echo "same    PLAN_THREADS=1 plan $args --search-stats (all counts)"
    else echo "DIFFERS PLAN_THREADS=1 plan $args --search-stats (all counts)"; diff "$d/o" "$d/n" | head -5; rc=1; fi \
        >>"$out/stats_whole.txt"
done
rm -rf "$d"
cat "$out"/*.txt | grep -c '^same' | sed 's/^/same: /'
cat "$out"/*.txt | grep '^DIFFERS' || true
exit $rc
