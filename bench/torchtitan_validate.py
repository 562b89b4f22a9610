#!/usr/bin/env python3
"""Run torchtitan's own configuration code on the commands `plan --emit torchtitan` writes.

Reads a cases file from bench/torchtitan_cases.py (each case: the emitted text and the layout
plan costed). For each case it takes the torchrun line of the emitted text, the world size
(--nproc-per-node x the --nnodes default) and the arguments after `-m torchtitan.train`, and
runs, in torchtitan b5bcd76's code (a checkout given by --torchtitan):

  1. parse     ConfigManager().parse_args(args): --module/--config load the config function,
               tyro parses the --section.option overrides and the activation-checkpoint
               subcommand, the dataclasses' __post_init__ checks run (TrainingConfig,
               ParallelismConfig, CompileConfig, Trainer.Config: batch, CUDA graphs, ...)
               Then "as plan costed": the parsed config against the layout plan costed
               (cfg21 added the DP replicate/shard degrees, FSDP's resolved reshard, the
               batch in tokens and the optimizer implementation)
  2. dims      ParallelDims.from_config(config.parallelism, world_size): its _validate
               (the product of the degrees is the world size, EP divides dp_shard x cp x tp)
  3. trainer   the checks Trainer.__init__ makes before it needs a GPU, run from trainer.py's
               own source (its statements, found by their text in the AST and executed as
               they are): the micro-batch tokens divisible by TP (SP) x 2 CP; the model
               config's update_from_config (TP divides the heads and KV heads, EP divides the
               experts, CP needs FlexAttention and the spmd_types backend, the sequence fits
               RoPE); the config overrides; _validate_cuda_graphs with the model's dispatcher;
               the tokens per step divisible by one accumulation step's tokens; plan's micro-batches
               per step are torchtitan's pipeline micro-batches (one flush) with PP, its
               accumulation steps without
  4. pipeline  with PP: _get_pipeline_metadata (stages per rank for the schedule class torch's
               get_schedule_class returns), _generate_llm_fqn_per_model_part (the split) and
               _get_pp_rank_to_stage_indices_mapping for every PP rank (V schedules: two
               stages a rank); the stage count is plan's pp x vpp and the decoder layers per
               stage are the ones plan costed (cfg21: --no-torch builds the schedule classes'
               hierarchy from torch's source facts, torchtitan_import_shim._pipeline_schedules)

Prints one line per case and the counts; exit 0 when every case passes 1-4.
Usage: python3 bench/torchtitan_validate.py --torchtitan DIR --deps DIR --cases cases.json
       [--json results.json] [--no-torch]
--deps: a folder holding tyro, typeguard and docstring_parser (their sources; see the README).
--no-torch: development mode for a machine without torch (bench/torchtitan_import_shim.py):
torch is all stubs and the guard is off, so a pass there proves nothing about torch's side.
"""
import argparse
import ast
import contextlib
import io
import json
import os
import re
import shlex
import sys
import textwrap
import traceback
import types


def torchrun_args(text):
    """(world size, the arguments after -m torchtitan.train) of the emitted command."""
    joined = re.sub(r"\\\n", " ", text)
    line = next(ln for ln in joined.splitlines() if ln.startswith("torchrun "))
    argv = shlex.split(line)

    def default(v):  # "${NNODES:-2}" -> 2
        m = re.fullmatch(r"\$\{\w+:-(\d+)\}", v)
        return int(m.group(1)) if m else int(v)

    nproc = default(argv[argv.index("--nproc-per-node") + 1])
    nnodes = default(argv[argv.index("--nnodes") + 1])
    i = argv.index("-m")
    assert argv[i + 1] == "torchtitan.train", argv[i + 1]
    return nproc * nnodes, argv[i + 2:]


