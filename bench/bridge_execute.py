#!/usr/bin/env python3
"""Runs the Megatron-Bridge scripts that `plan --emit bridge` writes through Megatron-Bridge's
own code, up to the point where training would initialise the GPUs (issue 17).

For each script in a folder (bench/bridge_cases.sh writes them), in a forked child:
  1. build: the script as emitted -- Bridge's named recipe function builds the ConfigContainer
     (AutoBridge reads the checkpoint's config.json), then the emitted overrides are applied;
  2. fields: every `cfg.X.Y = value` the script makes names a declared field of the object
     cfg.X holds (a dataclass field, or of the TransformerConfig that a GPTModelConfig proxies):
     Bridge's configs accept any attribute silently, so a misspelt or dropped field would do
     nothing;
  3. validate: megatron.bridge.training.config.runtime_config_update(cfg), the first thing
     megatron.bridge.training.pretrain.pretrain() does (before GlobalState and any
     torch.distributed or CUDA initialisation): mixed-precision and comm-overlap setup, the
     data-parallel size from WORLD_SIZE, and ConfigContainer.validate() (every sub-config's
     finalize(), Megatron-Core's TransformerConfig.__post_init__ checks included);
  4. kept: after step 3, every field the script set still holds the value it set (Bridge's
     MixedPrecisionConfig.setup() and CommOverlapConfig.setup() write over model/ddp fields),
     and the parallel sizes equal the plan's header (TP, PP, CP, VPP, EP, DP).
WORLD_SIZE is the plan's GPU count (header), RANK/LOCAL_RANK 0, and CUDA_DEVICE_MAX_CONNECTIONS=1
when the script says to launch with it.

Environment, not changed by this script: the checkpoint configs come from an offline Hugging
Face cache built from data/models/*.json (the presets are those repositories' config.json;
--hf-models) under each recipe's Hub id, so no network is used; packages Bridge imports but the
config path does not use are stubbed by bench/bridge_import_shim.py (listed in the output;
touching one in a case fails that case). A failure is marked "env" when its message is about
software missing here (Transformer Engine, a stubbed package), else "plan".

Usage: bench/bridge_execute.py --bridge BRIDGE/src --megatron MEGATRON-LM --hf-models data/models
           [--json out.json] [--jobs 8] CASEDIR...
"""
import argparse
import dataclasses
import glob
import hashlib
import json
import os
import re
import sys
import time
import traceback

ap = argparse.ArgumentParser()
ap.add_argument("--bridge", required=True, help="Megatron-Bridge src/ (holds megatron/bridge)")
ap.add_argument("--megatron", required=True, help="Megatron-LM tree (holds megatron/core)")
ap.add_argument("--hf-models", required=True, help="folder of config.json presets with _plan.hf_repo")
ap.add_argument("--json", help="write per-case results here")
ap.add_argument("--timeout", type=float, default=120.0)
ap.add_argument("--only", help="regex: run only cases whose name matches")
ap.add_argument("--adapt-no-te", action="store_true",
                help="retry a case that fails only a Transformer Engine availability check "
                     "with that fusion off (NO_TE_ADAPT), and say so")
ap.add_argument("--jobs", type=int, default=8, help="cases run at once (forked)")
ap.add_argument("cases", nargs="+", help="folders of emitted scripts")
opt = ap.parse_args()

# The recipes' Hub ids that differ from the preset's hf_repo: the same repository under its
# older name (meta-llama renamed Meta-Llama-3.1-* to Llama-3.1-*).
HUB_ALIASES = {
    "meta-llama/Meta-Llama-3.1-8B": "meta-llama/Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B": "meta-llama/Llama-3.1-70B",
    "meta-llama/Meta-Llama-3.1-405B": "meta-llama/Llama-3.1-405B",
}


