"""torchtitan's op-level selective activation checkpointing policy, as the real runs apply it
(realrun.py --sac op) and as bench/compiled_kernels.py profiles it: one module so the step that is
timed and the block that is profiled checkpoint the same ops."""
import torch


def sac_context_fn():
    """torchtitan's op-level selective checkpointing policy (torchtitan/distributed/
    activation_checkpoint.py, _apply_op_sac): keep the outputs of the ops in the save list, but of
    aten.mm only every other one (the 2nd, 4th, ... mm of a block in forward, and the same count
    in the recompute, are recomputed); everything else is recomputed in the backward."""
    from collections import defaultdict
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    ops = torch.ops.aten
    save = {ops.mm.default}
    for name in ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_cudnn_attention"):
        if hasattr(ops, name):
            save.add(getattr(ops, name).default)
    if hasattr(torch.ops, "_c10d_functional"):
        save.add(torch.ops._c10d_functional.reduce_scatter_tensor.default)
    save.add(ops.max.default)
    meta = defaultdict(int)

    def policy(ctx, func, *a, **kw):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func == ops.mm.default:
            meta[mode + "_mm_count"] += 1
        keep = func in save and not (func == ops.mm.default and meta[mode + "_mm_count"] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)
