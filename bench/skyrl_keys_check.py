#!/usr/bin/env python3
"""Check that a trainer YAML's keys exist in SkyRL's config dataclasses (SkyRL rejects unknown
keys: build_nested_dataclass -> validate_dict_keys_against_dataclass, skyrl/train/config/
config.py). Reads the dataclass fields statically (ast), so neither SkyRL nor torch is needed.

Usage: python3 bench/skyrl_keys_check.py SKYRL_CONFIG_PY FILE.yaml [...]
       python3 bench/skyrl_keys_check.py SKYRL_CONFIG_PY --dump-paths > tests/data/skyrl_keys.txt
         (every key path of trainer: and generator:, one a line; a path ending in .* is a dict
         whose keys are free; tests/test_emit_skyrl.c checks the emitted YAML against it)
Prints each key SkyRL lacks; exit 1 when any. Dict-typed fields (transformer_config_kwargs, ...)
are open: their keys are not checked.
"""
import ast
import sys

import yaml


def dataclass_fields(path):
    tree = ast.parse(open(path).read())
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            fields = {}
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                    fields[st.target.id] = ast.unparse(st.annotation)
            bases = [ast.unparse(b) for b in node.bases]
            classes[node.name] = (fields, bases)
    return classes


def all_fields(classes, name):
    fields, bases = classes.get(name, ({}, []))
    out = {}
    for b in bases:
        out.update(all_fields(classes, b))
    out.update(fields)
    return out


def nested_class(classes, annotation):
    """The config dataclass a field holds (Optional[X], X | None, X), or None."""
    import re

    for token in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", annotation):
        if token in classes:
            return token
    return None


def walk(classes, cls, data, prefix, bad):
    fields = all_fields(classes, cls)
    for key, value in data.items():
        if key not in fields:
            bad.append(prefix + key)
            continue
        sub = nested_class(classes, fields[key])
        if sub and isinstance(value, dict):
            walk(classes, sub, value, prefix + key + ".", bad)


def dump_paths(classes, cls, prefix, out, depth=0):
    for key, ann in all_fields(classes, cls).items():
        path = prefix + key
        sub = nested_class(classes, ann)
        if sub and depth < 8:
            out.append(path)
            dump_paths(classes, sub, path + ".", out, depth + 1)
        elif "dict" in ann.lower():
            out.append(path)
            out.append(path + ".*")
        else:
            out.append(path)


def main():
    classes = dataclass_fields(sys.argv[1])
    if sys.argv[2:] == ["--dump-paths"]:
        out = []
        dump_paths(classes, "SkyRLTrainConfig", "", out)
        print("\n".join(p for p in out if p.split(".")[0] in ("trainer", "generator")))
        return
    bad = []
    for f in sys.argv[2:]:
        walk(classes, "SkyRLTrainConfig", yaml.safe_load(open(f)) or {}, f + ": ", bad)
    for b in bad:
        print("not a SkyRL key:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
