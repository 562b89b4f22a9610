#!/usr/bin/env python3
"""The config the fidelity harnesses hand plan for a native run prices the model the run built.

bench/realruns/native_config.py (issue 19, helper tpglm25): realrun.py --impl native and
parallel_run.py train native_llama.py's plain Llama blocks whatever the config's family adds, and
each run's record counts that model's parameters (`params`). plan, given the config that
native_config() writes (cut to the run's layers, as fidelity.py and mgpu_fidelity.py cut it), must
count the same parameters. With the config as it was handed before (the Hugging Face config.json
itself), GLM-4-9B cut to 8 layers counted 102,400 more (q/k/v biases 8 x 4,608 and the two
post-norms 8 x 8,192) and Qwen2.5-14B cut to 16 layers 16 x 7,168 more (q/k/v biases); the EP
run of Qwen1.5-MoE cut to 6 layers 6 x 34,605,056 more (the shared expert and its gate).
Usage: test_native_config.py PLAN ROOT (meson passes both). Standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile

PLAN, ROOT = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
from native_config import native_config  # noqa: E402

# (results file, label): native records whose config has a form native_llama.py does not build
# (GLM-4's biases and post-norms, Qwen2's biases, Phi-3's fused qkv) or none (Mistral-Nemo)
RECORDS = [
    ("bench/results/ho25b_2026-11-29/x2all/results.jsonl", "ho25b-tp2-glm4-9bL8-s8k-b1"),
    ("bench/results/ho25_2026-11-29/x2all/results.jsonl", "ho25-pp2-zbv-q25-14bL16-m8"),
    ("bench/results/ho25_2026-11-29/x2all/results.jsonl", "ho25-tp2-phi4L8-s8k-b1"),
    ("bench/results/ho22_2026-11-29/x2/jobs/results.jsonl", "ho22-tp2-nemo12L8-s8k-b1"),
    # an EP run of parallel_run.py's MoEBlock (routed experts only) from a config with a shared
    # expert: Qwen1.5-MoE's 5632-wide shared expert and its gate, never built (ho27)
    ("bench/results/ho27_2026-11-29/x2all/results.jsonl", "ho27-ep2-grp-q15moeL6-s4k-b2"),
    ("bench/results/ho26_2026-11-29/x4all/results.jsonl", "ho26-ep4-grp-olmoeL8-s4k-b2"),
]


def record(path, label):
    with open(os.path.join(ROOT, path)) as f:
        for ln in f:
            r = json.loads(ln)
            if r.get("label") == label:
                return r
    raise SystemExit("no record %s in %s" % (label, path))


def plan_params(cfg, tmp):
    p = os.path.join(tmp, "m.json")
    with open(p, "w") as f:
        json.dump(cfg, f)
    res = subprocess.run([PLAN, "estimate", "--model", p, "--system", "h200", "--gpus", "1",
                          "--seq", "1024", "--mbs", "1", "--gbs", "1", "--format", "json"],
                         capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
    if res.returncode not in (0, 2) or not res.stdout.strip():
        raise SystemExit("plan failed: %s" % res.stderr)
    return json.loads(res.stdout)["model"]["params_total"]


fails = 0
with tempfile.TemporaryDirectory() as tmp:
    for path, label in RECORDS:
        r = record(path, label)
        assert r.get("impl") == "native", label
        with open(os.path.join(ROOT, r["config"])) as f:
            cfg = native_config(json.load(f))
        cfg["num_hidden_layers"] = r["layers"]
        got = plan_params(cfg, tmp)
        ok = got == r["params"]
        fails += not ok
        print("%-32s run %d plan %d %s" % (label, r["params"], got, "ok" if ok else "DIFFERS"))
sys.exit(1 if fails else 0)
