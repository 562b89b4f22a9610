#!/bin/bash
# precision_search_cost.sh [BASE_PLAN] [NEW_PLAN] — what `--precision auto` (issue 16: the
# search's default since prec11, bf16 + FP8 on H100) costs the search: for `plan --model 405b
# --gpus 16384` and `plan --model deepseek-v3 --gpus 16384`, the layouts evaluated and the CPU
# (user + sys) and wall seconds (median of 3) of BASE's default (bf16), BASE --precision any,
# NEW's default (auto) and NEW --precision bf16. Build both as release builds
# (`meson setup build-rel --buildtype=release && ninja -C build-rel cli/plan`); BASE from the
# commit before the change (e.g. `git archive 6ed1b1f | tar -x -C /tmp/base`). Prints the
# machine's load average with the rows: the wall times move with it, the CPU seconds less.
set -u
BASE=${1:-/tmp/prec11_base/build-rel/cli/plan}
NEW=${2:-build-rel/cli/plan}
export PLAN_DATA_DIR=${PLAN_DATA_DIR:-$PWD/data}
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# args | binary and flags | layouts evaluated | cpu_s wall_s (median of 3)"
for args in "--model 405b --gpus 16384" "--model deepseek-v3 --gpus 16384"; do
  for v in "base:$BASE:" "base:$BASE:--precision any" "new:$NEW:" "new:$NEW:--precision bf16"; do
    IFS=: read -r name bin extra <<< "$v"
    ev=$("$bin" $args $extra --format json |
         python3 -c "import json,sys; print(json.load(sys.stdin)['search']['evaluated'])")
    r=$(for i in 1 2 3; do /usr/bin/time -f "%U %S %e" "$bin" $args $extra 2>&1 >/dev/null |
        tail -1; done | awk '{print $1 + $2, $3}' | sort -n | sed -n 2p)
    echo "$args | $name ${extra:-(default)} | $ev | $r"
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
