#!/usr/bin/env bash
# The two extra build configurations of issue 18, each configured once in its own directory:
#   build-asan   the whole tree with AddressSanitizer + UndefinedBehaviorSanitizer, whose test
#                suite must pass (leaks are reported too; the GPU tests skip without a GPU);
#   build-debug  -O0 with warnings as errors (catches what only -O0 warns about, e.g.
#                -Wformat-truncation);
#   build-nocharts  without cairo, as a user without libcairo2-dev builds it, where the report
#                writes a placeholder for each chart: the tests of what the report writes run
#                there too (a chart title once reached that placeholder unquoted).
# Usage: scripts/sanitize-test.sh [asan|debug|nocharts|all] [extra meson test arguments]
# CUDA is left to its auto-detection; the fuzz harnesses are not built in either directory (they
# are ASan/UBSan-instrumented in every build already). .ci/run runs `all` after the main suite. Exit status: non-zero when a build or
# a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
[ $# -gt 0 ] && shift
jobs=${JOBS:-2}

if [ "$what" = asan ] || [ "$what" = all ]; then
  [ -f build-asan/build.ninja ] ||
    meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=disabled
  ninja -C build-asan -j "$jobs"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    meson test -C build-asan --num-processes "$jobs" --print-errorlogs "$@"
fi
if [ "$what" = debug ] || [ "$what" = all ]; then
  [ -f build-debug/build.ninja ] || meson setup build-debug --buildtype=debug -Dwerror=true -Dfuzz=disabled
  ninja -C build-debug -j "$jobs"
fi
if [ "$what" = nocharts ] || [ "$what" = all ]; then
  [ -f build-nocharts/build.ninja ] ||
    meson setup build-nocharts -Dcharts=disabled -Dcuda=disabled -Dfuzz=disabled
  ninja -C build-nocharts -j "$jobs"
  meson test -C build-nocharts --num-processes "$jobs" --print-errorlogs \
    test_hostile_input test_doc_writer test_outputs
fi