def build_hf_cache(root):
    """An offline Hugging Face hub cache holding config.json of every preset (and alias)."""
    hub = os.path.join(root, "hub")
    by_repo = {}
    for f in sorted(glob.glob(os.path.join(opt.hf_models, "*.json"))):
        d = json.load(open(f))
        repo = d.get("_plan", {}).get("hf_repo")
        if repo:
            d.pop("_plan", None)
            by_repo[repo] = d
    for alias, repo in HUB_ALIASES.items():
        if repo in by_repo:
            by_repo[alias] = by_repo[repo]
    pinned = pinned_revisions()
    for repo, d in by_repo.items():
        text = json.dumps(d, indent=2)
        rev = hashlib.sha1(text.encode()).hexdigest()
        base = os.path.join(hub, "models--" + repo.replace("/", "--"))
        os.makedirs(os.path.join(base, "refs"), exist_ok=True)
        open(os.path.join(base, "refs", "main"), "w").write(rev)
        for r in [rev] + pinned.get(repo, []):  # also under the commit a recipe pins
            os.makedirs(os.path.join(base, "snapshots", r), exist_ok=True)
            open(os.path.join(base, "snapshots", r, "config.json"), "w").write(text)
    return sorted(by_repo)


def pinned_revisions():
    """Hub commits the recipes pin (`_X_MODEL_ID = "org/name"` beside `_X_MODEL_REVISION =
    "<sha>"`, passed as from_hf_pretrained(..., revision=...): Qwen3-30B-A3B, Qwen3-8B, ...)."""
    out = {}
    for f in glob.glob(os.path.join(opt.bridge, "megatron/bridge/recipes/**/*.py"), recursive=True):
        text = open(f).read()
        ids = dict(re.findall(r'^(_\w*)MODEL_ID = "([^"]+)"', text, re.M))
        for prefix, sha in re.findall(r'^(_\w*)MODEL_REVISION = "([0-9a-f]{40})"', text, re.M):
            if prefix in ids:
                out.setdefault(ids[prefix], []).append(sha)
    return out


cache_root = os.path.abspath(os.environ.get("BRIDGE_EXEC_HF_HOME", "/tmp/bridge_exec_hf"))
repos = build_hf_cache(cache_root)
os.environ["HF_HOME"] = cache_root
os.environ["HF_HUB_CACHE"] = os.path.join(cache_root, "hub")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("MEGATRON_CONFIG_LOCK_DIR", cache_root)

sys.path[:0] = [os.path.abspath(opt.bridge), os.path.abspath(opt.megatron)]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bridge_import_shim as shim  # noqa: E402

shim.install()

import torch  # noqa: E402

versions = {"python": sys.version.split()[0], "torch": torch.__version__}
try:
    import transformers

    versions["transformers"] = transformers.__version__
except Exception as e:  # noqa: BLE001
    versions["transformers"] = f"absent ({e})"
for mod in ("transformer_engine", "apex", "deep_ep"):
    try:
        __import__(mod)
        versions[mod] = "present"
    except Exception:
        versions[mod] = "absent"
print("versions:", json.dumps(versions), flush=True)
print(f"hf cache: {len(repos)} repositories ({', '.join(repos)})", flush=True)

def purge_bridge():
    """Forget the partly imported Bridge modules before a retry (stubbed families stay)."""
    fams = {n for k, n, _ in shim.STUBBED if k == "family"}
    for k in [k for k in sys.modules if k.startswith("megatron.bridge")]:
        if not any(k == f or k.startswith(f + ".") for f in fams):
            del sys.modules[k]


# Bridge's conversion machinery, never stubbed; any model family that does not import here is
# (a case that needs it then fails on the stub, as "env")
INFRA = {"common", "conversion", "hf_pretrained", "decorators", "utils"}

