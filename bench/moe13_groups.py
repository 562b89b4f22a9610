#!/usr/bin/env python3
"""Per-group tables of two `test_published_blackwell -v` outputs (before, after): MoE rows'
signed error by system, by model and by dispatcher, and every MoE row that moved.

Usage: python3 bench/moe13_groups.py BEFORE.txt AFTER.txt [tests/data/published_megatron_bridge_blackwell.csv]
"""
import csv
import re
import statistics
import sys


def rows(path):
    out = {}
    for line in open(path):
        m = re.match(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+([+-]\d+\.\d)%", line)
        if m:
            out[m.group(1)] = (m.group(3), int(m.group(4)), int(m.group(5)), float(m.group(6)))
    return out


def main():
    before, after = rows(sys.argv[1]), rows(sys.argv[2])
    src = sys.argv[3] if len(sys.argv) > 3 else "tests/data/published_megatron_bridge_blackwell.csv"
    meta = {}
    for r in csv.DictReader(open(src)):
        if r["kind"] != "moe":
            continue
        d = re.search(r"--moe-dispatcher (\w+)", r["plan_args"])
        model = re.sub(r"^tests/data/hf/|\.json$", "", r["model"])
        meta[r["run_id"]] = (model, d.group(1) if d else "-")
    ids = [i for i in meta if i in before and i in after]
    groups = {}
    for i in ids:
        system = before[i][0]
        for key in (("system", system), ("model", meta[i][0]), ("dispatcher", meta[i][1])):
            groups.setdefault(key, []).append(i)
    print("| group | rows | median before | median after | range before | range after |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(groups) + [("all", "MoE")]:
        g = groups.get(key, ids)
        b = [before[i][3] for i in g]
        a = [after[i][3] for i in g]
        print(f"| {key[0]} {key[1]} | {len(g)} | {statistics.median(b):+.1f}% | "
              f"{statistics.median(a):+.1f}% | {min(b):+.1f}..{max(b):+.1f}% | "
              f"{min(a):+.1f}..{max(a):+.1f}% |")
    print()
    print("| run | system | dispatcher | published | before | after |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for i in ids:
        if before[i][2] != after[i][2]:
            print(f"| {i} | {before[i][0]} | {meta[i][1]} | {before[i][1]} | "
                  f"{before[i][2]} ({before[i][3]:+.1f}%) | {after[i][2]} ({after[i][3]:+.1f}%) |")


if __name__ == "__main__":
    main()
