#!/bin/sh
# run-fuzzer.sh HARNESS SEED_CORPUS [libFuzzer options...]
#
# The test suite's short fuzz run: the harness starts from the seed corpus (read only; new inputs
# go to a temporary directory that is removed afterwards), with the options given (fixed seed,
# fixed number of runs). Prints libFuzzer's "Done N runs" line; any crash, sanitizer report or
# leak fails the test with libFuzzer's log.
set -eu
bin=$1
seeds=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/plan-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir "$work/new"
# a crashing input is kept next to the harness (crash-<sha1>) to reproduce with: HARNESS FILE
if "$bin" -artifact_prefix="$(dirname "$bin")/" "$@" "$work/new" "$seeds" >"$work/log" 2>&1; then
    grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "$work/log" || tail -n 3 "$work/log"
    echo "$(basename "$bin"): $(ls "$work/new" | wc -l) new inputs found, none crashed"
else
    cat "$work/log"
    exit 1
fi
