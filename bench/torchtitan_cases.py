#!/usr/bin/env python3
"""Write the torchtitan commands `plan` emits for a matrix of layouts, as cases for
bench/torchtitan_validate.py (issue 19).

Each case runs `plan estimate --framework torchtitan --emit torchtitan` with one layout (the
command a user pastes) and records the emitted text and the layout plan costed (its JSON), and
`plan check` reads the emitted text back ("readback": "same", or what differs from the
estimate: exit status, layout, placement, memory, times, the text written again).
A layout plan itself refuses (exit 2, a rule) is recorded with plan's message under
"refused": it is not emitted, so there is nothing for torchtitan to read.

Matrix: the models torchtitan b5bcd76 ships a config for (Llama 3.1 8B/70B/405B, Qwen3-30B-A3B,
DeepSeek-V3 671B and its 16B, V2-Lite-shaped flavour) x FSDP / HSDP / TP (SP on and off, async
TP) / each pipeline schedule plan emits (1F1B, Interleaved1F1B, GPipe, ZBVZeroBubble,
DualPipeV; even and uneven splits) / CP (both rotate methods) / EP / recompute none,
selective, full / compile on and off (the loss left eager too) / float8 (rowwise,
tensorwise) and MXFP8 / CUDA graphs on and off / CPU offload / micro-batch and gradient
accumulation. cfg21 (2026-11-29) added the split keys under every schedule, V schedules with
compile / TP / AC, PP x CP, HSDP x TP / PP / EP, float8 with TP x PP / async TP / MoE, MXFP8
with TP, NVFP4 and a Blackwell pipeline.

Usage: python3 bench/torchtitan_cases.py --plan build/cli/plan --out cases.json
"""
import argparse
import json
import subprocess
import sys

DENSE = ["8b", "70b", "405b"]
MOE = ["qwen3-30b-a3b", "deepseek-v2-lite", "deepseek-v3"]


