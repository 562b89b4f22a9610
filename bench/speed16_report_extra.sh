#!/bin/sh
# speed16_report_extra.sh OLD_PLAN NEW_PLAN — plan report (HTML) byte for byte, beyond
# speed10_report_cmp.sh's seven option sets: other systems, sequence lengths and batches,
# which-cluster, many counts and one thread (speed16: the points past the user's counts
# time only their first plan). One line per run; exit 1 if any differs.
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
while read -r env args; do
  for side in o n; do rm -rf "$d/$side"; mkdir -p "$d/$side"; done
  # shellcheck disable=SC2086
  (cd "$d/o" && env $env "$old" report $args -o g.html >/dev/null 2>&1)
  # shellcheck disable=SC2086
  (cd "$d/n" && env $env "$new" report $args -o g.html >/dev/null 2>&1)
  if [ -s "$d/o/g.html" ] && cmp -s "$d/o/g.html" "$d/n/g.html"; then
    echo "same    $env plan report $args"
  else echo "DIFFERS $env plan report $args"; rc=1; fi
done <<'LIST'
PLAN_THREADS=1 --gpus 8,64,256
PLAN_THREADS=2 --system b200 --gpus 8,64,256
PLAN_THREADS=2 --system a100-80g --models 70b,mixtral-8x7b --gpus 16,128
PLAN_THREADS=2 --system h200 --models deepseek-v3,8b --gpus 64 --seq 8192
PLAN_THREADS=2 --models 70b,qwen3-30b-a3b --gpus 8,32,512 --gbs 512
PLAN_THREADS=2 --models 405b --gpus 2,4 --seq 16384
PLAN_THREADS=2 --models deepseek-v3 --gpus 128,1024 --systems h100,b200
PLAN_THREADS=1 --system gb200-nvl72 --models 8b,405b --gpus 72,144
LIST
rm -rf "$d"
exit $rc
