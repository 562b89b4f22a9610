#!/usr/bin/env python3
"""bw21: throughput ratios of NVIDIA's own Megatron-Bridge runs that differ only in the system.

Reads Megatron-Bridge's docs/performance-summary.md and docs/performance-summary-archive.md (every
release's tables: pre-training, SFT, LoRA) and, for rows of one release, task, model and the same
published layout (GPUs, precision, GBS, MBS, sequence, FSDP, TP, PP, CP, VP, EP), prints the
tokens/s/GPU ratios GB300/GB200 and B300/B200 (same form factor, Blackwell Ultra over Blackwell)
and GB200/B200, GB300/B300 (same chip, NVL72 at 1200 / 1400 W over HGX at 1000 / 1100 W).
Usage: archive_pairs.py SUMMARY.md ARCHIVE.md, e.g. from a Megatron-Bridge clone at 4ab94dfad:
  git show 4ab94dfad:docs/performance-summary.md > s.md; git show 4ab94dfad:docs/performance-summary-archive.md > a.md"""
import collections, re, sys

rows = []
for fn in sys.argv[1:]:
    rel = task = model = None
    hdr = None
    for l in open(fn):
        if l.startswith('## '): rel = l.strip('# \n')
        elif l.startswith('### '): task = l.strip('# \n')
        elif l.startswith('#### '): model = l.strip('# \n').replace('Model: ', '')
        elif l.startswith('| System'): hdr = [c.strip() for c in l.strip().strip('|').split('|')]
        elif l.startswith('| DGX'):
            c = [x.strip() for x in l.strip().strip('|').split('|')]
            d = dict(zip(hdr, c)); d.update(rel=rel, task=task, model=model, src=fn)
            rows.append(d)
g = collections.defaultdict(dict)
keys = ['#-GPUs', 'Precision', 'GBS', 'MBS', 'Sequence Length', 'FSDP', 'TP', 'PP', 'CP', 'VP', 'EP']
for d in rows:
    tput = re.sub(r'[^0-9.]', '', d['Tokens / sec / GPU'].split('(')[0])
    if not tput: continue
    g[(d['rel'], d['task'], d['model']) + tuple(d.get(k, '') for k in keys)][d['System']] = float(tput)
pairs = (('DGX-GB300', 'DGX-GB200', 'Ultra/Blackwell, NVL72'), ('DGX-B300', 'DGX-B200', 'Ultra/Blackwell, HGX'),
         ('DGX-GB200', 'DGX-B200', 'NVL72/HGX, Blackwell'), ('DGX-GB300', 'DGX-B300', 'NVL72/HGX, Ultra'))
out = collections.defaultdict(list)
print(f"{'release':26s} {'task':22s} {'model':20s} {'layout (gpus prec gbs mbs seq fsdp tp pp cp vp ep)':52s} ratios")
for k, v in g.items():
    r = []
    for a, b, name in pairs:
        if a in v and b in v:
            r.append(f"{a[4:]}/{b[4:]} {v[a] / v[b]:.3f}")
            out[name].append((v[a] / v[b], k))
    if r:
        print(f"{k[0][:26]:26s} {k[1][:22]:22s} {k[2][:20]:20s} {' '.join(k[3:])[:52]:52s} {'; '.join(r)}")
print()
for name, v in out.items():
    s = sorted(x for x, _ in v)
    print(f"{name:24s} pairs {len(s):2d}  median {s[len(s) // 2]:.3f}  range {s[0]:.3f}..{s[-1]:.3f}")
