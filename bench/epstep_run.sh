#!/bin/bash
# Expert-parallel step call (branch epstep, bench/results/epstep_2026-11-27/README.md), 4 x H100,
# repository root, results under $OUT. Diagnostic part (one profiled step each, the rows the model
# is compared with): ep2 and ep4 grouped-GEMM Qwen3-30B-A3B cut to 4 layers (the mgpu rows
# ep2-grp-q3moeL4 / ep4-grp-q3moeL4) and the ep4 Python expert loop (row ep4-q3moeL4, first run on
# H200). Held-out part (not profiled, not used to derive anything): new EP shapes.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/ep_out}
B=${B:-bench/realruns}
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv;
  nvidia-smi topo -m; lscpu; nproc; free -g;
  python3 -c 'import torch,sys; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; } > "$OUT/facts.txt" 2>&1
R=$B/parallel_run.py
run() { local t=$1 n=$2; shift 2; echo "== $(date -u +%T) $*" >> "$OUT/log.txt";
        timeout $t torchrun --nproc_per_node $n --master_port $((29500 + RANDOM % 400)) "$@" >> "$OUT/log.txt" 2>&1;
        echo "rc=$?" >> "$OUT/log.txt"; }
Q="--config qwen3-30b-a3b --layers 4 --seq 4096 --mbs 1 --warmup 2 --steps 5 --out $OUT/results.jsonl"
# diagnostic, profiled
run 60 2 $R --layout ep --ep 2 --experts grouped $Q --label ep2-grp-q3moeL4 --profile "$OUT/prof-ep2-grp.json"
run 60 4 $R --layout ep --ep 4 --experts grouped $Q --label ep4-grp-q3moeL4 --profile "$OUT/prof-ep4-grp.json"
run 75 4 $R --layout ep --ep 4 --experts loop $Q --label ep4-loop-q3moeL4 --profile "$OUT/prof-ep4-loop.json"
(cd "$OUT" && tar czf traces.tgz prof-*.json* && rm -f prof-*.json*)
# held-out
H="--warmup 2 --steps 5 --out $OUT/heldout.jsonl"
run 60 4 $R --layout ep --ep 4 --experts grouped --config qwen3-30b-a3b --layers 4 --seq 8192 --mbs 1 $H --label ho-ep4-grp-q3moeL4-s8k
run 60 2 $R --layout ep --ep 2 --experts grouped --config qwen3-30b-a3b --layers 6 --seq 2048 --mbs 2 $H --label ho-ep2-grp-q3moeL6-s2k-b2
run 60 2 $R --layout ep --ep 2 --experts grouped --config mixtral-8x7b --layers 2 --seq 4096 --mbs 1 $H --label ho-ep2-grp-mixL2
run 60 4 $R --layout ep --ep 4 --experts loop --config qwen3-30b-a3b --layers 2 --seq 2048 --mbs 1 $H --label ho-ep4-loop-q3moeL2-s2k
run 60 4 $R --layout ep --ep 4 --experts grouped --config mixtral-8x7b --layers 2 --seq 4096 --mbs 2 $H --label ho-ep4-grp-mixL2-b2
grep -h "^REALRUN" "$OUT/log.txt" | cut -c1-200
ls -la "$OUT"
