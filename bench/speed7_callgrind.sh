#!/bin/sh
# speed7_callgrind.sh OUT_FILE LABEL=PLAN_BINARY... — instructions of the issue 13/21 target
# searches, one thread (PLAN_THREADS=1: the evaluation order, and so the work, is the list's
# alone), by `valgrind --tool=callgrind` ("I refs"), for each binary: `plan --model
# deepseek-v3 --gpus 16384`, `plan --model 405b --gpus 16384`, `plan --model 70b --gpus 1024`.
# One line a run to OUT_FILE: label, command, instructions.
out=$1
shift
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}") PLAN_THREADS=1
tmp=$(mktemp -d)
{ date -u; echo "# PLAN_THREADS=1 valgrind --tool=callgrind BINARY ARGS; I refs"; } >"$out"
for args in "--model deepseek-v3 --gpus 16384" "--model 405b --gpus 16384" "--model 70b --gpus 1024"; do
    for b in "$@"; do
        # shellcheck disable=SC2086
        n=$(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$(realpath "${b#*=}")" $args \
            2>&1 >/dev/null | sed -n 's/.*I *refs: *//p')
        echo "${b%%=*} plan $args: $n instructions" | tee -a "$out"
    done
done
rm -rf "$tmp"
