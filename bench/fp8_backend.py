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

--blockwise adds DeepSeek-V3's blockwise FP8 on both sides: the backend's gemm_fp8_blockwise rows
(cuBLASLt VEC128_32F x BLK128x128_32F, backend/bk_gemm.c) against torch.nn.functional.scaled_mm
with ScalingType.BlockWise1x128 (activation, scales [m, k/128] outer-dim-major) and
BlockWise128x128 (weight, scales [n/128, k/128] with k/128 padded to a multiple of 4, passed
transposed), PyTorch's own layout (test_matmul_cuda.py, test_scaled_mm_vs_emulated_block_wise);
the data: uniform bf16 quantized per block by the block's amax; each result checked against the
fp32 product of the dequantized operands. Table fp8_blockwise_table.md.

--group N interleaves the two sides per group of N shapes: each round runs, for each group of a
model's shapes, plan calibrate --shape ... of the group and torch on the same group (the order
alternating by round), so the two sides of a shape are timed seconds apart rather than a whole
model's sweep apart (on H200 the whole GPU's rate drifted by up to 15% between sweeps, both sides
alike: bench/results/fp8_backend_2026-11-27/h200_run4). The group CSVs are merged into
calibrate_<model>_round<r>.csv under the model's shape names.

--warmup-ms N runs each GEMM back to back for N ms before it is timed, on both sides (plan
calibrate --warmup-ms N; torch: launches in tens until N ms passed): the GPU's clocks come up
from the idle gap a process start or the other side's set-up leaves, which otherwise the first
shapes timed after the gap pay (bench/results/fp8h200_2026-11-27/README.md).

--timing host-ahead times the GPU's back-to-back work alone, on both sides (issue 16's short
shapes): plan calibrate --timing host-ahead holds the stream behind a gate kernel until the host
has issued the repeat's every launch (backend/bk_timing.h); torch queues torch.cuda._sleep long
enough for its host to issue the repeat's launches behind it (twice the probe's host time per
launch times the launches, plus 0.3 ms), checks by the GPU's own sleep time (an event before it)
that the host finished issuing first, and doubles the hold and redoes a repeat where it did not.
Either way each side's host seconds issuing one launch is recorded (torch: host_us column;
backend: the "host us" column of plan calibrate's table in the log). Default: loop.

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
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--bin", default="build/cli", help="directory holding plan and plan-gpu")
p.add_argument("--models", default="8b,70b")
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--min-repeat-s", type=float, default=2e-3)
p.add_argument("--out", default=".")
p.add_argument("--blockwise", action="store_true", help="also blockwise FP8 on both sides")
p.add_argument("--no-bf16", action="store_true", help="skip the backend's bf16 rows")
p.add_argument("--warmup-ms", type=int, default=0,
               help="run each GEMM back to back this long before timing it, on both sides "
                    "(plan calibrate --warmup-ms)")
p.add_argument("--timing", choices=["loop", "host-ahead"], default="loop",
               help="repeats timed around the host's launches (loop) or with the host ahead of "
                    "the GPU (host-ahead), on both sides")
p.add_argument("--group", type=int, default=0,
               help="interleave plan and torch per group of N shapes (0: per model sweep)")
p.add_argument("--shapes", default=None,
               help="file of 'model name m n k' lines: these shapes instead of plan calibrate's "
                    "for --models (needs --group; bench/fp8h18_shapes.py writes one)")
p.add_argument("--backend-blockwise", action="store_true",
               help="the backend's blockwise rows too (plan fit input), without torch's side")
p.add_argument("--deadline-s", type=float, default=0,
               help="--group: start no group after this many seconds; what ran is kept")
args = p.parse_args()
os.makedirs(args.out, exist_ok=True)
if args.shapes and not args.group:
    raise SystemExit("--shapes needs --group")
T0 = time.monotonic()

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


def calib_ops():
    return ("gemm_fp8" if args.no_bf16 else "gemm,gemm_fp8") + (
        ",gemm_fp8_blockwise" if args.blockwise or args.backend_blockwise else "")


def file_shapes():
    """--shapes: {model: [(name, m, n, k)]} in the file's order."""
    out = {}
    for line in open(args.shapes):
        f = line.split("#")[0].split()
        if not f:
            continue
        if len(f) != 5:
            raise SystemExit(f"{args.shapes}: want 'model name m n k', got: {line.strip()}")
        out.setdefault(f[0], []).append((f[1], int(f[2]), int(f[3]), int(f[4])))
    return out


