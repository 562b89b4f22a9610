"""Lets torchtitan b5bcd76's configuration code import where some of its runtime packages are
absent, so that bench/torchtitan_validate.py can run it (issue 19).

torchtitan imports, at module level, packages its configuration code never calls: the data
loader's grain and Hugging Face datasets, checkpointing's torch_checkpointing, wandb and
tensorboard for metrics, spmd_types for its SPMD type annotations, torchao for the float8
and MX converters. None of them is on the GPU machine (no internet there) nor on the CPU
machine. This module puts a stub in place of each such module, found from the import error
it answers and listed in the output. It reuses bench/megatron_torch_shim.py's stubs, so the
same honesty guard holds for torch: while a case runs (`guard(True)`), touching a torch stub --
attribute, call, isinstance, truth value -- raises ShimTouched, and the case fails naming the
stub instead of passing on it. A stub of one of the runtime-only packages below may be
touched (the config functions build their data loader's config from grain's ReadOptions):
each such touch is recorded with the case.

torchao is NOT stubbed: the float8 and MX converters are built by the config functions that
use them (llama3_405b, deepseek_v3_671b_float8, llama3_8b_mxfp8) and their own checks need it;
where it is absent those cases are reported "unchecked: torchao absent", not passed.

What is never stubbed: tyro (the command-line parser torchtitan's ConfigManager runs; its
source and that of its two dependencies, typeguard and docstring_parser, are put on the path
as they are, see bench/torchtitan_validate/README.md) and torchtitan itself.

torch: on the GPU machine the real torch 2.11 is used; a name torchtitan b5bcd76 imports that
torch 2.11 lacks is stubbed the same way (and listed). `--no-torch` (a development mode for a
machine without torch) stubs torch whole; a case that reaches torch then fails by the guard,
so only the checks that are plain Python pass there, and the log says which mode ran.
"""
import abc
import functools
import re
import sys

import megatron_torch_shim as _m

STUBBED = _m.STUBBED
ShimTouched = _m.ShimTouched
guard = _m.guard
describe = _m.describe

# packages whose absence is answered with a stub (imported by torchtitan at module level; none
# of them decides whether a configuration is accepted)
RUNTIME_ONLY = (  # a tuple read at each call: --stub-torchao adds torchao (development)
    "spmd_types", "grain", "datasets", "torch_checkpointing", "wandb", "tensorboard",
    "tokenizers", "safetensors", "einops", "PIL", "huggingface_hub", "torchdata",
    "blobfile", "tiktoken", "sentencepiece", "fsspec", "torchft", "triton", "numpy",
)


class _StubMetaABC(_m._StubMeta, abc.ABCMeta):
    """The Megatron shim's stub metaclass, also an ABCMeta: torchtitan derives classes from
    torch's (Stateful, nn.Module) together with ABC, which a plain type metaclass refuses.
    Used as a decorator at import (torch.library.custom_op, torch.compile, ...), it returns
    the function wrapped so that the decorator's own attributes (.register_fake) exist."""

    def __call__(cls, *a, **k):
        _m._touch(cls.__qualname__)
        if len(a) == 1 and callable(a[0]) and not k:
            return _Decorated(a[0])
        return _stub_class(f"{cls.__qualname__}()")


class _Decorated:
    """A function a stub decorated at import: calls go to the function; any attribute is a
    decorator that leaves its argument as it is."""

    def __init__(self, f):
        self.f = f
        functools.update_wrapper(self, f)

    def __call__(self, *a, **k):
        return self.f(*a, **k)

    def __get__(self, obj, owner=None):
        return self if obj is None else functools.partial(self.f, obj)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)

        def deco(*a, **k):
            if len(a) == 1 and callable(a[0]) and not k:
                return a[0]
            return lambda g: g

        return deco


def _stub_class(name):
    c = _StubMetaABC(name.rsplit(".", 1)[-1], (), {"__module__": "torchtitan_import_shim"})
    c.__qualname__ = name
    return c


_m._stub_class = _stub_class  # the stub modules make their names with this one


TOUCHED = set()  # stubs of RUNTIME_ONLY packages a case touched (allowed; listed per case)


def _touch(name):
    """The guard: a torch stub touched in a case fails it; a stub of a runtime-only package
    (the config function builds its data loader's config from grain's ReadOptions, say) is
    allowed and recorded, since none of them takes part in a check."""
    if not _m._active["on"]:
        return
    if name.split(".")[0] in RUNTIME_ONLY:
        TOUCHED.add(name.split("(")[0])
        return
    raise ShimTouched(f"stub {name} (absent from this machine's torch) used by the check")


_m._touch = _touch  # the stubs call it by this name


class _StubFinder:
    """Answers every import under one package with a stub module (a package imported inside
    try/except ImportError never raises for answer() to see)."""

    def __init__(self, top):
        self.top = top

    def find_spec(self, name, path=None, target=None):  # noqa: ARG002
        if name != self.top and not name.startswith(self.top + "."):
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        STUBBED.append(("module", spec.name, "stubbed whole (development)"))
        return _m._stub_module(spec.name)

    def exec_module(self, module):
        pass


def stub_package(top):
    """Development: stub the package `top` whole, and let the guard allow it."""
    global RUNTIME_ONLY
    RUNTIME_ONLY = RUNTIME_ONLY + (top,)
    sys.meta_path.insert(0, _StubFinder(top))


