#!/usr/bin/env python3
"""Run Megatron-LM's own argument parser and validate_args on the flag sets `plan` emits.

Reads a JSON list of cases (tests/test_emit_megatron.c writes them: PLAN_MEGATRON_CASES=FILE
build/tests/test_emit_megatron), each {"name", "args" (argv after pretrain_gpt.py), "environment"
({"set": {NAME: VALUE}, "unset": [NAME]}), "world_size", "stages" (the costed decoder layers per
pipeline stage), "mtp_layers"}. For each case, with the emitted environment and WORLD_SIZE:

  1. megatron.training.arguments.parse_args() reads the argv       (the flags exist, parse)
  2. validate_args(args)                                            (Megatron's assertions)
  3. the pipeline split Megatron builds from the flags (PipelineParallelLayerLayout when a
     layout is given, else the first/last or even split) equals the costed stages
  4. core_transformer_config_from_args(args) builds the TransformerConfig (its __post_init__
     checks more; reported apart: it can need Transformer Engine)

Prints one line per case and the counts; exit 0 when every case passes steps 1-3.
Usage: python3 bench/megatron_validate.py --megatron /path/to/Megatron-LM --cases cases.json
       [--json results.json] [--torch-shim [--device-capability 9.0]]
--torch-shim: a CPU-only machine with Debian's torch 1.13 (bench/megatron_torch_shim.py).
"""
import argparse
import contextlib
import io
import json
import os
import sys
import traceback


