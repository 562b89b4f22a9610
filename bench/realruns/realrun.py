"""One real training run on one GPU under torch FSDP2, measured, written as one JSON line.

Issue 14's ground truth: what a user's training step really costs (time and memory), to set beside
`plan estimate` of the same model and layout (bench/realruns/fidelity.py does that).

Two implementations of the model, both from a Hugging Face config.json (bench/realruns/configs/):
  --impl hf      transformers' AutoModelForCausalLM.from_config(attn_implementation="sdpa", or
                 "eager" under --attn eager), fp32
                 parameters, loss from model(input_ids, labels=...) (Hugging Face's own loss:
                 bf16 logits upcast to fp32), gradient checkpointing through
                 model.gradient_checkpointing_enable(use_reentrant=False), AdamW as torch builds it
                 by default (foreach on CUDA): the guide's FSDP2 trainer path.
  --impl native  bench/realruns/native_llama.py, torchtitan's Llama written out (nn.RMSNorm,
                 complex RoPE, SDPA, SwiGLU), loss F.cross_entropy(logits.float()), activation
                 checkpointing with checkpoint_wrapper (non-reentrant) per block, optional
                 per-block torch.compile (fullgraph, before fully_shard, as torchtitan orders it),
                 fused AdamW (torchtitan's default).
Both: fully_shard on every decoder layer and on the root, MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32), reshard_after_forward=True, gradient clipping at norm 1.0 (both trainers'
default), one micro-batch per step of --mbs sequences of --seq random tokens.

Timing: the wall time of each whole step (forward, backward, clip, optimizer step, zero_grad)
between torch.cuda.synchronize() calls, after --warmup steps (the first of which allocates the
optimizer states and, under --compile, compiles). Memory: torch.cuda peak allocated and peak
reserved over the warm-up and timed steps (model set-up excluded: empty_cache and reset before the
first step); the CUDA context (device used minus reserved after CUDA init, before any model), the
same after NCCL's communicator exists, and the non-allocator bytes at the end (device used minus
reserved after the last step: context + NCCL + lazily loaded kernels + library workspaces).
A run that goes out of memory writes "oom": true, the phase, the peak before the failure and the
allocator's message.

World size 1 is a one-rank NCCL process group started here (or by torchrun when it sets RANK).
Several GPUs (FSDP2 over all ranks, data parallel): start it under torchrun; each rank draws its own
tokens, a step's time is the slowest rank's (max over ranks per step), the memory figures are the
largest over ranks (and peak allocated/reserved per rank are listed); rank 0 writes the line.
--attn eager (hf only; default sdpa): transformers' eager_attention_forward (QK^T and PV as matmuls over
the explicit s x s scores) instead of SDPA, as a user must run a model whose class refuses SDPA
(transformers 5.17: GptOssForCausalLM, models/gpt_oss/modeling_gpt_oss.py line 387 _supports_sdpa =
False). Nothing falls back: asking sdpa of such a model fails at build with transformers' message, and the
record carries the choice ("attention") and what transformers set (attn_implementation).
--sac op: torchtitan's op-level selective activation checkpointing (native only, see sac_context_fn).
--cuda-graph (native only): forward + loss + backward of each step replayed from one CUDA graph, the
way torchtitan's core Trainer runs it by default since f84224af0 (torchtitan/distributed/cudagraph.py,
trainer.py at b5bcd76): the first call runs eager on a side stream (warm-up), the second captures the
same callable into a private graph memory pool and replays it, later calls only replay; the inputs are
copied into the captured input buffers before each replay; gradient clipping, the optimizer step and
zero_grad(set_to_none=False) (the gradients must keep the addresses the graph accumulates into) stay
eager. Written here from that description, not copied. It needs --fsdp-reshard default (torchtitan:
"always" fails at capture, CUDA_ERROR_STREAM_CAPTURE_ISOLATION).
--fp8 tensorwise|rowwise (native only): torchao's float8 training of the blocks' linears (fp8_convert;
torchao on PYTHONPATH, FP8_TORCHAO_REF naming its source), converted before checkpointing, compile and
fully_shard; the line carries precision, fp8_recipe, fp8_linears, fp8_config and versions.torchao.
--fsdp-reshard always (default here, as every earlier run): every decoder layer and the root resharded
after forward. default: torchtitan's fsdp_reshard_after_forward "default" at PP 1 (distributed/
fsdp.py apply_fsdp_to_decoder): the decoder layers and the embedding resharded, the final norm and the
output layer (with a tied embedding: the three together) kept gathered from forward into backward.

Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/realrun.py --config llama-3.2-1b --seq 4096
           --mbs 2 [--ckpt | --sac op] [--impl native [--compile [--compile-loss]] [--fp8 tensorwise|rowwise]]
           [--layers N]
           --out results.jsonl
       NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 4 bench/realruns/realrun.py --config llama-3.2-1b ...
"""
import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

