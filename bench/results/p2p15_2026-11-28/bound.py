"""Tables of the p2p contention measurement (h200x2/p2p_*.json) and the most a contention term
could add to experiment C's H100 micro-batch (issue 15). Usage: python3 bound.py [folder]

The extension of the compute while a send of comm_s (alone) runs beside it, with the GEMM slowed
by sg and the send by sc, is comm_s * sc * (1 - 1/sg) when the send ends first: plan's own
overlap_contended (costmodel/overlap.h). Sends per micro-batch (2 x vpp), their time on
InfiniBand and experiment C's per-micro-batch time are plan's, as mlm14 reports them
(bench/results/mlm14_2026-11-28/README.md, section "Outcome" and its table)."""
import json
import os
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "h200x2")
rows = []
for lab in ("default", "ch2"):
    rows += json.load(open(os.path.join(d, f"p2p_{lab}.json")))["rows"]

print("| channels | GEMM m x n x k | MB a tensor | GEMM alone -> beside, ms | x | GEMM alone spread | "
      "exchange alone -> beside, ms | x |")
print("|---|---|---:|---|---:|---:|---|---:|")
for r in rows:
    print(f"| {r['label']} | {r['m']}x{r['n']}x{r['k']} | {r['bytes_per_tensor'] / 1e6:.1f} | "
          f"{r['gemm_alone_ms']:.3f} -> {r['gemm_beside_ms']:.3f} | {r['gemm_slowdown']:.3f} | "
          f"{100 * r['spread_gemm_alone']:.0f}% | {r['exchange_alone_ms']:.3f} -> "
          f"{r['exchange_beside_ms']:.3f} | {r['exchange_slowdown']:.2f} |")

worst_sg = max(r["gemm_slowdown"] for r in rows)
worst_sc = max(r["exchange_slowdown"] for r in rows)
ch2 = [r for r in rows if r["label"] == "ch2"]
ib = max(ch2, key=lambda r: r["gemm_slowdown"])
cases = [("worst pair, any rows", worst_sg, worst_sc),
         ("2 channels (an IB peer's share), worst GEMM", ib["gemm_slowdown"], ib["exchange_slowdown"])]
# name, sends per micro-batch, one send on IB (s), exp. C per micro-batch (s), implied (s) per release
h100 = [("70B TP4 PP8 VP5", 10, 0.75e-3, 148.6e-3, (157.6e-3, 152.8e-3)),
        ("405B TP8 PP8 CP2 VP8", 16, 0.37e-3, 184.4e-3, (213.9e-3, 194.5e-3))]
print()
print("| H100 row | case | sg | sc | added a micro-batch, ms | exp. C -> with term, ms | published implied, ms |")
print("|---|---|---:|---:|---:|---|---|")
for name, n, send_s, t_s, implied in h100:
    for cname, sg, sc in cases:
        add = n * send_s * sc * (1 - 1 / sg) if sg > 1 else 0.0
        print(f"| {name} | {cname} | {sg:.3f} | {sc:.2f} | {1e3 * add:.2f} | {1e3 * t_s:.1f} -> "
              f"{1e3 * (t_s + add):.1f} ({100 * add / t_s:+.2f}%) | "
              f"{' / '.join(f'{1e3 * x:.1f}' for x in implied)} |")
