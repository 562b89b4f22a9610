#!/usr/bin/env python3
"""Megatron-LM's own rank groups under both rank orders (issue 21), for the placements
costmodel/layout_place.c computes: RankGenerator and generate_masked_orthogonal_rank_groups are
taken from megatron/core/parallel_state.py of a checkout (pure Python: read with ast and run
without importing torch), the dense groups built over tp-cp-dp-pp in the order
initialize_model_parallel passes (tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp under
--use-tp-pp-dp-mapping) and the expert groups over etp-ep-edp-pp the same way; for each group
kind, how many of its ranks share a node of G GPUs (ranks r // G) and how many nodes it spans;
beside them what `plan estimate --format json` says ("placement": members_per_domain, and the
domains a group spans: size / members), on h100 (8-GPU nodes). A line ends "same" when every
group kind agrees, "DIFFERS" otherwise.

Usage: python3 bench/megatron_validate/rank_groups.py MEGATRON_DIR [PLAN]
"""
import ast
import json
import os
import subprocess
import sys
from typing import List, Optional  # noqa: F401  (names the extracted code uses)

WANT = ("generate_masked_orthogonal_rank_groups", "RankGenerator")


def load(megatron):
    path = f"{megatron}/megatron/core/parallel_state.py"
    tree = ast.parse(open(path).read())
    keep = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in WANT]
    ns = {"List": List, "Optional": Optional}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    return ns["RankGenerator"]


def spread(groups, node):
    """(members a node, nodes spanned) of the first group, and whether every group agrees."""
    def one(g):
        nodes = {r // node for r in g}
        return len(g) // len(nodes), len(nodes)
    first = one(groups[0])
    return first, all(one(g) == first for g in groups)


def plan_spread(plan, model, tp, cp, dp, pp, ep, etp, order):
    """plan's (members a domain, domains) per group kind, or its error line."""
    argv = [plan, "estimate", "--model", model, "--system", "h100",
            "--gpus", str(tp * cp * dp * pp), "--tp", str(tp), "--cp", str(cp), "--pp", str(pp),
            "--ep", str(ep), "--etp", str(etp), "--rank-order", order, "--format", "json"]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode == 2:
        return p.stderr.strip()
    out = {}
    for key, g in json.loads(p.stdout)["placement"].items():
        per = g["members_per_domain"]
        out[key] = (per, g["size"] // per if g["spans_domains"] else 1)
    return out


def main():
    RankGenerator = load(sys.argv[1])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    plan = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "build", "cli", "plan")
    node = 8
    # tp, cp, dp, pp, ep, etp, model
    cases = [(4, 1, 4, 2, 1, 4, "8b"), (2, 2, 4, 2, 1, 2, "8b"), (8, 1, 4, 2, 1, 8, "8b"),
             (2, 1, 16, 2, 1, 2, "8b"), (2, 1, 16, 2, 2, 1, "mixtral-8x7b"),
             (2, 2, 4, 2, 4, 1, "qwen3-30b-a3b")]
    print(f"nodes of {node} GPUs; 'a x b' = a ranks in each of b nodes (every group the same: *)")
    bad = 0
    for tp, cp, dp, pp, ep, etp, model in cases:
        world = tp * cp * dp * pp
        for order in ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"):
            head = f"{model} tp{tp} cp{cp} dp{dp} pp{pp} ep{ep} etp{etp} {order}:"
            mine = plan_spread(plan, model, tp, cp, dp, pp, ep, etp, order)
            dense = RankGenerator(tp=tp, ep=1, dp=dp, pp=pp, cp=cp, order=order)
            edp = world // (etp * ep * pp)
            if order.endswith("dp") and pp > 1 and edp != dp:
                ok = isinstance(mine, str)
                bad += not ok
                print(f"{head} Megatron refuses (expert dp {edp} != dp {dp}, parallel_state.py's "
                      f"assertion); {mine if ok else 'plan accepts it'} {'same' if ok else 'DIFFERS'}")
                continue
            if isinstance(mine, str):
                bad += 1
                print(f"{head} plan refuses: {mine} DIFFERS")
                continue
            expert = RankGenerator(tp=etp, ep=ep, dp=edp, pp=pp, cp=1, order=order)
            cols, agree = [], True
            for label, key, gen, token in (("dp-cp", "dp_cp", dense, "dp-cp"),
                                           ("pp", "pp", dense, "pp"),
                                           ("expert-dp", "expert_dp", expert, "dp")):
                (per, nodes), same = spread(gen.get_ranks(token), node)
                agree &= same and mine[key] == (per, nodes)
                cols.append(f"{label} {per} x {nodes}{'*' if same else ''} "
                            f"(plan {mine[key][0]} x {mine[key][1]})")
            bad += not agree
            print(f"{head} " + ", ".join(cols) + (" same" if agree else " DIFFERS"))
    print(f"{bad} case(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