p = argparse.ArgumentParser()
p.add_argument("--config", required=True, help="name in bench/realruns/configs or a path")
p.add_argument("--impl", choices=("hf", "native"), default="hf")
p.add_argument("--seq", type=int, default=4096)
p.add_argument("--mbs", type=int, default=1)
p.add_argument("--layers", type=int, default=0, help="cut the model to N decoder layers")
p.add_argument("--ckpt", action="store_true", help="activation (gradient) checkpointing, every layer")
p.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa",
               help="hf only: transformers' attn_implementation (default sdpa; eager: "
                    "eager_attention_forward, s x s scores in the open); never falls back")
p.add_argument("--sac", choices=("", "op"), default="",
               help="native only: selective activation checkpointing per block, op level "
                    "(torchtitan's policy: save every mm output except every second one, save the "
                    "flash / efficient / cuDNN attention outputs, recompute the rest)")
p.add_argument("--compile", action="store_true", help="native only: torch.compile each block")
p.add_argument("--fp8", choices=("", "tensorwise", "rowwise"), default="",
               help="native only: torchao float8 training of the decoder blocks' linear layers "
                    "(convert_to_float8_training, the output layer and any dim not a multiple of 16 "
                    "left in bf16), as torchtitan's float8 converter does (see fp8_convert)")
p.add_argument("--compile-loss", action="store_true",
               help="native with --compile: torch.compile the loss function too, as torchtitan "
                    "does when compile.components holds \"loss\" (its default since 2025: "
                    "torchtitan/components/loss.py _maybe_compile, config/configs.py)")
p.add_argument("--cuda-graph", action="store_true",
               help="native only: forward+loss+backward replayed from one CUDA graph (torchtitan's "
                    "default since f84224af0); needs --fsdp-reshard default")
p.add_argument("--fsdp-reshard", choices=("always", "default"), default="always",
               help="always: every unit resharded after forward (earlier runs); default: "
                    "torchtitan's PP-1 default (final norm and output kept gathered)")
p.add_argument("--optimizer", choices=("default", "foreach", "fused", "forloop"), default="",
               help="AdamW implementation (hf default: torch's default; native: fused)")
p.add_argument("--clip", type=float, default=1.0, help="gradient clipping norm (0: none)")
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--label", default="")
p.add_argument("--stream-pools", action="store_true",
               help="record each step's peaks and the allocator's segments by stream at the end")
p.add_argument("--out", default="", help="append the JSON line to this file")
args = p.parse_args()

cfg_path = args.config
if not os.path.exists(cfg_path):
    cfg_path = os.path.join(HERE, "configs", args.config + ".json")
with open(cfg_path) as f:
    CFG = json.load(f)
if not args.optimizer:
    args.optimizer = "fused" if args.impl == "native" else "default"
if args.compile_loss and not (args.impl == "native" and args.compile):
    sys.exit("realrun: --compile-loss is for --impl native --compile")
if args.sac and (args.impl != "native" or args.ckpt):
    sys.exit("realrun: --sac op is for --impl native without --ckpt (full checkpointing)")
if args.cuda_graph and (args.impl != "native" or args.fsdp_reshard != "default"):
    sys.exit("realrun: --cuda-graph is for --impl native with --fsdp-reshard default (torchtitan: "
             "reshard always fails at capture)")
if args.fp8 and args.impl != "native":
    sys.exit("realrun: --fp8 is for --impl native")
if args.attn != "sdpa" and args.impl != "hf":
    sys.exit("realrun: --attn eager is for --impl hf (the native block always calls SDPA)")
if args.fsdp_reshard == "default" and args.impl != "native":
    sys.exit("realrun: --fsdp-reshard default is for --impl native")

