"""FP8 GEMMs: the backend (`plan calibrate --ops gemm,gemm_fp8`, cuBLASLt, backend/bk_gemm.c)
against torch._scaled_mm on the same GPU and shapes, in one run (issue 16; target >= 0.97x).

Both sides: e4m3 operands with one fp32 scale each (tensorwise), bf16 result, fp32 accumulation
without fast accumulation (_scaled_mm's default use_fast_accum=False; the backend sets none), the
"TN" layout (A m x k and B n x k, both K-major: _scaled_mm gets B as the (k, n) column-major view
W.t()). Method as backend/bk_timing.c: random never-zero data (torch: uniform bf16 quantized by
its amax, so the e4m3 values span the format's range as the backend's fill does), 3 warm-up
launches, 3 launches sizing a repeat to >= 2 ms (1..200 launches), 7 repeats timed with CUDA
events, the median; operands rotate among copies covering 256 MiB (more than L2), as the backend
rotates them. Each torch result is checked against the fp32 product of its dequantized operands
(relative Frobenius error); the backend checks its own (the check_error column: sampled rows).

Rounds alternate the order (round 1: plan then torch; round 2: torch then plan; ...), so
neither side always runs on the hotter GPU. The shapes are the ones plan calibrate measures for
each --models model (QKV, attention out, MLP up and down at TP 1/2/4/8, 4096 tokens, and 8192^3).

Usage (on the GPU machine):
  python3 bench/fp8_backend.py --bin .carry/fp8bk --models 8b,70b --rounds 2 --out DIR
Writes DIR/calibrate_<model>_round<r>.csv (plan fit input), DIR/torch_round<r>.tsv,
DIR/fp8_backend_table.md and prints the table last.
"""
import argparse
import csv
import ctypes
import datetime
import os
import statistics
import subprocess
import sys

import torch

p = argparse.ArgumentParser()
p.add_argument("--bin", default="build/cli", help="directory holding plan and plan-gpu")
p.add_argument("--models", default="8b,70b")
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--min-repeat-s", type=float, default=2e-3)
p.add_argument("--out", default=".")
args = p.parse_args()
os.makedirs(args.out, exist_ok=True)

dev = torch.device("cuda", 0)
E4M3 = torch.float8_e4m3fn
E4M3_MAX = torch.finfo(E4M3).max


def log(msg):
    print(msg, flush=True)


def cublaslt_version():
    """cuBLASLt version torch has loaded (its own wheel's, or the system's)."""
    for line in open("/proc/self/maps"):
        if "libcublasLt" in line:
            path = line.split()[-1]
            try:
                return f"{ctypes.CDLL(path).cublasLtGetVersion()} ({path})"
            except OSError:
                return path
    return "?"


