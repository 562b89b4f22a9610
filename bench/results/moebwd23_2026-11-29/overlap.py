"""overlap.py TRACE.json.gz [...] — in a torch.profiler trace of a one-GPU FSDP2 step, each copy
longer than 50 us on a stream other than the compute stream (7: FSDP2's one-rank reduce-scatter,
a Memcpy DtoD), the compute-stream kernels that run during it and the longest of them, with its
grid. Helper moebwd23, 2026-11-29; the traces are host23's call1 (bench/results/host23_2026-11-29,
its README gives the command that re-creates them; not committed, 0.6-1.4 MB each)."""
import gzip
import json
import sys

for path in sys.argv[1:]:
    ev = json.load(gzip.open(path))["traceEvents"]
    k = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    streams = {}
    for e in k:
        streams.setdefault(e["args"].get("stream"), []).append(e)
    s7 = sorted(streams.get(7, []), key=lambda e: e["ts"])
    print("==", path.split("/")[-1], {s: len(v) for s, v in streams.items()})
    for s, v in streams.items():
        if s == 7:
            continue
        for c in sorted(v, key=lambda e: e["ts"]):
            if c["dur"] < 50:
                continue
            a, b = c["ts"], c["ts"] + c["dur"]
            ov = [e for e in s7 if e["ts"] < b and e["ts"] + e["dur"] > a]
            busy = sum(min(b, e["ts"] + e["dur"]) - max(a, e["ts"]) for e in ov)
            big = max(ov, key=lambda e: e["dur"]) if ov else None
            print("s%s %-30s %7.1f us | compute stream busy %7.1f us, %d kernels; longest %7.1f us %s grid %s"
                  % (s, c["name"][:30], c["dur"], busy, len(ov), big["dur"] if big else 0,
                     big["name"][:60] if big else "-", big["args"].get("grid") if big else "-"))