rec = {
    "label": args.label,
    "impl": args.impl,
    "model": os.path.splitext(os.path.basename(cfg_path))[0],
    "config": os.path.relpath(cfg_path, os.path.join(HERE, "..", "..")),
    "model_type": CFG.get("model_type"),
    "layers": args.layers or CFG["num_hidden_layers"],
    "layers_full": CFG["num_hidden_layers"],
    "framework": "fsdp2",
    "world_size": int(os.environ.get("WORLD_SIZE", "1")),
    "dp": int(os.environ.get("WORLD_SIZE", "1")), "tp": 1, "pp": 1, "cp": 1, "ep": 1,
    "schedule": None, "microbatches": 1,
    "seq": args.seq,
    "mbs": args.mbs,
    "grad_ckpt": bool(args.ckpt),
    "sac": args.sac or None,
    "compile": bool(args.compile),
    "compile_loss": bool(args.compile_loss),
    "optimizer": "AdamW",
    "optimizer_impl": args.optimizer,
    "grad_clip": args.clip or None,
    "mixed_precision": "fp32 params, param_dtype bf16, reduce_dtype fp32",
    "reshard_after_forward": True,
    "fsdp_reshard": args.fsdp_reshard,
    "cuda_graph": bool(args.cuda_graph),
    "attention": args.attn,
    "precision": "fp8" if args.fp8 else "bf16",
    "fp8_recipe": args.fp8 or None,
    "command": (("torchrun --nproc_per_node %s " % os.environ["WORLD_SIZE"]) if "TORCHELASTIC_RUN_ID" in os.environ
                else "python3 ") + " ".join(shlex.quote(a) for a in sys.argv),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "PYTORCH_CUDA_ALLOC_CONF",
                                              "CUDA_DEVICE_MAX_CONNECTIONS")},
    "oom": False,
}
T0 = time.perf_counter()


