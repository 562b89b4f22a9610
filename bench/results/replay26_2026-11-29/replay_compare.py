#!/usr/bin/env python3
"""replay_compare.py BEFORE AFTER RESULTS.jsonl ... — the allocator replay of two builds of
build/bench/reserved_replay (BEFORE and AFTER, paths to the binaries) against each default-allocator,
one-GPU torch FSDP2 run of the given results files whose model is a Hugging Face MoE type, Falcon or
PhiMoE: peak reserved and peak allocated, measured (torch.cuda peak_reserved_bytes /
peak_allocated_bytes) and replayed, GiB, with (replay - measured) / measured. Standard library only;
run from the repository root. Labels starting ho26 are skipped (held out)."""
import json, subprocess, sys

G = 2**30
KEYS = ('moe', 'mixtral', 'granite', 'glm4', 'ernie', 'deepseek', 'gpt_oss', 'gpt-oss', 'qwen1.5',
        'olmoe', 'falcon')


def replay(binary, r, mode):
    o = subprocess.run([binary, r['config'], str(r['seq']), str(r['mbs']), str(r['layers']), mode],
                       capture_output=True, text=True).stdout.split()
    try:
        return float(o[o.index('peak') + 1]), float(o[o.index('alloc') + 1])
    except ValueError:
        return None


def main():
    before, after, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    seen = set()
    for f in files:
        for line in open(f):
            r = json.loads(line)
            if 'label' not in r or 'config' not in r: continue
            if r['label'].startswith('ho26') or r['label'] in seen: continue
            if r.get('oom') or r.get('env', {}).get('PYTORCH_CUDA_ALLOC_CONF'): continue
            if r.get('world_size', 1) != 1 or r.get('framework') != 'fsdp2': continue
            if r.get('peak_reserved_bytes') is None or r.get('error') or not r.get('step_s_median'):
                continue  # a failed run
            if not any(k in r.get('model_type', '') + r.get('config', '') for k in KEYS): continue
            seen.add(r['label'])
            mode = 'eager' if r['attention'] == 'eager' else 'hf'
            if r['grad_ckpt']: mode = 'ckpt' if mode == 'hf' else 'eager-ckpt'
            rr, ra = r['peak_reserved_bytes'] / G, r['peak_allocated_bytes'] / G
            out = [replay(b, r, mode) for b in (before, after)]
            cells = []
            for o in out:
                cells.append('not covered' if o is None else
                             f'{o[0]:7.2f} ({(o[0] - rr) / rr * 100:+5.1f}%) {o[1]:7.2f} ({(o[1] - ra) / ra * 100:+5.1f}%)')
            print(f"{r['label']:38s} meas {rr:7.2f} {ra:7.2f} | before {cells[0]:34s} | after {cells[1]}")


main()
