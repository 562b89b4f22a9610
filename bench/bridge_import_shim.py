"""Lets Megatron-Bridge's config code import on a machine that lacks some of Bridge's many
optional third-party packages (bench/bridge_execute.py, issue 17).

`from megatron.bridge.recipes import X` imports every model family Bridge has (diffusion, VLM,
audio, ...), and with them packages the config path never uses (omegaconf, datasets, wandb,
diffusers, ...). Megatron-Bridge also imports Transformer Engine without a guard in a few
modules that the config path imports but does not use (megatron/bridge/peft/lora_layers.py:20
`import transformer_engine.pytorch as te`, reached from AutoBridge through
models/conversion/peft_bridge.py), so on a machine without TE it does not import at all.
builtins.__import__ is wrapped so that such an import statement gets a stub, and only there:

  - only when the module the statement names is absent AND the statement is not inside a `try`
    that catches ImportError/ModuleNotFoundError/Exception (found from the importing file's
    syntax tree); every guarded import -- each HAVE_TE / HAVE_APEX / HAVE_DEEP_EP probe of
    Megatron-Core and Bridge -- fails exactly as on any machine without the package;
  - the stub is handed to that statement only, never put in sys.modules, so a later guarded
    import, importlib.util.find_spec() and get_te_version() still find nothing (TE version
    0.0.0, HAVE_TE False): the case is checked as on a machine without Transformer Engine;
  - Megatron, torch, transformers, numpy and huggingface_hub are never stubbed;
  - `from real_module import Name` of a name the installed version lacks is answered, by
    bridge_execute.py's import loop, with a stub attribute (stub_name()), and a Bridge model
    family that no case uses and that does not import here is replaced whole (stub_module());
    each one is listed.

Guard: while a case runs (`guard(True)`), touching any stub -- attribute, call, isinstance,
issubclass, comparison, truth value -- raises StubTouched, so a case whose config checks reach a
stubbed package fails and names it instead of passing on a stub.
"""
import ast
import os
import sys
import types

STUBBED = []  # (kind, name, importing file:line)
_active = {"on": False}
_HERE = os.path.abspath(__file__)


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


_private = {}  # name -> stub module handed to one unguarded import site, never in sys.modules
CORE = {"megatron", "torch", "transformers", "numpy", "huggingface_hub"}
_real_import = None


def _private_stub(name):
    if name not in _private:
        m = _StubModule(name)
        m.__path__ = []
        m.__bridge_stub__ = True
        _private[name] = m
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(_private_stub(parent), child, m)
    return _private[name]


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    try:
        return _real_import(name, globals, locals, fromlist, level)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        # only the module this statement names (or a parent of it) being absent, never an
        # absence deeper inside a real module this statement imports; never a core package
        if (level != 0 or not missing or not (name == missing or name.startswith(missing + "."))
                or missing.split(".")[0] in CORE):
            raise
        f = sys._getframe(1)
        fn, line = f.f_code.co_filename, f.f_lineno
        if fn.startswith("<") or any(a <= line <= b for a, b in _guarded_lines(fn)):
            raise  # a guarded import: it fails here as on any machine without the package
        if not any(n == name for k, n, _ in STUBBED if k == "module"):
            STUBBED.append(("module", name, f"{fn}:{line}"))
        leaf = _private_stub(name)  # with its parents, linked
        return leaf if fromlist else _private_stub(name.split(".")[0])


class _StubChildFinder:
    """Submodules of a Bridge family replaced by stub_module() are stubs too."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        import importlib.machinery

        parent = sys.modules.get(name.rpartition(".")[0])
        if parent is None or not getattr(parent, "__bridge_stub__", False):
            return None
        return importlib.machinery.ModuleSpec(name, _StubChildLoader(), is_package=True)


class _StubChildLoader:
    @staticmethod
    def create_module(spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        m.__bridge_stub__ = True
        return m

    @staticmethod
    def exec_module(module):
        pass


def install():
    global _real_import
    import builtins

    sys.meta_path.append(_StubChildFinder())

    if _real_import is None:
        _real_import = builtins.__import__
        builtins.__import__ = _import
