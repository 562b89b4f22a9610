#!/usr/bin/env bash
# mpi_run.sh — issue 3's multi-process backend on one GPU machine: the same plans measured by one
# process driving every GPU and by mpirun-started processes (one per GPU, and two per node with
# two GPUs each), plus collectives through plan calibrate both ways, and bk_world's test under
# mpirun. Writes logs and JSON under $OUT.
#
# Usage on the GPU machine, from the repository root, with binaries built as backend/README.md
# says (static non-CUDA libraries, MPI shared) in BIN:
#   BIN=.carry/mpi bash bench/mpi_run.sh
set -uo pipefail
OUT=${OUT:-mpi-run-out}
BIN=${BIN:-build/cli}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PLAN_DATA_DIR=$PWD/data OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PLAN=$BIN/plan
log=$OUT/log.txt
MPI="mpirun -x NCCL_NVLS_ENABLE -x PLAN_DATA_DIR --bind-to none"
say() { echo "=== $* ($(date +%T))" | tee -a "$log"; }
if ldd "$PLAN" | grep -q "not found"; then
  libs=$(find /usr /opt /usr/local -name 'libcublas.so.13' -o -name 'libnccl.so.2' 2>/dev/null |
         xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:-}
fi
MPI="$MPI -x LD_LIBRARY_PATH"
say "machine"
{ nvidia-smi -L; mpirun --version | head -1; ldd "$PLAN" | grep -E "mpi|cublas|nccl|not found"; } >>"$log" 2>&1
say "test_world under mpirun -np 4"
timeout 60 $MPI -np 4 "$BIN/test_world" >>"$log" 2>&1; echo "exit $?" >>"$log"
run() { # name, then plan arguments
  local n=$1; shift
  say "$n: $*"
  timeout 240 "$@" --format json >"$OUT/$n.json" 2>>"$log"; echo "exit $?" >>"$log"
  python3 - "$OUT/$n.json" >>"$log" 2>&1 <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no JSON:", e); sys.exit()
m, p = d["measured"], d["predicted"]
pl = d.get("pipeline", {})
print(f"  device {d['device']}; step {m['step_s']:.4f} s (spread {100*m['step_spread']:.1f}%), "
      f"predicted {p['step_s']:.4f}; peak {m['peak_memory_bytes']/2**30:.2f} GiB; "
      f"compute {m['compute_s']:.4f}; dp {m['components_s'].get('dp', 0):.4f}; "
      f"bubble {pl.get('measured_bubble_s', 0):.4f}; pp check {pl.get('transfers_checked', '-')} transfers, {pl.get('transfer_wrong_bytes', '-')} wrong bytes")
PY
}
M8="--model 8b --system h200-x4 --seq 4096"
for rep in 1 2; do
  run fsdp2_1proc_$rep "$PLAN" measure $M8 --framework fsdp2 --gpus 4 --gbs 4
  run fsdp2_4proc_$rep $MPI -np 4 "$PLAN" measure $M8 --framework fsdp2 --gpus 4 --gbs 4
done
run fsdp2_2x2proc $MPI -np 2 "$PLAN" measure $M8 --framework fsdp2 --gpus 4 --gbs 4 --local-gpus 2
run tp2pp2_1proc "$PLAN" measure $M8 --gpus 4 --tp 2 --pp 2 --gbs 8
run tp2pp2_4proc $MPI -np 4 "$PLAN" measure $M8 --gpus 4 --tp 2 --pp 2 --gbs 8
run pp4_4proc $MPI -np 4 "$PLAN" measure $M8 --gpus 4 --pp 4 --gbs 8
run tp4_4proc $MPI -np 4 "$PLAN" measure $M8 --gpus 4 --tp 4 --gbs 4
say "oom under mpirun (405b fsdp2 on 4 GPUs must fail with exit 4 on every process)"
timeout 120 $MPI -np 4 "$PLAN" measure --model 405b --system h200-x4 --framework fsdp2 --gpus 4 --gbs 4 >>"$log" 2>&1; echo "exit $?" >>"$log"
for how in 1proc 4proc; do
  say "calibrate collectives ($how)"
  pre=""; [ $how = 4proc ] && pre="$MPI -np 4"
  timeout 200 $pre "$PLAN" calibrate --ops collectives --max-bytes 256M -o "$OUT/calibrate_$how.csv" >>"$log" 2>"$OUT/calibrate_$how.err"
  echo "exit $?" >>"$log"; tail -2 "$OUT/calibrate_$how.err" >>"$log"
done
say "done"
