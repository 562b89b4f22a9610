#!/usr/bin/env python3
"""Pipeline order and p2p semantics of torch.distributed.pipelining against the measured timelines.

Issue 19. Three things, standard library only:

1. The per-rank compute order torch 2.11 runs (pytorch/pytorch torch/distributed/pipelining/
   schedules.py at 00722e648b740f91d0e71494baa17891749fd291: Schedule1F1B is 1F1B with p-1-r
   warm-up forwards; ScheduleInterleaved1F1B._calculate_single_rank_operations with
   _get_warmup_ops(multiply_factor=2) and _get_1f1b_rank_ops: rounds = max(1, m // p), a round of
   m / rounds micro-batches, warm-up (v-1) * round + 2 (p-1-r) chunk forwards capped at m v,
   forward chunk (k // round) % v, backward chunk v-1-((k - warm-up) // round) % v), printed beside
   the order plan's simulator runs (`plan simulate --trace`, its compute events in time order).
2. torch's lowering of that order into compute + SEND/RECV actions (_add_send_recv: ranks take
   turns, one compute action each while its input's RECV has been placed; a sender places the
   receiver's RECV when it places its own SEND).
3. A replay of every rank's actions with the measured per-stage F / B times (results.jsonl of
   parallel_run.py --timeline) under two p2p semantics:
     dataflow  a chunk starts when its input has arrived (what costmodel/sim.c does)
     stream    torch's runtime (_PipelineScheduleRuntime._step_microbatches): each SEND/RECV is a
               batch_isend_irecv on the process group's one NCCL stream, so p2p ops of a rank run
               in their list order; ProcessGroupNCCL makes that stream wait for the compute
               issued before the op (syncStream), and a compute waits for its RECV's work.
               A send and its recv complete together, once both have started.
   and prints per-rank busy / idle beside the measured ones.

Usage: python3 bench/pp_torch_order.py [--results bench/results/pp_timeline_2026-11-27/results.jsonl]
       [--plan build/cli/plan] [--order P V M] [--before OLD_PLAN_BINARY]
4. `plan simulate` of each run (the layout bench/realruns/mgpu_fidelity.py prices: framework
   torchtitan, fused optimizer, outputs kept) with per-stage busy / idle / compute end, beside the
   measured ones (and, with --before, another plan binary's, e.g. one built before the change).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))


def torch_order(p, v, m, r):
    """[(kind 'F'|'B', stage, mb)] of rank r under torch's 1F1B (v 1) / Interleaved1F1B."""
    if v == 1:  # Schedule1F1B: warm-up p-1-r forwards (capped at m), then 1F1B, then cool-down
        warm = min(p - 1 - r, m)
        ops = [("F", r, i) for i in range(warm)]
        for i in range(m - warm):
            ops += [("F", r, warm + i), ("B", r, i)]
        return ops + [("B", r, i) for i in range(m - warm, m)]
    rounds = max(1, m // p)
    per = m // rounds
    warm = min((v - 1) * per + 2 * (p - 1 - r), m * v)
    total = m * v
    nf = {}
    nb = {}
    ops = []

    def fwd(k):
        st = ((k // per) % v) * p + r
        ops.append(("F", st, nf.get(st, 0)))
        nf[st] = nf.get(st, 0) + 1

    def bwd(k):
        st = (v - 1 - ((k - warm) // per) % v) * p + r
        ops.append(("B", st, nb.get(st, 0)))
        nb[st] = nb.get(st, 0) + 1

    for k in range(warm):
        fwd(k)
    for k in range(warm, total):
        fwd(k)
        bwd(k)
    for k in range(total, total + warm):
        bwd(k)
    return ops


def lower(orders, p, v):
    """torch's _add_send_recv: compute + ('SF'|'SB'|'RF'|'RB', stage, mb) actions per rank."""
    S = p * v
    rank_of = lambda s: s % p  # noqa: E731
    todo = {r: list(o) for r, o in enumerate(orders)}
    out = {r: [] for r in todo}
    placed = {r: set() for r in todo}
    while todo:
        progress = False
        for r in sorted(todo):
            k, st, mb = todo[r][0]
            if k == "F" and st != 0:
                ok = ("RF", st, mb) in placed[r] or ("F", st - 1, mb) in placed[r]
            elif k == "B" and st != S - 1:
                ok = ("RB", st, mb) in placed[r] or ("B", st + 1, mb) in placed[r]
            else:
                ok = True
            if not ok:
                continue
            out[r].append((k, st, mb))
            placed[r].add((k, st, mb))
            dst = st + 1 if k == "F" else st - 1
            if 0 <= dst < S and rank_of(dst) != r:
                out[r].append(("S" + k, st, mb))
                placed[r].add(("S" + k, st, mb))
                rr = rank_of(dst)
                out[rr].append(("R" + k, dst, mb))
                placed[rr].add(("R" + k, dst, mb))
            todo[r].pop(0)
            if not todo[r]:
                del todo[r]
            progress = True
        if not progress:
            sys.exit("lowering stalled")
    return out


def replay(lowered, p, v, m, fs, bs, loss_s, p2p_s, stream):
    """Per rank (busy, end, idle, compute intervals) replaying the lowered actions.

    Every action's end is a function of earlier ones (memoised recursion over the DAG):
      compute   starts when the previous compute of its rank has ended and its input is there
                (the transfer's end, or the producing compute on the same rank)
      SEND/RECV dataflow: a send is ready when its producer has ended, a recv at once;
                stream: also after the previous p2p op of its rank (one NCCL stream) and after
                every compute issued before it on the rank (ProcessGroupNCCL syncStream)
      transfer  ends p2p_s after both halves are ready
    """
    S = p * v
    rank_of = lambda s: s % p  # noqa: E731
    where = {}
    for r, acts in lowered.items():
        for i, a in enumerate(acts):
            where[a] = (r, i)
    memo = {}
    sys.setrecursionlimit(100000)

    def prev_of(r, i, comp):
        for j in range(i - 1, -1, -1):
            if (lowered[r][j][0] in ("F", "B")) == comp:
                return lowered[r][j]
        return None

    def end(a):
        if a in memo:
            if memo[a] is None:
                sys.exit("p2p order deadlocks: %s waits on itself" % (a,))
            return memo[a][1] if isinstance(memo[a], tuple) else memo[a]
        memo[a] = None  # cycle guard
        r, i = where[a]
        k, st, mb = a
        if k in ("F", "B"):
            t = 0.0
            pc = prev_of(r, i, True)
            if pc:
                t = end(pc)
            src = (st - 1 if k == "F" else st + 1)
            if 0 <= src < S:
                if rank_of(src) == r:
                    t = max(t, end((k, src, mb)))
                else:
                    t = max(t, transfer((k, src, mb)))
            dur = fs[st] if k == "F" else bs[st]
            if k == "F" and st == S - 1:
                dur += loss_s
            memo[a] = (t, t + dur)
            return memo[a][1]
        memo[a] = ready(a)
        return memo[a]

    def ready(a):
        r, i = where[a]
        k, st, mb = a
        kind = k[1]
        t = 0.0
        if k[0] == "S":
            t = end((kind, st, mb))
        if stream:
            pc = prev_of(r, i, True)
            if pc:
                t = max(t, end(pc))
            pn = prev_of(r, i, False)
            if pn:
                t = max(t, transfer(key_of(pn)))
        return t

    def key_of(a):
        k, st, mb = a
        kind = k[1]
        if k[0] == "S":
            return (kind, st, mb)
        return (kind, st - 1 if kind == "F" else st + 1, mb)

    tmemo = {}

    def transfer(key):
        if key in tmemo:
            return tmemo[key]
        kind, st, mb = key
        dst = st + 1 if kind == "F" else st - 1
        s = end(("S" + kind, st, mb))
        rv = end(("R" + kind, dst, mb))
        tmemo[key] = max(s, rv) + p2p_s
        return tmemo[key]

    res = {}
    for r, acts in lowered.items():
        busy, last, iv = 0.0, 0.0, []
        for a in acts:
            if a[0] in ("F", "B"):
                end(a)
                t0, t1 = memo[a]
                busy += t1 - t0
                last = max(last, t1)
                iv.append(a + (t0, t1))
        res[r] = (busy, last, last - busy, iv)
    return res


def measured(rec):
    tl = rec["timeline"]
    p, v, m = rec["pp"], rec.get("vpp", 1), rec["microbatches"]
    S = p * v
    f = {s: [] for s in range(S)}
    b = {s: [] for s in range(S)}
    gaps = []
    per_rank = []
    for rank, steps in enumerate(tl):
        busy, end = [], []
        for acts in steps:
            busy.append(sum(e - s for _, _, _, s, e in acts))
            end.append(max(e for *_, e in acts))
            for k, st, mb, s, e in acts:
                (f if k == "F" else b)[st].append(e - s)
            last = {}
            for k, st, mb, s, e in acts:
                if st == S - 1:
                    if k == "F":
                        last[mb] = e
                    elif mb in last:
                        gaps.append(s - last[mb])
        per_rank.append((statistics.median(busy), statistics.median(end)))
    fs = [statistics.median(f[s]) for s in range(S)]
    bs = [statistics.median(b[s]) for s in range(S)]
    return fs, bs, statistics.median(gaps), per_rank


def plan_order(planbin, p, v, m):
    """Per stage [(kind, vstage, mb)] from plan simulate --trace (compute events in time order)."""
    cfg = json.load(open(os.path.join(ROOT, "bench/realruns/configs/llama-3.1-8b.json")))
    cfg["num_hidden_layers"] = 16
    with tempfile.TemporaryDirectory() as tmp:
        mp = os.path.join(tmp, "l16.json")
        json.dump(cfg, open(mp, "w"))
        tr = os.path.join(tmp, "t.json")
        cmd = [planbin, "simulate", "--model", mp, "--system", "h100", "--gpus", str(p),
               "--framework", "torchtitan", "--seq", "4096", "--mbs", "1", "--gbs", str(m),
               "--impl", "native", "--pp", str(p), "--optimizer-impl", "fused", "--trace", tr]
        if v > 1:
            cmd += ["--vpp", str(v)]
        subprocess.run(cmd, check=True, capture_output=True,
                       env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
        ev = json.load(open(tr))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    out = {s: [] for s in range(p)}
    comp = [e for e in ev if e.get("ph") == "X" and e.get("tid") == 0 and "microbatch" in e.get("args", {})]
    for e in sorted(comp, key=lambda e: e["ts"]):
        a = e.get("args", {})
        name = e["name"]
        kind = "B" if name.startswith("B") or "bwd" in name.lower() else "F"
        ch = a.get("chunk", 0) if a.get("chunk", -1) >= 0 else 0
        out[e["pid"]].append((kind, ch * p + e["pid"], a.get("microbatch", -1)))
    return out, ev


def plan_sim(planbin, rec):
    """[(busy_ms, idle_ms, compute_end_ms)] per stage and the simulated step (ms)."""
    cfg = json.load(open(os.path.join(ROOT, rec["config"])))
    cfg["num_hidden_layers"] = rec["layers"]
    p, v, m = rec["pp"], rec.get("vpp", 1), rec["microbatches"]
    with tempfile.TemporaryDirectory() as tmp:
        mp = os.path.join(tmp, "model.json")
        json.dump(cfg, open(mp, "w"))
        cmd = [planbin, "simulate", "--model", mp, "--system", "h100", "--gpus", str(p),
               "--framework", "torchtitan", "--seq", str(rec["seq"]), "--mbs", str(rec["mbs"]),
               "--gbs", str(m * rec["mbs"]), "--impl", rec.get("impl", "native"), "--pp", str(p),
               "--optimizer-impl", "fused", "--pp-keep-outputs"]
        if v > 1:
            cmd += ["--vpp", str(v)]
        res = subprocess.run(cmd, capture_output=True, text=True,
                             env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data")))
    rows, step = [], None
    for ln in res.stdout.splitlines():
        f = ln.split()
        if ln.strip().startswith("simulated") and "s/step" in ln:
            step = 1e3 * float(f[1])
        if len(f) == 6 and f[0].isdigit():
            rows.append((1e3 * float(f[1]), 1e3 * float(f[2]), 1e3 * float(f[3])))
    return rows, step


def fmt(a):
    return "%s%d.%d" % a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=os.path.join(ROOT, "bench/results/pp_timeline_2026-11-27/results.jsonl"))
    ap.add_argument("--plan", default=os.path.join(ROOT, "build/cli/plan"))
    ap.add_argument("--order", nargs=3, type=int, default=[4, 2, 8], metavar=("P", "V", "M"))
    ap.add_argument("--before", default="", help="a second plan binary to set beside --plan")
    ap.add_argument("--p2p-ms", type=float, default=0.2,
                    help="one activation transfer (32 MiB bf16 over NVLink, ~0.1-0.2 ms)")
    args = ap.parse_args()

    p, v, m = args.order
    print("== compute order per rank, pp %d v %d m %d: torch 2.11 | plan simulate --trace" % (p, v, m))
    po = None
    if os.path.exists(args.plan):
        try:
            po, _ = plan_order(args.plan, p, v, m)
        except (subprocess.CalledProcessError, KeyError, ValueError) as e:
            print("  (plan order unavailable: %s)" % e)
    for r in range(p):
        t = [fmt(a) for a in torch_order(p, v, m, r)]
        print("rank %d torch: %s" % (r, " ".join(t)))
        if po is not None:
            q = [fmt(a) for a in po[r]]
            print("rank %d plan : %s   %s" % (r, " ".join(q), "same" if q == t else "DIFFERENT"))
    low = lower([torch_order(p, v, m, r) for r in range(p)], p, v)
    print("torch's lowered actions (SF/SB send, RF/RB receive; one NCCL stream per rank runs the sends and receives in this order):")
    for r in range(p):
        print("rank %d: %s" % (r, " ".join(fmt(a) for a in low[r][:24]) + " ..."))
    print()
    for ln in open(args.results):
        if not ln.strip():
            continue
        rec = json.loads(ln)
        if not rec.get("timeline"):
            continue
        p, v, m = rec["pp"], rec.get("vpp", 1), rec["microbatches"]
        fs, bs, loss, meas = measured(rec)
        orders = [torch_order(p, v, m, r) for r in range(p)]
        low = lower(orders, p, v)
        print("== %s (pp %d v %d m %d); measured stage F/B medians, loss %.1f ms (gap F->B on the last stage)"
              % (rec["label"], p, v, m, loss))
        sims = {sem: replay(low, p, v, m, fs, bs, loss, args.p2p_ms, sem == "stream")
                for sem in ("dataflow", "stream")}
        print("  rank   measured busy/end/idle    dataflow busy/end/idle    stream busy/end/idle  (ms; loss busy)")
        for r in range(p):
            mb_, me = meas[r]
            if r == p - 1:
                mb_ += m * loss
            row = "  %4d   %6.1f %6.1f %6.1f" % (r, mb_, me, me - mb_)
            for sem in ("dataflow", "stream"):
                b_, e_, i_, _ = sims[sem][r]
                row += "      %6.1f %6.1f %6.1f" % (b_, e_, i_)
            print(row)
        if os.path.exists(args.plan):
            bins = ([("before", args.before)] if args.before else []) + [("plan", args.plan)]
            for name, b in bins:
                rows, step = plan_sim(b, rec)
                print("  %-6s plan simulate: step %.1f ms (measured %.1f); per stage busy/idle/end ms: %s" % (
                    name, step or 0, 1e3 * rec["step_s_median"],
                    "  ".join("%d: %.0f/%.0f/%.0f" % ((i,) + r) for i, r in enumerate(rows))))
            print("  measured                 per rank   busy/idle/end ms: %s" % "  ".join(
                "%d: %.0f/%.0f/%.0f" % (r, meas[r][0] + (m * loss if r == p - 1 else 0),
                                        meas[r][1] - meas[r][0] - (m * loss if r == p - 1 else 0),
                                        meas[r][1]) for r in range(p)))
        print()


if __name__ == "__main__":
    main()
