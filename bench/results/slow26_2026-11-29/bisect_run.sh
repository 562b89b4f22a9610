#!/bin/bash
# usage: run.sh "sha ..." ; env DS_SHAS="sha ..." also measures DeepSeek-V3
cd /work/wt/slow26
for s in $1; do
  d=/tmp/slow26-$s
  git worktree add --detach $d $s >/dev/null 2>&1
  (cd $d && meson setup B --buildtype=release >/dev/null 2>&1 && nice ninja -C B cli/plan >/dev/null 2>&1) || { echo "$s BUILD FAILED"; continue; }
  PLAN_THREADS=1 nice valgrind --tool=callgrind --callgrind-out-file=/tmp/slow26_bis/cg405_$s.out $d/B/cli/plan --model 405b --gpus 16384 > /tmp/slow26_bis/out405_$s.txt 2>/tmp/slow26_bis/err405_$s.txt
  i405=$(grep -E "^summary|^totals" /tmp/slow26_bis/cg405_$s.out | head -1 | awk '{print $2}')
  ids=""
  if echo " $DS_SHAS " | grep -q " $s "; then
    PLAN_THREADS=1 nice valgrind --tool=callgrind --callgrind-out-file=/tmp/slow26_bis/cgds_$s.out $d/B/cli/plan --model deepseek-v3 --gpus 16384 > /tmp/slow26_bis/outds_$s.txt 2>/tmp/slow26_bis/errds_$s.txt
    ids=$(grep -E "^summary|^totals" /tmp/slow26_bis/cgds_$s.out | head -1 | awk '{print $2}')
  fi
  echo "$s $i405 $ids $(git log --oneline -1 $s | cut -c1-80)" >> /tmp/slow26_bis/table.txt
  git worktree remove --force $d
done
