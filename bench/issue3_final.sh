#!/usr/bin/env bash
# issue3_final.sh — issue 3's closing measurements in one call on a 4-GPU machine: the backend's
# GPU test, plan measure of Llama-3.1-8B under FSDP2 (one process, and mpirun with one process
# per GPU) beside a real PyTorch FSDP2 step (bench/fsdp2_step.py, with its kernel profile and the
# caching allocator's peaks), and the MLA + MoE model DeepSeek-V2-Lite measured whole (EP 4).
# Logs and JSON under $OUT (default ./issue3-out), one tarball.
#
#   BIN=.carry/fin bash bench/issue3_final.sh
set -uo pipefail
OUT=${OUT:-issue3-out}
BIN=${BIN:-build/cli}
W=$(mktemp -d)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PLAN_DATA_DIR=$PWD/data OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONUNBUFFERED=1
PLAN=$BIN/plan
if ldd "$PLAN" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
MPI="mpirun -x NCCL_NVLS_ENABLE -x PLAN_DATA_DIR -x LD_LIBRARY_PATH --bind-to none"
log=$W/log.txt
say() { echo "=== $* ($(date +%T))" | tee -a "$log"; }
say "machine"; { nvidia-smi -L; ldd "$PLAN" | grep -E "mpi|nccl|not found"; } >>"$log" 2>&1
say "test_backend_gpu"
timeout 300 "$BIN/test_backend_gpu" >>"$log" 2>&1; echo "exit $?" >>"$log"
M8="measure --model 8b --system h200-x4 --framework fsdp2 --gpus 4 --gbs 4 --seq 4096"
for i in 1 2; do
  say "plan $M8 (one process, run $i)"
  timeout 200 "$PLAN" $M8 >"$W/fsdp2_1proc_$i.txt" 2>>"$log"; echo "exit $?" >>"$log"
  head -22 "$W/fsdp2_1proc_$i.txt" >>"$log"
done
say "mpirun -np 4 plan $M8"
timeout 200 $MPI -np 4 "$PLAN" $M8 --format json >"$W/fsdp2_4proc.json" 2>>"$log"; echo "exit $?" >>"$log"
say "PyTorch FSDP2 step"
timeout 300 torchrun --nproc_per_node 4 bench/fsdp2_step.py --kernels "$W/kernels.tsv" >"$W/fsdp2_torch.txt" 2>&1
echo "exit $?" >>"$log"; grep "fsdp2_step:" "$W/fsdp2_torch.txt" >>"$log"
say "plan measure deepseek-v2-lite EP 4 (mpirun, one process per GPU)"
timeout 240 $MPI -np 4 "$PLAN" measure --model deepseek-v2-lite --system h200-x4 --gpus 4 --ep 4 --gbs 8 >"$W/dsv2lite.txt" 2>>"$log"
echo "exit $?" >>"$log"; head -30 "$W/dsv2lite.txt" >>"$log"
say "done"
mkdir -p "$OUT"; tar czf "$OUT/issue3_final.tgz" -C "$W" .
cat "$log"
