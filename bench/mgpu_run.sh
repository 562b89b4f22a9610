#!/bin/bash
# Issue 24 on a lent multi-GPU machine: machine facts, collectives (plan calibrate, nccl-tests,
# torch.distributed) and the real multi-GPU steps + plan measure of bench/realruns/runs_mgpu_*.txt.
# Everything is written to $W and packed into $OUT/mgpu-<part>.tgz (the device tool brings back
# at most 8 files), with the driver's summary as $OUT/summary-<part>.txt.
#
# Usage (repository root on the GPU machine; C = the carried folder holding bench/ and bin/):
#   C=.carry/mgpu bash .carry/mgpu/bench/mgpu_run.sh PARTS JOBS DEADLINE_S
#   PARTS: any of facts,coll,coll2,jobs (comma-separated); JOBS: a jobs file for mgpu_driver.py;
#   DEADLINE_S: no job starts after that many seconds from the script's start
# bin/ holds plan, plan-gpu (built with -Dstatic_deps=true, backend/README.md) and nccl-tests'
# all_reduce_perf ... sendrecv_perf (github:NVIDIA/nccl-tests, make MPI=0, sm_90).
set -u
C=${C:-.carry/mgpu}
PARTS=",${1:-facts,coll,jobs},"
JOBS=${2:-$C/bench/realruns/runs_mgpu_smoke.txt}
DEADLINE=${3:-300}
MAXB=${MAXB:-1G}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PLAN_DATA_DIR=$PWD/data PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=/tmp/mgpu-work; mkdir -p $W/coll $W/jobs $W/cfg
BIN=$C/bin
T0=$(date +%s)
say() { echo "=== $* ($(date -u +%T), +$(( $(date +%s) - T0 )) s)" | tee -a $W/log.txt; }
if ldd $BIN/plan-gpu | grep -q "not found" || ldd $BIN/all_reduce_perf | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' -o -name 'libcudart.so.13' 2>/dev/null |
         grep -v site-packages | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
NG=$(nvidia-smi -L | wc -l)
if [[ $PARTS == *,facts,* ]]; then
  say facts
  { date -u; uname -r; nproc; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s 2>&1 | head -40
    ldd $BIN/plan-gpu $BIN/all_reduce_perf | grep -E "nccl|cublas|cudart|mpi|not found"
    which mpirun && mpirun --version | head -2
    python3 -c 'import torch,transformers,sys;print("torch",torch.__version__,"cuda",torch.version.cuda,"nccl",torch.cuda.nccl.version(),"cudnn",torch.backends.cudnn.version(),"transformers",transformers.__version__,"python",sys.version.split()[0],"gpus",torch.cuda.device_count())'
  } > $W/facts.txt 2>&1
  tail -3 $W/facts.txt
fi
# cut configs for plan measure / plan estimate (num_hidden_layers = N)
python3 - "$C/bench/realruns/configs" $W/cfg <<'EOF'
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
for name, L in (("llama-3.1-8b", 2), ("llama-3.1-8b", 4), ("llama-3.1-8b", 8), ("llama-3.1-8b", 16),
                ("qwen3-30b-a3b", 2), ("qwen3-30b-a3b", 4), ("llama-3.2-1b", 2)):
    c = json.load(open(os.path.join(src, name + ".json")))
    c["num_hidden_layers"] = L
    if "max_window_layers" in c:
        c["max_window_layers"] = min(c["max_window_layers"], L)
    json.dump(c, open(os.path.join(dst, "%s-L%d.json" % (name, L)), "w"))
EOF
coll() {  # $1: list of rank counts
  for n in $1; do
    [ $n -le $NG ] || continue
    devs=$(seq -s, 0 $((n-1)))
    say "nccl-tests n=$n"
    for op in all_reduce all_gather reduce_scatter alltoall broadcast sendrecv; do
      CUDA_VISIBLE_DEVICES=$devs timeout 120 $BIN/${op}_perf -b 1K -e $MAXB -f 4 -g $n -d bfloat16 -w 5 -n 20 \
        > $W/coll/nt_${op}_n$n.txt 2>&1 || echo "nccl-tests $op n=$n rc $?" | tee -a $W/log.txt
    done
    say "torch.distributed n=$n"
    CUDA_VISIBLE_DEVICES=$devs timeout 240 torchrun --nproc_per_node $n --master_port 2965$n \
      $C/bench/coll_torch.py --max-bytes $MAXB -o $W/coll/torch_n$n.csv > $W/coll/torch_n$n.log 2>&1 \
      || { echo "coll_torch n=$n rc $?"; tail -20 $W/coll/torch_n$n.log; } | tee -a $W/log.txt
  done
  say "plan calibrate, one process driving $NG GPUs"
  timeout 300 $BIN/plan calibrate --ops collectives --max-bytes $MAXB -o $W/coll/calib_1proc.csv \
    > $W/coll/calib_1proc.log 2>&1 || { echo "calibrate 1proc rc $?"; tail -5 $W/coll/calib_1proc.log; } | tee -a $W/log.txt
  say "plan calibrate, mpirun -np $NG (one process per GPU)"
  timeout 300 mpirun -np $NG --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST \
    -x NVSHMEM_DISABLE_NVLS -x PLAN_DATA_DIR -x LD_LIBRARY_PATH \
    $BIN/plan calibrate --ops collectives --max-bytes $MAXB -o $W/coll/calib_${NG}proc.csv \
    > $W/coll/calib_${NG}proc.log 2>&1 || { echo "calibrate mpirun rc $?"; tail -5 $W/coll/calib_${NG}proc.log; } | tee -a $W/log.txt
}
[[ $PARTS == *,coll,* ]] && coll "4 2"
[[ $PARTS == *,coll2,* ]] && coll "2"
if [[ $PARTS == *,jobs,* ]]; then
  say "jobs $JOBS (deadline $DEADLINE s)"
  SYS=h100; nvidia-smi -L | head -1 | grep -q H200 && SYS=h200
  sed -e "s#@C@#$C#g" -e "s#@CFG@#$W/cfg#g" -e "s#@SYS@#$SYS#g" $JOBS > $W/jobs/jobs.txt
  DL=$(( DEADLINE - ($(date +%s) - T0) ))  # DEADLINE counts from this script's start
  python3 $C/bench/realruns/mgpu_driver.py $W/jobs/jobs.txt --out $W/jobs --deadline $DL 2>&1 | tee $W/jobs/driver.txt
  cat $W/jobs/results.jsonl 2>/dev/null | wc -l
fi
say "pack"
P=$(echo $PARTS | tr -d ',' | cut -c1-20)
cp $W/jobs/driver.txt $OUT/summary-$P.txt 2>/dev/null
cp $W/log.txt $OUT/log-$P.txt
tar -czf $OUT/mgpu-$P.tgz -C $W . && ls -la $OUT
