#!/usr/bin/env python3
"""Predicted vs measured for issue 24's multi-GPU real runs, and `plan measure` vs the real step.

For every real run line (bench/realruns/realrun.py under torchrun, or parallel_run.py) in the
results folders this runs `plan estimate` of the same model (the run's config.json cut to its layer
count), system (h100 / h200 from the run's GPU), --gpus = world size, layout, seq, mbs, gbs and
implementation, and sets beside it the `plan measure` JSON of the same layout written in the same
call (pm-<label>.json next to results.jsonl), so three numbers per row:
  real     median step of the real run (slowest rank per step), and its memory: peak allocated +
           non-allocator bytes, the largest over ranks (issue 14's memory.total_bytes)
  pred     plan estimate's time.step_s and memory.total_bytes
  measure  plan measure's measured.step_s (the backend running what the model prices)
error = (x - real) / real (the project's sign convention). Standard library only; no torch.

How each layout is priced is one table, FRAMEWORK below: the FSDP2 data-parallel runs as
--framework fsdp2; DTensor TP, torch pipelining, context parallel (ring attention) and the MoE
expert-parallel runs as --framework megatron --impl native (the planner's FSDP2 path has no
TP/PP/EP, and its --cp is Ulysses all-to-all, not ring attention). When `plan estimate --help`
lists a `torchtitan` framework, the rows marked "torchtitan" in TORCHTITAN switch to it (set
USE_TORCHTITAN = False to keep megatron). The printed `fw` column says which flag priced each row.
parallel_run.py's composed meshes (pp x dp x tp, dp x cp x tp, EP below the world size; their
records carry `layout`, and `parallelism` names every dimension, "pp+dp", "dp+cp", "cp+tp",
"ep+efsdp") are priced as their layout with --gpus = world size, plan taking dp = gpus / (tp pp
cp) and EP out of dp_shard as torchtitan does (bench/results/compose26_2026-11-29).
Rows whose real mechanism the planner has no term for are flagged in `note`; `note` also says
where a row is priced as it ran rather than as the layout is usually run (SDPA FLASH kernels; an
embedding tie the run broke), and those rows are not flagged. parallel_run.py's --experts loop
rows are priced with --moe-expert-loop (torchtitan's per-expert loop, costmodel/expert_loop.h)
where `plan estimate --help` lists it.

Usage: python3 bench/realruns/mgpu_fidelity.py [DIR ...] [--plan build/cli/plan] [--format table|json]
       [--pm PMDIR ...]  (plan measure JSONs of later runs, e.g. bench/results/meas10_2026-11-28/*)
       (default DIRs: bench/results/mgpu_2026-11-27/{full_h200x4,extra_h100x4}/jobs;
       the TP host-time check: bench/results/mgpu_2026-11-27/host_h100x4/jobs)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from native_config import native_config  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GIB = float(1 << 30)
DEFAULT_DIRS = [os.path.join(ROOT, "bench", "results", "mgpu_2026-11-27", d, "jobs")
                for d in ("full_h200x4", "extra_h100x4")]

# parallelism of the real run -> (framework, extra plan flags). Switch a row here.
FRAMEWORK = {
    "fsdp": ("fsdp2", []),
    "hsdp": ("fsdp2", []),                           # parallel_run.py --tp 1 --replicate R: --shard-size
    "tp": ("megatron", ["--sharding", "fsdp"]),      # FSDP2 on the dp mesh beside TP
    "pp": ("megatron", []),                          # dp = 1: sharding moot
    "cp": ("megatron", ["--sharding", "fsdp"]),      # megatron's CP is ring attention (p2p)
    "ep": ("megatron", ["--sharding", "fsdp"]),      # non-expert params FSDP2 over every rank
}
TORCHTITAN = {"tp", "pp", "cp", "ep"}  # rows to price with --framework torchtitan once it exists
USE_TORCHTITAN = True

ap = argparse.ArgumentParser()
ap.add_argument("dirs", nargs="*")
ap.add_argument("--plan", default="")
ap.add_argument("--format", choices=("table", "json"), default="table")
ap.add_argument("--pm", nargs="+", default=[],
                help="folders of plan measure JSONs (pm-LABEL.json) measured later: a row takes "
                     "the last folder's file that exists, before its own folder's")
args = ap.parse_args()
if not args.plan:
    for cand in ("build/cli/plan", "build-bk/cli/plan"):
        if os.path.exists(os.path.join(ROOT, cand)):
            args.plan = os.path.join(ROOT, cand)
            break
if not args.plan or not os.path.exists(args.plan):
    sys.exit("mgpu_fidelity: no planner binary (build/cli/plan); build it or pass --plan")


def plan(argv):
    return subprocess.run([args.plan] + argv, capture_output=True, text=True,
                          env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))


HELP = plan(["estimate", "--help"])
HELP = HELP.stdout + HELP.stderr
HAS_TT = "torchtitan" in HELP
HAS_GRAPHS = "--no-cuda-graphs" in HELP
HAS_HOLD = "--hold-logits" in HELP
HAS_LOOP = "--moe-expert-loop" in HELP
HAS_ROTATE = "--cp-rotate" in HELP
HAS_ONE_RANK = "--one-rank-groups" in HELP
HAS_PAD_COPY = "--moe-pad-index-copy" in HELP
HAS_NEWCOUNTS = "--moe-new-counts" in HELP
HAS_GATHER = "--moe-gather-routing" in HELP


def system_of(gpu):
    return "h200" if "H200" in (gpu or "") else ("h100" if "H100" in (gpu or "") else None)


def config_for(rec, tmp, untie=False):
    with open(os.path.join(ROOT, rec["config"])) as f:
        cfg = json.load(f)
    name = rec["model"]
    # bench/realruns/native_llama.py (realrun.py --impl native, parallel_run.py) builds plain
    # Llama blocks from the config (no biases, RoPE over the whole head, no post-norms, no sliding
    # window: SDPA with is_causal over the whole sequence, Phi-3's sliding_window 2047 too):
    # price the model the run trained (native_config.py)
    if rec.get("impl") == "native":
        cfg = native_config(cfg)
        name += "-native"
    if untie:
        cfg["tie_word_embeddings"] = False
        name += "-untied"
    if rec.get("layers") and rec["layers"] != cfg["num_hidden_layers"]:
        cfg["num_hidden_layers"] = rec["layers"]
        if "max_window_layers" in cfg:
            cfg["max_window_layers"] = min(cfg["max_window_layers"], rec["layers"])
        name += "-L%d" % rec["layers"]
    out = os.path.join(tmp, name + ".json")
    with open(out, "w") as f:
        json.dump(cfg, f)
    return out


# the per-expert loop's share of new row counts per timed step (rank 0), measured by re-running a
# command whose record predates the count (bench/results/ep26_2026-11-29/analyze.py --write): the
# counts follow from the command (seed, data, learning rate, steps), so a record of the same
# command ran the same share
SHARES = os.path.join(ROOT, "bench", "results", "ep26_2026-11-29", "loop_new_count_share.json")


def same_command_share(rec):
    if not os.path.exists(SHARES):
        return None
    for e in json.load(open(SHARES)):
        if all(rec.get(k) == v for k, v in e["command_key"].items()):
            return e["loop_new_count_share_rank0"]
    return None


def layout(rec):
    """(framework, flags, note) for plan estimate of this run."""
    # parallel_run.py's composed meshes (pp x dp x tp, dp x cp x tp, ep inside dp; since
    # 2026-11-29, bench/results/compose26_2026-11-29) name every dimension in `parallelism`
    # ("pp+dp", "dp+cp", "ep+efsdp") and their layout in `layout`: priced as that layout, plan
    # taking dp = gpus / (tp pp cp) and EP out of dp_shard as torchtitan does
    par = rec.get("layout") or rec.get("parallelism") or "fsdp"
    fw, extra = FRAMEWORK[par]
    if USE_TORCHTITAN and HAS_TT and par in TORCHTITAN:
        fw, extra = "torchtitan", []
    ws = rec.get("world_size", 1)
    gbs = rec.get("gbs") or rec["mbs"] * rec.get("microbatches", 1) * (ws // max(1, rec.get("tp", 1) * rec.get("pp", 1) * rec.get("cp", 1)))
    a = ["--framework", fw, "--gpus", str(ws), "--seq", str(rec["seq"]), "--mbs", str(rec["mbs"]),
         "--gbs", str(gbs), "--impl", rec.get("impl", "hf")] + extra
    for k in ("tp", "pp", "cp", "ep"):
        if rec.get(k, 1) > 1:
            a += ["--" + k, str(rec[k])]
    if rec.get("vpp", 1) > 1:
        a += ["--vpp", str(rec["vpp"])]
    # parallel_run.py splits the layers into pp x vpp stages of equal size (prun_build.py,
    # "layers do not split" otherwise); plan's torchtitan default is torchtitan's own split
    # (first/last_stage_less_layers 1, costmodel/pp_split.c), so the run's is stated
    if fw == "torchtitan" and par == "pp" and rec.get("layers"):
        per = rec["layers"] // (rec.get("pp", 1) * rec.get("vpp", 1))
        a += ["--pp-first-layers", str(per), "--pp-last-layers", str(per)]
    if rec.get("schedule") == "zbv":  # parallel_run.py --schedule zbv: ScheduleZBVZeroBubble
        a += ["--pp-schedule", "ZBVZeroBubble"]
    if (rec.get("dp_replicate") or 1) > 1:  # HSDP: FSDP2 inside groups of dp_shard ranks
        a += ["--shard-size", str(rec["dp_shard"])]
    oi = rec.get("optimizer_impl", "default")
    a += ["--optimizer-impl", {"default": "foreach", "forloop": "for-loop"}.get(oi, oi)]
    if rec.get("compile"):
        a += ["--compile"]
        # parallel_run.py compiles the blocks, never the loss (torchtitan's compile.components
        # without "loss"; plan's default is torchtitan's, the loss compiled too)
        if not rec.get("compile_loss"):
            a += ["--compile-components", "model"]
    # the real runs ran eager: no CUDA graph around forward + backward (torchtitan's default
    # since f84224af0, which plan follows for torchtitan plans at PP 1 and EP 1: costmodel/
    # cuda_graphs.h); pinned so that these comparisons keep pricing what ran
    if HAS_GRAPHS:
        a += ["--no-cuda-graphs"]
    if rec.get("async_tp"):  # parallel_run.py --async-tp (torchtitan's micro-pipeline TP)
        a += ["--async-tp"]
    # parallel_run.py's pipeline steps kept the last stage's outputs (torch's default
    # return_outputs=True) until it recorded pp_keep_outputs: false, as torchtitan's trainer runs
    if par == "pp" and rec.get("pp_keep_outputs", True):
        a += ["--pp-keep-outputs"]
    # parallel_run.py's steps (prun_step.py) keep the model's output, the bf16 logits, in a local
    # through loss.backward(); realrun.py deletes it first since 7caf997 (2026-11-28 07:00:10
    # UTC), as torchtitan's trainer does (`del pred`, torchtitan/trainer.py:795 at b5bcd76)
    if HAS_HOLD and rec.get("impl") == "native" and (
            rec.get("framework") == "torch-native" or rec.get("date", "9") < "2026-11-28T07:00:10Z"):
        a += ["--hold-logits"]
    # parallel_run.py's tp layout (tp, tp x dp, HSDP) builds its device mesh with a dimension for
    # every axis, size 1 too, and torch splits an NCCL communicator for each (init_process_group
    # with device_id: DeviceMesh._init_process_groups calls split_group per dimension); torchtitan
    # gives size-1 axes a fake backend (parallel_dims.py _mesh_exist at b5bcd76). The mesh was
    # (dp, tp) until 6796bf1 and (rep, dp, tp) since (its records carry dp_replicate). plan's
    # group figure (nccl_memory.h) already holds the one size-1 group of the (dp, tp) mesh at dp 1
    # (the runs it was measured on): state the others
    if HAS_ONE_RANK and par in ("tp", "hsdp") and "parallel_run" in rec.get("command", "parallel_run"):
        dp, tp = rec.get("dp", 1) or 1, rec.get("tp", 1) or 1
        if "dp_replicate" in rec and rec["dp_replicate"] is not None:
            rep = rec["dp_replicate"] or 1
            dims = (rep, dp // rep, tp)
        else:
            dims = (dp, tp)
        extra = sum(1 for d in dims if d == 1) - (1 if dp == 1 else 0)
        if extra > 0:
            a += ["--one-rank-groups", str(extra)]
    notes = []
    if rec.get("grad_ckpt"):
        a += ["--recompute", "full"]
    elif rec.get("sac") == "op":
        # torchtitan's per-op selective checkpointing policy (realrun.py / parallel_run.py --sac
        # op; costmodel/recipe_recompute.c titan_sac_recomputes): plan prices it under its
        # torchtitan framework only (the fsdp2 path has --recompute full|none)
        if fw != "torchtitan":
            if not HAS_TT:
                return fw, None, "not expressible: op-level selective checkpointing " \
                    "(torchtitan's policy); the FSDP2 path has only --recompute full|none"
            fw = a[1] = "torchtitan"
        a += ["--recompute", "selective"]
    # parallel_run.py's grouped experts pad each expert's rows by index_copy into a zero buffer
    # (prun_moe.py; parallel_run.py before the split), whose autograd node keeps the unpadded
    # rows too; torchtitan gathers them (--moe-pad-index-copy, costmodel/memory_activations.c)
    if par == "ep" and rec.get("experts_impl") == "grouped" and HAS_PAD_COPY:
        a += ["--moe-pad-index-copy"]
    # parallel_run.py's MoE layer (prun_moe.py, the same code since c19503f) regroups the routed
    # tokens by gathers both ways and weights the top-k outputs as a [T, k, h] fp32 product:
    # five index_put_ backwards a layer where torchtitan's scatters run two (costmodel/
    # gather_moe.h, bench/results/epg27_2026-11-29)
    if par == "ep" and fw == "torchtitan" and HAS_GATHER and "parallel_run" in rec.get("command", "parallel_run"):
        a += ["--moe-gather-routing"]
    if par == "ep" and rec.get("experts_impl", "loop") == "loop":
        if HAS_LOOP and fw == "torchtitan":  # torchtitan's use_grouped_mm=False loop (expert_loop.h)
            a += ["--moe-expert-loop"]
            # the share of per-expert row counts new to the process in the timed steps, as the
            # run counted them (prun_moe.py loop_tally, since 2026-11-29 ep26): each a new GEMM
            # shape for cuBLAS's heuristic (expert_loop.h); older records did not count them
            sh = rec.get("loop_new_count_share_rank0")
            if not sh:  # the same command measured again (same seed, data and steps): its share
                sh = same_command_share(rec)  # (a measured input, not a missing term: no note)
            # without a measured share the row is priced as plan's default, every count seen
            # before (a long run's warm cache): ho13, ho18 and ho25's EP 2 loop rows, the H100 ones
            if HAS_NEWCOUNTS and sh:
                a += ["--moe-new-counts", "%.4f" % statistics.median(sh)]
        else:
            notes.append("experts looped in Python (priced as grouped GEMMs)")
    # parallel_run.py before 2026-11-28 (no `permute` field) built the regrouping and padding
    # index tensors on the host, per (rank, local expert), after the split-size sync; torchtitan
    # builds them on the GPU (--permute device; bench/results/moe10_2026-11-28/README.md: 3-4%
    # of the step at EP 4 on the same machine)
    if par == "ep" and rec.get("route") != "balanced" and rec.get("permute", "host") == "host":
        notes.append("expert permutation built on the host (the script's, not torchtitan's)")
    if par == "ep" and rec.get("route") == "balanced":
        notes.append("balanced routing, split sizes known on the host (diagnostic: no sync)")
    # parallel_run.py --layout cp set torch's rotate method to alltoall (its cp_rotate_method
    # field); torch's and torchtitan's default is allgather (costmodel/cp_allgather.h)
    if par == "cp" and fw == "torchtitan" and HAS_ROTATE and "alltoall" in (rec.get("cp_rotate_method") or ""):
        a += ["--cp-rotate", "alltoall"]
    # parallel_run.py --no-loss-parallel gathers the logits over tp (ColwiseParallel output
    # Replicate, a whole-vocabulary loss on every TP rank); plan prices torchtitan's loss_parallel
    # and has no flag for the gathered form (no row before compose26 ran it)
    if rec.get("tp", 1) > 1 and ("--no-loss-parallel" in (rec.get("command") or "") or
                                 rec.get("loss_parallel") is False):
        notes.append("logits gathered over tp (--no-loss-parallel; plan prices loss_parallel)")
    if par == "cp" and fw == "fsdp2":
        notes.append("fsdp2 --cp is Ulysses, the run is ring attention")
    # the smoke jobs (runs_mgpu_smoke2.txt) timed 2 steps after 1 warm-up: their median is the
    # mean of the two, and the first step after a single warm-up runs 1.0-1.7x the steady step on
    # some rank (bench/results/tt13_2026-11-28/README.md: the same jobs with 8 timed steps)
    if rec.get("warmup", 3) < 2 and rec.get("steps", 6) <= 2:
        notes.append("2 timed steps after 1 warm-up (the first still warming)")
    return fw, a, "; ".join(notes)


def flash_system(gpu, tmp):
    """The preset with its attention_rates replaced by SDPA's FLASH backend rates."""
    out = os.path.join(tmp, "%s-flash.json" % gpu)
    if not os.path.exists(out):
        sysj = json.load(open(os.path.join(ROOT, "data", "systems", gpu + ".json")))
        flash = json.load(open(os.path.join(ROOT, "bench", "published", "sdpa_flash_h200.json")))
        sysj["attention_rates"] = flash["attention_rates"]
        sysj["name"] = gpu + "-sdpa-flash"
        with open(out, "w") as f:
            json.dump(sysj, f)
    return out


