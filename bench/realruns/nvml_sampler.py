"""Board power and SM clock sampled through NVML (ctypes, no pynvml on the GPU machines) while a
piece of work runs: why a step's GEMMs and memory-bound kernels run at the rates they do depends
on the clock the power controller gives the step (costmodel/gemm_headroom.h). The same calls as
bench/gemm_power_mix.py's Nvml class (which cannot be imported: it parses arguments at import).
Usage: with Sampler() as s: work(); s.summary() -> dict; s.window(t0, t1) for a sub-interval."""
import ctypes
import os
import statistics
import threading
import time


class Nvml:
    def __init__(self):
        self.ok = False
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            assert self.lib.nvmlInit_v2() == 0
            self.h = ctypes.c_void_p()
            idx = int(os.environ.get("NVML_INDEX", "0"))
            assert self.lib.nvmlDeviceGetHandleByIndex_v2(idx, ctypes.byref(self.h)) == 0
            self.ok = True
        except Exception as e:  # noqa: BLE001
            print("NVML unavailable:", e)

    def _u(self, fn, *args):
        v = ctypes.c_uint()
        r = getattr(self.lib, fn)(self.h, *args, ctypes.byref(v))
        return v.value if r == 0 else None

    def energy_mj(self):
        v = ctypes.c_ulonglong()
        r = self.lib.nvmlDeviceGetTotalEnergyConsumption(self.h, ctypes.byref(v))
        return v.value if r == 0 else None

    def power_w(self):
        p = self._u("nvmlDeviceGetPowerUsage")
        return p / 1000.0 if p is not None else None

    def sm_clock(self):
        return self._u("nvmlDeviceGetClockInfo", 1)  # NVML_CLOCK_SM

    def reasons(self):
        v = ctypes.c_ulonglong()
        r = self.lib.nvmlDeviceGetCurrentClocksThrottleReasons(self.h, ctypes.byref(v))
        return v.value if r == 0 else None


NV = Nvml()


class Sampler:
    """SM clock, power and clock-event reasons every ~4 ms; board energy over the whole window."""

    def __init__(self):
        self.samples, self.stop = [], threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            if NV.ok:
                try:
                    self.samples.append((time.time(), NV.power_w(), NV.sm_clock(), NV.reasons()))
                except Exception:  # noqa: BLE001
                    pass
            time.sleep(0.004)

    def __enter__(self):
        self.e0, self.t0 = (NV.energy_mj() if NV.ok else None), time.time()
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join()
        self.e1, self.t1 = (NV.energy_mj() if NV.ok else None), time.time()

    def window(self, t0, t1):
        s = [x for x in self.samples if t0 <= x[0] <= t1]
        out = {"samples": len(s)}
        ck = [x[2] for x in s if x[2] is not None]
        pw = [x[1] for x in s if x[1] is not None]
        rs = [x[3] for x in s if x[3] is not None]
        if ck:
            out["sm_clock_mhz_median"] = statistics.median(ck)
            out["sm_clock_mhz_mean"] = round(statistics.fmean(ck), 1)
        if pw:
            out["power_w_median"] = round(statistics.median(pw), 1)
        if rs:
            out["reason_sw_power_cap_frac"] = round(sum(1 for r in rs if r & 0x4) / len(rs), 3)
        return out

    def summary(self):
        out = self.window(self.t0, self.t1)
        if self.e0 is not None and self.e1 is not None and self.t1 > self.t0:
            out["power_w_energy"] = round((self.e1 - self.e0) / 1000.0 / (self.t1 - self.t0), 1)
        return out