def trainer_statements(trainer_src):
    """The statements of Trainer.__init__ that check the batch, from trainer.py's source:
    the SP/CP divisibility check (from `num_tokens_per_pp_microbatch = ...` to its `if`) and
    the tokens-per-step block (from `self.num_pp_microbatches = ...` to
    `self.gradient_accumulation_steps = ...`)."""
    tree = ast.parse(trainer_src)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    body = init.body
    src = [ast.get_source_segment(trainer_src, s) for s in body]

    def find(prefix):
        return next(i for i, s in enumerate(src) if s.startswith(prefix))

    a = find("num_tokens_per_pp_microbatch =")
    b = find("if num_tokens_per_pp_microbatch % seq_len_divisor")
    c = find("self.num_pp_microbatches =")
    d = find("self.gradient_accumulation_steps =")
    lines = [(body[a].lineno, body[b].end_lineno), (body[c].lineno, body[d].end_lineno)]
    blocks = []
    for lo, hi in lines:
        code = textwrap.dedent("\n".join(trainer_src.splitlines()[lo - 1:hi]))
        blocks.append((f"trainer.py:{lo}-{hi}", compile(code, f"trainer.py:{lo}", "exec")))
    return blocks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torchtitan", required=True, help="torchtitan checkout (holds torchtitan/)")
    ap.add_argument("--deps", required=True, help="folder with tyro, typeguard, docstring_parser")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--json", help="write per-case results here")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--stub-torchao", action="store_true",
                    help="development: stub torchao too, so that the config functions that "
                    "build a float8/MX converter parse (the converter's own checks do not run)")
    opt = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, opt.deps, opt.torchtitan]
    import torchtitan_import_shim as shim

    if opt.no_torch:
        shim.no_torch()
    if opt.stub_torchao:
        shim.stub_package("torchao")
    modules = ["torchtitan.config", "torchtitan.trainer", "torchtitan.distributed",
               "torchtitan.distributed.pipeline_parallel", "torchtitan.distributed.fsdp"]
    data = json.load(open(opt.cases))
    cases = data["cases"]
    for c in cases:
        _, args = torchrun_args(c["emitted"])
        mod = args[args.index("--module") + 1]
        if f"torchtitan.models.{mod}.config_registry" not in modules:
            modules.append(f"torchtitan.models.{mod}.config_registry")
    # a torch name absent from this torch is stubbed too (listed; the guard fails a case that uses it)
    shim.import_with_stubs(modules, allow_torch=True)
    import torch
    import tyro

    from torchtitan.config import ConfigManager
    from torchtitan.config.override import apply_overrides
    from torchtitan.distributed import ParallelDims
    from torchtitan.distributed import pipeline_parallel as ppmod
    from torchtitan.distributed.fsdp import \
        get_fsdp_reshard_after_forward_policy as reshard_policy

    versions = {"torch": getattr(torch, "__version__", "stub"), "tyro": tyro.__version__,
                "python": sys.version.split()[0]}
    print("versions:", json.dumps(versions))
    for kind, name, why in shim.STUBBED:
        print(f"import shim: {kind} {name}: {why}"[:200])
    trainer_src = open(os.path.join(opt.torchtitan, "torchtitan", "trainer.py")).read()
    blocks = trainer_statements(trainer_src)

    counts = {"total": len(cases), "parse": 0, "intent": 0, "dims": 0, "trainer": 0, "pipeline": 0,
              "unchecked": 0, "expected": 0}
    results = []
    for case in cases:
        r = {"name": case["name"], "step": "parse", "error": None}
        log = io.StringIO()
        shim.TOUCHED.clear()
        if opt.no_torch:  # the stub GPU answers the planned system's capability (Blackwell: 10.0)
            blackwell = re.search(r"--system (b200|b300|gb200|gb300)", case["plan"])
            torch.cuda.get_device_capability = (lambda cap: lambda *a, **k: cap)(
                (10, 0) if blackwell else (9, 0))
        shim.guard(not opt.no_torch)  # --no-torch: development only, torch is all stubs
        try:
            world, args = torchrun_args(case["emitted"])
            r["world_size"] = world
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                config = ConfigManager().parse_args(list(args))
                counts["parse"] += 1
                r["step"] = "intent"
                differs = intent_differs(config, case["layout"], reshard_policy)
                if differs:
                    raise AssertionError("torchtitan reads " + "; ".join(differs))
                counts["intent"] += 1
                r["step"] = "dims"
                pd = ParallelDims.from_config(config.parallelism, world)
                counts["dims"] += 1
                r["step"] = "trainer"
                model_config = config.model_spec.model
                model_config.update_from_config(config=config)
                if config.override.imports:
                    apply_overrides(config.override, config)
                config._validate_cuda_graphs()
                # dp_degree: the size of ParallelDims' "batch" mesh, dp_replicate x dp_shard
                # (parallel_dims.py build_mesh), 1 when data parallelism is off
                dp_degree = pd.dp_replicate * pd.dp_shard if pd.dp_enabled else 1
                self_ = types.SimpleNamespace()
                ns = {"config": config, "parallel_dims": pd, "dp_degree": dp_degree,
                      "self": self_}
                for where, code in blocks:
                    exec(code, ns)  # noqa: S102 - torchtitan's own statements
                r["gradient_accumulation_steps"] = self_.gradient_accumulation_steps
                # cfg21: the micro-batches a data-parallel rank runs a step are the ones plan
                # costed, in one pipeline flush with PP (plan prices m micro-batches through
                # one schedule, the bubble once), as accumulation steps without
                mb = case["layout"]["microbatches"]
                want = (mb, 1) if pd.pp_enabled else (1, mb)
                got = (self_.num_pp_microbatches, self_.gradient_accumulation_steps)
                if got != want:
                    raise AssertionError(
                        f"torchtitan runs {got[0]} pipeline micro-batches x {got[1]} "
                        f"accumulation steps, plan costed {want[0]} x {want[1]}")
                counts["trainer"] += 1
                r["step"] = "pipeline"
                if pd.pp_enabled:
                    par = config.parallelism
                    nstages, nlayers, inw, outw = ppmod._get_pipeline_metadata(
                        pd, par, model_config)
                    parts = ppmod._generate_llm_fqn_per_model_part(nstages, nlayers, inw, outw)
                    for rank in range(pd.pp):
                        ppmod._get_pp_rank_to_stage_indices_mapping(
                            rank, pd.pp, par.pipeline_parallel_schedule, nstages)
                    split = [sum(1 for n in p if n.startswith("layers.")) for p in parts]
                    r["split"] = split
                    if len(split) != case["layout"]["pp"] * case["layout"]["vpp"]:
                        raise AssertionError(f"torchtitan builds {len(split)} stages, plan "
                                             f"costed {case['layout']['pp']} x "
                                             f"{case['layout']['vpp']}")
                    want = costed_split(case)
                    if want == "equal":
                        want = [split[0]] * len(split) if len(set(split)) != 1 else split
                    if want is not None and want != split:
                        raise AssertionError(f"torchtitan splits {split}, plan costed {want}")
                counts["pipeline"] += 1
                r["step"] = "ok"
        except SystemExit as e:  # tyro: unknown option or bad value
            said = [ln for ln in log.getvalue().splitlines() if ln.strip()]
            r["error"] = f"tyro exit {e.code}: " + " | ".join(said[-12:])[-600:]
        except ImportError as e:
            if "torchao" not in str(e):
                raise
            r["step"] = "unchecked"
            r["error"] = f"torchao absent: {e}"
            counts["unchecked"] += 1
        except BaseException as e:  # noqa: BLE001 - report any failure of the case
            frames = traceback.extract_tb(e.__traceback__)
            tb = frames[-1]
            where = (f"{os.path.relpath(tb.filename, opt.torchtitan)}:{tb.lineno}"
                     if os.path.isabs(tb.filename) else tb.filename)  # exec'd trainer.py lines
            r["error"] = f"{type(e).__name__}: {e} ({where})"
        shim.guard(False)
        said = "# NO torchtitan config ships" in case["emitted"]
        if said and r["step"] not in ("ok", "unchecked"):
            # the emitted text says no shipped config fits (a model or a sequence it lacks):
            # the user writes that config; torchtitan refusing the stand-in is expected
            r["expected"] = True
            counts["expected"] += 1
        if shim.TOUCHED:
            r["runtime_stubs_touched"] = sorted(shim.TOUCHED)
        results.append(r)
        status = "ok" if r["step"] == "ok" else f"FAIL at {r['step']}: {r['error']}"
        if r["step"] == "unchecked":
            status = f"UNCHECKED: {r['error']}"
        if r.get("expected"):
            status = f"EXPECTED (the text says no shipped config fits): {r['error']}"
        print(f"{case['name']:34s} {status}"[:700], flush=True)
    print("passed: parse {parse}/{total}, as plan costed {intent}/{total}, ParallelDims {dims}/{total}, trainer checks "
          "{trainer}/{total}, pipeline {pipeline}/{total}; unchecked (torchao absent) "
          "{unchecked}; refused as the emitted text says (no shipped config fits) "
          "{expected}".format(**counts))
    back = {}
    for c in cases:
        back[c.get("readback", "not recorded")] = back.get(c.get("readback", "not recorded"), 0) + 1
    print(f"plan check reads the emitted text back (torchtitan_cases.py): {back}")
    for rf in data.get("refused_by_plan", []):
        print(f"refused by plan (not emitted): {rf['name']}: {rf['message'][:160]}")
    if opt.json:
        tmp = opt.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"versions": versions, "counts": counts, "results": results,
                       "stubbed": shim.STUBBED}, f, indent=1)
        os.replace(tmp, opt.json)
    done = counts["pipeline"] + counts["unchecked"] + counts["expected"]
    return 0 if done == counts["total"] else 1