def megatron_split(args, LayerType, PipelineParallelLayerLayout):
    pp = args.pipeline_model_parallel_size
    if args.pipeline_model_parallel_layout is not None:
        lay = args.pipeline_model_parallel_layout
        if isinstance(lay, str):
            lay = PipelineParallelLayerLayout(lay, pp)
        lay.validate_layer_layout(args.num_layers, args.mtp_num_layers)
        return [sum(stage.count(LayerType.decoder) for stage in row) for row in lay.layout]
    first, last = args.decoder_first_pipeline_num_layers, args.decoder_last_pipeline_num_layers
    if first is None and last is None:
        assert args.num_layers % pp == 0
        return [args.num_layers // pp] * pp
    mids = pp - (first is not None) - (last is not None)
    rest = args.num_layers - (first or 0) - (last or 0)
    assert mids > 0 and rest % mids == 0
    out = [rest // mids] * pp
    if first is not None:
        out[0] = first
    if last is not None:
        out[-1] = last
    return out


def _stub_module(name):
    import importlib.machinery
    import types

    class Stub(types.ModuleType):
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return _stub_module(f"{self.__name__}.{attr}")

        def __call__(self, *a, **k):
            return None

    m = Stub(name)
    m.__path__ = []
    m.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megatron", required=True, help="Megatron-LM checkout (holds megatron/)")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--json", help="write per-case results here")
    ap.add_argument("--torch-shim", action="store_true",
                    help="CPU machine with torch 1.13: stub the torch 2.x names Megatron imports "
                    "(bench/megatron_torch_shim.py says which and why); a case touching one fails")
    ap.add_argument("--device-capability", default="9.0",
                    help="with --torch-shim: what torch.cuda.get_device_capability() answers")
    opt = ap.parse_args()
    sys.path.insert(0, opt.megatron)
    shim = None
    if opt.torch_shim:
        import megatron_torch_shim as shim

        shim.install_fixed(tuple(int(x) for x in opt.device_capability.split(".")))
    # Optional packages megatron imports at module level but the argument code never calls
    # (einops, ...): where one is missing, a stub stands in and is named in the output.
    stubbed = []
    for _ in range(100):
        try:
            from megatron.training.arguments import parse_args, validate_args  # noqa: F401
            from megatron.training.argument_utils import (  # noqa: F401
                core_transformer_config_from_args,
            )
            break
        except (ImportError, AttributeError) as e:
            if shim is None or not shim.answer(e):
                if not isinstance(e, ModuleNotFoundError):
                    raise
            else:
                for k in [k for k in sys.modules if k.startswith("megatron")]:
                    del sys.modules[k]
                continue
            name = e.name or ""
            if not name or name.split(".")[0] in ("megatron", "torch") or name in stubbed:
                raise
            stubbed.append(name)
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix not in sys.modules or prefix == name:
                    sys.modules[prefix] = _stub_module(prefix)
            for k in [k for k in sys.modules if k.startswith("megatron")]:
                del sys.modules[k]
    if stubbed:
        print("stubbed missing modules:", ", ".join(stubbed))
    if shim is not None:
        for kind, name, why in shim.STUBBED:
            print(f"torch shim: {kind} {name}: {why}")
    from megatron.training.arguments import parse_args, validate_args
    from megatron.training.argument_utils import core_transformer_config_from_args
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.pipeline_parallel_layer_layout import (
        PipelineParallelLayerLayout,
    )

    cases = json.load(open(opt.cases))
    base_env = dict(os.environ)
    counts = {"total": len(cases), "parse": 0, "validate": 0, "split": 0, "config": 0}
    results = []
    for case in cases:
        os.environ.clear()
        os.environ.update(base_env)
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
        env = case.get("environment") or {}
        for k, v in (env.get("set") or {}).items():
            os.environ[k] = v
        for k in env.get("unset") or []:
            os.environ.pop(k, None)
        os.environ["WORLD_SIZE"] = str(case["world_size"])
        os.environ["RANK"] = "0"
        os.environ["LOCAL_RANK"] = "0"
        sys.argv = ["pretrain_gpt.py"] + case["args"]
        r = {"name": case["name"], "step": "parse", "error": None}
        log = io.StringIO()
        if shim is not None:
            shim.guard(True)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                args = parse_args()
                counts["parse"] += 1
                r["step"] = "validate"
                validate_args(args)
                counts["validate"] += 1
                r["step"] = "split"
                got = megatron_split(args, LayerType, PipelineParallelLayerLayout)
                if got != case["stages"]:
                    raise AssertionError(f"Megatron builds {got}, the plan costed {case['stages']}")
                counts["split"] += 1
                r["step"] = "config"
                try:
                    core_transformer_config_from_args(args)
                except ValueError as e:
                    # a machine without Transformer Engine cannot fuse RoPE (the default); the
                    # rest of the config is checked with the fusion off, and the case says so
                    if "Please install TE" not in str(e) or not args.apply_rope_fusion:
                        raise
                    args.apply_rope_fusion = False
                    core_transformer_config_from_args(args)
                    r["note"] = "rope fusion off: Transformer Engine absent on this machine"
                counts["config"] += 1
                r["step"] = "ok"
        except SystemExit as e:  # argparse: unknown flag or bad value
            said = [ln for ln in log.getvalue().splitlines() if ": error: " in ln]
            r["error"] = f"argparse exit {e.code}: {(said or [log.getvalue()])[-1][-400:]}"
        except BaseException as e:  # noqa: BLE001 - report any failure of the case
            frames = traceback.extract_tb(e.__traceback__)
            tb = frames[-1]
            where = f"{os.path.basename(tb.filename)}:{tb.lineno}"
            mine = [f for f in frames if "/megatron/" in f.filename]
            if mine and mine[-1] is not tb:  # raised inside torch: say which Megatron line asked
                where += f" via {os.path.basename(mine[-1].filename)}:{mine[-1].lineno}"
            r["error"] = f"{type(e).__name__}: {e} ({where})"
        if shim is not None:
            shim.guard(False)
        results.append(r)
        status = "ok" if r["step"] == "ok" else f"FAIL at {r['step']}: {r['error']}"
        print(f"{case['name']:40s} {status}"[:600], flush=True)
    print(
        "passed: parse_args {parse}/{total}, validate_args {validate}/{total}, "
        "costed split {split}/{total}, TransformerConfig {config}/{total}".format(**counts)
    )
    if opt.json:
        out = {"counts": counts, "results": results}
        if shim is not None:
            import torch

            out["torch"] = torch.__version__
            out["python"] = sys.version.split()[0]
            out["torch_shim"] = [{"kind": k, "name": n, "why": w} for k, n, w in shim.STUBBED]
        json.dump(out, open(opt.json, "w"), indent=1)
    sys.exit(0 if counts["split"] == counts["total"] else 1)


if __name__ == "__main__":
    main()
