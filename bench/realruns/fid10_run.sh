#!/bin/bash
# fid10 (2026-11-28): run-to-run spread of the two worst non-TP/CP/EP rows, on one 4 x H100 host
# (kind nvidia-h100-x4), one batched call. Run from the repository root on the GPU machine:
#   OUT=... bash bench/realruns/fid10_run.sh
# GPU 0: bench/realruns/realrun.py smol360m-s2k-b8 three times (10 timed steps) and the s4k-b4
#        twin (fidelity_1gpu.txt: -16.8% / -6.8%); GPU 1: step_profile.py of both shapes (GPU busy
#        vs wall); GPUs 2,3: parallel_run.py pp2 ZBV q25-15b m8 (ho8/p9 rows: 0.755 vs 0.839 s)
#        with 12 timed steps and --timeline, then one profiled step (host blocking calls).
#        These three groups run at the same time; then smol360m-s2k-b8 once more alone on GPU 0.
set -u
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=4
S=${SRC:-bench/realruns}
mkdir -p $OUT/r
{ date -u; nvidia-smi --query-gpu=index,name,power.limit,clocks.max.sm,driver_version --format=csv;
  lscpu | grep -i 'model name'; nproc;
  python3 -c 'import torch,transformers;print("torch",torch.__version__,"cuda",torch.version.cuda,"transformers",transformers.__version__,"nccl",torch.cuda.nccl.version())'; } > $OUT/r/facts.txt 2>&1
one() { CUDA_VISIBLE_DEVICES=0 timeout 60 python3 $S/realrun.py --out $OUT/r/h100.jsonl --warmup 3 --steps 10 "$@" >> $OUT/r/log-gpu0.txt 2>&1 || echo "failed: $*" >> $OUT/r/failed.txt; }
(
  one --label fid10-smol360m-s2k-b8-r1 --config smollm2-360m --seq 2048 --mbs 8
  one --label fid10-smol360m-s2k-b8-r2 --config smollm2-360m --seq 2048 --mbs 8
  one --label fid10-smol360m-s4k-b4-r1 --config smollm2-360m --seq 4096 --mbs 4
  one --label fid10-smol360m-s2k-b8-r3 --config smollm2-360m --seq 2048 --mbs 8
) &
( CUDA_VISIBLE_DEVICES=1 MASTER_PORT=29531 timeout 100 python3 $S/step_profile.py --out $OUT/r/profile-smol360m.json \
    --runs smollm2-360m:2048:8,smollm2-360m:4096:4 --top 30 > $OUT/r/log-gpu1.txt 2>&1 || echo "failed: profile" >> $OUT/r/failed.txt ) &
(
  pp() { CUDA_VISIBLE_DEVICES=2,3 timeout 90 torchrun --nproc_per_node 2 --master_port 29541 $S/parallel_run.py --layout pp --pp 2 --vpp 2 --schedule zbv \
        --microbatches 8 --config qwen2.5-1.5b --seq 4096 --mbs 1 --out $OUT/r/pp.jsonl "$@" >> $OUT/r/log-pp.txt 2>&1 || echo "failed: $*" >> $OUT/r/failed.txt; }
  pp --label fid10-pp2-zbv-q25-15b-m8 --warmup 3 --steps 12 --timeline
  pp --label fid10-pp2-zbv-q25-15b-m8-prof --warmup 3 --steps 3 --profile $OUT/r/prof-zbv.json
) &
wait
one --label fid10-smol360m-s2k-b8-alone --config smollm2-360m --seq 2048 --mbs 8
nvidia-smi --query-gpu=index,temperature.gpu,power.draw,clocks.sm --format=csv >> $OUT/r/facts.txt 2>&1
cd $OUT && tar czf fid10.tgz --exclude "*.trace.json.gz" r