# Import Bridge once in the parent (children fork from it). A `from M import N` that the
# installed packages lack is answered with a stub attribute N (listed), then the import is
# retried; anything else stops here.
t0 = time.time()
for attempt in range(60):
    try:
        import megatron.bridge.recipes  # noqa: F401
        from megatron.bridge.training.config import runtime_config_update  # noqa: F401

        break
    except Exception as e:  # noqa: BLE001
        m = re.match(r"cannot import name '(\w+)' from '([\w.]+)'", str(e))
        if (isinstance(e, ImportError) and m and m.group(2) in sys.modules
                and not m.group(2).startswith("megatron.")):
            shim.stub_name(sys.modules[m.group(2)], m.group(1))
        else:
            # a model family no case uses (VLM, audio, diffusion, ...) that does not import
            # here: stub that family's package, say so, and go on
            fam = None
            for fr in traceback.extract_tb(e.__traceback__):
                mm = re.search(r"/megatron/bridge/(recipes|models|diffusion)/(\w+)/", fr.filename)
                if mm and (mm.group(1) == "diffusion" or mm.group(2) not in INFRA):
                    fam = f"megatron.bridge.{mm.group(1)}.{mm.group(2)}"
                    break
            if fam is None or any(n == fam for _, n, _ in shim.STUBBED):
                traceback.print_exc()
                sys.exit(f"Megatron-Bridge does not import: {type(e).__name__}: {e}")
            print(f"family {fam} does not import here ({type(e).__name__}: {e}); stubbed",
                  flush=True)
            purge_bridge()
            shim.stub_module(fam, f"{type(e).__name__}: {e}"[:300])
            continue
        purge_bridge()
else:
    sys.exit("Megatron-Bridge does not import after 60 stubbed names")
import megatron.core  # noqa: E402

versions["megatron_core"] = getattr(megatron.core, "__version__", "?")
print(f"imported megatron.bridge.recipes in {time.time() - t0:.1f} s; megatron.core "
      f"{versions['megatron_core']}", flush=True)
for kind, name, where in shim.STUBBED:
    print(f"stubbed {kind}: {name}  ({where})", flush=True)

ASSIGN = re.compile(r"^cfg\.(\w+)\.(\w+) = (.+)$")
ENV_WORDS = re.compile(r"TP overlap needs TE|transformer.?engine|transformer_engine|\bTE\b|TE version|apex|stub |"
                       r"deep_ep|DeepEP|hybrid_ep|HybridEP|flash.attn|nvidia.resiliency|"
                       r"not installed|No module named", re.I)


def header(src):
    h = {}
    m = re.search(r"^# plan [^:]*: .* on (\d+) x ", src, re.M)
    h["gpus"] = int(m.group(1)) if m else None
    m = re.search(r"^# megatron\s+(.*)$", src, re.M)
    if m:
        for k, v in re.findall(r"\b(TP|PP|DP|CP|VPP|EP|ETP) (\d+)", m.group(1)):
            h[k] = int(v)
    h["max_connections"] = "CUDA_DEVICE_MAX_CONNECTIONS=1" in src
    return h


def declared(obj, name):
    """Whether name is a field Bridge/Megatron declares on obj (not a stray attribute)."""
    cls = type(obj)
    if dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}:
        return True
    if isinstance(getattr(cls, name, None), property):
        return True
    tr = obj.__dict__.get("transformer") if hasattr(obj, "__dict__") else None
    if tr is not None and dataclasses.is_dataclass(tr) and name in {
            f.name for f in dataclasses.fields(tr)}:
        return True
    return False


def same(a, b):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return a == b


def where_raised(tb):
    """The innermost megatron/ frame of a traceback: file:line."""
    last = None
    for fr in traceback.extract_tb(tb):
        if "/megatron/" in fr.filename:
            last = f"{fr.filename.split('/megatron/', 1)[1]}:{fr.lineno}"
    return last or "?"


# Megatron-Core checks that only a machine without Transformer Engine fails, and the switch that
# takes the check out of the way (--adapt-no-te; as bench/megatron_validate.py does for RoPE
# fusion). A case that passes only so is counted apart ("passed without TE fusions").
NO_TE_ADAPT = [
    ("apply_rope_fusion is not available", "apply_rope_fusion", False),
    ("fused permutation is not available", "moe_permute_fusion", False),
]


