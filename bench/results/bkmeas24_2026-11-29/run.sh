#!/bin/bash
# run.sh — issue 14 (bkmeas24): `plan measure` of one-GPU H200 real runs with the backend before
# and after FSDP2's one-GPU copies became work items, side by side in one device call.
# Run from the repository root of the GPU machine's tree with the carry folder D (default
# .carry/bkmeas24) holding bins.tar.xz (base/plan-gpu and new/plan-gpu: stripped static builds,
# backend/README.md; one xz archive, as the two share most bytes and the tree has ~2 MB to
# spare), runs.tsv and configs/ (make_runs.py). plan-gpu runs `measure` itself (plan
# only hands it over). The two binaries alternate which goes first per run. Writes
# $OUT/bkmeas24/{base,new}/<label>.json|.err, machine.txt and log.txt.
# LIMIT: seconds after which no new measurement starts (default 90).
set -u
D=${D:-.carry/bkmeas24}
LIMIT=${LIMIT:-90}
R=$OUT/bkmeas24
mkdir -p "$R/base" "$R/new"
B=$(mktemp -d)
xz -dc "$D/bins.tar.xz" | tar xf - -C "$B"
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data
if ldd "$B/new/plan-gpu" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  lscpu | grep -E "Model name|^CPU\(s\)"
  uname -r
  ldd "$B/new/plan-gpu" | grep -E "cublas|nccl|not found"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>/dev/null
  sha256sum "$B/base/plan-gpu" "$B/new/plan-gpu"
} > "$R/machine.txt" 2>&1
start=$(date +%s)
log=$R/log.txt
one() { # version label args...
  local v=$1 lab=$2; shift 2
  if [ $(( $(date +%s) - start )) -gt "$LIMIT" ]; then echo "$v $lab not run (time limit)" >> "$log"; return; fi
  local t0=$(date +%s.%N)
  timeout 45 "$B/$v/plan-gpu" "$@" > "$R/$v/$lab.json" 2> "$R/$v/$lab.err"
  local rc=$?
  printf "%-4s %-16s rc %d %6.1f s  %s\n" "$v" "$lab" $rc "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$*" >> "$log"
}
i=0
while IFS=$'\t' read -r lab args; do
  [ -z "$lab" ] && continue
  # shellcheck disable=SC2086
  if [ $((i % 2)) -eq 0 ]; then one base "$lab" $args; one new "$lab" $args
  else one new "$lab" $args; one base "$lab" $args; fi
  i=$((i + 1))
done < "$D/runs.tsv"
cat "$log"
for v in base new; do for f in "$R/$v"/*.json; do
  python3 -c "
import json,sys
j=json.load(open(sys.argv[1])); m=j['measured']; p=j['predicted']
print('%-4s %-16s measured %.4f unpaced %.4f copies %.4f | predicted %.4f copies %.4f' % (sys.argv[2], sys.argv[1].split('/')[-1][:-5], m['step_s'], m.get('step_unpaced_s', 0), m.get('copies_compute_s', 0), p['step_s'], p.get('copies_compute_s', 0)))" "$f" $v 2>/dev/null
done; done
rm -rf "$B"
# the device returns at most 8 files: one archive of everything (added after call1, whose new/
# JSON files did not come back)
tar czf "$OUT/bkmeas24.tgz" -C "$OUT" bkmeas24 && rm -rf "$R"