def emit():
    rec["wall_s"] = round(time.perf_counter() - T0, 2)
    if int(os.environ.get("RANK", "0")) != 0:
        return
    line = json.dumps(rec, sort_keys=True)
    print("REALRUN " + line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")


for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29517"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):
    os.environ.setdefault(k, v)
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402


def versions():
    v = {"torch": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": torch.backends.cudnn.version(), "python": sys.version.split()[0]}
    try:
        v["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:
        pass
    try:
        v["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20).stdout.split()[0]
    except Exception:
        pass
    if args.impl == "hf":
        import transformers
        v["transformers"] = transformers.__version__
    if args.fp8:
        import torchao
        # a source tree on PYTHONPATH has no package metadata: FP8_TORCHAO_REF names it
        v["torchao"] = os.environ.get("FP8_TORCHAO_REF") or getattr(torchao, "__version__", "?")
        v["torchao_file"] = torchao.__file__
    return v


def used(dev):
    free, total = torch.cuda.mem_get_info(dev)
    return total - free, total


def build_hf(dev):
    from transformers import AutoConfig, AutoModelForCausalLM
    d = {k: v for k, v in CFG.items() if not k.startswith("_")
         and k not in ("torch_dtype", "dtype", "transformers_version")}
    if args.layers:
        d["num_hidden_layers"] = args.layers
        for k in ("max_window_layers",):
            if k in d:
                d[k] = min(d[k], args.layers)
        if isinstance(d.get("layer_types"), list):  # per-layer kinds (gpt-oss): the first N
            d["layer_types"] = d["layer_types"][:args.layers]
    d["use_cache"] = False
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(dev):
        try:
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation=args.attn, dtype=torch.float32)
        except TypeError:
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation=args.attn,
                                                     torch_dtype=torch.float32)
    if any(p.dtype != torch.float32 for p in model.parameters()):
        model = model.float()
    if any(p.device.type != "cuda" for p in model.parameters()):
        model = model.to(dev)
    rec["attn_implementation"] = getattr(model.config, "_attn_implementation", None)
    if rec["attn_implementation"] != args.attn:  # no silent fallback: the run is not what was asked
        raise RuntimeError("asked attn_implementation=%r, transformers set %r"
                           % (args.attn, rec["attn_implementation"]))
    ei = getattr(model.config, "_experts_implementation", None)
    if ei is not None:
        rec["experts_implementation"] = str(ei)
    model.train()
    if args.ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    layers = None
    n_layers = model.config.num_hidden_layers
    for name, mod in model.named_modules():
        # the decoder layers: "...layers" in most types, "transformer.h" in Falcon
        if isinstance(mod, torch.nn.ModuleList) and (name.endswith("layers") or
                                                     (name.endswith(".h") and len(mod) == n_layers)):
            layers = list(mod)
            break
    return model, layers


def fp8_convert(model):
    """--fp8: torchao's float8 training on the model's nn.Linear layers, the way torchtitan's float8
    converter sets it up (torchtitan/components/quantization/float8.py at 1ea5d511, the last commit
    with the tensorwise recipe, lines 97-132; at b5bcd76 lines 113-123 the same for rowwise):
    rowwise: Float8LinearConfig.from_recipe_name("rowwise") and
    torch._inductor.config.emulate_precision_casts = True; tensorwise (no recipe name there):
    Float8LinearConfig(enable_fsdp_float8_all_gather=dp_shard_enabled and the user's flag), False
    at one rank and by default. The filter is torchtitan's module_filter_fn (components/
    quantization/utils.py at b5bcd76 lines 16-30: both dims multiples of 16, no filtered fqn) with
    filter_fqns=["output"] as its float8.md's example sets (the lm head stays bf16). Called before
    activation checkpointing, torch.compile and fully_shard (torchtitan's order)."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    if args.fp8 == "rowwise":
        cfg = Float8LinearConfig.from_recipe_name("rowwise")
        # "import torch._inductor.config" here would make torch a local name of this function (the
        # tensorwise runs of 2026-11-29 died of it, NameError in keep below)
        import torch._inductor.config as inductor_config
        inductor_config.emulate_precision_casts = True
    else:
        cfg = Float8LinearConfig(enable_fsdp_float8_all_gather=False)

    def keep(mod, fqn):
        return (isinstance(mod, torch.nn.Linear) and mod.in_features % 16 == 0
                and mod.out_features % 16 == 0 and "output" not in fqn)

    convert_to_float8_training(model, config=cfg, module_filter_fn=keep)
    n = sum(1 for m in model.modules() if type(m).__name__ == "Float8Linear")
    rec["fp8_linears"] = n
    rec["fp8_config"] = str(cfg)[:2000]


def build_native(dev):
    sys.path.insert(0, HERE)
    from native_llama import Args, Transformer
    a = Args(CFG, args.layers or None)
    with torch.device(dev):
        model = Transformer(a, args.seq)
    with torch.no_grad():  # torchtitan-like init: N(0, 0.02) weights, ones for the norms
        for n, prm in model.named_parameters():
            if "norm" in n:
                prm.fill_(1.0)
            else:
                prm.normal_(0.0, 0.02)
    if args.fp8:
        fp8_convert(model)
    blocks = list(model.layers.keys())
    for k in blocks:
        blk = model.layers[k]
        if args.ckpt:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
            blk = checkpoint_wrapper(blk, preserve_rng_state=False)
        elif args.sac == "op":
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
            from sac_policy import sac_context_fn
            blk = checkpoint_wrapper(blk, context_fn=sac_context_fn, preserve_rng_state=False)
        if args.compile:  # torchtitan's apply_compile: wrap each block, FSDP's hooks stay outside
            blk = torch.compile(blk, fullgraph=True)
        model.layers.register_module(k, blk)
    return model, [model.layers[k] for k in blocks]


class GraphedCall:
    """fn(*inputs) run as torchtitan's core Trainer runs its forward+backward under CUDA graphs:
    call 1 eager on a side stream (lazy initialisation, autograd and FSDP2 state, the gradients'
    first allocation happen outside any graph), call 2 captures fn on that stream into a private
    memory pool and replays it, every later call copies its inputs into the captured ones and
    replays. The returned value is graph-owned (overwritten by the next replay)."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0
        self.graph = None
        self.static = None
        self.out = None
        self.stream = torch.cuda.Stream()
        self.pool = torch.cuda.graph_pool_handle()

    def __call__(self, *inputs):
        self.calls += 1
        if self.calls == 1:
            cur = torch.cuda.current_stream()
            self.stream.wait_stream(cur)
            with torch.cuda.stream(self.stream):
                out = self.fn(*inputs)
            cur.wait_stream(self.stream)
            return out
        if self.graph is None:
            self.static = [x.clone() for x in inputs]
            self.graph = torch.cuda.CUDAGraph()
            t0 = time.perf_counter()
            with torch.cuda.graph(self.graph, pool=self.pool, stream=self.stream,
                                  capture_error_mode="thread_local"):
                self.out = self.fn(*self.static)
            rec["capture_s"] = round(time.perf_counter() - t0, 4)
        for dst, src in zip(self.static, inputs):
            dst.copy_(src)
        self.graph.replay()
        return self.out


def make_opt(model):
    kw = {"lr": 1e-5}
    if args.optimizer == "fused":
        kw["fused"] = True
    elif args.optimizer == "foreach":
        kw["foreach"] = True
    elif args.optimizer == "forloop":
        kw["foreach"] = False
    return torch.optim.AdamW(model.parameters(), **kw)


def stream_pools(dev):
    """--stream-pools: the caching allocator's segments after the last step, by the stream they
    were allocated on (its blocks serve only that stream: CUDACachingAllocator keeps one pool per
    stream), with what is still allocated in them; the default stream is marked."""
    default = torch.cuda.default_stream(dev).cuda_stream
    pools = {}
    for seg in torch.cuda.memory_snapshot():
        if seg.get("device", dev.index) != dev.index:
            continue
        k = "default" if seg.get("stream") == default else "stream %s" % seg.get("stream")
        p = pools.setdefault(k, {"segments": 0, "reserved_bytes": 0, "allocated_bytes": 0,
                                 "largest_block_bytes": 0})
        p["segments"] += 1
        p["reserved_bytes"] += seg.get("total_size", 0)
        p["allocated_bytes"] += seg.get("allocated_size", 0)
        for b in seg.get("blocks", []):
            if b.get("state") == "active_allocated":
                p["largest_block_bytes"] = max(p["largest_block_bytes"], b.get("size", 0))
    rec["stream_pools_end"] = pools


def is_oom(e):
    return isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.zeros(1, device=dev)
    torch.cuda.synchronize()
    rec["gpu"] = torch.cuda.get_device_name(dev)
    rec["versions"] = versions()
    u, total = used(dev)
    rec["device_total_bytes"] = total
    rec["cuda_context_bytes"] = u - torch.cuda.memory_reserved(dev)
    dist.init_process_group("nccl", device_id=dev)
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    u, _ = used(dev)
    rec["context_after_nccl_bytes"] = u - torch.cuda.memory_reserved(dev)
    phase = "build"
    try:
        t_build = time.perf_counter()
        model, layers = build_hf(dev) if args.impl == "hf" else build_native(dev)
        rec["params"] = sum(p.numel() for p in model.parameters())
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in layers:
            fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
        if args.fsdp_reshard == "default":  # torchtitan distributed/fsdp.py at PP 1
            if not CFG.get("tie_word_embeddings", False):
                fully_shard(model.tok_embeddings, mp_policy=mp, reshard_after_forward=True)
            fully_shard(model, mp_policy=mp, reshard_after_forward=False)
        else:
            fully_shard(model, mp_policy=mp, reshard_after_forward=True)
        opt = make_opt(model)
        V = CFG["vocab_size"]
        g = torch.Generator(device=dev).manual_seed(1234 + dist.get_rank())  # each rank its own data
        ids = torch.randint(0, V, (args.mbs, args.seq + 1), device=dev, generator=g)
        inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
        torch.cuda.synchronize()
        rec["setup_s"] = round(time.perf_counter() - t_build, 2)

        def loss_fn(logits, labels):  # torchtitan's cross_entropy_loss without TP: pred.float()
            return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))

        if args.compile_loss:
            loss_fn = torch.compile(loss_fn)

        def fwd_bwd(x, y):
            if args.impl == "hf":
                loss = model(input_ids=x, labels=x).loss
            else:
                logits = model(x)
                loss = loss_fn(logits, y)
                del logits
            loss.backward()
            return loss.detach()

        run_fwd_bwd = GraphedCall(fwd_bwd) if args.cuda_graph else fwd_bwd

        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        fb_host = []

        def step():
            # torchtitan zeroes at the step's start, set_to_none only without graphs
            opt.zero_grad(set_to_none=not args.cuda_graph)
            ev[0].record()
            h0 = time.perf_counter()
            loss = run_fwd_bwd(inp, lab)
            fb_host.append(time.perf_counter() - h0)  # host time of the call (graph: the replay's)
            ev[1].record()
            if args.clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            return loss.clone()

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        times, losses = [], []
        for i in range(args.warmup + args.steps):
            phase = "warmup step %d" % i if i < args.warmup else "timed step %d" % (i - args.warmup)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if args.stream_pools:  # each step's own peaks (the run's are kept below)
                torch.cuda.reset_peak_memory_stats(dev)
            loss = step()
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            if args.stream_pools:
                sst = torch.cuda.memory_stats(dev)
                rec.setdefault("step_peak_allocated_bytes", []).append(
                    sst.get("allocated_bytes.all.peak", 0))
                rec.setdefault("step_peak_reserved_bytes", []).append(
                    sst.get("reserved_bytes.all.peak", 0))
            losses.append(loss)
            if i >= args.warmup:  # forward+backward's span on the GPU, and the host's call time
                rec.setdefault("fwd_bwd_gpu_s", []).append(round(ev[0].elapsed_time(ev[1]) / 1e3, 6))
                rec.setdefault("fwd_bwd_host_call_s", []).append(round(fb_host[-1], 6))
            if i < args.warmup:
                rec.setdefault("warmup_times_s", []).append(round(dt, 5))
            else:
                times.append(dt)
        phase = "done"
        if dist.get_world_size() > 1:  # a step lasts as long as its slowest rank
            tt = torch.tensor(times, device=dev, dtype=torch.float64)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)
            rec["step_times_rank0_s"] = [round(x, 5) for x in times]
            times = tt.tolist()
        rec["warmup"], rec["steps"] = args.warmup, args.steps
        rec["step_times_s"] = [round(x, 5) for x in times]
        med = statistics.median(times)
        rec["step_s_median"], rec["step_s_min"], rec["step_s_max"] = med, min(times), max(times)
        rec["tokens_per_s"] = args.mbs * args.seq / med
        rec["loss_first"], rec["loss_last"] = float(losses[0]), float(losses[-1])
    except Exception as e:  # an OOM is a result; anything else is recorded and fails the run
        if not is_oom(e):
            import traceback
            traceback.print_exc()
            rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:1500])
            rec["error_phase"] = phase
        else:
            rec["oom"] = True
            rec["oom_phase"] = phase
            msg = str(e)
            rec["oom_message"] = msg[:800]
            m = re.search(r"Tried to allocate ([\d.]+) (GiB|MiB|KiB)", msg)
            if m:
                rec["oom_tried_bytes"] = int(float(m.group(1)) * {"GiB": 1 << 30, "MiB": 1 << 20,
                                                                  "KiB": 1 << 10}[m.group(2)])
    if args.stream_pools and phase == "done":
        stream_pools(dev)
    st = torch.cuda.memory_stats(dev)
    u, _ = used(dev)
    mem = [st.get("allocated_bytes.all.peak", 0), st.get("reserved_bytes.all.peak", 0),
           st.get("active_bytes.all.peak", 0), st.get("num_alloc_retries", 0),
           st.get("num_ooms", 0), u, u - torch.cuda.memory_reserved(dev)]
    if dist.get_world_size() > 1 and phase == "done":  # the largest over ranks (an OOM may hang a collective)
        mt = torch.tensor(mem, device=dev, dtype=torch.int64)
        allm = [torch.zeros_like(mt) for _ in range(dist.get_world_size())]
        dist.all_gather(allm, mt)
        rec["peak_allocated_per_rank_bytes"] = [int(x[0]) for x in allm]
        rec["peak_reserved_per_rank_bytes"] = [int(x[1]) for x in allm]
        mem = [max(int(x[i]) for x in allm) for i in range(len(mem))]
    (rec["peak_allocated_bytes"], rec["peak_reserved_bytes"], rec["peak_active_bytes"],
     rec["alloc_retries"], rec["allocator_ooms"], rec["device_used_end_bytes"],
     rec["nonalloc_end_bytes"]) = mem
    if rec.get("step_peak_reserved_bytes"):  # the per-step resets cleared the run's peaks
        rec["peak_allocated_bytes"] = max(rec["step_peak_allocated_bytes"])
        rec["peak_reserved_bytes"] = max(rec["step_peak_reserved_bytes"])
    if not rec["oom"] and "error" not in rec:
        # peak of what the process holds: tensors at their peak + everything outside the allocator
        rec["measured_peak_bytes"] = rec["peak_allocated_bytes"] + rec["nonalloc_end_bytes"]
        rec["measured_peak_reserved_bytes"] = rec["peak_reserved_bytes"] + rec["nonalloc_end_bytes"]
    emit()
    try:
        dist.destroy_process_group()
    except Exception:
        pass
    return 1 if "error" in rec else 0


if __name__ == "__main__":
    sys.exit(main())
