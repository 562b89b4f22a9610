"""Per-rank measured compute of the 1F1B pipeline profile (bench/results/pp_timeline_2026-11-27:
Llama-3 8B cut to 16 layers, pp 4, 8 micro-batches, H100, FSDP2 on one-rank meshes): the class
sums of rank 0 and rank 3 (non-NCCL kernels) and the large elementwise kernels of each rank's
trace (the embedding's / output layer's FSDP2 copies: cast, fp32 accumulation adds, chunk_cat).
Usage: python3 rank_kernels.py (from the repository root)"""
import json, gzip, collections
B = "bench/results/pp_timeline_2026-11-27/"
for summ, trace in [("profile/prof-pp4.json", "profile/prof-pp4.trace.json.gz"),
                    ("profile_rank3/prof-pp4-rank3.json", "profile_rank3/prof-pp4-rank3.trace.json.gz")]:
    d = json.load(open(B + summ)); c = d["class_s"]
    print("==", summ, "step %.4f" % d["profiled_step_s"],
          "non-NCCL kernels %.4f s" % sum(v for k, v in c.items() if k != "nccl"),
          "optimizer %.4f" % c.get("optimizer", 0),
          "clip non-NCCL %.4f" % sum(v for k, v in d["class_s_by_region"].get("step.clip", {}).items() if k != "nccl"))
    t = json.load(gzip.open(B + trace))
    agg = collections.defaultdict(lambda: [0, 0.0])
    for e in t["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("dur", 0) > 700 and "nccl" not in e["name"] \
                and any(x in e["name"] for x in ("elementwise", "chunk_cat", "copy")):
            agg[e["name"][:100]][0] += 1; agg[e["name"][:100]][1] += e["dur"] / 1e3
    for n, (k, ms) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print("  %3d x %6.3f ms = %7.2f ms  %s" % (k, ms / k, ms, n))
