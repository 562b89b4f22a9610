#!/bin/bash
# fp8b19's one device call (bench/results/fp8b19_2026-11-29/README.md): the first run of
# bench/realruns/runs_fp8b19.txt (the tensorwise twin), then bench/fp8b19_probe.py (one compiled
# block bf16 / rowwise / tensorwise: time, saved tensors, kernels by kind), then the rest of the
# jobs file in order, each started only if DEADLINE (seconds of this script, default 230) leaves
# it RUN_S (default 48) seconds. From a carry folder holding ao.tgz (git archive v0.18.0 torchao of
# pytorch/ao, csrc left out) and bench/{fp8b19_probe.py,realruns/{realrun,native_llama,
# sac_policy}.py,realruns/configs,realruns/runs_fp8b19.txt}:   OUT=$OUT bash bench/fp8b19_run.sh
set -o pipefail
: "${OUT:?set OUT}"
DEADLINE=${DEADLINE:-230}
RUN_S=${RUN_S:-48}
mkdir -p /tmp/ao && tar -xzf ao.tgz -C /tmp || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 \
       PYTHONPATH=/tmp/ao FP8_TORCHAO_REF="torchao v0.18.0 source (5f2baf9), carried" \
       TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/nvidia-smi.txt"
run() {  # one line of the jobs file, by label, as driver.py runs it (own process, own port)
    local args left=$((DEADLINE - SECONDS))
    if [ "$left" -lt "$RUN_S" ]; then echo "fp8b19: skipped $1 (${left} s left)" | tee -a "$OUT/runs.log"; return; fi
    args=$(grep -- "--label $1 " bench/realruns/runs_fp8b19.txt) || return
    echo "===== $1 at ${SECONDS} s: $args" >> "$OUT/runs.log"
    MASTER_PORT=$((29600 + RANDOM % 300)) timeout "$left" python3 bench/realruns/realrun.py $args \
        --out "$OUT/results.jsonl" >> "$OUT/runs.log" 2>&1
    echo "fp8b19: $1 rc $? at ${SECONDS} s"; grep -h "\"label\": \"$1\"" "$OUT/results.jsonl" | \
        python3 -c 'import json,sys; [print(" step %.4f alloc %.2f GB err %s" % (r.get("step_s_median",0), r.get("peak_allocated_bytes",0)/1e9, r.get("error","")[:200])) for r in map(json.loads, sys.stdin)]'
}
run f8-l8b-L8-s8k-b1-tw
left=$((DEADLINE - SECONDS - 2 * RUN_S))
[ "$left" -gt 30 ] && timeout "$left" python3 bench/fp8b19_probe.py --out "$OUT/probe.json" 2>&1 | tee "$OUT/probe.log" | grep -v Warning | tail -20
echo "fp8b19: probe done at ${SECONDS} s"
for l in f8-q8b-L8-s4k-b2-rw f8-q8b-L8-s4k-b2-tw f8-l8b-L8-s8k-b2-ck-bf16 f8-l8b-L8-s8k-b2-ck-rw; do run $l; done
echo "fp8b19: done at ${SECONDS} s"
