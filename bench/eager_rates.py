#!/usr/bin/env python3
"""eager_rates.py — gpu.eager_elementwise_efficiency and _alone from the profiled kernel lists,
with the loss's log_softmax kernels out of both the bytes and the time.

Why: the two presets' rates price every eager elementwise kernel that has no rate of its own
(costmodel/elementwise.c elementwise_kernel_s). They were derived (bench/BACKEND.md "Eager
elementwise kernels") as the derived bytes over the profiled time of every eager kernel of a
Llama-3.1-8B step, the loss's cunn_SoftMaxForward / cunn_SoftMaxBackward included at 8 and 12
bytes a logit. Since loss22 (costmodel/softmax_rows.c) those two kernels are priced apart (16 bytes
a logit at gpu.softmax_rows_efficiency) wherever their rows exceed L2, as every vocabulary of these
steps does (128k x 4 B rows); kept in, they lowered the rate that the other kernels are priced at
(their 10.5 GB at 0.43-0.62 of peak: 4.2 ms of 13.2 in the one-GPU list). Taking them out makes
the rate the rate of the kernels it prices. Nothing else changes: the same kernel lists, the
same per-kernel bytes (bench/ew_classes.py's table, which reproduces BACKEND.md's totals).

Inputs (bench/results): fsdp2_kernels_8b_h200x4.tsv and patterns_fsdp2_kernels_8b_h200x4.tsv (one
real FSDP2 step of Llama-3.1-8B on 4 x H200, rank 0, seq 4096, micro-batch 1, profiled twice),
eager_kernels_2layers_h200.tsv (bench/eager_kernels.py --layers 2: the same eager kernels alone on
one H200). Peak 4.8 TB/s (the presets' hbm_bandwidth_bytes_per_s).

Usage: python3 bench/eager_rates.py [OUT.txt]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ew_classes  # noqa: E402  (the kernel table: regexes, classes, bytes)

PEAK = 4.8e12
LOSS = ("softmax_fwd", "softmax_bwd")  # the classes softmax_rows.c prices apart


def main():
    out = []
    res = {}
    for run, tsv, units in ew_classes.RUNS:
        rows = ew_classes.derive(tsv, units)
        b_all = sum(r[3] for r in rows)
        s_all = sum(r[4] for r in rows)
        loss = [r for r in rows if r[1] in LOSS]
        b_loss = sum(r[3] for r in loss)
        s_loss = sum(r[4] for r in loss)
        b, s = b_all - b_loss, s_all - s_loss
        res[run] = (b_all / s_all / PEAK, b / s / PEAK)
        out.append(f"{run} ({tsv}):")
        out.append(f"  all eager kernels      {b_all / 1e9:7.2f} GB in {s_all * 1e3:8.3f} ms ="
                   f" {b_all / s_all / 1e12:.3f} TB/s = {b_all / s_all / PEAK:.3f} of peak")
        for label, cls, calls, rb, rs in loss:
            out.append(f"  less {label:18s}{rb / 1e9:7.2f} GB in {rs * 1e3:8.3f} ms"
                       f" ({calls} launch{'es' if calls > 1 else ''})")
        out.append(f"  without the loss's log_softmax {b / 1e9:7.2f} GB in {s * 1e3:8.3f} ms ="
                   f" {b / s / 1e12:.3f} TB/s = {b / s / PEAK:.3f} of peak")
    step, rep, alone = (res["8b_step_h200x4"], res["8b_step_h200x4_repeat"],
                        res["2layers_alone_h200"])
    out.append("")
    out.append(f"gpu.eager_elementwise_efficiency (4-GPU step): {step[0]:.3f} -> {step[1]:.3f}"
               f" (repeat profile {rep[0]:.3f} -> {rep[1]:.3f})")
    out.append(f"gpu.eager_elementwise_efficiency_alone (one GPU): {alone[0]:.3f} -> {alone[1]:.3f}")
    out.append(f"ratio step / alone (the scale of the measured one-GPU rates beside NCCL):"
               f" {step[0] / alone[0]:.3f} -> {step[1] / alone[1]:.3f}")
    text = "\n".join(out) + "\n"
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            fh.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
