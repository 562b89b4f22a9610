#!/bin/bash
# frag18: the device command (one H200). C = the carried folder holding realrun.py, configs and frag_probe.py.
C=${C:-.carry/frag18}
R=$C/bench/realruns/realrun.py
P=$C/bench/results/frag18_2026-11-28/frag_probe.py
O=$OUT/probe.jsonl
export NCCL_NVLS_ENABLE=0 FRAG_OUT=$O
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
# 1. the 2026-11-24 H100 out-of-memory run on the H200, the allocator capped at what torch could
#    reserve on the H100: 85017493504 B total - 1397555200 B outside torch (its nonalloc_end_bytes)
FRAG_LABEL=q3-4b-s4k-b1-h100cap FRAG_LIMIT_BYTES=83619938304 timeout 28 python3 $P $R --config $C/bench/realruns/configs/qwen3-4b.json --seq 4096 --mbs 1 --warmup 2 --steps 1 --label q3-4b-s4k-b1-h100cap --out $OUT/runs.jsonl > $OUT/log1.txt 2>&1
# 2. the counterexample, the allocator capped at its measured peak allocated + 2 GiB
FRAG_LABEL=q3-0.6b-s8k-b4-cap2g FRAG_LIMIT_BYTES=$((133469475328 + 2147483648)) timeout 18 python3 $P $R --config $C/bench/realruns/configs/qwen3-0.6b.json --seq 8192 --mbs 4 --warmup 1 --steps 1 --label q3-0.6b-s8k-b4-cap2g --out $OUT/runs.jsonl > $OUT/log2.txt 2>&1
# 3. the counterexample as it ran (no cap)
FRAG_LABEL=q3-0.6b-s8k-b4 timeout 18 python3 $P $R --config $C/bench/realruns/configs/qwen3-0.6b.json --seq 8192 --mbs 4 --warmup 1 --steps 1 --label q3-0.6b-s8k-b4 --out $OUT/runs.jsonl > $OUT/log3.txt 2>&1
tail -c 3000 $OUT/log1.txt
cat $OUT/runs.jsonl | cut -c1-600
