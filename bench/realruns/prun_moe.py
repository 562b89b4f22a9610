"""The expert-parallel MoE layer of bench/realruns/parallel_run.py --layout ep.

Why a module of its own: the MoE block is the one part of the real runs that is not torchtitan's
Llama (native_llama.py) and not a torch parallel style: a softmax router, top-k, the local experts
(one SwiGLU per expert in a loop, or torch._grouped_mm as torchtitan's GroupedExperts), the
tokens dispatched and combined by all_to_all_single, and the received rows regrouped by local
expert either on the GPU (--permute device, torchtitan's _token_dispatch / _permute) or on the
host (--permute host, the runs before 2026-11-28). `opts` is the run's parsed flags (route,
permute, experts). ROUTED collects the rows this rank's experts received per MoE call (the
record's ep_routed_rows_per_rank).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.tensor import DTensor

from native_llama import Attention

ROUTED = []  # --layout ep: routed rows received by this rank's experts, per MoE layer call
# --experts loop: the per-expert row counts this process has run (each expert's three GEMMs take
# its row count as a dimension; cuBLAS picks an algorithm by a heuristic the first time it meets
# a shape, bench/results/ep26_2026-11-29), and [new, all] tallies of the nonzero counts since
# the start (prun_measure.py turns them into the record's loop_new_count_share)
LOOP_SEEN = set()
LOOP_TALLY = [0, 0]
# PRUN_COUNTS_OUT (bench/results/epg27_2026-11-29): every top-k MoE call's routing counts with
# --permute device, kept as the GPU tensors the layer already made (no copy, no sync): this
# rank's token copies per global expert, and the copies each (source rank, local expert) sends
# here. Written per rank after the timed steps (prun_measure.py counts_dump).
COUNTS_LOG = []
COUNTS_ON = [False]


def loop_tally(counts):
    """Counts the loop's nonzero per-expert row counts, and those new to the process."""
    for c in counts:
        if c:
            LOOP_TALLY[1] += 1
            if c not in LOOP_SEEN:
                LOOP_SEEN.add(c)
                LOOP_TALLY[0] += 1