def err(x, ref):
    return None if x is None or not ref else (x - ref) / ref


def main():
    dirs = args.dirs or DEFAULT_DIRS
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in dirs:
            fn = os.path.join(d, "results.jsonl")
            if not os.path.exists(fn):
                continue
            for ln in open(fn):
                if not ln.strip():
                    continue
                r = json.loads(ln)
                row = {"run": r["label"], "dir": os.path.basename(os.path.dirname(d)),
                       "gpu": system_of(r.get("gpu")), "ws": r.get("world_size", 1),
                       "par": r.get("parallelism") or "fsdp", "impl": r.get("impl", "hf")}
                if r.get("error"):
                    row["status"] = "failed run"
                    rows.append(row)
                    continue
                oom = bool(r.get("oom"))
                if not oom:
                    row["real_step_s"] = r["step_s_median"]
                    row["real_mem_bytes"] = r["measured_peak_bytes"]
                    # the two parts of the real figure (issue 14's split): the caching
                    # allocator's peak and what the device holds outside it at the end
                    row["real_alloc_bytes"] = r.get("peak_allocated_bytes")
                    row["real_nonalloc_bytes"] = r.get("nonalloc_end_bytes")
                    row["real_context_bytes"] = r.get("cuda_context_bytes")
                    row["real_after_nccl_bytes"] = r.get("context_after_nccl_bytes")
                    for k in ("tp", "pp", "cp", "ep", "dp", "dp_replicate", "dp_shard", "vpp",
                              "sac", "compile", "async_tp", "date", "world_size"):
                        row["rec_" + k] = r.get(k)
                fw, a, note = layout(r)
                row["fw"], row["note"] = fw, note
                row["flagged"] = bool(note)  # a mechanism the planner has no term for
                if a is None:
                    row["status"] = note
                    rows.append(row)
                    continue
                system = row["gpu"]
                if "flash/efficient" in (r.get("attention") or ""):
                    # parallel_run.py --layout cp runs SDPA under sdpa_kernel([FLASH,
                    # EFFICIENT]) (FlashAttention-2 kernels, pytorch_flash::flash_fwd/bwd in the
                    # profile of bench/results/heldout_2026-11-27/h200x4_cp_prof), not the cuDNN
                    # kernels the presets' attention table measured: price what ran, with the
                    # FLASH backend's measured rates (bench/published/sdpa_flash_h200.json)
                    system = flash_system(row["gpu"], tmp)
                    note = "; ".join(x for x in (note, "attention priced at SDPA FLASH rates (what ran)") if x)
                    row["note"] = note
                cfg = json.load(open(os.path.join(ROOT, r["config"])))
                # a pipeline split keeps the embedding and the output layer on different stages:
                # two weights (torchtitan refuses to tie them under pipelining)
                split = bool(cfg.get("tie_word_embeddings")) and r.get("pp", 1) > 1
                if split:
                    note = "; ".join(x for x in (note, "tied embedding held by two stages (priced untied)") if x)
                    row["note"] = note
                res = plan(["estimate", "--model", config_for(r, tmp, untie=split), "--system", system] +
                           a + ["--format", "json"])
                row["plan_args"] = " ".join(a)
                if res.returncode not in (0, 1) or not res.stdout.strip().startswith("{"):
                    row["status"] = "plan refused: " + (res.stderr or res.stdout).strip()[:200]
                    rows.append(row)
                    continue
                j = json.loads(res.stdout)
                untied = (r.get("params") or 0) - j["model"]["params_total"]
                vh = cfg.get("vocab_size", 0) * cfg.get("hidden_size", 0)
                if (r.get("tp", 1) > 1 and cfg.get("tie_word_embeddings") and vh and
                        abs(untied - vh) <= 0.001 * vh):
                    # the run trained the tied embedding as two weights (parallel_run.py's TP
                    # layout before it re-tied them as torchtitan does): price what ran
                    cfg_u = config_for(r, tmp, untie=True)
                    res = plan(["estimate", "--model", cfg_u, "--system", system] + a +
                               ["--format", "json"])
                    j = json.loads(res.stdout)
                    note = "; ".join(x for x in (note, "embedding tie broken by the run (priced untied)") if x)
                    row["note"] = note
                if oom:  # ran out of memory on purpose: the estimate must say infeasible
                    row["pred_mem_bytes"] = j["memory"]["total_bytes"]
                    row["pred_feasible"] = bool(j["feasible"])
                    row["status"] = "out of memory; predicted %s (%.1f GiB)" % (
                        "feasible: WRONG" if row["pred_feasible"] else "infeasible: right",
                        row["pred_mem_bytes"] / GIB)
                    rows.append(row)
                    continue
                row["status"] = "ok"
                row["pred_step_s"] = j["time"]["step_s"]
                row["pred_mem_bytes"] = j["memory"]["total_bytes"]
                row["pred_framework_bytes"] = j["memory"]["framework_bytes"]
                row["pred_feasible"] = bool(j["feasible"])
                row["step_err"] = err(row["pred_step_s"], row["real_step_s"])
                row["mem_err"] = err(row["pred_mem_bytes"], row["real_mem_bytes"])
                pm = os.path.join(d, "pm-%s.json" % r["label"])
                for pd in args.pm:  # later plan measure runs of the same layout (--pm)
                    if os.path.exists(os.path.join(pd, "pm-%s.json" % r["label"])):
                        pm = os.path.join(pd, "pm-%s.json" % r["label"])
                if os.path.exists(pm):
                    try:
                        m = json.load(open(pm))
                        row["measure_step_s"] = m["measured"]["step_s"]
                        row["measure_mem_bytes"] = m["measured"]["peak_memory_bytes"]
                        row["measure_pred_step_s"] = m["predicted"]["step_s"]
                        row["measure_err"] = err(row["measure_step_s"], row["real_step_s"])
                        row["measure_mem_err"] = err(row["measure_mem_bytes"], row["real_mem_bytes"])
                    except (ValueError, KeyError):
                        pass
                rows.append(row)
    if args.format == "json":
        print(json.dumps(rows, indent=1))
        return
    pct = lambda x: "%+6.1f%%" % (100 * x) if x is not None else "%7s" % "-"  # noqa: E731
    hdr = "%-20s %-4s %2s %-4s %-9s %7s %7s %7s %7s | %6s %6s %7s | %7s %7s  %s" % (
        "run", "gpu", "ws", "par", "fw", "real_s", "pred_s", "err", "meas_s", "memGiB", "pred",
        "err", "pm-err", "pm-mem", "note")
    print(hdr)
    print("-" * len(hdr))
    for w in rows:
        if w["status"] != "ok":
            print("%-20s %-4s %2s %-4s %-9s %7s %7s %7s %7s | %6s  %s" % (
                w["run"], w["gpu"], w["ws"], w["par"], w.get("fw", ""),
                "%.4f" % w["real_step_s"] if "real_step_s" in w else "-", "", "", "",
                "%.1f" % (w["real_mem_bytes"] / GIB) if "real_mem_bytes" in w else "-", w["status"]))
            continue
        print("%-20s %-4s %2d %-4s %-9s %7.4f %7.4f %s %7s | %6.1f %6.1f %s | %s %s  %s" % (
            w["run"], w["gpu"], w["ws"], w["par"], w["fw"], w["real_step_s"], w["pred_step_s"],
            pct(w["step_err"]), "%.4f" % w["measure_step_s"] if "measure_step_s" in w else "-",
            w["real_mem_bytes"] / GIB, w["pred_mem_bytes"] / GIB, pct(w["mem_err"]),
            pct(w.get("measure_err")), pct(w.get("measure_mem_err")), w["note"]))
    ok = [w for w in rows if w["status"] == "ok"]

    def summary(name, xs, target):
        xs = [x for x in xs if x is not None]
        if not xs:
            return
        a = [abs(x) for x in xs]
        print("%-26s n=%2d  median |err| %5.1f%%  max |err| %5.1f%%  median signed %+5.1f%%  "
              "within %d%%: %d  (target %d%%)" % (name, len(xs), 100 * statistics.median(a), 100 * max(a),
                                                    100 * statistics.median(xs), target,
                                                    sum(1 for x in a if x <= target / 100), target))

    print()
    print("frameworks: %s (plan estimate --help %s torchtitan)" % (
        ", ".join("%s->%s" % (k, "torchtitan" if USE_TORCHTITAN and HAS_TT and k in TORCHTITAN
                                 else FRAMEWORK[k][0]) for k in FRAMEWORK),
        "lists" if HAS_TT else "has no"))
    for label, sel in (("all runs", ok), ("without flagged notes", [w for w in ok if not w.get("flagged")])):
        print("-- %s" % label)
        summary("step: estimate vs real", [w["step_err"] for w in sel], 5)
        summary("memory: estimate vs real", [w["mem_err"] for w in sel], 5)
        summary("step: plan measure vs real", [w.get("measure_err") for w in sel], 5)
        summary("memory: measure vs real", [w.get("measure_mem_err") for w in sel], 5)
    pars = ["fsdp", "hsdp", "tp", "pp", "cp", "ep"]
    pars += sorted(set(w["par"] for w in ok) - set(pars))  # composed meshes ("pp+dp", ...)
    for par in pars:
        sel = [w for w in ok if w["par"] == par]
        if sel:
            print("-- %s" % par)
            summary("step: estimate vs real", [w["step_err"] for w in sel], 5)
            summary("step: plan measure vs real", [w.get("measure_err") for w in sel], 5)
            summary("memory: estimate vs real", [w["mem_err"] for w in sel], 5)


if __name__ == "__main__":
    main()
