#!/usr/bin/env python3
"""decompose.py — the default stream's peak reserved of each reserved_growth.py trace split by
when its segments were reserved (bench/results/resv20_2026-11-29/README.md). Standard library.
Usage: python3 decompose.py reserved.jsonl [../reserved19_2026-11-29/reserved_default.jsonl]"""
import json
import sys

G = float(1 << 30)
VOCAB = {"llama-3.2-1b": 128256, "llama-3.2-3b": 128256, "qwen2.5-1.5b": 151936,
         "qwen3-4b": 151936, "qwen3-30b-a3b": 151936}


def main():
    print("%-38s %6s %6s %6s %6s %6s %6s %6s %6s %6s %7s %7s %6s" % (
        "spec", "L4", "W", "fwd0", "bwd0", "opt0", "step1", "main", "side", "alloc1", "slack1",
        "S=8P", "res"))
    for fn in sys.argv[1:]:
        for ln in open(fn):
            r = json.loads(ln)
            if r.get("alloc_conf"):
                continue
            p = r["spec"].split(":")
            if fn.endswith("reserved_default.jsonl") and r["spec"] != "llama-3.2-3b:4096:2:0:ckpt":
                continue  # reserved19's later specs kept the previous model alive
            L4 = 4.0 * int(p[1]) * int(p[2]) * VOCAB[p[0]] / G
            main = {}
            side = 0
            for s in r["reservations"]:
                if s["action"] not in ("segment_alloc", "segment_map"):
                    continue
                if s.get("stream", 0) != 0:
                    side += s["bytes"]
                    continue
                ph = s["phase"]
                key = ("W" if ph == "(start)" else "fwd0" if ph == "step 0: zero_grad" else
                       "bwd0" if ph.startswith("step 0: forward") or ph.startswith("step 0: root") else
                       "opt0" if ph.startswith("step 0") else "step1")
                main[key] = main.get(key, 0) + s["bytes"]
            tot = sum(main.values())
            ph = {x["phase"]: x["allocated_peak_bytes"] for x in r.get("phases", [])}
            a1 = max([v for k, v in ph.items() if k.startswith("step 1: zero_grad") or
                      k.startswith("step 1: forward")] or [0])
            startp = ph.get("(start)", 0)
            print("%-38s %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6s %7s %7.2f %6.2f" % (
                r["spec"], L4, main.get("W", 0) / G, main.get("fwd0", 0) / G,
                main.get("bwd0", 0) / G, main.get("opt0", 0) / G, main.get("step1", 0) / G,
                tot / G, side / G, "%.2f" % (a1 / G) if a1 else "-",
                "%.2f" % ((tot + side - a1) / G) if a1 else "-", 2 * startp / G,
                r["max_reserved_bytes"] / G))


if __name__ == "__main__":
    main()