def run_case(path):
    res = None
    adapt = {}
    for _ in range(len(NO_TE_ADAPT) + 1):
        res = run_case_once(path, adapt)
        if not opt.adapt_no_te or res["step"] != "validate":
            break
        more = [(k, v) for msg, k, v in NO_TE_ADAPT if msg in (res["error"] or "") and k not in adapt]
        if not more:
            break
        adapt.update(more)
    if adapt:
        res["adapted"] = {k: v for k, v in adapt.items()}
        res["notes"].append("no TE here: " + ", ".join(f"{k}={v}" for k, v in adapt.items()))
    return res


def run_case_once(path, adapt):
    src = open(path).read()
    h = header(src)
    os.environ["WORLD_SIZE"] = str(h["gpus"] or 1)
    os.environ["RANK"] = "0"
    os.environ["LOCAL_RANK"] = "0"
    if h["max_connections"]:
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    else:
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    res = {"case": os.path.basename(path)[:-3], "gpus": h["gpus"], "step": None, "error": None,
           "where": None, "notes": []}
    assigns = {}
    for i, line in enumerate(src.splitlines(), 1):
        m = ASSIGN.match(line)
        if m:
            assigns[(m.group(1), m.group(2))] = (m.group(3), i)
    ns = {"__name__": "__bridge_case__"}
    shim.guard(True)
    step = "build"
    try:
        exec(compile(src, path, "exec"), ns)
        cfg = ns["cfg"]
        res["recipe_model_class"] = type(cfg.model).__name__
        step = "fields"
        bad = []
        expected = {}
        for (obj, fld), (expr, line) in assigns.items():
            target = getattr(cfg, obj)
            if not declared(target, fld):
                bad.append(f"cfg.{obj}.{fld} (line {line}) is not a field of {type(target).__name__}")
                continue
            want = eval(expr, ns)
            got = getattr(target, fld)
            expected[(obj, fld)] = want
            if not same(got, want):
                bad.append(f"cfg.{obj}.{fld} reads {got!r} after setting {want!r}")
        if bad:
            raise AssertionError("; ".join(bad))
        step = "validate"
        from megatron.bridge.training.config import runtime_config_update

        for k, v in adapt.items():
            setattr(cfg.model, k, v)
        runtime_config_update(cfg)
        step = "kept"
        bad = []
        for (obj, fld), want in expected.items():
            target = getattr(cfg, obj)
            got = getattr(target, fld)
            if fld == "pipeline_model_parallel_layout" and want is not None and got is not None:
                continue  # parsed into a PipelineParallelLayerLayout; its split is checked below
            if not same(got, want):
                bad.append(f"cfg.{obj}.{fld} {want!r} -> {got!r}")
                if (fld == "tp_comm_overlap" and want and not got
                        and versions["transformer_engine"] == "absent"):
                    # CommOverlapConfig.setup(): "Disabling tensor parallel communication
                    # overlap due to TE not detected" -- this machine, not the plan
                    res["notes"].append("tp_comm_overlap turned off by Bridge: no TE here")
        m = cfg.model
        sizes = {"TP": m.tensor_model_parallel_size, "PP": m.pipeline_model_parallel_size,
                 "CP": m.context_parallel_size, "VPP": m.virtual_pipeline_model_parallel_size or 1,
                 "DP": cfg.data_parallel_size}
        if "EP" in h:
            sizes["EP"] = getattr(m, "expert_model_parallel_size", 1)
        for k, v in sizes.items():
            if k in h and h[k] != v:
                bad.append(f"{k} {h[k]} in the plan, {v} in Bridge")
        res["sizes"] = sizes
        lay = getattr(m, "pipeline_model_parallel_layout", None)
        if lay is not None:
            res["layout"] = str(lay)[:200]
        if bad:
            env_only = all(b.startswith("cfg.model.tp_comm_overlap True") for b in bad) and \
                versions["transformer_engine"] == "absent"
            raise AssertionError("changed by Bridge" + (" (TP overlap needs TE)" if env_only else "")
                                 + ": " + "; ".join(bad))
        step = "ok"
    except BaseException as e:  # noqa: BLE001
        res["error"] = f"{type(e).__name__}: {e}".replace("\n", " ")[:600]
        res["where"] = where_raised(e.__traceback__)
        res["trace"] = traceback.format_exc()[-3000:]
    finally:
        shim.guard(False)
    res["step"] = step
    res["kind"] = "ok" if step == "ok" else ("env" if ENV_WORDS.search(res["error"] or "") else "plan")
    return res


