#!/usr/bin/env python3
"""Static check of `plan --emit bridge` output against Megatron-Bridge's sources (issue 17).

Megatron-Bridge cannot be imported on a machine without transformers >= 5.8 (its package
__init__ imports the Hugging Face model registry), and its named recipes read the model's
config from the Hugging Face Hub (AutoBridge.from_hf_pretrained), so where neither is at hand
this checks, without importing anything, what can be checked from the source text:
  - the recipe the output imports is a `def <name>_config(` under megatron/bridge/recipes;
  - every `cfg.X = ...` names a ConfigContainer field;
  - every `cfg.X.Y = ...` names a dataclass field (annotated class attribute) of the class
    that X holds, or of its bases, found by class name in the Bridge and Megatron-LM trees
    (same-named classes are merged; cfg.model may be any GPT/MLA provider or config).
It does not check types or values, nor what the dataclasses' __post_init__ would say.
Usage: bench/bridge_fields_check.py --bridge BRIDGE/src --megatron MEGATRON-LM FILE...
"""
import argparse
import ast
import collections
import glob
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--bridge", required=True)
ap.add_argument("--megatron", required=True)
ap.add_argument("files", nargs="+")
opt = ap.parse_args()
roots = [opt.bridge, opt.megatron]
classes = {}  # name -> (fields, bases)
for r in roots:
    for f in glob.glob(r + "/megatron/**/*.py", recursive=True):
        try: t = ast.parse(open(f).read())
        except Exception: continue
        for n in ast.walk(t):
            if isinstance(n, ast.ClassDef):
                flds = set()
                for b in n.body:
                    if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name): flds.add(b.target.id)
                bases = [ast.unparse(x).split(".")[-1] for x in n.bases]
                old = classes.get(n.name)
                if old: flds |= old[0]; bases = old[1] + bases
                classes[n.name] = (flds, bases)
def allf(c, seen=None):
    seen = seen or set()
    if c in seen or c not in classes: return set()
    seen.add(c); f, b = classes[c]; out = set(f)
    for x in b: out |= allf(x, seen)
    return out
# recipe names exported
recipes = set()
for f in glob.glob(opt.bridge + "/megatron/bridge/recipes/**/*.py", recursive=True):
    recipes |= set(re.findall(r"^def (\w+_config)\(", open(f).read(), re.M))
cc = {}
src = open(opt.bridge + "/megatron/bridge/training/config.py").read()
t = ast.parse(src)
for n in ast.walk(t):
    if isinstance(n, ast.ClassDef) and n.name == "ConfigContainer":
        for b in n.body:
            if isinstance(b, ast.AnnAssign): cc[b.target.id] = ast.unparse(b.annotation)
model_cls = ["GPTModelProvider", "MLAModelProvider", "TransformerConfig", "MLATransformerConfig", "ModelParallelConfig"]
typemap = {"ddp": "DistributedDataParallelConfig", "dist": "DistributedInitConfig", "train": "TrainingConfig",
           "optimizer": "OptimizerConfig", "checkpoint": "CheckpointConfig", "dataset": "GPTDatasetConfig", "mixed_precision": "MixedPrecisionConfig"}
bad = collections.Counter()
checked = 0
for f in opt.files:
    for line in open(f):
        m = re.match(r"from megatron.bridge.recipes import (\w+)", line)
        if m and m.group(1) not in recipes: bad[("no recipe", m.group(1))] += 1
        m = re.match(r"cfg\.(\w+)\.(\w+) = ", line)
        if m:
            checked += 1
            top, fld = m.groups()
            if top == "model":
                ok = any(fld in allf(c) for c in model_cls)
            else:
                ok = fld in allf(typemap.get(top, "?"))
            if not ok: bad[(f"cfg.{top}", fld, typemap.get(top, model_cls[0]))] += 1
        m = re.match(r"cfg\.(\w+) = ", line)
        if m and m.group(1) not in cc: bad[("cfg", m.group(1))] += 1
print(f"{len(opt.files)} files, {checked} field assignments, {len(recipes)} recipes in the tree")
for k, v in bad.items():
    print("MISSING", k, v)
print("missing:", sum(bad.values()))
sys.exit(1 if bad else 0)
