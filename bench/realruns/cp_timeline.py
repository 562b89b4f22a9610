"""Both ranks' host and GPU timelines of a real parallel_run.py step on one clock (cp16, issue 19).

Why: cp14 (bench/results/cp14_2026-11-28) found the PyTorch ring-CP rows' missing time in three
places (rare ~100 ms stalls at the ring's exchanges, a larger host time per block, noise) from
per-kind medians on rank 0. Telling a host cost from a per-exchange wait needs every call, on
both ranks, on one clock. This module (loaded by cp_ring_events.py when CP_EVENTS_TIMELINE=1)
records, per rank:
  - anchors: after every torch.cuda.synchronize() the GPU is idle, so a CUDA event recorded
    right then runs at the host's clock of that moment; every later event's GPU time is
    anchor host time + anchor.elapsed_time(event). time.perf_counter is CLOCK_MONOTONIC on
    Linux, one clock for every process of the host, so the ranks' timelines line up;
  - parallel_run's --host-split stamps (start, fwd<i>, fwd_end<i>, bwd<i>, logits, loss,
    backward_end, clip_end, opt_end), each with a CUDA event recorded at the stamp;
  - the ring's rotater calls (torch 2.11 _AllToAllRotater.exchange_buffers and next_buffer of
    torch/distributed/tensor/experimental/_context_parallel/_attention.py): an event before
    the exchange is issued, and events before and after next_buffer(), whose wait_tensor makes
    the compute stream wait for the collective: the GPU time between the two is that wait;
  - the ring calls and their SDPA calls (cp_ring_events.py's wrappers report here too);
  - Python's garbage collections (gc.callbacks): host start and stop, generation;
  - the CPU each mark ran on (sched_getcpu), every thread's CPU time at start and exit
    (/proc/self/task), the host's /proc/stat (steal time), for the host-speed question.
CP_EVENTS_PIN="cpus of rank 0;cpus of rank 1" pins each rank's threads to its CPUs.
CP_EVENTS_GC=off disables the collector after the imports (torchtitan's trainer does the same:
torchtitan/tools/utils.py GarbageCollection, "used to avoid stragglers in garbage collection").
At exit each rank writes $CP_EVENTS_OUT/timeline_rank<r>.json: anchors and entries
[kind, tag, host_s, gpu_s] (gpu_s null where no event), host and GPU on the shared clock.
"""
import ctypes
import gc
import json
import os
import threading
import time

import torch

try:
    _getcpu = ctypes.CDLL(None).sched_getcpu
except Exception:  # not glibc
    def _getcpu():
        return -1

TL = []        # (kind, tag, host_s, event or None, anchor index[, cpu])
ANCHORS = []   # (host_s, event)
GCS = []       # (phase, generation, host_s)
CTX = {"ring": ""}  # the ring call in progress (ring.fwd / ring.bwd) for the rotater entries
LOCK = threading.Lock()


def ev():
    return torch.cuda.Event(enable_timing=True)


def mark(kind, tag="", event=True):
    """A timeline entry now: host clock and (event=True) a CUDA event on the current stream."""
    e = None
    if event:
        e = ev()
        e.record()
    t = time.perf_counter()
    with LOCK:
        TL.append((kind, tag, t, e, len(ANCHORS) - 1, _getcpu()))


def wrap_rotater(R):
    """An event before each exchange is issued and around each next_buffer() (its wait)."""
    _xb, _nb = R.exchange_buffers, R.next_buffer

    def exchange_buffers(self, buf):
        mark("x", CTX["ring"])
        return _xb(self, buf)

    def next_buffer(self):
        mark("wpre", CTX["ring"])
        r = _nb(self)
        mark("wpost", CTX["ring"])
        return r
    R.exchange_buffers, R.next_buffer = exchange_buffers, next_buffer


def threads():
    """Every thread of this process: name, user + system CPU seconds, the CPU it last ran on
    (/proc/self/task/<tid>/stat fields 2, 14, 15, 39)."""
    out = {}
    hz = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            st = open("/proc/self/task/%s/stat" % tid).read()
        except OSError:
            continue
        name = st[st.index("(") + 1:st.rindex(")")]
        f = st[st.rindex(")") + 2:].split()
        out[tid] = [name, (int(f[11]) + int(f[12])) / hz, int(f[36])]
    return out


def cpu_stat():
    """The host's /proc/stat cpu line (user nice system idle iowait irq softirq steal, ticks)."""
    return [int(x) for x in open("/proc/stat").readline().split()[1:]]


SNAP = {}


def pin():
    """CP_EVENTS_PIN="cpus of rank 0;cpus of rank 1;..." (comma lists): this process's threads
    on those CPUs only (threads made later inherit it)."""
    spec = os.environ.get("CP_EVENTS_PIN")
    if not spec:
        return None
    rank = int(os.environ.get("RANK", 0))
    cpus = {int(c) for c in spec.split(";")[rank].split(",") if c}
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass
    return sorted(cpus)


def install(prun_measure):
    SNAP["pinned"] = pin()
    SNAP["threads_start"], SNAP["stat_start"] = threads(), cpu_stat()
    _sync = torch.cuda.synchronize

    def synchronize(*a, **k):
        r = _sync(*a, **k)
        e = ev()
        e.record()
        with LOCK:
            ANCHORS.append((time.perf_counter(), e))
        return r
    torch.cuda.synchronize = synchronize

    class Stamps(list):
        """parallel_run's STAMPS list: every append is also a timeline entry with an event."""
        def append(self, x):
            list.append(self, x)
            mark("stamp", x[0])
    prun_measure.STAMPS = Stamps()

    import torch.distributed.tensor.experimental._context_parallel._attention as A
    for name in ("_AllToAllRotater", "_AllGatherRotater"):
        R = getattr(A, name, None)
        if R is None:
            print("CPEV timeline: no %s in %s" % (name, A.__file__), flush=True)
            continue
        wrap_rotater(R)

    def on_gc(phase, info):
        GCS.append((phase, info.get("generation"), time.perf_counter()))
    gc.callbacks.append(on_gc)
    if os.environ.get("CP_EVENTS_GC") == "off":
        gc.collect()
        gc.disable()


def dump(rank):
    out = {"rank": rank, "clock": str(time.get_clock_info("perf_counter")),
           "gc_enabled": gc.isenabled(), "anchors_host_s": [a[0] for a in ANCHORS],
           "gc": GCS, "entries": [], "pinned": SNAP.get("pinned"),
           "threads_start": SNAP.get("threads_start"), "threads_end": threads(),
           "stat_start": SNAP.get("stat_start"), "stat_end": cpu_stat()}
    for x in TL:
        kind, tag, t, e, ai = x[:5]
        g = None
        if e is not None and ai >= 0:
            h0, e0 = ANCHORS[ai]
            g = h0 + e0.elapsed_time(e) / 1e3
        out["entries"].append([kind, tag, round(t, 7), None if g is None else round(g, 7)] + list(x[5:]))
    d = os.environ.get("CP_EVENTS_OUT", ".")
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, "timeline_rank%d.json.tmp" % rank)
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, os.path.join(d, "timeline_rank%d.json" % rank))
