#!/bin/sh
# report_cmp.sh OLD NEW: plan report (md with charts, and html) of several option sets, byte
# for byte (PLAN_DATA_DIR below: point it at data/); run from anywhere, writes under /tmp/r7/cmp
old=$1 new=$2
export PLAN_DATA_DIR=/work/wt/report7/data
rc=0
i=0
while read -r args; do
  i=$((i+1))
  for side in o n; do rm -rf /tmp/r7/cmp/$side; mkdir -p /tmp/r7/cmp/$side; done
  (cd /tmp/r7/cmp/o && $old report $args -o g.md >/dev/null 2>&1; $old report $args -o g.html >/dev/null 2>&1)
  (cd /tmp/r7/cmp/n && $new report $args -o g.md >/dev/null 2>&1; $new report $args -o g.html >/dev/null 2>&1)
  if [ -s /tmp/r7/cmp/o/g.md ] && diff -r /tmp/r7/cmp/o /tmp/r7/cmp/n >/dev/null; then echo "same    $args"; else echo "DIFFERS $args"; rc=1; fi
done <<'LIST'
--models 405b --gpus 8
--models 70b --gpus 64
--models 8b,mixtral-8x7b --gpus 16,128
--models 405b,8b --gpus 4,8
--models deepseek-v3 --gpus 32
--models 30b --gpus 1,2048
LIST
exit $rc
