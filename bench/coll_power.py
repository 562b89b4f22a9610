#!/usr/bin/env python3
"""Board power, SM clock and GEMM rate while NCCL collectives run beside GEMMs, alone, or in the
GEMMs' gaps, on every GPU of one host (issue 14: the power of communication for the GEMM
headroom model, costmodel/gemm_headroom.h).

Why: the headroom model (bench/results/duty_2026-11-27) prices GEMMs faster when the rest of a
step draws less than the power cap, with idle at 121 W and memory-bound kernels at 410 W (H100).
A multi-GPU step also runs NCCL kernels: exposed (the GEMMs wait for them) and hidden (on their
own stream, beside the GEMMs). The model counted exposed communication as idle and hidden
communication as free, and multi-GPU rows got worse with the headroom on. This measures, with
every rank doing the same at the same time (barrier before each point):

  * alone: nothing queued; bf16 GEMMs back to back (4096 x 14336 x 4096, Llama-3.1-8B's MLP up
    projection at 4096 tokens); each collective back to back (all-gather bf16 256 MiB out,
    reduce-scatter fp32 512 MiB in (FSDP2's fp32 gradient reduce), all-reduce bf16 256 MiB,
    all-gather bf16 32 MiB out (a TP sequence-parallel gather at that shape));
  * beside: GEMM blocks back to back on the compute stream and the collective back to back on a
    side stream at the same time (hidden communication, both continuous);
  * in the gaps: GEMM blocks of about 5 ms alternating with (a) a GPU-side spin kernel (idle, a
    wait on another rank), (b) the collective on the compute stream (exposed communication), (c)
    the spin kernel with the collective beside on the side stream, at GEMM fractions ~0.6 / ~0.8.

Every GEMM block and every collective is timed with CUDA events; the GEMM rate is the median
over the blocks of the measured window (after a settle stretch of the same pattern), the bus
bandwidth nccl-tests' (all-gather / reduce-scatter (n-1)/n, all-reduce 2(n-1)/n). Power: NVML's
board energy counter over the window and instant power, SM clock and clock-event reasons sampled
every ~4 ms by a thread (NVML through ctypes; CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA device i is
NVML device i). Random N(0,1) data; the GEMM is checked against fp32 once and the collectives'
results checked once.

Usage (repository root, on the GPU machine):
  NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 4 bench/coll_power.py --out DIR [--measure-s 1.2] [--settle-s 0.5]
Writes DIR/points.jsonl (rank 0: one JSON line per point with every rank's figures and their
mean) and DIR/env.json.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import threading
import time

os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--measure-s", type=float, default=1.2)
ap.add_argument("--settle-s", type=float, default=0.5)
ap.add_argument("--block-ms", type=float, default=5.0, help="GEMM block length")
a = ap.parse_args()

LOCAL = int(os.environ.get("LOCAL_RANK", "0"))
RANK = int(os.environ.get("RANK", "0"))
WS = int(os.environ.get("WORLD_SIZE", "1"))
torch.cuda.set_device(LOCAL)
dev = torch.device("cuda", LOCAL)
torch.backends.cuda.matmul.allow_tf32 = False
dist.init_process_group("nccl", device_id=dev)
if RANK == 0:
    os.makedirs(a.out, exist_ok=True)


class Nvml:
    """The few NVML calls this needs (libnvidia-ml through ctypes; the machines have no pynvml)."""

    def __init__(self, idx):
        self.ok = False
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            assert self.lib.nvmlInit_v2() == 0
            self.h = ctypes.c_void_p()
            assert self.lib.nvmlDeviceGetHandleByIndex_v2(idx, ctypes.byref(self.h)) == 0
            self.ok = True
        except Exception as e:  # noqa: BLE001
            print("NVML unavailable:", e, flush=True)

    def _u(self, fn, *args):
        v = ctypes.c_uint()
        r = getattr(self.lib, fn)(self.h, *args, ctypes.byref(v))
        return v.value if r == 0 else None

    def energy_mj(self):
        v = ctypes.c_ulonglong()
        return v.value if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.h, ctypes.byref(v)) == 0 else None

    def power_w(self):
        p = self._u("nvmlDeviceGetPowerUsage")
        return p / 1000.0 if p is not None else None

    def sm_clock(self):
        return self._u("nvmlDeviceGetClockInfo", 1)

    def reasons(self):
        v = ctypes.c_ulonglong()
        r = self.lib.nvmlDeviceGetCurrentClocksThrottleReasons(self.h, ctypes.byref(v))
        return v.value if r == 0 else None

    def pci(self):
        buf = ctypes.create_string_buffer(96)
        # nvmlPciInfo_t starts with the 32-byte legacy bus id string
        r = self.lib.nvmlDeviceGetPciInfo_v3(self.h, buf)
        return buf.raw[:32].split(b"\0")[0].decode() if r == 0 else None


NV = Nvml(LOCAL)


class Sampler:
    def __init__(self):
        self.samples, self.stop = [], threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            try:
                self.samples.append((NV.power_w(), NV.sm_clock(), NV.reasons()))
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.004)

    def __enter__(self):
        self.e0, self.t0 = NV.energy_mj(), time.time()
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join()
        self.e1, self.t1 = NV.energy_mj(), time.time()

    def summary(self):
        out = {"samples": len(self.samples)}
        if self.e0 is not None and self.e1 is not None:
            out["power_w"] = round((self.e1 - self.e0) / 1000.0 / (self.t1 - self.t0), 1)
        pw = [x[0] for x in self.samples if x[0] is not None]
        ck = [x[1] for x in self.samples if x[1] is not None]
        rs = [x[2] for x in self.samples if x[2] is not None]
        if pw:
            out["power_w_sampled_median"] = round(statistics.median(pw), 1)
        if ck:
            out["sm_mhz_median"] = statistics.median(ck)
            out["sm_mhz_min"], out["sm_mhz_max"] = min(ck), max(ck)
        if rs:
            out["reason_sw_power_cap_frac"] = round(sum(1 for r in rs if r & 0x4) / len(rs), 3)
            out["reason_thermal_or_hw_frac"] = round(sum(1 for r in rs if r & 0x68) / len(rs), 3)
        return out


g = torch.Generator(device=dev).manual_seed(1000 + RANK)
M, N, K = 4096, 14336, 4096
GA = torch.randn(M, K, device=dev, dtype=torch.bfloat16, generator=g)
GB = torch.randn(K, N, device=dev, dtype=torch.bfloat16, generator=g)
GC = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
GEMM_FLOPS = 2.0 * M * N * K
MIB = 1 << 20
COLLS = {  # name: (kind, dtype, output (ag) / input (rs, ar) bytes)
    "ag256": ("ag", torch.bfloat16, 256 * MIB),
    "rs512f32": ("rs", torch.float32, 512 * MIB),
    "ar256": ("ar", torch.bfloat16, 256 * MIB),
    "ag32": ("ag", torch.bfloat16, 32 * MIB),
}
BUF = {}
for name, (kind, dt, nbytes) in COLLS.items():
    n = nbytes // torch.tensor([], dtype=dt).element_size()
    big = torch.randn(n, device=dev, dtype=dt, generator=g)
    small = torch.randn(n // WS, device=dev, dtype=dt, generator=g)
    BUF[name] = (big, small)


def coll(name):
    kind = COLLS[name][0]
    big, small = BUF[name]
    if kind == "ag":
        dist.all_gather_into_tensor(big, small)
    elif kind == "rs":
        dist.reduce_scatter_tensor(small, big)
    else:
        dist.all_reduce(big)


def busbw_factor(name):
    return 2.0 * (WS - 1) / WS if COLLS[name][0] == "ar" else (WS - 1) / WS


def gemm_block(k):
    for _ in range(k):
        torch.mm(GA, GB, out=GC)


def ev():
    return torch.cuda.Event(enable_timing=True)


cs = torch.cuda.Stream(device=dev)


def checks():
    """The GEMM against fp32 once; the all-reduce of ones and the all-gather's placement."""
    ref = (GA[:256].float() @ GB[:, :512].float())
    torch.mm(GA, GB, out=GC)
    rel = ((GC[:256, :512].float() - ref).norm() / ref.norm()).item()
    t = torch.ones(1024, device=dev)
    dist.all_reduce(t)
    x = torch.full((1024,), float(RANK), device=dev)
    y = torch.empty(1024 * WS, device=dev)
    dist.all_gather_into_tensor(y, x)
    ok = bool(t.eq(WS).all().item()) and all(bool(y[r * 1024:(r + 1) * 1024].eq(r).all().item()) for r in range(WS))
    return {"gemm_rel_err_vs_fp32": rel, "collectives_ok": ok}


