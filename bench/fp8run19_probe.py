"""fp8run19 (2026-11-29): what the GPU machine has for FP8 training, in one short device call.

Prints torch / CUDA / GPU, whether torchao, transformer_engine, triton, transformers import; times
one bf16 GEMM and torch._scaled_mm with a per-tensor (tensorwise) and a per-row x per-column
(rowwise) scale at 16384x4096x4096 (3 warm-ups, CUDA events around 20 calls, mean; relative
error against the fp32 product); then imports torchao from a source tree at /tmp/ao (torchao
v0.18.0, carried: the machine has none) and times torch.compile'd forward + backward of two
Float8Linear(4096, 4096) in a row, 8192 tokens, per recipe (tensorwise, rowwise), after
convert_to_float8_training. Run as it ran (bench/results/fp8run19_2026-11-29/README.md):
  mkdir -p /tmp/ao && tar -xzf ao.tgz -C /tmp && python3 bench/fp8run19_probe.py
"""
import json, os, sys, time, importlib, subprocess
out = {}
import torch
out["torch"] = torch.__version__; out["cuda"] = torch.version.cuda
out["gpu"] = torch.cuda.get_device_name(0)
for m in ("torchao", "transformer_engine", "triton", "transformers"):
    try:
        mod = importlib.import_module(m); out[m] = getattr(mod, "__version__", "present"); out[m+"_file"] = getattr(mod, "__file__", None)
    except Exception as e:
        out[m] = "absent: %s" % str(e)[:200]
print(json.dumps(out, indent=1), flush=True)
dev = "cuda"
def timeit(f, n=20):
    for _ in range(3): f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n): f()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / n / 1e3
M, N, K = 16384, 4096, 4096
a = torch.randn(M, K, device=dev, dtype=torch.bfloat16); b = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
ref = (a.float() @ b.float().t())
fl = 2 * M * N * K
t = timeit(lambda: a @ b.t()); print("bf16 %dx%dx%d %.1f TFLOP/s" % (M, N, K, fl / t / 1e12))
a8 = a.to(torch.float8_e4m3fn); b8 = b.to(torch.float8_e4m3fn)
one = torch.tensor(1.0, device=dev)
try:
    y = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    t = timeit(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    print("tensorwise ok rel err %.3g, %.1f TFLOP/s" % (((y.float() - ref).norm() / ref.norm()).item(), fl / t / 1e12))
except Exception as e:
    print("tensorwise FAILED", e)
try:
    sa = torch.ones(M, 1, device=dev); sb = torch.ones(1, N, device=dev)
    y = torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    t = timeit(lambda: torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))
    print("rowwise ok rel err %.3g, %.1f TFLOP/s" % (((y.float() - ref).norm() / ref.norm()).item(), fl / t / 1e12))
except Exception as e:
    print("rowwise FAILED", e)
sys.path.insert(0, "/tmp/ao")
os.environ["TORCHAO_FORCE_SKIP_LOADING_SO_FILES"] = "1"
try:
    t0 = time.time()
    import torchao
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    print("carried torchao v0.18.0 imported from", torchao.__file__, "%.1f s" % (time.time() - t0))
    for recipe in ("tensorwise", "rowwise"):
        cfg = Float8LinearConfig.from_recipe_name(recipe)
        m = torch.nn.Sequential(torch.nn.Linear(4096, 4096, bias=False), torch.nn.Linear(4096, 4096, bias=False)).to(dev).to(torch.bfloat16)
        convert_to_float8_training(m, config=cfg)
        mc = torch.compile(m)
        x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16, requires_grad=True)
        def fb():
            y = mc(x); y.sum().backward()
        t0 = time.time(); fb(); torch.cuda.synchronize(); tc = time.time() - t0
        t = timeit(fb, 10)
        print(recipe, "config", cfg, "compile %.1f s, fwd+bwd 2 linears %.3f ms" % (tc, t * 1e3), type(m[0]).__name__, flush=True)
except Exception as e:
    import traceback; traceback.print_exc()
