#!/bin/sh
# timeab.sh OUT [THREADS]: 5 interleaved rounds, before vs after, both searches at 16384
# (wall, user seconds by /usr/bin/time), PLAN_THREADS=THREADS (default: both cores); uptime beside
out=$1
th=${2:-}
export PLAN_DATA_DIR=/work/wt/speed21/data
for i in 1 2 3 4 5; do
  for m in deepseek-v3 405b; do
    for b in before c4; do
      l=$(uptime | sed 's/.*load average: //')
      t=$( { env ${th:+PLAN_THREADS=$th} /usr/bin/time -f "%e %U" /tmp/s21/$b/plan --model $m --gpus 16384 >/dev/null; } 2>&1 | tail -1)
      echo "$b $m round$i threads${th:-2} wall_user $t load $l" | tee -a "$out"
    done
  done
done