def run_inline(path):
    """Where CUDA is already initialised a fork cannot use it: run here, environment restored."""
    saved = dict(os.environ)
    try:
        return run_case(path)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _child(path):
    try:
        return run_case(path)
    except BaseException as e:  # noqa: BLE001
        return {"case": os.path.basename(path)[:-3], "step": "crash", "kind": "plan", "error": repr(e)}


def label(path):
    base = os.path.basename(path)[:-3]
    return f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}/{base}" if len(opt.cases) > 1 else base


def report(r):
    if r["step"] == "ok":
        print(f"PASS {r['case']}  sizes={r.get('sizes')}" +
              (f" layout={r['layout']}" if r.get("layout") else "") +
              (f" note={'; '.join(r['notes'])}" if r.get("notes") else ""), flush=True)
    else:
        print(f"FAIL[{r['kind']}] {r['case']} at {r['step']}: {r['error']}  ({r.get('where')})",
              flush=True)


files = []
for d in opt.cases:
    files += sorted(glob.glob(os.path.join(d, "*.py")))
if opt.only:
    files = [f for f in files if re.search(opt.only, os.path.basename(f))]
results = []


def record(f, r, t):
    r["case"] = label(f)
    r["folder"] = os.path.basename(os.path.dirname(os.path.abspath(f)))
    if t is not None:
        r["seconds"] = round(t, 2)
    results.append(r)
    report(r)
    if opt.json:  # written after every case: a run cut short keeps what it did
        json.dump({"versions": versions, "stubbed": shim.STUBBED, "hf_repos": repos,
                   "argv": sys.argv, "results": results}, open(opt.json, "w"), indent=1,
                  default=str)


if torch.cuda.is_initialized():
    print("CUDA initialised at import: cases run one by one in this process", flush=True)
    for f in files:
        t = time.time()
        record(f, run_inline(f), time.time() - t)
else:
    # one fresh fork of this (imported) process per case, opt.jobs at a time
    import multiprocessing as mp

    pool = mp.get_context("fork").Pool(opt.jobs, maxtasksperchild=1)
    pending = [(f, pool.apply_async(_child, (f,))) for f in files]
    again = []
    for f, ar in pending:
        try:
            r = ar.get(timeout=opt.timeout)
        except mp.TimeoutError:
            r = {"step": "timeout", "kind": "plan", "error": f"no answer in {opt.timeout} s"}
        except Exception as e:  # noqa: BLE001
            r = {"step": "crash", "kind": "plan", "error": repr(e)}
        if "Cannot re-initialize CUDA in forked subprocess" in (r.get("error") or ""):
            again.append(f)  # torch refuses CUDA in a fork once the parent touched it
            continue
        record(f, r, None)  # cases overlap: no per-case time
    pool.terminate()
    for f in again:  # here, after every fork: this process may initialise CUDA itself
        t = time.time()
        r = run_inline(f)
        r["notes"] = r.get("notes", []) + ["run in the parent process (CUDA)"]
        record(f, r, time.time() - t)

results.sort(key=lambda r: r["case"])
summary = {}
for r in results:
    key = ("passed without TE fusions" if r.get("adapted") else "passed") if r["step"] == "ok" \
        else f"failed at {r['step']} ({r['kind']})"
    per = summary.setdefault(r["folder"], {})
    per[key] = per.get(key, 0) + 1
for folder, tally in summary.items():
    n = sum(tally.values())
    print(f"{folder}: cases {n}: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
npass = sum(1 for r in results if r["step"] == "ok")
print(f"{npass} passed, {len(results) - npass} failed")
if opt.json:
    json.dump({"versions": versions, "stubbed": shim.STUBBED, "hf_repos": repos,
               "argv": sys.argv, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
               "tally": summary, "results": results}, open(opt.json, "w"), indent=1, default=str)
sys.exit(0 if npass == len(results) else 1)
