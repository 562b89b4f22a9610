#!/usr/bin/env python3
"""Predicted vs measured, for every real run in bench/realruns/results/*.jsonl (issue 14's table).

For each run line (bench/realruns/realrun.py wrote it on a GPU machine) this runs the C planner's
`plan estimate` for the same model and layout: the run's config.json (cut to the run's layer count
when the run was cut), the system preset of the run's GPU (h100 / h200), --framework fsdp2, --gpus
equal to the run's world size, --seq, --mbs and --gbs = mbs x world size (one micro-batch per
step), --recompute full when the run checkpointed every layer, --attention unfused for a run
with transformers' eager attention (realrun.py --attn eager; flash otherwise), JSON output; an FP8 run
(realrun.py --fp8) as --framework torchtitan --precision fp8 --fp8-recipe RECIPE. It prints one row per
run and the medians and maxima of the errors, with the sign convention of the project:
error = (predicted - measured) / measured.

  measured step    median of the run's timed steps (wall time between CUDA syncs)
  measured memory  peak allocated + the bytes the process holds outside the allocator at the end
                   (CUDA context, NCCL, loaded kernels, library workspaces): what issue 14 defines
                   memory.total_bytes to be
  reserved         the run's peak reserved (torch.cuda reserved_bytes.all.peak) + the same bytes
                   outside the allocator, against plan's memory.reserved_bytes + framework_bytes
                   (column res_err; its summary line "reserved")
  feasible         measured: the run did not go out of memory; predicted: plan's "feasible"

A run the planner cannot express is listed as not expressible, with why (a planner without
--impl / --compile cannot express the native PyTorch implementation and torch.compile; the
script looks for those flags, and --optimizer-impl, in `plan estimate --help` and passes the
run's implementation, compile flag and AdamW path once they exist). Standard library only; no torch. Nothing here fits or corrects
anything: it reports.

Usage: python3 bench/realruns/fidelity.py [results.jsonl ...] [--plan build/cli/plan]
           [--format table|json] [--simulate]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from native_config import native_config  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GIB = float(1 << 30)

ap = argparse.ArgumentParser()
ap.add_argument("results", nargs="*", help="default: bench/realruns/results/*.jsonl")
ap.add_argument("--plan", default=os.path.join(ROOT, "build", "cli", "plan"))
ap.add_argument("--format", choices=("table", "json"), default="table")
ap.add_argument("--simulate", action="store_true", help="also show the step simulator's figure")
args = ap.parse_args()


def run_plan(argv):
    """Runs plan; if the binary is missing (the build is being redone) waits and retries."""
    for attempt in range(6):
        if os.path.exists(args.plan):
            r = subprocess.run([args.plan] + argv, capture_output=True, text=True,
                               env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
            return r
        if attempt < 5:
            print("fidelity: %s not there (being rebuilt?); waiting 60 s" % args.plan, file=sys.stderr)
            time.sleep(60)
    sys.exit("fidelity: no planner binary at %s" % args.plan)


HELP = run_plan(["estimate", "--help"])
HELP = HELP.stdout + HELP.stderr
HAS = {f: (f in HELP) for f in ("--impl", "--hold-logits", "--compile", "--optimizer-impl", "--compile-components",
                                  "--no-cuda-graphs", "--fp8-recipe",
                                  "--no-expandable-segments", "--attention")}

SYSTEMS = (("H200", "h200"), ("H100", "h100"))


def system_of(gpu):
    for key, name in SYSTEMS:
        if key in (gpu or ""):
            return name
    return None


# realrun.py's native step kept its bf16 logits in a local through loss.backward() until commit
# 7caf997 (2026-11-28 07:00:10 UTC), which deletes them first as torchtitan's trainer does
# (torchtitan/trainer.py:795 at b5bcd76): the runs before it are priced with --hold-logits.
HOLD_LOGITS_UNTIL = "2026-11-28T07:00:10Z"


def held_logits(rec):
    return rec.get("impl") == "native" and rec.get("date", "9") < HOLD_LOGITS_UNTIL


def layout_args(rec, cfgfile, system):
    w = rec.get("world_size", 1)
    # realrun.py --sac op is torchtitan's per-op selective checkpointing policy (its help, and
    # costmodel/recipe_recompute.c titan_sac_recomputes): plan's fsdp2 path has only full|none,
    # its torchtitan framework prices that policy as --recompute selective (at one rank the two
    # frameworks price the same step otherwise)
    sac = rec.get("sac") == "op" and not rec.get("grad_ckpt")
    recompute = "full" if rec.get("grad_ckpt") else ("selective" if sac else "none")
    # realrun.py --fp8 (2026-11-29 on): torchao float8 set up as torchtitan's converter does it
    # (realrun.py fp8_convert): priced as torchtitan's float8 with the run's recipe, output layer
    # bf16 as plan keeps it; at one rank fsdp2 and torchtitan price the same step otherwise
    fp8 = rec.get("precision") == "fp8" and rec.get("fp8_recipe")
    a = ["estimate", "--model", cfgfile, "--system", system,
         "--framework", "torchtitan" if (sac or fp8) else "fsdp2",
         "--gpus", str(w), "--seq", str(rec["seq"]), "--mbs", str(rec["mbs"]),
         "--gbs", str(rec["mbs"] * w), "--recompute", recompute,
         "--format", "json"]
    if HAS["--impl"]:
        a += ["--impl", rec.get("impl", "hf")]
    if HAS["--compile"] and rec.get("compile"):
        a += ["--compile"]
        # realrun.py compiles the loss only with --compile-loss (compile_loss in the record)
        if HAS["--compile-components"]:
            a += ["--compile-components", "model,loss" if rec.get("compile_loss") else "model"]
    # the runs ran eager (realrun.py without --cuda-graph): pinned, as torchtitan plans would
    # otherwise follow torchtitan's graphed default (costmodel/cuda_graphs.h)
    if HAS["--no-cuda-graphs"]:
        a += ["--no-cuda-graphs"]
    if HAS["--optimizer-impl"]:
        oi = rec.get("optimizer_impl", "default")
        a += ["--optimizer-impl", {"default": "foreach"}.get(oi, {"forloop": "for-loop"}.get(oi, oi))]
    if fp8:
        a += ["--precision", "fp8", "--fp8-recipe", rec["fp8_recipe"]]
    # the run's allocator (its env): expandable segments priced as such (memory_holes.h); a run
    # priced as torchtitan (which plan gives torchtitan's launcher setting, expandable) without
    # it ran torch's default allocator
    if "expandable_segments:True" in ((rec.get("env") or {}).get("PYTORCH_CUDA_ALLOC_CONF") or ""):
        a += ["--expandable-segments"]
    elif HAS["--no-expandable-segments"] and "torchtitan" in a:
        a += ["--no-expandable-segments"]
    # the run's attention (realrun.py --attn; records before it ran SDPA): transformers' eager
    # attention is plan's --attention unfused under --impl hf (costmodel/hf_eager_attn.h)
    if HAS["--attention"]:
        a += ["--attention", "unfused" if rec.get("attention") == "eager" else "flash"]
    if HAS["--hold-logits"] and held_logits(rec):
        a += ["--hold-logits"]
    if args.simulate:
        a += ["--simulate"]
    return a


def not_expressible(rec):
    why = []
    if rec.get("impl", "hf") != "hf" and not HAS["--impl"]:
        why.append("plan has no --impl (prices Hugging Face eager kernels only)")
    if rec.get("compile") and not HAS["--compile"]:
        why.append("plan has no --compile")
    if not system_of(rec.get("gpu")):
        why.append("no system preset for GPU %r" % rec.get("gpu"))
    if rec.get("precision") == "fp8" and not HAS["--fp8-recipe"]:
        why.append("plan has no --fp8-recipe")
    if rec.get("cuda_graph"):  # realrun.py --cuda-graph: torchtitan's graphed step, not fsdp2's
        why.append("a CUDA-graphed step (torchtitan's; bench/results/cg11_2026-11-28/compare.py "
                   "prices it)")
    return "; ".join(why)


def config_for(rec, tmp):
    path = os.path.join(ROOT, rec["config"])
    with open(path) as f:
        cfg = json.load(f)
    name = rec["model"]
    # bench/realruns/native_llama.py (realrun.py --impl native, parallel_run.py) builds plain
    # Llama blocks from the config (no biases, RoPE over the whole head, no post-norms, no sliding
    # window: SDPA with is_causal over the whole sequence, Phi-3's sliding_window 2047 too):
    # price the model the run trained (native_config.py)
    if rec.get("impl") == "native":
        cfg = native_config(cfg)
        name += "-native"
    if rec.get("layers") and rec["layers"] != cfg["num_hidden_layers"]:
        cfg["num_hidden_layers"] = rec["layers"]
        if "max_window_layers" in cfg:
            cfg["max_window_layers"] = min(cfg["max_window_layers"], rec["layers"])
        if isinstance(cfg.get("layer_types"), list):  # per-layer kinds (gpt-oss): the first N
            cfg["layer_types"] = cfg["layer_types"][:rec["layers"]]
        name += "-L%d" % rec["layers"]
    out = os.path.join(tmp, name + ".json")
    with open(out, "w") as f:
        json.dump(cfg, f)
    return out


def err(p, m):
    return None if p is None or m in (None, 0) else (p - m) / m


def main():
    files = args.results or sorted(glob.glob(os.path.join(HERE, "results", "*.jsonl")))
    recs = []
    for fn in files:
        with open(fn) as f:
            for ln in f:
                if ln.strip():
                    r = json.loads(ln)
                    r["_file"] = os.path.basename(fn)
                    recs.append(r)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in recs:
            row = {"run": r.get("label"), "file": r["_file"], "gpu": system_of(r.get("gpu")),
                   "impl": r.get("impl", "hf") + ("+compile" if r.get("compile") else "") +
                   ("+fp8" + {"tensorwise": "tw", "rowwise": "rw"}.get(r.get("fp8_recipe"), "")
                    if r.get("precision") == "fp8" else ""),
                   "model": r.get("model"), "layers": r.get("layers"), "seq": r.get("seq"),
                   "mbs": r.get("mbs"), "ckpt": r.get("grad_ckpt"), "oom": r.get("oom", False)}
            if "error" in r:
                row["status"] = "failed run: " + r["error"][:120]
                rows.append(row)
                continue
            row["meas_step_s"] = r.get("step_s_median")
            row["meas_mem_bytes"] = r.get("measured_peak_bytes")
            row["meas_mem_reserved_bytes"] = r.get("measured_peak_reserved_bytes")
            if r.get("oom"):  # what was held when it failed: a lower bound of what it needed
                row["meas_mem_at_oom_bytes"] = r.get("peak_allocated_bytes", 0) + r.get(
                    "nonalloc_end_bytes", 0)
            why = not_expressible(r)
            if why:
                row["status"] = "not expressible: " + why
                rows.append(row)
                continue
            res = run_plan(layout_args(r, config_for(r, tmp), row["gpu"]))
            if res.returncode not in (0, 1) or not res.stdout.strip().startswith("{"):
                row["status"] = "plan refused: " + (res.stderr or res.stdout).strip()[:160]
                rows.append(row)
                continue
            j = json.loads(res.stdout)
            row["status"] = "ok"
            row["pred_step_s"] = j["time"]["step_s"]
            if j.get("time_simulated"):
                row["pred_step_sim_s"] = j["time_simulated"].get("step_s")
            row["pred_mem_bytes"] = j["memory"]["total_bytes"]
            row["pred_reserved_bytes"] = j["memory"].get("reserved_bytes")
            for k in ("need_bytes", "capacity_bytes", "framework_bytes", "largest_block_bytes"):
                row["pred_" + k] = j["memory"].get(k)
            row["pred_feasible"] = bool(j["feasible"])
            row["infeasible_reason"] = j.get("infeasible_reason")
            row["feasible_agree"] = row["pred_feasible"] == (not r.get("oom"))
            if not r.get("oom"):
                row["step_err"] = err(row["pred_step_s"], row["meas_step_s"])
                row["mem_err"] = err(row["pred_mem_bytes"], row["meas_mem_bytes"])
                if row["pred_reserved_bytes"] is not None:
                    row["res_err"] = err(row["pred_reserved_bytes"] + row["pred_framework_bytes"],
                                         row["meas_mem_reserved_bytes"])
            rows.append(row)
    if args.format == "json":
        print(json.dumps(rows, indent=1))
        return
    pct = lambda x: "" if x is None else "%+.1f%%" % (100 * x)  # noqa: E731
    gib = lambda x: "" if x is None else "%.1f" % (x / GIB)  # noqa: E731
    hdr = "%-27s %-4s %-18s %8s %8s %8s %7s %7s %8s %8s %4s %4s %s" % (
        "run", "gpu", "impl", "meas_s", "pred_s", "err", "mem_GiB", "pred", "err", "res_err",
        "fits", "pred", "agree")
    print(hdr)
    print("-" * len(hdr))
    for w in rows:
        if w["status"] != "ok":
            print("%-27s %-4s %-18s %8s %8s %8s %7s  %s" % (
                w["run"], w["gpu"] or "?", w["impl"],
                "" if w.get("meas_step_s") is None else "%.4f" % w["meas_step_s"], "", "",
                gib(w.get("meas_mem_bytes") or w.get("meas_mem_at_oom_bytes")), w["status"]))
            continue
        mm = w.get("meas_mem_bytes")
        mtxt = gib(mm) if mm else ">" + gib(w.get("meas_mem_at_oom_bytes"))
        print("%-27s %-4s %-18s %8s %8.4f %8s %7s %7s %8s %8s %4s %4s %s" % (
            w["run"], w["gpu"], w["impl"],
            "OOM" if w["oom"] else "%.4f" % w["meas_step_s"], w["pred_step_s"],
            pct(w.get("step_err")), mtxt, gib(w["pred_mem_bytes"]), pct(w.get("mem_err")),
            pct(w.get("res_err")),
            "no" if w["oom"] else "yes", "yes" if w["pred_feasible"] else "no",
            "yes" if w["feasible_agree"] else "NO"))
    ok = [w for w in rows if w["status"] == "ok"]
    fit = [w for w in ok if w.get("step_err") is not None]
    print()
    print("runs %d: compared %d (%d ran, %d out of memory), not expressible %d, failed %d" % (
        len(rows), len(ok), len(fit), len(ok) - len(fit),
        sum(1 for w in rows if w["status"].startswith("not expressible")),
        sum(1 for w in rows if w["status"].startswith(("failed", "plan refused")))))

    def summary(name, xs, med_target, max_target):
        xs = [x for x in xs if x is not None]  # a run without that figure (no memory recorded)
        if not xs:
            return
        a = [abs(x) for x in xs]
        print("%-7s median |err| %5.1f%% (target %d%%)  max |err| %5.1f%% (target %d%%)  "
              "median signed %+5.1f%%  within 5%%: %d of %d" % (
                  name, 100 * statistics.median(a), med_target, 100 * max(a), max_target,
                  100 * statistics.median(xs), sum(1 for x in a if x <= 0.05), len(a)))

    for gpu in sorted(set(w["gpu"] for w in fit)) + [None]:
        sub = [w for w in fit if gpu is None or w["gpu"] == gpu]
        if gpu is not None and len(set(w["gpu"] for w in fit)) < 2:
            continue
        print("-- %s (%d runs that ran)" % (gpu or "all", len(sub)))
        summary("step", [w["step_err"] for w in sub], 5, 12)
        summary("memory", [w["mem_err"] for w in sub], 5, 10)
        summary("reserved", [w.get("res_err") for w in sub], 5, 10)
    bad = [w["run"] for w in ok if not w["feasible_agree"]]
    print("feasibility agrees on %d of %d runs%s" % (len(ok) - len(bad), len(ok),
                                                     (": wrong on " + ", ".join(bad)) if bad else ""))


if __name__ == "__main__":
    main()
