#!/usr/bin/env python3
"""meas22's table (meas12's table.py, its run list widened): `plan measure` (LABEL.json files of
meas22_run.sh) against the real single-GPU H200 steps (make_runs.py's FILES) and against `plan estimate` of the
same layout (bench/realruns/fidelity.py's command, run here with --plan). error = (x - real) / real.
Memory: real = peak allocated + memory held outside the allocator (fidelity.py's measured figure);
plan measure's = total - free on the GPU after the steps (measured.peak_memory_bytes).

Usage: python3 table.py DIR [DIR2] [--plan build-bk/cli/plan] [--markdown]
  DIR2: a second measurement (after a change); its columns are added beside DIR's.
"""
import json
import lzma
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
GIB = float(1 << 30)
md = "--markdown" in sys.argv
plan = sys.argv[sys.argv.index("--plan") + 1] if "--plan" in sys.argv else os.path.join(
    ROOT, "build-bk", "cli", "plan")
dirs = [a for i, a in enumerate(sys.argv[1:], 1)
        if not a.startswith("--") and sys.argv[i - 1] != "--plan"]
sys.argv = ["fidelity.py", "--plan", plan]
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
import fidelity  # noqa: E402

FILES = [os.path.join(ROOT, p) for p in (
    "bench/realruns/results/h200-2026-11-24.jsonl",
    "bench/results/ho19_2026-11-29/results.jsonl",
    "bench/results/ho20_2026-11-29/results.jsonl",
    "bench/results/ho21_2026-11-29/results.jsonl")]
recs = [json.loads(ln) for fn in FILES for ln in open(fn) if ln.strip()]


def load(d, lab):
    """LABEL.json or LABEL.json.xz (the files kept in the repository are xz'd)."""
    for p, op in ((os.path.join(d, lab + ".json"), open),
                  (os.path.join(d, lab + ".json.xz"), lzma.open)):
        try:
            with op(p, "rt") as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
    return None


def err(x, m):
    return None if x is None or not m else (x - m) / m


rows = []
with tempfile.TemporaryDirectory() as tmp:
    for r in recs:
        if "error" in r or r.get("world_size", 1) != 1 or "H200" not in r["gpu"]:
            continue
        if r.get("oom") or r.get("precision") == "fp8":
            continue
        # only the runs measured in some DIR
        if not any(load(d, r["label"]) for d in dirs):
            continue
        a = fidelity.layout_args(r, fidelity.config_for(r, tmp), "h200")
        e = subprocess.run([plan] + a, capture_output=True, text=True,
                           env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
        est = json.loads(e.stdout) if e.stdout.strip().startswith("{") else None
        row = {"run": r["label"], "oom": bool(r.get("oom")), "real_s": r.get("step_s_median"),
               "real_b": r.get("measured_peak_bytes"),
               "est_s": est["time"]["step_s"] if est else None,
               "est_b": est["memory"]["total_bytes"] if est else None,
               "est_fits": bool(est["feasible"]) if est else None, "m": []}
        for d in dirs:
            j = load(d, r["label"])
            m = j.get("measured") if j else None
            row["m"].append({"s": m["step_s"] if m else None,
                             "u": m["step_unpaced_s"] if m else None,
                             "b": m["peak_memory_bytes"] if m else None})
        rows.append(row)

pct = lambda x: "" if x is None else "%+.1f%%" % (100 * x)  # noqa: E731
f4 = lambda x: "" if x is None else "%.4f" % x  # noqa: E731
gib = lambda x: "" if x is None else "%.1f" % (x / GIB)  # noqa: E731
hdr = ["run", "real s"]
for k, _ in enumerate(dirs):
    tag = "" if len(dirs) == 1 else (" before", " after")[min(k, 1)]
    hdr += ["measure%s s" % tag, "err"]
hdr += ["estimate s", "err", "real GiB"]
for k, _ in enumerate(dirs):
    tag = "" if len(dirs) == 1 else (" before", " after")[min(k, 1)]
    hdr += ["measure%s GiB" % tag, "err"]
hdr += ["estimate GiB", "err", "measure vs estimate (step)"]
out = []
for w in rows:
    if w["oom"]:
        continue
    c = [w["run"], f4(w["real_s"])]
    for m in w["m"]:
        c += [f4(m["s"]) or "not run", pct(err(m["s"], w["real_s"]))]
    c += [f4(w["est_s"]), pct(err(w["est_s"], w["real_s"])), gib(w["real_b"])]
    for m in w["m"]:
        c += [gib(m["b"]), pct(err(m["b"], w["real_b"]))]
    c += [gib(w["est_b"]), pct(err(w["est_b"], w["real_b"])),
          pct(err(w["m"][-1]["s"], w["est_s"])) if w["m"] else ""]
    out.append(c)
if md:
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for c in out:
        print("| " + " | ".join(c) + " |")
else:
    wid = [max(len(h), *(len(c[i]) for c in out)) for i, h in enumerate(hdr)]
    print("  ".join(h.rjust(wid[i]) for i, h in enumerate(hdr)))
    for c in out:
        print("  ".join(x.rjust(wid[i]) for i, x in enumerate(c)))
print()


def summary(name, xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return
    a = [abs(x) for x in xs]
    print("- %-34s n %2d  median |err| %5.1f%%  max |err| %5.1f%%  median signed %+5.1f%%  "
          "within 5%%: %d" % (name, len(a), 100 * statistics.median(a), 100 * max(a),
                              100 * statistics.median(xs), sum(1 for x in a if x <= 0.05)))


ran = [w for w in rows if not w["oom"]]
for k, d in enumerate(dirs):
    tag = os.path.basename(os.path.normpath(d))
    summary("step, plan measure (%s)" % tag, [err(w["m"][k]["s"], w["real_s"]) for w in ran])
    summary("step unpaced (%s)" % tag, [err(w["m"][k]["u"], w["real_s"]) for w in ran])
    summary("memory, plan measure (%s)" % tag, [err(w["m"][k]["b"], w["real_b"]) for w in ran])
    summary("step, measure vs estimate (%s)" % tag,
            [err(w["m"][k]["s"], w["est_s"]) for w in ran])
summary("step, plan estimate", [err(w["est_s"], w["real_s"]) for w in ran])
summary("memory, plan estimate", [err(w["est_b"], w["real_b"]) for w in ran])
ooms = [w for w in rows if w["oom"]]
if ooms:
    print("- out-of-memory runs: estimate says infeasible on %d of %d" % (
        sum(1 for w in ooms if w["est_fits"] is False), len(ooms)))
