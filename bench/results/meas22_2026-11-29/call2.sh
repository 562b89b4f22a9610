#!/bin/bash
# meas22 call 2: the real attention kernels (attn_probe.py) of every run, then the runs of
# runs2.tsv (meas22_run.sh, LIMIT seconds).
set -u
D=.carry/meas22
mkdir -p "$OUT/probe"
timeout 45 python3 "$D/attn_probe.py" "$D/attn_shapes.tsv" > "$OUT/probe/attn_probe.jsonl" 2> "$OUT/probe/attn_probe.err"
echo "probe rc $? $(wc -l < "$OUT/probe/attn_probe.jsonl") lines"; tail -3 "$OUT/probe/attn_probe.err"
python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> "$OUT/probe/attn_probe.err" 2>&1
cp "$D/runs2.tsv" "$D/runs.tsv"
D=$D LIMIT=${LIMIT:-40} bash "$D/meas22_run.sh"
