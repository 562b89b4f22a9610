"""Lets Megatron-Bridge's config code import on a machine that lacks some of Bridge's many
optional third-party packages (bench/bridge_execute.py, issue 17).

`from megatron.bridge.recipes import X` imports every model family Bridge has (diffusion, VLM,
audio, ...), and with them packages the config path never uses (omegaconf, datasets, wandb,
diffusers, qwen_vl_utils, ...). Where one of those is not installed, this puts a stub in its
place, and only where the import would otherwise stop:

  - a module is stubbed only when it cannot be found AND the statement importing it is not
    inside a `try` that catches ImportError/ModuleNotFoundError/Exception (found from the
    importing file's syntax tree), so every optional import that Bridge or Megatron-Core guards
    (Transformer Engine, Apex, DeepEP, ...) still fails as it would: HAVE_TE and its kind stay
    False, exactly as on a machine without them. importlib.util.find_spec() probes get None.
  - Transformer Engine, Apex, flash-attn, DeepEP and the like are never stubbed, guarded or not
    (NEVER_STUB): a stub of them would flip capability checks.
  - `from real_module import Name` of a name the installed version lacks (e.g. a newer
    transformers) is answered, by bridge_execute.py's import loop, with a stub attribute
    (stub_name()); each one is listed.

Guard: while a case runs (`guard(True)`), touching any stub -- attribute, call, isinstance,
issubclass, comparison, truth value -- raises StubTouched, so a case whose config checks reach a
stubbed package fails and names it instead of passing on a stub.
"""
import ast
import importlib.abc
import importlib.machinery
import os
import sys
import types

STUBBED = []  # (kind, name, importing file:line)
_active = {"on": False}
_HERE = os.path.abspath(__file__)

NEVER_STUB = {
    "transformer_engine", "transformer_engine_torch", "apex", "flash_attn", "flash_attn_3",
    "flash_mla", "deep_ep", "deep_gemm", "hybrid_ep", "nvshmem", "grouped_gemm", "modelopt",
    "mamba_ssm", "causal_conv1d", "megatron", "torch", "transformers", "triton", "numpy",
    "emerging_optimizers", "nvidia_resiliency_ext", "tensorrt_llm", "flashinfer",
}


class StubTouched(RuntimeError):
    pass


def guard(on):
    _active["on"] = bool(on)


def _touch(name):
    if _active["on"]:
        raise StubTouched(f"stub {name} (package not installed here) used by the case")


class _StubMeta(type):
    """A missing class, function or constant: usable at import, refused while a case runs."""

    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        _touch(cls.__qualname__)
        return _stub_class(f"{cls.__qualname__}.{attr}")

    def __call__(cls, *a, **k):
        _touch(cls.__qualname__)
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # a decorator applied at import
        return _stub_class(f"{cls.__qualname__}()")

    def __getitem__(cls, item):
        _touch(cls.__qualname__)
        return cls  # a generic alias in an annotation

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

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


def _stub_class(qualname):
    c = _StubMeta(qualname.split(".")[-1] or "stub", (), {})
    c.__qualname__ = qualname
    return c


def stub_name(module, name):
    """Give a real module a stub attribute it lacks (a name a newer package version dropped)."""
    setattr(module, name, _stub_class(f"{module.__name__}.{name}"))
    STUBBED.append(("name", f"{module.__name__}.{name}", ""))


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__") and attr not in ("__all__",):
            raise AttributeError(attr)
        if attr == "__all__":
            return []
        _touch(f"{self.__name__}.{attr}")
        c = _stub_class(f"{self.__name__}.{attr}")
        setattr(self, attr, c)
        return c


def stub_module(name, why):
    """Put a stub package in place of a whole module (a Bridge model family no case uses)."""
    for k in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[k]
    m = _StubModule(name)
    m.__path__ = []
    m.__bridge_stub__ = True
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, m)
    STUBBED.append(("family", name, why))


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []  # a package: its submodules are stubbed too
        m.__bridge_stub__ = True
        return m

    def exec_module(self, module):
        pass


_try_cache = {}


def _guarded_lines(path):
    """Line ranges of `try` bodies whose handlers catch an import failure."""
    if path in _try_cache:
        return _try_cache[path]
    ranges = []
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except Exception:
        tree = None
    catching = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    for n in ast.walk(tree) if tree else ():
        if isinstance(n, ast.Try):
            ok = False
            for h in n.handlers:
                if h.type is None:
                    ok = True
                else:
                    names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
                    for t in names:
                        if ast.unparse(t).split(".")[-1] in catching:
                            ok = True
            if ok and n.body:
                ranges.append((n.body[0].lineno, max(getattr(b, "end_lineno", b.lineno) for b in n.body)))
    _try_cache[path] = ranges
    return ranges


def _importer():
    """(file, line, via_find_spec) of the code asking for the import."""
    f = sys._getframe(1)
    via_find_spec = False
    while f is not None:
        fn = f.f_code.co_filename
        if fn.startswith("<frozen") or os.path.abspath(fn) == _HERE:
            if fn == "<frozen importlib.util>" and f.f_code.co_name == "find_spec":
                via_find_spec = True
            f = f.f_back
            continue
        if os.sep + "importlib" + os.sep in fn or fn.endswith("pkgutil.py"):
            if f.f_code.co_name == "find_spec" or fn.endswith("pkgutil.py"):
                via_find_spec = True
            f = f.f_back
            continue
        return fn, f.f_lineno, via_find_spec
    return None, 0, via_find_spec


class _StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        parent = sys.modules.get(name.rpartition(".")[0]) if "." in name else None
        if parent is not None and getattr(parent, "__bridge_stub__", False):
            return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)
        if top in NEVER_STUB:
            return None
        # only when no other finder has it (this finder is last on sys.meta_path)
        fn, line, via_find_spec = _importer()
        if via_find_spec or fn is None:
            return None
        if any(a <= line <= b for a, b in _guarded_lines(fn)):
            return None
        if "." in name and parent is not None and not getattr(parent, "__bridge_stub__", False):
            return None  # a missing submodule of an installed package: let it fail
        STUBBED.append(("module", name, f"{fn}:{line}"))
        return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)


def install():
    sys.meta_path.append(_StubFinder())