def no_torch():
    """Development mode: torch is absent; stub it whole (see the header)."""
    _m._stub_module("torch")
    STUBBED.append(("module", "torch", "--no-torch: no torch on this machine"))
    # the device questions the converters ask (tools/utils.py has_cuda_capability): an H100/H200
    cuda, version = _m._stub_module("torch.cuda"), _m._stub_module("torch.version")
    cuda.is_available = lambda: True
    cuda.get_device_capability = lambda *a, **k: (9, 0)
    version.hip, version.cuda = None, "13.0"
    STUBBED.append(("replaced", "torch.cuda", "--no-torch: answers an available (9, 0) GPU"))
    _pipeline_schedules()


def _pipeline_schedules():
    """--no-torch: the schedule classes' hierarchy and get_schedule_class's lookup, the only
    parts of torch.distributed.pipelining.schedules that torchtitan's pipeline metadata and
    stage mapping read (pipeline_parallel.py: issubclass(..., PipelineScheduleSingle), the
    V-style test `in (ScheduleZBVZeroBubble, ScheduleDualPipeV)`). Facts, not code, from torch's
    torch/distributed/pipelining/schedules.py (pytorch/pytorch 00722e6): Schedule1F1B and
    ScheduleGPipe derive from PipelineScheduleSingle; ScheduleInterleaved1F1B, ScheduleLoopedBFS,
    ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble and ScheduleDualPipeV from
    _PipelineScheduleRuntime(PipelineScheduleMulti); get_schedule_class matches the name
    case-insensitively and raises ValueError on an unknown one. Without this a stub class is
    never single-stage and every 1F1B/GPipe case fails the pipeline step on a machine without
    torch (the artefact of the 2026-11-28 CPU runs). The real torch (GPU machine) replaces all
    of it; the schedules' constructors, which need stages, run on neither."""
    mod = _m._stub_module("torch.distributed.pipelining.schedules")

    class _PipelineSchedule:  # noqa: B903 - a class for issubclass only
        pass

    class PipelineScheduleSingle(_PipelineSchedule):
        pass

    class PipelineScheduleMulti(_PipelineSchedule):
        pass

    class _PipelineScheduleRuntime(PipelineScheduleMulti):
        pass

    single = ("Schedule1F1B", "ScheduleGPipe")
    multi = ("ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "ScheduleInterleavedZeroBubble",
             "ScheduleZBVZeroBubble", "ScheduleDualPipeV")
    classes = {"_PipelineSchedule": _PipelineSchedule,
               "PipelineScheduleSingle": PipelineScheduleSingle,
               "PipelineScheduleMulti": PipelineScheduleMulti,
               "_PipelineScheduleRuntime": _PipelineScheduleRuntime}
    for n in single:
        classes[n] = type(n, (PipelineScheduleSingle,), {})
    for n in multi:
        classes[n] = type(n, (_PipelineScheduleRuntime,), {})
    for n, c in classes.items():
        setattr(mod, n, c)
    names = {n[len("Schedule"):] if n.startswith("Schedule") else n: c
             for n, c in classes.items() if not n.startswith("_")}

    def get_schedule_class(schedule_name):
        low = {k.lower(): k for k in names}
        if schedule_name.lower() not in low:
            raise ValueError(f"Unknown schedule name '{schedule_name}'. The valid options are "
                             f"{list(names)}")
        return names[low[schedule_name.lower()]]

    mod.get_schedule_class = get_schedule_class
    STUBBED.append(("replaced", "torch.distributed.pipelining.schedules",
                    "--no-torch: schedule class hierarchy and get_schedule_class (torch source "
                    "facts, pytorch 00722e6)"))


def answer(err, allow_torch):
    """Stub what the import error `err` says is missing; False when it is not ours to stub."""
    allowed = RUNTIME_ONLY + (("torch",) if allow_torch else ())

    def ok(name):
        return name.split(".")[0] in allowed

    if isinstance(err, ModuleNotFoundError) and err.name:
        if not ok(err.name):
            return False
        _m._stub_module_path(err.name, str(err)[:160])
        return True
    if isinstance(err, ImportError):
        mt = re.match(r"cannot import name '(\w+)' from '([\w.]+)'", str(err))
        if not mt or not ok(mt.group(2)):
            return False
        name, mod = mt.group(1), mt.group(2)
        if name[0].islower() and not name.isupper():
            _m._stub_module(f"{mod}.{name}")
            STUBBED.append(("module", f"{mod}.{name}", "absent here"))
        else:
            setattr(sys.modules[mod], name, _m._stub_class(f"{mod}.{name}"))
            STUBBED.append(("name", f"{mod}.{name}", "absent here"))
        return True
    if isinstance(err, AttributeError):
        mt = re.match(r"module '([\w.]+)' has no attribute '(\w+)'", str(err))
        if not mt or not ok(mt.group(1)):
            return False
        mod, name = mt.groups()
        setattr(sys.modules[mod], name, _m._stub_class(f"{mod}.{name}"))
        STUBBED.append(("name", f"{mod}.{name}", "absent here"))
        return True
    return False


def import_with_stubs(names, allow_torch):
    """Import each module in `names`, stubbing what answer() allows, until all import."""
    import importlib

    for _ in range(300):
        try:
            for n in names:
                importlib.import_module(n)
            return
        except (ImportError, AttributeError) as e:
            if not answer(e, allow_torch):
                raise
            for k in [k for k in sys.modules if k.startswith("torchtitan")]:
                del sys.modules[k]
    raise RuntimeError("too many stubs")
