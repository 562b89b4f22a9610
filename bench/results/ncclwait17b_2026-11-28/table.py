"""Table of bench/ncclwait_contention.py results (standard library only).

Usage: python3 table.py h200x2/ncclwait.jsonl > table.txt
For each channel setting: the CTAs (grid) of the waiting receive kernel (b) and of the moving
transfer (c), read from the profiled windows; each op's median time alone (a) and its ratio
beside a waiting receive (b) and beside a moving transfer (c); and, for comparison, what an
SM-share term sms / (sms - CTAs held) would give.
"""
import json
import sys

print("| setting | CTAs held (b / c) | op | alone ms | b: waiting recv | c: moving transfer | sms/(sms-CTAs b) |")
print("|---|---|---|---:|---:|---:|---:|")
with open(sys.argv[1]) as f:
    for line in f:
        rec = json.loads(line)
        meta, rows = rec["meta"], rec["rows"]
        nccl = [k for k in meta["kernels"] if k["name"].startswith("ncclDevKernel_SendRecv")]
        held_b = nccl[0]["grid"][0]
        held_c = nccl[1]["grid"][0] if len(nccl) > 1 else held_b  # deduplicated when equal
        sms = meta["sms"]
        by = {(r["cond"], r["op"]): r for r in rows}
        for op in dict.fromkeys(r["op"] for r in rows):
            a, b, c = by[("a", op)], by[("b", op)], by[("c", op)]
            print(f"| {meta['label']} | {held_b} / {held_c} | {op} | {a['ms']:.4f} | "
                  f"x{b['vs_alone']:.3f} | x{c['vs_alone']:.3f} | {sms / (sms - held_b):.3f} |")
        w = meta["window_ms_median"]
        print(f"| {meta['label']} | | whole window (ms) | {w['a']:.2f} | x{w['b'] / w['a']:.3f} | "
              f"x{w['c'] / w['a']:.3f} | |")
print()
print("Checks per setting: b's receive completes this long after the timed window (min over "
      "repeats; > 0: it waited through every op); c's transfer goes on this long after the "
      "window (min / median; 0.0: it ended inside the window)")
with open(sys.argv[1]) as f:
    for line in f:
        m = json.loads(line)["meta"]
        print(f"- {m['label']}: b +{m['b_recv_done_after_window_ms_min']:.1f} ms; c "
              f"+{m['c_recv_done_after_window_ms'][0]:.1f} / +{m['c_recv_done_after_window_ms'][1]:.1f} ms; "
              f"NCCL_MAX/MIN_NCHANNELS={m['env'].get('NCCL_MAX_NCHANNELS', '-')}; repeats "
              f"{m['args']['repeats']}; {m['gpu']}, {m['sms']} SMs, torch {m['torch']}, NCCL {m['nccl']}")
print()
print("Kernels of the profiled windows (first of each name/grid/stream):")
with open(sys.argv[1]) as f:
    for line in f:
        m = json.loads(line)["meta"]
        for k in m["kernels"]:
            if "nccl" in k["name"] or "nvjet" in k["name"] or "elementwise_kernel<8" in k["name"]:
                print(f"- {m['label']}: {k['name'][:60]} grid {k['grid']} block {k['block']} "
                      f"regs/thread {k['registers_per_thread']} smem {k['shared_memory']} B "
                      f"dur {k['dur_us']:.1f} us")
