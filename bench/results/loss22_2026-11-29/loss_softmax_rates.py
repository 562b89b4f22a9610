#!/usr/bin/env python3
"""The HF loss's cunn_SoftMaxForward / cunn_SoftMaxBackward (fp32 rows of the vocabulary) in
every H200 torch.profiler kernel list already in the repository: time, logits, and the rate
at the unique bytes costmodel/elementwise.c lists (8 and 12 a logit) and at the bytes the
kernels' passes move when a row does not stay in L2 between passes (16 and 16: forward reads
the row for the max, again for the sum of exp, again to write; backward reads the gradient
for its sum, then gradient and output, and writes). Vocabularies from
bench/realruns/configs/<model>.json. Usage: python3 loss_softmax_rates.py (from the repo root)."""
import json, statistics

HBM = 4.8e12  # data/systems/h200.json gpu.hbm_bandwidth_bytes_per_s
VOCAB = {m: json.load(open(f"bench/realruns/configs/{m}.json"))["vocab_size"] for m in (
    "gemma-2-27b", "gpt-oss-20b", "llama-3.2-3b", "qwen3-4b", "gemma-3-1b", "gemma-2-9b",
    "qwen3-30b-a3b", "phi-3-mini-4k", "mixtral-8x7b", "llama-3.2-1b", "smollm2-360m")}


def softmax_times(obj, out):
    if isinstance(obj, dict):
        for v in obj.values():
            softmax_times(v, out)
    elif isinstance(obj, list):
        if len(obj) == 3 and isinstance(obj[0], str) and "float, float, float" in obj[0]:
            if "cunn_SoftMaxForward<" in obj[0]:
                out["fwd"] = out.get("fwd", 0) + obj[1]
            elif "cunn_SoftMaxBackward<" in obj[0]:
                out["bwd"] = out.get("bwd", 0) + obj[1]
            return
        for v in obj:
            softmax_times(v, out)


def runs():
    # files holding whole-step (or per-phase) kernel lists of real HF steps on one H200
    for f in ("bench/results/ho21_2026-11-29/prof/log_gemma.txt",
              "bench/results/hfeager21_2026-11-29/measured/profile_gptoss20_L3_s4k_b2_eager.txt"):
        seen = set()
        for line in open(f):
            if line.startswith("{"):
                r = json.loads(line)
                key = (r["model"], r["layers"], r["seq"], r["mbs"], r.get("ckpt"))
                if key not in seen:
                    seen.add(key)
                    yield f, r
    for f in ("bench/results/fwdbwd14_2026-11-28/ph_l3b.json",
              "bench/results/fwdbwd14_2026-11-28/ph_q3-4b.json",
              "bench/results/fwdbwd14_2026-11-28/ph_phi3.json",
              "bench/results/gemma19_2026-11-29/call1/phases.json",
              "bench/results/moe18_2026-11-28/call1/ph_moe.json"):
        d = json.load(open(f))
        assert d["gpu"] == "NVIDIA H200", f
        for r in d["runs"]:
            yield f, r


rows = []
print(f"{'model':15} {'seq':>5} {'mbs':>3} {'vocab':>6} {'logits':>8} {'fwd_ms':>7} {'bwd_ms':>7}"
      f" {'fwd@8':>6} {'bwd@12':>6} {'fwd@16':>6} {'bwd@16':>6}  (fraction of 4.8 TB/s)  file")
for f, r in runs():
    t = {}
    softmax_times(r, t)
    if "fwd" not in t:
        continue
    v = VOCAB[r["model"]]
    e = r["seq"] * r["mbs"] * v
    fr = lambda b, s: b * e / s / HBM
    row = dict(model=r["model"], v=v, f8=fr(8, t["fwd"]), b12=fr(12, t["bwd"]),
               f16=fr(16, t["fwd"]), b16=fr(16, t["bwd"]))
    rows.append(row)
    print(f"{r['model']:15} {r['seq']:5} {r['mbs']:3} {v:6} {e/1e9:7.3f}G {t['fwd']*1e3:7.3f} "
          f"{t['bwd']*1e3:7.3f} {row['f8']:6.3f} {row['b12']:6.3f} {row['f16']:6.3f} {row['b16']:6.3f}  {f}")
big = [x for x in rows if x["v"] >= 100000]
small = [x for x in rows if x["v"] < 100000]
med = statistics.median([x["f16"] for x in big] + [x["b16"] for x in big])
print(f"\nvocabulary >= 100k ({len(big)} steps): forward at 16 B median "
      f"{statistics.median(x['f16'] for x in big):.3f}, backward at 16 B median "
      f"{statistics.median(x['b16'] for x in big):.3f}, both {med:.3f}")
print(f"vocabulary 32k ({len(small)} steps): forward at 8 B median "
      f"{statistics.median(x['f8'] for x in small):.3f}, backward at 12 B median "
      f"{statistics.median(x['b12'] for x in small):.3f}")

# H100 80GB HBM3 (3.35 TB/s, data/systems/h100.json): bench/results/sgpu_2026-11-27/phases.json
d = json.load(open("bench/results/sgpu_2026-11-27/phases.json"))
assert d["gpu"] == "NVIDIA H100 80GB HBM3"
print("\nH100 (fraction of 3.35 TB/s)")
for r in d["runs"]:
    t = {}
    softmax_times(r, t)
    if "fwd" not in t:
        continue
    v = VOCAB[r["model"]]
    e = r["seq"] * r["mbs"] * v
    fr = lambda b, s: b * e / s / 3.35e12
    print(f"{r['model']:15} {r['seq']:5} {r['mbs']:3} {v:6} {e/1e9:7.3f}G {t['fwd']*1e3:7.3f} "
          f"{t['bwd']*1e3:7.3f} {fr(8, t['fwd']):6.3f} {fr(12, t['bwd']):6.3f} "
          f"{fr(16, t['fwd']):6.3f} {fr(16, t['bwd']):6.3f}")
