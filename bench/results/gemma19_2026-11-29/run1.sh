#!/bin/bash
# gemma19 call 1: sources, SDPA probe at head dim 256, phase profiles, memory owners, d=256 sweep.
set -u
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
C=$(pwd)/.carry/gemma19
L=$OUT/log.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader; nproc; } > $OUT/machine.txt 2>&1
python3 - <<'PY' >> $OUT/machine.txt 2>&1
import torch, transformers, os, tarfile, io
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "transformers", transformers.__version__)
base = os.path.dirname(transformers.__file__)
fs = ["models/gemma2/modeling_gemma2.py", "models/gemma3/modeling_gemma3.py", "integrations/sdpa_attention.py",
      "masking_utils.py", "loss/loss_utils.py", "activations.py", "modeling_layers.py"]
with tarfile.open(os.environ["OUT"] + "/src.tgz", "w:gz") as t:
    for f in fs:
        t.add(os.path.join(base, f), arcname="transformers-%s/%s" % (transformers.__version__, f))
    import torch.nn.functional as F
    import inspect
    s = inspect.getsource(F.scaled_dot_product_attention) if False else ""
print("ok src")
PY
cd bench/realruns
timeout $(left 35) python3 $C/sdpa_probe.py $OUT/sdpa_probe.json 8:4:1:2048:256:512 2:16:8:6144:256:4096 1:4:1:16384:256:512 >> $L 2>&1
echo "probe done $(left 0)" >> $L
timeout $(left 115) python3 phase_profile.py --top 60 --trace-dir /tmp/tr --out $OUT/phases.json \
  --runs gemma-3-1b:2048:8,gemma-2-9b:6144:2:4 >> $L 2>&1
echo "phase done $(left 0)" >> $L
timeout $(left 160) torchrun --nproc_per_node 1 memory_peak_owners.py --out $OUT/owners.jsonl \
  --runs gemma-3-1b:2048:8,gemma-2-9b:6144:2:4 >> $L 2>&1
echo "owners done $(left 0)" >> $L
cd ../..
D=$(( $(left 185) - 12 ))
if [ $D -gt 5 ]; then
  timeout $(( D + 12 )) python3 bench/attention_sweep.py --out $OUT/attn256.jsonl --dims 256 --masks causal,window \
    --heads 8,16,32,64,128 --seqs 1024,2048,4096,8192,16384 --deadline $D >> $L 2>&1
fi
echo "sweep done $(left 0)" >> $L
tar czf $OUT/traces.tgz -C /tmp tr 2>/dev/null
echo "end $(left 0)" >> $L
