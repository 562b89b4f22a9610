# Exact parameter counts of Hugging Face config.json files as transformers builds them: each
# config is instantiated on the meta device (no memory, no weights) with
# AutoModelForCausalLM.from_config and its unique parameters summed (tied tensors once).
# Also lists the shapes of the non-layer tensors and of layers 0, 1 and the last, so a count
# can be checked tensor by tensor.  Usage: python3 count_params.py OUT.json CONFIG.json ...
import json, os, re, sys, time
import torch, transformers
from transformers import AutoConfig, AutoModelForCausalLM

out = {"transformers": transformers.__version__, "torch": torch.__version__,
       "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "models": {}}
for path in sys.argv[2:]:
    stem = os.path.basename(path)[:-5]
    d = json.load(open(path))
    d = {k: v for k, v in d.items() if not k.startswith("_")}
    if "text_config" in d and "hidden_size" not in d:
        d = d["text_config"]
    rec = {"model_type": d.get("model_type")}
    try:
        cfg = AutoConfig.for_model(d.pop("model_type"), **d)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg)
        rec["class"] = type(model).__name__
        rec["params"] = sum(p.numel() for p in model.parameters())
        n = cfg.num_hidden_layers
        keep = re.compile(r"\.layers\.(0|1|%d)\." % (n - 1))
        rec["tensors"] = {k: list(p.shape) for k, p in model.named_parameters()
                          if ".layers." not in k or keep.search(k)}
    except Exception as e:  # a type this transformers lacks, or a config it rejects
        rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    out["models"][stem] = rec
    print(stem, rec.get("params", rec.get("error")), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