def model_shapes(model):
    """plan calibrate's GEMM shapes of a model, in its order: [(name, m, n, k)] (no GPU)."""
    if args.shapes:
        return file_shapes()[model]
    cmd = [os.path.join(args.bin, "plan"), "calibrate", "--ops", "gemm_fp8", "--model", model,
           "--list"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == "gemm_fp8":
            dims = dict(x.split("=") for x in f[2:])
            out.append((f[1], int(dims["m"]), int(dims["n"]), int(dims["k"])))
    return out


def plan_calibrate_group(model, rnd, gi, group):
    """plan calibrate of one group of shapes (--shape each), rows keyed by the model's names."""
    path = os.path.join(args.out, f"calibrate_{model}_round{rnd}_g{gi}.csv")
    cmd = [os.path.join(args.bin, "plan"), "calibrate", "--ops", calib_ops(), "-o", path,
           "--timing", args.timing]
    if args.warmup_ms:
        cmd += ["--warmup-ms", str(args.warmup_ms)]
    for _, m, n, k in group:
        cmd += ["--shape", f"{m}x{n}x{k}"]
    log(f"# run: {' '.join(cmd)}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        sys.stdout.write(r.stderr[-4000:])
        raise SystemExit(f"plan calibrate failed with exit {r.returncode}")
    names = {f"{m}x{n}x{k}": name for name, m, n, k in group}
    rows = []
    with open(path) as f:
        rd = csv.DictReader(f)
        fields = rd.fieldnames
        for row in rd:
            row["name"] = names.get(row["name"], row["name"])
            rows.append(row)
    os.remove(path)
    return fields, rows


def plan_calibrate(model, rnd):
    path = os.path.join(args.out, f"calibrate_{model}_round{rnd}.csv")
    ops = calib_ops()
    cmd = [os.path.join(args.bin, "plan"), "calibrate", "--ops", ops, "--model", model, "-o", path,
           "--timing", args.timing]
    if args.warmup_ms:
        cmd += ["--warmup-ms", str(args.warmup_ms)]
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

    t, spread = time_launch(launch)
    del sets
    torch.cuda.empty_cache()
    return t, spread, err


BLOCK_API = {"how": None}
TSV_STARTED = {}  # round -> its torch_round<r>.tsv has its header (--group appends groups)


def quant_1x128(x):
    """e4m3 of x[r, k] per 1x128 block; scales [r, k/128] outer-dim-major (stride (1, r))."""
    r, k = x.shape
    xb = x.float().view(r, k // 128, 128)
    s = xb.abs().amax(-1) / E4M3_MAX
    q = (xb / s.unsqueeze(-1)).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3).view(r, k)
    return q, s.t().contiguous().t()


def quant_128x128(w):
    """e4m3 of w[n, k] per 128x128 block; scales [n/128, k/128]."""
    n, k = w.shape
    wb = w.float().view(n // 128, 128, k // 128, 128)
    s = wb.abs().amax(dim=(1, 3)) / E4M3_MAX
    q = (wb / s[:, None, :, None]).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3).view(n, k)
    return q, s


def block_call(xq, wq, xs, ws):
    """torch's blockwise scaled_mm of x[m,k] w[n,k]^T: the first calling convention that runs."""
    import torch.nn.functional as F
    kb = ws.shape[1]
    wpad = torch.nn.functional.pad(ws, (0, -kb % 4)) if kb % 4 else ws
    tries = []
    if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
        ST = F.ScalingType
        tries.append(("F.scaled_mm, 128x128 scales padded to 4 and transposed",
                      lambda: F.scaled_mm(xq, wq.t(), scale_a=xs, scale_recipe_a=ST.BlockWise1x128,
                                          scale_b=wpad.t(), scale_recipe_b=ST.BlockWise128x128,
                                          output_dtype=torch.bfloat16)))
        tries.append(("F.scaled_mm, 128x128 scales transposed",
                      lambda: F.scaled_mm(xq, wq.t(), scale_a=xs, scale_recipe_a=ST.BlockWise1x128,
                                          scale_b=ws.t(), scale_recipe_b=ST.BlockWise128x128,
                                          output_dtype=torch.bfloat16)))
    tries.append(("torch._scaled_mm, scales by shape",
                  lambda: torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws.t(),
                                           out_dtype=torch.bfloat16)))
    if BLOCK_API["how"] is not None:
        tries = [t for t in tries if t[0] == BLOCK_API["how"]]
    errors = []
    for name, fn in tries:
        try:
            y = fn()
            BLOCK_API["how"] = name
            return y, fn
        except Exception as e:  # noqa: BLE001 - every refusal is reported
            errors.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
    raise RuntimeError("; ".join(errors))


def torch_fp8_block(m, n, k):
    """Median seconds of torch's blockwise scaled_mm (1x128 x 128x128), and its check error."""
    set_bytes = m * k + n * k + 2 * m * n
    nsets = min(8, (256 << 20) // set_bytes + 1)
    sets = []
    for _ in range(nsets):
        xq, xs = quant_1x128(rnd_bf16(m, k))
        wq, ws = quant_128x128(rnd_bf16(n, k))
        sets.append((xq, wq, xs, ws))
    xq, wq, xs, ws = sets[0]
    y, _ = block_call(xq, wq, xs, ws)
    xd = (xq.float().view(m, k // 128, 128) * xs.unsqueeze(-1)).view(m, k)
    wd = (wq.float().view(n // 128, 128, k // 128, 128) * ws[:, None, :, None]).view(n, k)
    ref = xd @ wd.t()
    err = ((y.float() - ref).norm() / ref.norm()).item()
    del xd, wd, ref, y
    fns = [block_call(*st)[1] for st in sets]
    i = [0]

    def launch():
        fns[i[0] % nsets]()
        i[0] += 1

    t = time_launch(launch)
    del sets, fns
    torch.cuda.empty_cache()
    return t[0], t[1], err


def warm_up(launch):
    """--warmup-ms: launches back to back for that long (what plan calibrate --warmup-ms does)."""
    if args.warmup_ms <= 0:
        return
    t_end = time.monotonic() + args.warmup_ms / 1e3
    while time.monotonic() < t_end:
        for _ in range(10):
            launch()
        torch.cuda.synchronize()


HOST = {"s": 0.0, "redo": 0}  # the last time_launch's host seconds per launch; repeats redone
SLEEP_HZ = 2.0e9  # torch.cuda._sleep's cycles per second, taken high: a slower clock holds longer


def timed_repeat(launch, n, hold_s):
    """One repeat of n launches: (GPU seconds per launch, host seconds issuing one, host ahead).
    hold_s > 0 (--timing host-ahead): torch.cuda._sleep of that long queued first, so the
    host issues the launches while the GPU sleeps; host ahead when the GPU's sleep (an event
    before it to the start event) outlasted the host's issuing from the sleep's launch on."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ahead = True
    if hold_s > 0:
        ep = torch.cuda.Event(enable_timing=True)
        ep.record()
        h_sleep = time.perf_counter()
        torch.cuda._sleep(int(hold_s * SLEEP_HZ))
    e0.record()
    h0 = time.perf_counter()
    for _ in range(n):
        launch()
    h1 = time.perf_counter()
    e1.record()
    torch.cuda.synchronize()
    if hold_s > 0:
        ahead = ep.elapsed_time(e0) / 1e3 > h1 - h_sleep
    return e0.elapsed_time(e1) / 1e3 / n, (h1 - h0) / n, ahead


def time_launch(launch):
    """Warm-up, a probe sizing the repeats, the median of the repeats (method above), in the
    --timing mode; HOST["s"] gets the median host seconds per launch."""
    warm_up(launch)
    for _ in range(3):
        launch()
    ahead_mode = args.timing == "host-ahead"
    one, host, _ = timed_repeat(launch, 3, 1e-3 if ahead_mode else 0)
    one = max(one, 1e-9)
    iters = max(1, min(200, int(args.min_repeat_s / one + 0.999)))
    hold = 2 * host * iters + 3e-4 if ahead_mode else 0
    times, hosts = [], []
    for _ in range(args.repeats):
        for _attempt in range(4):
            t, h, ahead = timed_repeat(launch, iters, hold)
            if ahead:
                break
            hold *= 2
            HOST["redo"] += 1
        times.append(t)
        hosts.append(h)
    HOST["s"] = statistics.median(hosts)
    return statistics.median(times), (max(times) - min(times)) / statistics.median(times)


def torch_round(shapes, rnd, tag=None):
    out = {}
    path = os.path.join(args.out, f"torch_round{rnd}.tsv")
    first = tag is None or not os.path.exists(path) or TSV_STARTED.get(rnd) is None
    TSV_STARTED[rnd] = True
    with open(path, "w" if first else "a") as f:
        if first:
            f.write("model\tname\tm\tn\tk\ttime_s\ttflops\tspread\trel_err\thost_us\n")
        for (model, name), (m, n, k) in shapes.items():
            t, spread, err = torch_fp8(m, n, k)
            out[(model, name)] = (t, err)
            f.write(f"{model}\t{name}\t{m}\t{n}\t{k}\t{t:.6e}\t{2 * m * n * k / t / 1e12:.1f}\t"
                    f"{spread:.4f}\t{err:.3e}\t{HOST['s'] * 1e6:.2f}\n")
            if args.blockwise:
                try:
                    t, spread, err = torch_fp8_block(m, n, k)
                except RuntimeError as e:
                    log(f"# torch blockwise {model} {name}: refused: {e}")
                    continue
                out[(model, "blk:" + name)] = (t, err)
                f.write(f"{model}\tblk:{name}\t{m}\t{n}\t{k}\t{t:.6e}\t"
                        f"{2 * m * n * k / t / 1e12:.1f}\t{spread:.4f}\t{err:.3e}\t"
                        f"{HOST['s'] * 1e6:.2f}\n")
    log(f"# torch round {rnd}{' ' + tag if tag else ''}: {len(out)} GEMMs timed -> {path}; "
        f"--timing {args.timing}, host-ahead repeats redone so far {HOST['redo']}"
        + (f"; blockwise through {BLOCK_API['how']}" if args.blockwise else ""))
    return out


log(f"# date {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
log(f"# device {torch.cuda.get_device_name(0)} sm {torch.cuda.get_device_capability(0)}")
torch.zeros(1, device=dev) @ torch.zeros(1, device=dev)  # load cuBLAS(Lt)
log(f"# torch {torch.__version__} cuda {torch.version.cuda} cublasLt {cublaslt_version()}")
log(f"# command python3 bench/fp8_backend.py {' '.join(sys.argv[1:])}")

models = list(file_shapes()) if args.shapes else args.models.split(",")
plan_res = {}   # round -> {(model, name): row}
torch_res = {}  # round -> {(model, name): (t, err)}
shapes = {}


def grouped_rounds():
    """--group: per round, per model, per group of shapes: plan then torch (odd rounds) or torch
    then plan (even rounds) on the same shapes; each round's rows merged into one CSV per model."""
    lists, seen_dims = {}, set()
    for model in models:  # a shape two models share (8192^3) is timed with the first only
        lists[model] = [sh for sh in model_shapes(model) if sh[1:] not in seen_dims]
        seen_dims.update(sh[1:] for sh in lists[model])
    stopped = False
    for rnd in range(1, args.rounds + 1):
        plan_res[rnd], torch_res[rnd] = {}, {}
        for model in models:
            allrows, fields = [], None
            lst = lists[model]
            for gi in range(0, len(lst), args.group):
                if args.deadline_s and time.monotonic() - T0 > args.deadline_s:
                    if not stopped:
                        log(f"# --deadline-s {args.deadline_s:g} passed: round {rnd}, {model} "
                            f"stops before group {gi // args.group}; later groups not run")
                    stopped = True
                    break
                group = lst[gi:gi + args.group]
                sub = {(model, name): (m, n, k) for name, m, n, k in group}
                if rnd == 1:
                    shapes.update(sub)
                order = ["plan", "torch"] if rnd % 2 == 1 else ["torch", "plan"]
                for side in order:
                    if side == "plan":
                        fields, rows = plan_calibrate_group(model, rnd, gi // args.group, group)
                        allrows += rows
                        for row in rows:
                            plan_res[rnd][(model, row["op"], row["name"])] = row
                    else:
                        torch_res[rnd].update(torch_round(sub, rnd, tag=f"{model}_g{gi // args.group}"))
                # written after every group, so a run cut short keeps what it measured
                with open(os.path.join(args.out, f"calibrate_{model}_round{rnd}.csv"), "w",
                          newline="") as f:
                    w = csv.DictWriter(f, fieldnames=fields, quoting=csv.QUOTE_ALL)
                    w.writeheader()
                    w.writerows(allrows)


for rnd in range(1, args.rounds + 1 if not args.group else 0):
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

if args.group:
    grouped_rounds()

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
        row = plan_res.get(r, {}).get((model, "gemm_fp8", name))
        if row is None or (model, name) not in torch_res.get(r, {}):
            cells.append("- | - | -")  # not run (--deadline-s)
            continue
        tb = float(row["time_s"])
        tt, terr = torch_res[r][(model, name)]
        ratios.append(tt / tb)
        checks.append((float(row["check_error"]), terr))
        cells.append(f"{flops / tb / 1e12:.1f} | {flops / tt / 1e12:.1f} | {tt / tb:.3f}")
        b = plan_res[r].get((model, "gemm", name))
        if b:
            bf16.append(float(b["time_s"]) / tb)
    if not ratios:
        continue
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

if args.blockwise:
    # blockwise: backend vs torch per round, and blockwise over per-tensor (backend, same run)
    lines = []
    hdr = ("| model | shape | m | n | k | " +
           " | ".join(f"backend r{r} | torch r{r} | ratio r{r}" for r in range(1, args.rounds + 1)) +
           " | mean ratio | blockwise/per-tensor (backend) | check backend / torch |")
    lines.append(hdr)
    lines.append("|" + "---|" * (hdr.count("|") - 1))
    ratios_all, rel_all, worst = [], [], 0.0
    for (model, name) in seen:
        m, n, k = shapes[(model, name)]
        flops = 2.0 * m * n * k
        cells, ratios, rels, checks = [], [], [], []
        for r in range(1, args.rounds + 1):
            row = plan_res[r].get((model, "gemm_fp8_blockwise", name))
            tt = torch_res[r].get((model, "blk:" + name))
            if not row:
                cells.append("- | - | -")
                continue
            tb = float(row["time_s"])
            pt = float(plan_res[r][(model, "gemm_fp8", name)]["time_s"])
            rels.append(pt / tb)
            checks.append(float(row["check_error"]))
            if tt:
                ratios.append(tt[0] / tb)
                cells.append(f"{flops / tb / 1e12:.1f} | {flops / tt[0] / 1e12:.1f} | "
                             f"{tt[0] / tb:.3f}")
            else:
                cells.append(f"{flops / tb / 1e12:.1f} | - | -")
        mean = sum(ratios) / len(ratios) if ratios else float("nan")
        if ratios:
            ratios_all.append(mean)
        rel = sum(rels) / len(rels) if rels else float("nan")
        if rels:
            rel_all.append(rel)
        cb = max(checks) if checks else float("nan")
        worst = max(worst, cb) if checks else worst
        ct = max((torch_res[r][(model, "blk:" + name)][1] for r in range(1, args.rounds + 1)
                  if (model, "blk:" + name) in torch_res[r]), default=float("nan"))
        lines.append(f"| {model} | {name} | {m} | {n} | {k} | " + " | ".join(cells) +
                     f" | {mean:.3f} | {rel:.3f} | {cb:.1e} / {ct:.1e} |")
    summary = f"blockwise through torch: {BLOCK_API['how']}; "
    if ratios_all:
        summary += (f"shapes {len(ratios_all)}; mean ratio (torch time / backend time) median "
                    f"{statistics.median(ratios_all):.3f}, min {min(ratios_all):.3f}, max "
                    f"{max(ratios_all):.3f}; shapes below 0.97: "
                    f"{sum(1 for r in ratios_all if r < 0.97)}; ")
    if rel_all:
        summary += (f"backend blockwise/per-tensor rate median {statistics.median(rel_all):.3f} "
                    f"(min {min(rel_all):.3f}, max {max(rel_all):.3f}); ")
    summary += f"worst backend check {worst:.2e}"
    table = "\n".join(lines) + "\n\n" + summary + "\n"
    with open(os.path.join(args.out, "fp8_blockwise_table.md"), "w") as f:
        f.write(table)
    log(table)
