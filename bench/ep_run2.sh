#!/bin/bash
# Second EP call (bench/results/ep_2026-11-27/README.md): on 2 x H100, repository root, results
# under $OUT. The ep2 grouped-GEMM row on the H100 kind it was first measured on (top-k routing
# and balanced routing, each with one profiled step), then 2-GPU runs of shapes the model was
# never compared with (FSDP2 HF Qwen3-4B; DTensor TP2 Qwen3-8B cut to 8 layers at mbs 2; 1F1B PP2
# of the same with 4 micro-batches; ring CP2 of Llama-3.2-3B cut to 8 layers at seq 16384).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/ep_out}
mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi topo -m; python3 -c 'import torch,sys; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; } > "$OUT/facts.txt" 2>&1
R=bench/realruns/parallel_run.py
J="--warmup 2 --steps 5 --out $OUT/results.jsonl"
run() { local t=$1; shift; echo "== $*" >> "$OUT/log.txt"; timeout $t torchrun --nproc_per_node 2 --master_port $((29500 + RANDOM % 400)) "$@" >> "$OUT/log.txt" 2>&1; echo "rc=$?" >> "$OUT/log.txt"; }
EP="--layout ep --ep 2 --experts grouped --config qwen3-30b-a3b --layers 4 --seq 4096 --mbs 1"
run 120 $R $EP --warmup 2 --steps 7 --out $OUT/results.jsonl --label ep2-grp-q3moeL4 --profile "$OUT/prof-ep2-topk-h100.json"
run 120 $R $EP --warmup 2 --steps 7 --out $OUT/results.jsonl --label ep2-grp-bal-q3moeL4 --route balanced --profile "$OUT/prof-ep2-bal-h100.json"
run 150 bench/realruns/realrun.py --config qwen3-4b --seq 4096 --mbs 1 $J --label fsdp-hf-q3-4b-ws2
run 120 $R --layout tp --tp 2 --config qwen3-8b --layers 8 --seq 4096 --mbs 2 $J --label tp2-q3-8bL8-b2
run 120 $R --layout pp --pp 2 --microbatches 4 --config qwen3-8b --layers 8 --seq 4096 --mbs 1 $J --label pp2-1f1b-q3-8bL8-m4
run 120 $R --layout cp --cp 2 --config llama-3.2-3b --layers 8 --seq 16384 --mbs 1 $J --label cp2-l3bL8-s16k
grep -h "^REALRUN" "$OUT/log.txt" | cut -c1-300
cd "$OUT" && tar czf traces.tgz prof-*.trace.json.gz 2>/dev/null && rm -f prof-*.trace.json.gz
ls -la "$OUT"
