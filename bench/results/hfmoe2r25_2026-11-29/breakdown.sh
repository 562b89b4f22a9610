#!/bin/bash
# plan's closed form and simulation for the three FSDP2 MoE rows (ho25/ho25b, 2 x H200), the
# configs cut to the runs' layers as mgpu_fidelity.py cuts them. Run from the worktree root
# after building: bash bench/results/hfmoe2r25_2026-11-29/breakdown.sh > .../breakdown_after.txt
set -e
python3 - <<'PY'
import json, subprocess, tempfile, os
tmp = tempfile.mkdtemp()
rows = (("ho25b-fsdp-hf-glm45air-L3-s4k-b1-ws2", "glm-4.5-air", 3, 1, 0.2745, 0.1954),
        ("ho25-fsdp-hf-phimoe-L4-s4k-b2-ws2", "phi-3.5-moe", 4, 2, 0.2679, 0.1983),
        ("ho25-fsdp-hf-olmoe-L8-s4k-b2-ws2", "olmoe-1b-7b", 8, 2, 0.2477, 0.2014))
for label, name, L, mbs, real, fb in rows:
    c = json.load(open("bench/realruns/configs/%s.json" % name))
    c["num_hidden_layers"] = L
    if "max_window_layers" in c:
        c["max_window_layers"] = min(c["max_window_layers"], L)
    p = os.path.join(tmp, "%s-L%d.json" % (name, L))
    json.dump(c, open(p, "w"))
    a = ["build/cli/plan", "estimate", "--model", p, "--system", "h200", "--framework", "fsdp2",
         "--gpus", "2", "--seq", "4096", "--mbs", str(mbs), "--gbs", str(2 * mbs), "--impl", "hf",
         "--optimizer-impl", "foreach", "--no-cuda-graphs", "--simulate", "--format", "json"]
    j = json.loads(subprocess.run(a, capture_output=True, text=True).stdout)
    t, s = j["time"], j["time_simulated"]
    print("%s  real step %.4f s, fwd+bwd GPU (median of the run's fwd_bwd_gpu_s) %.4f s" % (label, real, fb))
    print("  closed form: step %.4f (%+.1f%%)  fwd+bwd %.4f = compute %.4f (fwd %.4f bwd %.4f) + FSDP exposed %.4f; optimizer %.4f" % (
        t["step_s"], 100 * (t["step_s"] / real - 1), t["microbatch_s"], t["compute_s"], t["fwd_pass_s"],
        t["bwd_pass_s"], t["dp_s"], t["optimizer_s"]))
    print("  simulated:   step %.4f (%+.1f%%)  compute stream busy %.4f" % (
        s["step_s"], 100 * (s["step_s"] / real - 1), s["compute_busy_s"]))
    print("  command: " + " ".join(a[:3] + ["<%s cut to %d layers>" % (name, L)] + a[4:]))
PY