def intent_differs(config, lay, reshard_policy):
    """What the parsed Trainer.Config says against the layout plan costed (the config function's
    own settings can survive the overrides): [] when they agree."""
    par, tr, cc = config.parallelism, config.training, config.compile
    ac = type(config.activation_checkpoint).__qualname__.split(".")[0]
    want_ac = {"none": "NoneType", "selective": "SelectiveAC", "full": "FullAC"}[lay["recompute"]]
    rows = [
        ("tensor_parallel_degree", par.tensor_parallel_degree, lay["tp"]),
        ("pipeline_parallel_degree", par.pipeline_parallel_degree, lay["pp"]),
        ("context_parallel_degree", par.context_parallel_degree, lay["cp"]),
        ("expert_parallel_degree", par.expert_parallel_degree, lay["ep"]),
        ("compile.enable", cc.enable, lay["compile"]),
        ("compile.enable_async_tensor_parallel", cc.enable_async_tensor_parallel,
         lay.get("async_tp", False)),
        ("training.disable_cuda_graphs", tr.disable_cuda_graphs, not lay["cuda_graphs"]),
        ("training.enable_cpu_offload", tr.enable_cpu_offload, lay["offload"]),
        ("training.max_context_length", tr.max_context_length, lay["seq"]),
        ("activation_checkpoint", ac, want_ac),
    ]
    # cfg21: the data-parallel split (HSDP: plan's shard group counts dp x cp ranks, FSDP
    # shards over dp_shard x cp, parallel_dims.py), FSDP's reshard as torchtitan resolves the
    # policy (distributed/fsdp.py get_fsdp_reshard_after_forward_policy), the batch in tokens,
    # the optimizer implementation
    shard = lay["shard_size"] if lay.get("shard_size") else lay["dp"] * lay["cp"]
    replicate = lay["dp"] * lay["cp"] // shard
    rows += [
        ("data_parallel_replicate_degree", par.data_parallel_replicate_degree, replicate),
        ("data_parallel_shard_degree", par.data_parallel_shard_degree, lay["dp"] // replicate),
        ("reshard after forward (resolved)",
         reshard_policy(par.fsdp_reshard_after_forward, lay["pp"] > 1),
         lay["reshard_after_forward"]),
        ("training.num_tokens_per_microbatch_per_dp_rank",
         tr.num_tokens_per_microbatch_per_dp_rank, lay["mbs"] * lay["seq"]),
        ("training.num_tokens_per_train_step", tr.num_tokens_per_train_step,
         lay["gbs"] * lay["seq"]),
        ("optimizer.implementation", config.optimizer.implementation, lay["optimizer_impl"]),
    ]
    if lay["tp"] > 1:
        rows.append(("enable_sequence_parallel", par.enable_sequence_parallel, lay["sp"]))
    if lay["pp"] > 1:
        rows.append(("pipeline_parallel_schedule", par.pipeline_parallel_schedule,
                     lay["pp_schedule"]))
    if lay["compile"]:
        rows.append(("compile.components has model", "model" in cc.components, True))
        rows.append(("compile.components has loss", "loss" in cc.components,
                     not lay.get("loss_eager", False)))
    return [f"{k} {got!r}, plan costed {want!r}" for k, got, want in rows if got != want]


def costed_split(case):
    """The decoder layers per (virtual) stage plan costed (costmodel/pp_split.c): the emitted
    comment "# decoder layers per pipeline stage (...): 7/8/.../7" where the split is uneven,
    else the layers in equal parts; None without a pipeline."""
    lay, text = case["layout"], case["emitted"]
    n = lay["pp"] * lay["vpp"]
    if lay["pp"] < 2:
        return None
    m = re.search(r"# decoder layers per pipeline stage \(.*?\): ([0-9/]+)", text)
    if m:
        return [int(x) for x in m.group(1).split("/")]
    return "equal"  # no comment: plan costed equal stages


if __name__ == "__main__":
    sys.exit(main())
