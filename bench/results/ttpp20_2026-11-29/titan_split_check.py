#!/usr/bin/env python3
"""Check plan's torchtitan pipeline split against torchtitan's own split function.

For each layout: `plan estimate --framework torchtitan ... --emit torchtitan --format json`
gives the emitted command and plan's costed layout; this script takes the command's
first/last_stage_less_layers and pipeline_parallel_layers_per_stage, computes the stage count
as torchtitan b5bcd76's _get_pipeline_metadata does (pipeline_parallel.py:219-265: ceil(E / k)
with k given, else pp x (1 for 1F1B/GPipe, 2 for multi-stage schedules)), and runs torchtitan's
own `_generate_llm_fqn_per_model_part` (its source, taken from the file with `ast` and executed
alone: it needs no torch) and `_get_pp_rank_to_stage_indices_mapping`'s placement (loop, or V
for ZBVZeroBubble/DualPipeV; restated, 4 lines). It compares the layers per virtual stage and
with plan's (the emitted comment "# decoder layers per pipeline stage", printed where the
split is uneven; equal stages otherwise) and the stages a rank with plan's vpp.

Usage: python3 titan_split_check.py PLAN PIPELINE_PARALLEL_PY
  PIPELINE_PARALLEL_PY: torchtitan b5bcd76 torchtitan/distributed/pipeline_parallel.py
  (git show b5bcd76:torchtitan/distributed/pipeline_parallel.py)
"""
import ast
import json
import math
import re
import shlex
import subprocess
import sys

CASES = [
    # model, gpus, flags
    ("405b", 512, "--tp 8 --pp 8 --vpp 2 --mbs 2 --gbs 256 --seq 8192 --recompute full"),
    ("405b", 512, "--tp 8 --pp 8 --mbs 4 --gbs 256 --seq 8192 --recompute full"),
    ("405b", 512, "--tp 8 --pp 8 --vpp 2 --pp-schedule ZBVZeroBubble --mbs 2 --gbs 256 "
                  "--seq 8192 --recompute full"),
    ("405b", 512, "--tp 8 --pp 16 --vpp 2 --mbs 1 --gbs 256 --seq 8192 --recompute full"),
    ("70b", 64, "--tp 8 --pp 4"),
    ("70b", 64, "--tp 8 --pp 4 --vpp 2"),
    ("70b", 64, "--tp 8 --pp 8 --vpp 2 --gbs 128 --seq 8192 --recompute full"),
    ("70b", 64, "--tp 8 --pp 4 --vpp 2 --pp-schedule ZBVZeroBubble"),
    ("8b", 16, "--pp 4"),
    ("8b", 16, "--pp 2"),
    ("8b", 24, "--pp 3"),
    ("8b", 16, "--pp 4 --vpp 2"),
    ("8b", 16, "--pp 4 --vpp 2 --pp-schedule ZBVZeroBubble"),
    ("8b", 16, "--pp 4 --vpp 2 --pp-schedule DualPipeV"),
    ("8b", 16, "--pp 4 --pp-first-layers 7 --pp-last-layers 7"),
    ("8b", 16, "--pp 4 --vpp 2 --pp-first-layers 3 --pp-last-layers 3"),
    ("8b", 16, "--pp 4 --vpp 2 --pp-schedule ZBVZeroBubble --pp-first-layers 3 "
               "--pp-last-layers 3"),
    ("8b", 16, "--pp 4 --vpp 4 --pp-schedule Interleaved1F1B --pp-first-layers 2 "
               "--pp-last-layers 2"),
    ("8b", 16, "--pp 4 --pp-schedule GPipe"),
    ("qwen3-30b-a3b", 16, "--pp 4 --vpp 2 --pp-schedule ZBVZeroBubble --ep 4"),
    ("deepseek-v3", 256, "--pp 8 --ep 32 --recompute full"),
    ("deepseek-v3", 256, "--pp 8 --vpp 2 --pp-schedule DualPipeV --ep 32 --recompute full"),
]


def load_generate(path):
    tree = ast.parse(open(path).read())
    fn = next(n for n in tree.body
              if isinstance(n, ast.FunctionDef) and n.name == "_generate_llm_fqn_per_model_part")
    ns = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), ns)
    return ns["_generate_llm_fqn_per_model_part"]


def flag(text, name):
    m = re.search(r"--parallelism\.%s (\S+)" % name, text)
    return m.group(1) if m else None


def main():
    plan, pp_py = sys.argv[1], sys.argv[2]
    gen = load_generate(pp_py)
    bad = 0
    for model, gpus, flags in CASES:
        cmd = [plan, "estimate", "--model", model, "--gpus", str(gpus), "--framework",
               "torchtitan", "--system", "h100"] + shlex.split(flags)
        emitted = subprocess.run(cmd + ["--emit", "torchtitan"], capture_output=True, text=True)
        js = subprocess.run(cmd + ["--format", "json"], capture_output=True, text=True)
        # a layout that does not fit is still emitted (exit 1 with a warning); a refused one
        # (a rule) writes nothing
        if not emitted.stdout.strip() or not js.stdout.strip():
            print(f"{model} {flags}: plan refused: {(emitted.stderr or js.stderr).strip()}")
            continue
        text = emitted.stdout
        est = json.loads(js.stdout)
        lay = est["layout"]
        pp = lay["pp"]
        layers = {"405b": 126, "70b": 80, "8b": 32, "qwen3-30b-a3b": 48, "deepseek-v3": 61}[model]
        a = int(flag(text, "pipeline_parallel_first_stage_less_layers"))
        b = int(flag(text, "pipeline_parallel_last_stage_less_layers"))
        k = flag(text, "pipeline_parallel_layers_per_stage")
        sched = flag(text, "pipeline_parallel_schedule")
        single = sched in ("1F1B", "GPipe")
        if k is not None:
            S = math.ceil((layers + a + b) / int(k))
        else:
            S = pp * (1 if single else 2)
        parts = gen(S, layers, a, b)
        tt = [sum(1 for n in p if n.startswith("layers.")) for p in parts]
        spr = S // pp
        if sched in ("ZBVZeroBubble", "DualPipeV"):
            ranks = [[r, 2 * pp - 1 - r] for r in range(pp)]
        else:
            ranks = [[r + s * pp for s in range(spr)] for r in range(pp)]
        tt_rank = [sum(tt[s] for s in st) for st in ranks]
        m = re.search(r"# decoder layers per pipeline stage \(.*?\): ([0-9/]+)", text)
        plan_v = [int(x) for x in m.group(1).split("/")] if m else [layers // S] * S
        ok = plan_v == tt and spr == lay.get("vpp", 1)
        bad += not ok
        print(f"{'OK ' if ok else 'BAD'} {model:14s} {flags}\n    keys less {a}/{b} "
              f"layers_per_stage {k}: {S} stages; torchtitan {'/'.join(map(str, tt))}; plan "
              f"{'/'.join(map(str, plan_v))}; torchtitan's ranks {tt_rank}")
    print(f"{len(CASES) - bad} of {len(CASES)} agree (refused ones count as agreeing)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
