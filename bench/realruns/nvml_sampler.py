"""Board power and SM clock sampled through NVML (ctypes, no pynvml on the GPU machines) while a
piece of work runs: why a step's GEMMs and memory-bound kernels run at the rates they do depends
on the clock the power controller gives the step (costmodel/gemm_headroom.h). The one copy of
these NVML calls: bench/gemm_power_mix.py imports NV and InstantSampler from here (it held its own
copy before; the calls and the figures it writes are the same).
Usage: with Sampler() as s: work(); s.summary() -> dict; s.window(t0, t1) for a sub-interval.
InstantSampler: gemm_power_mix.py's figures (instant power, temperature, the clock-event reasons)."""
import ctypes
import os
import statistics
import threading
import time


class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


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

    def power_instant_w(self):
        fv = FieldValue(fieldId=186)  # NVML_FI_DEV_POWER_INSTANT
        r = self.lib.nvmlDeviceGetFieldValues(self.h, 1, ctypes.byref(fv))
        if r == 0 and fv.nvmlReturn == 0:
            return (fv.value & 0xFFFFFFFF) / 1000.0
        p = self._u("nvmlDeviceGetPowerUsage")
        return p / 1000.0 if p is not None else None

    def power_avg_w(self):
        p = self._u("nvmlDeviceGetPowerUsage")
        return p / 1000.0 if p is not None else None

    power_w = power_avg_w  # nvmlDeviceGetPowerUsage, the name Sampler uses

    def sm_clock(self):
        return self._u("nvmlDeviceGetClockInfo", 1)  # NVML_CLOCK_SM

    def mem_clock(self):
        return self._u("nvmlDeviceGetClockInfo", 2)  # NVML_CLOCK_MEM

    def max_sm_clock(self):
        return self._u("nvmlDeviceGetMaxClockInfo", 1)

    def temp(self):
        return self._u("nvmlDeviceGetTemperature", 0)

    def reasons(self):
        v = ctypes.c_ulonglong()
        r = self.lib.nvmlDeviceGetCurrentClocksThrottleReasons(self.h, ctypes.byref(v))
        return v.value if r == 0 else None

    def limit_w(self):
        p = self._u("nvmlDeviceGetEnforcedPowerLimit")
        return p / 1000.0 if p is not None else None


NV = Nvml()


class _Sampling:
    """A thread that appends self.read() every ~4 ms; board energy over the whole window."""

    def __init__(self):
        self.samples, self.stop = [], threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            if NV.ok:
                try:
                    self.samples.append(self.read())
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


class Sampler(_Sampling):
    """SM clock, power and clock-event reasons every ~4 ms; board energy over the whole window."""

    def read(self):
        return (time.time(), NV.power_w(), NV.sm_clock(), NV.reasons())

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


class InstantSampler(_Sampling):
    """Samples instant power, SM clock, temperature and clock-event reasons every ~4 ms
    (bench/gemm_power_mix.py's figures)."""

    def read(self):
        return (time.time(), NV.power_instant_w(), NV.sm_clock(), NV.temp(), NV.reasons())

    def summary(self):
        s = self.samples
        out = {"samples": len(s)}
        if self.e0 is not None and self.e1 is not None and self.t1 > self.t0:
            out["power_w_energy"] = round((self.e1 - self.e0) / 1000.0 / (self.t1 - self.t0), 1)
        if s:
            pw = [x[1] for x in s if x[1] is not None]
            ck = [x[2] for x in s if x[2] is not None]
            if pw:
                out["power_w_instant_median"] = round(statistics.median(pw), 1)
                out["power_w_instant_mean"] = round(statistics.fmean(pw), 1)
                out["power_w_instant_p90"] = round(sorted(pw)[int(0.9 * (len(pw) - 1))], 1)
            if ck:
                out["sm_clock_mhz_median"] = statistics.median(ck)
                out["sm_clock_mhz_mean"] = round(statistics.fmean(ck), 1)
                out["sm_clock_mhz_max"] = max(ck)
                out["sm_clock_mhz_min"] = min(ck)
            tp = [x[3] for x in s if x[3] is not None]
            if tp:
                out["temp_c_max"] = max(tp)
            rs = [x[4] for x in s if x[4] is not None]
            if rs:
                # 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake
                out["reason_sw_power_cap_frac"] = round(sum(1 for r in rs if r & 0x4) / len(rs), 3)
                out["reason_hw_slowdown_frac"] = round(sum(1 for r in rs if r & 0x8) / len(rs), 3)
                out["reason_thermal_frac"] = round(sum(1 for r in rs if r & 0x60) / len(rs), 3)
        return out
