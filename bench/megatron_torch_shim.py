"""Lets Megatron-LM import on a CPU machine whose only torch is Debian's python3-torch 1.13.1
(Python 3.11), so that bench/megatron_validate.py can run the argument code there
(`--torch-shim`; off by default, the GPU runs with torch 2.11 need none of it).

Megatron-LM d98e8a6 imports, at module level, torch 2.x APIs that its argument code never
calls (distributed checkpointing, DTensor, DeviceMesh, symmetric memory, torch.compile, ...),
one Python 3.12 name (typing.override) and one numpy >= 1.25 module (numpy.dtypes). This
module puts a stub in place of each such missing name, and of torch 1.13's own
torch.distributed._shard, which does not import on Python 3.11 (a dataclass with a mutable
default: Python 3.11 refuses it; fixed in torch 2.0). Each stub is found by the import error
it answers and is listed in the output; nothing that exists is replaced except:

  - torch.jit.script: returns the function unchanged. Megatron's jit_fuser is
    torch.jit.script below torch 2.2 and scripts its fused kernels at import; torch 1.13's
    TorchScript cannot compile them. Megatron's own disable_jit_fuser() does the same.
  - torch.cuda.get_device_capability() and get_device_properties().major/.minor: answer the
    capability given (--device-capability, 9.0: the H100 the cases are planned for).
    validate_args asks them (--moe-grouped-gemm needs >= 8; below 10, TP or CP needs
    CUDA_DEVICE_MAX_CONNECTIONS=1) and a CPU-only torch cannot answer. Any other device
    property read fails the case.
  - typing.override (Python 3.12, PEP 698): sets __override__ and returns the function, as
    Python 3.12 does.

Honesty guard: while a case runs (`guard(True)`), touching any stub -- attribute, call,
isinstance, comparison, truth value -- raises ShimTouched, so a case whose checks reach an
API that torch 1.13 lacks fails (and says which) instead of passing on a stub. What
validate_args and TransformerConfig check is not changed; their torch version checks see
torch 1.13 (see the README for the cases that depend on it).
"""
import importlib
import importlib.machinery
import re
import sys
import traceback
import types

STUBBED = []  # (kind, name, why)
_active = {"on": False}


class ShimTouched(RuntimeError):
    pass


def _touch(name):
    if _active["on"]:
        raise ShimTouched(f"stub {name} (absent from torch 1.13) used by the check")


class _StubMeta(type):
    """A missing class, function, dtype or constant: usable at import, refused in a case."""

    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        _touch(cls.__qualname__)
        return _stub_class(f"{cls.__qualname__}.{attr}")

    def __call__(cls, *a, **k):
        _touch(cls.__qualname__)
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # used as a decorator at import
        return _stub_class(f"{cls.__qualname__}()")

    def __instancecheck__(cls, obj):
        _touch(cls.__qualname__)
        return False

    def __subclasscheck__(cls, sub):
        _touch(cls.__qualname__)
        return False

    def __eq__(cls, other):
        _touch(cls.__qualname__)
        return cls is other

    def __hash__(cls):
        return id(cls)

    def __bool__(cls):
        _touch(cls.__qualname__)
        return True

    def __iter__(cls):
        _touch(cls.__qualname__)
        return iter(())


def _stub_class(name):
    c = _StubMeta(name.rsplit(".", 1)[-1], (), {"__module__": "megatron_torch_shim"})
    c.__qualname__ = name
    return c


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        _touch(f"{self.__name__}.{attr}")
        return _stub_class(f"{self.__name__}.{attr}")

    def __call__(self, *a, **k):
        _touch(self.__name__)
        return _stub_class(f"{self.__name__}()")


def _stub_module(name):
    m = _StubModule(name)
    m.__path__ = []
    m.__spec__ = importlib.machinery.ModuleSpec(name, None)
    m.__version__ = "0.0.0"  # read as "absent" by Megatron's version gates (triton)
    sys.modules[name] = m
    parent, _, leaf = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], leaf, m)
    return m


def _stub_module_path(name, why):
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in sys.modules and prefix != name:
            continue
        try:
            if prefix != name:
                importlib.import_module(prefix)
                continue
        except ImportError:
            pass
        _stub_module(prefix)
        STUBBED.append(("module", prefix, why))


def install_fixed(device_capability):
    """The replacements that are not stubs (see the header), before Megatron is imported."""
    import typing

    import torch

    if not hasattr(typing, "override"):

        def override(f):
            f.__override__ = True
            return f

        typing.override = override
        STUBBED.append(("python", "typing.override", "Python 3.12 name, Python 3.11 here"))
    torch.jit.script = lambda obj=None, *a, **k: obj
    STUBBED.append(("replaced", "torch.jit.script", "returns the function (TorchScript 1.13)"))
    torch.cuda.get_device_capability = lambda *a, **k: device_capability
    STUBBED.append(("replaced", "torch.cuda.get_device_capability",
                    f"answers {device_capability} (CPU-only torch)"))
    major, minor = device_capability
    # only .major and .minor: reading any other property fails the case
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(major=major,
                                                                             minor=minor)
    STUBBED.append(("replaced", "torch.cuda.get_device_properties",
                    f"major {major}, minor {minor}, nothing else (CPU-only torch)"))
    try:
        import torch.distributed._shard  # noqa: F401
    except ValueError as e:  # torch 1.13 on Python 3.11
        for k in [k for k in sys.modules if k.startswith("torch.distributed._shard")]:
            del sys.modules[k]
        _stub_module("torch.distributed._shard")
        STUBBED.append(("module", "torch.distributed._shard", f"does not import: {e}"[:120]))


def answer(err):
    """Stub what the import error `err` says is missing; False when it is not ours to stub."""
    allowed = ("torch", "numpy", "triton")
    if isinstance(err, ModuleNotFoundError) and err.name:
        if not err.name.startswith(allowed):
            return False
        _stub_module_path(err.name, str(err))
        return True
    if isinstance(err, ImportError):
        m = re.match(r"cannot import name '(\w+)' from '([\w.]+)'", str(err))
        if not m or not m.group(2).startswith(allowed):
            return False
        name, mod = m.group(1), m.group(2)
        if name[0].islower():  # a submodule (torch.distributed.checkpoint) or a function
            _stub_module(f"{mod}.{name}")
            STUBBED.append(("module", f"{mod}.{name}", "absent from this torch"))
        else:
            setattr(sys.modules[mod], name, _stub_class(f"{mod}.{name}"))
            STUBBED.append(("name", f"{mod}.{name}", "absent from this torch"))
        return True
    if isinstance(err, AttributeError):
        m = re.match(r"module '([\w.]+)' has no attribute '(\w+)'", str(err))
        if not m or not m.group(1).startswith(allowed):
            return False
        mod, name = m.groups()
        setattr(sys.modules[mod], name, _stub_class(f"{mod}.{name}"))
        STUBBED.append(("name", f"{mod}.{name}", "absent from this torch"))
        return True
    return False


def guard(on):
    _active["on"] = on


def describe(err):
    tb = traceback.extract_tb(err.__traceback__)[-1]
    return f"{type(err).__name__}: {err} ({tb.filename}:{tb.lineno})"
