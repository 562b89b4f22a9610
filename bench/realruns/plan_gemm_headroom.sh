#!/bin/sh
# plan with --gemm-headroom on added to every `plan estimate` (costmodel/gemm_headroom.h), for
# the fidelity scripts' --plan: python3 bench/realruns/fidelity.py --plan bench/realruns/plan_gemm_headroom.sh
# PLAN_BIN names the planner (default build/cli/plan under the repository root).
bin=${PLAN_BIN:-$(dirname "$0")/../../build/cli/plan}
if [ "$1" = estimate ]; then
    shift
    exec "$bin" estimate --gemm-headroom on "$@"
fi
exec "$bin" "$@"
