#!/usr/bin/env python3
"""simwrap.py — a plan wrapper for mgpu_fidelity.py --plan: `estimate ... --format json` of a
pipelined layout (--pp > 1) runs with --simulate and reports the simulator's step as time.step_s,
so the fidelity tables can be read for the step simulator instead of the closed form. Data from
$SIMWRAP_DATA (a data folder: the presets as committed, or a scratch copy with apply_fields.py's
fields). Used by pprows_sim.sh."""
import json, os, subprocess, sys
a = sys.argv[1:]
plan = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "build", "cli", "plan")
env = dict(os.environ, PLAN_DATA_DIR=os.environ["SIMWRAP_DATA"])
if a and a[0] == "estimate" and "json" in a and "--pp" in a and a[a.index("--pp") + 1] != "1":
    r = subprocess.run([plan] + a + ["--simulate"], capture_output=True, text=True, env=env)
    try:
        d = json.loads(r.stdout)
        s = d.get("time_simulated")
        if isinstance(s, dict) and s.get("step_s"):
            d["time"]["step_s"] = s["step_s"]
        sys.stdout.write(json.dumps(d)); sys.exit(r.returncode)
    except Exception:
        sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); sys.exit(r.returncode)
r = subprocess.run([plan] + a, env=env)
sys.exit(r.returncode)