def sleep_cycles_per_ms():
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    e0, e1 = ev(), ev()
    e0.record()
    torch.cuda._sleep(5_000_000)
    e1.record()
    torch.cuda.synchronize()
    return 5_000_000 / e0.elapsed_time(e1)


def run_point(label, rounds, gemm_k=0, main_coll=None, main_n=0, side_coll=None, side_n=0,
              sleep_cycles=0, settle_rounds=0, host_sleep_s=0.0):
    """One pattern repeated `rounds` times after `settle_rounds`: per round a GEMM block of gemm_k
    products (events), then on the compute stream either main_n collectives (exposed) or a spin
    kernel of sleep_cycles (idle); on the side stream side_n collectives (events) beside."""
    def one_round(rec):
        if gemm_k:
            e0, e1 = ev(), ev()
            e0.record()
            gemm_block(gemm_k)
            e1.record()
            if rec is not None:
                rec["g"].append((e0, e1))
        if main_n:
            e0, e1 = ev(), ev()
            e0.record()
            for _ in range(main_n):
                coll(main_coll)
            e1.record()
            if rec is not None:
                rec["m"].append((e0, e1))
        if sleep_cycles:
            e0, e1 = ev(), ev()
            e0.record()
            torch.cuda._sleep(int(sleep_cycles))
            e1.record()
            if rec is not None:
                rec["s"].append((e0, e1))
        if side_n:
            with torch.cuda.stream(cs):
                e0, e1 = ev(), ev()
                e0.record()
                for _ in range(side_n):
                    coll(side_coll)
                e1.record()
            if rec is not None:
                rec["c"].append((e0, e1))

    dist.barrier()
    torch.cuda.synchronize()
    for _ in range(settle_rounds):
        one_round(None)
    torch.cuda.synchronize()
    dist.barrier()
    rec = {"g": [], "m": [], "s": [], "c": []}
    w0, w1 = ev(), ev()
    with Sampler() as smp:
        w0.record()
        for _ in range(rounds):
            one_round(rec)
        if host_sleep_s:
            time.sleep(host_sleep_s)
        w1.record()
        torch.cuda.synchronize()
        torch.cuda.current_stream().wait_stream(cs)
        torch.cuda.synchronize()
    out = smp.summary()
    win_ms = w0.elapsed_time(w1)
    out["window_ms"] = round(win_ms, 2)
    if rec["g"]:
        gt = [x.elapsed_time(y) for x, y in rec["g"]]
        out["gemm_tflops_median"] = round(gemm_k * GEMM_FLOPS / (statistics.median(gt) * 1e-3) / 1e12, 1)
        out["gemm_block_ms_median"] = round(statistics.median(gt), 3)
        out["gemm_frac"] = round(sum(gt) / win_ms, 3) if not rec["c"] else round(sum(gt) / win_ms, 3)
    if rec["m"]:
        mt = [x.elapsed_time(y) for x, y in rec["m"]]
        nb = COLLS[main_coll][2]
        out["exposed_coll_ms_median"] = round(statistics.median(mt) / main_n, 3)
        out["exposed_coll_busbw_gbs"] = round(nb * busbw_factor(main_coll) / (statistics.median(mt) / main_n * 1e-3) / 1e9, 1)
        out["exposed_coll_frac"] = round(sum(mt) / win_ms, 3)
    if rec["s"]:
        st = [x.elapsed_time(y) for x, y in rec["s"]]
        out["idle_frac"] = round(sum(st) / win_ms, 3)
    if rec["c"]:
        ct = [x.elapsed_time(y) for x, y in rec["c"]]
        nb = COLLS[side_coll][2]
        out["side_coll_ms_median"] = round(statistics.median(ct) / side_n, 3)
        out["side_coll_busbw_gbs"] = round(nb * busbw_factor(side_coll) / (statistics.median(ct) / side_n * 1e-3) / 1e9, 1)
        out["side_coll_frac"] = round(sum(ct) / win_ms, 3)
    every = [None] * WS
    dist.all_gather_object(every, out)
    res = {"label": label, "gemm_k": gemm_k, "main_coll": main_coll, "main_n": main_n,
           "side_coll": side_coll, "side_n": side_n, "sleep_cycles": int(sleep_cycles),
           "rounds": rounds, "per_rank": every}
    mean = {}
    for key in every[0]:
        vals = [e.get(key) for e in every if isinstance(e.get(key), (int, float))]
        if len(vals) == len(every):
            mean[key] = round(statistics.fmean(vals), 3)
    res["mean"] = mean
    if RANK == 0:
        res["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(os.path.join(a.out, "points.jsonl"), "a") as f:
            f.write(json.dumps(res) + "\n")
        print("%-28s P %6.1f W  SM %6s MHz  gemm %7s TF/s (frac %5s)  coll %s" % (
            label, mean.get("power_w", -1), mean.get("sm_mhz_median", "-"), mean.get("gemm_tflops_median", "-"),
            mean.get("gemm_frac", "-"),
            {k: mean[k] for k in mean if "coll" in k or k == "idle_frac"}), flush=True)
    return res


def main():
    env = {"gpu": torch.cuda.get_device_name(dev), "world_size": WS, "torch": torch.__version__,
           "cuda": torch.version.cuda, "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
           "python": sys.version.split()[0], "nvml": NV.ok, "nvml_pci_rank0": NV.pci(),
           "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "CUDA_DEVICE_ORDER",
                                                   "TORCH_SYMM_MEM_DISABLE_MULTICAST")},
           "command": "torchrun --nproc_per_node %d " % WS + " ".join(sys.argv)}
    props = torch.cuda.get_device_properties(dev)
    env["cuda_pci_bus_id_rank0"] = "%04x:%02x:%02x" % (getattr(props, "pci_domain_id", 0),
                                                        getattr(props, "pci_bus_id", 0),
                                                        getattr(props, "pci_device_id", 0))
    try:
        env["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                                if ln.startswith("model name"))
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version,power.limit,clocks.max.sm",
             "--format=csv"], capture_output=True, text=True, timeout=20).stdout
    except Exception:  # noqa: BLE001
        pass
    env.update(checks())
    cpm = sleep_cycles_per_ms()
    env["sleep_cycles_per_ms"] = cpm
    # calibration: one GEMM and each collective alone, medians of 10 (rank 0's figures rule)
    torch.cuda.synchronize()
    gemm_block(3)
    e0, e1 = ev(), ev()
    e0.record()
    gemm_block(10)
    e1.record()
    torch.cuda.synchronize()
    t_gemm = e0.elapsed_time(e1) / 10
    t_coll = {}
    for name in COLLS:
        coll(name)
        torch.cuda.synchronize()
        dist.barrier()
        e0, e1 = ev(), ev()
        e0.record()
        for _ in range(10):
            coll(name)
        e1.record()
        torch.cuda.synchronize()
        t_coll[name] = e0.elapsed_time(e1) / 10
    cal = torch.tensor([t_gemm] + [t_coll[n] for n in COLLS], device=dev, dtype=torch.float64)
    dist.broadcast(cal, 0)
    t_gemm = float(cal[0])
    t_coll = {n: float(cal[i + 1]) for i, n in enumerate(COLLS)}
    env["calibration_ms"] = {"gemm": t_gemm, **t_coll}
    if RANK == 0:
        with open(os.path.join(a.out, "env.json"), "w") as f:
            json.dump(env, f, indent=1)
        print(json.dumps(env), flush=True)
    k = max(1, round(a.block_ms / t_gemm))
    blk = k * t_gemm

    def rounds_for(round_ms):
        return max(4, int(a.measure_s * 1000 / round_ms)), max(2, int(a.settle_s * 1000 / round_ms))

    # alone
    r, s = rounds_for(blk)
    run_point("idle_nothing_queued", 0, host_sleep_s=a.measure_s)
    run_point("gemm_alone", r, gemm_k=k, settle_rounds=s)
    for name in COLLS:
        n = max(1, round(blk / t_coll[name]))
        r, s = rounds_for(n * t_coll[name])
        run_point("coll_alone_" + name, r, main_coll=name, main_n=n, settle_rounds=s)
    # beside: both continuous, the side stream's share about one GEMM block per round
    for name in COLLS:
        n = max(1, round(blk / t_coll[name]))
        r, s = rounds_for(blk)
        run_point("gemm_beside_" + name, r, gemm_k=k, side_coll=name, side_n=n, settle_rounds=s)
    # in the gaps, GEMM fraction about 0.6 and 0.8
    for frac in (0.6, 0.8):
        gap_ms = blk * (1 - frac) / frac
        r, s = rounds_for(blk + gap_ms)
        tag = "%02d" % int(frac * 100)
        run_point("gemm%s_gap_idle" % tag, r, gemm_k=k, sleep_cycles=gap_ms * cpm, settle_rounds=s)
        for name in (("ag256", "rs512f32", "ar256") if frac == 0.6 else ("ag256", "rs512f32")):
            n = max(1, round(gap_ms / t_coll[name]))
            run_point("gemm%s_gap_exposed_%s" % (tag, name), r, gemm_k=k, main_coll=name, main_n=n,
                      settle_rounds=s)
        if frac == 0.6:
            for name in ("ag256", "rs512f32"):
                n = max(1, round(blk / t_coll[name]))
                run_point("gemm%s_gap_idle_beside_%s" % (tag, name), r, gemm_k=k, sleep_cycles=gap_ms * cpm,
                          side_coll=name, side_n=n, settle_rounds=s)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
