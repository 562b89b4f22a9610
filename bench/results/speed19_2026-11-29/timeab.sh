#!/bin/sh
# timeab.sh OUT: 5 interleaved rounds, before vs after, both searches at 16384 (wall, user), 2 threads; uptime beside
out=$1
export PLAN_DATA_DIR=/work/wt/speed19/data
for i in 1 2 3 4 5; do
  for m in deepseek-v3 405b; do
    for b in before c2; do
      l=$(uptime | sed 's/.*load average: //')
      t=$( { /usr/bin/time -f "%e %U" /tmp/s19/$b/plan --model $m --gpus 16384 >/dev/null; } 2>&1 | tail -1)
      echo "$b $m round$i wall_user $t load $l" | tee -a $out
    done
  done
done
