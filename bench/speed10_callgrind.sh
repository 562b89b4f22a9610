#!/bin/sh
# speed10_callgrind.sh OUT_FILE LABEL=PLAN_BINARY... — instructions of the speed10 table's
# searches (issues 13 and 21), one thread (PLAN_THREADS=1: the evaluation order, and so the
# work, is the list's alone), by `valgrind --tool=callgrind` ("I refs"), for each binary:
# `plan --model M --gpus N` for 30b/64, 70b/1024, 405b/16384, deepseek-v3/2048 and
# deepseek-v3/16384; with TWO=1 also deepseek-v3/16384 on two threads (callgrind runs them one
# at a time and counts both: what the second thread's own layer-cost cache adds). One line a
# run to OUT_FILE: label, command, instructions.
out=$1
shift
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
tmp=$(mktemp -d)
{ date -u; echo "# PLAN_THREADS=1 valgrind --tool=callgrind BINARY ARGS; I refs"; } >"$out"
run() { # run THREADS ARGS...
    th=$1; shift
    for b in $bins; do
        n=$(PLAN_THREADS=$th valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
            "$(realpath "${b#*=}")" "$@" 2>&1 >/dev/null | sed -n 's/.*I *refs: *//p')
        echo "${b%%=*} PLAN_THREADS=$th plan $*: $n instructions" | tee -a "$out"
    done
}
bins="$*"
run 1 --model 30b --gpus 64
run 1 --model 70b --gpus 1024
run 1 --model 405b --gpus 16384
run 1 --model deepseek-v3 --gpus 2048
run 1 --model deepseek-v3 --gpus 16384
[ -n "$TWO" ] && run 2 --model deepseek-v3 --gpus 16384
rm -rf "$tmp"
