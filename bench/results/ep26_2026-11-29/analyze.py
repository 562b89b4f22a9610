"""ep26: what the device call's files say (python3 analyze.py DIR, DIR holding counts_r*.json from
loop_counts_run.py, results.jsonl, probe.json from loop_shape_probe.py).

Per rank and MoE call (layer l, call k = 0.. over warm-up and timed steps): each local expert's
row count M, and the host time of its three forward GEMMs. A GEMM family's shape is new when the
process has not run that family at that M before (any layer, any expert). Prints, per step, the
share of new row counts, the share of experts whose count equals their own count one step back,
and the host time of x@w1 / x@w3 / h@w2 split by new and seen M; then the probe's figures.
"""
import glob
import json
import os
import statistics as st
import sys

D = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
for fn in sorted(glob.glob(os.path.join(D, "counts_r*.json"))):
    rec = json.load(open(fn))
    layers = max(r["layer"] for r in rec) + 1
    seen, prev = set(), {}
    by_step = {}
    t_new, t_seen, t_w3 = [], [], []
    for i, r in enumerate(rec):
        k = i // layers
        s = by_step.setdefault(k, {"n": 0, "new": 0, "same_as_prev": 0, "mm_new": [], "mm_seen": []})
        for e, (m, (a, b, c)) in enumerate(zip(r["counts"], r["mm_us"])):
            if m == 0:
                continue
            s["n"] += 1
            new = m not in seen
            s["new"] += new
            s["same_as_prev"] += prev.get((r["layer"], e)) == m
            prev[(r["layer"], e)] = m
            seen.add(m)
            (s["mm_new"] if new else s["mm_seen"]).append(a)
            (t_new if new else t_seen).append(a)
            t_w3.append(b)
    print("==", os.path.basename(fn), "layers", layers, "calls", len(rec))
    print("step  experts  new_share  same_as_prev  w1_us_new(med)  w1_us_seen(med)")
    for k, s in sorted(by_step.items()):
        print("%4d %8d %10.3f %13.3f %15s %16s" % (
            k, s["n"], s["new"] / s["n"], s["same_as_prev"] / s["n"],
            "%.1f" % st.median(s["mm_new"]) if s["mm_new"] else "-",
            "%.1f" % st.median(s["mm_seen"]) if s["mm_seen"] else "-"))
    print("x@w1 host us: new M median %.1f (n %d), seen M median %.1f (n %d); x@w3 (same shape as x@w1) %.1f"
          % (st.median(t_new), len(t_new), st.median(t_seen) if t_seen else float("nan"), len(t_seen),
             st.median(t_w3)))
    allc = [m for r in rec for m in r["counts"]]
    print("row counts: min %d median %d max %d, distinct %d of %d" % (
        min(allc), st.median(allc), max(allc), len(set(allc)), len(allc)))
for fn in glob.glob(os.path.join(D, "results.jsonl")):
    for ln in open(fn):
        r = json.loads(ln)
        print("run", r.get("label"), "step median %.4f" % r["step_s_median"], "steps", r.get("step_times_s"),
              "host probe", r.get("host_probe"))
p = os.path.join(D, "probe.json")
if os.path.exists(p):
    j = json.load(open(p))
    print(json.dumps({k: v for k, v in j.items() if k != "loop_layer"}, indent=1))

# loop_new_count_share.json: the run's share of new per-expert row counts per timed step on rank 0
# (the definition of prun_moe.py loop_tally / prun_measure.py loop_new_count_share_rank0, which the
# main tree's prun_measure.py of this device call did not have yet), with the command it belongs to
# (bench/realruns/mgpu_fidelity.py prices records of the same command with it)
if len(sys.argv) > 2 and sys.argv[2] == "--write":
    rec = json.load(open(os.path.join(D, "counts_r0.json")))
    run = json.loads(open(os.path.join(D, "results.jsonl")).readline())
    layers = max(r["layer"] for r in rec) + 1
    seen, per = set(), []
    for k in range(len(rec) // layers):
        new = n = 0
        for r in rec[k * layers:(k + 1) * layers]:
            for m in r["counts"]:
                if m:
                    n += 1
                    new += m not in seen
                    seen.add(m)
        if k >= run["warmup"]:
            per.append(round(new / n, 4))
    key = {f: run.get(f) for f in ("config", "layers", "seq", "mbs", "ep", "experts_impl", "route",
                                   "permute", "world_size", "warmup", "steps")}
    out = [{"command_key": key, "loop_new_count_share_rank0": per, "median": st.median(per),
            "measured_by": "bench/results/ep26_2026-11-29/device_run (%s, %s)" % (run["label"], run["date"])}]
    json.dump(out, open(os.path.join(HERE, "loop_new_count_share.json"), "w"), indent=1)
    print(json.dumps(out, indent=1))
