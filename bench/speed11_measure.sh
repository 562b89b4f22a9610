#!/bin/sh
# speed11_measure.sh OUT_DIR N LABEL=BUILD_DIR... — the speed11 round's wall times (issues 13
# and 21): bench/speed12_measure.sh with --precision any timed beside the default search (the
# default was bf16 when speed11 ran it; it is --precision auto since prec11).
EXTRA_PRECISIONS=any exec sh "$(dirname "$0")/speed12_measure.sh" "$@"