class Experts(nn.Module):
    """This rank's E_local experts, SwiGLU each: (silu(x w1) * (x w3)) w2, weights stored
    [experts, in, out] as torchtitan's GroupedExperts. --experts loop: one matmul per expert in a
    Python loop; grouped: torch._grouped_mm over all local experts at once (torchtitan's path), each
    expert's rows padded to a multiple of 16 (torchtitan's alignment for bf16 grouped GEMMs)."""

    def __init__(self, n, dim, ffn, mode, route):
        super().__init__()
        self.mode, self.route = mode, route
        self.w1 = nn.Parameter(torch.empty(n, dim, ffn))
        self.w3 = nn.Parameter(torch.empty(n, dim, ffn))
        self.w2 = nn.Parameter(torch.empty(n, ffn, dim))

    def forward(self, x, counts):  # x: rows grouped by local expert, counts: python ints
        if torch.is_tensor(counts):  # --permute device: counts on the GPU, nothing built on the host
            return self._forward_device(x, counts)
        if self.mode == "grouped" and self.route == "balanced":
            key = tuple(counts)
            if getattr(self, "_key", None) != key:
                self._key, self._pos_offs = key, None
        if self.mode == "grouped" and getattr(self, "_pos_offs", None) is not None:
            pos, offs, poff = self._pos_offs
            xp = x.new_zeros(poff, x.shape[1]).index_copy(0, pos, x)
            h = F.silu(torch._grouped_mm(xp, self.w1, offs=offs)) * torch._grouped_mm(xp, self.w3, offs=offs)
            return torch._grouped_mm(h, self.w2, offs=offs)[pos]
        if self.mode == "grouped":
            padded = [(c + 15) // 16 * 16 for c in counts]
            pos, off, poff = [], 0, 0
            for c, pc in zip(counts, padded):
                pos.append(torch.arange(poff, poff + c))
                off += c
                poff += pc
            pos = torch.cat(pos).to(x.device, non_blocking=True)
            offs, acc = [], 0
            for pc in padded:
                acc += pc
                offs.append(acc)
            offs = torch.tensor(offs, dtype=torch.int32).to(x.device, non_blocking=True)
            if self.route == "balanced":
                self._pos_offs = (pos, offs, poff)
            xp = x.new_zeros(poff, x.shape[1]).index_copy(0, pos, x)
            h = F.silu(torch._grouped_mm(xp, self.w1, offs=offs)) * torch._grouped_mm(xp, self.w3, offs=offs)
            return torch._grouped_mm(h, self.w2, offs=offs)[pos]
        outs, off = [], 0
        loop_tally(counts)
        for e, c in enumerate(counts):
            xe = x[off:off + c]
            off += c
            outs.append((F.silu(xe @ self.w1[e]) * (xe @ self.w3[e])) @ self.w2[e])
        return torch.cat(outs, 0)

    def _forward_device(self, x, counts, w=None):
        """torchtitan's two paths with the counts on the GPU. grouped: each expert's rows padded to
        a multiple of 16 into a buffer of N + 16 E_local rows (torchtitan's max_len, no host
        size), the offsets a cumsum on the GPU (models/moe/utils.py _permute; moe.py
        _run_experts_grouped_mm). loop: counts.tolist() (a device-to-host sync, as torchtitan's
        _run_experts_for_loop) and torch.split. w: (w1, w3, w2), the parameters by default."""
        w1, w3, w2 = w if w is not None else (self.w1, self.w3, self.w2)
        N = x.shape[0]
        if self.mode != "grouped":
            outs = []
            cl = counts.tolist()
            loop_tally(cl)
            for e, xe in enumerate(torch.split(x, cl, dim=0)):
                outs.append((F.silu(xe @ w1[e]) * (xe @ w3[e])) @ w2[e])
            return torch.cat(outs, 0)
        padded = (counts + 15) // 16 * 16
        pad_end, end = torch.cumsum(padded, 0), torch.cumsum(counts, 0)
        shift = (pad_end - padded) - (end - counts)  # padded start - start, per expert
        pos = torch.arange(N, device=x.device) + torch.repeat_interleave(shift, counts, output_size=N)
        offs = pad_end.to(torch.int32)
        xp = x.new_zeros(N + 16 * counts.numel(), x.shape[1]).index_copy(0, pos, x)
        h = F.silu(torch._grouped_mm(xp, w1, offs=offs)) * torch._grouped_mm(xp, w3, offs=offs)
        return torch._grouped_mm(h, w2, offs=offs)[pos]


class MoE(nn.Module):
    def __init__(self, a, cfg, group, ep, opts):
        super().__init__()
        self.route, self.permute = opts.route, opts.permute
        # Qwen3-MoE names them num_experts / moe_intermediate_size, Mixtral num_local_experts /
        # intermediate_size
        self.E = cfg.get("num_experts") or cfg["num_local_experts"]
        self.k, self.ep, self.group = cfg["num_experts_per_tok"], ep, group
        self.El = self.E // ep
        self.norm_topk = bool(cfg.get("norm_topk_prob", True))
        self.router = nn.Linear(a.dim, self.E, bias=False)
        self.experts = Experts(self.El, a.dim, cfg.get("moe_intermediate_size") or cfg["intermediate_size"],
                               opts.experts, opts.route)
        self._cache = {}  # --route balanced: index tensors built once per token count

    def forward(self, x):
        from torch.distributed.nn.functional import all_to_all_single as a2a
        from torch.profiler import record_function as rf
        b, s, d = x.shape
        x = x.reshape(-1, d)
        T = x.shape[0]
        with rf("moe.router"):
            scores = self.router(x).float().softmax(-1)
            rc = None
            if self.route == "balanced":  # fixed equal assignment; the router's weights still used
                topi = self._balanced_topi(T, x.device)
                topw = scores.gather(1, topi)
            else:
                topw, topi = scores.topk(self.k, dim=-1)
            if self.norm_topk:
                topw = topw / topw.sum(-1, keepdim=True)
            flat = topi.reshape(-1)
            order = flat.argsort(stable=True)
            xs = x[order // self.k]
        with rf("moe.counts_sync"):
            if self.route == "balanced":
                per = T * self.k // self.E  # copies per expert from every rank
                rc = [[per] * self.El for _ in range(self.ep)]
                c_send = [per * self.El] * self.ep
            elif self.permute == "device":  # torchtitan's _token_dispatch: one blocking copy
                counts = torch.zeros(self.E, dtype=torch.int64, device=x.device).scatter_add_(
                    0, flat, torch.ones_like(flat))  # per global expert, no sync (histc's role)
                recv_counts = torch.empty_like(counts)
                dist.all_to_all_single(recv_counts, counts, group=self.group)  # [src rank, local expert]
                send_h = counts.view(self.ep, self.El).sum(1).to("cpu", non_blocking=True)
                recv_h = recv_counts.view(self.ep, self.El).sum(1).to("cpu")  # the sync
                c_send, rc = send_h.tolist(), None
                c_recv = recv_h.tolist()
                if COUNTS_ON[0]:
                    COUNTS_LOG.append((counts, recv_counts))
            else:
                counts = torch.bincount(flat, minlength=self.E)  # token copies per global expert
                recv_counts = torch.empty_like(counts)
                dist.all_to_all_single(recv_counts, counts, group=self.group)  # [src rank, local expert]
                c_send = counts.view(self.ep, self.El).sum(1).tolist()
                rc = recv_counts.view(self.ep, self.El).tolist()  # host sync, as torchtitan's dispatch
            if rc is not None:
                c_recv = [sum(r) for r in rc]
            ROUTED.append(sum(c_recv))  # rows this rank's experts received (host ints already)
        with rf("moe.dispatch"):
            recv = a2a(xs.new_empty(sum(c_recv), d), xs, c_recv, c_send, group=self.group)
        with rf("moe.index"):
            key = (T, "idx")
            if rc is None:  # --permute device: regroup [src rank][local expert] -> [expert][rank]
                N = sum(c_recv)
                C = recv_counts.view(self.ep, self.El)
                seg = torch.repeat_interleave(torch.arange(self.ep * self.El, device=x.device),
                                              C.reshape(-1), output_size=N)  # r * El + e per row
                idx = ((seg % self.El) * self.ep + seg // self.El).argsort(stable=True)
                inv = torch.empty_like(idx)
                inv[idx] = torch.arange(N, device=idx.device)
                per_e = C.sum(0)  # rows per local expert, on the GPU
                if not getattr(self, "_checked", False):  # once, in the first warm-up step
                    self._checked = True
                    self._check_device_permute(C, idx)
            elif self.route == "balanced" and key in self._cache:
                idx, inv = self._cache[key]
            else:
                starts, o = [], 0  # regroup the received rows by local expert
                for r in range(self.ep):
                    row = []
                    for e in range(self.El):
                        row.append(o)
                        o += rc[r][e]
                    starts.append(row)
                idx = torch.cat([torch.arange(starts[r][e], starts[r][e] + rc[r][e])
                                 for e in range(self.El) for r in range(self.ep)]).to(x.device, non_blocking=True)
                inv = torch.empty_like(idx)
                inv[idx] = torch.arange(idx.numel(), device=idx.device)
                if self.route == "balanced":
                    self._cache[key] = (idx, inv)
            if rc is not None:
                per_e = [sum(rc[r][e] for r in range(self.ep)) for e in range(self.El)]
            xe = recv[idx]
        with rf("moe.experts"):
            out_local = self.experts(xe, per_e)
        with rf("moe.combine"):
            back = a2a(out_local.new_empty(sum(c_send), d), out_local[inv], c_send, c_recv, group=self.group)
        with rf("moe.unpermute"):
            unsort = torch.empty_like(order)
            unsort[order] = torch.arange(order.numel(), device=order.device)
            y = back[unsort].view(T, self.k, d)
            y = (y.float() * topw.unsqueeze(-1)).sum(1).to(x.dtype)
        return y.view(b, s, d)

    def _check_device_permute(self, C, idx):
        """The first call only (a warm-up step): the GPU-built permutation equals the host-built
        one of --permute host, and the grouped path's output equals the per-expert loop's."""
        rc = C.tolist()
        starts, o = [], 0
        for r in range(self.ep):
            row = []
            for e in range(self.El):
                row.append(o)
                o += rc[r][e]
            starts.append(row)
        ref = [i for e in range(self.El) for r in range(self.ep)
               for i in range(starts[r][e], starts[r][e] + rc[r][e])]
        if idx.tolist() != ref:
            raise RuntimeError("parallel_run: --permute device built a wrong permutation")
        with torch.no_grad():
            per_e = C.sum(0)
            x = torch.randn(int(per_e.sum()), self.experts.w1.shape[1], device=C.device,
                            dtype=torch.bfloat16)
            w = [p.full_tensor() if isinstance(p, DTensor) else p
                 for p in (self.experts.w1, self.experts.w3, self.experts.w2)]
            w = [t.to(torch.bfloat16) for t in w]
            outs, off = [], 0
            for e, c in enumerate(per_e.tolist()):
                xe = x[off:off + c]
                off += c
                outs.append((F.silu(xe @ w[0][e]) * (xe @ w[1][e])) @ w[2][e])
            ref_out = torch.cat(outs, 0).float()
            if self.experts.mode == "grouped":
                got = self.experts._forward_device(x, per_e, w).float()
                err = (got - ref_out).abs().max().item() / max(ref_out.abs().max().item(), 1e-6)
                if err > 0.05:
                    raise RuntimeError("parallel_run: grouped path differs from the loop (rel %.3g)" % err)

    def _balanced_topi(self, T, dev):
        key = (T, "topi")
        if key not in self._cache:
            if (T * self.k) % self.E:
                raise SystemExit("parallel_run: --route balanced needs tokens * top_k divisible by experts")
            self._cache[key] = (torch.arange(T * self.k, device=dev) % self.E).view(T, self.k)
        return self._cache[key]


class MoEBlock(nn.Module):
    def __init__(self, a, cfg, group, ep, opts):
        super().__init__()
        self.attention = Attention(a)
        self.moe = MoE(a, cfg, group, ep, opts)
        self.attention_norm = nn.RMSNorm(a.dim, eps=a.eps)
        self.ffn_norm = nn.RMSNorm(a.dim, eps=a.eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.moe(self.ffn_norm(h))
