#!/usr/bin/env python3
"""Where the free bytes sit at torch.cuda's peak *reserved* under expandable segments (ttmem21).

Reads a trace that bench/realruns/reserved_growth.py --dump wrote (one [action, addr, size,
stream, phase, owner] a line) and replays it: segment_map / segment_unmap move the mapped bytes
(reserved), alloc / free_completed the live blocks (allocated). At the event where reserved is
largest (the first such), and at the largest allocated, it prints per stream the mapped and live
bytes, and every free range (hole) of the mapped address space of 32 MiB or more with the owners
of the blocks that last lay in it. Also each segment_map with the request that caused it.
Standard library only.

Usage: python3 holes.py trace.jsonl.gz [--min-mib 32]
"""
import argparse
import bisect
import gzip
import json

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--min-mib", type=float, default=32)
ap.add_argument("--maps", action="store_true", help="list every segment_map after the first step")
args = ap.parse_args()
GIB = float(1 << 30)

ev = [json.loads(l) for l in gzip.open(args.trace, "rt")]


def state_at(stop):
    """mapped ranges and live blocks after event index `stop` (inclusive), and each address's
    last owner (an alloc's owner, kept after its free)."""
    mapped = {}   # stream -> list of [lo, hi)
    live = {}     # addr -> (size, stream, owner)
    last = {}     # addr -> (size, owner, phase) of the last block allocated there
    for k in range(stop + 1):
        a, addr, size, stream, phase, own = ev[k]
        if a == "segment_map":
            mapped.setdefault(stream, []).append([addr, addr + size])
        elif a == "segment_unmap":
            lst = mapped.get(stream, [])
            out = []
            for lo, hi in lst:  # cut [addr, addr+size) out
                if hi <= addr or lo >= addr + size:
                    out.append([lo, hi])
                else:
                    if lo < addr:
                        out.append([lo, addr])
                    if hi > addr + size:
                        out.append([addr + size, hi])
            mapped[stream] = out
        elif a == "alloc":
            live[addr] = (size, stream, own)
            last[addr] = (size, own, phase)
        elif a == "free_completed":
            live.pop(addr, None)
    return mapped, live, last


def merge(rs):
    rs = sorted(rs)
    out = []
    for lo, hi in rs:
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def report(k, title):
    mapped, live, last = state_at(k)
    print("== %s: event %d (%s), reserved %.2f GiB, allocated %.2f GiB" % (
        title, k, ev[k][4], sum(hi - lo for s in mapped.values() for lo, hi in s) / GIB,
        sum(v[0] for v in live.values()) / GIB))
    lastaddrs = sorted(last)
    for stream, rs in mapped.items():
        rs = merge(rs)
        res = sum(hi - lo for lo, hi in rs)
        blocks = sorted((a, v[0]) for a, v in live.items() if v[1] == stream)
        used = sum(s for _, s in blocks)
        print("  stream %s: mapped %.2f GiB in %d ranges, live %.2f GiB in %d blocks, free %.2f GiB"
              % (stream, res / GIB, len(rs), used / GIB, len(blocks), (res - used) / GIB))
        holes = []
        for lo, hi in rs:
            cur = lo
            for a, s in blocks:
                if a + s <= lo or a >= hi:
                    continue
                if a > cur:
                    holes.append((cur, a))
                cur = max(cur, a + s)
            if cur < hi:
                holes.append((cur, hi))
        big = [h for h in holes if h[1] - h[0] >= args.min_mib * (1 << 20)]
        small = sum(h[1] - h[0] for h in holes) - sum(h[1] - h[0] for h in big)
        print("    holes >= %.0f MiB: %d, %.2f GiB; smaller holes %.2f GiB" % (
            args.min_mib, len(big), sum(h[1] - h[0] for h in big) / GIB, small / GIB))
        base = rs[0][0] if rs else 0
        for lo, hi in big:
            i = bisect.bisect_left(lastaddrs, lo)
            owners = {}
            while i < len(lastaddrs) and lastaddrs[i] < hi:
                sz, own, ph = last[lastaddrs[i]]
                key = "%s [%s]" % (own, ph)
                owners[key] = owners.get(key, 0) + sz
                i += 1
            top = sorted(owners.items(), key=lambda x: -x[1])[:3]
            print("    hole at +%7.2f GiB: %6.3f GiB; last there: %s" % (
                (lo - base) / GIB, (hi - lo) / GIB,
                "; ".join("%s %.2f GiB" % (o[:90], b / GIB) for o, b in top)))
        # the live blocks above the last hole's start, largest first (who holds the top)
        if big:
            top_lo = big[-1][0]
            above = sorted(((s, live[a][2], a) for a, s in blocks if a >= top_lo), reverse=True)[:6]
            print("    live above the top hole: " + "; ".join(
                "%.2f GiB %s at +%.2f" % (s / GIB, o[:70], (a - base) / GIB) for s, o, a in above))


res = alloc = 0
live = {}
best_res = best_alloc = (-1, -1)
for k, (a, addr, size, stream, phase, own) in enumerate(ev):
    if a == "segment_map":
        res += size
    elif a == "segment_unmap":
        res -= size
    elif a == "alloc":
        live[addr] = size
        alloc += size
    elif a == "free_completed" and addr in live:
        alloc -= live.pop(addr)
    if res > best_res[0]:
        best_res = (res, k)
    if alloc > best_alloc[0]:
        best_alloc = (alloc, k)
if args.maps:
    print("segment_map events (phase, GiB, request owner):")
    for k, (a, addr, size, stream, phase, own) in enumerate(ev):
        if a == "segment_map" and not phase.startswith("(start)") and size > (64 << 20):
            nxt = next((e for e in ev[k + 1:k + 50] if e[0] == "alloc"), None)
            print("  %-32s %7.3f GiB stream %s req %.3f GiB %s" % (
                phase, size / GIB, stream, (nxt[2] if nxt else 0) / GIB, nxt[5] if nxt else ""))
report(best_res[1], "peak reserved")
report(best_alloc[1], "peak allocated")