def plan_calibrate(model, rnd):
    path = os.path.join(args.out, f"calibrate_{model}_round{rnd}.csv")
    cmd = [os.path.join(args.bin, "plan"), "calibrate", "--ops", "gemm,gemm_fp8", "--model", model,
           "-o", path]
    log(f"# run: {' '.join(cmd)}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        sys.stdout.write(r.stderr[-4000:])
        raise SystemExit(f"plan calibrate failed with exit {r.returncode}")
    rows = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            rows[(row["op"], row["name"])] = row
    return rows


def rnd_bf16(*s):
    t = torch.empty(*s, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    return torch.where(t.abs() < 1 / 32, torch.full_like(t, 1 / 32), t)


def quant(x):
    amax = x.abs().amax().float()
    scale = E4M3_MAX / amax
    return (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3), (1.0 / scale).reshape(())


def torch_fp8(m, n, k):
    """Median seconds of one torch._scaled_mm of y[m,n] = x[m,k] w[n,k]^T, and its check error."""
    set_bytes = m * k + n * k + 2 * m * n
    nsets = min(8, (256 << 20) // set_bytes + 1)
    sets = []
    for _ in range(nsets):
        xq, xs = quant(rnd_bf16(m, k))
        wq, ws = quant(rnd_bf16(n, k))
        sets.append((xq, wq.t(), xs, ws, torch.empty(m, n, device=dev, dtype=torch.bfloat16)))
    # check: copy 0 against the fp32 product of its dequantized operands, output poisoned
    xq, bq, xs, ws, y = sets[0]
    y.fill_(150.0)
    try:  # into a preallocated output, as the backend writes its C
        torch._scaled_mm(xq, bq, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16, out=y)
        use_out = True
    except (TypeError, RuntimeError):
        y = torch._scaled_mm(xq, bq, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
        use_out = False
    ref = (xq.float() * xs) @ (bq.float() * ws)
    err = ((y.float() - ref).norm() / ref.norm()).item()
    i = [0]

    def launch():
        a, b, sa, sb, o = sets[i[0] % nsets]
        i[0] += 1
        if use_out:
            torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=o)
        else:
            torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    for _ in range(3):
        launch()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(3):
        launch()
    e1.record()
    torch.cuda.synchronize()
    one = max(e0.elapsed_time(e1) / 3e3, 1e-9)
    iters = max(1, min(200, int(args.min_repeat_s / one + 0.999)))
    times = []
    for _ in range(args.repeats):
        e0.record()
        for _ in range(iters):
            launch()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / iters)
    del sets
    torch.cuda.empty_cache()
    return statistics.median(times), (max(times) - min(times)) / statistics.median(times), err


def torch_round(shapes, rnd):
    out = {}
    path = os.path.join(args.out, f"torch_round{rnd}.tsv")
    with open(path, "w") as f:
        f.write("model\tname\tm\tn\tk\ttime_s\ttflops\tspread\trel_err\n")
        for (model, name), (m, n, k) in shapes.items():
            t, spread, err = torch_fp8(m, n, k)
            out[(model, name)] = (t, err)
            f.write(f"{model}\t{name}\t{m}\t{n}\t{k}\t{t:.6e}\t{2 * m * n * k / t / 1e12:.1f}\t"
                    f"{spread:.4f}\t{err:.3e}\n")
    log(f"# torch round {rnd}: {len(out)} shapes timed -> {path}")
    return out


log(f"# date {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
log(f"# device {torch.cuda.get_device_name(0)} sm {torch.cuda.get_device_capability(0)}")
torch.zeros(1, device=dev) @ torch.zeros(1, device=dev)  # load cuBLAS(Lt)
log(f"# torch {torch.__version__} cuda {torch.version.cuda} cublasLt {cublaslt_version()}")
log(f"# command python3 bench/fp8_backend.py {' '.join(sys.argv[1:])}")

models = args.models.split(",")
plan_res = {}   # round -> {(model, name): row}
torch_res = {}  # round -> {(model, name): (t, err)}
shapes = {}
for rnd in range(1, args.rounds + 1):
    order = ["plan", "torch"] if rnd % 2 == 1 else ["torch", "plan"]
    for side in order:
        if side == "plan":
            plan_res[rnd] = {}
            for model in models:
                for (op, name), row in plan_calibrate(model, rnd).items():
                    plan_res[rnd][(model, op, name)] = row
                    if op == "gemm_fp8":
                        shapes[(model, name)] = (int(row["m"]), int(row["n"]), int(row["k"]))
        else:
            if not shapes:  # round 1 runs plan first; this is for --rounds orders that do not
                raise SystemExit("no shapes yet")
            torch_res[rnd] = torch_round(shapes, rnd)

# table: per shape, the backend's and torch's TFLOP/s per round, the ratio per round and mean
lines = []
hdr = ("| model | shape | m | n | k | " +
       " | ".join(f"backend r{r} | torch r{r} | ratio r{r}" for r in range(1, args.rounds + 1)) +
       " | mean ratio | fp8/bf16 (backend) | check backend / torch |")
lines.append(hdr)
lines.append("|" + "---|" * (hdr.count("|") - 1))
ratios_all = []
worst_check = 0.0
seen = []
for (model, name), (m, n, k) in shapes.items():
    if (model, name) in seen or (name == "square8192" and model != models[0]):
        continue
    seen.append((model, name))
    flops = 2.0 * m * n * k
    cells, ratios, checks = [], [], []
    bf16 = []
    for r in range(1, args.rounds + 1):
        row = plan_res[r][(model, "gemm_fp8", name)]
        tb = float(row["time_s"])
        tt, terr = torch_res[r][(model, name)]
        ratios.append(tt / tb)
        checks.append((float(row["check_error"]), terr))
        cells.append(f"{flops / tb / 1e12:.1f} | {flops / tt / 1e12:.1f} | {tt / tb:.3f}")
        b = plan_res[r].get((model, "gemm", name))
        if b:
            bf16.append(float(b["time_s"]) / tb)
    mean = sum(ratios) / len(ratios)
    ratios_all.append(mean)
    cb = max(c[0] for c in checks)
    ct = max(c[1] for c in checks)
    worst_check = max(worst_check, cb)
    sp = f"{sum(bf16) / len(bf16):.2f}" if bf16 else "-"
    lines.append(f"| {model} | {name} | {m} | {n} | {k} | " + " | ".join(cells) +
                 f" | {mean:.3f} | {sp} | {cb:.1e} / {ct:.1e} |")
summary = (f"shapes {len(ratios_all)}; mean ratio backend/torch (torch time / backend time) "
           f"median {statistics.median(ratios_all):.3f}, min {min(ratios_all):.3f}, "
           f"max {max(ratios_all):.3f}; shapes below 0.97: "
           f"{sum(1 for r in ratios_all if r < 0.97)}; worst backend check {worst_check:.2e}")
table = "\n".join(lines) + "\n\n" + summary + "\n"
with open(os.path.join(args.out, "fp8_backend_table.md"), "w") as f:
    f.write(table)
log(table)
