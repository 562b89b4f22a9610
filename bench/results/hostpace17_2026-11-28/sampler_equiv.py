"""The folded NVML samplers (bench/realruns/nvml_sampler.py) against the copies before the fold
(commit c80482d): summary()/window() of both on the same random samples, key order included.
Run from the repository root: python3 bench/results/hostpace17_2026-11-28/sampler_equiv.py"""
import random, statistics, threading, time, subprocess, sys, types
sys.path.insert(0, "bench/realruns")
import nvml_sampler as new
old_gpm = subprocess.run(["git","show","c80482d:bench/gemm_power_mix.py"],capture_output=True,text=True).stdout
old_ns = subprocess.run(["git","show","c80482d:bench/realruns/nvml_sampler.py"],capture_output=True,text=True).stdout
# old gemm_power_mix's Sampler class source
a = old_gpm.index("class Sampler:"); b = old_gpm.index("def emit(rec):")
g = {"threading": threading, "time": time, "statistics": statistics, "NV": None}
exec(old_gpm[a:b], g)
OldInst = g["Sampler"]
h = {}
exec(compile(old_ns, "old_nvml_sampler", "exec"), h)
OldS = h["Sampler"]
random.seed(1)
def check(O, N, width):
    for trial in range(50):
        n = random.randint(0, 40)
        samples = []
        for i in range(n):
            row = [time.time() + i * 0.004] + [random.choice([None, random.uniform(100, 700)]), random.choice([None, random.randint(1000, 1980)])]
            if width == 5: row.append(random.choice([None, random.randint(30, 80)]))
            row.append(random.choice([None, random.randint(0, 255)]))
            samples.append(tuple(row))
        o, w = O.__new__(O), N.__new__(N)
        en = random.choice([(None, None), (1000, 400000)])
        for x in (o, w):
            x.samples = list(samples); x.t0 = samples[0][0] - 0.001 if samples else 0.0; x.t1 = x.t0 + 1.0
            x.e0, x.e1 = en
        so, sw = o.summary(), w.summary()
        assert list(so.items()) == list(sw.items()), (so, sw)
        if width == 4:
            assert o.window(o.t0, o.t0 + 0.05) == w.window(w.t0, w.t0 + 0.05)
check(OldInst, new.InstantSampler, 5)
check(OldS, new.Sampler, 4)
# the Nvml methods: same bodies
import inspect
ga = old_gpm.index("class Nvml:"); gb = old_gpm.index("NV = Nvml()")
cur = open("bench/realruns/nvml_sampler.py").read().replace(
    "    power_w = power_avg_w  # nvmlDeviceGetPowerUsage, the name Sampler uses\n\n", "")
print("gemm_power_mix's Nvml class verbatim in nvml_sampler.py (less the power_w alias):",
      old_gpm[ga:gb].strip() in cur)
print("summaries identical (key order included) for both samplers")