def matrix():
    c = []

    def add(name, model, gpus, *flags, system="h100"):
        c.append((name, model, gpus, system, list(flags)))

    # data parallel: FSDP, HSDP, reshard, recompute, compile, graphs, offload
    add("8b-fsdp8", "8b", 8)
    add("8b-fsdp8-graphs", "8b", 8, "--cuda-graphs")
    add("8b-fsdp8-nographs", "8b", 8, "--no-cuda-graphs")
    add("8b-fsdp8-compile", "8b", 8, "--compile")
    add("8b-fsdp8-compile-graphs", "8b", 8, "--compile", "--cuda-graphs")
    add("8b-fsdp8-compile-loss-eager", "8b", 8, "--compile", "--compile-components", "model")
    add("8b-fsdp8-sel", "8b", 8, "--recompute", "selective")
    add("8b-fsdp8-full", "8b", 8, "--recompute", "full")
    add("8b-fsdp8-full-graphs", "8b", 8, "--recompute", "full", "--cuda-graphs")
    add("8b-fsdp8-noreshard", "8b", 8, "--no-reshard-after-forward")
    add("8b-fsdp8-reshard-graphs", "8b", 8, "--reshard-after-forward", "--cuda-graphs")
    add("8b-fsdp8-offload", "8b", 8, "--offload", "--recompute", "full")
    add("8b-fsdp8-mbs2", "8b", 8, "--mbs", "2", "--gbs", "64")
    add("8b-fsdp8-ga", "8b", 8, "--mbs", "1", "--gbs", "64")
    add("8b-fsdp8-seq8k", "8b", 8, "--seq", "8192", "--gbs", "32")
    add("8b-hsdp16x2", "8b", 32, "--shard-size", "16")
    add("8b-hsdp8x4", "8b", 32, "--shard-size", "8", "--recompute", "selective")
    add("8b-foreach", "8b", 8, "--optimizer-impl", "foreach")
    # TP with SP, without SP, async TP
    add("8b-tp2", "8b", 16, "--tp", "2")
    add("8b-tp4-nosp", "8b", 16, "--tp", "4", "--no-sp")
    add("8b-tp8", "8b", 16, "--tp", "8")
    add("8b-tp2-async", "8b", 16, "--tp", "2", "--compile", "--async-tp")
    add("70b-tp8", "70b", 64, "--tp", "8", "--recompute", "full")
    add("70b-tp8-async", "70b", 64, "--tp", "8", "--compile", "--async-tp", "--recompute",
        "selective")
    add("70b-tp8-graphs", "70b", 64, "--tp", "8", "--recompute", "full", "--cuda-graphs")
    # PP: each schedule, even and uneven splits
    add("8b-pp2-1f1b", "8b", 16, "--pp", "2")
    add("8b-pp4-gpipe", "8b", 16, "--pp", "4", "--pp-schedule", "GPipe")
    add("8b-pp4-interleaved", "8b", 16, "--pp", "4", "--vpp", "2")
    add("8b-pp4-interleaved-v4", "8b", 16, "--pp", "4", "--vpp", "4",
        "--pp-schedule", "Interleaved1F1B")
    add("8b-pp4-zbv", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule", "ZBVZeroBubble")
    add("8b-pp4-dualpipev", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule", "DualPipeV")
    add("8b-pp4-zbv-novpp", "8b", 16, "--pp", "4", "--pp-schedule", "ZBVZeroBubble")
    add("8b-pp3-1f1b", "8b", 24, "--pp", "3")
    add("8b-pp4-uneven", "8b", 16, "--pp", "4", "--pp-first-layers", "7", "--pp-last-layers",
        "7")
    # torchtitan's split of virtual stages (costmodel/pp_split.c): 4 a rank reached only with
    # the even split stated (less 0, layers_per_stage 2); 3 / 3 on the ends (less 2 / 1)
    add("8b-pp4-interleaved-v4-even", "8b", 16, "--pp", "4", "--vpp", "4",
        "--pp-schedule", "Interleaved1F1B", "--pp-first-layers", "2", "--pp-last-layers", "2")
    add("8b-pp4-interleaved-uneven", "8b", 16, "--pp", "4", "--vpp", "2",
        "--pp-first-layers", "3", "--pp-last-layers", "3")
    add("8b-pp4-zbv-uneven", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule",
        "ZBVZeroBubble", "--pp-first-layers", "3", "--pp-last-layers", "3")
    add("405b-tp8-pp8-interleaved", "405b", 512, "--tp", "8", "--pp", "8", "--vpp", "2",
        "--recompute", "full", "--gbs", "256", "--mbs", "2")
    add("70b-tp8-pp4", "70b", 64, "--tp", "8", "--pp", "4")
    add("70b-tp8-pp4-interleaved", "70b", 64, "--tp", "8", "--pp", "4", "--vpp", "2")
    add("70b-tp8-pp4-zbv", "70b", 64, "--tp", "8", "--pp", "4", "--vpp", "2",
        "--pp-schedule", "ZBVZeroBubble")
    add("70b-tp8-pp4-compile-sel", "70b", 64, "--tp", "8", "--pp", "4", "--compile",
        "--recompute", "selective")
    add("70b-pp4-reshard", "70b", 64, "--tp", "8", "--pp", "4", "--reshard-after-forward")
    add("405b-tp8-pp8", "405b", 512, "--tp", "8", "--pp", "8", "--recompute", "full")
    add("405b-tp8-pp16-interleaved", "405b", 512, "--tp", "8", "--pp", "16", "--vpp", "2",
        "--recompute", "full")
    # CP
    add("8b-cp2", "8b", 16, "--cp", "2", "--seq", "32768", "--gbs", "16")
    add("8b-cp4-alltoall", "8b", 16, "--cp", "4", "--cp-rotate", "alltoall", "--seq", "65536",
        "--gbs", "8")
    add("8b-tp2-cp2", "8b", 16, "--tp", "2", "--cp", "2", "--seq", "32768", "--gbs", "16")
    add("70b-tp8-cp2", "70b", 64, "--tp", "8", "--cp", "2", "--seq", "32768", "--gbs", "32",
        "--recompute", "full")
    add("8b-cp2-graphs", "8b", 16, "--cp", "2", "--seq", "32768", "--gbs", "16",
        "--cuda-graphs")
    # precision
    add("8b-fp8-rowwise", "8b", 8, "--precision", "fp8", "--fp8-recipe", "rowwise",
        "--compile")
    add("8b-fp8-tensorwise", "8b", 8, "--precision", "fp8", "--fp8-recipe", "tensorwise",
        "--compile")
    add("8b-mxfp8", "8b", 8, "--precision", "mxfp8", "--compile", system="b200")
    add("70b-tp8-fp8-rowwise", "70b", 64, "--tp", "8", "--precision", "fp8", "--fp8-recipe",
        "rowwise", "--compile", "--recompute", "selective")
    # MoE: EP, expert TP, PP, graphs
    add("qwen3moe-fsdp8", "qwen3-30b-a3b", 8)
    add("qwen3moe-ep8", "qwen3-30b-a3b", 8, "--ep", "8")
    add("qwen3moe-ep8-graphs", "qwen3-30b-a3b", 8, "--ep", "8", "--cuda-graphs")
    add("qwen3moe-ep8-compile", "qwen3-30b-a3b", 8, "--ep", "8", "--compile")
    add("qwen3moe-ep4-sel", "qwen3-30b-a3b", 16, "--ep", "4", "--recompute", "selective")
    add("qwen3moe-tp4-ep8", "qwen3-30b-a3b", 16, "--tp", "4", "--ep", "8")
    add("qwen3moe-tp2-etp2-ep4", "qwen3-30b-a3b", 16, "--tp", "2", "--etp", "2", "--ep", "4")
    add("qwen3moe-pp2-ep8", "qwen3-30b-a3b", 16, "--pp", "2", "--ep", "8")
    add("qwen3moe-pp4-zbv-ep4", "qwen3-30b-a3b", 16, "--pp", "4", "--vpp", "2",
        "--pp-schedule", "ZBVZeroBubble", "--ep", "4")
    add("qwen3moe-cp2-ep8", "qwen3-30b-a3b", 16, "--cp", "2", "--ep", "8", "--seq", "32768",
        "--gbs", "16")
    add("qwen3moe-tp4", "qwen3-30b-a3b", 16, "--tp", "4")
    add("dsv2lite-fsdp8", "deepseek-v2-lite", 8)
    add("dsv2lite-ep8", "deepseek-v2-lite", 8, "--ep", "8")
    add("dsv2lite-ep8-graphs", "deepseek-v2-lite", 8, "--ep", "8", "--cuda-graphs")
    add("dsv2lite-pp2-ep4", "deepseek-v2-lite", 16, "--pp", "2", "--ep", "4")
    add("dsv2lite-tp2-ep8", "deepseek-v2-lite", 16, "--tp", "2", "--ep", "8")
    add("dsv3-pp8-ep32", "deepseek-v3", 256, "--pp", "8", "--ep", "32", "--recompute", "full")
    add("dsv3-pp16-ep64", "deepseek-v3", 1024, "--pp", "16", "--ep", "64", "--recompute",
        "full")
    add("dsv3-pp8-dualpipev-ep32", "deepseek-v3", 256, "--pp", "8", "--vpp", "2",
        "--pp-schedule", "DualPipeV", "--ep", "32", "--recompute", "full")
    add("dsv3-pp8-interleaved-ep32", "deepseek-v3", 256, "--pp", "8", "--vpp", "2",
        "--ep", "32", "--recompute", "full")
    add("dsv3-tp4-pp8-ep32", "deepseek-v3", 512, "--tp", "4", "--pp", "8", "--ep", "32",
        "--recompute", "full")
    add("dsv3-fp8-pp8-ep32", "deepseek-v3", 256, "--pp", "8", "--ep", "32", "--precision",
        "fp8", "--fp8-recipe", "rowwise", "--compile", "--recompute", "full")
    # edges torchtitan refuses: plan's rule torchtitan-sp-tokens; a sequence past the shipped
    # config's RoPE context is said in the emitted text ("NO torchtitan config ships")
    add("8b-tp8-seq4100", "8b", 8, "--tp", "8", "--seq", "4100", "--gbs", "64")
    add("8b-tp8-nosp-seq4100", "8b", 8, "--tp", "8", "--no-sp", "--seq", "4100", "--gbs", "64")
    add("8b-seq256k", "8b", 8, "--seq", "262144", "--gbs", "8", "--recompute", "full")
    add("8b-seq128k", "8b", 8, "--seq", "131072", "--gbs", "8", "--recompute", "full")
    add("dsv2lite-seq32k", "deepseek-v2-lite", 8, "--seq", "32768", "--gbs", "8")
    add("dsv2lite-seq16k", "deepseek-v2-lite", 8, "--seq", "16384", "--gbs", "8")
    add("qwen3moe-seq64k", "qwen3-30b-a3b", 16, "--cp", "4", "--ep", "8", "--seq", "65536",
        "--gbs", "16", "--recompute", "full")
    # a model torchtitan has no config for (the emitter says which config stands in)
    add("13b-fsdp8-noconfig", "13b", 8)
    # cfg21 (2026-11-29): what the emitter writes since ttpp20/zbv20 and the combinations the
    # matrix above missed -- the split keys under every schedule (DualPipeV and GPipe uneven,
    # MoE uneven), V schedules with compile / TP / AC, PP x CP, HSDP x TP / PP / EP, float8
    # with TP x PP, async TP and MoE, MXFP8 with TP, NVFP4, Blackwell pipelines
    add("8b-pp4-dualpipev-uneven", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule",
        "DualPipeV", "--pp-first-layers", "3", "--pp-last-layers", "3")
    add("8b-pp4-gpipe-uneven", "8b", 16, "--pp", "4", "--pp-schedule", "GPipe",
        "--pp-first-layers", "6", "--pp-last-layers", "6")
    add("8b-pp2-1f1b-first-only", "8b", 16, "--pp", "2", "--pp-first-layers", "15")
    add("8b-pp4-zbv-compile", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule",
        "ZBVZeroBubble", "--compile")
    add("8b-pp4-zbv-full", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule",
        "ZBVZeroBubble", "--recompute", "full")
    add("8b-pp4-dualpipev-sel", "8b", 16, "--pp", "4", "--vpp", "2", "--pp-schedule",
        "DualPipeV", "--recompute", "selective")
    add("70b-tp8-pp4-dualpipev", "70b", 64, "--tp", "8", "--pp", "4", "--vpp", "2",
        "--pp-schedule", "DualPipeV")
    add("70b-tp8-pp4-interleaved-uneven", "70b", 64, "--tp", "8", "--pp", "4", "--vpp", "2",
        "--pp-first-layers", "8", "--pp-last-layers", "8")
    add("8b-pp2-cp2", "8b", 16, "--pp", "2", "--cp", "2", "--seq", "32768", "--gbs", "16")
    add("8b-pp4-interleaved-cp2", "8b", 32, "--pp", "4", "--vpp", "2", "--cp", "2", "--seq",
        "32768", "--gbs", "32")
    add("8b-tp2-hsdp", "8b", 32, "--tp", "2", "--shard-size", "8")
    add("70b-tp8-pp2-hsdp", "70b", 64, "--tp", "8", "--pp", "2", "--shard-size", "2",
        "--recompute", "full")
    add("8b-hsdp-full-compile", "8b", 32, "--shard-size", "8", "--recompute", "full",
        "--compile")
    add("qwen3moe-hsdp-ep8", "qwen3-30b-a3b", 32, "--ep", "8", "--shard-size", "16")
    add("qwen3moe-tp2-pp2-ep4", "qwen3-30b-a3b", 32, "--tp", "2", "--pp", "2", "--ep", "4")
    add("qwen3moe-pp4-dualpipev-ep4", "qwen3-30b-a3b", 16, "--pp", "4", "--vpp", "2",
        "--pp-schedule", "DualPipeV", "--ep", "4", "--recompute", "full")
    add("dsv2lite-cp2-ep8", "deepseek-v2-lite", 16, "--cp", "2", "--ep", "8", "--seq", "8192",
        "--gbs", "16")
    add("dsv3-pp8-ep32-uneven", "deepseek-v3", 256, "--pp", "8", "--ep", "32", "--recompute",
        "full", "--pp-first-layers", "6", "--pp-last-layers", "6")
    add("70b-tp8-pp4-fp8-rowwise", "70b", 64, "--tp", "8", "--pp", "4", "--precision", "fp8",
        "--fp8-recipe", "rowwise", "--compile", "--recompute", "selective")
    add("8b-tp2-async-fp8-rowwise", "8b", 16, "--tp", "2", "--compile", "--async-tp",
        "--precision", "fp8", "--fp8-recipe", "rowwise")
    add("8b-fp8-rowwise-eager", "8b", 8, "--precision", "fp8", "--fp8-recipe", "rowwise")
    add("qwen3moe-ep8-fp8-rowwise", "qwen3-30b-a3b", 8, "--ep", "8", "--precision", "fp8",
        "--fp8-recipe", "rowwise", "--compile")
    add("8b-tp2-mxfp8", "8b", 16, "--tp", "2", "--precision", "mxfp8", "--compile",
        system="b200")
    add("8b-nvfp4", "8b", 8, "--precision", "nvfp4", "--compile", system="b200")
    add("70b-pp4-zbv-b200", "70b", 32, "--pp", "4", "--vpp", "2", "--pp-schedule",
        "ZBVZeroBubble", "--recompute", "full", system="b200")
    add("8b-tp4-pp2-sel-async", "8b", 16, "--tp", "4", "--pp", "2", "--compile",
        "--async-tp", "--recompute", "selective")
    # the MoE dispatcher, the model config's (a comment plan check reads back); all-gather is
    # no torchtitan backend (refused by plan)
    add("qwen3moe-ep8-deepep", "qwen3-30b-a3b", 8, "--ep", "8", "--moe-dispatcher", "deepep")
    add("dsv3-pp8-ep32-hybridep", "deepseek-v3", 256, "--pp", "8", "--ep", "32",
        "--recompute", "full", "--moe-dispatcher", "hybridep")
    add("qwen3moe-ep8-allgather", "qwen3-30b-a3b", 8, "--ep", "8", "--moe-dispatcher",
        "allgather")
    return c


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def readback(plan, system, emitted, est, rc):
    """`plan check - --system S --emit json` on the emitted text (what a user runs after
    pasting it): [] when its exit status, layout, placement, memory and times equal the
    estimate's and the text it writes again is the same; else what differs."""
    r = subprocess.run([plan, "check", "-", "--system", system, "--emit", "json"],
                       input=emitted, capture_output=True, text=True)
    if r.returncode == 2 or not r.stdout.strip():
        return [f"plan check exit {r.returncode}: {r.stderr.strip()[:300]}"]
    got = json.loads(r.stdout)
    again = got.pop("emit", {}).get("torchtitan")
    diffs = [] if r.returncode == rc else [f"exit {r.returncode}, estimate {rc}"]
    fa, fb = _flat(got), _flat(est)
    diffs += [f"{k}: check {fa.get(k)!r}, estimate {fb.get(k)!r}"
              for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]
    if again != emitted:
        a, b = (again or "").splitlines(), emitted.splitlines()
        lines = [i for i in range(max(len(a), len(b)))
                 if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)]
        diffs.append(f"the text plan check writes again differs on lines {lines}")
    return diffs


SPLIT_FIELDS = ("layout.pp_first_layers", "layout.pp_last_layers")


def readback_status(back, emitted):
    """'same'; 'same plan, split fields spelled differently' (plan's pp_first/last_layers:
    one stated where the other side states both, the same stages and every price the same,
    the header's split label apart); 'as the text says' (a float8 recipe the text says this
    torchtitan lacks reads as the bf16 it would train); else 'differs'."""
    if not back:
        return "same"
    keys = [d.split(":")[0] for d in back if not d.startswith("the text")]
    text = [d for d in back if d.startswith("the text")]
    if keys and all(k in SPLIT_FIELDS for k in keys) and all(
            d.endswith("lines [1]") for d in text):
        return "same plan, split fields spelled differently"
    if "NOT in this torchtitan" in emitted and "layout.precision" in keys:
        return "as the text says (a recipe this torchtitan lacks reads as bf16)"
    return "differs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", default="build/cli/plan")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="comma-separated case names")
    opt = ap.parse_args()
    only = set(opt.only.split(",")) if opt.only else None
    cases, refused = [], []
    for name, model, gpus, system, flags in matrix():
        if only and name not in only:
            continue
        argv = [opt.plan, "estimate", "--model", model, "--gpus", str(gpus), "--system", system,
                "--framework", "torchtitan"] + flags
        r = subprocess.run(argv + ["--emit", "torchtitan"], capture_output=True, text=True)
        shown = " ".join(["plan"] + argv[1:] + ["--emit", "torchtitan"])
        if r.returncode == 2 or not r.stdout.strip():
            refused.append({"name": name, "plan": shown, "message": r.stderr.strip()})
            print(f"{name:34s} refused by plan: {r.stderr.strip()[:200]}", file=sys.stderr)
            continue
        j = subprocess.run(argv + ["--format", "json"], capture_output=True, text=True)
        est = json.loads(j.stdout)
        back = readback(opt.plan, system, r.stdout, est, r.returncode)
        status = readback_status(back, r.stdout)
        if back:
            print(f"{name:34s} plan check reads it back: {status}: {back[:3]}",
                  file=sys.stderr)
        cases.append({"name": name, "plan": shown, "model": model, "gpus": gpus,
                      "fits": r.returncode == 0, "layout": est["layout"],
                      "emitted": r.stdout, "readback": status, "readback_diffs": back})
    out = {"cases": cases, "refused_by_plan": refused}
    tmp = opt.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    import os

    os.replace(tmp, opt.out)
    tally = {}
    for c in cases:
        tally[c["readback"]] = tally.get(c["readback"], 0) + 1
    print(f"{len(cases)} emitted, {len(refused)} refused by plan -> {opt.out}; plan check "
          f"reads back: {tally}")


if __name__ == "__main__":
    main()
