import json, subprocess, sys, glob, os, tempfile, collections
src, want, pb = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = ["mgpu_fidelity.py"]; sys.path.insert(0, "bench/realruns")
import mgpu_fidelity as mf
tmp = tempfile.mkdtemp()
for line in open(src):
    rec = json.loads(line)
    if rec.get("label") != want: continue
    fw, a, note = mf.layout(rec)
    cfg = json.load(open(os.path.join(mf.ROOT, rec["config"])))
    split = bool(cfg.get("tie_word_embeddings")) and rec.get("pp", 1) > 1
    tr = tmp + "/t.json"
    r = subprocess.run([pb, "simulate", "--model", mf.config_for(rec, tmp, untie=split), "--system", mf.system_of(rec.get("gpu"))] + a + ["--trace", tr], capture_output=True, text=True)
    print(r.stdout.strip()[-300:], r.stderr[:300])
    d = json.load(open(tr)); ev = d["traceEvents"] if isinstance(d, dict) else d
    busy = collections.defaultdict(float); names = collections.defaultdict(float)
    for e in ev:
        if e.get("ph") != "X": continue
        busy[(e.get("pid"), e.get("tid"))] += e["dur"] / 1e6
        names[(e.get("pid"), e.get("name", "")[:20])] += e["dur"] / 1e6
    for k in sorted(busy): print(k, round(busy[k], 4))
    for k in sorted(names): print(k, round(names[k], 4))
    break
