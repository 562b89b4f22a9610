"""rows.py BEFORE_DIR AFTER_DIR — every step row of the one-GPU fidelity_*.txt tables (ho23 files
skipped: held out), before and after, split into MoE rows (labels naming an MoE model) and dense;
median / mean |err|, median signed, within 5%. Helper moebwd23, 2026-11-29."""
import os
import re
import statistics as st
import sys

MOE = re.compile(r"dsv|mix22|q3-235b|deepseek|q3-?30|30b-a3b|a3b|oss|mixtral|glm|olmoe|moe|granite|phimoe|qwen2-?moe|q15moe", re.I)


def rows(d):
    out = {}
    for f in sorted(os.listdir(d)):
        if not (f.startswith("fidelity_") and f.endswith(".txt")) or "ho23" in f:
            continue
        for line in open(os.path.join(d, f)):
            m = re.match(r"^(\S+)\s+(h100|h200|b200|gb200|\S+)\s+(\S+)\s+([0-9.]+)\s+([0-9.]+)\s+([+-][0-9.]+)%", line)
            if m:
                out[(f, m.group(1))] = float(m.group(6))
    return out


def summ(xs):
    a = [abs(x) for x in xs]
    return "n=%3d median |err| %5.2f%%  mean %5.2f%%  median signed %+5.2f%%  within 5%%: %d" % (
        len(xs), st.median(a), st.mean(a), st.median(xs), sum(1 for x in a if x <= 5))


b, a = rows(sys.argv[1]), rows(sys.argv[2])
keys = [k for k in b if k in a]
for name, sel in (("all", lambda k: True), ("MoE", lambda k: MOE.search(k[1])),
                  ("dense", lambda k: not MOE.search(k[1]))):
    ks = [k for k in keys if sel(k)]
    print("%-5s before %s" % (name, summ([b[k] for k in ks])))
    print("%-5s after  %s" % (name, summ([a[k] for k in ks])))
print()
print("MoE rows (table, label, before, after):")
for k in keys:
    if MOE.search(k[1]):
        print("  %-26s %-34s %+6.1f%% %+6.1f%%" % (k[0], k[1], b[k], a[k]))
