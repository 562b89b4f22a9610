#!/usr/bin/env python3
"""Small text summary of reserved_growth.py's records (ccomp24): per spec the peaks, the phases'
allocated peaks and reserved ends, and every reservation (segment_alloc) of 100 MiB or more after
the build with the request that caused it. Usage: python3 summarize.py reserved_N.jsonl ..."""
import json
import sys

G = float(1 << 30)
M = float(1 << 20)
for fn in sys.argv[1:]:
    for line in open(fn):
        r = json.loads(line)
        print("== %s  (%s, torch %s, PYTORCH_CUDA_ALLOC_CONF=%r)" % (r["spec"], r["gpu"], r["torch"],
                                                                  r["alloc_conf"]))
        print("peak allocated %d B = %.2f GiB, peak reserved %d B = %.2f GiB" % (
            r["max_allocated_bytes"], r["max_allocated_bytes"] / G, r["max_reserved_bytes"],
            r["max_reserved_bytes"] / G))
        print("phase (marks: the phase named is the one that ended), allocated peak GiB, reserved at its end GiB:")
        for p in r["phases"]:
            print("  %-30s %7.2f %7.2f" % (p["phase"], p["allocated_peak_bytes"] / G,
                                         p["reserved_end_bytes"] / G))
        print("reservations >= 100 MiB after the build (phase, MiB, stream, reserved after GiB, "
              "allocated before the request GiB, request MiB, its owner):")
        for s in r["reservations"]:
            if s["phase"] == "(start)" or s["bytes"] < 100 * M or s["action"] != "segment_alloc":
                continue
            print("  %-24s %8.1f s%-4s %7.2f %7.2f %8.1f %s" % (
                s["phase"][:24], s["bytes"] / M, str(s.get("stream"))[-4:], s["reserved_after"] / G,
                s.get("allocated_before_request", 0) / G, s.get("request_bytes", 0) / M,
                s.get("request_owner", "").split("realruns/")[-1][:80]))
        print()
