"""Closed form and simulator of every real ZBV run (bench/results/**/results.jsonl, ho20 left
out), priced as bench/realruns/mgpu_fidelity.py prices it, by each plan binary given (ttpp20's
script, without its stripping of --pp-first/last-layers: every binary here reads them).
Usage: python3 zbv_rows.py PLAN [PLAN...] (from the repository root)"""
import json, subprocess, sys, glob, os, tempfile
planbins = sys.argv[1:]
sys.argv = ["mgpu_fidelity.py"]
sys.path.insert(0, "bench/realruns")
import mgpu_fidelity as mf
seen = set()
tmp = tempfile.mkdtemp()
for f in sorted(glob.glob("bench/results/**/results.jsonl", recursive=True)):
    if "ho20" in f: continue
    for line in open(f):
        try: rec = json.loads(line)
        except Exception: continue
        lab = rec.get("label", "")
        if "zbv" not in lab or lab in seen or rec.get("error") or rec.get("oom"): continue
        seen.add(lab)
        fw, a, note = mf.layout(rec)
        if a is None: continue
        cfg = json.load(open(os.path.join(mf.ROOT, rec["config"])))
        split = bool(cfg.get("tie_word_embeddings")) and rec.get("pp", 1) > 1
        out = [lab, "real %.4f" % rec["step_s_median"]]
        for pb in planbins:
            r = subprocess.run([pb, "estimate", "--model", mf.config_for(rec, tmp, untie=split), "--system", mf.system_of(rec.get("gpu"))] + a + ["--format", "json", "--simulate"], capture_output=True, text=True)
            if not r.stdout.strip().startswith("{"): out.append("refused " + r.stderr[:80]); continue
            j = json.loads(r.stdout)
            out.append("closed %.4f sim %.4f" % (j["time"]["step_s"], j["time_simulated"]["step_s"]))
        print(" | ".join(out))
