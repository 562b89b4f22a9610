#!/usr/bin/env python3
"""replay_rows.py — the allocator replay (build/bench/reserved_replay) against each default-allocator
single-GPU run of the given results.jsonl files: peak reserved and peak allocated, measured
(torch.cuda peak_reserved_bytes / peak_allocated_bytes) and replayed, GiB. Runs of Qwen1.5-MoE,
Granite and SmolLM3 (replayed before replay25) are skipped. Standard library only; run from the
repository root after building. Usage: python3 replay_rows.py RESULTS.jsonl ..."""
import json,sys,subprocess
G=2**30
skip=("q15moe","granite","smol3")
for f in sys.argv[1:]:
    for line in open(f):
        r=json.loads(line)
        if r.get("oom") or any(k in r['label'] for k in skip): continue
        if r['env'].get('PYTORCH_CUDA_ALLOC_CONF'): continue
        mode=("eager" if r['attention']=="eager" else "hf")
        if r['grad_ckpt']: mode = "ckpt" if mode=="hf" else "eager-ckpt"
        out=subprocess.run(["build/bench/reserved_replay",r['config'],str(r['seq']),str(r['mbs']),str(r['layers']),mode],capture_output=True,text=True)
        o=out.stdout.strip().split()
        try:
            peak=float(o[o.index("peak")+1]); alloc=float(o[o.index("alloc")+1])
            ra=r['peak_allocated_bytes']/G; rr=r['peak_reserved_bytes']/G
            print(f"{r['label']:34s} resv meas {rr:7.2f} replay {peak:7.2f} ({(peak-rr)/rr*100:+5.1f}%)  alloc meas {ra:7.2f} replay {alloc:7.2f} ({(alloc-ra)/ra*100:+5.1f}%)")
        except Exception as e:
            print(r['label'], "not replayed:", out.stdout.strip()[-100:], out.stderr.strip()[-200:])
