#!/usr/bin/env bash
# Runs bench/p2p_wait_contention.py on 2 GPUs (one device call, from the folder holding bench/):
# first with NCCL's channels capped per process group (max_ctas default/32/16/8/2), then one run
# per environment setting (NCCL_MAX/MIN_NCHANNELS 8 and 2, NCCL_MAX_P2P_NCHANNELS 4,
# NCCL_NCHANNELS_PER_NET_PEER 2). Keeps each run's JSON, stdout, the NCCL INIT lines and versions in $OUT.
set -uo pipefail
out=${OUT:-/tmp/p2pwait}
mkdir -p "$out" /tmp/nccllog
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  nvidia-smi topo -m; } > "$out/versions.txt" 2>&1
run() {  # label, seconds, args for the script, then env assignments after --
  local l=$1 t=$2; shift 2
  local a=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done; [ $# -gt 0 ] && shift
  echo "=== $l $(date -u +%T) env: $*"
  env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE="/tmp/nccllog/$l.%p.log" "$@" \
    timeout "$t" torchrun --standalone --nproc_per_node 2 bench/p2p_wait_contention.py --label "$l" \
    -o "$out/$l.json" "${a[@]}" 2>&1 | grep -v "^W1\|OMP_NUM_THREADS\|^\*\*\*\*"
  echo "rc=${PIPESTATUS[0]} ($l)"
}
run main 75
run env_nch8 26 --configs default --workloads layer,fc1 -- NCCL_MAX_NCHANNELS=8 NCCL_MIN_NCHANNELS=8
run env_nch2 22 --configs default --workloads fc1 -- NCCL_MAX_NCHANNELS=2 NCCL_MIN_NCHANNELS=2
run env_p2p4 22 --configs default --workloads fc1 -- NCCL_MAX_P2P_NCHANNELS=4
run env_netpeer2 22 --configs default --workloads fc1 -- NCCL_NCHANNELS_PER_NET_PEER=2
grep -H "p2p channels\|maxCTAs\|NCCL_MAX\|NCCL_MIN\|NCHANNELS\|Init COMPLETE" /tmp/nccllog/*.log | sed 's|/tmp/nccllog/||' > "$out/nccl_info.txt"
