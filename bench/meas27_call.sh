#!/bin/bash
# meas27 (issue 14): the one device call on 2 x H200. Repository root on the GPU machine,
# .carry/meas27 carried: base.tar.xz / fix.tar.xz (stripped plan + plan-gpu of main bb49710 and of
# branch meas27, each with build.txt), cfg/, jobs_call.txt (lines: BIN LABEL NGPU NPROC CONFIG
# ARGS...). Per job: mpirun -np NPROC plan measure --steps 3 --format json (one process per GPU,
# as torchrun starts the ranks); no job starts after CUT s, none runs past HARD s.
# Writes $OUT/meas27.tgz (facts.txt, buildcheck.txt, base/, fix/, log.txt) and $OUT/log.txt.
# Usage: bash .carry/meas27/meas27_call.sh [CUT HARD JOB_LIMIT]
set -u
C=.carry/meas27
CUT=${1:-100}; HARD=${2:-125}; LIMIT=${3:-30}
T0=$(date +%s)
R=/tmp/meas27r; rm -rf $R; mkdir -p $R/base $R/fix
for b in base fix; do mkdir -p $C/$b && tar xJf $C/$b.tar.xz -C $C/$b; done
export NCCL_NVLS_ENABLE=0 PLAN_DATA_DIR=$PWD/data OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ldd $C/fix/plan-gpu | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         grep -v site-packages | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
{ date -u; nvidia-smi --query-gpu=name,uuid,memory.total,driver_version,power.limit --format=csv
  nvidia-smi topo -m; ldd $C/fix/plan-gpu | grep -E "nccl|cublas|mpi|not found"
  mpirun --version | head -1; nproc; grep -m1 "model name" /proc/cpuinfo
  for b in base fix; do (cd $C/$b && sha256sum plan plan-gpu && cat build.txt); done; } > $R/facts.txt 2>&1
# build check: the fix binary's dry run names the loop's new counts; both binaries start
{ for b in base fix; do $C/$b/plan --version; done
  $C/fix/plan measure --dry-run --model $C/cfg/qwen3-30b-a3b-L4.json --system h200 --framework torchtitan \
    --gpus 2 --seq 4096 --mbs 2 --gbs 4 --impl native --ep 2 --optimizer-impl fused --no-cuda-graphs \
    --hold-logits --moe-expert-loop --moe-new-counts 0.8228 | grep -E "expert loop|host issue"; echo "rc $?"; } > $R/buildcheck.txt 2>&1
while read -r bin label ng np cfg rest; do
  [ -z "$label" ] && continue
  el=$(( $(date +%s) - T0 ))
  if [ $el -gt $CUT ]; then echo "skip $bin $label (cut-off, +$el s)" >> $R/log.txt; continue; fi
  lim=$(( HARD - el )); [ $lim -gt $LIMIT ] && lim=$LIMIT
  t=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((ng-1))) timeout $lim mpirun -np $np --bind-to none \
     -x NCCL_NVLS_ENABLE -x PLAN_DATA_DIR -x LD_LIBRARY_PATH $C/$bin/plan measure --model $C/$cfg \
     --steps 3 --format json $rest < /dev/null > $R/$bin/pm-$label.json 2> $R/$bin/$label.err
  rc=$?
  echo "$bin $label rc $rc $(( ($(date +%s%N) - t) / 1000000 )) ms (+$el s): mpirun -np $np plan measure --model $cfg --steps 3 $rest" >> $R/log.txt
done < $C/jobs_call.txt
echo "call end +$(( $(date +%s) - T0 )) s" >> $R/log.txt; date -u >> $R/facts.txt
cd $R && tar czf $OUT/meas27.tgz . && cp log.txt $OUT/log.txt
