#!/bin/sh
# speed11_callgrind.sh OUT_FILE LABEL=PLAN_BINARY... — instructions of the speed11 table's
# searches (issues 13 and 21), one thread (PLAN_THREADS=1: the evaluation order, and so the
# work, is the list's alone), by `valgrind --tool=callgrind` ("I refs"): `plan --model M --gpus
# 16384` for 405b and deepseek-v3, in bf16 and with --precision any (the search's default once
# it picks the precision itself). CASES (optional) replaces the list: "ARGS|ARGS|...". One line
# a run to OUT_FILE (appended): label, command, instructions.
out=$1
shift
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
tmp=$(mktemp -d)
cases=${CASES:-"--model 405b --gpus 16384|--model deepseek-v3 --gpus 16384|--model 405b --gpus 16384 --precision any|--model deepseek-v3 --gpus 16384 --precision any"}
{ date -u; echo "# PLAN_THREADS=1 valgrind --tool=callgrind BINARY ARGS; I refs"; } >>"$out"
echo "$cases" | tr '|' '\n' | while read -r args; do
    for b in "$@"; do
        # shellcheck disable=SC2086
        n=$(PLAN_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
            "$(realpath "${b#*=}")" $args 2>&1 >/dev/null | sed -n 's/.*I *refs: *//p')
        echo "${b%%=*} PLAN_THREADS=1 plan $args: $n instructions" | tee -a "$out"
    done
done
rm -rf "$tmp"
