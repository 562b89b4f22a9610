#!/usr/bin/env python3
"""Where the free bytes sit at torch.cuda's peak *reserved* under the DEFAULT caching allocator
(ccomp24; holes.py of ttmem21 is the expandable-segments form). Reads a trace that
bench/realruns/reserved_growth.py --dump wrote (one [action, addr, size, stream, phase, owner] a
line) and replays it: segment_alloc / segment_free move reserved, alloc / free_completed the live
blocks. Prints every segment_alloc with the request that caused it, then, at the first event of
the largest reserved (and at the largest allocated), each segment with its live and free bytes
and its free ranges of >= --min-mib with the owners that last lay there. Standard library only.

Usage: python3 segs.py trace.jsonl.gz [--min-mib 16]
"""
import argparse
import gzip
import json

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--min-mib", type=float, default=16)
ap.add_argument("--top", type=int, default=40)
args = ap.parse_args()
GIB = float(1 << 30)
MIB = float(1 << 20)
ev = [json.loads(l) for l in gzip.open(args.trace, "rt")]

res = alloc = 0
live = {}
best_res = best_alloc = (-1, -1)
print("segment_alloc / segment_free events (phase, MiB, stream, reserved after; request that follows):")
for k, (a, addr, size, stream, phase, own) in enumerate(ev):
    if a == "segment_alloc":
        res += size
        nxt = next((e for e in ev[k + 1:k + 50] if e[0] == "alloc"), None)
        print("  %-28s +%9.1f MiB s%-3s res %7.2f GiB alloc %7.2f GiB req %9.1f MiB %s" % (
            phase[:28], size / MIB, str(stream)[-3:], res / GIB, alloc / GIB,
            (nxt[2] if nxt else 0) / MIB, (nxt[5] if nxt else "")[-110:]))
    elif a == "segment_free":
        res -= size
        print("  %-28s -%9.1f MiB s%-3s res %7.2f GiB" % (phase[:28], size / MIB, str(stream)[-3:], res / GIB))
    elif a == "alloc":
        live[addr] = size
        alloc += size
    elif a == "free_completed" and addr in live:
        alloc -= live.pop(addr)
    if res > best_res[0]:
        best_res = (res, k)
    if alloc > best_alloc[0]:
        best_alloc = (alloc, k)


def report(stop, title):
    segs = {}   # addr -> (size, stream)
    live = {}   # addr -> (size, owner, phase)
    last = {}   # addr -> (size, owner, phase) last allocated there
    for k in range(stop + 1):
        a, addr, size, stream, phase, own = ev[k]
        if a == "segment_alloc":
            segs[addr] = (size, stream)
        elif a == "segment_free":
            segs.pop(addr, None)
        elif a == "alloc":
            live[addr] = (size, own, phase)
            last[addr] = (size, own, phase)
        elif a == "free_completed":
            live.pop(addr, None)
    tot_res = sum(s for s, _ in segs.values())
    tot_live = sum(v[0] for v in live.values())
    print("== %s: event %d (%s), reserved %.3f GiB, allocated %.3f GiB, free %.3f GiB in %d segments" % (
        title, stop, ev[stop][4], tot_res / GIB, tot_live / GIB, (tot_res - tot_live) / GIB, len(segs)))
    print("   the allocation at that event: %.1f MiB %s" % (ev[stop][2] / MIB, ev[stop][5][-120:]))
    rows = []
    la = sorted(last)
    import bisect
    for lo, (size, stream) in segs.items():
        hi = lo + size
        blocks = sorted((a, v[0]) for a, v in live.items() if lo <= a < hi)
        used = sum(s for _, s in blocks)
        holes, cur = [], lo
        for a, s in blocks:
            if a > cur:
                holes.append((cur, a))
            cur = max(cur, a + s)
        if cur < hi:
            holes.append((cur, hi))
        rows.append((size - used, lo, size, stream, used, len(blocks), holes))
    rows.sort(reverse=True)
    n_small = sum(1 for r in rows if r[2] <= 20 * MIB)
    print("   segments <= 20 MiB: %d, %.3f GiB reserved, %.3f GiB free" % (
        n_small, sum(r[2] for r in rows if r[2] <= 20 * MIB) / GIB,
        sum(r[0] for r in rows if r[2] <= 20 * MIB) / GIB))
    for free, lo, size, stream, used, nb, holes in rows[:args.top]:
        if free < args.min_mib * MIB:
            break
        print("  seg %8.1f MiB s%-3s live %8.1f MiB in %3d blocks, free %8.1f MiB" % (
            size / MIB, str(stream)[-3:], used / MIB, nb, free / MIB))
        for hlo, hhi in holes:
            if hhi - hlo < args.min_mib * MIB:
                continue
            i = bisect.bisect_left(la, hlo)
            owners = {}
            while i < len(la) and la[i] < hhi:
                sz, own, ph = last[la[i]]
                key = "%s [%s]" % (own[-100:], ph)
                owners[key] = owners.get(key, 0) + sz
                i += 1
            top = sorted(owners.items(), key=lambda x: -x[1])[:2]
            print("      hole %8.1f MiB at +%8.1f; last: %s" % ((hhi - hlo) / MIB, (hlo - lo) / MIB,
                  " ; ".join("%s %.0f MiB" % (o, b / MIB) for o, b in top)))


report(best_res[1], "peak reserved")
report(best_alloc[1], "peak allocated")
