#!/bin/sh
# time5.sh PLAN OUT: 5 runs each of the two searches (wall, user), uptime beside each
plan=$1; out=$2
export PLAN_DATA_DIR=/work/wt/speed19/data
for i in 1 2 3 4 5; do
  for m in deepseek-v3 405b; do
    l=$(uptime | sed 's/.*load average: //')
    t=$( { /usr/bin/time -f "%e %U" $plan --model $m --gpus 16384 >/dev/null; } 2>&1 | tail -1)
    echo "$m run$i wall_user $t load $l" | tee -a $out
  done
done
